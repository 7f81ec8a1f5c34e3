package endpoint

import (
	"net/netip"
	"strings"
	"testing"
)

// A packet receiver's allowlist: any, CIDRs, the subnet of its bound address, and a
// refusal of listen-subnet when it binds every address.
func TestPacketSenders(t *testing.T) {
	loop := netip.MustParseAddr("127.0.0.1")
	for _, c := range []struct {
		spec        string
		bound       netip.Addr
		allow, deny []string
		err         string
	}{
		{spec: "any", bound: netip.IPv4Unspecified(), allow: []string{"10.0.0.1", "127.0.0.1"}},
		{spec: "10.1.0.0/16,192.0.2.7/32", bound: netip.IPv4Unspecified(), allow: []string{"10.1.2.3", "192.0.2.7", "::ffff:10.1.0.9"}, deny: []string{"10.2.0.1", "192.0.2.8"}},
		{spec: "listen-subnet", bound: loop, allow: []string{"127.0.0.1", "127.9.9.9"}, deny: []string{"10.0.0.1"}},
		{spec: "listen-subnet", bound: netip.IPv4Unspecified(), err: "listens on every address"},
		{spec: "10.1.0.0/33", bound: loop, err: `--allowed-senders "10.1.0.0/33"`},
	} {
		f, err := PacketSenders(c.spec, c.bound, "")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s on %v: error %v, want %q", c.spec, c.bound, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s on %v: %v", c.spec, c.bound, err)
		}
		for _, a := range c.allow {
			if !f.AllowsAddr(netip.MustParseAddr(a)) {
				t.Errorf("%s on %v refuses %s", c.spec, c.bound, a)
			}
		}
		for _, a := range c.deny {
			if f.AllowsAddr(netip.MustParseAddr(a)) {
				t.Errorf("%s on %v allows %s", c.spec, c.bound, a)
			}
		}
	}
}

// listen-subnet with the sockets on the wildcard and groups joined on an interface takes
// that interface's subnet (tested for real over a veth pair in cmd/ringcap); an interface
// without a usable address, or none, is a clear error.
func TestPacketSendersInterfaceErrors(t *testing.T) {
	for _, iface := range []string{"lo", "no-such-if0"} {
		if _, err := PacketSenders(AllowListenSubnet, netip.IPv4Unspecified(), iface); err == nil || !strings.Contains(err.Error(), "listen-subnet: interface "+iface) {
			t.Errorf("listen-subnet on %s: %v", iface, err)
		}
	}
}

// The per-packet check allocates nothing.
func TestAllowsAddrAllocatesNothing(t *testing.T) {
	f, err := PacketSenders("10.1.0.0/16", netip.Addr{}, "")
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr("::ffff:10.1.0.9")
	if n := testing.AllocsPerRun(100, func() { _ = f.AllowsAddr(a) }); n != 0 {
		t.Errorf("AllowsAddr: %v allocations", n)
	}
}
