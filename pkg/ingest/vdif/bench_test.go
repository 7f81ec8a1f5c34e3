package vdif_test

import (
	"testing"

	"github.com/ringcap/ringcap/internal/ingesttest"
	"github.com/ringcap/ringcap/pkg/ingest/vdif"
)

// BenchmarkDecode: one 8000-byte frame (an 8032-byte packet).
func BenchmarkDecode(b *testing.B) {
	pkt := ingesttest.VDIF(vdif.Header{RefEpoch: epoch, Seconds: sec0, FrameNumber: 3, ThreadID: 2}, make([]byte, 8000))
	var f vdif.Frame
	b.ReportAllocs()
	b.SetBytes(int64(len(pkt)))
	for b.Loop() {
		if err := vdif.Decode(pkt, &f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodePlace: decode and place, as a receiver does per frame.
func BenchmarkDecodePlace(b *testing.B) {
	var pkts [][]byte
	for fn := range uint32(fps) {
		for th := range uint16(4) {
			pkts = append(pkts, frame(0, fn, th))
		}
	}
	pl, err := vdif.NewPlacer(vdif.Rule{FramesPerSecond: fps, Threads: 4})
	if err != nil {
		b.Fatal(err)
	}
	var f vdif.Frame
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := vdif.Decode(pkts[i], &f); err != nil {
			b.Fatal(err)
		}
		if _, err := pl.Place(&f); err != nil {
			b.Fatal(err)
		}
		i = (i + 1) % len(pkts)
	}
}
