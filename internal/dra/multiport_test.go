package dra

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/internal/plugin"
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

func byName(pds []PortDevice) map[string]PortDevice {
	out := map[string]PortDevice{}
	for _, p := range pds {
		out[p.Name] = p
	}
	return out
}

func deviceNames(pds []PortDevice) []string {
	var out []string
	for _, p := range pds {
		out = append(out, p.Name)
	}
	return out
}

// TestPortDevicesTwoPortHCA: a two-port HCA (one ibdev, one uverbs device) is one
// device while a port is ACTIVE, described by its primary port plus per-port
// attributes; a single-port device keeps its per-port name.
func TestPortDevicesTwoPortHCA(t *testing.T) {
	roots := writeTree(t, connectX3(), softRoCE("rxe0", 0, "veth0", "10.9.0.1"))
	pds, left := mustScan(t, plugin.DefaultConfig(), roots)
	if got := deviceNames(pds); !reflect.DeepEqual(got, []string{"mlx4-0", "rxe0-p1"}) || len(left) != 0 {
		t.Fatalf("devices %v, left out %v; want mlx4-0 (both ports) and rxe0-p1", got, left)
	}
	want := map[string]string{
		"ringcap.io/ibdev": "mlx4_0", "ringcap.io/driver": "mlx4_core", "ringcap.io/port": "int:1",
		"ringcap.io/linkLayer": "Ethernet", "ringcap.io/state": "ACTIVE", "ringcap.io/mtu": "int:4096",
		"ringcap.io/netdev": "eth2", "ringcap.io/pool": "rdma", "ringcap.io/gidIndex": "int:1",
		"ringcap.io/gid": "10.1.0.1", "ringcap.io/rocev": "int:2", "ringcap.io/numaNode": "int:0",
		"resource.kubernetes.io/numaNode": "int:0", "resource.kubernetes.io/pcieRoot": "pci0000:00",
		"resource.kubernetes.io/pciBusID": "0000:05:00.0",
		"ringcap.io/ports":                "int:2",
		"ringcap.io/p1LinkLayer":          "Ethernet", "ringcap.io/p1Netdev": "eth2", "ringcap.io/p1GidIndex": "int:1",
		"ringcap.io/p1Gid": "10.1.0.1", "ringcap.io/p1Rocev": "int:2",
		"ringcap.io/p2LinkLayer": "Ethernet", "ringcap.io/p2Netdev": "eth3", "ringcap.io/p2GidIndex": "int:1",
		"ringcap.io/p2Gid": "10.2.0.1", "ringcap.io/p2Rocev": "int:2",
	}
	if got := flat(pds[0].Attributes()); !reflect.DeepEqual(got, want) {
		t.Errorf("mlx4-0 attributes\n got %v\nwant %v", got, want)
	}
	if rxe := flat(pds[1].Attributes()); rxe["ringcap.io/ports"] != "" || rxe["ringcap.io/p1Netdev"] != "" {
		t.Errorf("single-port rxe0 has multi-port attributes: %v", rxe)
	}
	checkLimits(t, pds)

	// Port 1 down: the same device, now port 2's.
	rdmatest.SetPortState(t, roots.Sys, "mlx4_0", 1, "DOWN")
	pds, left = mustScan(t, plugin.DefaultConfig(), roots)
	a := flat(byName(pds)["mlx4-0"].Attributes())
	if a["ringcap.io/port"] != "int:2" || a["ringcap.io/netdev"] != "eth3" || a["ringcap.io/gid"] != "10.2.0.1" ||
		a["ringcap.io/ports"] != "int:1" || a["ringcap.io/p1Netdev"] != "" || a["ringcap.io/p2Netdev"] != "eth3" {
		t.Errorf("port 1 down: mlx4-0 attributes %v, want port 2's", a)
	}
	if len(left) != 1 || left[0].Device != "mlx4_0" || left[0].Port != 1 {
		t.Errorf("port 1 down: left out %v", left)
	}

	// Both down: not published.
	rdmatest.SetPortState(t, roots.Sys, "mlx4_0", 2, "DOWN")
	pds, left = mustScan(t, plugin.DefaultConfig(), roots)
	if got := deviceNames(pds); !reflect.DeepEqual(got, []string{"rxe0-p1"}) || len(left) != 2 {
		t.Errorf("both ports down: devices %v, left out %v", got, left)
	}
}

