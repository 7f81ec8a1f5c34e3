package plugin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/testenv"
	"github.com/ringcap/ringcap/internal/testkit"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	ringcapv1alpha1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

// wait bounds how long a test waits for something that must happen; it is a
// failure deadline, not a timing assertion.
const wait = 30 * time.Second

// fakeKubelet is a real gRPC Registration server on <dir>/kubelet.sock.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	dir  string
	srv  *grpc.Server
	regs chan *pluginapi.RegisterRequest
}

func startKubelet(t *testing.T, dir string) *fakeKubelet {
	t.Helper()
	k := &fakeKubelet{dir: dir, regs: make(chan *pluginapi.RegisterRequest, 16)}
	startKubeletOn(t, k)
	return k
}

func startKubeletOn(tb testing.TB, k *fakeKubelet) {
	tb.Helper()
	l, err := netListenUnix(filepath.Join(k.dir, "kubelet.sock"))
	if err != nil {
		tb.Fatal(err)
	}
	k.srv = grpc.NewServer()
	pluginapi.RegisterRegistrationServer(k.srv, k)
	go func() { _ = k.srv.Serve(l) }()
	tb.Cleanup(k.stop)
}

func dialPlugin(tb testing.TB, dir, endpoint string) (*grpc.ClientConn, pluginapi.DevicePluginClient) {
	tb.Helper()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	return conn, pluginapi.NewDevicePluginClient(conn)
}

func (k *fakeKubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	if r.Version != pluginapi.Version {
		return nil, status.Errorf(codes.InvalidArgument, "version %q", r.Version)
	}
	k.regs <- r
	return &pluginapi.Empty{}, nil
}

func (k *fakeKubelet) stop() { k.srv.Stop() }

// restart does what a kubelet restart does to the directory: the old kubelet goes
// away, the new one removes every socket in the directory and creates kubelet.sock.
func (k *fakeKubelet) restart(t *testing.T) *fakeKubelet {
	t.Helper()
	k.stop()
	ents, err := os.ReadDir(k.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sock") {
			if err := os.Remove(filepath.Join(k.dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
	}
	return startKubelet(t, k.dir)
}

// registration waits for the next Register call.
func (k *fakeKubelet) registration(t *testing.T) *pluginapi.RegisterRequest {
	t.Helper()
	select {
	case r := <-k.regs:
		return r
	case <-time.After(wait):
		t.Fatal("no registration")
		return nil
	}
}

// harness runs a Plugin over a copy of the PCI testdata tree with a fake kubelet.
type harness struct {
	t       *testing.T
	roots   rdma.Roots
	dir     string
	kubelet *fakeKubelet
	plugin  *Plugin
	sink    *memSink
	cancel  context.CancelFunc
	done    chan error
}

func startHarness(t *testing.T, cfg *Config, mutate func(*Options)) *harness {
	return startHarnessOn(t, cfg, false, mutate)
}

// startHarnessOn with real runs the plugin on the machine's own /sys and /dev (VM tests).
func startHarnessOn(t *testing.T, cfg *Config, real bool, mutate func(*Options)) *harness {
	t.Helper()
	if real {
		return startHarnessRoots(t, cfg, rdma.DefaultRoots, mutate)
	}
	return startHarnessTree(t, "pci", cfg, mutate)
}

// startHarnessTree runs the plugin over a copy of a testdata tree of pkg/rdma ("pci", "efa").
func startHarnessTree(t *testing.T, tree string, cfg *Config, mutate func(*Options)) *harness {
	t.Helper()
	testkit.HostOnly(t)
	base := "../../pkg/rdma/testdata/" + tree
	return startHarnessRoots(t, cfg, rdma.Roots{Sys: rdmatest.CopyDir(t, base+"/sys"), Dev: rdmatest.CopyDir(t, base+"/dev")}, mutate)
}

func startHarnessRoots(t *testing.T, cfg *Config, roots rdma.Roots, mutate func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, dir: shortTempDir(t), sink: &memSink{}, roots: roots}
	h.kubelet = startKubelet(t, h.dir)
	if cfg == nil {
		cfg = DefaultConfig()
	}
	cfg.RescanInterval.Duration = 100 * time.Millisecond
	opts := Options{Config: cfg, Roots: h.roots, KubeletDir: h.dir, NodeName: "node-1", Inventory: h.sink, Log: testenv.Logger(t)}
	if mutate != nil {
		mutate(&opts)
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.plugin = p
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- p.Run(ctx) }()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("Run: %v", err)
		}
	case <-time.After(wait):
		h.t.Error("Run did not return after cancel")
	}
}

