package stream

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/ingesttest"
	"github.com/ringcap/ringcap/internal/ringtest"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/ingest/assemble"
	"github.com/ringcap/ringcap/pkg/ingest/spead"
)

// A MeerKAT-like SPEAD stream: heaps of 1024 bytes in two 512-byte packets,
// 2 channel groups per timestamp, 4096 samples per heap, a 1 MHz sample rate.
const (
	tsID       = 0x1600
	chanID     = 0x4103
	syncID     = 0x1027
	rateID     = 0x1046
	heapBytes  = 1024
	pktBytes   = 512
	step       = 4096
	sampleRate = 1_000_000
	syncTime   = 1_700_000_000
	t0         = 5*sampleRate + 2*step // 5 s and 8192 samples after the sync
	heaps      = 6                     // timestamps
)

func speadRule() spead.Rule {
	return spead.Rule{TimestampID: tsID, TimestampStep: step, ChannelID: chanID, Channels: spead.Range{First: 0, Step: 512, Count: 2}}
}

// speadPacket is part k of the heap of timestamp index i, channel group g:
// stream bytes ((i*2+g)*heapBytes + k*pktBytes) on of the pattern, with the
// sync time and sample rate items, in SPEAD-64-48.
func speadPacket(ts uint64, i, g, k int) []byte { return speadPacketBits(48, ts, i, g, k) }

// speadPacketBits is speadPacket in the flavour of addrBits heap address
// bits.
func speadPacketBits(addrBits int, ts uint64, i, g, k int) []byte {
	off := uint64((i*2+g)*heapBytes + k*pktBytes)
	return ingesttest.SPEADHeap(addrBits, uint64(i*2+g), heapBytes, uint64(k*pktBytes), ingesttest.Pattern(off, pktBytes),
		ingesttest.Imm(tsID, ts), ingesttest.Imm(chanID, uint64(g*512)),
		ingesttest.Imm(syncID, syncTime), ingesttest.Imm(rateID, sampleRate))
}

// speadStream is every packet of heaps timestamps, in order, in SPEAD-64-48.
func speadStream() [][]byte { return speadStreamBits(48) }

// speadStreamBits is speadStream in the flavour of addrBits heap address
// bits.
func speadStreamBits(addrBits int) [][]byte {
	var out [][]byte
	for i := range heaps {
		for g := range 2 {
			for k := range 2 {
				out = append(out, speadPacketBits(addrBits, t0+uint64(i*step), i, g, k))
			}
		}
	}
	return out
}

// shuffle shuffles packets after the first in groups of n.
func shuffle(packets [][]byte, n int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for at := 1; at < len(packets); at += n {
		g := packets[at:min(at+n, len(packets))]
		rng.Shuffle(len(g), func(i, j int) { g[i], g[j] = g[j], g[i] })
	}
}

