package rdma

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ringcap/ringcap/internal/testkit"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

func efaRoots() Roots { return Roots{Sys: "testdata/efa/sys", Dev: "testdata/efa/dev"} }

// TestDiscoverEFA reads the EFA tree (testdata/make-efa-tree.sh: what the kernel's efa
// driver shows in sysfs): both devices are found, with the link layer the driver leaves
// unspecified, the one non-RoCE GID (the EFA address) and nothing skipped.
func TestDiscoverEFA(t *testing.T) {
	t.Parallel()
	testkit.HostOnly(t)
	devs, skipped, err := Discover(efaRoots())
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 0 {
		t.Errorf("skipped: %v", skipped)
	}
	if got, want := names(devs), []string{"efa_0", "efa_1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("devices = %v, want %v", got, want)
	}
	d := devs[0]
	ports := d.Ports
	d.Ports = nil
	want := Device{
		Name: "efa_0", NodeGUID: "0000:0000:0000:0000", NodeType: "unspecified", Driver: "efa",
		PCIAddress: "0000:10:1b.0", Vendor: "0x1d0f", DeviceID: "0xefa1", NUMANode: 0,
		UVerbs: "/dev/infiniband/uverbs0", RDMACM: "/dev/infiniband/rdma_cm",
		CharDevices: []string{"/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"},
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("efa_0 =\n%+v\nwant\n%+v", d, want)
	}
	if !d.EFA() || devs[1].NUMANode != 1 || devs[1].UVerbs != "/dev/infiniband/uverbs1" {
		t.Errorf("EFA() %v, efa_1 %+v", d.EFA(), devs[1])
	}
	if len(ports) != 1 {
		t.Fatalf("efa_0 ports = %+v", ports)
	}
	p := ports[0]
	if p.Num != 1 || !p.Active() || p.PhysState != "LinkUp" || p.LinkLayer != LinkLayerUnspecified || p.RoCE() ||
		p.ActiveMTU != 0 || len(p.Netdevs) != 0 || p.Rate != "100 Gb/sec (4X EDR)" {
		t.Errorf("efa_0 port 1 = %+v", p)
	}
	if len(p.GIDs) != 1 || p.GIDs[0].Index != 0 || p.GIDs[0].GID.String() != "fe80::4a1:b2ff:fec3:d4e5" ||
		p.GIDs[0].Type != GIDTypeRoCEv1 || p.GIDs[0].Netdev != "" {
		t.Errorf("efa_0 GIDs = %+v", p.GIDs)
	}
	// It has no RoCE GID to choose: the default policy says so (the plugin does not ask).
	if _, _, err := ChooseGID(p, GIDPolicy{}); !errors.Is(err, ErrNoGID) {
		t.Errorf("ChooseGID on an EFA port: %v", err)
	}
}

// TestDiscoverEFANoGIDTable: an EFA port without a gids directory is discovered too.
func TestDiscoverEFANoGIDTable(t *testing.T) {
	t.Parallel()
	testkit.HostOnly(t)
	sys := rdmatest.CopyDir(t, "testdata/efa/sys")
	if err := os.RemoveAll(filepath.Join(sys, "class/infiniband/efa_1/ports/1/gids")); err != nil {
		t.Fatal(err)
	}
	devs, skipped, err := Discover(Roots{Sys: sys, Dev: "testdata/efa/dev"})
	if err != nil || len(skipped) != 0 || len(devs) != 2 {
		t.Fatalf("devices %v, skipped %v, %v", names(devs), skipped, err)
	}
	if p := devs[1].Ports[0]; len(p.GIDs) != 0 || p.LinkLayer != LinkLayerUnspecified {
		t.Errorf("efa_1 port = %+v", p)
	}
}

func TestParseLinkLayer(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"Ethernet": "Ethernet", "InfiniBand": "InfiniBand", "Unknown": "Unspecified", "Unspecified": "Unspecified"} {
		if got, err := parseLinkLayer(in); got != want || err != nil {
			t.Errorf("parseLinkLayer(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := parseLinkLayer("Token Ring"); err == nil {
		t.Error("Token Ring accepted")
	}
}
