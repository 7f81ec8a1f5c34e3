package dra

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ringcap/ringcap/internal/plugin"
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

const (
	pciTree = "../../pkg/rdma/testdata/pci"
	rxeTree = "../../pkg/rdma/testdata/rxe-vm"
)

func treeRoots(dir string) rdma.Roots {
	return rdma.Roots{Sys: filepath.Join(dir, "sys"), Dev: filepath.Join(dir, "dev")}
}

func mustScan(t *testing.T, cfg *plugin.Config, roots rdma.Roots) ([]PortDevice, []LeftOut) {
	t.Helper()
	pds, left, _, err := scan(cfg, nil, roots)
	if err != nil {
		t.Fatal(err)
	}
	return pds, left
}

// flat renders attributes as "name=value" for comparison.
func flat(a map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		switch {
		case v.StringValue != nil:
			out[string(k)] = *v.StringValue
		case v.IntValue != nil:
			out[string(k)] = "int:" + strconv.FormatInt(*v.IntValue, 10)
		case v.BoolValue != nil:
			out[string(k)] = "bool"
		case v.VersionValue != nil:
			out[string(k)] = "version:" + *v.VersionValue
		}
	}
	return out
}

func TestPortDevicesPCITree(t *testing.T) {
	pds, left := mustScan(t, plugin.DefaultConfig(), treeRoots(pciTree))
	want := map[string]map[string]string{
		"mlx5-0-p1": {
			"ringcap.io/ibdev": "mlx5_0", "ringcap.io/driver": "mlx5_core", "ringcap.io/port": "int:1",
			"ringcap.io/linkLayer": "Ethernet", "ringcap.io/state": "ACTIVE", "ringcap.io/mtu": "int:4096",
			"ringcap.io/netdev": "enp3s0f0", "ringcap.io/pool": "rdma", "ringcap.io/gidIndex": "int:3",
			"ringcap.io/gid": "10.0.0.5", "ringcap.io/rocev": "int:2", "ringcap.io/numaNode": "int:0",
			"resource.kubernetes.io/numaNode": "int:0", "resource.kubernetes.io/pcieRoot": "pci0000:00",
			"resource.kubernetes.io/pciBusID": "0000:03:00.0",
		},
		"mlx5-2-p1": {
			"ringcap.io/ibdev": "mlx5_2", "ringcap.io/driver": "mlx5_core", "ringcap.io/port": "int:1",
			"ringcap.io/linkLayer": "InfiniBand", "ringcap.io/state": "ACTIVE",
			"ringcap.io/netdev": "ib0", "ringcap.io/pool": "rdma", "ringcap.io/gidIndex": "int:0",
			"ringcap.io/gid": "fe80::c42:a103:70:1b2c", "ringcap.io/numaNode": "int:1",
			"resource.kubernetes.io/numaNode": "int:1", "resource.kubernetes.io/pcieRoot": "pci0000:00",
			"resource.kubernetes.io/pciBusID": "0000:81:00.0",
		},
	}
	got := map[string]map[string]string{}
	for _, p := range pds {
		got[p.Name] = flat(p.Attributes())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("devices:\n got %v\nwant %v", got, want)
	}
	if len(left) != 1 || left[0].Device != "mlx5_1" || !strings.Contains(left[0].Reason, "DOWN") {
		t.Errorf("left out = %v, want mlx5_1 port 1 DOWN", left)
	}
	checkLimits(t, pds)
}

func TestPortDevicesRxeTree(t *testing.T) {
	pds, left := mustScan(t, plugin.DefaultConfig(), treeRoots(rxeTree))
	if len(left) != 0 {
		t.Errorf("left out = %v, want none", left)
	}
	var names []string
	for _, p := range pds {
		names = append(names, p.Name)
		a := flat(p.Attributes())
		if a["ringcap.io/driver"] != "rdma_rxe" || a["ringcap.io/rocev"] != "int:2" || a["ringcap.io/gid"] == "" {
			t.Errorf("%s: attributes %v: want driver rdma_rxe, RoCE v2 and a GID", p.Name, a)
		}
		if _, ok := a["resource.kubernetes.io/pcieRoot"]; ok {
			t.Errorf("%s: a software device has no PCIe root, got %v", p.Name, a)
		}
		if a["ringcap.io/netdev"] != a["ringcap.io/parent"] || !strings.HasPrefix(a["ringcap.io/netdev"], "veth") {
			t.Errorf("%s: netdev %q parent %q, want the veth it is bound to", p.Name, a["ringcap.io/netdev"], a["ringcap.io/parent"])
		}
	}
	if !reflect.DeepEqual(names, []string{"rxe0-p1", "rxe1-p1"}) {
		t.Errorf("names = %v", names)
	}
	checkLimits(t, pds)
}