// client dials a registered endpoint.
func (h *harness) client(r *pluginapi.RegisterRequest) pluginapi.DevicePluginClient {
	h.t.Helper()
	conn, c := dialPlugin(h.t, h.dir, r.Endpoint)
	h.t.Cleanup(func() { _ = conn.Close() })
	return c
}

// watch opens ListAndWatch and returns a function that waits for a response
// satisfying ok, and returns it.
func (h *harness) watch(c pluginapi.DevicePluginClient) func(ok func(map[string]*pluginapi.Device) bool) map[string]*pluginapi.Device {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	stream, err := c.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		h.t.Fatal(err)
	}
	resps := make(chan map[string]*pluginapi.Device, 64)
	go func() {
		defer close(resps)
		for {
			r, err := stream.Recv()
			if err != nil {
				return
			}
			m := map[string]*pluginapi.Device{}
			for _, d := range r.Devices {
				m[d.ID] = d
			}
			resps <- m
		}
	}()
	return func(ok func(map[string]*pluginapi.Device) bool) map[string]*pluginapi.Device {
		h.t.Helper()
		timeout := time.After(wait)
		var last map[string]*pluginapi.Device
		for {
			select {
			case m, open := <-resps:
				if !open {
					h.t.Fatalf("ListAndWatch stream ended; last response %v", describe(last))
				}
				last = m
				if ok(m) {
					return m
				}
			case <-timeout:
				h.t.Fatalf("no matching ListAndWatch response; last %v", describe(last))
			}
		}
	}
}

