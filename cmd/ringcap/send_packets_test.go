package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/pattern"
)

// sendRule is a SPEAD rule of two channel groups, heaps of 1024 bytes in
// packets of 256, as both send and recv take it.
var sendRule = []string{"--protocol", "spead", "--spead-timestamp-id", "0x1600", "--spead-timestamp-step", "2048",
	"--spead-channel-id", "0x4103", "--spead-channels", "0:256:2", "--spead-heap-bytes", "1024",
	"--spead-sync-time", "1700000000", "--spead-sample-rate", "8192"}

// sendRuleItems is sendRule with the sync time and sample rate taken from
// the stream's items, as the SPEAD sample and the e2e step give them.
var sendRuleItems = append(append([]string{}, sendRule[:len(sendRule)-4]...), "--spead-sync-time-id", "0x1027", "--spead-sample-rate-id", "0x1046")

// packetSend runs `ringcap send` in this process to the receiver's first
// port and returns its summary line.
func packetSend(t *testing.T, r *packetRun, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all := append([]string{"send", "--connect", "127.0.0.1:" + strconv.Itoa(r.udpPorts[0]), "--seed", "7"}, args...)
	out, errs, err := ringcap(ctx, all...)
	if err != nil {
		t.Fatalf("send: %v\n%s", err, errs)
	}
	return strings.TrimSpace(out)
}

// `ringcap send --protocol spead` to `ringcap recv --protocol spead` on
// loopback, read back by `ring read --verify`: every byte in place, the
// counters exact.
func TestSendSPEADLoopbackVerified(t *testing.T) {
	const total = 64 << 10
	r := startPacketRecv(t, packetSetup{}, append(sendRule, "--stop-bytes", strconv.Itoa(total))...)
	reads := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, errs, err := ringcap(ctx, "ring", "read", "-k", r.key, "--verify", "7", "-s", "--wait", "10s")
		reads <- fmt.Sprint(errs, err)
	}()
	r.waitStatus(t, "state Listening", func(s *statusdoc.Status) bool { return s.State == statusdoc.StateListening })
	sum := packetSend(t, r, append(sendRule, "--bytes", "64K", "--packet-bytes", "256", "--rate", "4M/s")...)
	if want := "send: bytes=65536 packets=256 payload_bytes=65536 dropped_packets=0 dropped_bytes=0 "; !strings.HasPrefix(sum, want) || !strings.HasSuffix(sum, " protocol=spead complete=true") {
		t.Fatalf("summary %q, want %q...complete=true", sum, want)
	}
	final := r.wait(t)
	checkPackets(t, final.Packets, statusdoc.Packets{Protocol: "spead", Packets: 256, ReceivedPackets: 256, ReceivedBytes: total, Blocks: 16})
	if got := <-reads; !strings.Contains(got, fmt.Sprintf("read: bytes=%d blocks=16 observations=1 mismatches=0", total)) {
		t.Fatalf("ring read --verify: %s", got)
	}
}

