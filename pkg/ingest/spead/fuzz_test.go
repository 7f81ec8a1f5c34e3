package spead

import (
	"errors"
	"testing"
	"unsafe"
)

// FuzzDecode: Decode never panics, accepts only what it can account for,
// and its payload lies inside the packet.
func FuzzDecode(f *testing.F) {
	f.Add(heapPacket(48, 1, 8, 0, []byte("abcdefgh"), imm(0x1600, 3)))
	f.Add(heapPacket(40, 1, 16, 8, []byte("abcdefgh"), Item{ID: 0x4103, Value: 2}))
	f.Add(encode(48, []Item{imm(HeapCounterID, 1), imm(HeapOffsetID, 0), imm(PayloadLengthID, 0)}, nil))
	f.Add([]byte{Magic, Version, 2, 6, 0, 0, 0xff, 0xff})
	pl, err := NewPlacer(Rule{TimestampID: 0x1600, TimestampStep: 4, HeapSize: 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Packet
		err := Decode(b, &p)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("an error that is not ErrMalformed: %v", err)
			}
			return
		}
		items := len(p.Items())
		if HeaderSize+items*PointerSize+len(p.Payload) != len(b) || uint64(len(p.Payload)) != p.PayloadLength {
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
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrOutOfRange) {
			t.Fatalf("a placement error of no kind: %v", err)
		}
	})
}
