//go:build envtest

package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/internal/controller"
	"github.com/ringcap/ringcap/internal/testenv"
	"github.com/ringcap/ringcap/internal/testkit"
)

// TestChartRoleAggregatesRingCapturesIntoEditAndView applies the chart's editor and viewer
// ClusterRoles to a real API server whose ClusterRole aggregation runs (kube-controller-
// manager): a user bound to the built-in edit role in a namespace may then create a
// RingCapture there, one bound to view may list them and not create one. RDMANodes are
// cluster-scoped: the view RoleBinding does not show them, a ClusterRoleBinding to the
// chart's viewer role does.
func TestChartRoleAggregatesRingCapturesIntoEditAndView(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "aggregated")
	bindRole(t, ns, "ClusterRole", "edit", "alice")
	bindRole(t, ns, "ClusterRole", "view", "bob")
	if allowed(t, "alice", ns, "create", "ringcaptures") {
		t.Fatal("alice may create RingCaptures before the chart's roles exist: the test proves nothing")
	}
	applyChart(t, "aggregated-system", func(o client.Object) bool {
		return o.GetName() == "rc-ringcap-ringcapture-editor" || o.GetName() == "rc-ringcap-ringcapture-viewer"
	})
	err := testkit.Eventually(waitTimeout, nil, func() (bool, string) {
		return allowed(t, "alice", ns, "create", "ringcaptures") && allowed(t, "bob", ns, "list", "ringcaptures"), "not yet aggregated"
	})
	if err != nil {
		t.Fatalf("edit and view never took the chart's rules: %v\ncontroller manager log:\n%s", err, env.GarbageCollectorLog())
	}

	rc := &ringcapv1.RingCapture{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-alice"}}
	rc.Spec.Ring.HostIPC = true
	if err := as(t, "alice").Create(ctx, rc); err != nil {
		t.Errorf("alice (edit in %s) may not create a RingCapture: %v", ns, err)
	}
	var list ringcapv1.RingCaptureList
	if err := as(t, "bob").List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) != 1 {
		t.Errorf("bob (view in %s) lists RingCaptures: %d, %v; want alice's", ns, len(list.Items), err)
	}
	rc2 := &ringcapv1.RingCapture{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-bob"}}
	rc2.Spec.Ring.HostIPC = true
	if err := as(t, "bob").Create(ctx, rc2); !apierrors.IsForbidden(err) {
		t.Errorf("bob (view in %s) creates a RingCapture: %v, want forbidden", ns, err)
	}
	if err := as(t, "bob").List(ctx, &ringcapv1.RDMANodeList{}); !apierrors.IsForbidden(err) {
		t.Errorf("bob (view in %s only) lists RDMANodes: %v, want forbidden (they are cluster-scoped)", ns, err)
	}
	bindRole(t, "", "ClusterRole", "rc-ringcap-ringcapture-viewer", "carol")
	err = testkit.Eventually(waitTimeout, nil, func() (bool, string) {
		err := as(t, "carol").List(ctx, &ringcapv1.RDMANodeList{})
		return err == nil, fmt.Sprint(err)
	})
	if err != nil {
		t.Errorf("carol (ClusterRoleBinding to the viewer role) cannot list RDMANodes: %v", err)
	}
}

// TestChartRoleScopesOperatorToWatchedNamespaces applies the operator's RBAC as the chart
// renders it with operator.watchNamespaces=[watched]: its service account may create pods
// in watched and not in unwatched, nor list pods cluster-wide. The operator, run as that
// service account with --namespace watched, reconciles a RingCapture in watched into its
// pod and leaves the one in unwatched alone.
func TestChartRoleScopesOperatorToWatchedNamespaces(t *testing.T) {
	const release = "scoped-system"
	watched, unwatched := newNamespace(t, "watched"), newNamespace(t, "unwatched")
	newNamespace(t, release)
	applied := applyChart(t, release, func(o client.Object) bool {
		return o.GetLabels()["app.kubernetes.io/component"] == "operator" && isRBAC(o)
	}, "operator.watchNamespaces={"+watched+"}")
	checkRuleScopes(t, applied)
	sa := "system:serviceaccount:" + release + ":rc-ringcap-operator"
	for _, tc := range []struct {
		ns, verb, resource string
		want               bool
	}{
		{watched, "create", "pods", true},
		{watched, "watch", "ringcaptures", true},
		{watched, "update", "ringcaptures/status", true},
		{watched, "create", "resourceclaimtemplates", true},
		{watched, "get", "configmaps", true},
		{unwatched, "create", "pods", false},
		{unwatched, "list", "ringcaptures", false},
		{"", "list", "pods", false},
		{"", "watch", "ringcaptures", false},
	} {
		if got := allowed(t, sa, tc.ns, tc.verb, tc.resource); got != tc.want {
			t.Errorf("the operator's service account: %s %s in %q allowed %v, want %v", tc.verb, tc.resource, tc.ns, got, tc.want)
		}
	}

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + release, "system:authenticated"}}
	startOperatorAs(t, operatorRun{cfg: cfg, leNamespace: release, namespaces: []string{watched}, poll: testPollInterval})
	newCapture(t, unwatched, "ignored", nil)
	newCapture(t, watched, "scoped", nil)
	waitPod(t, watched, "scoped")
	waitCapture(t, watched, "scoped", "a phase", func(rc *ringcapv1.RingCapture) bool { return rc.Status.Phase != "" })
	pod := &corev1.Pod{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: unwatched, Name: controller.PodName("ignored")}, pod)
	if !apierrors.IsNotFound(err) {
		t.Errorf("the pod of a RingCapture in an unwatched namespace: %v, want none", err)
	}
	if rc := getCapture(t, unwatched, "ignored"); rc.Status.Phase != "" {
		t.Errorf("a RingCapture in an unwatched namespace has phase %q, want none", rc.Status.Phase)
	}
}

