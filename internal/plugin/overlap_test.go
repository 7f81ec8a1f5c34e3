package plugin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/internal/testkit"
	"github.com/ringcap/ringcap/pkg/rdma"
	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

func mustParse(t *testing.T, y string) *Config {
	t.Helper()
	c, err := ParseConfig([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOverlaps(t *testing.T) {
	devs := []rdma.Device{
		{Name: "mlx5_0", Driver: "mlx5_core", Vendor: "0x15b3", Ports: []rdma.Port{{Num: 1, LinkLayer: rdma.LinkLayerEthernet, Netdevs: []string{"eth0"}}}},
		{Name: "mlx5_1", Driver: "mlx5_core", Vendor: "0x15b3", Ports: []rdma.Port{{Num: 1, LinkLayer: rdma.LinkLayerInfiniBand}}},
		{Name: "rxe0", Driver: "rdma_rxe", Ports: []rdma.Port{{Num: 1, LinkLayer: rdma.LinkLayerEthernet, Netdevs: []string{"veth0"}}}},
	}
	for _, tc := range []struct {
		name, this, other string
		want              []Overlap
	}{
		{"both select everything", "pools: [{name: a}]", "pools: [{name: b}]",
			[]Overlap{{"mlx5_0", "a", "b"}, {"mlx5_1", "a", "b"}, {"rxe0", "a", "b"}}},
		{"split by driver", "pools: [{name: a, selector: {drivers: [mlx5_core]}}]", "pools: [{name: b, selector: {drivers: [rdma_rxe]}}]", nil},
		{"split by netdev", "pools: [{name: a, selector: {netdevs: [eth0]}}]", "pools: [{name: b, selector: {netdevs: [veth0]}}]", nil},
		{"link layer against driver", "pools: [{name: a, selector: {linkLayers: [Ethernet]}}]", "pools: [{name: b, selector: {drivers: [mlx5_core]}}]",
			[]Overlap{{"mlx5_0", "a", "b"}}},
		{"first pool of each side", "pools: [{name: a, selector: {devices: [rxe0]}}, {name: c, selector: {drivers: [mlx5_core]}}]",
			"pools: [{name: b, selector: {devices: [mlx5_1]}}, {name: d}]",
			[]Overlap{{"mlx5_0", "c", "d"}, {"mlx5_1", "c", "b"}, {"rxe0", "a", "d"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			this, other := mustParse(t, "version: v1\n"+tc.this), mustParse(t, "version: v1\n"+tc.other)
			if got := this.Overlaps(other, devs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("overlaps %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := DefaultConfig().Overlaps(nil, devs); got != nil {
		t.Errorf("without another config: %+v", got)
	}
}

// TestRunRefusesOverlapWithOtherConfig: a device the DRA driver's config selects too
// refuses the start, with an error naming the device and both pools, and no socket.
func TestRunRefusesOverlapWithOtherConfig(t *testing.T) {
	testkit.HostOnly(t)
	dir := shortTempDir(t)
	p, err := New(Options{Config: DefaultConfig(), Roots: rdma.Roots{Sys: "../../pkg/rdma/testdata/pci/sys", Dev: "../../pkg/rdma/testdata/pci/dev"},
		KubeletDir: dir, OtherConfig: mustParse(t, "version: v1\npools: [{name: soft, selector: {devices: [rxe9, mlx5_2]}}]")})
	if err != nil {
		t.Fatal(err)
	}
	// A failure deadline: a plugin that does not refuse serves until cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err = p.Run(ctx)
	if !errors.Is(err, ErrOverlap) || !strings.Contains(err.Error(), `mlx5_2 (the device plugin's pool "rdma" and the DRA driver's pool "soft")`) {
		t.Fatalf("Run = %v, want ErrOverlap naming mlx5_2 and both pools", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("sockets left: %v", ents)
	}
	if _, err := New(Options{Config: DefaultConfig(), Roots: rdma.DefaultRoots, KubeletDir: dir, OtherConfig: &Config{Version: "v0"}}); err == nil ||
		!strings.Contains(err.Error(), "other config") {
		t.Errorf("New with an invalid other config = %v", err)
	}
}

// TestRescanLeavesOutLateOverlap: a device that appears after the start and is selected by
// both configs is not advertised; the inventory says why.
func TestRescanLeavesOutLateOverlap(t *testing.T) {
	testkit.HostOnly(t)
	roots := rdma.Roots{Sys: rdmatest.CopyDir(t, "../../pkg/rdma/testdata/pci/sys"), Dev: rdmatest.CopyDir(t, "../../pkg/rdma/testdata/pci/dev")}
	link := filepath.Join(roots.Sys, "class", "infiniband", "mlx5_2")
	target, err := os.Readlink(link)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	cfg := mustParse(t, "version: v1\npools: [{name: rdma, selector: {devices: [mlx5_0, mlx5_2]}}]")
	h := startHarnessRoots(t, cfg, roots, func(o *Options) {
		o.OtherConfig = mustParse(t, "version: v1\npools: [{name: soft, selector: {devices: [mlx5_2]}}]")
	})
	h.kubelet.registration(t)
	h.sink.waitFor(t, func(inv *Inventory) bool { return slices.Equal(inv.Status.Pools[0].Devices, []string{"mlx5_0"}) })

	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	inv := h.sink.waitFor(t, func(inv *Inventory) bool { return len(inv.Status.Devices) == 3 })
	want := `device mlx5_2: also selected by the DRA driver's pool "soft" (--other-config)`
	if !slices.ContainsFunc(inv.Status.Skipped, func(s string) bool { return strings.HasPrefix(s, want) }) {
		t.Errorf("inventory skipped %q, want an entry starting %q", inv.Status.Skipped, want)
	}
	if got := inv.Status.Pools[0].Devices; !slices.Equal(got, []string{"mlx5_0"}) {
		t.Errorf("pool devices %v after mlx5_2 appeared, want only mlx5_0", got)
	}
	ps, _ := h.plugin.pools[0].snapshot()
	if _, ok := ps.devs["mlx5_2"]; ok || len(ps.list) != 1 {
		t.Errorf("ListAndWatch view %v: mlx5_2 is advertised", describeList(ps))
	}
}

func describeList(ps *poolState) []string {
	var out []string
	for _, d := range ps.list {
		out = append(out, d.ID)
	}
	return out
}