// checkLimits checks what the API server's validation checks: names are DNS labels
// unique in the pool, attribute count, qualified names and string lengths.
func checkLimits(t *testing.T, pds []PortDevice) {
	t.Helper()
	seen := map[string]bool{}
	for _, p := range pds {
		if errs := validation.IsDNS1123Label(p.Name); len(errs) > 0 {
			t.Errorf("device name %q: %v", p.Name, errs)
		}
		if seen[p.Name] {
			t.Errorf("device name %q twice", p.Name)
		}
		seen[p.Name] = true
		attrs := p.Attributes()
		if len(attrs) > resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
			t.Errorf("%s: %d attributes, limit %d", p.Name, len(attrs), resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice)
		}
		for k, v := range attrs {
			dom, id, ok := strings.Cut(string(k), "/")
			if !ok || len(dom) > resourceapi.DeviceMaxDomainLength || len(id) > resourceapi.DeviceMaxIDLength || len(validation.IsCIdentifier(id)) > 0 || len(validation.IsDNS1123Subdomain(dom)) > 0 {
				t.Errorf("%s: attribute name %q invalid", p.Name, k)
			}
			if v.StringValue != nil && len(*v.StringValue) > resourceapi.DeviceAttributeMaxValueLength {
				t.Errorf("%s: %s is %d characters, limit %d", p.Name, k, len(*v.StringValue), resourceapi.DeviceAttributeMaxValueLength)
			}
		}
	}
}

func TestPortDevicesFollowPortAndGID(t *testing.T) {
	roots := rdma.Roots{Sys: rdmatest.CopyDir(t, pciTree+"/sys"), Dev: rdmatest.CopyDir(t, pciTree+"/dev")}
	cfg := plugin.DefaultConfig()
	before, _ := mustScan(t, cfg, roots)

	// mlx5_1 comes up: it is published; mlx5_0 goes down: it leaves.
	rdmatest.SetPortState(t, roots.Sys, "mlx5_1", 1, "ACTIVE")
	rdmatest.SetPortState(t, roots.Sys, "mlx5_0", 1, "DOWN")
	after, left := mustScan(t, cfg, roots)
	var names []string
	for _, p := range after {
		names = append(names, p.Name)
	}
	if !reflect.DeepEqual(names, []string{"mlx5-1-p1", "mlx5-2-p1"}) {
		t.Errorf("after port changes: devices %v, want mlx5-1-p1 mlx5-2-p1", names)
	}
	if len(left) != 1 || left[0].Device != "mlx5_0" {
		t.Errorf("left out %v, want mlx5_0", left)
	}

	// mlx5_0 back up with its IPv4 RoCE v2 GID moved from index 3 to 11.
	rdmatest.SetPortState(t, roots.Sys, "mlx5_0", 1, "ACTIVE")
	gidDir := filepath.Join(roots.Sys, "devices/pci0000:00/0000:00:02.0/0000:03:00.0/infiniband/mlx5_0/ports/1")
	rdmatest.WriteFile(t, filepath.Join(gidDir, "gids/3"), "0000:0000:0000:0000:0000:0000:0000:0000")
	rdmatest.WriteFile(t, filepath.Join(gidDir, "gids/11"), "0000:0000:0000:0000:0000:ffff:0a00:0007")
	rdmatest.WriteFile(t, filepath.Join(gidDir, "gid_attrs/types/11"), "RoCE v2")
	rdmatest.WriteFile(t, filepath.Join(gidDir, "gid_attrs/ndevs/11"), "enp3s0f0")
	moved, _ := mustScan(t, cfg, roots)
	a0, a1 := flat(before[0].Attributes()), flat(moved[0].Attributes())
	if a0["ringcap.io/gidIndex"] != "int:3" || a1["ringcap.io/gidIndex"] != "int:11" || a1["ringcap.io/gid"] != "10.0.0.7" {
		t.Errorf("GID change: before %s %s, after %s %s; want index 3 then 11 (10.0.0.7)",
			a0["ringcap.io/gidIndex"], a0["ringcap.io/gid"], a1["ringcap.io/gidIndex"], a1["ringcap.io/gid"])
	}
}

func TestPortDevicesPoolPolicyAndSelection(t *testing.T) {
	cfg, err := plugin.ParseConfig([]byte(`version: v1
pools:
- name: ib
  selector: {linkLayers: [InfiniBand]}
- name: roce6
  selector: {linkLayers: [Ethernet]}
  gidPolicy: {mode: roce-v2-ipv6}
`))
	if err != nil {
		t.Fatal(err)
	}
	pds, _ := mustScan(t, cfg, treeRoots(pciTree))
	got := map[string]string{}
	for _, p := range pds {
		a := flat(p.Attributes())
		got[p.Name] = a["ringcap.io/pool"] + " " + a["ringcap.io/gidIndex"]
	}
	want := map[string]string{"mlx5-0-p1": "roce6 int:5", "mlx5-2-p1": "ib int:0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pool and GID index = %v, want %v", got, want)
	}
}

// dev is a discovered device with the given ports (numbers), for deviceName.
func dev(name string, ports ...int) rdma.Device {
	d := rdma.Device{Name: name}
	for _, n := range ports {
		d.Ports = append(d.Ports, rdma.Port{Num: n})
	}
	return d
}

