package spead_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ringcap/ringcap/internal/ingesttest"
	"github.com/ringcap/ringcap/pkg/ingest/spead"
)

// A MeerKAT-style stream: a timestamp item (ADC sample count) stepping by
// 2^21 per heap, a frequency item naming the first channel of each of 4
// groups of 256 channels, 4096-byte heaps sent as two 2048-byte packets.
var meerkat = spead.Rule{TimestampID: 0x1600, TimestampStep: 1 << 21, ChannelID: 0x4103, Channels: spead.Range{First: 512, Step: 256, Count: 4}}

const (
	t0       = 1 << 40 // the first timestamp
	heapSize = 4096
	pktBytes = 2048
)

// stream returns the packets of heaps timestamps x 4 groups, in order.
func stream(heaps int) [][]byte {
	var out [][]byte
	for i := range heaps {
		for g := range uint64(4) {
			for off := uint64(0); off < heapSize; off += pktBytes {
				payload := make([]byte, pktBytes)
				out = append(out, ingesttest.SPEADHeap(48, uint64(len(out)), heapSize, off, payload,
					ingesttest.Imm(0x1600, t0+uint64(i)<<21), ingesttest.Imm(0x4103, 512+g*256)))
			}
		}
	}
	return out
}

func place(t *testing.T, pl *spead.Placer, b []byte) (spead.Placement, error) {
	t.Helper()
	var p spead.Packet
	if err := spead.Decode(b, &p); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return pl.Place(&p)
}

func TestPlaceFormula(t *testing.T) {
	t.Parallel()
	pl, err := spead.NewPlacer(meerkat)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ts, ch, off uint64
		want        uint64
	}{
		{t0, 512, 0, 0}, // the first packet sets the first timestamp
		{t0, 512, 2048, 2048},
		{t0, 768, 0, 4096},
		{t0, 1280, 2048, 3*4096 + 2048},
		{t0 + 1<<21, 512, 0, 4 * 4096},
		{t0 + 5<<21, 1024, 2048, (5*4+2)*4096 + 2048},
	} {
		pm, err := place(t, pl, ingesttest.SPEADHeap(48, 9, heapSize, c.off, make([]byte, pktBytes), ingesttest.Imm(0x1600, c.ts), ingesttest.Imm(0x4103, c.ch)))
		if err != nil || pm.Offset != c.want || pm.Length != pktBytes || pm.Heap != c.want/heapSize {
			t.Errorf("timestamp %d channel %d offset %d: %+v, %v; want offset %d", c.ts, c.ch, c.off, pm, err, c.want)
		}
	}
	if first, ok := pl.First(); !ok || first != t0 {
		t.Errorf("first timestamp %d, %v", first, ok)
	}
}

// Whatever order the packets of a stream arrive in, they tile the stream:
// every byte once, no gap, no overlap.
func TestPlaceTilesTheStream(t *testing.T) {
	t.Parallel()
	pkts := stream(6)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(pkts), func(i, j int) { pkts[i], pkts[j] = pkts[j], pkts[i] })
	pl, err := spead.NewPlacer(meerkat)
	if err != nil {
		t.Fatal(err)
	}
	pl.Start(t0)
	covered := make([]bool, 6*4*heapSize/pktBytes)
	for _, b := range pkts {
		pm, err := place(t, pl, b)
		if err != nil {
			t.Fatal(err)
		}
		if pm.Offset%pktBytes != 0 || pm.Length != pktBytes || covered[pm.Offset/pktBytes] {
			t.Fatalf("placement %+v overlaps or is not packet-aligned", pm)
		}
		covered[pm.Offset/pktBytes] = true
	}
	for i, c := range covered {
		if !c {
			t.Errorf("stream bytes [%d, %d) not covered", i*pktBytes, (i+1)*pktBytes)
		}
	}
}

