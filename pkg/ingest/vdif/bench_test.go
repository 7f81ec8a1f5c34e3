package vdif

import "testing"

// BenchmarkDecode: one 8000-byte frame (an 8032-byte packet).
func BenchmarkDecode(b *testing.B) {
	pkt := encode(Header{RefEpoch: epoch, Seconds: sec0, FrameNumber: 3, ThreadID: 2}, make([]byte, 8000))
	var f Frame
	b.ReportAllocs()
	b.SetBytes(int64(len(pkt)))
	for b.Loop() {
		if err := Decode(pkt, &f); err != nil {
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
	pl, err := NewPlacer(Rule{FramesPerSecond: fps, Threads: 4})
	if err != nil {
		b.Fatal(err)
	}
	var f Frame
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := Decode(pkts[i], &f); err != nil {
			b.Fatal(err)
		}
		if _, err := pl.Place(&f); err != nil {
			b.Fatal(err)
		}
		i = (i + 1) % len(pkts)
	}
}
