package endpoint

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/rdma"
)

func TestParseListen(t *testing.T) {
	for _, tc := range []struct {
		listen, on, iface string
		wantErr           string
	}{
		{"0.0.0.0:18515", "", "", ""},
		{":18515", "rdma", "", ""},
		{":18515", "attachment=obs/macvlan", "", ""},
		{":18515", "attachment=obs/macvlan", "net2", ""},
		{"198.18.0.2:18515", "rdma", "", "--listen-on rdma chooses the address"},
		{":18515", "everything", "", "want any, rdma or attachment="},
		{":18515", "attachment=", "", "want any, rdma or attachment="},
		{":18515", "rdma", "net1", "--listen-interface applies only with --listen-on attachment"},
		{"host.example:18515", "", "", "the host must be an IP address"},
	} {
		_, err := parseListen(tc.listen, tc.on, tc.iface)
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("parseListen(%q, %q, %q) = %v, want error %q", tc.listen, tc.on, tc.iface, err, tc.wantErr)
		}
	}
}

func TestAttachmentInterface(t *testing.T) {
	const status = `[{"name":"e2e","interface":"eth0","ips":["10.88.0.5"],"default":true},
		{"name":"obs/macvlan","interface":"data0","ips":["198.18.0.40"]}]`
	for _, tc := range []struct {
		name, attachment, flag, status string
		want, reasonHas                string
	}{
		{"the flag wins", "obs/macvlan", "net7", status, "net7", "spec.network.interface"},
		{"from network-status", "obs/macvlan", "", status, "data0", "network-status annotation"},
		{"network-status without namespace", "obs/other", "", `[{"name":"other","interface":"net3"}]`, "net3", "network-status"},
		{"not listed: net1", "obs/sriov", "", status, "net1", "does not list it"},
		{"no annotation: net1", "obs/macvlan", "", "", "net1", "no network-status annotation"},
		{"the default network is never it", "e2e/e2e", "", `[{"name":"e2e/e2e","interface":"eth0","default":true}]`, "net1", "does not list it"},
	} {
		got, reason := attachmentInterface(tc.attachment, tc.flag, tc.status)
		if got != tc.want || !strings.Contains(reason, tc.reasonHas) {
			t.Errorf("%s: attachmentInterface = %q (%s), want %q with %q", tc.name, got, reason, tc.want, tc.reasonHas)
		}
	}
}

func fakeAddrs(m map[string][]string) addrLookup {
	return func(name string) ([]net.Addr, error) {
		cidrs, ok := m[name]
		if !ok {
			return nil, errors.New("no such network interface")
		}
		var out []net.Addr
		for _, c := range cidrs {
			ip, n, err := net.ParseCIDR(c)
			if err != nil {
				panic(err)
			}
			n.IP = ip
			out = append(out, n)
		}
		return out, nil
	}
}

func TestResolveAttachmentAddress(t *testing.T) {
	addrs := fakeAddrs(map[string][]string{
		"net1":  {"fe80::1/64", "198.18.0.40/24"},
		"v6":    {"fe80::1/64", "2001:db8::40/64"},
		"empty": {"fe80::1/64"},
	})
	plan, err := parseListen(":18515", "attachment=obs/macvlan", "")
	if err != nil {
		t.Fatal(err)
	}
	l, err := plan.resolveInterface(addrs, "")
	if err != nil || !l.ip.Equal(net.ParseIP("198.18.0.40")) || l.subnet != netip.MustParsePrefix("198.18.0.0/24") || l.iface != "net1" {
		t.Fatalf("resolve = %+v %v, want 198.18.0.40 on net1 in 198.18.0.0/24", l, err)
	}
	if !strings.Contains(l.reason, "interface net1 of attachment obs/macvlan") {
		t.Errorf("reason %q", l.reason)
	}
	plan.iface = "v6"
	if l, err = plan.resolveInterface(addrs, ""); err != nil || !l.ip.Equal(net.ParseIP("2001:db8::40")) {
		t.Errorf("IPv6-only interface: %+v %v", l, err)
	}
	for _, iface := range []string{"empty", "missing"} {
		plan.iface = iface
		if _, err := plan.resolveInterface(addrs, ""); err == nil || !strings.Contains(err.Error(), "interface "+iface) {
			t.Errorf("interface %s: err %v, want one naming it", iface, err)
		}
	}
}

