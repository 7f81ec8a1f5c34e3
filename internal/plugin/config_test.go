package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/testkit"
	"github.com/ringcap/ringcap/pkg/rdma"
)

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`
version: v1
rescanInterval: 500ms
pools:
- name: rdma
  selector: {drivers: [rdma_rxe], linkLayers: [Ethernet]}
  sharing: {mode: shared, maxPodsPerDevice: 4}
  gidPolicy: {mode: roce-v2-ipv6}
  charDevices: {umad: true}
- name: ib
  selector: {linkLayers: [InfiniBand], vendors: ["0x15b3"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Version: "v1", RescanInterval: Duration{500 * time.Millisecond},
		Pools: []Pool{
			{Name: "rdma", Selector: Selector{Drivers: []string{"rdma_rxe"}, LinkLayers: []string{"Ethernet"}},
				Sharing: Sharing{Mode: SharingShared, MaxPodsPerDevice: 4}, GIDPolicy: GIDPolicyConfig{Mode: "roce-v2-ipv6"},
				CharDevices: CharDevices{UMad: true}},
			{Name: "ib", Selector: Selector{LinkLayers: []string{"InfiniBand"}, Vendors: []string{"0x15b3"}},
				Sharing: Sharing{Mode: SharingExclusive}},
		},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got\n%+v\nwant\n%+v", c, want)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	cases := []struct{ name, yaml, path, msg string }{
		{"no version", "pools: [{name: a}]", "version", "unsupported version"},
		{"future version", "version: v2\npools: [{name: a}]", "version", `"v2"`},
		{"unknown top", "version: v1\npools: [{name: a}]\nfoo: 1", "foo", "unknown field"},
		{"unknown nested", "version: v1\npools:\n- name: a\n- name: b\n  selector: {drivrs: [x]}", "pools[1].selector.drivrs", "unknown field"},
		{"unknown sharing", "version: v1\npools: [{name: a, sharing: {mode: shared, max: 2}}]", "pools[0].sharing.max", "unknown field"},
		{"no pools", "version: v1\npools: []", "pools", "no pools"},
		{"pools missing", "version: v1", "pools", "no pools"},
		{"bad name", "version: v1\npools: [{name: RDMA}]", "pools[0].name", "not a valid resource name"},
		{"dup name", "version: v1\npools: [{name: a}, {name: a}]", "pools[1].name", "already defined by pools[0]"},
		{"bad mode", "version: v1\npools: [{name: a, sharing: {mode: fair}}]", "pools[0].sharing.mode", "unknown mode"},
		{"shared no max", "version: v1\npools: [{name: a, sharing: {mode: shared}}]", "pools[0].sharing.maxPodsPerDevice", "outside 1..1000"},
		{"exclusive max", "version: v1\npools: [{name: a, sharing: {maxPodsPerDevice: 2}}]", "pools[0].sharing.maxPodsPerDevice", "only for mode"},
		{"type", "version: v1\npools: [{name: a, sharing: {mode: shared, maxPodsPerDevice: many}}]", "pools[0].sharing.maxPodsPerDevice", "want an integer, got string"},
		{"gid mode", "version: v1\npools: [{name: a, gidPolicy: {mode: best}}]", "pools[0].gidPolicy.mode", "unknown GID policy"},
		{"gid index", "version: v1\npools: [{name: a, gidPolicy: {mode: index, index: -2}}]", "pools[0].gidPolicy.index", "negative"},
		{"gid index no mode", "version: v1\npools: [{name: a, gidPolicy: {index: 3}}]", "pools[0].gidPolicy.index", "only for mode"},
		{"link layer", "version: v1\npools: [{name: a, selector: {linkLayers: [Ethernet, roce]}}]", "pools[0].selector.linkLayers[1]", "Ethernet, InfiniBand or Unspecified"},
		{"vendor", "version: v1\npools: [{name: a, selector: {vendors: [15b3]}}]", "pools[0].selector.vendors[0]", "PCI vendor ID"},
		{"interval", "version: v1\nrescanInterval: 10ms\npools: [{name: a}]", "rescanInterval", "outside"},
		{"interval syntax", "version: v1\nrescanInterval: soon\npools: [{name: a}]", "", "invalid duration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(c.yaml))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("err = %v, want %q", err, c.msg)
			}
			if c.path != "" {
				var fe *FieldError
				if !errors.As(err, &fe) || fe.Path != c.path {
					t.Errorf("err = %v, want path %q", err, c.path)
				}
			}
		})
	}
	if _, err := ParseConfig([]byte("")); err == nil {
		t.Error("empty config accepted")
	}
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestAssign(t *testing.T) {
	testkit.HostOnly(t)
	devs, _, err := rdma.Discover(rdma.Roots{Sys: "../../pkg/rdma/testdata/pci/sys", Dev: "../../pkg/rdma/testdata/pci/dev"})
	if err != nil {
		t.Fatal(err)
	}
	names := func(ds []rdma.Device) (out []string) {
		for _, d := range ds {
			out = append(out, d.Name)
		}
		return out
	}
	c, err := ParseConfig([]byte(`
version: v1
pools:
- {name: roce, selector: {linkLayers: [Ethernet]}}
- {name: ib, selector: {linkLayers: [InfiniBand]}}
- {name: vlan, selector: {netdevs: [enp3s0f0.100]}, sharing: {mode: shared, maxPodsPerDevice: 2}}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Assign(devs)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "pools[2].selector" || !strings.Contains(err.Error(), "device mlx5_0 is also selected by pools[0]") {
		t.Fatalf("overlap: %v", err)
	}
	c.Pools[0].Selector.Devices = []string{"mlx5_1"}
	got, err := c.Assign(devs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(names(got["roce"]), []string{"mlx5_1"}) || !reflect.DeepEqual(names(got["ib"]), []string{"mlx5_2"}) ||
		!reflect.DeepEqual(names(got["vlan"]), []string{"mlx5_0"}) {
		t.Errorf("assign: %v %v %v", names(got["roce"]), names(got["ib"]), names(got["vlan"]))
	}
	// Two shared pools may overlap.
	c.Pools[0] = Pool{Name: "roce", Sharing: Sharing{Mode: SharingShared, MaxPodsPerDevice: 3}, Selector: Selector{Drivers: []string{"mlx5_core"}, Vendors: []string{"0x15b3"}}}
	c.Pools = append(c.Pools[:1], c.Pools[2])
	got, err = c.Assign(devs)
	if err != nil || len(got["roce"]) != 3 || len(got["vlan"]) != 1 {
		t.Errorf("shared overlap: %v %v", got, err)
	}
}

func TestParseConfigTypes(t *testing.T) {
	for y, path := range map[string]string{
		"version: v1\npools: {name: a}":                           "pools",
		"version: v1\npools: [{name: a, selector: {devices: x}}]": "pools[0].selector.devices",
		"version: v1\npools: [{name: 7}]":                         "pools[0].name",
		"version: v1\npools: [{name: a, charDevices: {umad: 1}}]": "pools[0].charDevices.umad",
		"version: v1\npools: [{name: a, sharing: [shared]}]":      "pools[0].sharing",
	} {
		_, err := ParseConfig([]byte(y))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Path != path {
			t.Errorf("%q: err = %v, want path %s", y, err, path)
		}
	}
}
