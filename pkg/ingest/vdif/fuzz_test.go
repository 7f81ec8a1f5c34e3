package vdif_test

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/ringcap/ringcap/internal/ingesttest"
	"github.com/ringcap/ringcap/pkg/ingest/vdif"
)

// FuzzDecode: Decode never panics, and a frame it accepts is exactly as long
// as its header says, its data array the packet's tail.
func FuzzDecode(f *testing.F) {
	f.Add(ingesttest.VDIF(vdif.Header{ThreadID: 3, FrameNumber: 2}, make([]byte, 64)))
	f.Add(ingesttest.VDIF(vdif.Header{Legacy: true}, make([]byte, 16)))
	f.Add(ingesttest.VDIF(vdif.Header{Invalid: true, FrameUnits: 1}, nil))
	pl, err := vdif.NewPlacer(vdif.Rule{FramesPerSecond: 100, Threads: 4})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr vdif.Frame
		err := vdif.Decode(b, &fr)
		if err != nil {
			if !errors.Is(err, vdif.ErrMalformed) {
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
		if err != nil && !errors.Is(err, vdif.ErrMalformed) && !errors.Is(err, vdif.ErrOutOfRange) && !errors.Is(err, vdif.ErrInvalid) {
			t.Fatalf("a placement error of no kind: %v", err)
		}
	})
}
