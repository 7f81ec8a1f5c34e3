package plugin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/ringcap/ringcap/internal/linkmetrics"
	"github.com/ringcap/ringcap/internal/testkit"
)

// fakePodResources is a real PodResources gRPC server on a unix socket, standing in for
// the kubelet: it answers List with the pods it is given.
type fakePodResources struct {
	podresourcesapi.UnimplementedPodResourcesListerServer
	mu   sync.Mutex
	pods []*podresourcesapi.PodResources
}

func startPodResources(t *testing.T, socket string) *fakePodResources {
	t.Helper()
	l, err := netListenUnix(socket)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePodResources{}
	srv := grpc.NewServer()
	podresourcesapi.RegisterPodResourcesListerServer(srv, f)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return f
}

func (f *fakePodResources) set(pods ...*podresourcesapi.PodResources) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = pods
}

func (f *fakePodResources) List(context.Context, *podresourcesapi.ListPodResourcesRequest) (*podresourcesapi.ListPodResourcesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &podresourcesapi.ListPodResourcesResponse{PodResources: f.pods}, nil
}

// podHolding is a pod whose one container holds ids of resource.
func podHolding(namespace, name, resource string, ids ...string) *podresourcesapi.PodResources {
	return &podresourcesapi.PodResources{Namespace: namespace, Name: name, Containers: []*podresourcesapi.ContainerResources{{
		Name: "receiver", Devices: []*podresourcesapi.ContainerDevices{{ResourceName: resource, DeviceIds: ids}}}}}
}

func writeCounter(t *testing.T, sys, dev, name, v string) {
	t.Helper()
	hw := filepath.Join(sys, "class/infiniband", dev, "ports/1/hw_counters")
	if err := os.MkdirAll(hw, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hw, name), []byte(v+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func captureLinkSeries(ns, pod, capture, dev, counter string, v int) string {
	return fmt.Sprintf(`ringcap_capture_link_increase_total{capture=%q,counter=%q,device=%q,namespace=%q,pod=%q,port="1",source="hw_counters"} %d`+"\n",
		capture, counter, dev, ns, pod, v)
}

const captureLinkHeader = `
# HELP ringcap_capture_link_increase_total A counter of an RDMA port a pod holds, counted from when the pod was first seen holding it (the device plugin) or its claim was prepared (the DRA driver); capture is the pod's ringcap.io/capture label, empty without one.
# TYPE ringcap_capture_link_increase_total counter
`

// waitCaptureLinks waits until the registry's per-capture series are exactly want.
func waitCaptureLinks(t *testing.T, reg *prometheus.Registry, what, want string) {
	t.Helper()
	testkit.WaitFor(t, wait, what, func() (bool, string) {
		if want == "" {
			n, err := testutil.GatherAndCount(reg, "ringcap_capture_link_increase_total")
			return err == nil && n == 0, fmt.Sprintf("%d series, %v", n, err)
		}
		err := testutil.GatherAndCompare(reg, strings.NewReader(captureLinkHeader+want), "ringcap_capture_link_increase_total")
		return err == nil, strings.TrimSpace(strings.ReplaceAll(errString(err), "\n", " "))
	})
}

// The plugin asks the PodResources API which pods hold its device IDs: a pod holding
// mlx5_0 gets its port's counters counted from when it was first seen, labelled with its
// capture (the pod's ringcap.io/capture label) or an empty capture without one; growth
// after that shows; other resources (another plugin's, a DRA claim) are not its; and
// the series go when the pod no longer holds the device.
func TestCaptureLinksFollowPodResources(t *testing.T) {
	reg := prometheus.NewRegistry()
	sock := filepath.Join(shortTempDir(t), "kubelet.sock")
	pr := startPodResources(t, sock)
	pods := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "obs", Name: "burst-0", Labels: map[string]string{linkmetrics.LabelCapture: "burst"}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "obs", Name: "plain"}})
	h := startHarness(t, nil, func(o *Options) {
		o.Registry, o.PodResourcesSocket, o.PodResourcesInterval, o.Pods = reg, sock, 50*time.Millisecond, pods
	})
	for _, dev := range []string{"mlx5_0", "mlx5_2"} {
		writeCounter(t, h.roots.Sys, dev, "rcvd_pkts", "1000")
	}
	<-h.plugin.Scanned()
	dra := podHolding("obs", "claimed", "ringcap.io/rdma")
	dra.Containers[0].DynamicResources = []*podresourcesapi.DynamicResource{{ClaimName: "c", ClaimNamespace: "obs",
		ClaimResources: []*podresourcesapi.ClaimResource{{DriverName: "rdma.ringcap.io", PoolName: "node-1", DeviceName: "mlx5-1-p1"}}}}
	pr.set(podHolding("obs", "burst-0", "ringcap.io/rdma", "mlx5_0", "mlx5_0"), podHolding("obs", "plain", "ringcap.io/rdma", "mlx5_2"),
		podHolding("obs", "gpu", "example.com/gpu", "mlx5_3"), dra)
	waitCaptureLinks(t, reg, "both pods' series, counted from when they were seen",
		captureLinkSeries("obs", "burst-0", "burst", "mlx5_0", "rcvd_pkts", 0)+captureLinkSeries("obs", "plain", "", "mlx5_2", "rcvd_pkts", 0))

	writeCounter(t, h.roots.Sys, "mlx5_0", "rcvd_pkts", "1250")
	waitCaptureLinks(t, reg, "the growth after the baseline",
		captureLinkSeries("obs", "burst-0", "burst", "mlx5_0", "rcvd_pkts", 250)+captureLinkSeries("obs", "plain", "", "mlx5_2", "rcvd_pkts", 0))

	pr.set(podHolding("obs", "burst-0", "ringcap.io/rdma", "mlx5_0"))
	waitCaptureLinks(t, reg, "the series of the pod that let go of its device gone",
		captureLinkSeries("obs", "burst-0", "burst", "mlx5_0", "rcvd_pkts", 250))
	pr.set()
	waitCaptureLinks(t, reg, "no series once no pod holds a device", "")
	if v := testutil.ToFloat64(h.plugin.links.up); v != 1 {
		t.Errorf("ringcap_plugin_pod_resources_up %v, want 1", v)
	}
}