func TestPlaceRejects(t *testing.T) {
	t.Parallel()
	pkt := func(ts, ch uint64, extra ...spead.Item) []byte {
		return ingesttest.SPEADHeap(48, 1, heapSize, 0, make([]byte, pktBytes), append([]spead.Item{ingesttest.Imm(0x1600, ts), ingesttest.Imm(0x4103, ch)}, extra...)...)
	}
	for _, c := range []struct {
		name string
		b    []byte
		want error
		kind error
	}{
		{"before the first timestamp", pkt(t0-1<<21, 512), spead.ReasonBeforeFirst, spead.ErrOutOfRange},
		{"off the step grid", pkt(t0+1, 512), spead.ReasonOffGrid, spead.ErrMalformed},
		{"channel below the range", pkt(t0, 256), spead.ReasonChannel, spead.ErrOutOfRange},
		{"channel past the range", pkt(t0, 512+4*256), spead.ReasonChannel, spead.ErrOutOfRange},
		{"channel off its step", pkt(t0, 513), spead.ReasonChannel, spead.ErrOutOfRange},
		{"no timestamp", ingesttest.SPEADHeap(48, 1, heapSize, 0, nil, ingesttest.Imm(0x4103, 512)), spead.ReasonNoTimestamp, spead.ErrMalformed},
		{"addressed timestamp", ingesttest.SPEADHeap(48, 1, heapSize, 0, nil, spead.Item{ID: 0x1600}, ingesttest.Imm(0x4103, 512)), spead.ReasonNoTimestamp, spead.ErrMalformed},
		{"no channel", ingesttest.SPEADHeap(48, 1, heapSize, 0, nil, ingesttest.Imm(0x1600, t0)), spead.ReasonNoChannel, spead.ErrMalformed},
		{"another heap size", ingesttest.SPEADHeap(48, 1, 2*heapSize, 0, nil, ingesttest.Imm(0x1600, t0), ingesttest.Imm(0x4103, 512)), spead.ReasonHeapSize, spead.ErrMalformed},
		{"past the rule's heap", ingesttest.SPEAD(48, []spead.Item{ingesttest.Imm(spead.HeapCounterID, 1), ingesttest.Imm(spead.HeapOffsetID, heapSize), ingesttest.Imm(spead.PayloadLengthID, 1), ingesttest.Imm(0x1600, t0), ingesttest.Imm(0x4103, 512)}, []byte{0}), spead.ReasonPastHeap, spead.ErrMalformed},
	} {
		pl, err := spead.NewPlacer(meerkat)
		if err != nil {
			t.Fatal(err)
		}
		pl.Start(t0)
		if _, err := place(t, pl, pkt(t0, 512)); err != nil {
			t.Fatalf("%s: the first packet: %v", c.name, err)
		}
		_, err = place(t, pl, c.b)
		if !errors.Is(err, c.want) || !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// Heap 2^23 of 2^40-byte heaps starts at byte 2^63; heap 2^30 is past 2^64.
func TestPlaceOverflow(t *testing.T) {
	t.Parallel()
	pl, err := spead.NewPlacer(spead.Rule{TimestampID: 0x1600, TimestampStep: 1})
	if err != nil {
		t.Fatal(err)
	}
	pl.Start(0)
	if _, err := place(t, pl, ingesttest.SPEADHeap(48, 1, 1<<40, 0, nil, ingesttest.Imm(0x1600, 1<<23))); err != nil {
		t.Errorf("heap 2^23: %v", err)
	}
	if _, err := place(t, pl, ingesttest.SPEADHeap(48, 1, 1<<40, 0, nil, ingesttest.Imm(0x1600, 1<<30))); !errors.Is(err, spead.ReasonOverflow) || !errors.Is(err, spead.ErrOutOfRange) {
		t.Errorf("heap 2^30: %v, want %v", err, spead.ReasonOverflow)
	}
}

// The heap size comes from the rule, or from the first packet that has one;
// a packet without one needs it known.
func TestPlaceHeapSize(t *testing.T) {
	t.Parallel()
	noSize := ingesttest.SPEAD(48, []spead.Item{ingesttest.Imm(spead.HeapCounterID, 1), ingesttest.Imm(spead.HeapOffsetID, 100), ingesttest.Imm(spead.PayloadLengthID, 4), ingesttest.Imm(0x1600, 0)}, []byte("abcd"))
	pl, err := spead.NewPlacer(spead.Rule{TimestampID: 0x1600, TimestampStep: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := place(t, pl, noSize); !errors.Is(err, spead.ReasonNoHeapSize) {
		t.Errorf("no heap size anywhere: %v", err)
	}
	if _, err := place(t, pl, ingesttest.SPEADHeap(48, 1, 1000, 0, []byte("x"), ingesttest.Imm(0x1600, 0))); err != nil {
		t.Fatal(err)
	}
	if pl.HeapSize() != 1000 {
		t.Errorf("learned heap size %d, want 1000", pl.HeapSize())
	}
	pm, err := place(t, pl, noSize)
	if err != nil || pm.Offset != 100 {
		t.Errorf("a packet without heap size after learning it: %+v, %v", pm, err)
	}
	ruled, _ := spead.NewPlacer(spead.Rule{TimestampID: 0x1600, TimestampStep: 10, HeapSize: 200})
	if pm, err := place(t, ruled, noSize); err != nil || pm.Offset != 100 {
		t.Errorf("a packet without heap size, the rule's size: %+v, %v", pm, err)
	}
}

// The heap counter can be the timestamp: heaps stepping by the number of
// senders interleaving their counters.
func TestPlaceByHeapCounter(t *testing.T) {
	t.Parallel()
	pl, err := spead.NewPlacer(spead.Rule{TimestampID: spead.HeapCounterID, TimestampStep: 2, HeapSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	for cnt, want := range map[uint64]uint64{1: 0, 5: 128, 7: 192} {
		pl.Start(1)
		pm, err := place(t, pl, ingesttest.SPEADHeap(40, cnt, 64, 0, make([]byte, 64)))
		if err != nil || pm.Offset != want {
			t.Errorf("heap %d: %+v, %v; want offset %d", cnt, pm, err, want)
		}
	}
}

func TestRuleValidate(t *testing.T) {
	t.Parallel()
	if err := meerkat.Validate(); err != nil {
		t.Errorf("the MeerKAT rule: %v", err)
	}
	for name, r := range map[string]spead.Rule{
		"no timestamp":           {TimestampStep: 1},
		"no step":                {TimestampID: 0x1600},
		"empty channel range":    {TimestampID: 0x1600, TimestampStep: 1, ChannelID: 0x4103},
		"channel step 0":         {TimestampID: 0x1600, TimestampStep: 1, ChannelID: 0x4103, Channels: spead.Range{Count: 2}},
		"timestamp is channel":   {TimestampID: 0x1600, TimestampStep: 1, ChannelID: 0x1600, Channels: spead.Range{Count: 1}},
		"channel standard item":  {TimestampID: 0x1600, TimestampStep: 1, ChannelID: spead.HeapOffsetID, Channels: spead.Range{Count: 1}},
		"timestamp is heap size": {TimestampID: spead.HeapSizeID, TimestampStep: 1},
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
		if _, err := spead.NewPlacer(r); err == nil {
			t.Errorf("%s: NewPlacer accepted it", name)
		}
	}
}

// Placing allocates nothing, on placed packets and rejected ones.
func TestPlaceAllocatesNothing(t *testing.T) {
	pl, err := spead.NewPlacer(meerkat)
	if err != nil {
		t.Fatal(err)
	}
	var good, bad spead.Packet
	if err := spead.Decode(stream(1)[3], &good); err != nil {
		t.Fatal(err)
	}
	if err := spead.Decode(ingesttest.SPEADHeap(48, 1, heapSize, 0, nil, ingesttest.Imm(0x1600, t0), ingesttest.Imm(0x4103, 1)), &bad); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, err = pl.Place(&good) }); n != 0 || err != nil {
		t.Errorf("Place: %v allocations, %v", n, err)
	}
	if n := testing.AllocsPerRun(100, func() { _, err = pl.Place(&bad) }); n != 0 || err == nil {
		t.Errorf("Place of a rejected packet: %v allocations, %v", n, err)
	}
}

// A heap that carries item descriptors ahead of its data (spead2's senders put
// them in their first heap): the data is placed as any heap's, the descriptor
// bytes are not, a packet of descriptors only says so; a larger heap whose
// item pointers do not lay it out so, or that no packet has shown so, is of
// another size.
func TestPlaceHeapLedByDescriptors(t *testing.T) {
	t.Parallel()
	const heap, lead = 64, 40
	pl, err := spead.NewPlacer(spead.Rule{TimestampID: spead.HeapCounterID, TimestampStep: 1, HeapSize: heap})
	if err != nil {
		t.Fatal(err)
	}
	pl.Start(1)
	layout := []spead.Item{{ID: spead.DescriptorID, Value: 0}, {ID: spead.DescriptorID, Value: 20}, {ID: 0x1000, Value: lead}}
	// heap 2, in three packets: [0, 30) descriptors only, [30, 60) both, [60, 104) data.
	first := ingesttest.SPEADHeap(48, 2, heap+lead, 0, make([]byte, 30), layout...)
	if _, err := place(t, pl, first); !errors.Is(err, spead.ErrDescriptorsOnly) {
		t.Errorf("a packet of descriptors only: %v, want ErrDescriptorsOnly", err)
	}
	pm, err := place(t, pl, ingesttest.SPEADHeap(48, 2, heap+lead, 30, make([]byte, 30)))
	if want := (spead.Placement{Offset: heap, Length: 20, Heap: 1, Skip: 10}); err != nil || pm != want {
		t.Errorf("descriptors then data: %+v, %v; want %+v", pm, err, want)
	}
	pm, err = place(t, pl, ingesttest.SPEADHeap(48, 2, heap+lead, 60, make([]byte, 44)))
	if want := (spead.Placement{Offset: heap + 20, Length: 44, Heap: 1}); err != nil || pm != want {
		t.Errorf("data: %+v, %v; want %+v", pm, err, want)
	}
	if pm, err := place(t, pl, ingesttest.SPEADHeap(48, 3, heap, 0, make([]byte, heap))); err != nil || pm.Offset != 2*heap || pm.Skip != 0 {
		t.Errorf("the next heap, of the rule's size: %+v, %v", pm, err)
	}
	for name, pkt := range map[string][]byte{
		"no packet showed the layout": ingesttest.SPEADHeap(48, 4, heap+lead, 50, make([]byte, 10)),
		"data before the descriptors": ingesttest.SPEADHeap(48, 5, heap+lead, 0, make([]byte, 10), spead.Item{ID: 0x1000, Value: 0}, spead.Item{ID: spead.DescriptorID, Value: heap}),
		"no descriptors":              ingesttest.SPEADHeap(48, 6, heap+lead, 0, make([]byte, 10), spead.Item{ID: 0x1001, Value: 0}, spead.Item{ID: 0x1000, Value: lead}),
		"data not at the heap's end":  ingesttest.SPEADHeap(48, 7, heap+lead, 0, make([]byte, 10), spead.Item{ID: spead.DescriptorID, Value: 0}, spead.Item{ID: 0x1000, Value: lead - 8}),
		"another heap's layout":       ingesttest.SPEADHeap(48, 2, heap+lead+8, 70, make([]byte, 10)),
	} {
		if _, err := place(t, pl, pkt); !errors.Is(err, spead.ReasonHeapSize) {
			t.Errorf("%s: %v, want the heap size refused", name, err)
		}
	}
}
