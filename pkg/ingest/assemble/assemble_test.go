package assemble

import (
	"math/rand/v2"
	"testing"
)

const (
	bsize   = 4096
	payload = 1000 // does not divide the block: payloads cross block boundaries
)

// offsets returns the offsets of the payloads of a stream of total bytes cut
// into payloads of n bytes (the last one shorter).
func offsets(total, n uint64) []uint64 {
	var out []uint64
	for off := uint64(0); off < total; off += n {
		out = append(out, off)
	}
	return out
}

// length is the length of the payload at off.
func length(off, total, n uint64) uint64 { return min(n, total-off) }

// A stream in order lands whole, payloads split at block boundaries; the
// partial last block ends the observation.
func TestInOrder(t *testing.T) {
	const total = 5*bsize + 123
	s := newStream(total, bsize)
	got := assemble(t, 4, bsize, 2, 0, func(a *Assembler) {
		for _, off := range offsets(total, payload) {
			s.deliver(t, a, off, length(off, total, payload))
		}
	})
	s.check(t, got)
	c := got.counts
	if c.Packets != 21 || c.Received != 21 || c.ZeroFilled != 0 || c.Blocks != 6 {
		t.Fatalf("counters %+v", c)
	}
	for i, r := range got.records {
		if r.Index != i%4 {
			t.Fatalf("record %d in ring block %d, want %d", i, r.Index, i%4)
		}
	}
}

// A stream that ends on a block boundary ends on its last full block.
func TestEndOnBlockBoundary(t *testing.T) {
	const total = 3 * bsize
	s := newStream(total, bsize)
	got := assemble(t, 4, bsize, 2, 0, func(a *Assembler) {
		for _, off := range offsets(total, payload) {
			s.deliver(t, a, off, length(off, total, payload))
		}
	})
	s.check(t, got)
	if last := got.records[len(got.records)-1]; last.Expected != bsize || !last.Last {
		t.Fatalf("last record %+v", last)
	}
}

// Payloads shuffled within the window all land in place.
func TestShuffledWithinWindow(t *testing.T) {
	const total = 12*bsize + 777
	s := newStream(total, bsize)
	offs := offsets(total, payload)
	rng := rand.New(rand.NewPCG(1, 2))
	for g := 0; g < len(offs); g += 8 { // 8 payloads span at most 3 blocks: the window
		group := offs[g:min(g+8, len(offs))]
		rng.Shuffle(len(group), func(i, j int) { group[i], group[j] = group[j], group[i] })
	}
	got := assemble(t, 4, bsize, 3, 0, func(a *Assembler) {
		for _, off := range offs {
			s.deliver(t, a, off, length(off, total, payload))
		}
	})
	s.check(t, got)
	if c := got.counts; c.Received != uint64(len(offs)) || c.Late+c.Duplicate+c.OutOfWindow != 0 {
		t.Fatalf("counters %+v", c)
	}
}

// Payloads longer than a block land across three blocks, in windows of a
// power of two blocks and not: in order in windows of 3 to 5 blocks, pairs
// swapped in windows of 6 and 8 (two payloads touch at most 6 blocks).
func TestPayloadsAcrossBlocks(t *testing.T) {
	for _, window := range []int{3, 4, 5, 6, 8} {
		const total, n = 11*bsize + 100, 2*bsize + 300
		s := newStream(total, bsize)
		offs := offsets(total, n)
		if window >= 6 {
			for g := 0; g+1 < len(offs); g += 2 {
				offs[g], offs[g+1] = offs[g+1], offs[g]
			}
		}
		got := assemble(t, 8, bsize, window, 0, func(a *Assembler) {
			for _, off := range offs {
				s.deliver(t, a, off, length(off, total, n))
			}
		})
		s.check(t, got)
		if c := got.counts; c.Received != uint64(len(offs)) || c.Late+c.Duplicate+c.OutOfWindow+c.ZeroFilled != 0 || c.Blocks != 12 {
			t.Fatalf("window %d: counters %+v", window, c)
		}
	}
}