// In Attachment mode the receiver uses the GID of its own interface's address, not the
// device plugin's GID of the node's netdev.
func TestAttachmentChoosesItsOwnGID(t *testing.T) {
	dev := rdma.Device{Name: "rxe1", Ports: []rdma.Port{{Num: 1, State: "ACTIVE", LinkLayer: rdma.LinkLayerEthernet, GIDs: []rdma.GID{
		{Index: 0, GID: net.ParseIP("fe80::1"), Type: rdma.GIDTypeRoCEv2, Netdev: "veth1"},
		{Index: 1, GID: net.ParseIP("::ffff:198.18.0.2"), Type: rdma.GIDTypeRoCEv2, Netdev: "veth1"},
		{Index: 2, GID: net.ParseIP("::ffff:198.18.0.40"), Type: rdma.GIDTypeRoCEv2, Netdev: "net1"},
	}}}}
	env := map[string]string{EnvDevice: "rxe1", EnvGIDIndex: "1"} // the device plugin's choice: the node netdev's GID
	getenv := func(k string) string { return env[k] }
	req, err := Request{GIDIndex: -1, Source: "flags"}.withEnv(getenv, true)
	if err != nil {
		t.Fatal(err)
	}
	req.IP = net.ParseIP("198.18.0.40")
	cfg, ep, err := Choose([]rdma.Device{dev}, req)
	if err != nil || cfg.GIDIndex != 2 || ep.Netdev != "net1" {
		t.Fatalf("chose %+v %+v %v, want GID 2 of net1", cfg, ep, err)
	}
	// Without ignoring it, the plugin's GID of the node netdev would win: what Host mode wants.
	req, _ = Request{GIDIndex: -1, Source: "flags"}.WithEnv(getenv)
	req.IP = net.ParseIP("198.18.0.2")
	if cfg, _, err := Choose([]rdma.Device{dev}, req); err != nil || cfg.GIDIndex != 1 {
		t.Fatalf("host: chose %+v %v, want the plugin's GID 1", cfg, err)
	}
}

func TestRDMAAddress(t *testing.T) {
	idx := 3
	_, err := rdmaAddress(Chosen{GID: "fe80::1", GIDIndex: idx, Device: "rxe0", Port: 1})
	if err == nil || !strings.Contains(err.Error(), "not an IPv4-mapped RoCE v2 GID") {
		t.Errorf("link-local GID: err %v", err)
	}
	// An address no interface here has: not the node's network namespace.
	_, err = rdmaAddress(Chosen{GID: "::ffff:192.0.2.250", GIDIndex: idx, Device: "rxe0", Port: 1, Netdev: "eth9"})
	if err == nil || !strings.Contains(err.Error(), "netdev eth9, which carries GID 3 of rxe0 (address 192.0.2.250), is not in this network namespace") {
		t.Errorf("foreign GID, netdev elsewhere: err %v", err)
	}
	// The netdev is here (lo) but without the GID's address.
	_, err = rdmaAddress(Chosen{GID: "::ffff:192.0.2.250", GIDIndex: idx, Device: "rxe0", Port: 1, Netdev: "lo"})
	if err == nil || !strings.Contains(err.Error(), "no interface here has 192.0.2.250, the address of GID 3 of rxe0 (netdev lo)") {
		t.Errorf("foreign GID, netdev here: err %v", err)
	}
	// The loopback address stands in for a netdev's address: found with its subnet.
	l, err := rdmaAddress(Chosen{GID: "::ffff:127.0.0.1", GIDIndex: idx, Device: "rxe0", Port: 1})
	if err != nil || !l.ip.Equal(net.ParseIP("127.0.0.1")) || l.subnet != netip.MustParsePrefix("127.0.0.0/8") || !strings.Contains(l.reason, "RoCE v2 GID 3 of rxe0 port 1") {
		t.Errorf("loopback: %+v %v", l, err)
	}
}

func TestSenderFilterFlag(t *testing.T) {
	l := listenResult{ip: net.ParseIP("198.18.0.2"), subnet: netip.MustParsePrefix("198.18.0.0/24")}
	tcp := func(s string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(s)} }
	for _, tc := range []struct {
		spec, allowed, refused, wantErr string
	}{
		{"any", "10.1.2.3", "", ""},
		{"", "10.1.2.3", "", ""},
		{"listen-subnet", "198.18.0.1", "10.88.0.5", ""},
		{"10.88.0.0/16, 198.18.0.1/32", "198.18.0.1", "198.18.0.3", ""},
		{"198.18.0.1", "", "", "want any, listen-subnet or CIDRs"},
	} {
		f, err := senderFilter(tc.spec, l)
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("senderFilter(%q) err %v, want %q", tc.spec, err, tc.wantErr)
			continue
		}
		if tc.allowed != "" && !f.Allows(tcp(tc.allowed)) {
			t.Errorf("senderFilter(%q) refuses %s", tc.spec, tc.allowed)
		}
		if tc.refused != "" && f.Allows(tcp(tc.refused)) {
			t.Errorf("senderFilter(%q) allows %s", tc.spec, tc.refused)
		}
	}
	if _, err := senderFilter("listen-subnet", listenResult{ip: net.IPv4zero}); err == nil || !strings.Contains(err.Error(), "every address") {
		t.Errorf("listen-subnet on 0.0.0.0: err %v", err)
	}
}
