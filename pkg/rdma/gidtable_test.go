package rdma

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ringcap/ringcap/internal/testkit"
)

// TestDiscoverGIDTable: a port's GID entries come from Roots.GIDTable when it answers (in
// index order, netdevs read from sysfs for those entries only), and from sysfs when it fails.
func TestDiscoverGIDTable(t *testing.T) {
	t.Parallel()
	testkit.HostOnly(t)
	sysfs, _, err := Discover(pciRoots())
	if err != nil {
		t.Fatal(err)
	}
	want := byName(t, sysfs, "mlx5_0").Ports[0].GIDs
	if len(want) < 2 {
		t.Fatalf("testdata mlx5_0 has %d GIDs, want at least 2", len(want))
	}
	var asked []string
	r := pciRoots()
	r.GIDTable = func(dev string, port int) ([]GID, error) {
		asked = append(asked, dev)
		if dev != "mlx5_0" {
			return nil, errors.New("no verbs here")
		}
		// the query's own order, no netdevs: discovery sorts and names them
		out := []GID{}
		for i := len(want) - 1; i >= 0; i-- {
			g := want[i]
			g.Netdev = ""
			out = append(out, g)
		}
		return out, nil
	}
	devs, _, err := Discover(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := byName(t, devs, "mlx5_0").Ports[0].GIDs; !reflect.DeepEqual(got, want) {
		t.Errorf("GIDs from the table =\n%+v\nwant (sysfs)\n%+v", got, want)
	}
	if !reflect.DeepEqual(devs, sysfs) {
		t.Errorf("devices with a GIDTable differ from sysfs discovery:\n%+v\n%+v", devs, sysfs)
	}
	if len(asked) < len(sysfs) {
		t.Errorf("GIDTable asked for %v, want every device's ports", asked)
	}

	// only what the table returns: an entry sysfs also has, alone
	r.GIDTable = func(dev string, port int) ([]GID, error) {
		return []GID{{Index: want[1].Index, GID: want[1].GID, Type: want[1].Type}}, nil
	}
	devs, _, err = Discover(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := byName(t, devs, "mlx5_0").Ports[0].GIDs; len(got) != 1 || got[0].Index != want[1].Index || got[0].Netdev != want[1].Netdev {
		t.Errorf("GIDs = %+v, want only index %d with netdev %q", got, want[1].Index, want[1].Netdev)
	}
}
