//go:build vm && vmattachment

package capture

// Streaming into an Attachment-mode receiver on real Soft-RoCE: the receiver listens on a
// macvlan upper device of veth1 with that macvlan's own RoCE v2 GID, and a sender on rxe0
// streams into it over the veth pair; on failure the test logs where the packets went
// (rxe counters, netdev counters, the kernel's drop trace). Built only with the vmattachment tag, by
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

// A sender streams into a receiver listening on the macvlan's address and GID; the
// frames reach the macvlan, as from another host.
func TestVMAttachmentStream(t *testing.T) {
	streamToMacvlanGID(t, false)
}

// The diagnosis of TestVMAttachmentStream's failure: the same stream to the macvlan's
// address and GID, with the sender's neighbour entry for that address pointing at veth1's
// MAC, so that the frames arrive on veth1 instead of the macvlan. rxe takes them: it finds
// its device by the netdev a packet arrives on (VLAN devices resolved to their real device,
// macvlans not), while the GID and address the queue pair checks are the macvlan's.
func TestVMMacvlanGIDOverTheLowerDevice(t *testing.T) {
	streamToMacvlanGID(t, true)
}

// streamToMacvlanGID streams one verified observation from rxe0 into a receiver listening
// on attachMV's address and GID and checks which netdev received it: the macvlan, or with
// viaLower veth1 itself.
func streamToMacvlanGID(t *testing.T, viaLower bool) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	addMacvlan(t, attachMV, attachIP)
	routeOverTheWire(t, attachMV, attachIP)
	if viaLower {
		mac, err := os.ReadFile("/sys/class/net/" + vmtest.Netdev1 + "/address")
		if err != nil {
			t.Fatal(err)
		}
		ipCmds(t, []string{"neigh", "replace", attachIP, "lladdr", strings.TrimSpace(string(mac)), "dev", vmtest.Netdev0, "nud", "permanent"})
		t.Cleanup(func() { _, _ = run(t, time.Minute, "/usr/sbin/ip", "neigh", "del", attachIP, "dev", vmtest.Netdev0) })
	}
	stopTrace := traceDrops(t)
	t.Cleanup(func() { logDataPath(t, attachMV, stopTrace()) })

	key, port := vmKey(), strconv.Itoa(vmPort())
	recv, _, _ := startAttachmentRecv(t, bin, key, port)
	mv0, lower0 := netStat(t, attachMV, "rx_bytes"), netStat(t, vmtest.Netdev1, "rx_bytes")
	const total = 3 << 20
	verifyObservation(t, bin, key, net.JoinHostPort(attachIP, port), total, 13,
		"--device", vmtest.Device0, "--gid-index", "1")
	if err := recv.wait(t, time.Minute); err != nil {
		t.Fatalf("recv: %v\n%s", err, recv.output())
	}
	mv, lower := netStat(t, attachMV, "rx_bytes")-mv0, netStat(t, vmtest.Netdev1, "rx_bytes")-lower0
	switch {
	case !viaLower && mv < total:
		t.Fatalf("%s received %d bytes for a %d-byte observation: the stream did not arrive on the macvlan", attachMV, mv, total)
	case viaLower && (lower < total || mv >= total):
		t.Fatalf("%s received %d bytes and %s %d for a %d-byte observation: the stream did not arrive on %s alone",
			vmtest.Netdev1, lower, attachMV, mv, total, vmtest.Netdev1)
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
// why) until the returned function is called, which returns the IPv4 ones counted by place
// and reason. The event must have been enabled at boot (kernel argument
// trace_event=skb:kfree_skb, as make test-vm-attachment does): enabling it at run time
// patches kernel text, and a 6.12 guest under TCG that did so ended in an int3 Oops.
// Without it, or without tracefs, it logs so and records nothing.
func traceDrops(t *testing.T) func() string {
	t.Helper()
	if _, err := os.Stat(tracing + "/events"); err != nil {
		if out, err := run(t, time.Minute, "mount", "-t", "tracefs", "tracefs", tracing); err != nil {
			t.Logf("no drop trace: mount tracefs: %v %s", err, out)
			return func() string { return "(no tracefs)\n" }
		}
	}
	if on, _ := os.ReadFile(tracing + "/events/skb/kfree_skb/enable"); strings.TrimSpace(string(on)) != "1" {
		t.Logf("no drop trace: boot with trace_event=skb:kfree_skb to record where packets are dropped")
		return func() string { return "(not traced: boot with trace_event=skb:kfree_skb)\n" }
	}
	if err := os.WriteFile(tracing+"/trace", nil, 0o644); err != nil { // clears the buffer
		t.Logf("no drop trace: clear %s/trace: %v", tracing, err)
		return func() string { return "(no drop trace)\n" }
	}
	return func() string {
		b, err := os.ReadFile(tracing + "/trace")
		if err != nil {
			return fmt.Sprintf("(read trace: %v)\n", err)
		}
		return countDrops(string(b))
	}
}

var dropEvent = regexp.MustCompile(`protocol=2048 location=(\S+)(?:.*reason: (\S+))?`)

// countDrops counts IPv4 (protocol 2048) kfree_skb trace lines by drop location (symbol without offset) and
// reason, most frequent first. Kernels before 6.2 print the location as an address: it is
// looked up in /proc/kallsyms, which needs the kernel argument no_hash_pointers.
func countDrops(trace string) string {
	n := map[string]int{}
	var syms []ksym
	for _, m := range dropEvent.FindAllStringSubmatch(trace, -1) {
		loc, _, _ := strings.Cut(m[1], "+")
		if a, err := strconv.ParseUint(strings.TrimPrefix(loc, "0x"), 16, 64); err == nil && a >= kernelSpace {
			if syms == nil {
				syms = kallsyms()
			}
			loc = symbolAt(syms, a)
		}
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

// kernelSpace is where x86-64 kernel addresses start: hashed pointers are below it.
const kernelSpace = 0xffff800000000000

type ksym struct {
	addr uint64
	name string
}

// kallsyms reads the kernel's text symbols, sorted by address (empty where they are hidden).
func kallsyms() []ksym {
	b, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		return []ksym{}
	}
	syms := []ksym{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || (f[1] != "t" && f[1] != "T") {
			continue
		}
		if a, err := strconv.ParseUint(f[0], 16, 64); err == nil && a != 0 {
			syms = append(syms, ksym{a, f[2]})
		}
	}
	sort.Slice(syms, func(i, j int) bool { return syms[i].addr < syms[j].addr })
	return syms
}

// symbolAt names the symbol that contains addr, or returns addr in hex.
func symbolAt(syms []ksym, addr uint64) string {
	i := sort.Search(len(syms), func(i int) bool { return syms[i].addr > addr })
	if i == 0 {
		return fmt.Sprintf("%#x", addr)
	}
	return syms[i-1].name
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
