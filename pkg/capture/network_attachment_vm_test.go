//go:build vm && vmattachment

package capture

// Streaming into an Attachment-mode receiver on real Soft-RoCE: the receiver listens on a
// macvlan upper device of veth1 with that macvlan's own RoCE v2 GID, and a sender on rxe0
// streams into it over the veth pair. Built only with the vmattachment tag, by
// `make test-vm-attachment`, which boots the VM with a newer kernel
// (RINGCAP_VM_KERNEL_SUITE): Debian bookworm's rxe (6.1) drops RoCE packets that arrive on
// a macvlan (docs/network.md), so under `make test-vm` this test is not built at all
// rather than skipped.

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/test/vm/vmtest"
)

func TestVMAttachmentStream(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	addMacvlan(t, attachMV, attachIP)
	routeOverTheWire(t, attachMV, attachIP)
	stopTrace := traceDrops(t)
	t.Cleanup(func() { logDataPath(t, attachMV, stopTrace()) })

	key, port := vmKey(), strconv.Itoa(vmPort())
	recv, _, _ := startAttachmentRecv(t, bin, key, port)
	rx0 := netStat(t, attachMV, "rx_bytes")
	const total = 3 << 20
	verifyObservation(t, bin, key, net.JoinHostPort(attachIP, port), total, 13,
		"--device", vmtest.Device0, "--gid-index", "1")
	if err := recv.wait(t, time.Minute); err != nil {
		t.Fatalf("recv: %v\n%s", err, recv.output())
	}
	// The data crossed the macvlan, not veth1 alone (whose address is not the GID's).
	if got := netStat(t, attachMV, "rx_bytes") - rx0; got < total {
		t.Fatalf("%s received %d bytes for a %d-byte observation: the stream did not arrive on the macvlan", attachMV, got, total)
	}
}

// routeOverTheWire makes the traffic between veth0's address and the macvlan's ip cross the
// veth pair both ways, as between two hosts, instead of the loopback (rxe drops what
// arrives on lo): locally generated packets to ip leave by veth0, and those from ip to
// veth0's address leave by mv. veth1 stops answering ARP for ip (arp_ignore 1), as a
// node's netdev does not for a pod's macvlan in the pod's namespace.
func routeOverTheWire(t *testing.T, mv, ip string) {
	t.Helper()
	arpIgnore := "/proc/sys/net/ipv4/conf/" + vmtest.Netdev1 + "/arp_ignore"
	if err := os.WriteFile(arpIgnore, []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.WriteFile(arpIgnore, []byte("0"), 0o644) })
	ipCmds(t,
		[]string{"route", "add", ip, "dev", vmtest.Netdev0, "src", vmtest.IP0, "table", "110"},
		[]string{"rule", "add", "pref", "9", "iif", "lo", "to", ip, "lookup", "110"},
		[]string{"route", "add", vmtest.IP0, "dev", mv, "src", ip, "table", "111"},
		[]string{"rule", "add", "pref", "9", "iif", "lo", "from", ip, "to", vmtest.IP0, "lookup", "111"})
	t.Cleanup(func() {
		for _, c := range [][]string{
			{"rule", "del", "pref", "9", "iif", "lo", "to", ip, "lookup", "110"},
			{"rule", "del", "pref", "9", "iif", "lo", "from", ip, "to", vmtest.IP0, "lookup", "111"},
			{"route", "flush", "table", "110"},
			{"route", "flush", "table", "111"},
		} {
			_, _ = run(t, time.Minute, "/usr/sbin/ip", c...)
		}
	})
}

// netStat reads a statistics counter of netdev.
func netStat(t *testing.T, netdev, name string) uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/sys/class/net", netdev, "statistics", name))
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s %s: %v", netdev, name, err)
	}
	return v
}

const tracing = "/sys/kernel/tracing"

// traceDrops records the kernel's skb:kfree_skb events (packets dropped, with where and
// why) of IPv4 packets until the returned function is called, which returns them counted
// by place and reason. Where tracefs is not available it logs so and records nothing.
func traceDrops(t *testing.T) func() string {
	t.Helper()
	if _, err := os.Stat(tracing + "/events"); err != nil {
		if out, err := run(t, time.Minute, "mount", "-t", "tracefs", "tracefs", tracing); err != nil {
			t.Logf("no drop trace: mount tracefs: %v %s", err, out)
			return func() string { return "(no tracefs)" }
		}
	}
	ev := tracing + "/events/skb/kfree_skb"
	for _, w := range [][2]string{{tracing + "/trace", ""}, {ev + "/filter", "protocol == 2048"}, {ev + "/enable", "1"}} {
		if err := os.WriteFile(w[0], []byte(w[1]), 0o644); err != nil {
			t.Logf("no drop trace: write %q to %s: %v", w[1], w[0], err)
			return func() string { return "(no drop trace)" }
		}
	}
	return func() string {
		_ = os.WriteFile(ev+"/enable", []byte("0"), 0o644)
		b, err := os.ReadFile(tracing + "/trace")
		if err != nil {
			return fmt.Sprintf("(read trace: %v)", err)
		}
		return countDrops(string(b))
	}
}

var dropEvent = regexp.MustCompile(`location=(\S+)(?:.*reason: (\S+))?`)

// countDrops counts kfree_skb trace lines by drop location (symbol without offset) and
// reason, most frequent first.
func countDrops(trace string) string {
	n := map[string]int{}
	for _, m := range dropEvent.FindAllStringSubmatch(trace, -1) {
		loc, _, _ := strings.Cut(m[1], "+")
		n[loc+" "+m[2]]++
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return n[keys[i]] > n[keys[j]] || n[keys[i]] == n[keys[j]] && keys[i] < keys[j] })
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%8d %s\n", n[k], k)
	}
	if b.Len() == 0 {
		return "(no IPv4 packet dropped)\n"
	}
	return b.String()
}

// logDataPath logs where the test's packets went: the kernel, the rxe devices' non-zero
// counters, the netdevs' packet counts, the neighbours, UDP's counters, the end of the
// kernel log and the IPv4 drops.
func logDataPath(t *testing.T, mv, drops string) {
	var b strings.Builder
	uname, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	fmt.Fprintf(&b, "kernel %s", uname)
	for _, dev := range []string{vmtest.Device0, vmtest.Device1} {
		fmt.Fprintf(&b, "%s hw_counters (non-zero):", dev)
		dir := filepath.Join("/sys/class/infiniband", dev, "ports", strconv.Itoa(vmtest.Port), "hw_counters")
		names, _ := os.ReadDir(dir)
		for _, e := range names {
			v, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if s := strings.TrimSpace(string(v)); err == nil && s != "0" {
				fmt.Fprintf(&b, " %s=%s", e.Name(), s)
			}
		}
		b.WriteString("\n")
	}
	for _, c := range [][]string{
		{"/usr/sbin/ip", "-s", "link", "show", vmtest.Netdev0},
		{"/usr/sbin/ip", "-s", "link", "show", vmtest.Netdev1},
		{"/usr/sbin/ip", "-s", "link", "show", mv},
		{"/usr/sbin/ip", "neigh", "show"},
		{"grep", "^Udp:", "/proc/net/snmp"},
		{"sh", "-c", "dmesg | tail -n 20"},
	} {
		out, _ := run(t, time.Minute, c[0], c[1:]...)
		fmt.Fprintf(&b, "$ %s\n%s", strings.Join(c, " "), out)
	}
	fmt.Fprintf(&b, "IPv4 packets dropped (skb:kfree_skb) by place and reason:\n%s", drops)
	t.Logf("data path:\n%s", b.String())
}