// A shuffled SPEAD stream with a dropped packet, a duplicate, a malformed
// packet, a channel outside the rule, a heap before the first, a descriptor
// heap and a stream stop lands in
// place, the gap zero-filled, every packet counted; the sync time is an item
// of the stream, the sample rate the user's.
func TestSPEADStream(t *testing.T) {
	packets := speadStream()
	packets = append(packets[:10], packets[11:]...) // drop i=2, g=1, k=0: stream bytes 5120..5631
	packets = append(packets, packets[5])           // a duplicate of i=1, g=0, k=1
	shuffle(packets, 8, 1)
	packets = append(packets,
		[]byte("not SPEAD at all"),           // malformed
		speadPacket(t0+2*step, 2, 0, 0)[:40], // malformed: truncated
		ingesttest.SPEADHeap(48, 99, heapBytes, 0, make([]byte, pktBytes), ingesttest.Imm(tsID, t0), ingesttest.Imm(chanID, 1024)), // out of range
		speadPacket(t0-step, 0, 0, 0), // before the first heap
		ingesttest.SPEADHeap(48, 100, 64, 0, make([]byte, 64), spead.Item{ID: DescriptorID, Value: 0}), // control: descriptors
		ingesttest.SPEADHeap(48, 101, 0, 0, nil, ingesttest.Imm(StreamControlID, 2)),                   // control: stream stop
	)
	cfg := Config{Protocol: SPEAD, SPEAD: speadRule(), SPEADTime: SPEADTime{SyncTimeID: syncID, SampleRate: sampleRate}, Template: template(t)}
	got := observe(t, cfg, 4, 4096, 3, packets)
	checkData(t, got.data, heaps*2*heapBytes, 0, [][2]int{{5120, 5632}})
	checkHeader(t, got.hdr, map[string]string{
		"HDR_VERSION": "1.0", "SOURCE": "J0437-4715", "HDR_SIZE": "4096", "RINGCAP_PROTOCOL": "spead",
		"UTC_START": "2023-11-14-22:13:25", "RINGCAP_UTC_START_SOURCE": "stream",
		"OBS_OFFSET":       "4096", // 8192 samples at 2048 bytes per 4096 samples
		"BYTES_PER_SECOND": "500000", "RINGCAP_SPEAD_TIMESTAMP": "5008192",
		"RINGCAP_SPEAD_SYNC_TIME": "1700000000", "RINGCAP_SPEAD_SAMPLE_RATE": "1000000",
	})
	want := Counters{Packets: 30, PlacedBytes: 23 * pktBytes, Received: 23, Duplicate: 1, Malformed: 2, OutOfRange: 1, BeforeStart: 1,
		Control: 2, Stops: 1, Newest: t0 + (heaps-1)*step}
	checkCounts(t, got.counts, want, pktBytes, 3)
	if r := got.records[1]; r.Received != 4096-pktBytes || len(r.Missing) != 1 || r.Missing[0].Off != 1024 || r.Missing[0].Len != pktBytes {
		t.Fatalf("record of block 1: %+v", r)
	}
}

// checkCounts checks the counts against want, the assembler's zero-filled
// bytes and blocks.
func checkCounts(t *testing.T, c, want Counters, zero, blocks uint64) {
	t.Helper()
	a := c.Assemble
	c.Assemble = Counters{}.Assemble
	if c != want || a.ZeroFilled != zero || a.Blocks != blocks {
		t.Fatalf("counters %+v (assembler %+v), want %+v, %d bytes zero-filled in %d blocks", c, a, want, zero, blocks)
	}
}

// A SPEAD observation that starts at a given timestamp counts the heaps
// before it and writes none of them; the sync time is the user's, the sample
// rate an item of the stream, in SPEAD-64-40.
func TestSPEADStartAtTimestamp(t *testing.T) {
	packets := speadStreamBits(40)
	cfg := Config{Protocol: SPEAD, SPEAD: speadRule(), SPEADTime: SPEADTime{SyncTime: syncTime, SampleRateID: rateID},
		Start: Start{At: true, Timestamp: t0 + 2*step}}
	got := observe(t, cfg, 4, 4096, 2, packets)
	checkData(t, got.data, (heaps-2)*2*heapBytes, 2*2*heapBytes, nil)
	checkHeader(t, got.hdr, map[string]string{
		"UTC_START": "2023-11-14-22:13:25", "OBS_OFFSET": "8192", "RINGCAP_SPEAD_TIMESTAMP": "5016384",
		"RINGCAP_SPEAD_SAMPLE_RATE": "1000000", "HDR_VERSION": "1.0", "RINGCAP_PROTOCOL": "spead",
	})
	want := Counters{Packets: 24, PlacedBytes: 16 * pktBytes, Received: 16, BeforeStart: 8, Newest: t0 + (heaps-1)*step}
	checkCounts(t, got.counts, want, 0, 2)
}

