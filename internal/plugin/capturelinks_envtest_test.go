//go:build envtest

package plugin

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ringcap/ringcap/internal/linkmetrics"
	"github.com/ringcap/ringcap/internal/testenv"
)

// CaptureLinkRules are the API permissions the per-capture link counters need (the
// chart's ClusterRole grants them with plugin.podResources): read a pod's capture label.
var CaptureLinkRules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}

// TestCaptureLinksOnAPIServer: as a user holding only CaptureLinkRules, the plugin reads
// the ringcap.io/capture label of the pod the PodResources API says holds mlx5_0 from a
// real kube-apiserver, and labels the pod's series with it.
func TestCaptureLinksOnAPIServer(t *testing.T) {
	env := testenv.StartT(t)
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "obs"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Pods("obs").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "burst-0", Labels: map[string]string{linkmetrics.LabelCapture: "burst"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "receiver", Image: "ringcap/ringcap:test"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ringcap-plugin-links"}, Rules: CaptureLinkRules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ringcap-plugin-links"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ringcap-plugin-links"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "ringcap-plugin"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pc := rest.CopyConfig(env.Config)
	pc.Impersonate = rest.ImpersonationConfig{UserName: "ringcap-plugin"}

	reg := prometheus.NewRegistry()
	sock := filepath.Join(shortTempDir(t), "kubelet.sock")
	pr := startPodResources(t, sock)
	h := startHarness(t, nil, func(o *Options) {
		o.Registry, o.PodResourcesSocket, o.PodResourcesInterval, o.Pods = reg, sock, 50*time.Millisecond, kubernetes.NewForConfigOrDie(pc)
	})
	writeCounter(t, h.roots.Sys, "mlx5_0", "rcvd_pkts", "10")
	<-h.plugin.Scanned()
	pr.set(podHolding("obs", "burst-0", "ringcap.io/rdma", "mlx5_0"))
	waitCaptureLinks(t, reg, "the pod's series with its capture", captureLinkSeries("obs", "burst-0", "burst", "mlx5_0", "rcvd_pkts", 0))
}
