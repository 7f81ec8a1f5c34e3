package vdif

import (
	"errors"
	"testing"
	"unsafe"
)

// FuzzDecode: Decode never panics, and a frame it accepts is exactly as long
// as its header says, its data array the packet's tail.
func FuzzDecode(f *testing.F) {
	f.Add(encode(Header{ThreadID: 3, FrameNumber: 2}, make([]byte, 64)))
	f.Add(encode(Header{Legacy: true}, make([]byte, 16)))
	f.Add(encode(Header{Invalid: true, FrameUnits: 1}, nil))
	pl, err := NewPlacer(Rule{FramesPerSecond: 100, Threads: 4})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr Frame
		err := Decode(b, &fr)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("an error that is not ErrMalformed: %v", err)
			}
			return
		}
		if fr.FrameBytes() != len(b) || fr.HeaderBytes()+len(fr.Data) != len(b) {
			t.Fatalf("%d bytes decoded as a %d-byte frame with %d data bytes", len(b), fr.FrameBytes(), len(fr.Data))
		}
		if len(fr.Data) > 0 && unsafe.SliceData(fr.Data) != &b[fr.HeaderBytes()] {
			t.Fatal("the data array is not the packet's tail")
		}
		pm, err := pl.Place(&fr)
		if err == nil && pm.Length != uint64(len(fr.Data)) {
			t.Fatalf("placed %+v for %d data bytes", pm, len(fr.Data))
		}
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrOutOfRange) && !errors.Is(err, ErrInvalid) {
			t.Fatalf("a placement error of no kind: %v", err)
		}
	})
}