func describe(m map[string]*pluginapi.Device) string {
	var s []string
	for id, d := range m {
		s = append(s, id+"="+d.Health)
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

func healthIs(want map[string]string) func(map[string]*pluginapi.Device) bool {
	return func(m map[string]*pluginapi.Device) bool {
		if len(m) != len(want) {
			return false
		}
		for id, hl := range want {
			if d, ok := m[id]; !ok || d.Health != hl {
				return false
			}
		}
		return true
	}
}

func (h *harness) setPort(dev, state string) { rdmatest.SetPortState(h.t, h.roots.Sys, dev, 1, state) }

func TestPluginRegistersAndWatches(t *testing.T) {
	h := startHarness(t, nil, nil)
	r := h.kubelet.registration(t)
	if r.ResourceName != "ringcap.io/rdma" || r.Endpoint != "ringcap-rdma.sock" || r.Version != "v1beta1" ||
		r.Options == nil || !r.Options.GetPreferredAllocationAvailable {
		t.Fatalf("registration = %+v", r)
	}
	c := h.client(r)
	next := h.watch(c)
	m := next(func(m map[string]*pluginapi.Device) bool { return len(m) > 0 })
	if got := describe(m); got != "mlx5_0=Healthy mlx5_1=Unhealthy mlx5_2=Healthy" {
		t.Fatalf("devices: %s", got)
	}
	if numa(m["mlx5_0"]) != 0 || numa(m["mlx5_2"]) != 1 {
		t.Errorf("topology: mlx5_0 %v mlx5_2 %v", m["mlx5_0"].Topology, m["mlx5_2"].Topology)
	}

	// Health follows the port state, both ways.
	h.setPort("mlx5_0", "DOWN")
	h.setPort("mlx5_1", "ACTIVE")
	next(healthIs(map[string]string{"mlx5_0": "Unhealthy", "mlx5_1": "Healthy", "mlx5_2": "Healthy"}))
	h.setPort("mlx5_0", "ACTIVE")
	next(healthIs(map[string]string{"mlx5_0": "Healthy", "mlx5_1": "Healthy", "mlx5_2": "Healthy"}))

	// A device without its uverbs node is unhealthy.
	if err := os.Remove(filepath.Join(h.roots.Dev, "infiniband/uverbs2")); err != nil {
		t.Fatal(err)
	}
	next(healthIs(map[string]string{"mlx5_0": "Healthy", "mlx5_1": "Healthy", "mlx5_2": "Unhealthy"}))

	// A device that disappears leaves the list.
	if err := os.Remove(filepath.Join(h.roots.Sys, "class/infiniband/mlx5_1")); err != nil {
		t.Fatal(err)
	}
	next(healthIs(map[string]string{"mlx5_0": "Healthy", "mlx5_2": "Unhealthy"}))

	opts, err := c.GetDevicePluginOptions(context.Background(), &pluginapi.Empty{})
	if err != nil || !opts.GetPreferredAllocationAvailable || opts.PreStartRequired {
		t.Errorf("options %+v %v", opts, err)
	}
}

func TestAllocateExclusive(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := startHarness(t, nil, func(o *Options) { o.Registry = reg })
	c := h.client(h.kubelet.registration(t))
	h.watch(c)(func(m map[string]*pluginapi.Device) bool { return len(m) == 3 })
	t.Cleanup(func() {
		// Metrics: devices and units by health, the two container allocations, the refusal.
		want := `
# HELP ringcap_plugin_allocation_errors_total Allocate requests refused.
# TYPE ringcap_plugin_allocation_errors_total counter
ringcap_plugin_allocation_errors_total{resource="ringcap.io/rdma"} 1
# HELP ringcap_plugin_allocations_total Container allocations answered.
# TYPE ringcap_plugin_allocations_total counter
ringcap_plugin_allocations_total{resource="ringcap.io/rdma"} 3
# HELP ringcap_plugin_devices RDMA devices in the pool.
# TYPE ringcap_plugin_devices gauge
ringcap_plugin_devices{resource="ringcap.io/rdma"} 3
# HELP ringcap_plugin_units Advertised units (device IDs) of the pool, by health.
# TYPE ringcap_plugin_units gauge
ringcap_plugin_units{health="Healthy",resource="ringcap.io/rdma"} 2
ringcap_plugin_units{health="Unhealthy",resource="ringcap.io/rdma"} 1
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ringcap_plugin_allocation_errors_total",
			"ringcap_plugin_allocations_total", "ringcap_plugin_devices", "ringcap_plugin_units"); err != nil {
			t.Error(err)
		}
		if n := testutil.CollectAndCount(reg, "ringcap_plugin_device_healthy"); n != 3 {
			t.Errorf("device_healthy series: %d", n)
		}
	})

	resp, err := c.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{"mlx5_0"}}, {DevicesIds: []string{"mlx5_1"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ContainerResponses) != 2 {
		t.Fatalf("responses: %d", len(resp.ContainerResponses))
	}
	c0, c1 := resp.ContainerResponses[0], resp.ContainerResponses[1]
	if got, want := specPaths(c0), []string{"/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"}; !reflect.DeepEqual(got, want) {
		t.Errorf("mlx5_0 devices %v, want %v", got, want)
	}
	for _, d := range c0.Devices {
		if d.HostPath != d.ContainerPath || d.Permissions != "rw" {
			t.Errorf("device spec %+v", d)
		}
	}
	wantEnv := map[string]string{
		EnvDevice: "mlx5_0", EnvDevices: "mlx5_0", EnvPort: "1", EnvGIDIndex: "3", EnvGID: "10.0.0.5",
		EnvNetdev: "enp3s0f0", EnvRoCEVersion: "2",
		EnvGIDReason: "RoCE v2 GID with an IPv4-mapped address: 10.0.0.5 on enp3s0f0 (port 1)",
	}
	if !reflect.DeepEqual(c0.Envs, wantEnv) {
		t.Errorf("env\n%v\nwant\n%v", c0.Envs, wantEnv)
	}
	if len(c0.CdiDevices) != 0 {
		t.Errorf("CDI devices without CDI: %v", c0.CdiDevices)
	}
	// mlx5_1's uverbs is uverbs4 (uverbs1 belongs to mlx5_10); no IPv4 GID: no GID env, reason given.
	if got, want := specPaths(c1), []string{"/dev/infiniband/uverbs4", "/dev/infiniband/rdma_cm"}; !reflect.DeepEqual(got, want) {
		t.Errorf("mlx5_1 devices %v, want %v", got, want)
	}
	if _, ok := c1.Envs[EnvGIDIndex]; ok || !strings.Contains(c1.Envs[EnvGIDReason], "no RoCE v2 GID") {
		t.Errorf("mlx5_1 env %v", c1.Envs)
	}

	// Unknown IDs are refused.
	_, err = c.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"mlx5_9"}}}})
	if status.Code(err) != codes.NotFound {
		t.Errorf("unknown ID: %v", err)
	}

	// A GID-table change reaches Allocate: the IPv4 address moves to a new index.
	gidDir := filepath.Join(h.roots.Sys, "class/infiniband/mlx5_0/ports/1")
	rdmatest.WriteFile(t, filepath.Join(gidDir, "gids/3"), "0000:0000:0000:0000:0000:0000:0000:0000")
	rdmatest.WriteFile(t, filepath.Join(gidDir, "gids/11"), "0000:0000:0000:0000:0000:ffff:0a00:0007")
	rdmatest.WriteFile(t, filepath.Join(gidDir, "gid_attrs/types/11"), "RoCE v2")
	rdmatest.WriteFile(t, filepath.Join(gidDir, "gid_attrs/ndevs/11"), "enp3s0f0")
	<-h.plugin.Scanned() // a scan that may have started before the change
	<-h.plugin.Scanned() // a scan that started after it
	resp, err = c.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"mlx5_0"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if e := resp.ContainerResponses[0].Envs; e[EnvGIDIndex] != "11" || e[EnvGID] != "10.0.0.7" {
		t.Errorf("after GID change: %v", e)
	}
}

func specPaths(c *pluginapi.ContainerAllocateResponse) []string {
	var out []string
	for _, d := range c.Devices {
		out = append(out, d.ContainerPath)
	}
	return out
}

func TestAllocateSharedAndPools(t *testing.T) {
	cfg, err := ParseConfig([]byte(`
version: v1
pools:
- name: roce
  selector: {devices: [mlx5_0]}
  sharing: {mode: shared, maxPodsPerDevice: 2}
  charDevices: {umad: true}
  gidPolicy: {mode: roce-v2-ipv6}
- name: ib
  selector: {linkLayers: [InfiniBand]}
  charDevices: {umad: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	cdi := t.TempDir()
	h := startHarness(t, cfg, func(o *Options) { o.CDIDir = cdi })
	regs := map[string]*pluginapi.RegisterRequest{}
	for i := 0; i < 2; i++ {
		r := h.kubelet.registration(t)
		regs[r.ResourceName] = r
	}
	roce, ib := regs["ringcap.io/roce"], regs["ringcap.io/ib"]
	if roce == nil || ib == nil || roce.Endpoint != "ringcap-roce.sock" || ib.Endpoint != "ringcap-ib.sock" {
		t.Fatalf("registrations: %v", regs)
	}
	cr := h.client(roce)
	h.watch(cr)(healthIs(map[string]string{"mlx5_0-0": "Healthy", "mlx5_0-1": "Healthy"}))
	ci := h.client(ib)
	h.watch(ci)(healthIs(map[string]string{"mlx5_2": "Healthy"}))

	resp, err := cr.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"mlx5_0-1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	c := resp.ContainerResponses[0]
	if got, want := specPaths(c), []string{"/dev/infiniband/uverbs0", "/dev/infiniband/umad1", "/dev/infiniband/rdma_cm"}; !reflect.DeepEqual(got, want) {
		t.Errorf("shared devices %v, want %v", got, want)
	}
	if c.Envs[EnvDevice] != "mlx5_0" || c.Envs[EnvGIDIndex] != "5" || c.Envs[EnvGID] != "2001:db8:1::5" {
		t.Errorf("shared env %v", c.Envs)
	}
	if len(c.CdiDevices) != 1 || c.CdiDevices[0].Name != "ringcap.io/roce=mlx5_0" {
		t.Errorf("CDI devices %v", c.CdiDevices)
	}
	// Both slots of one device in one container: the device once.
	resp, err = cr.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"mlx5_0-0", "mlx5_0-1"}}}})
	if err != nil || len(specPaths(resp.ContainerResponses[0])) != 3 {
		t.Errorf("two slots: %v %v", resp, err)
	}

	resp, err = ci.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"mlx5_2"}}}})
	if err != nil {
		t.Fatal(err)
	}
	c = resp.ContainerResponses[0]
	if got, want := specPaths(c), []string{"/dev/infiniband/uverbs2", "/dev/infiniband/umad0", "/dev/infiniband/issm0", "/dev/infiniband/rdma_cm"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ib devices %v, want %v", got, want)
	}
	if c.Envs[EnvGIDIndex] != "0" || c.Envs[EnvRoCEVersion] != "1" || c.Envs[EnvNetdev] != "" {
		t.Errorf("ib env %v", c.Envs)
	}

	// The CDI specs name the same device nodes.
	b, err := os.ReadFile(filepath.Join(cdi, "ringcap.io-roce.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind": "ringcap.io/roce"`, `"name": "mlx5_0"`, `"path": "/dev/infiniband/uverbs0"`, `"path": "/dev/infiniband/umad1"`, `"RINGCAP_GID_INDEX=5"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("CDI spec lacks %s:\n%s", want, b)
		}
	}
}