// The first packet placed must give the header what the configuration
// leaves to the stream, and the header must fit its block: else the pipeline
// fails, with nothing written but a header without the stream's keys.
func TestSPEADHeaderFailures(t *testing.T) {
	rate := SPEADTime{SyncTime: syncTime, SampleRate: sampleRate}
	noSync := Config{Protocol: SPEAD, SPEAD: speadRule(), SPEADTime: SPEADTime{SyncTimeID: 0x7777, SampleRate: sampleRate}}
	failFirst(t, noSync, "no immediate item 0x7777")
	tmpl, err := dada.ParseHeader([]byte("COMMENT " + strings.Repeat("x", 4000) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	failFirst(t, Config{Protocol: SPEAD, SPEAD: speadRule(), SPEADTime: rate, Template: tmpl}, "more than the 4096-byte header block")
}

// failFirst runs a SPEAD stream through a pipeline of cfg that fails at the
// first packet placed with an error saying want.
func failFirst(t *testing.T, cfg Config, want string) {
	t.Helper()
	h := ringtest.New(t, testKeys, 4, 4096)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := h.LockWrite(ctx, dada.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	cfg.HeaderBytes = h.Header.BufSize()
	p, err := New(ctx, cfg, assemble.ForDada(w, 2))
	if err != nil {
		t.Fatal(err)
	}
	err = p.Run(ctx, memSource(speadStream()))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("run: %v, want an error saying %q", err, want)
	}
	if err2 := p.Handle(speadStream()[1]); !errors.Is(err2, err) {
		t.Fatalf("handle after the failure: %v", err2)
	}
	if c := p.Snapshot(); c.Packets != 1 || c.Outcomes() != 0 {
		t.Fatalf("counters %+v: the failed packet has no outcome", c)
	}
	_ = p.Close() // the template too large for the header block fails again here
}

// Placed by heap counter, every heap has a "timestamp": a stream-stop heap
// is still control, counted as a stop and never written, and a stream-start
// heap is control but no stop.
func TestSPEADStopHeapByHeapCounter(t *testing.T) {
	var packets [][]byte
	for i := range 4 {
		packets = append(packets, ingesttest.SPEADHeap(48, uint64(10+i), heapBytes, 0, ingesttest.Pattern(uint64(i*heapBytes), heapBytes)))
	}
	packets = append(packets,
		ingesttest.SPEADHeap(48, 14, 0, 0, nil, ingesttest.Imm(StreamControlID, 0)), // stream start
		ingesttest.SPEADHeap(48, 15, 0, 0, nil, ingesttest.Imm(StreamControlID, StreamStop)))
	cfg := Config{Protocol: SPEAD, SPEAD: spead.Rule{TimestampID: spead.HeapCounterID, TimestampStep: 1},
		SPEADTime: SPEADTime{SyncTime: syncTime, SampleRate: sampleRate}, Template: template(t)}
	got := observe(t, cfg, 4, 2048, 2, packets)
	checkData(t, got.data, 4*heapBytes, 0, nil)
	want := Counters{Packets: 6, PlacedBytes: 4 * heapBytes, Received: 4, Control: 2, Stops: 1, Newest: 13}
	checkCounts(t, got.counts, want, 0, 2)
}

// spead2's senders put the item descriptors ahead of the data in their first
// heap: that heap's data lands in the ring as every other heap's, the
// descriptor bytes do not, and a packet of descriptors only is control.
func TestSPEADFirstHeapLedByDescriptors(t *testing.T) {
	const lead, pkt = 96, 400 // descriptor bytes; packet payload size
	whole := append(make([]byte, lead), ingesttest.Pattern(0, heapBytes)...)
	layout := []spead.Item{{ID: DescriptorID, Value: 0}, {ID: DescriptorID, Value: 48}, {ID: 0x1000, Value: lead}}
	var packets [][]byte
	for off := 0; off < len(whole); off += pkt {
		var items []spead.Item
		if off == 0 {
			items = layout
		}
		end := min(off+pkt, len(whole))
		packets = append(packets, ingesttest.SPEADHeap(48, 10, heapBytes+lead, uint64(off), whole[off:end], items...))
	}
	packets = append(packets, ingesttest.SPEADHeap(48, 10, heapBytes+lead, 0, whole[:lead], layout...)) // the descriptors again: only those
	for i := 1; i < 4; i++ {
		packets = append(packets, ingesttest.SPEADHeap(48, uint64(10+i), heapBytes, 0, ingesttest.Pattern(uint64(i*heapBytes), heapBytes)))
	}
	cfg := Config{Protocol: SPEAD, SPEAD: spead.Rule{TimestampID: spead.HeapCounterID, TimestampStep: 1, HeapSize: heapBytes},
		SPEADTime: SPEADTime{SyncTime: syncTime, SampleRate: sampleRate}, Template: template(t)}
	got := observe(t, cfg, 4, 2048, 2, packets)
	checkData(t, got.data, 4*heapBytes, 0, nil)
	// 3 packets of heap 10 carry data (the first also 96 bytes of descriptors), 1 only descriptors.
	want := Counters{Packets: 7, PlacedBytes: 4 * heapBytes, Received: 6, Control: 1, Newest: 13}
	checkCounts(t, got.counts, want, 0, 2)
}