// TestPortDevicesPrimaryPortAsDevicePlugin: on a VPI HCA with an InfiniBand and a RoCE
// port under a RoCE v2 IPv6 policy, the primary port is the one with a matching GID
// (as the device plugin chooses it), not the lowest-numbered.
func TestPortDevicesPrimaryPortAsDevicePlugin(t *testing.T) {
	vpi := connectX3()
	vpi.ports[0] = hcaPort{state: "ACTIVE", linkLayer: rdma.LinkLayerInfiniBand, netdev: "ib0"}
	cfg, err := plugin.ParseConfig([]byte("version: v1\npools: [{name: roce, gidPolicy: {mode: roce-v2-ipv6}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	pds, _ := mustScan(t, cfg, writeTree(t, vpi))
	if len(pds) != 1 {
		t.Fatalf("devices %v", deviceNames(pds))
	}
	p := pds[0]
	a := flat(p.Attributes())
	if p.Port.Num != 2 || p.Env[plugin.EnvPort] != "2" || a["ringcap.io/gid"] != "fe80::2:c9ff:fe00:1" || a["ringcap.io/linkLayer"] != "Ethernet" {
		t.Errorf("primary port %d env %v attributes %v; want port 2 (the one with a RoCE v2 IPv6 GID)", p.Port.Num, p.Env, a)
	}
	if a["ringcap.io/p1LinkLayer"] != "InfiniBand" || a["ringcap.io/p1Netdev"] != "ib0" || a["ringcap.io/p1Gid"] != "" {
		t.Errorf("port 1 attributes %v: want InfiniBand on ib0 without a GID under the policy", a)
	}
}

// TestAttributesOfFourPortDeviceFit: a device with four ACTIVE ports and every
// attribute stays within DRA's 32 attributes; the fourth port is counted, not described.
func TestAttributesOfFourPortDeviceFit(t *testing.T) {
	d := connectX3()
	d.ports = append(d.ports,
		hcaPort{state: "ACTIVE", linkLayer: rdma.LinkLayerEthernet, netdev: "eth4", ip4: "10.3.0.1"},
		hcaPort{state: "ACTIVE", linkLayer: rdma.LinkLayerEthernet, netdev: "eth5", ip4: "10.4.0.1"})
	pds, _ := mustScan(t, plugin.DefaultConfig(), writeTree(t, d))
	checkLimits(t, pds)
	a := flat(pds[0].Attributes())
	if a["ringcap.io/ports"] != "int:4" || a["ringcap.io/p3Gid"] != "10.3.0.1" || a["ringcap.io/p4Netdev"] != "" {
		t.Errorf("four ports: %d attributes %v", len(a), a)
	}
}

// TestDeviceNamesDoNotMove: mlx5_0 and mlx5-0 would both be "mlx5-0-p1"; whichever
// port goes down or comes back, each keeps its name.
func TestDeviceNamesDoNotMove(t *testing.T) {
	roots := writeTree(t, softRoCE("mlx5-0", 0, "veth0", "10.9.0.1"), softRoCE("mlx5_0", 1, "veth1", "10.9.0.2"), connectX3())
	cfg := plugin.DefaultConfig()
	nameOf := func() map[string]string {
		pds, _ := mustScan(t, cfg, roots)
		checkLimits(t, pds)
		out := map[string]string{}
		for _, p := range pds {
			out[p.Dev.Name] = p.Name
		}
		return out
	}
	first := nameOf()
	if first["mlx5_0"] != "mlx5-0-p1" || first["mlx4_0"] != "mlx4-0" || len(first) != 3 {
		t.Fatalf("names %v", first)
	}
	for _, step := range []struct {
		dev   string
		port  int
		state string
	}{
		{"mlx5-0", 1, "DOWN"}, {"mlx5_0", 1, "DOWN"}, {"mlx5-0", 1, "ACTIVE"}, {"mlx4_0", 1, "DOWN"}, {"mlx5_0", 1, "ACTIVE"}, {"mlx4_0", 1, "ACTIVE"},
	} {
		rdmatest.SetPortState(t, roots.Sys, step.dev, step.port, step.state)
		for ibdev, name := range nameOf() {
			if name != first[ibdev] {
				t.Errorf("after %s port %d %s: %s is %q, was %q", step.dev, step.port, step.state, ibdev, name, first[ibdev])
			}
		}
	}
}

// TestRescanUnchangedWhenScanOrderIsNotNameOrder: rxe0 scans before rxe_a, but
// "rxe-a-p1" sorts before "rxe0-p1"; a rescan without a change reports none.
func TestRescanUnchangedWhenScanOrderIsNotNameOrder(t *testing.T) {
	d := newDriver(t, writeTree(t, softRoCE("rxe0", 0, "veth0", "10.9.0.1"), softRoCE("rxe_a", 1, "veth1", "10.9.0.2")), t.TempDir())
	var rec recorder
	if err := d.Publish(context.Background(), &rec); err != nil {
		t.Fatal(err)
	}
	if got := names(rec.got[0]); !reflect.DeepEqual(got, []string{"rxe-a-p1", "rxe0-p1"}) {
		t.Fatalf("published %v", got)
	}
	for i := range 2 {
		if changed, err := d.Rescan(); err != nil || changed {
			t.Errorf("rescan %d without a change: changed=%v err=%v", i+1, changed, err)
		}
	}
}

// TestPrepareTwoPortHCA: a claim gets the whole HCA (its one uverbs device, the
// primary port's environment); a second claim for it is refused.
func TestPrepareTwoPortHCA(t *testing.T) {
	dir := t.TempDir()
	d := newDriver(t, writeTree(t, connectX3()), dir)
	if r := prepare(t, d, claim("a", "a", "r:mlx4-0"))["a"]; r.Err != nil {
		t.Fatal(r.Err)
	}
	s := readSpecFile(t, ClaimSpecPath(dir, "a"))
	if len(s.Devices) != 1 || s.Annotations[annIBDevs] != "mlx4_0" {
		t.Fatalf("spec %+v", s)
	}
	e := s.Devices[0].ContainerEdits
	var nodes []string
	for _, n := range e.DeviceNodes {
		nodes = append(nodes, n.Path)
	}
	if !reflect.DeepEqual(nodes, []string{"/dev/infiniband/uverbs3", "/dev/infiniband/rdma_cm"}) {
		t.Errorf("device nodes %v, want mlx4_0's uverbs3 once and rdma_cm", nodes)
	}
	for _, kv := range []string{"RINGCAP_RDMA_DEVICE=mlx4_0", "RINGCAP_RDMA_PORT=1", "RINGCAP_GID_INDEX=1", "RINGCAP_GID=10.1.0.1", "RINGCAP_NETDEV=eth2"} {
		if !contains(e.Env, kv) {
			t.Errorf("env %v lacks %s", e.Env, kv)
		}
	}
	if r := prepare(t, d, claim("b", "b", "r:mlx4-0"))["b"]; r.Err == nil || !strings.Contains(r.Err.Error(), "already prepared for claim ns/a") {
		t.Errorf("second claim on the HCA: %v, want a refusal naming claim a", r.Err)
	}
}

// TestPrepareRefusesIBDevHeldUnderAnotherName: claims prepared before a restart under
// names this version does not publish still hold their HCA, found by uverbs device
// (specs without the ibdevs annotation) or by ibdev name.
func TestPrepareRefusesIBDevHeldUnderAnotherName(t *testing.T) {
	for _, tc := range []struct{ name, spec string }{
		{"uverbs", `{"cdiVersion":"0.6.0","kind":"ringcap.io/claim","annotations":{"ringcap.io/claim":"ns/old","ringcap.io/devices":"r:mlx4-0-p2"},
			"devices":[{"name":"old-mlx4-0-p2","containerEdits":{"deviceNodes":[{"path":"/dev/infiniband/uverbs3"},{"path":"/dev/infiniband/rdma_cm"}]}}]}`},
		{"ibdev", `{"cdiVersion":"0.6.0","kind":"ringcap.io/claim","annotations":{"ringcap.io/claim":"ns/old","ringcap.io/devices":"r:mlx4-0-p2","ringcap.io/ibdevs":"mlx4_0"},
			"devices":[{"name":"old-mlx4-0-p2","containerEdits":{"deviceNodes":[{"path":"/dev/infiniband/uverbs9"}]}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rdmatest.WriteFile(t, ClaimSpecPath(dir, "old"), tc.spec)
			d := newDriver(t, writeTree(t, connectX3(), softRoCE("rxe0", 0, "veth0", "10.9.0.1")), dir)
			res := prepare(t, d, claim("new", "new", "r:mlx4-0"), claim("rxe", "rxe", "r:rxe0-p1"))
			if r := res["new"]; r.Err == nil || !strings.Contains(r.Err.Error(), "already prepared for claim ns/old") {
				t.Errorf("mlx4-0 while ns/old holds mlx4_0: %v, want a refusal naming ns/old", r.Err)
			}
			if r := res["rxe"]; r.Err != nil {
				t.Errorf("rxe0-p1 is free: %v", r.Err)
			}
		})
	}
}

// TestDeviceDataOfTwoPortHCA: the claim status data names the primary port at the top
// and lists every ACTIVE port; a single-port device's data has no port list.
func TestDeviceDataOfTwoPortHCA(t *testing.T) {
	d := newDriver(t, writeTree(t, connectX3(), softRoCE("rxe0", 0, "veth0", "10.9.0.1")), t.TempDir())
	raw, err := json.Marshal(deviceData(d.devices["mlx4-0"]))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	port := func(n float64, gid, netdev string) map[string]any {
		return map[string]any{"port": n, "gidIndex": 1.0, "gid": gid, "netdev": netdev, "roceVersion": "2",
			"gidReason": "RoCE v2 GID with an IPv4-mapped address: " + gid + " on " + netdev + " (port " + fmt.Sprint(n) + ")"}
	}
	want := port(1, "10.1.0.1", "eth2")
	want["ibdev"] = "mlx4_0"
	want["ports"] = []any{port(1, "10.1.0.1", "eth2"), port(2, "10.2.0.1", "eth3")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("data\n got %s\nwant %v", raw, want)
	}
	raw, err = json.Marshal(deviceData(d.devices["rxe0-p1"]))
	if err != nil || strings.Contains(string(raw), "ports") || !strings.Contains(string(raw), `"ibdev":"rxe0","port":1,`) {
		t.Errorf("single-port data %s (%v)", raw, err)
	}
}
