//go:build envtest

package plugin

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	ringcapv1alpha1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/internal/testenv"
)

// PluginRules are the API permissions the plugin needs (the chart's ClusterRole must
// grant at least these): label its node, create its RDMANode and write its status.
var PluginRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}},
	{APIGroups: []string{"ringcap.io"}, Resources: []string{"rdmanodes"}, Verbs: []string{"get", "create"}},
	{APIGroups: []string{"ringcap.io"}, Resources: []string{"rdmanodes/status"}, Verbs: []string{"get", "update"}},
}

// TestInventoryOnAPIServer runs the plugin (fake kubelet, PCI testdata tree) against a
// real kube-apiserver with the RDMANode CRD of config/crd/bases, as a user holding
// only PluginRules: the node gets its labels, the RDMANode its status (accepted by
// the CRD's schema), and a port that comes up is reflected.
func TestInventoryOnAPIServer(t *testing.T) {
	env := testenv.StartT(t)
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ringcap-plugin"}, Rules: PluginRules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ringcap-plugin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ringcap-plugin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "ringcap-plugin"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pc := rest.CopyConfig(env.Config)
	pc.Impersonate = rest.ImpersonationConfig{UserName: "ringcap-plugin"}
	sink := &KubeSink{Client: kubernetes.NewForConfigOrDie(pc), Dynamic: dynamic.NewForConfigOrDie(pc), NodeName: "node-1"}

	h := startHarness(t, nil, func(o *Options) { o.Inventory = sink })
	h.kubelet.registration(t)

	get := func(ok func(*ringcapv1alpha1.RDMANode) bool) *ringcapv1alpha1.RDMANode {
		t.Helper()
		deadline := time.Now().Add(wait)
		var last *ringcapv1alpha1.RDMANode
		for time.Now().Before(deadline) {
			u, err := dynamic.NewForConfigOrDie(env.Config).Resource(RDMANodeResource).Get(ctx, "node-1", metav1.GetOptions{})
			if err == nil {
				var n ringcapv1alpha1.RDMANode
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &n); err != nil {
					t.Fatal(err)
				}
				last = &n
				if ok(&n) {
					return &n
				}
			}
			<-h.plugin.Scanned()
		}
		t.Fatalf("RDMANode never matched; last %+v", last)
		return nil
	}
	n := get(func(n *ringcapv1alpha1.RDMANode) bool { return len(n.Status.Devices) == 3 })
	d0 := n.Status.Devices[0]
	if d0.Name != "mlx5_0" || d0.PCIAddress != "0000:03:00.0" || *d0.Ports[0].ChosenGIDIndex != 3 || len(d0.Ports[0].GIDs) != 8 {
		t.Errorf("mlx5_0 %+v", d0)
	}
	if c := n.Status.Conditions; len(c) != 1 || c[0].Reason != "DevicesUnhealthy" {
		t.Errorf("conditions %+v", c)
	}
	node, err := admin.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels[LabelRDMA] != "true" || node.Labels[LabelRoCEv2] != "true" {
		t.Errorf("node labels %v", node.Labels)
	}

	h.setPort("mlx5_1", "ACTIVE")
	n = get(func(n *ringcapv1alpha1.RDMANode) bool {
		return len(n.Status.Conditions) == 1 && n.Status.Conditions[0].Status == metav1.ConditionTrue
	})
	if n.Status.Devices[1].Health != "Healthy" || n.Status.Pools[0].HealthyUnits != 3 {
		t.Errorf("after port up: %+v", n.Status)
	}
}
