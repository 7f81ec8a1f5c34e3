package devices

import (
	"testing"

	"github.com/ringcap/ringcap/pkg/rdma"
)

// The host's roots are the default ones, with the GID tables read by one
// verbs query per port.
func TestHostRoots(t *testing.T) {
	r := HostRoots()
	if r.Sys != rdma.DefaultRoots.Sys || r.Dev != rdma.DefaultRoots.Dev || r.GIDTable == nil {
		t.Fatalf("HostRoots() = %+v, want the default roots with a GID table query", r)
	}
}

// CollectHost reports the devices under the roots given, whatever this
// host's libfabric offers.
func TestCollectHost(t *testing.T) {
	r, err := CollectHost(roots("pci"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Verbs) != 3 {
		t.Fatalf("report %+v: want the 3 devices of the tree", r)
	}
}
