package dra

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"

	"github.com/ringcap/ringcap/internal/plugin"
)

// adminClaim is claim() with every result allocated with admin access.
func adminClaim(uid, name string, devs ...string) *resourceapi.ResourceClaim {
	c := claim(uid, name, devs...)
	for i := range c.Status.Allocation.Devices.Results {
		c.Status.Allocation.Devices.Results[i].AdminAccess = ptr.To(true)
	}
	return c
}

// TestAdminAccess: an admin-access claim is prepared beside a normal holder of the device
// and in either order, holds nothing (a normal claim still gets the device when the
// holder is gone), tells its container RINGCAP_ADMIN_ACCESS=true, and a restarted
// driver still knows it holds nothing.
func TestAdminAccess(t *testing.T) {
	dir := t.TempDir()
	d := newDriver(t, treeRoots(rxeTree), dir)
	res := prepare(t, d, claim("n1", "normal", "r:rxe0-p1"), adminClaim("a1", "admin", "r:rxe0-p1"), adminClaim("a2", "admin-first", "r:rxe1-p1"))
	for uid, r := range res {
		if r.Err != nil {
			t.Fatalf("claim %s: %v", uid, r.Err)
		}
	}
	if r := prepare(t, d, claim("n2", "after-admin", "r:rxe1-p1"))["n2"]; r.Err != nil {
		t.Errorf("a normal claim beside an admin one: %v", r.Err)
	}
	if r := prepare(t, d, claim("n3", "second", "r:rxe0-p1"))["n3"]; r.Err == nil || !strings.Contains(r.Err.Error(), "already prepared for claim ns/normal") {
		t.Errorf("a second normal claim on rxe0-p1: %v, want refused naming ns/normal", r.Err)
	}
	admin := readSpecFile(t, ClaimSpecPath(dir, "a1"))
	if !contains(admin.Devices[0].ContainerEdits.Env, EnvAdminAccess+"=true") || admin.Annotations[annAdmin] != "r:rxe0-p1" {
		t.Errorf("admin claim's spec: env %v annotations %v", admin.Devices[0].ContainerEdits.Env, admin.Annotations)
	}
	normal := readSpecFile(t, ClaimSpecPath(dir, "n1"))
	if env := strings.Join(normal.Devices[0].ContainerEdits.Env, " "); strings.Contains(env, EnvAdminAccess) {
		t.Errorf("normal claim's env %s has %s", env, EnvAdminAccess)
	}
	if _, ok := normal.Annotations[annAdmin]; ok {
		t.Errorf("normal claim's annotations %v", normal.Annotations)
	}

	// Restarted with n1 gone: the admin claim a1 alone does not hold rxe0-p1.
	unprepare(t, d, "n1")
	d2 := newDriver(t, treeRoots(rxeTree), dir)
	if r := prepare(t, d2, claim("n3", "second", "r:rxe0-p1"))["n3"]; r.Err != nil {
		t.Errorf("restarted driver: a normal claim beside the admin claim: %v", r.Err)
	}
	if r := prepare(t, d2, claim("n4", "third", "r:rxe0-p1"))["n4"]; r.Err == nil {
		t.Error("restarted driver: a second normal claim on rxe0-p1 was prepared")
	}
}

