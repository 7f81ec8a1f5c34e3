package endpoint

import (
	"net"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/rdma"
)

func rxeDevices() []rdma.Device {
	port := func(ip4, ll, nd string) rdma.Port {
		return rdma.Port{Num: 1, State: "ACTIVE", LinkLayer: rdma.LinkLayerEthernet, Netdevs: []string{nd}, GIDs: []rdma.GID{
			{Index: 0, GID: net.ParseIP(ll), Type: rdma.GIDTypeRoCEv2, Netdev: nd},
			{Index: 1, GID: net.ParseIP(ip4).To16(), Type: rdma.GIDTypeRoCEv2, Netdev: nd},
		}}
	}
	return []rdma.Device{
		{Name: "rxe0", Ports: []rdma.Port{port("198.18.0.1", "fe80::1", "veth0")}},
		{Name: "rxe1", Ports: []rdma.Port{port("198.18.0.2", "fe80::2", "veth1")}},
	}
}

func TestChooseEndpoint(t *testing.T) {
	devs := rxeDevices()
	cases := []struct {
		req    Request
		dev    string
		gid    int
		reason string
		err    string
	}{
		{req: Request{GIDIndex: -1, IP: net.ParseIP("198.18.0.2")}, dev: "rxe1", gid: 1, reason: "carries the listen address 198.18.0.2"},
		{req: Request{GIDIndex: -1, IP: net.IPv4zero}, dev: "rxe0", gid: 1, reason: "IPv4-mapped"},
		{req: Request{Device: "rxe1", GIDIndex: -1}, dev: "rxe1", gid: 1, reason: "IPv4-mapped"},
		{req: Request{GIDIndex: -1, IP: net.IPv4zero, LocalIPs: []net.IP{net.ParseIP("10.0.0.1"), net.ParseIP("198.18.0.2")}}, dev: "rxe1", gid: 1, reason: "carries the local address 198.18.0.2"},
		{req: Request{Device: "rxe0", GIDIndex: 0, Source: "device plugin environment"}, dev: "rxe0", gid: 0, reason: "GID index 0 from device plugin environment"},
		{req: Request{Device: "rxe0", GIDIndex: 7}, err: "GID index 7"},
		{req: Request{Device: "mlx5_0", GIDIndex: -1}, err: `RDMA device "mlx5_0" not found`},
		{req: Request{Device: "rxe0", Port: 2, GIDIndex: -1}, err: "no port 2"},
	}
	for _, c := range cases {
		cfg, st, err := Choose(devs, c.req)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: error %v, want %q", c.req, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%+v: %v", c.req, err)
			continue
		}
		if cfg.Device != c.dev || cfg.GIDIndex != c.gid || cfg.Port != 1 || st.Device != c.dev || st.Port != 1 || st.GIDIndex != c.gid || !strings.Contains(st.Reason, c.reason) {
			t.Errorf("%+v: got %+v %+v, want %s gid %d reason ~%q", c.req, cfg, st, c.dev, c.gid, c.reason)
		}
	}
	if _, _, err := Choose(nil, Request{GIDIndex: -1}); err == nil {
		t.Error("no devices: no error")
	}
}
