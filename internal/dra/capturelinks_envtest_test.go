//go:build envtest

package dra

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/ringcap/ringcap/internal/linkmetrics"
	"github.com/ringcap/ringcap/internal/testenv"
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

// TestCaptureLinksOnAPIServer: as the chart's service account, the driver prepares a
// claim reserved for a capture pod (the claim without the capture label, as the
// operator's claim template makes it), reads the pod's ringcap.io/capture label, and
// exports the port's counters from the prepare on; unprepared, the series are gone.
func TestCaptureLinksOnAPIServer(t *testing.T) {
	env, admin := startAPIServer(t, node)
	ctx := context.Background()
	pod, err := admin.CoreV1().Pods("work").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "burst-0", Labels: map[string]string{linkmetrics.LabelCapture: "burst"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "receiver", Image: "ringcap/ringcap:test"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := allocatedClaim(t, admin, "burst-0-rdma", "mlx5-2-p1")
	c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}}
	if c, err = admin.ResourceV1().ResourceClaims("work").UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	roots := rdma.Roots{Sys: rdmatest.CopyDir(t, pciTree+"/sys"), Dev: rdmatest.CopyDir(t, pciTree+"/dev")}
	setRcvdPkts(t, roots, "mlx5_2", "4000")
	reg := prometheus.NewRegistry()
	d, err := New(Options{Roots: roots, NodeName: node, CDIDir: t.TempDir(), Client: driverClient(t, env), Log: testenv.Logger(t), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Rescan(); err != nil {
		t.Fatal(err)
	}
	res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
	if err != nil || res[c.UID].Err != nil {
		t.Fatalf("prepare: %+v %v", res, err)
	}
	setRcvdPkts(t, roots, "mlx5_2", "4096")
	compareCaptureLinks(t, reg, "after prepare", captureLinkSeries("burst-0", "burst", "mlx5_2", 96))

	out, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: c.UID}})
	if err != nil || out[c.UID] != nil {
		t.Fatalf("unprepare: %v %v", out, err)
	}
	compareCaptureLinks(t, reg, "after unprepare", "")
}
