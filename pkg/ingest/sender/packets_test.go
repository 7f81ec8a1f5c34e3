package sender

import (
	"slices"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/ingest/spead"
	"github.com/ringcap/ringcap/pkg/ingest/stream"
	"github.com/ringcap/ringcap/pkg/ingest/vdif"
	"github.com/ringcap/ringcap/pkg/pattern"
)

// Every SPEAD packet, decoded and placed by the receiver's placer, carries
// the pattern at OBS_OFFSET + its placement, also from a start timestamp
// that is not a whole second, over channel groups and a partial last heap.
func TestSPEADPacketsPlaceThePattern(t *testing.T) {
	rule := spead.Rule{TimestampID: 0x1600, TimestampStep: 64, ChannelID: 0x4103, Channels: spead.Range{First: 8, Step: 2, Count: 3}, HeapSize: 96}
	for _, start := range []stream.Start{{}, {At: true, Timestamp: 5*1000 + 128}} {
		c := Config{Target: "x:1", Bytes: 1000, Seed: 3, PacketBytes: 40, SampleRate: 1000,
			Stream: stream.Config{Protocol: stream.SPEAD, SPEAD: rule, SPEADTime: stream.SPEADTime{SyncTimeID: 0x1027, SampleRateID: 0x1046}, Start: start}}
		s := newSPEAD(c)
		wantObs := uint64(0)
		if start.At {
			wantObs = 128 * 3 * 96 / 64
		}
		if s.obs != wantObs {
			t.Fatalf("start %+v: OBS_OFFSET %d, want %d", start, s.obs, wantObs)
		}
		pl, err := spead.NewPlacer(rule)
		if err != nil {
			t.Fatal(err)
		}
		var covered uint64
		var p spead.Packet
		for i := range s.count() {
			b, n := s.packet(i)
			if err := spead.Decode(b, &p); err != nil {
				t.Fatalf("packet %d: %v", i, err)
			}
			at, err := pl.Place(&p)
			if err != nil || at.Offset != covered || at.Length != n {
				t.Fatalf("packet %d placed at %+v (%v), want offset %d length %d", i, at, err, covered, n)
			}
			if _, ok := pattern.Verify(p.Payload, 3, s.obs+at.Offset); !ok {
				t.Fatalf("packet %d: payload is not the pattern at %d", i, s.obs+at.Offset)
			}
			if v, _ := p.Immediate(0x1046); v != 1000 {
				t.Fatalf("packet %d: sample rate item %d", i, v)
			}
			covered += n
		}
		if covered != c.Bytes {
			t.Fatalf("packets cover %d bytes, want %d", covered, c.Bytes)
		}
	}
}

// VDIF frames placed by the receiver's placer carry the pattern in order.
func TestVDIFFramesPlaceThePattern(t *testing.T) {
	rule := vdif.Rule{FramesPerSecond: 3, PayloadBytes: 64, ThreadIDs: []uint16{5, 2}}
	c := Config{Target: "x:1", Bytes: 64 * 20, Seed: 9, Now: func() time.Time { return time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC) },
		Stream: stream.Config{Protocol: stream.VDIF, VDIF: rule}}
	s := newVDIF(c)
	pl, err := vdif.NewPlacer(rule)
	if err != nil {
		t.Fatal(err)
	}
	var f vdif.Frame
	for i := range s.count() {
		b, _ := s.packet(i)
		if err := vdif.Decode(b, &f); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		at, err := pl.Place(&f)
		if err != nil || at.Offset != i*64 {
			t.Fatalf("frame %d placed at %+v (%v), want %d", i, at, err, i*64)
		}
		if _, ok := pattern.Verify(f.Data, 9, at.Offset); !ok {
			t.Fatalf("frame %d: data is not the pattern", i)
		}
	}
	if first, _ := pl.First(); !first.Equal(time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)) {
		t.Fatalf("first second %v", first)
	}
}

// Reordering sends each group last first, the short last group too, and
// every packet exactly once.
func TestReordered(t *testing.T) {
	var got []uint64
	for i := range uint64(8) {
		got = append(got, reordered(i, 8, 3))
	}
	if want := []uint64{2, 1, 0, 5, 4, 3, 7, 6}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if reordered(4, 8, 0) != 4 || reordered(4, 8, 1) != 4 {
		t.Fatal("no reordering below 2")
	}
}
