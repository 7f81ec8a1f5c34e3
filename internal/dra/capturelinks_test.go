package dra

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/ringcap/ringcap/internal/linkmetrics"
	"github.com/ringcap/ringcap/internal/plugin"
	"github.com/ringcap/ringcap/internal/testenv"
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

const captureLinkHeader = `
# HELP ringcap_capture_link_increase_total A counter of an RDMA port a pod holds, counted from when the pod was first seen holding it (the device plugin) or its claim was prepared (the DRA driver); capture is the pod's ringcap.io/capture label, empty without one.
# TYPE ringcap_capture_link_increase_total counter
`

func captureLinkSeries(pod, capture, dev string, v int) string {
	return fmt.Sprintf(`ringcap_capture_link_increase_total{capture=%q,counter="rcvd_pkts",device=%q,namespace="work",pod=%q,port="1",source="hw_counters"} %d`+"\n",
		capture, dev, pod, v)
}

// compareCaptureLinks compares the registry's per-capture series with want ("" none).
func compareCaptureLinks(t *testing.T, reg prometheus.Gatherer, what, want string) {
	t.Helper()
	if want == "" {
		if n, err := testutil.GatherAndCount(reg, "ringcap_capture_link_increase_total"); err != nil || n != 0 {
			t.Fatalf("%s: %d series, %v; want none", what, n, err)
		}
		return
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(captureLinkHeader+want), "ringcap_capture_link_increase_total"); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func setRcvdPkts(t *testing.T, roots rdma.Roots, dev, v string) {
	t.Helper()
	hw := filepath.Join(roots.Sys, "class/infiniband", dev, "ports/1/hw_counters")
	if err := os.MkdirAll(hw, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hw, "rcvd_pkts"), []byte(v+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// reservedFor reserves the claim for the pod, as the scheduler does.
func reservedFor(c *resourceapi.ResourceClaim, pod *corev1.Pod) *resourceapi.ResourceClaim {
	c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: pod.Name, UID: pod.UID})
	return c
}

func workPod(name, uid, capture string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "work", Name: name, UID: types.UID(uid)}}
	if capture != "" {
		p.Labels = map[string]string{linkmetrics.LabelCapture: capture}
	}
	return p
}

// A prepared claim's port counts from the prepare for each pod it is reserved for,
// labelled with the claim's ringcap.io/capture label, else the pod's; growth after the
// prepare shows; unprepared, its series are gone. A driver that restarts (the claim
// prepared before it) tracks the claim from its first state check.
func TestPreparedClaimsExportCaptureLinks(t *testing.T) {
	roots := rdma.Roots{Sys: rdmatest.CopyDir(t, pciTree+"/sys"), Dev: rdmatest.CopyDir(t, pciTree+"/dev")}
	setRcvdPkts(t, roots, "mlx5_2", "1000")
	setRcvdPkts(t, roots, "mlx5_0", "70")
	rx, plain := workPod("burst-0", "u-rx", "burst"), workPod("plain", "u-plain", "")
	c1 := reservedFor(claim("c1", "c1", "rdma:mlx5-2-p1"), rx)
	c2 := reservedFor(claim("c2", "c2", "rdma:mlx5-0-p1"), plain)
	c2.Labels = map[string]string{linkmetrics.LabelCapture: "from-claim"}
	c1.Namespace, c2.Namespace = "work", "work"
	cs := fake.NewClientset(rx, plain, c1, c2)
	cdiDir := t.TempDir()
	newDriver := func() (*Driver, *prometheus.Registry) {
		reg := prometheus.NewRegistry()
		d, err := New(Options{Roots: roots, NodeName: node, CDIDir: cdiDir, Client: cs, Log: testenv.Logger(t), Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Rescan(); err != nil {
			t.Fatal(err)
		}
		return d, reg
	}
	d, reg := newDriver()
	ctx := context.Background()
	res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c1, c2})
	if err != nil || res[c1.UID].Err != nil || res[c2.UID].Err != nil {
		t.Fatalf("prepare: %+v %v", res, err)
	}
	compareCaptureLinks(t, reg, "after prepare", captureLinkSeries("burst-0", "burst", "mlx5_2", 0)+captureLinkSeries("plain", "from-claim", "mlx5_0", 0))

	setRcvdPkts(t, roots, "mlx5_2", "1600")
	compareCaptureLinks(t, reg, "after the port received", captureLinkSeries("burst-0", "burst", "mlx5_2", 600)+captureLinkSeries("plain", "from-claim", "mlx5_0", 0))
	if _, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c1}); err != nil {
		t.Fatal(err)
	}
	compareCaptureLinks(t, reg, "after the kubelet asked again", captureLinkSeries("burst-0", "burst", "mlx5_2", 600)+captureLinkSeries("plain", "from-claim", "mlx5_0", 0))

	d2, reg2 := newDriver()
	compareCaptureLinks(t, reg2, "a restarted driver before its state check", "")
	if err := d2.CheckState(ctx); err != nil {
		t.Fatal(err)
	}
	setRcvdPkts(t, roots, "mlx5_2", "1700")
	compareCaptureLinks(t, reg2, "a restarted driver after its state check", captureLinkSeries("burst-0", "burst", "mlx5_2", 100)+captureLinkSeries("plain", "from-claim", "mlx5_0", 0))

	unprepared, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: c1.UID}})
	if err != nil || unprepared[c1.UID] != nil {
		t.Fatalf("unprepare: %v %v", unprepared, err)
	}
	compareCaptureLinks(t, reg, "after c1 was unprepared", captureLinkSeries("plain", "from-claim", "mlx5_0", 0))
	if err := d2.CheckState(ctx); err != nil {
		t.Fatal(err)
	}
	compareCaptureLinks(t, reg2, "the other instance after its state check", captureLinkSeries("plain", "from-claim", "mlx5_0", 0))
	if _, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: c2.UID}}); err != nil {
		t.Fatal(err)
	}
	compareCaptureLinks(t, reg, "after both were unprepared", "")
	if n := len(d.podCaptures); n != 0 {
		t.Errorf("%d pods' capture labels kept after their claims were unprepared", n)
	}
}

// With the device plugin on the node too (plugin.mode both), the driver still exports
// its claims' series: the device plugin exports those of its own devices' pods only.
func TestBothModeKeepsClaimsCaptureLinks(t *testing.T) {
	other, err := plugin.ParseConfig([]byte("version: v1\npools: [{name: hard, selector: {devices: [mlx5_0]}}]"))
	if err != nil {
		t.Fatal(err)
	}
	roots := rdma.Roots{Sys: rdmatest.CopyDir(t, pciTree+"/sys"), Dev: rdmatest.CopyDir(t, pciTree+"/dev")}
	setRcvdPkts(t, roots, "mlx5_2", "5")
	rx := workPod("burst-0", "u-rx", "burst")
	c := reservedFor(claim("c1", "c1", "rdma:mlx5-2-p1"), rx)
	c.Namespace = "work"
	reg := prometheus.NewRegistry()
	cfg := defaultConfigFast()
	cfg.Pools[0].Selector.Devices = []string{"mlx5_2", "mlx5_3"}
	d, err := New(Options{Config: cfg, Roots: roots, NodeName: node, CDIDir: t.TempDir(), Client: fake.NewClientset(rx, c), Registry: reg, OtherConfig: other})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Rescan(); err != nil {
		t.Fatal(err)
	}
	prepare(t, d, c)
	compareCaptureLinks(t, reg, "in mode both", captureLinkSeries("burst-0", "burst", "mlx5_2", 0))
}
