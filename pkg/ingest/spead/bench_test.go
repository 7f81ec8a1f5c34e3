package spead_test

import (
	"testing"

	"github.com/ringcap/ringcap/internal/ingesttest"
	"github.com/ringcap/ringcap/pkg/ingest/spead"
)

// BenchmarkDecode: one 8 KiB data packet with a timestamp and a channel item.
func BenchmarkDecode(b *testing.B) {
	pkt := ingesttest.SPEADHeap(48, 1, 1<<16, 8192, make([]byte, 8192), ingesttest.Imm(0x1600, 1<<40), ingesttest.Imm(0x4103, 512))
	var p spead.Packet
	b.ReportAllocs()
	b.SetBytes(int64(len(pkt)))
	for b.Loop() {
		if err := spead.Decode(pkt, &p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodePlace: decode and place, as a receiver does per packet.
func BenchmarkDecodePlace(b *testing.B) {
	pkts := stream(8)
	pl, err := spead.NewPlacer(meerkat)
	if err != nil {
		b.Fatal(err)
	}
	pl.Start(t0)
	var p spead.Packet
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := spead.Decode(pkts[i], &p); err != nil {
			b.Fatal(err)
		}
		if _, err := pl.Place(&p); err != nil {
			b.Fatal(err)
		}
		i = (i + 1) % len(pkts)
	}
}
