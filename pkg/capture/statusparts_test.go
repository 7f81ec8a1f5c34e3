package capture

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

func TestStatusEndpoint(t *testing.T) {
	senders, err := endpoint.NewSenderFilter([]netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")})
	if err != nil {
		t.Fatal(err)
	}
	rd := &endpoint.Chosen{Device: "rxe0", Port: 1, GIDIndex: 3, GID: "::ffff:198.18.0.2", Netdev: "net1", Reason: "RoCE v2 GID 3 carries the listen address"}
	for _, c := range []struct {
		name string
		ch   endpoint.Choice
		want statusdoc.Endpoint
	}{
		{"verbs", endpoint.Choice{Addr: "198.18.0.2:7000", Host: "198.18.0.2", Port: 7000, AddressReason: "the address of net1", RDMA: rd, Senders: senders},
			statusdoc.Endpoint{Address: "198.18.0.2", Port: 7000, Device: "rxe0", IBPort: 1, GIDIndex: new(3), GID: "::ffff:198.18.0.2", Netdev: "net1",
				GIDReason: rd.Reason, AddressReason: "the address of net1", AllowedSenders: []string{"198.18.0.0/24"}}},
		// Without an RDMA device (ofi opens its own domain) the GID index is null.
		{"no device", endpoint.Choice{Addr: "0.0.0.0:7000", Host: "0.0.0.0", Port: 7000},
			statusdoc.Endpoint{Address: "0.0.0.0", Port: 7000, AllowedSenders: []string{"any"}}},
	} {
		if got := statusEndpoint(c.ch); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestStatusRegistration(t *testing.T) {
	for _, c := range []struct {
		in   fabric.Registered
		want statusdoc.MemoryRegistration
	}{
		{fabric.Registered{Mode: fabric.MRWholeRing, Regions: 1, Bytes: 8 << 20, Reason: "blocks contiguous"},
			statusdoc.MemoryRegistration{Mode: "WholeRing", Regions: 1, Bytes: 8 << 20, Reason: "blocks contiguous"}},
		{fabric.Registered{Mode: fabric.MRPerBlock, Regions: 4, Bytes: 4 << 20, Reason: "per-block registration requested"},
			statusdoc.MemoryRegistration{Mode: "PerBlock", Regions: 4, Bytes: 4 << 20, Reason: "per-block registration requested"}},
	} {
		if got := statusRegistration(c.in); got != c.want {
			t.Errorf("%+v: %+v, want %+v", c.in, got, c.want)
		}
	}
}
