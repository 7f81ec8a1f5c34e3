//go:build envtest

package dra

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	resourcev1client "k8s.io/client-go/kubernetes/typed/resource/v1"

	"github.com/ringcap/ringcap/internal/testenv"
	"github.com/ringcap/ringcap/internal/testkit"
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

// nodeNameExtra is the user extra a pod-bound service account token carries (the
// node the pod runs on).
const nodeNameExtra = "authentication.kubernetes.io/node-name"

// startAPIServer starts kube-apiserver with the chart's namespace, the namespace work
// and the nodes names; it returns the environment and an administrator's client.
func startAPIServer(t *testing.T, nodes ...string) (*testenv.Env, kubernetes.Interface) {
	t.Helper()
	env := testenv.StartT(t)
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(env.Config)
	for _, ns := range []string{chartNS, "work"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return env, admin
}

// allocatedClaim creates claim name in namespace work, allocated (as the scheduler
// does) one device of this node's pool.
func allocatedClaim(t *testing.T, admin kubernetes.Interface, name, device string) *resourceapi.ResourceClaim {
	t.Helper()
	ctx := context.Background()
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "work"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "rdma", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "ringcap-rdma"}}}}}}
	c, err := admin.ResourceV1().ResourceClaims("work").Create(ctx, c, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
		Request: "rdma", Driver: DriverName, Pool: node, Device: device}}}}
	c, err = admin.ResourceV1().ResourceClaims("work").UpdateStatus(ctx, c, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestStatusWriteRefusedOnAPIServer: as the chart's service account with the chart's
// role minus its resourceclaims/status rule (what a cluster that requires more than the
// role grants looks like), preparing a claim still succeeds, and the refused status
// write is visible: a Warning Event ClaimStatusNotWritten on the claim with the API
// server's error, and the metric.
func TestStatusWriteRefusedOnAPIServer(t *testing.T) {
	env, admin := startAPIServer(t, node)
	cr := chartDRARole(t)
	n := len(cr.Rules)
	cr.Rules = slices.DeleteFunc(cr.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "resourceclaims/status") })
	if len(cr.Rules) != n-1 {
		t.Fatalf("the chart's role has no single resourceclaims/status rule: %+v", chartDRARole(t).Rules)
	}
	grantChartRole(t, env, cr)
	reg := prometheus.NewRegistry()
	roots := rdma.Roots{Sys: rdmatest.CopyDir(t, pciTree+"/sys"), Dev: rdmatest.CopyDir(t, pciTree+"/dev")}
	cdiDir := t.TempDir()
	d, err := New(Options{Roots: roots, NodeName: node, CDIDir: cdiDir, Client: kubernetes.NewForConfigOrDie(asDriver(env, nil)),
		Log: testenv.Logger(t), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Rescan(); err != nil {
		t.Fatal(err)
	}
	c := allocatedClaim(t, admin, "c1", "mlx5-2-p1")

	ctx := context.Background()
	res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
	if err != nil || res[c.UID].Err != nil || len(res[c.UID].Devices) != 1 {
		t.Fatalf("prepare: %+v %v; want the claim prepared despite the refused status write", res, err)
	}
	if _, err := os.Stat(ClaimSpecPath(cdiDir, c.UID)); err != nil {
		t.Errorf("no CDI spec: %v", err)
	}
	evs, err := admin.EventsV1().Events("work").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs.Items {
		got = append(got, fmt.Sprintf("%s %s %s/%s: %s", ev.Type, ev.Reason, ev.Regarding.Kind, ev.Regarding.Name, ev.Note))
		if ev.Reason == ReasonClaimStatusNotWritten && ev.Type == corev1.EventTypeWarning && ev.Regarding.UID == c.UID &&
			ev.Regarding.Kind == "ResourceClaim" && strings.Contains(ev.Note, "forbidden") && strings.Contains(ev.Note, "resourceclaims/status") {
			got = nil
			break
		}
	}
	if got != nil || len(evs.Items) == 0 {
		t.Errorf("no Warning %s on claim work/c1 naming the refusal; events: %q", ReasonClaimStatusNotWritten, got)
	}
	if v := testutil.ToFloat64(d.metrics.statusNotWritten); v != 1 {
		t.Errorf("ringcap_dra_claim_status_write_errors_total = %v, want 1", v)
	}
	if n := testutil.CollectAndCount(reg, "ringcap_dra_claim_status_write_errors_total"); n != 1 {
		t.Errorf("the metric is not in the registry (%d series)", n)
	}
}

// TestChartRoleScopesDriverStatusOnAPIServer asks the API server's authorizer what Kubernetes
// >= 1.36 asks before a status.devices write by a node's driver (resourceclaims/driver,
// the driver's name, associated-node:<verb>): the chart's role allows it for
// rdma.ringcap.io only, and never the arbitrary-node verbs.
func TestChartRoleScopesDriverStatusOnAPIServer(t *testing.T) {
	env, admin := startAPIServer(t)
	grantChartRole(t, env, chartDRARole(t))
	for _, tc := range []struct {
		verb, name string
		allowed    bool
	}{
		{"associated-node:patch", DriverName, true},
		{"associated-node:update", DriverName, true},
		{"associated-node:patch", "gpu.example.com", false},
		{"arbitrary-node:patch", DriverName, false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + chartNS + ":" + saName, Groups: []string{"system:serviceaccounts", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "work", Verb: tc.verb, Group: resourceapi.GroupName,
				Resource: "resourceclaims", Subresource: "driver", Name: tc.name}}}
		got, err := admin.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != tc.allowed {
			t.Errorf("%s resourceclaims/driver %s: allowed %v, want %v (%s)", tc.verb, tc.name, got.Status.Allowed, tc.allowed, got.Status.Reason)
		}
	}
}