// Without the PodResources socket the plugin works on: its devices are advertised, the
// missing socket is said once in the log and counted, ringcap_plugin_pod_resources_up
// is 0; once the socket answers, the series come.
func TestCaptureLinksWithoutPodResourcesSocket(t *testing.T) {
	reg := prometheus.NewRegistry()
	sock := filepath.Join(shortTempDir(t), "kubelet.sock")
	var mu sync.Mutex
	var said int
	log := funcr.New(func(_, args string) {
		if strings.Contains(args, "PodResources API does not answer") {
			mu.Lock()
			said++
			mu.Unlock()
		}
	}, funcr.Options{})
	h := startHarness(t, nil, func(o *Options) {
		o.Registry, o.PodResourcesSocket, o.PodResourcesInterval, o.Log = reg, sock, 20*time.Millisecond, log
	})
	r := <-h.kubelet.regs
	if r.ResourceName != "ringcap.io/rdma" {
		t.Fatalf("registered %q", r.ResourceName)
	}
	testkit.WaitFor(t, wait, "several failed List calls counted", func() (bool, string) {
		n := testutil.ToFloat64(h.plugin.links.errors)
		return n >= 3, fmt.Sprintf("%v errors", n)
	})
	mu.Lock()
	n := said
	mu.Unlock()
	if n != 1 {
		t.Errorf("the missing socket said %d times in the log, want once", n)
	}
	if v := testutil.ToFloat64(h.plugin.links.up); v != 0 {
		t.Errorf("ringcap_plugin_pod_resources_up %v, want 0", v)
	}

	writeCounter(t, h.roots.Sys, "mlx5_0", "rcvd_pkts", "5")
	startPodResources(t, sock).set(podHolding("obs", "late", "ringcap.io/rdma", "mlx5_0"))
	waitCaptureLinks(t, reg, "the series once the socket answers", captureLinkSeries("obs", "late", "", "mlx5_0", "rcvd_pkts", 0))
}

// Without a socket configured there are neither series nor the API's health metrics.
func TestCaptureLinksOff(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := startHarness(t, nil, func(o *Options) { o.Registry = reg })
	<-h.kubelet.regs
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if strings.Contains(f.GetName(), "pod_resources") || strings.HasPrefix(f.GetName(), "ringcap_capture_link") {
			t.Errorf("%s exported with the PodResources API off", f.GetName())
		}
	}
	if h.plugin.links != nil {
		t.Error("capture links set up with the PodResources API off")
	}
}

// A pod deleted and made again under the same name between two polls (a capture run
// again) is a new holder: the Allocate that gave it the port makes the next poll take a
// new baseline and read its capture label anew, not carry the old pod's on.
func TestCaptureLinksRenewedByAllocate(t *testing.T) {
	reg := prometheus.NewRegistry()
	sock := filepath.Join(shortTempDir(t), "kubelet.sock")
	pr := startPodResources(t, sock)
	pods := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "obs", Name: "run-0", Labels: map[string]string{linkmetrics.LabelCapture: "first"}}})
	h := startHarness(t, nil, func(o *Options) {
		o.Registry, o.PodResourcesSocket, o.PodResourcesInterval, o.Pods = reg, sock, time.Hour, pods // polls only after an Allocate
	})
	writeCounter(t, h.roots.Sys, "mlx5_0", "rcvd_pkts", "1000")
	c := h.client(h.kubelet.registration(t))
	allocate := func() {
		t.Helper()
		if _, err := c.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"mlx5_0"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	pr.set(podHolding("obs", "run-0", "ringcap.io/rdma", "mlx5_0"))
	allocate()
	waitCaptureLinks(t, reg, "the first pod's series", captureLinkSeries("obs", "run-0", "first", "mlx5_0", "rcvd_pkts", 0))
	writeCounter(t, h.roots.Sys, "mlx5_0", "rcvd_pkts", "1400")
	waitCaptureLinks(t, reg, "the first pod's growth", captureLinkSeries("obs", "run-0", "first", "mlx5_0", "rcvd_pkts", 400))

	// The pod is made again under its name, with another capture label, before a poll saw it go.
	p, err := pods.CoreV1().Pods("obs").Get(context.Background(), "run-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Labels[linkmetrics.LabelCapture] = "second"
	if _, err := pods.CoreV1().Pods("obs").Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	allocate()
	waitCaptureLinks(t, reg, "the new pod counted from its own start, with its own label",
		captureLinkSeries("obs", "run-0", "second", "mlx5_0", "rcvd_pkts", 0))
	writeCounter(t, h.roots.Sys, "mlx5_0", "rcvd_pkts", "1500")
	waitCaptureLinks(t, reg, "the new pod's growth", captureLinkSeries("obs", "run-0", "second", "mlx5_0", "rcvd_pkts", 100))
}
