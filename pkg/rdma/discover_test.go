package rdma

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/internal/testkit"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

func pciRoots() Roots { return Roots{Sys: "testdata/pci/sys", Dev: "testdata/pci/dev"} }

func byName(t *testing.T, devs []Device, name string) Device {
	t.Helper()
	for _, d := range devs {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("device %s not discovered (have %v)", name, names(devs))
	return Device{}
}

func names(devs []Device) []string {
	var out []string
	for _, d := range devs {
		out = append(out, d.Name)
	}
	return out
}

func TestDiscoverPCI(t *testing.T) {
	t.Parallel()
	testkit.HostOnly(t)
	devs, skipped, err := Discover(pciRoots())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(devs), []string{"mlx5_0", "mlx5_1", "mlx5_2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("devices = %v, want %v", got, want)
	}

	d := byName(t, devs, "mlx5_0")
	want := Device{
		Name: "mlx5_0", NodeGUID: "0c42:a103:0065:4f2a", NodeType: "CA", Driver: "mlx5_core",
		PCIAddress: "0000:03:00.0", Vendor: "0x15b3", DeviceID: "0x1017", FirmwareVersion: "16.35.2000",
		NUMANode: 0, UVerbs: "/dev/infiniband/uverbs0", UMad: []string{"/dev/infiniband/umad1"},
		RDMACM:      "/dev/infiniband/rdma_cm",
		CharDevices: []string{"/dev/infiniband/uverbs0", "/dev/infiniband/umad1", "/dev/infiniband/rdma_cm"},
	}
	ports := d.Ports
	d.Ports = nil
	if !reflect.DeepEqual(d, want) {
		t.Errorf("mlx5_0 =\n%+v\nwant\n%+v", d, want)
	}
	if len(ports) != 1 {
		t.Fatalf("mlx5_0 ports = %+v", ports)
	}
	p := ports[0]
	if p.Num != 1 || p.State != "ACTIVE" || p.PhysState != "LinkUp" || p.LinkLayer != "Ethernet" ||
		p.ActiveMTU != 4096 || p.Rate != "100 Gb/sec (4X EDR)" || !p.Active() || !p.RoCE() {
		t.Errorf("mlx5_0 port 1 = %+v", p)
	}
	if want := []string{"enp3s0f0", "enp3s0f0.100"}; !reflect.DeepEqual(p.Netdevs, want) {
		t.Errorf("netdevs = %v, want %v", p.Netdevs, want)
	}
	type g struct {
		idx       int
		gid, typ  string
		netdev    string
		ipv4      bool
		roceVersn string
	}
	var got []g
	for _, x := range p.GIDs {
		got = append(got, g{x.Index, x.GID.String(), x.Type, x.Netdev, x.IPv4(), x.RoCEVersion()})
	}
	wantG := []g{
		{0, "fe80::e42:a1ff:fe65:4f2a", GIDTypeRoCEv1, "enp3s0f0", false, "1"},
		{1, "fe80::e42:a1ff:fe65:4f2a", GIDTypeRoCEv2, "enp3s0f0", false, "2"},
		{2, "10.0.0.5", GIDTypeRoCEv1, "enp3s0f0", true, "1"},
		{3, "10.0.0.5", GIDTypeRoCEv2, "enp3s0f0", true, "2"},
		{4, "2001:db8:1::5", GIDTypeRoCEv1, "enp3s0f0", false, "1"},
		{5, "2001:db8:1::5", GIDTypeRoCEv2, "enp3s0f0", false, "2"},
		{6, "10.100.0.5", GIDTypeRoCEv1, "enp3s0f0.100", true, "1"},
		{7, "10.100.0.5", GIDTypeRoCEv2, "enp3s0f0.100", true, "2"},
	}
	if !reflect.DeepEqual(got, wantG) {
		t.Errorf("GIDs =\n%v\nwant\n%v", got, wantG)
	}

	// DOWN port, exact uverbs match (uverbs1 belongs to mlx5_10).
	d1 := byName(t, devs, "mlx5_1")
	if d1.UVerbs != "/dev/infiniband/uverbs4" {
		t.Errorf("mlx5_1 uverbs = %q, want /dev/infiniband/uverbs4 (exact ibdev match)", d1.UVerbs)
	}
	if p := d1.Ports[0]; p.State != "DOWN" || p.PhysState != "Disabled" || p.Active() || p.ActiveMTU != 1024 {
		t.Errorf("mlx5_1 port = %+v", p)
	}

	// InfiniBand port.
	d2 := byName(t, devs, "mlx5_2")
	if d2.NUMANode != 1 || d2.DeviceID != "0x101b" {
		t.Errorf("mlx5_2 = %+v", d2)
	}
	p2 := d2.Ports[0]
	if p2.LinkLayer != LinkLayerInfiniBand || p2.ActiveMTU != 0 || len(p2.GIDs) != 1 || p2.GIDs[0].Netdev != "" {
		t.Errorf("mlx5_2 port = %+v", p2)
	}
	if !reflect.DeepEqual(d2.UMad, []string{"/dev/infiniband/umad0"}) || !reflect.DeepEqual(d2.ISSM, []string{"/dev/infiniband/issm0"}) {
		t.Errorf("mlx5_2 umad %v issm %v", d2.UMad, d2.ISSM)
	}

	// Skips: the malformed GID entry and the device without node_guid, with reasons.
	var reasons []string
	for _, s := range skipped {
		reasons = append(reasons, s.String())
	}
	all := strings.Join(reasons, "\n")
	if len(skipped) != 2 ||
		!strings.Contains(all, "device mlx5_0 port 1: GID 9: malformed GID") ||
		!strings.Contains(all, "device mlx5_3: read node GUID") || !strings.Contains(all, "class/infiniband/mlx5_3/node_guid") {
		t.Errorf("skipped:\n%s", all)
	}
}

func TestDiscoverNoRDMA(t *testing.T) {
	t.Parallel()
	devs, skipped, err := Discover(Roots{Sys: t.TempDir(), Dev: t.TempDir()})
	if err != nil || len(devs) != 0 || len(skipped) != 0 {
		t.Fatalf("empty sysfs: %v %v %v", devs, skipped, err)
	}
}

// TestDiscoverMalformed damages one attribute at a time in a copy of the PCI tree and
// checks that exactly the affected device or port is skipped with a reason.
func TestDiscoverMalformed(t *testing.T) {
	t.Parallel()
	testkit.HostOnly(t)
	dev0 := "devices/pci0000:00/0000:00:02.0/0000:03:00.0/infiniband/mlx5_0"
	cases := []struct {
		name, file, content string
		remove              bool
		wantDevs            []string
		wantReason          string
	}{
		{"bad state", dev0 + "/ports/1/state", "ACTIVE\n", false, []string{"mlx5_1", "mlx5_2"}, "parse port state"},
		{"no state", dev0 + "/ports/1/state", "", true, []string{"mlx5_1", "mlx5_2"}, "read port state"},
		{"no phys state", dev0 + "/ports/1/phys_state", "", true, []string{"mlx5_1", "mlx5_2"}, "read physical state"},
		{"bad link layer", dev0 + "/ports/1/link_layer", "Token Ring\n", false, []string{"mlx5_1", "mlx5_2"}, "unknown link layer"},
		{"bad node type", dev0 + "/node_type", "CA\n", false, []string{"mlx5_1", "mlx5_2"}, "parse node type"},
		{"bad guid", dev0 + "/node_guid", "0c42:a103:0065\n", false, []string{"mlx5_1", "mlx5_2"}, "parse node GUID"},
		{"huge attr", dev0 + "/node_guid", strings.Repeat("0", 5000), false, []string{"mlx5_1", "mlx5_2"}, "longer than 4096"},
		{"bad gid type", dev0 + "/ports/1/gid_attrs/types/3", "RoCE v3\n", false, []string{"mlx5_0", "mlx5_1", "mlx5_2"}, "unknown GID type"},
		{"no gid type", dev0 + "/ports/1/gid_attrs/types/3", "", true, []string{"mlx5_0", "mlx5_1", "mlx5_2"}, "read type of GID 3"},
		{"no ports", dev0 + "/ports", "", true, []string{"mlx5_1", "mlx5_2"}, "list ports"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := CopyTree(t, pciRoots())
			p := filepath.Join(r.Sys, c.file)
			var err error
			if c.remove {
				err = os.RemoveAll(p)
			} else {
				err = os.WriteFile(p, []byte(c.content), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			devs, skipped, err := Discover(r)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(devs); !reflect.DeepEqual(got, c.wantDevs) {
				t.Errorf("devices = %v, want %v", got, c.wantDevs)
			}
			found := false
			for _, s := range skipped {
				if s.Device == "mlx5_0" && strings.Contains(s.Reason, c.wantReason) {
					found = true
				}
			}
			if !found {
				t.Errorf("no skip of mlx5_0 with %q in %v", c.wantReason, skipped)
			}
		})
	}
}

func TestDiscoverUnreadableClass(t *testing.T) {
	t.Parallel()
	r := Roots{Sys: t.TempDir(), Dev: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(r.Sys, "class"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A regular file where the class directory should be: listing fails.
	if err := os.WriteFile(filepath.Join(r.Sys, "class", "infiniband"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Discover(r); err == nil || !strings.Contains(err.Error(), "list RDMA devices") {
		t.Fatalf("err = %v", err)
	}
}

func TestChooseGID(t *testing.T) {
	t.Parallel()
	testkit.HostOnly(t)
	devs, _, err := Discover(pciRoots())
	if err != nil {
		t.Fatal(err)
	}
	p := byName(t, devs, "mlx5_0").Ports[0]
	cases := []struct {
		pol     GIDPolicy
		idx     int
		reason  string
		wantErr string
	}{
		{GIDPolicy{}, 3, "IPv4-mapped address: 10.0.0.5 on enp3s0f0", ""},
		{GIDPolicy{Mode: GIDPolicyRoCEv2IPv4}, 3, "10.0.0.5 on enp3s0f0", ""},
		{GIDPolicy{Mode: GIDPolicyRoCEv2IPv6}, 5, "IPv6 address: 2001:db8:1::5 on enp3s0f0", ""},
		{GIDPolicy{Netdev: "enp3s0f0.100"}, 7, "10.100.0.5 on enp3s0f0.100", ""},
		{GIDPolicy{Mode: GIDPolicyIndex, Index: 6}, 6, "explicit index 6 (IB/RoCE v1 10.100.0.5 on enp3s0f0.100)", ""},
		{GIDPolicy{Mode: GIDPolicyIndex, Index: 8}, 0, "", "GID index 8 of port 1 is empty"},
		{GIDPolicy{Mode: GIDPolicyIndex, Index: -1}, 0, "", "negative"},
		{GIDPolicy{Mode: "best"}, 0, "", `unknown GID policy "best"`},
		{GIDPolicy{Netdev: "eth9"}, 0, "", "no RoCE v2 GID with an IPv4-mapped address on eth9"},
	}
	for _, c := range cases {
		g, reason, err := ChooseGID(p, c.pol)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%+v: err = %v, want %q", c.pol, err, c.wantErr)
			}
			continue
		}
		if err != nil || g.Index != c.idx || !strings.Contains(reason, c.reason) {
			t.Errorf("%+v: got %d %q %v, want %d %q", c.pol, g.Index, reason, err, c.idx, c.reason)
		}
	}

	// Only an upper device has IPv4: it is chosen and the reason says so.
	up := p
	up.GIDs = nil
	for _, g := range p.GIDs {
		if g.Netdev != "enp3s0f0" || !g.IPv4() {
			up.GIDs = append(up.GIDs, g)
		}
	}
	g, reason, err := ChooseGID(up, GIDPolicy{})
	if err != nil || g.Index != 7 || !strings.Contains(reason, "upper device enp3s0f0.100 (none on enp3s0f0") {
		t.Errorf("upper: %d %q %v", g.Index, reason, err)
	}

	// DOWN port with link-local only: no IPv4 GID, error lists what there is.
	_, _, err = ChooseGID(byName(t, devs, "mlx5_1").Ports[0], GIDPolicy{})
	if !errors.Is(err, ErrNoGID) || !strings.Contains(err.Error(), "1=fe80::e42:a1ff:fe65:4f2b/RoCE v2/enp3s0f1") {
		t.Errorf("down port: %v", err)
	}
	// IPv6 policy prefers global over link-local.
	if g, _, _ := ChooseGID(p, GIDPolicy{Mode: GIDPolicyRoCEv2IPv6}); g.Index != 5 {
		t.Errorf("ipv6 picked %d", g.Index)
	}

	// InfiniBand: the port GID.
	g, reason, err = ChooseGID(byName(t, devs, "mlx5_2").Ports[0], GIDPolicy{})
	if err != nil || g.Index != 0 || !strings.Contains(reason, "InfiniBand") {
		t.Errorf("ib: %d %q %v", g.Index, reason, err)
	}
	if _, _, err := ChooseGID(byName(t, devs, "mlx5_2").Ports[0], GIDPolicy{Mode: GIDPolicyRoCEv2IPv6}); !errors.Is(err, ErrNoGID) {
		t.Errorf("ib ipv6: %v", err)
	}
}

func TestFindGIDByIP(t *testing.T) {
	t.Parallel()
	testkit.HostOnly(t)
	devs, _, err := Discover(pciRoots())
	if err != nil {
		t.Fatal(err)
	}
	d, p, g, ok := FindGIDByIP(devs, net.ParseIP("10.100.0.5"))
	if !ok || d.Name != "mlx5_0" || p.Num != 1 || g.Index != 7 {
		t.Errorf("got %s %d %d %v", d.Name, p.Num, g.Index, ok)
	}
	if _, _, _, ok := FindGIDByIP(devs, net.ParseIP("192.0.2.1")); ok {
		t.Error("found a GID for an address no device has")
	}
}

func TestRoCEMTU(t *testing.T) {
	t.Parallel()
	for mtu, want := range map[int]int{9000: 4096, 4192: 4096, 4191: 2048, 1500: 1024, 1100: 512, 300: 0} {
		if got := RoCEMTU(mtu); got != want {
			t.Errorf("RoCEMTU(%d) = %d, want %d", mtu, got, want)
		}
	}
}

// CopyTree copies a testdata tree (both roots) into temporary directories.
func CopyTree(t *testing.T, r Roots) Roots {
	t.Helper()
	return Roots{Sys: rdmatest.CopyDir(t, r.Sys), Dev: rdmatest.CopyDir(t, r.Dev)}
}