// With --drop-every the dropped packets' bytes are zero-filled and every
// other byte is the pattern's; the counters say exactly what was dropped.
// The sync time and sample rate come from the stream's items.
func TestSendSPEADDropEvery(t *testing.T) {
	sendRule := sendRuleItems
	const total, pkt, every = 32 << 10, 256, 7
	sent := total/pkt - total/pkt/every // 128 packets, 18 dropped (the last, 128, is not)
	r := startPacketRecv(t, packetSetup{}, append(sendRule, "--stop-bytes", strconv.Itoa(sent*pkt))...)
	read := startReader(r.key)
	r.waitStatus(t, "state Listening", func(s *statusdoc.Status) bool { return s.State == statusdoc.StateListening })
	sum := packetSend(t, r, append(sendRule, "--bytes", strconv.Itoa(total), "--packet-bytes", strconv.Itoa(pkt), "--drop-every", strconv.Itoa(every), "--rate", "4M")...)
	if want := fmt.Sprintf("send: bytes=%d packets=%d payload_bytes=%d dropped_packets=%d dropped_bytes=%d ", total, sent, sent*pkt, total/pkt-sent, total-sent*pkt); !strings.HasPrefix(sum, want) {
		t.Fatalf("summary %q, want %q...", sum, want)
	}
	final := r.wait(t)
	checkPackets(t, final.Packets, statusdoc.Packets{Protocol: "spead", Packets: uint64(sent), ReceivedPackets: uint64(sent), ReceivedBytes: uint64(sent * pkt),
		ZeroFilledBytes: uint64(total - sent*pkt), Blocks: total / 4096})
	got := <-read
	if got.err != nil {
		t.Fatal(got.err)
	}
	if len(got.data) != total {
		t.Fatalf("read %d bytes, want %d", len(got.data), total)
	}
	checkHeader(t, got.hdr, map[string]string{"OBS_OFFSET": "0", "RINGCAP_SPEAD_SAMPLE_RATE": "1000000000", "RINGCAP_SPEAD_TIMESTAMP": "1000000000"})
	want := make([]byte, pkt)
	for i := 0; i < total/pkt; i++ {
		b := got.data[i*pkt : (i+1)*pkt]
		if (i+1)%every == 0 {
			if strings.Trim(string(b), "\x00") != "" {
				t.Fatalf("dropped packet %d not zero-filled", i)
			}
			continue
		}
		pattern.Fill(want, 7, uint64(i*pkt))
		if string(b) != string(want) {
			t.Fatalf("packet %d: bytes differ from the pattern", i)
		}
	}
}

// `ringcap send --protocol vdif` with two threads: every byte verified.
func TestSendVDIFLoopbackVerified(t *testing.T) {
	const total = 32 << 10
	rule := []string{"--protocol", "vdif", "--vdif-frames-per-second", "4", "--vdif-threads", "3,1", "--vdif-payload-bytes", "512"}
	r := startPacketRecv(t, packetSetup{}, append(rule, "--stop-bytes", strconv.Itoa(total))...)
	read := startReader(r.key)
	r.waitStatus(t, "state Listening", func(s *statusdoc.Status) bool { return s.State == statusdoc.StateListening })
	sum := packetSend(t, r, append(rule, "--bytes", strconv.Itoa(total), "--rate", "4M")...)
	if !strings.HasPrefix(sum, "send: bytes=32768 packets=64 payload_bytes=32768 dropped_packets=0 ") {
		t.Fatalf("summary %q", sum)
	}
	final := r.wait(t)
	checkPackets(t, final.Packets, statusdoc.Packets{Protocol: "vdif", Packets: 64, ReceivedPackets: 64, ReceivedBytes: total, Blocks: 8})
	got := <-read
	if got.err != nil {
		t.Fatal(got.err)
	}
	if at, ok := pattern.Verify(got.data, 7, 0); !ok || len(got.data) != total {
		t.Fatalf("read %d bytes, first wrong at %d", len(got.data), at)
	}
}

// Flags of another protocol and impossible runs are refused before sending.
func TestSendPacketFlagsRejected(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--protocol", "udp"}, `--protocol "udp"`},
		{[]string{"--drop-every", "3"}, "--drop-every: not for --protocol rdma"},
		{[]string{"--protocol", "vdif", "--spead-heap-bytes", "1K"}, "--spead-heap-bytes: not for --protocol vdif"},
		{append(append([]string{}, sendRule...), "--drop-every", "1", "--bytes", "1K"), "--drop-every 1"},
		{append(append([]string{}, sendRule...), "--packet-bytes", "2K", "--bytes", "1K"), "more than a heap"},
		{append(append([]string{}, sendRule...), "--file", "x", "--bytes", "1K"), "no --file"},
		{sendRule, "needs --bytes"},
	} {
		_, errs, err := ringcap(context.Background(), append([]string{"send", "--connect", "127.0.0.1:9"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error()+errs, tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}
