package spead_test

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/ringcap/ringcap/internal/ingesttest"
	"github.com/ringcap/ringcap/pkg/ingest/spead"
)

// FuzzDecode: Decode never panics, accepts only what it can account for,
// and its payload lies inside the packet.
func FuzzDecode(f *testing.F) {
	f.Add(ingesttest.SPEADHeap(48, 1, 8, 0, []byte("abcdefgh"), ingesttest.Imm(0x1600, 3)))
	f.Add(ingesttest.SPEADHeap(40, 1, 16, 8, []byte("abcdefgh"), spead.Item{ID: 0x4103, Value: 2}))
	f.Add(ingesttest.SPEAD(48, []spead.Item{ingesttest.Imm(spead.HeapCounterID, 1), ingesttest.Imm(spead.HeapOffsetID, 0), ingesttest.Imm(spead.PayloadLengthID, 0)}, nil))
	f.Add([]byte{spead.Magic, spead.Version, 2, 6, 0, 0, 0xff, 0xff})
	pl, err := spead.NewPlacer(spead.Rule{TimestampID: 0x1600, TimestampStep: 4, HeapSize: 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p spead.Packet
		err := spead.Decode(b, &p)
		if err != nil {
			if !errors.Is(err, spead.ErrMalformed) {
				t.Fatalf("an error that is not ErrMalformed: %v", err)
			}
			return
		}
		items := len(p.Items())
		if spead.HeaderSize+items*spead.PointerSize+len(p.Payload) != len(b) || uint64(len(p.Payload)) != p.PayloadLength {
			t.Fatalf("%d bytes decoded as %d items and %d payload bytes", len(b), items, len(p.Payload))
		}
		if len(p.Payload) > 0 && unsafe.SliceData(p.Payload) != &b[len(b)-len(p.Payload)] {
			t.Fatal("the payload is not the packet's tail")
		}
		if p.HasHeapSize && p.HeapOffset+p.PayloadLength > p.HeapSize {
			t.Fatalf("heap offset %d + %d bytes past heap size %d", p.HeapOffset, p.PayloadLength, p.HeapSize)
		}
		pm, err := pl.Place(&p)
		if err == nil && (pm.Length != p.PayloadLength || pm.Offset%16 != p.HeapOffset) {
			t.Fatalf("placed %+v for heap offset %d", pm, p.HeapOffset)
		}
		if err != nil && !errors.Is(err, spead.ErrMalformed) && !errors.Is(err, spead.ErrOutOfRange) {
			t.Fatalf("a placement error of no kind: %v", err)
		}
	})
}