func TestReregistersAfterKubeletRestart(t *testing.T) {
	h := startHarness(t, nil, nil)
	r := h.kubelet.registration(t)
	h.watch(h.client(r))(func(m map[string]*pluginapi.Device) bool { return len(m) == 3 })
	for i := 0; i < 2; i++ {
		h.kubelet = h.kubelet.restart(t)
		r = h.kubelet.registration(t)
		if r.ResourceName != "ringcap.io/rdma" {
			t.Fatalf("re-registration %d: %+v", i, r)
		}
		if _, err := os.Stat(filepath.Join(h.dir, r.Endpoint)); err != nil {
			t.Fatalf("endpoint socket after re-registration: %v", err)
		}
		// The new endpoint serves.
		c := h.client(r)
		h.watch(c)(func(m map[string]*pluginapi.Device) bool { return len(m) == 3 })
	}
	// Kubelet gone for a while, then back.
	h.kubelet.stop()
	<-h.plugin.Scanned()
	<-h.plugin.Scanned()
	h.kubelet = h.kubelet.restart(t)
	h.kubelet.registration(t)
}

func TestShutdownRemovesSockets(t *testing.T) {
	testkit.HostOnly(t)
	before := runtime.NumGoroutine()
	h := startHarness(t, nil, nil)
	r := h.kubelet.registration(t)
	sock := filepath.Join(h.dir, r.Endpoint)
	if _, err := os.Stat(sock); err != nil {
		t.Fatal(err)
	}
	conn, c := dialPlugin(t, h.dir, r.Endpoint)
	h.watch(c)(func(m map[string]*pluginapi.Device) bool { return len(m) == 3 })
	h.stop()
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket after shutdown: %v", err)
	}
	// Nothing of the plugin keeps running (the fake kubelet and the test's client
	// connection are stopped here too).
	h.kubelet.stop()
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(wait)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after shutdown, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRefusesOverlappingExclusivePools(t *testing.T) {
	testkit.HostOnly(t)
	cfg, err := ParseConfig([]byte("version: v1\npools: [{name: a}, {name: b, selector: {drivers: [mlx5_core]}}]"))
	if err != nil {
		t.Fatal(err)
	}
	dir := shortTempDir(t)
	p, err := New(Options{Config: cfg, Roots: rdma.Roots{Sys: "../../pkg/rdma/testdata/pci/sys", Dev: "../../pkg/rdma/testdata/pci/dev"}, KubeletDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Run(context.Background())
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "pools[1].selector" {
		t.Fatalf("Run = %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("sockets left: %v", ents)
	}
}

func TestInventory(t *testing.T) {
	h := startHarness(t, nil, nil)
	h.kubelet.registration(t)
	inv := h.sink.waitFor(t, func(inv *Inventory) bool { return len(inv.Status.Devices) == 3 })
	if inv.Labels[LabelRDMA] != "true" || inv.Labels[LabelRoCEv2] != "true" {
		t.Errorf("labels %v", inv.Labels)
	}
	d0 := inv.Status.Devices[0]
	if d0.Name != "mlx5_0" || d0.Pool != "ringcap.io/rdma" || d0.Health != "Healthy" || *d0.NUMANode != 0 ||
		*d0.Ports[0].ChosenGIDIndex != 3 || len(d0.Ports[0].GIDs) != 8 || d0.Ports[0].GIDs[7].GID != "10.100.0.5" {
		t.Errorf("mlx5_0 inventory %+v", d0)
	}
	d1 := inv.Status.Devices[1]
	if d1.Health != "Unhealthy" || d1.HealthReason != "port 1 is DOWN (Disabled)" || d1.Ports[0].ChosenGIDIndex != nil ||
		!strings.Contains(d1.Ports[0].GIDReason, "no RoCE v2 GID") {
		t.Errorf("mlx5_1 inventory %+v", d1)
	}
	if len(inv.Status.Skipped) != 2 || inv.Status.Conditions[0].Status != "False" || inv.Status.Conditions[0].Reason != "DevicesUnhealthy" {
		t.Errorf("skipped %v conditions %v", inv.Status.Skipped, inv.Status.Conditions)
	}
	if p := inv.Status.Pools; len(p) != 1 || p[0].Units != 3 || p[0].HealthyUnits != 2 {
		t.Errorf("pools %+v", p)
	}
	if own, err := OwnMemlock(); err != nil || inv.Status.ContainerMemlock == nil || *inv.Status.ContainerMemlock != *own {
		t.Errorf("containerMemlock %+v, want the process's own %+v (%v)", inv.Status.ContainerMemlock, own, err)
	}

	n := h.sink.count()
	h.setPort("mlx5_1", "ACTIVE")
	inv = h.sink.waitFor(t, func(inv *Inventory) bool { return inv.Status.Conditions[0].Status == "True" })
	if inv.Status.Pools[0].HealthyUnits != 3 || h.sink.count() != n+1 {
		t.Errorf("after port up: %+v, %d publishes (want %d: only on change)", inv.Status.Pools, h.sink.count(), n+1)
	}
	// Every port down: the rdma label is removed.
	for _, d := range []string{"mlx5_0", "mlx5_1", "mlx5_2"} {
		h.setPort(d, "DOWN")
	}
	inv = h.sink.waitFor(t, func(inv *Inventory) bool { return inv.Status.Pools[0].HealthyUnits == 0 })
	if inv.Labels[LabelRDMA] != "" || inv.Labels[LabelRoCEv2] != "" {
		t.Errorf("labels with every port down: %v", inv.Labels)
	}
}

// memSink records published inventories; it fails the first publish to check retries.
type memSink struct {
	mu     sync.Mutex
	failed bool
	invs   []*Inventory
	cond   chan struct{}
}

func (m *memSink) Publish(_ context.Context, inv *Inventory) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.failed {
		m.failed = true
		return errors.New("API server unavailable")
	}
	m.invs = append(m.invs, inv)
	if m.cond != nil {
		close(m.cond)
		m.cond = nil
	}
	return nil
}

func (m *memSink) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.invs)
}

