package dra

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/ringcap/ringcap/internal/plugin"
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

const node = "node-1"

func newDriver(t *testing.T, roots rdma.Roots, cdiDir string) *Driver {
	t.Helper()
	d, err := New(Options{Roots: roots, NodeName: node, CDIDir: cdiDir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Rescan(); err != nil {
		t.Fatal(err)
	}
	return d
}

// claim is an allocated claim with one result per "request:device".
func claim(uid, name string, devs ...string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "ns"}}
	c.Status.Allocation = &resourceapi.AllocationResult{}
	for _, rd := range devs {
		req, dev, _ := strings.Cut(rd, ":")
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
			resourceapi.DeviceRequestAllocationResult{Request: req, Driver: DriverName, Pool: node, Device: dev})
	}
	return c
}

func prepare(t *testing.T, d *Driver, cs ...*resourceapi.ResourceClaim) map[types.UID]kubeletplugin.PrepareResult {
	t.Helper()
	res, err := d.PrepareResourceClaims(context.Background(), cs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(cs) {
		t.Fatalf("%d results for %d claims", len(res), len(cs))
	}
	return res
}

func readSpecFile(t *testing.T, path string) cdispec.Spec {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s cdispec.Spec
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPrepareWritesClaimSpec(t *testing.T) {
	dir := t.TempDir()
	d := newDriver(t, treeRoots(rxeTree), dir)
	res := prepare(t, d, claim("uid-1", "c1", "rdma:rxe1-p1"))["uid-1"]
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	want := []kubeletplugin.Device{{Requests: []string{"rdma"}, PoolName: node, DeviceName: "rxe1-p1", CDIDeviceIDs: []string{"ringcap.io/claim=uid-1-rxe1-p1"}}}
	if !reflect.DeepEqual(res.Devices, want) {
		t.Errorf("devices = %+v, want %+v", res.Devices, want)
	}
	s := readSpecFile(t, ClaimSpecPath(dir, "uid-1"))
	if s.Kind != CDIKind || len(s.Devices) != 1 || s.Devices[0].Name != "uid-1-rxe1-p1" {
		t.Fatalf("spec %+v", s)
	}
	e := s.Devices[0].ContainerEdits
	var nodes []string
	for _, n := range e.DeviceNodes {
		nodes = append(nodes, n.Path)
	}
	// Exactly rxe1's uverbs device (uverbs1 in the captured tree) and rdma_cm.
	if !reflect.DeepEqual(nodes, []string{"/dev/infiniband/uverbs1", "/dev/infiniband/rdma_cm"}) {
		t.Errorf("device nodes = %v", nodes)
	}
	// The environment is the device plugin's for that port.
	devs, _, err := rdma.Discover(treeRoots(rxeTree))
	if err != nil {
		t.Fatal(err)
	}
	wantEnv, _, _ := plugin.PortEnv(devs[1], devs[1].Ports[0], plugin.DefaultConfig().Pools[0].GIDPolicy.Policy())
	wantEnv[plugin.EnvDevices] = "rxe1"
	gotEnv := map[string]string{}
	for _, kv := range e.Env {
		k, v, _ := strings.Cut(kv, "=")
		gotEnv[k] = v
	}
	if !reflect.DeepEqual(gotEnv, wantEnv) || gotEnv[plugin.EnvDevice] != "rxe1" || gotEnv[plugin.EnvGID] == "" {
		t.Errorf("env = %v, want %v", gotEnv, wantEnv)
	}
}

func TestPrepareTwoDevicesOneRequest(t *testing.T) {
	dir := t.TempDir()
	d := newDriver(t, treeRoots(rxeTree), dir)
	res := prepare(t, d, claim("uid-2", "c2", "r:rxe0-p1", "r:rxe1-p1"))["uid-2"]
	if res.Err != nil || len(res.Devices) != 2 {
		t.Fatalf("result %+v", res)
	}
	s := readSpecFile(t, ClaimSpecPath(dir, "uid-2"))
	if !contains(s.Devices[0].ContainerEdits.Env, "RINGCAP_RDMA_DEVICES=rxe0,rxe1") || !contains(s.Devices[0].ContainerEdits.Env, "RINGCAP_RDMA_DEVICE=rxe0") {
		t.Errorf("first device env %v", s.Devices[0].ContainerEdits.Env)
	}
	if len(s.Devices[1].ContainerEdits.Env) != 0 || len(s.Devices[1].ContainerEdits.DeviceNodes) != 2 {
		t.Errorf("second device edits %+v: want its nodes and no env (the first names the request's devices)", s.Devices[1].ContainerEdits)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestPrepareRefusals(t *testing.T) {
	roots := rdma.Roots{Sys: rdmatest.CopyDir(t, pciTree+"/sys"), Dev: rdmatest.CopyDir(t, pciTree+"/dev")}
	dir := t.TempDir()
	d := newDriver(t, roots, dir)
	if r := prepare(t, d, claim("a", "a", "r:mlx5-0-p1"))["a"]; r.Err != nil {
		t.Fatal(r.Err)
	}
	other := claim("x", "x", "r:mlx5-2-p1")
	other.Status.Allocation.Devices.Results[0].Pool = "node-2"
	notAlloc := claim("n", "n")
	notAlloc.Status.Allocation = nil
	res := prepare(t, d,
		claim("b", "b", "r:mlx5-0-p1"), // held by a
		claim("c", "c", "r:mlx5-1-p1"), // DOWN: not published
		other, notAlloc)
	for uid, want := range map[types.UID]string{"b": "already prepared for claim ns/a", "c": "not allocatable", "x": "node-2", "n": "not allocated"} {
		if res[uid].Err == nil || !strings.Contains(res[uid].Err.Error(), want) {
			t.Errorf("claim %s: error %v, want one saying %q", uid, res[uid].Err, want)
		}
		if _, err := os.Stat(ClaimSpecPath(dir, uid)); err == nil {
			t.Errorf("claim %s: a CDI spec was written for a refused claim", uid)
		}
	}
	// The port goes down after allocation: preparing fails with the reason.
	rdmatest.SetPortState(t, roots.Sys, "mlx5_2", 1, "DOWN")
	if _, err := d.Rescan(); err != nil {
		t.Fatal(err)
	}
	if r := prepare(t, d, claim("d", "d", "r:mlx5-2-p1"))["d"]; r.Err == nil {
		t.Error("prepared a device whose port is down")
	}
}

func TestUnprepareAndRestart(t *testing.T) {
	dir := t.TempDir()
	d := newDriver(t, treeRoots(rxeTree), dir)
	first := prepare(t, d, claim("u1", "c1", "r:rxe0-p1"), claim("u2", "c2", "r:rxe1-p1"))
	// Idempotent: asking again gives the same answer and no error.
	again := prepare(t, d, claim("u1", "c1", "r:rxe0-p1"))
	if !reflect.DeepEqual(first["u1"], again["u1"]) {
		t.Errorf("second prepare %+v, first %+v", again["u1"], first["u1"])
	}

	// A restarted driver finds both claims in the CDI directory.
	d2 := newDriver(t, treeRoots(rxeTree), dir)
	if got := d2.Prepared(); !reflect.DeepEqual(got, []types.UID{"u1", "u2"}) {
		t.Fatalf("restarted driver found %v, want u1 u2", got)
	}
	if r := prepare(t, d2, claim("u3", "c3", "r:rxe0-p1"))["u3"]; r.Err == nil {
		t.Error("restarted driver prepared rxe0-p1 for a second claim")
	}
	if r := prepare(t, d2, claim("u1", "c1", "r:rxe0-p1"))["u1"]; !reflect.DeepEqual(r, first["u1"]) {
		t.Errorf("restarted driver answers %+v for a prepared claim, first run %+v", r, first["u1"])
	}

	res, err := d2.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{
		{UID: "u1", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "c1"}},
		{UID: "gone", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "gone"}},
	})
	if err != nil || res["u1"] != nil || res["gone"] != nil || len(res) != 2 {
		t.Fatalf("unprepare: %v %v", res, err)
	}
	if _, err := os.Stat(ClaimSpecPath(dir, "u1")); !os.IsNotExist(err) {
		t.Errorf("spec of u1 still there after unprepare (%v)", err)
	}
	if got := d2.Prepared(); !reflect.DeepEqual(got, []types.UID{"u2"}) {
		t.Errorf("prepared after unprepare: %v", got)
	}
	if r := prepare(t, d2, claim("u3", "c3", "r:rxe0-p1"))["u3"]; r.Err != nil {
		t.Errorf("rxe0-p1 free again, but: %v", r.Err)
	}
}

// TestBadSpecsSkipped: spec files that cannot be read as ringcap claim specs (another
// program's, a truncated one) do not stop the driver: the readable claims are loaded,
// the bad files stay where they are and a check leaves them there.
func TestBadSpecsSkipped(t *testing.T) {
	dir := t.TempDir()
	d := newDriver(t, treeRoots(rxeTree), dir)
	if r := prepare(t, d, claim("good", "good", "r:rxe0-p1"))["good"]; r.Err != nil {
		t.Fatal(r.Err)
	}
	bad := map[string]string{
		ClaimSpecPath(dir, "foreign"):   `{"cdiVersion":"0.6.0","kind":"example.com/x","devices":[]}`,
		ClaimSpecPath(dir, "truncated"): `{"cdiVersion":"0.6.0","kind":"ringcap.io/cl`,
	}
	for p, content := range bad {
		rdmatest.WriteFile(t, p, content)
	}
	d2, err := New(Options{Roots: treeRoots(rxeTree), NodeName: node, CDIDir: dir})
	if err != nil {
		t.Fatalf("New with bad spec files: %v", err)
	}
	if got := d2.Prepared(); !reflect.DeepEqual(got, []types.UID{"good"}) {
		t.Errorf("prepared %v, want the readable claim", got)
	}
	if err := d2.CheckState(context.Background()); err != nil {
		t.Errorf("CheckState: %v", err)
	}
	if !reflect.DeepEqual(d2.badSpecs, map[string]bool{ClaimSpecPath(dir, "foreign"): true, ClaimSpecPath(dir, "truncated"): true}) {
		t.Errorf("bad specs found: %v", d2.badSpecs)
	}
	for p, content := range bad {
		if b, err := os.ReadFile(p); err != nil || strings.TrimSpace(string(b)) != content {
			t.Errorf("%s changed: %q %v", p, b, err)
		}
	}
	// The readable claim still holds its port.
	if _, err := d2.Rescan(); err != nil {
		t.Fatal(err)
	}
	if r := prepare(t, d2, claim("other", "other", "r:rxe0-p1"))["other"]; r.Err == nil {
		t.Error("rxe0-p1 prepared for a second claim next to bad spec files")
	}
}

// TestTwoInstancesShareState is a rolling update's two driver instances on one node
// (one CDI directory, one sysfs): a claim prepared by one is unprepared by the other,
// and a device prepared by one is refused to another claim by the other.
func TestTwoInstancesShareState(t *testing.T) {
	dir := t.TempDir()
	old := newDriver(t, treeRoots(rxeTree), dir)
	upd := newDriver(t, treeRoots(rxeTree), dir)
	if r := prepare(t, old, claim("a", "a", "r:rxe0-p1"))["a"]; r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := prepare(t, upd, claim("b", "b", "r:rxe0-p1"))["b"]; r.Err == nil || !strings.Contains(r.Err.Error(), "already prepared for claim ns/a") {
		t.Errorf("the other instance prepared rxe0-p1 for b while a holds it: %v", r.Err)
	}
	res, err := upd.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{
		{UID: "a", NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}})
	if err != nil || res["a"] != nil {
		t.Fatalf("unprepare a in the other instance: %v %v", res, err)
	}
	if _, err := os.Stat(ClaimSpecPath(dir, "a")); !os.IsNotExist(err) {
		t.Errorf("spec of a still there after the other instance unprepared it (%v)", err)
	}
	if r := prepare(t, old, claim("b", "b", "r:rxe0-p1"))["b"]; r.Err != nil {
		t.Errorf("rxe0-p1 freed by the other instance, but: %v", r.Err)
	}
	if r := prepare(t, upd, claim("c", "c", "r:rxe0-p1"))["c"]; r.Err == nil {
		t.Error("the other instance prepared rxe0-p1 for c while b holds it")
	}
}