// TestSlicePolicyOnAPIServer applies the chart's ValidatingAdmissionPolicy and binding
// to a real API server. As the chart's service account with node-1 in its credentials
// (the user extra a pod-bound token carries), the driver may create and delete its
// own node's ResourceSlices; writing node-2's, a slice of no node, or writing without
// a node in the credentials are refused. Other users are not affected.
func TestSlicePolicyOnAPIServer(t *testing.T) {
	env, admin := startAPIServer(t, node, "node-2")
	ctx := context.Background()
	grantChartRole(t, env, chartDRARole(t))
	var vap admissionv1.ValidatingAdmissionPolicy
	chartObject(t, "ValidatingAdmissionPolicy", saName+"-slices", &vap)
	var binding admissionv1.ValidatingAdmissionPolicyBinding
	chartObject(t, "ValidatingAdmissionPolicyBinding", saName+"-slices", &binding)
	if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &vap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	onNode1 := kubernetes.NewForConfigOrDie(asDriver(env, map[string][]string{nodeNameExtra: {node}})).ResourceV1().ResourceSlices()
	noNode := kubernetes.NewForConfigOrDie(asDriver(env, nil)).ResourceV1().ResourceSlices()

	// The policy takes effect once the API server has compiled it: wait for the first
	// refusal (slices let through before are removed).
	if err := testkit.Eventually(wait, nil, func() (bool, string) {
		_, err := onNode1.Create(ctx, testSlice("foreign", "node-2"), metav1.CreateOptions{})
		if err == nil {
			_ = admin.ResourceV1().ResourceSlices().Delete(ctx, "foreign", metav1.DeleteOptions{})
			return false, "a slice of node-2 admitted"
		}
		return strings.Contains(err.Error(), "may not write ResourceSlices of node node-2"), err.Error()
	}); err != nil {
		t.Fatal(err)
	}

	if _, err := onNode1.Create(ctx, testSlice("own", node), metav1.CreateOptions{}); err != nil {
		t.Errorf("the driver on %s may not create its own slice: %v", node, err)
	}
	if _, err := admin.ResourceV1().ResourceSlices().Create(ctx, testSlice("other", "node-2"), metav1.CreateOptions{}); err != nil {
		t.Errorf("an administrator may not create node-2's slice: %v", err)
	}
	create := func(c resourcev1client.ResourceSliceInterface, s *resourceapi.ResourceSlice) error {
		_, err := c.Create(ctx, s, metav1.CreateOptions{})
		return err
	}
	noNodeSlice := testSlice("cluster", "")
	noNodeSlice.Spec.NodeName, noNodeSlice.Spec.AllNodes = nil, new(true)
	for _, tc := range []struct {
		what, want string
		err        error
	}{
		{"delete node-2's slice", "may not write ResourceSlices of node node-2", onNode1.Delete(ctx, "other", metav1.DeleteOptions{})},
		{"create a slice of no node", "may not write ResourceSlices of no node", create(onNode1, noNodeSlice)},
		{"create without a node in its credentials", "credentials name no node", create(noNode, testSlice("nonode", node))},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), "denied request") || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s as the driver: %v, want the policy's refusal saying %q", tc.what, tc.err, tc.want)
		}
	}
	if err := onNode1.Delete(ctx, "own", metav1.DeleteOptions{}); err != nil {
		t.Errorf("the driver on %s may not delete its own slice: %v", node, err)
	}
}

// testSlice is a one-device ResourceSlice of the driver in node's pool.
func testSlice(name, node string) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.ResourceSliceSpec{
		Driver: DriverName, NodeName: &node, Pool: resourceapi.ResourcePool{Name: "pool-" + name, ResourceSliceCount: 1},
		Devices: []resourceapi.Device{{Name: "d0"}}}}
}
