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

// Without a byte count to stop at, the SPEAD sender's stream-stop heap ends
// the observation, its last packet lost too: the receiver cannot wait for
// bytes that never come. The stop heap is control; the gaps are zero-filled
// and counted exactly, and the observation says why it ended.
func TestSendSPEADStopHeapEndsLossyStream(t *testing.T) {
	const total, pkt, every = 32 << 10, 256, 8
	sent := total/pkt - total/pkt/every // 112 of 128: the last one dropped
	r := startPacketRecv(t, packetSetup{}, sendRule...)
	read := startReader(r.key)
	r.waitStatus(t, "state Listening", func(s *statusdoc.Status) bool { return s.State == statusdoc.StateListening })
	sum := packetSend(t, r, append(sendRule, "--bytes", strconv.Itoa(total), "--packet-bytes", strconv.Itoa(pkt), "--drop-every", strconv.Itoa(every), "--rate", "4M")...)
	if want := fmt.Sprintf("dropped_packets=%d dropped_bytes=%d stop_heaps=1 ", total/pkt-sent, total-sent*pkt); !strings.Contains(sum, want) {
		t.Fatalf("summary %q, want %q", sum, want)
	}
	final := r.wait(t)
	// The stream ends at the last byte received: 127 packets' worth, 15 gaps.
	end := (total/pkt - 1) * pkt
	checkPackets(t, final.Packets, statusdoc.Packets{Protocol: "spead", Packets: uint64(sent) + 1, ReceivedPackets: uint64(sent), ReceivedBytes: uint64(sent * pkt),
		Control: 1, ZeroFilledBytes: uint64(end - sent*pkt), Blocks: uint64((end + 4095) / 4096)})
	if o := final.LastObservation; o == nil || o.Complete || !strings.Contains(o.Message, "ended: the sender's stream-stop heap") {
		t.Fatalf("last observation %+v, want incomplete, ended by the stop heap", o)
	}
	got := <-read
	if got.err != nil || len(got.data) != end {
		t.Fatalf("read %d bytes (%v), want %d", len(got.data), got.err, end)
	}
}

// A VDIF stream has no end marker: --udp-idle-timeout ends the observation
// once the frames stop, the lost ones zero-filled.
func TestRecvVDIFIdleTimeoutEndsStream(t *testing.T) {
	const total, every = 32 << 10, 5
	rule := []string{"--protocol", "vdif", "--vdif-frames-per-second", "4", "--vdif-threads", "3,1", "--vdif-payload-bytes", "512"}
	r := startPacketRecv(t, packetSetup{}, append(rule, "--udp-idle-timeout", "300ms")...)
	read := startReader(r.key)
	r.waitStatus(t, "state Listening", func(s *statusdoc.Status) bool { return s.State == statusdoc.StateListening })
	packetSend(t, r, append(rule, "--bytes", strconv.Itoa(total), "--rate", "4M", "--drop-every", strconv.Itoa(every))...)
	final := r.wait(t)
	const frames, lost = total / 512, total / 512 / every // 64 frames, 12 lost, the last (64) not
	checkPackets(t, final.Packets, statusdoc.Packets{Protocol: "vdif", Packets: frames - lost, ReceivedPackets: frames - lost, ReceivedBytes: (frames - lost) * 512,
		ZeroFilledBytes: lost * 512, Blocks: 8})
	if o := final.LastObservation; o == nil || !strings.Contains(o.Message, "ended: no packet for the idle timeout") {
		t.Fatalf("last observation %+v, want ended by the idle timeout", o)
	}
	got := <-read
	if got.err != nil || len(got.data) != total {
		t.Fatalf("read %d bytes (%v), want %d", len(got.data), got.err, total)
	}
	for i := 0; i < frames; i++ {
		b := got.data[i*512 : (i+1)*512]
		if (i+1)%every == 0 {
			if strings.Trim(string(b), "\x00") != "" {
				t.Fatalf("lost frame %d not zero-filled", i)
			}
		} else if at, ok := pattern.Verify(b, 7, uint64(i*512)); !ok {
			t.Fatalf("frame %d: wrong at %d", i, at)
		}
	}
}

// Packets from a sender outside --allowed-senders are refused before the
// pipeline: counted in packets.refused (and its metric), none placed, no
// observation begun; the run ends at its stop duration.
func TestRecvPacketsRefusesSendersOutsideAllowlist(t *testing.T) {
	r := startPacketRecv(t, packetSetup{}, append(sendRule, "--allowed-senders", "198.18.0.0/24", "--stop-duration", "3s")...)
	r.waitStatus(t, "state Listening", func(s *statusdoc.Status) bool { return s.State == statusdoc.StateListening })
	packetSend(t, r, append(sendRule, "--bytes", "8K", "--packet-bytes", "256", "--rate", "4M")...)
	st := r.waitStatus(t, "33 packets refused", func(s *statusdoc.Status) bool { return s.Packets != nil && s.Packets.Refused == 33 })
	if p := st.Packets; p.Packets != 0 || p.ReceivedPackets != 0 {
		t.Fatalf("packets %+v: refused ones reached the pipeline", p)
	}
	checkMetrics(t, r.metrics, "ringcap_packet_refused_total 33", `ringcap_packets_total{outcome="received"} 0`)
	r.wait(t)
}