// recorder is a Publisher that keeps what it was given (the API server side is
// tested in the envtest tier).
type recorder struct {
	mu  sync.Mutex
	got []resourceslice.DriverResources
}

func (r *recorder) PublishResources(_ context.Context, res resourceslice.DriverResources) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, res)
	return nil
}

func names(res resourceslice.DriverResources) []string {
	var out []string
	for _, s := range res.Pools[node].Slices {
		for _, d := range s.Devices {
			out = append(out, d.Name)
		}
	}
	return out
}

func TestRescanRepublishesOnlyOnChange(t *testing.T) {
	roots := rdma.Roots{Sys: rdmatest.CopyDir(t, pciTree+"/sys"), Dev: rdmatest.CopyDir(t, pciTree+"/dev")}
	d := newDriver(t, roots, t.TempDir())
	var rec recorder
	if err := d.Publish(context.Background(), &rec); err != nil {
		t.Fatal(err)
	}
	if changed, err := d.Rescan(); err != nil || changed {
		t.Errorf("rescan without a change: changed=%v err=%v", changed, err)
	}
	rdmatest.SetPortState(t, roots.Sys, "mlx5_1", 1, "ACTIVE")
	if changed, err := d.Rescan(); err != nil || !changed {
		t.Errorf("rescan after mlx5_1 came up: changed=%v err=%v", changed, err)
	}
	if err := d.Publish(context.Background(), &rec); err != nil {
		t.Fatal(err)
	}
	if a, b := names(rec.got[0]), names(rec.got[1]); !reflect.DeepEqual(a, []string{"mlx5-0-p1", "mlx5-2-p1"}) || !reflect.DeepEqual(b, []string{"mlx5-0-p1", "mlx5-1-p1", "mlx5-2-p1"}) {
		t.Errorf("published %v then %v", a, b)
	}
}

