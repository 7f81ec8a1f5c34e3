//go:build vm

package receiver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/nettest"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/pattern"
	"github.com/ringcap/ringcap/test/vm/vmtest"
)

// netemRule is a SPEAD rule of 8 KiB heaps, one packet each.
var netemRule = []string{"--protocol", "spead", "--spead-timestamp-id", "0x1600", "--spead-timestamp-step", "4096", "--spead-heap-bytes", "8K",
	"--spead-sync-time", "1700000000", "--spead-sample-rate", "1712000000"}

// Loss, duplication and reordering injected by the kernel (tc netem on the sender's end of
// a veth pair between two namespaces, MTU 9000), not by the sender: whatever netem did,
// every packet slot of the ring holds the sender's bytes or zeros, the zero-filled bytes
// are exactly the empty slots, each slot was received once, every packet that arrived is
// counted under one outcome, and none was dropped by the receiver's kernel.
func TestVMNetemFaults(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	tx, rx := nettest.VethPair(t)
	if out, err := exec.Command("modprobe", "sch_netem").CombinedOutput(); err != nil {
		t.Fatalf("modprobe sch_netem: %v: %s", err, out)
	}
	nettest.IP(t, "netns", "exec", tx, "tc", "qdisc", "add", "dev", nettest.TxDev, "root", "netem",
		"delay", "2ms", "reorder", "75%", "50%", "duplicate", "3%", "loss", "3%")
	const total, pkt = 8 << 20, 8192
	key, dir := vmtest.NewKey().String(), t.TempDir()
	summary, data := filepath.Join(dir, "summary.json"), filepath.Join(dir, "ring.bin")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	recv := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", rx, bin, "recv", "-k", key, "--create", "-b", "262144", "-n", "16",
		"--udp-ports", "7148", "--udp-address", nettest.RxAddr.String(), "--udp-buffer", "8M", "--reorder-blocks", "4",
		"--spead-stop-heaps", "0", "--udp-idle-timeout", "2s", "--metrics-addr", "", "--summary-file", summary}, netemRule...)...)
	var rlog strings.Builder
	recv.Stdout, recv.Stderr = &rlog, &rlog
	if err := recv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = recv.Process.Kill(); _ = recv.Wait() }()
	reader := exec.CommandContext(ctx, bin, "ring", "read", "-k", key, "--wait", "30s", "-s", "-o", data)
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the receiver binds; a packet before is lost like any other, and counted by netem only
	out, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", tx, bin, "send", "--connect", nettest.RxAddr.String() + ":7148",
		"--seed", "7", "--bytes", strconv.Itoa(total), "--packet-bytes", strconv.Itoa(pkt), "--rate", "8M"}, netemRule...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("send: %v\n%s", err, out)
	}
	if err := recv.Wait(); err != nil {
		t.Fatalf("recv: %v\n%s", err, rlog.String())
	}
	if err := reader.Wait(); err != nil {
		t.Fatalf("ring read: %v", err)
	}
	stats, _ := exec.Command("ip", "netns", "exec", tx, "tc", "-s", "qdisc", "show", "dev", nettest.TxDev).CombinedOutput()
	t.Logf("send: %s\nnetem: %s", strings.TrimSpace(string(out)), stats)
	checkNetemRun(t, summary, data, pkt, string(stats))
}

// checkNetemRun checks the ring's bytes against the receiver's counts.
func checkNetemRun(t *testing.T, summary, data string, pkt int, stats string) {
	t.Helper()
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	st, err := statusdoc.Parse(b)
	if err != nil || st.Packets == nil {
		t.Fatalf("summary %s: %v", b, err)
	}
	p := *st.Packets
	ring, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	var full, empty uint64
	for i := 0; i*pkt < len(ring); i++ {
		slot := ring[i*pkt : min((i+1)*pkt, len(ring))]
		switch {
		case strings.Trim(string(slot), "\x00") == "":
			empty++
		default:
			if at, ok := pattern.Verify(slot, 7, uint64(i*pkt)); !ok {
				t.Fatalf("slot %d: neither the sender's bytes nor zeros (first wrong at %d)", i, at)
			}
			full++
		}
	}
	t.Logf("ring: %d slots received, %d zero-filled; packets %+v", full, empty, p)
	if p.ZeroFilledBytes != empty*uint64(pkt) || p.ReceivedPackets != full || p.ReceivedBytes != full*uint64(pkt) {
		t.Errorf("counts %+v, want %d received and %d bytes zero-filled, as the ring holds", p, full, empty*uint64(pkt))
	}
	if p.Outcomes() != p.Packets || p.KernelDrops != 0 || p.Malformed+p.Invalid+p.OutOfRange+p.BeforeStart != 0 {
		t.Errorf("counts %+v: every packet once, none dropped by the receiver's kernel, none malformed", p)
	}
	m := regexp.MustCompile(`dropped (\d+)`).FindStringSubmatch(stats)
	if m == nil || m[1] == "0" || p.Duplicate+p.Late == 0 || empty == 0 {
		t.Errorf("netem injected no loss or no duplicate (dropped %v, duplicate+late %d, zero-filled slots %d)", m, p.Duplicate+p.Late, empty)
	}
}