func TestDeviceName(t *testing.T) {
	hash := func(ibdev string) string {
		sum := sha256.Sum256([]byte(ibdev))
		return hex.EncodeToString(sum[:4])
	}
	for _, tc := range []struct {
		dev  rdma.Device
		want string
	}{
		{dev("mlx5_0", 1), "mlx5-0-p1"},
		{dev("rxe1", 1), "rxe1-p1"},
		{dev("bnxt_re0", 1), "bnxt-re0-p1"},
		{dev("hfi1_0", 2), "hfi1-0-p2"},                        // one port, numbered 2
		{dev("mlx4_0", 1, 2), "mlx4-0"},                        // several ports: the whole device
		{dev("mlx5-0", 1), "mlx5-0-" + hash("mlx5-0") + "-p1"}, // not a kernel name: hashed, apart from mlx5_0's
		{dev("MLX5_0", 1), "mlx5-0-" + hash("MLX5_0") + "-p1"},
		{dev("mlx4-0", 1, 2), "mlx4-0-" + hash("mlx4-0")},
		{dev("rxe_p1", 1, 2), "rxe-p1-" + hash("rxe_p1")},                        // would read as rxe's port 1
		{dev("rxe_deadbeef", 1), "rxe-deadbeef-" + hash("rxe_deadbeef") + "-p1"}, // would read as a hash
		{dev("__", 1), "rdma-" + hash("__") + "-p1"},
		{dev("rxe_", 1), "rxe-" + hash("rxe_") + "-p1"},
		{dev(strings.Repeat("x", 61), 1), strings.Repeat("x", 63-len("-12345678-p1")) + "-" + hash(strings.Repeat("x", 61)) + "-p1"},
	} {
		got := deviceName(tc.dev)
		if got != tc.want {
			t.Errorf("deviceName(%s, %d ports) = %q, want %q", tc.dev.Name, len(tc.dev.Ports), got, tc.want)
		}
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("%q: %v", got, errs)
		}
	}
}

func TestAttributesLeaveOutOverlongValues(t *testing.T) {
	pds, _ := mustScan(t, plugin.DefaultConfig(), treeRoots(rxeTree))
	p := pds[0]
	p.Dev.Driver = strings.Repeat("d", resourceapi.DeviceAttributeMaxValueLength+1)
	a := flat(p.Attributes())
	if _, ok := a["ringcap.io/driver"]; ok {
		t.Errorf("a %d-character driver name was published", len(p.Dev.Driver))
	}
	checkLimits(t, []PortDevice{p})
}

func TestSlicesSplitAtTheLimit(t *testing.T) {
	var pds []PortDevice
	for i := range resourceapi.ResourceSliceMaxDevices + 1 {
		pds = append(pds, PortDevice{Name: deviceName(dev("d"+strconv.Itoa(i), 1))})
	}
	s := Slices(pds)
	if len(s) != 2 || len(s[0]) != resourceapi.ResourceSliceMaxDevices || len(s[1]) != 1 {
		t.Errorf("slices of %d devices: %d slices", len(pds), len(s))
	}
	if e := Slices(nil); len(e) != 1 || len(e[0]) != 0 {
		t.Errorf("no devices: %v, want one empty slice", e)
	}
}

// TestPortDevicesWithoutGID: a device whose port has no GID table (EFA-like) is
// published without GID attributes, and its claim environment says why.
func TestPortDevicesWithoutGID(t *testing.T) {
	efa := rdma.Device{Name: "efa_0", Driver: "efa", PCIAddress: "0000:00:06.0", NUMANode: -1, UVerbs: "/dev/infiniband/uverbs0",
		RDMACM: "/dev/infiniband/rdma_cm", Ports: []rdma.Port{{Num: 1, State: "ACTIVE", PhysState: "LinkUp", LinkLayer: "Unspecified"}}}
	pds, left, err := PortDevices(plugin.DefaultConfig(), []rdma.Device{efa}, map[string]string{"efa_0": "pci0000:00"})
	if err != nil || len(pds) != 1 || len(left) != 0 {
		t.Fatalf("PortDevices = %v, %v, %v", pds, left, err)
	}
	want := map[string]string{
		"ringcap.io/ibdev": "efa_0", "ringcap.io/driver": "efa", "ringcap.io/port": "int:1", "ringcap.io/linkLayer": "Unspecified",
		"ringcap.io/state": "ACTIVE", "ringcap.io/pool": "rdma",
		"resource.kubernetes.io/pcieRoot": "pci0000:00", "resource.kubernetes.io/pciBusID": "0000:00:06.0",
	}
	if got := flat(pds[0].Attributes()); !reflect.DeepEqual(got, want) {
		t.Errorf("attributes\n got %v\nwant %v", got, want)
	}
	env := pds[0].Env
	if _, ok := env[plugin.EnvGID]; ok || env[plugin.EnvGIDReason] == "" || env[plugin.EnvDevice] != "efa_0" {
		t.Errorf("env %v: want the device, no GID and the reason", env)
	}
	checkLimits(t, pds)
}