// TestPrepareUMad: a pool with charDevices.umad gives the claim's container the RDMA
// device's umad and issm nodes as the device plugin does; other pools do not.
func TestPrepareUMad(t *testing.T) {
	cfg, err := plugin.ParseConfig([]byte("version: v1\npools: [{name: mad, selector: {devices: [rxe1]}, charDevices: {umad: true}}, {name: rdma, selector: {devices: [rxe0]}}]"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d, err := New(Options{Config: cfg, Roots: treeRoots(rxeTree), NodeName: node, CDIDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Rescan(); err != nil {
		t.Fatal(err)
	}
	if r := prepare(t, d, claim("u", "c", "r:rxe1-p1", "r:rxe0-p1"))["u"]; r.Err != nil {
		t.Fatal(r.Err)
	}
	s := readSpecFile(t, ClaimSpecPath(dir, "u"))
	want := [][]string{
		append(append([]string{d.devices["rxe1-p1"].Dev.UVerbs, "/dev/infiniband/rdma_cm"}, d.devices["rxe1-p1"].Dev.UMad...), d.devices["rxe1-p1"].Dev.ISSM...),
		{d.devices["rxe0-p1"].Dev.UVerbs, "/dev/infiniband/rdma_cm"},
	}
	if len(d.devices["rxe1-p1"].Dev.UMad) == 0 || len(d.devices["rxe1-p1"].Dev.ISSM) == 0 {
		t.Fatalf("the rxe tree's rxe1 has no umad/issm: %+v", d.devices["rxe1-p1"].Dev)
	}
	for i, w := range want {
		var got []string
		for _, n := range s.Devices[i].ContainerEdits.DeviceNodes {
			got = append(got, n.Path)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("device %s nodes %v, want %v", s.Devices[i].Name, got, w)
		}
	}
}

// TestPrepareRefusesOpaqueConfig: opaque parameters for this driver that apply to one of
// its devices fail the claim with the source named; other drivers' parameters and those
// for other requests do not.
func TestPrepareRefusesOpaqueConfig(t *testing.T) {
	dir := t.TempDir()
	d := newDriver(t, treeRoots(rxeTree), dir)
	withConfig := func(uid string, src resourceapi.AllocationConfigSource, driver string, requests ...string) *resourceapi.ResourceClaim {
		c := claim(uid, uid, "rdma/fast:rxe0-p1")
		c.Status.Allocation.Devices.Config = []resourceapi.DeviceAllocationConfiguration{{Source: src, Requests: requests,
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
				Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(`{"mtu":9000}`)}}}}}
		return c
	}
	for _, tc := range []struct {
		claim *resourceapi.ResourceClaim
		want  string // "": prepared
	}{
		{withConfig("claim-all", resourceapi.AllocationConfigSourceClaim, DriverName), "opaque parameters for driver rdma.ringcap.io (from the ResourceClaim's spec.devices.config) are not supported"},
		{withConfig("class-main", resourceapi.AllocationConfigSourceClass, DriverName, "rdma"), "(from the DeviceClass's spec.config)"},
		{withConfig("claim-sub", resourceapi.AllocationConfigSourceClaim, DriverName, "other", "rdma/fast"), "not supported"},
		{withConfig("other-driver", resourceapi.AllocationConfigSourceClaim, "gpu.example.com"), ""},
		{withConfig("other-request", resourceapi.AllocationConfigSourceClaim, DriverName, "gpu"), ""},
	} {
		uid := tc.claim.UID
		r := prepare(t, d, tc.claim)[uid]
		switch {
		case tc.want == "" && r.Err != nil:
			t.Errorf("%s: %v", uid, r.Err)
		case tc.want != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error containing %q", uid, r.Err, tc.want)
		}
		unprepare(t, d, string(uid))
	}
}

func TestNewRefusesSharedPool(t *testing.T) {
	cfg, err := plugin.ParseConfig([]byte("version: v1\npools: [{name: a, selector: {devices: [rxe0]}}, {name: b, sharing: {mode: shared, maxPodsPerDevice: 2}}]"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Options{Config: cfg, Roots: treeRoots(rxeTree), NodeName: node, CDIDir: t.TempDir()})
	var fe *plugin.FieldError
	if !errors.As(err, &fe) || fe.Path != "pools[1].sharing.mode" || !strings.Contains(err.Error(), "pods share a port by sharing a ResourceClaim") {
		t.Errorf("New = %v, want a refusal at pools[1].sharing.mode", err)
	}
}

func unprepare(t *testing.T, d *Driver, uid string) {
	t.Helper()
	res, err := d.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{{UID: types.UID(uid)}})
	if err != nil || res[types.UID(uid)] != nil {
		t.Fatalf("unprepare %s: %v %v", uid, res, err)
	}
}
