package stream

import (
	"math/rand/v2"
	"testing"

	"github.com/ringcap/ringcap/internal/ingesttest"
)

// A long SPEAD stream with random loss, duplicates, junk and reordering
// beyond the window (so that some packets are late): every packet is counted
// once, every byte read is the stream's or zero, and the zero bytes are the
// ones the assembler zero-filled.
func TestSPEADRandomFaults(t *testing.T) {
	const n = 400 // timestamps: 1600 packets, 200 blocks of 4096 bytes
	rng := rand.New(rand.NewPCG(7, 8))
	var packets [][]byte
	sent := 0
	for i := range n {
		for g := range 2 {
			for k := range 2 {
				p := speadPacket(t0+uint64(i*step), i, g, k)
				sent++
				switch r := rng.IntN(100); {
				case r < 3 && i > 0: // lost
				case r < 6:
					packets = append(packets, p, p)
				case r < 8:
					packets = append(packets, p, []byte{0x53, 4, 2, 6})
				default:
					packets = append(packets, p)
				}
			}
		}
	}
	for at := 1; at+1 < len(packets); at++ { // swap neighbours, now and then far ones
		if j := at + 1 + rng.IntN(12)*rng.IntN(2); j < len(packets) && rng.IntN(4) == 0 {
			packets[at], packets[j] = packets[j], packets[at]
		}
	}
	cfg := Config{Protocol: SPEAD, SPEAD: speadRule(), SPEADTime: SPEADTime{SyncTime: syncTime, SampleRate: sampleRate}}
	got := observe(t, cfg, 4, 4096, 3, packets)
	c := got.counts
	if c.Packets != uint64(len(packets)) || c.Late == 0 || c.Duplicate == 0 || c.Malformed == 0 {
		t.Fatalf("counters %+v for %d packets: want late, duplicate and malformed ones", c, len(packets))
	}
	var zeros uint64
	for i, b := range got.data {
		if b == 0 {
			zeros++
		} else if b != ingesttest.PatternByte(uint64(i)) {
			t.Fatalf("byte %d is %#x, neither the stream's nor zero", i, b)
		}
	}
	if zeros != c.Assemble.ZeroFilled || c.PlacedBytes+zeros != uint64(len(got.data)) {
		t.Fatalf("%d zero bytes, %d placed, %d read; counters %+v", zeros, c.PlacedBytes, len(got.data), c)
	}
	t.Logf("%d packets sent, %d handed over: %+v", sent, len(packets), c)
}
