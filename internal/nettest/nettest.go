//go:build linux

// Package nettest makes the network namespaces that packet tests send between: two
// namespaces joined by a veth pair, removed when the test ends, so that a test's traffic
// never touches the host's own interfaces.
package nettest

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/testkit"
)

// Addresses of the veth pair: TxAddr on TxDev in the first namespace, RxAddr on RxDev in
// the second.
var (
	TxAddr  = netip.MustParseAddr("10.231.0.1")
	RxAddr  = netip.MustParseAddr("10.231.0.2")
	TxAddr6 = netip.MustParseAddr("fd77::1")
	RxAddr6 = netip.MustParseAddr("fd77::2")
)

// The veth pair's ends and its MTU (jumbo frames, as on a data network).
const (
	TxDev = "vtx"
	RxDev = "vrx"
	MTU   = 9000
)

// IP runs the ip command, failing the test with its output.
func IP(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// seq numbers the namespace pairs of one test binary.
var seq atomic.Int64

// VethPair creates two network namespaces joined by a veth pair (TxDev in the first,
// RxDev in the second, MTU 9000, addresses TxAddr/TxAddr6 and RxAddr/RxAddr6), removed
// when the test ends. It skips the test when namespaces cannot be created here.
func VethPair(t testing.TB) (tx, rx string) {
	t.Helper()
	id := seq.Add(1)
	tx = fmt.Sprintf("ringcap-net-%d-%d-tx", os.Getpid(), id)
	rx = fmt.Sprintf("ringcap-net-%d-%d-rx", os.Getpid(), id)
	for _, ns := range []string{tx, rx} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Skipf("cannot create a network namespace here (needs root and iproute2): ip netns add: %v: %s", err, out)
		}
		t.Cleanup(func() {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				t.Errorf("remove network namespace %s: %v: %s", ns, err, out)
			}
		})
	}
	IP(t, "-n", tx, "link", "add", TxDev, "mtu", fmt.Sprint(MTU), "type", "veth", "peer", "name", RxDev, "mtu", fmt.Sprint(MTU), "netns", rx)
	IP(t, "-n", tx, "addr", "add", TxAddr.String()+"/24", "dev", TxDev)
	IP(t, "-n", rx, "addr", "add", RxAddr.String()+"/24", "dev", RxDev)
	IP(t, "-n", tx, "addr", "add", TxAddr6.String()+"/64", "dev", TxDev, "nodad")
	IP(t, "-n", rx, "addr", "add", RxAddr6.String()+"/64", "dev", RxDev, "nodad")
	IP(t, "-n", tx, "link", "set", "lo", "up") // IPv6 input routing needs lo up
	IP(t, "-n", rx, "link", "set", "lo", "up")
	IP(t, "-n", tx, "link", "set", TxDev, "up")
	IP(t, "-n", rx, "link", "set", RxDev, "up")
	waitMulticastRoute(t, tx, TxDev)
	waitMulticastRoute(t, rx, RxDev)
	return tx, rx
}

// waitMulticastRoute waits until dev in ns is up with carrier and its IPv6 multicast route
// is usable (datagrams sent before are dropped as unroutable).
func waitMulticastRoute(t testing.TB, ns, dev string) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, dev+" up in "+ns, func() (bool, string) {
		link, _ := exec.Command("ip", "-n", ns, "-o", "link", "show", "dev", dev).CombinedOutput()
		routes, _ := exec.Command("ip", "-n", ns, "-6", "route", "show", "table", "local", "ff00::/8", "dev", dev).CombinedOutput()
		ok := strings.Contains(string(link), "state UP") && len(routes) > 0 && !strings.Contains(string(routes), "linkdown")
		return ok, string(link) + string(routes)
	})
}