// A payload that overlaps bytes present, whole or in part, is a duplicate
// and is not written.
func TestDuplicates(t *testing.T) {
	const total = 4*bsize + 10
	s := newStream(total, bsize)
	dups := 0
	got := assemble(t, 4, bsize, 2, 0, func(a *Assembler) {
		for i, off := range offsets(total, payload) {
			n := length(off, total, payload)
			s.deliver(t, a, off, n)
			if i%3 == 0 {
				s.put(t, a, off, n)
				dups++
			}
			if i == 5 { // straddles payloads 3 and 4 and the boundary of blocks 0 and 1
				s.put(t, a, 3500, 1000)
				dups++
			}
		}
	})
	s.check(t, got)
	if c := got.counts; c.Duplicate != uint64(dups) || c.Received != 17 {
		t.Fatalf("counters %+v, want %d duplicates", c, dups)
	}
}

// A payload for a block already handed over is late; one too far ahead of
// the window, or longer than it, is out-of-window; neither is written.
func TestLateAndOutOfWindow(t *testing.T) {
	const total, n = 8 * bsize, 1024
	s := newStream(total, bsize)
	got := assemble(t, 4, bsize, 2, 1, func(a *Assembler) {
		for _, off := range offsets(total, n) {
			s.deliver(t, a, off, n)
			if off == 5*bsize { // the window is blocks 4 and 5
				s.put(t, a, 0, n)                  // block 0: late
				s.put(t, a, 3*bsize+512, n)        // blocks 3 and 4: late
				s.put(t, a, 7*bsize, n)            // block 7, 2 past the window: out-of-window
				s.put(t, a, 4*bsize+8, 2*bsize+16) // blocks 4 to 6, longer than the window
			}
		}
	})
	s.check(t, got)
	if c := got.counts; c.Late != 2 || c.OutOfWindow != 2 || c.Received != 32 || c.ZeroFilled != 0 {
		t.Fatalf("counters %+v", c)
	}
}

// Missing payloads are zero-filled and recorded, within a block, across a
// boundary, and over whole blocks the window skips.
func TestGaps(t *testing.T) {
	const total = 9*bsize + 300
	s := newStream(total, bsize)
	drop := map[uint64]bool{3: true, 4: true, 12: true}
	got := assemble(t, 4, bsize, 2, 4, func(a *Assembler) {
		for i, off := range offsets(total, payload) {
			// Payloads 17 to 28 (bytes 17000..29000: all of blocks 5
			// and 6) never come: the window jumps over them.
			if drop[uint64(i)] || (i >= 17 && i <= 28) {
				continue
			}
			s.deliver(t, a, off, length(off, total, payload))
		}
	})
	s.check(t, got)
	if c := got.counts; c.Received != 23 || c.ZeroFilled != 15*payload || c.Blocks != 10 {
		t.Fatalf("counters %+v", c)
	}
	if r := got.records[5]; r.Received != 0 || len(r.Missing) != 1 || r.Missing[0] != (Range{0, bsize}) {
		t.Fatalf("record of a block no packet reached: %+v", r)
	}
}

// Malformed packets reported by the caller count with the others.
func TestMalformedCounted(t *testing.T) {
	const total = bsize
	s := newStream(total, bsize)
	got := assemble(t, 4, bsize, 2, 0, func(a *Assembler) {
		a.Malformed()
		for _, off := range offsets(total, payload) {
			s.deliver(t, a, off, length(off, total, payload))
		}
		a.Malformed()
		if err := a.Put(^uint64(0)-10, make([]byte, 20)); err != nil { // past the byte space
			t.Fatal(err)
		}
	})
	s.check(t, got)
	if c := got.counts; c.Malformed != 3 || c.Packets != 8 {
		t.Fatalf("counters %+v", c)
	}
}

// With nothing received, Close still writes the header and ends an empty
// observation.
func TestNothingReceived(t *testing.T) {
	s := newStream(0, bsize)
	got := assemble(t, 4, bsize, 2, 0, func(*Assembler) {})
	s.check(t, got)
	if c := got.counts; c != (Counters{}) {
		t.Fatalf("counters %+v", c)
	}
}