// applyChart renders the chart (release rc in namespace release) and creates the objects
// keep selects, deleting them when the test ends; it returns them.
func applyChart(t *testing.T, release string, keep func(client.Object) bool, set ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := testenv.RenderChart("rc", release, set...)
	if err != nil {
		t.Fatal(err)
	}
	var applied []*unstructured.Unstructured
	for _, o := range objs {
		if !keep(o) {
			continue
		}
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("create the chart's %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		applied = append(applied, o)
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	if len(applied) == 0 {
		t.Fatal("the chart renders none of the objects the test applies")
	}
	return applied
}

// checkRuleScopes checks the chart's split of the operator's rules against the API
// server's discovery: a Role names namespaced resources only (a rule on a
// cluster-scoped resource in a Role grants nothing), a ClusterRole cluster-scoped ones
// only (the operator watches some namespaces, not all).
func checkRuleScopes(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	mapper := env.Client.RESTMapper()
	for _, o := range objs {
		if o.GetKind() != "Role" && o.GetKind() != "ClusterRole" {
			continue
		}
		var role rbacv1.ClusterRole // a Role's rules decode the same
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					base, _, _ := strings.Cut(res, "/")
					gvk, err := mapper.KindFor(schema.GroupVersionResource{Group: g, Resource: base})
					if err != nil {
						t.Errorf("%s %s names %s of group %q, which the API server does not serve: %v", o.GetKind(), o.GetName(), base, g, err)
						continue
					}
					namespaced, err := apiutil.IsGVKNamespaced(gvk, mapper)
					if err != nil {
						t.Fatal(err)
					}
					if namespaced != (o.GetKind() == "Role") {
						t.Errorf("%s %s/%s holds the rule on %s of group %q (namespaced: %v)", o.GetKind(), o.GetNamespace(), o.GetName(), base, g, namespaced)
					}
				}
			}
		}
	}
}

func isRBAC(o client.Object) bool {
	return o.GetObjectKind().GroupVersionKind().Group == rbacv1.GroupName
}

// bindRole binds the role (kind Role or ClusterRole) to user in ns, or cluster-wide
// when ns is "".
func bindRole(t *testing.T, ns, kind, role, user string) {
	t.Helper()
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	meta := metav1.ObjectMeta{Name: user + "-" + role, Namespace: ns}
	var b client.Object = &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects}
	if ns == "" {
		b = &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects}
	}
	if err := env.Client.Create(context.Background(), b); err != nil {
		t.Fatalf("bind %s %s to %s in %q: %v", kind, role, user, ns, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), b) })
}

// apiGroups are the groups of the resources the tests ask about.
var apiGroups = map[string]string{"pods": "", "configmaps": "", "resourceclaimtemplates": "resource.k8s.io",
	"ringcaptures": ringcapv1.GroupVersion.Group}

// allowed asks the API server's authorizer whether user may verb resource ("name" or
// "name/subresource") in ns ("": cluster-wide).
func allowed(t *testing.T, user, ns, verb, resource string) bool {
	t.Helper()
	res, sub, _ := strings.Cut(resource, "/")
	group, ok := apiGroups[res]
	if !ok {
		t.Fatalf("no API group known for %s", res)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: res, Subresource: sub}}}
	if err := env.Client.Create(context.Background(), sar); err != nil {
		t.Fatalf("SubjectAccessReview: %v", err)
	}
	return sar.Status.Allowed
}

// as is a client acting as user (impersonated by the administrator).
func as(t *testing.T, user string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("client as %s: %v", user, err)
	}
	return c
}
