//go:build linux

package udp

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/nettest"
	"golang.org/x/sys/unix"
)

// Addresses of the veth pair between the test's two network namespaces.
var (
	txAddr  = nettest.TxAddr
	rxAddr  = nettest.RxAddr
	txAddr6 = nettest.TxAddr6
)

// vethPair creates two network namespaces joined by a veth pair (vtx in the first, vrx in
// the second), removed when the test ends.
func vethPair(t *testing.T) (tx, rx string) { return nettest.VethPair(t) }

// inNetns runs fn on a throw-away thread inside network namespace ns: sockets it opens
// stay in ns when used from other threads.
func inNetns(t *testing.T, ns string, fn func()) {
	t.Helper()
	var setErr error
	onThread(func() {
		f, err := os.Open(filepath.Join("/run/netns", ns))
		if err != nil {
			setErr = err
			return
		}
		defer func() { _ = f.Close() }()
		if setErr = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); setErr != nil {
			return
		}
		fn()
	})
	if setErr != nil {
		t.Fatalf("enter network namespace %s: %v", ns, setErr)
	}
}

// multicastSender opens, in ns, a socket bound to from that sends multicast out of
// interface dev.
func multicastSender(t *testing.T, ns, dev string, from netip.Addr) *net.UDPConn {
	t.Helper()
	var conn *net.UDPConn
	var err error
	inNetns(t, ns, func() {
		var ifi *net.Interface
		if ifi, err = net.InterfaceByName(dev); err != nil {
			return
		}
		if conn, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(from, 0))); err != nil {
			return
		}
		rc, _ := conn.SyscallConn()
		err = controlErr(rc, func(fd int) error {
			if from.Is6() {
				return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_IF, ifi.Index)
			}
			return unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF, &unix.IPMreqn{Ifindex: int32(ifi.Index)})
		})
	})
	if err != nil {
		t.Fatalf("multicast sender on %s in %s: %v", dev, ns, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// Groups joined on a named interface arrive over a veth pair from another namespace; with
// two sockets on one port every datagram is received exactly once (no copies), and a group
// nobody joined is not received. Which socket gets which group is the kernel's choice (see
// the package doc), so only the sums per group are checked.
func TestMulticastGroupsSharedOutOverVeth(t *testing.T) {
	tx, rx := vethPair(t)
	groups := []netip.Addr{
		netip.MustParseAddr("239.255.77.1"), netip.MustParseAddr("239.255.77.2"), netip.MustParseAddr("239.255.77.3"),
	}
	var counts [2][3]atomic.Uint64 // [socket][group]
	var r *Receiver
	var err error
	inNetns(t, rx, func() {
		r, err = Open(Config{Ports: []uint16{0}, SocketsPerPort: 2, Groups: groups, Interface: "vrx", RecvBufferBytes: 1 << 20})
	})
	if err != nil {
		t.Fatalf("Open in %s: %v", rx, err)
	}
	run(t, r, func(p Packet) { counts[p.Socket][binary.LittleEndian.Uint64(p.Data)>>32].Add(1) })
	port := r.Sockets()[0].Local.Port()
	c := multicastSender(t, tx, "vtx", txAddr)
	const n = 300
	sendToGroups(t, r, c, groups, netip.MustParseAddr("239.255.77.9"), port, n)
	s := waitAccounted(t, r, 3*n)
	if s.KernelDrops != 0 || s.Packets != 3*n {
		t.Fatalf("stats %+v, want %d packets and no drops", s, 3*n)
	}
	for g := range 3 {
		if got := counts[0][g].Load() + counts[1][g].Load(); got != n {
			t.Errorf("group %s: %d datagrams received over both sockets, want %d", groups[g], got, n)
		}
	}
	t.Logf("per socket and group: %d %d %d / %d %d %d (socket 0 joined %v, socket 1 %v)",
		counts[0][0].Load(), counts[0][1].Load(), counts[0][2].Load(), counts[1][0].Load(), counts[1][1].Load(), counts[1][2].Load(),
		r.Sockets()[0].Groups, r.Sockets()[1].Groups)
}

// A group joined by the interface's address instead of its name arrives the same way.
func TestMulticastJoinByInterfaceAddress(t *testing.T) {
	tx, rx := vethPair(t)
	group := netip.MustParseAddr("239.255.78.1")
	var r *Receiver
	var err error
	inNetns(t, rx, func() {
		r, err = Open(Config{Ports: []uint16{0}, Groups: []netip.Addr{group}, InterfaceAddr: rxAddr})
	})
	if err != nil {
		t.Fatalf("Open in %s: %v", rx, err)
	}
	run(t, r, func(Packet) {})
	c := multicastSender(t, tx, "vtx", txAddr)
	sendToGroups(t, r, c, []netip.Addr{group}, netip.Addr{}, r.Sockets()[0].Local.Port(), 100)
	if s := waitAccounted(t, r, 100); s.Packets != 100 {
		t.Fatalf("stats %+v, want 100 packets", s)
	}
}

// An IPv6 group joined on a named interface arrives from its sender's address.
func TestMulticastIPv6OverVeth(t *testing.T) {
	tx, rx := vethPair(t)
	group := netip.MustParseAddr("ff15::7701")
	var r *Receiver
	var err error
	inNetns(t, rx, func() {
		r, err = Open(Config{Ports: []uint16{0}, Groups: []netip.Addr{group}, Interface: "vrx"})
	})
	if err != nil {
		t.Fatalf("Open in %s: %v", rx, err)
	}
	var from atomic.Value
	run(t, r, func(p Packet) { from.Store(p.Source.Addr()) })
	c := multicastSender(t, tx, "vtx", txAddr6)
	t.Cleanup(func() {
		if t.Failed() {
			for _, args := range [][]string{{"-n", rx, "maddr", "show", "dev", "vrx"}, {"netns", "exec", rx, "grep", "-i", "mcast\\|InDiscards\\|NoRoutes\\|Udp6", "/proc/net/snmp6"}, {"netns", "exec", tx, "grep", "-i", "OutMcast\\|NoRoutes\\|Udp6Out", "/proc/net/snmp6"}} {
				out, _ := exec.Command("ip", args...).CombinedOutput()
				t.Logf("ip %v:\n%s", args, out)
			}
		}
	})
	sendToGroups(t, r, c, []netip.Addr{group}, netip.Addr{}, r.Sockets()[0].Local.Port(), 100)
	if s := waitAccounted(t, r, 100); s.Packets != 100 {
		t.Fatalf("stats %+v, want 100 packets", s)
	}
	if got := from.Load(); got != txAddr6 {
		t.Errorf("source %v, want %s", got, txAddr6)
	}
}

// sendToGroups sends n datagrams to each group, tagged with the group's index, and as many
// to unjoined (if valid), keeping few in flight so the receiver's buffer does not overflow.
func sendToGroups(t *testing.T, r *Receiver, c *net.UDPConn, groups []netip.Addr, unjoined netip.Addr, port uint16, n int) {
	t.Helper()
	buf := make([]byte, 1000)
	var sent uint64
	for i := range n {
		for g, group := range groups {
			datagram(buf, uint64(g)<<32|uint64(i))
			if _, err := c.WriteToUDPAddrPort(buf, netip.AddrPortFrom(group, port)); err != nil {
				t.Fatalf("send to %s: %v", group, err)
			}
			sent++
		}
		if unjoined.IsValid() {
			if _, err := c.WriteToUDPAddrPort(buf, netip.AddrPortFrom(unjoined, port)); err != nil {
				t.Fatalf("send to %s: %v", unjoined, err)
			}
		}
		for deadline := time.Now().Add(10 * time.Second); sent > r.Stats().Accounted()+uint64(64*len(groups)); {
			if time.Now().After(deadline) {
				t.Fatalf("the receiver stopped taking datagrams: %s", statsString(r.Stats(), sent))
			}
			runtimeYield()
		}
	}
}