// defaultConfigFast is the default config with a short rescan interval.
func defaultConfigFast() *plugin.Config {
	c := plugin.DefaultConfig()
	c.RescanInterval.Duration = 100 * time.Millisecond
	return c
}

// TestMetricsFollowClaimsAndPublish: prepare and unprepare count their claims by
// result and time each call; a publish sets the published device count and its time.
func TestMetricsFollowClaimsAndPublish(t *testing.T) {
	reg := prometheus.NewRegistry()
	d, err := New(Options{Roots: treeRoots(rxeTree), NodeName: node, CDIDir: t.TempDir(), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Rescan(); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if err := d.Publish(context.Background(), &recorder{}); err != nil {
		t.Fatal(err)
	}
	prepare(t, d, claim("u1", "c1", "r:rxe0-p1"), claim("u2", "c2", "r:rxe0-p1")) // the second is refused: rxe0-p1 is held
	prepare(t, d)                                                                 // the health probe's empty call
	if _, err := d.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{{UID: "u1"}}); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP ringcap_dra_claims_total Claims prepared or unprepared, by result.
# TYPE ringcap_dra_claims_total counter
ringcap_dra_claims_total{operation="prepare",result="error"} 1
ringcap_dra_claims_total{operation="prepare",result="ok"} 1
ringcap_dra_claims_total{operation="unprepare",result="ok"} 1
# HELP ringcap_dra_published_devices Devices in the node's ResourceSlices as last published.
# TYPE ringcap_dra_published_devices gauge
ringcap_dra_published_devices 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ringcap_dra_claims_total", "ringcap_dra_published_devices"); err != nil {
		t.Error(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "ringcap_dra_request_seconds":
			for _, m := range mf.GetMetric() {
				if c := m.GetHistogram().GetSampleCount(); c != 1 {
					t.Errorf("request_seconds %v: %d calls timed, want 1 (the empty call is not)", m.GetLabel(), c)
				}
			}
			if len(mf.GetMetric()) != 2 {
				t.Errorf("request_seconds series %d, want prepare and unprepare", len(mf.GetMetric()))
			}
		case "ringcap_dra_last_publish_timestamp_seconds":
			if v := mf.GetMetric()[0].GetGauge().GetValue(); v < float64(before.Unix()) {
				t.Errorf("last publish %v, before the publish at %v", v, before.Unix())
			}
		}
	}
}
