package udp

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	g1, g2 := netip.MustParseAddr("239.1.2.3"), netip.MustParseAddr("239.1.2.4")
	cases := []struct {
		name string
		cfg  Config
		want string // "" = valid
	}{
		{"one port", Config{Ports: []uint16{7148}}, ""},
		{"no ports", Config{}, "no ports"},
		{"negative batch", Config{Ports: []uint16{1}, BatchSize: -1}, "must not be negative"},
		{"batch beyond recvmmsg", Config{Ports: []uint16{1}, BatchSize: 4096}, "exceeds the kernel's 1024"},
		{"gather beyond a second", Config{Ports: []uint16{1}, Gather: 2 * time.Second}, "at most 1s"},
		{"gather off", Config{Ports: []uint16{1}, Gather: -1}, ""},
		{"pinned", Config{Ports: []uint16{1}, CPUs: []int{0, 1}}, ""},
		{"negative CPU", Config{Ports: []uint16{1}, CPUs: []int{0, -1}}, "CPU numbers are not negative"},
		{"jumbo beyond UDP", Config{Ports: []uint16{1}, PacketSize: 70000}, "largest UDP payload"},
		{"both interface forms", Config{Ports: []uint16{1}, Interface: "eth0", InterfaceAddr: netip.MustParseAddr("10.0.0.1")}, "not both"},
		{"v6 interface address", Config{Ports: []uint16{1}, InterfaceAddr: netip.MustParseAddr("fe80::1")}, "not IPv4"},
		{"groups on wildcard", Config{Ports: []uint16{1}, Groups: []netip.Addr{g1, g2}, SocketsPerPort: 2}, ""},
		{"groups on a unicast address", Config{Ports: []uint16{1}, Address: netip.MustParseAddr("10.0.0.1"), Groups: []netip.Addr{g1}}, "wildcard"},
		{"fewer groups than sockets", Config{Ports: []uint16{1}, Groups: []netip.Addr{g1}, SocketsPerPort: 2}, ""},
		{"unicast group", Config{Ports: []uint16{1}, Groups: []netip.Addr{netip.MustParseAddr("10.1.1.1")}}, "not a multicast"},
		{"mixed versions", Config{Ports: []uint16{1}, Groups: []netip.Addr{g1, netip.MustParseAddr("ff15::1")}}, "different IP versions"},
		{"v6 groups bind ::", Config{Ports: []uint16{1}, Groups: []netip.Addr{netip.MustParseAddr("ff15::1")}}, ""},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: Validate = %v, want nil", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: Validate = %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

func TestGroupsAreSharedOutAmongTheSocketsOfAPort(t *testing.T) {
	t.Parallel()
	var gs []netip.Addr
	for i := range 5 {
		gs = append(gs, netip.AddrFrom4([4]byte{239, 0, 0, byte(i)}))
	}
	cfg := Config{Groups: gs, SocketsPerPort: 2}
	if got, want := cfg.groupsFor(0), []netip.Addr{gs[0], gs[2], gs[4]}; !slices.Equal(got, want) {
		t.Errorf("socket 0 joins %v, want %v", got, want)
	}
	if got, want := cfg.groupsFor(1), []netip.Addr{gs[1], gs[3]}; !slices.Equal(got, want) {
		t.Errorf("socket 1 joins %v, want %v", got, want)
	}
}

func TestBufferErrorNamesSizesAndSysctl(t *testing.T) {
	t.Parallel()
	e := &BufferError{Wanted: 268435456, Obtained: 4194304, RmemMax: 4194304, Force: errors.New("set SO_RCVBUFFORCE: operation not permitted")}
	msg := e.Error()
	for _, want := range []string{"wanted 268435456 bytes", "obtained 4194304", "net.core.rmem_max = 4194304", "sysctl -w net.core.rmem_max=268435456", "CAP_NET_ADMIN"} {
		if !strings.Contains(msg, want) {
			t.Errorf("BufferError says %q, want it to contain %q", msg, want)
		}
	}
}

// In a pod's network namespace net.core.rmem_max cannot be read: the message gives the cap
// the size obtained shows, never "= 0".
func TestBufferErrorCapUnreadable(t *testing.T) {
	t.Parallel()
	e := &BufferError{Wanted: 64 << 20, Obtained: 212992, Force: errors.New("set SO_RCVBUFFORCE: operation not permitted")}
	msg := e.Error()
	if strings.Contains(msg, "= 0") || !strings.Contains(msg, "212992 by the size obtained") || !strings.Contains(msg, "sysctl -w net.core.rmem_max=67108864") {
		t.Errorf("BufferError says %q", msg)
	}
}