func (m *memSink) waitFor(t *testing.T, ok func(*Inventory) bool) *Inventory {
	t.Helper()
	timeout := time.After(wait)
	for {
		m.mu.Lock()
		if n := len(m.invs); n > 0 && ok(m.invs[n-1]) {
			inv := m.invs[n-1]
			m.mu.Unlock()
			return inv
		}
		if m.cond == nil {
			m.cond = make(chan struct{})
		}
		c := m.cond
		m.mu.Unlock()
		select {
		case <-c:
		case <-timeout:
			t.Fatal("no matching inventory published")
		}
	}
}

func TestPreferred(t *testing.T) {
	pool := Pool{Name: "p", Sharing: Sharing{Mode: SharingShared, MaxPodsPerDevice: 2}}
	mk := func(name string, numa int, active bool) rdma.Device {
		st := "ACTIVE"
		if !active {
			st = "DOWN"
		}
		return rdma.Device{Name: name, NUMANode: numa, UVerbs: "/dev/infiniband/uverbs0",
			Ports: []rdma.Port{{Num: 1, State: st, LinkLayer: rdma.LinkLayerEthernet}}}
	}
	ps := newPoolState(pool, []rdma.Device{mk("a", 0, true), mk("b", 1, true), mk("c", 1, true), mk("d", 0, false)})
	all := []string{"a-0", "a-1", "b-0", "b-1", "c-0", "c-1", "d-0", "d-1"}
	cases := []struct {
		avail, must []string
		size        int
		want        []string
	}{
		{all, nil, 1, []string{"a-0"}},
		{all, nil, 2, []string{"a-0", "a-1"}},                    // same NUMA node and healthy beat a distinct device
		{all, []string{"b-1"}, 2, []string{"b-1", "c-0"}},        // NUMA of the must-include, another device
		{all, []string{"b-1"}, 3, []string{"b-0", "b-1", "c-0"}}, // then the same device
		{[]string{"a-1", "b-0", "b-1"}, nil, 1, []string{"b-0"}}, // least used device (a has one unit taken)
		{[]string{"d-0", "d-1", "c-1"}, nil, 1, []string{"c-1"}}, // healthy first
		{[]string{"a-0"}, nil, 2, []string{"a-0"}},               // not enough: what there is
	}
	for _, c := range cases {
		if got := preferred(ps, c.avail, c.must, c.size); !reflect.DeepEqual(got, c.want) {
			t.Errorf("preferred(%v, must %v, %d) = %v, want %v", c.avail, c.must, c.size, got, c.want)
		}
	}
}

func TestMemlockOf(t *testing.T) {
	if m := memlockOf(unix.RLIM_INFINITY); !m.Unlimited || m.Bytes != 0 {
		t.Errorf("RLIM_INFINITY: %+v", m)
	}
	if m := memlockOf(8 << 20); m.Unlimited || m.Bytes != 8<<20 {
		t.Errorf("8 MiB: %+v", m)
	}
}

func TestInventoryWithoutMemlock(t *testing.T) {
	h := startHarness(t, nil, func(o *Options) {
		o.Memlock = func() (*ringcapv1alpha1.MemlockLimit, error) { return nil, errors.New("no rlimit") }
	})
	h.kubelet.registration(t)
	inv := h.sink.waitFor(t, func(inv *Inventory) bool { return len(inv.Status.Devices) == 3 })
	if inv.Status.ContainerMemlock != nil {
		t.Errorf("containerMemlock %+v when it cannot be read, want none (unknown)", inv.Status.ContainerMemlock)
	}
}
