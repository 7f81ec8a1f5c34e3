package placement

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// feed lands slices of a stream of total bytes in a random order, opening
// blocks as the window allows, and returns what the window filled.
func feed(t *testing.T, g Geometry, nbufs int, total uint64, window int, rng *rand.Rand, announceFirst bool) []Filled {
	t.Helper()
	a, err := New(g)
	if err != nil {
		t.Fatal(err)
	}
	a.Hold = window >= 2
	if announceFirst {
		if err := a.SetEnd(total); err != nil {
			t.Fatal(err)
		}
	}
	var out []Filled
	nslices := g.Slices(total)
	var next uint64 // next slice not yet "in flight"
	var inflight []uint64
	index := 0
	for next < nslices || len(inflight) > 0 {
		for len(a.open) < window {
			a.Open(index % nbufs)
			index++
		}
		_, endSlice := a.Span()
		for next < nslices && next < endSlice {
			inflight = append(inflight, next)
			next++
		}
		if len(inflight) == 0 {
			t.Fatalf("nothing in flight, window %d slices up to %d of %d", len(a.open), endSlice, nslices)
		}
		i := rng.IntN(len(inflight))
		sl := inflight[i]
		inflight = append(inflight[:i], inflight[i+1:]...)
		_, _, full := g.Slice(sl)
		n := min(full, total-g.StreamOffset(sl))
		got, err := a.Resolve(uint32(sl))
		if err != nil || got != sl {
			t.Fatalf("resolve(%d) = %d, %v", uint32(sl), got, err)
		}
		if err := a.Land(sl, n); err != nil {
			t.Fatalf("land slice %d (%d bytes): %v", sl, n, err)
		}
		out = append(out, a.TakeFilled()...)
	}
	if !announceFirst {
		if err := a.SetEnd(total); err != nil {
			t.Fatal(err)
		}
		out = append(out, a.TakeFilled()...)
	}
	if !a.Complete() {
		t.Fatalf("not complete after %d bytes: filled %d blocks", total, a.filled)
	}
	return out
}

func TestAssemblerInOrderBlocksAnyArrival(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// (The queue pairs of the RC geometries these came from play no part in placement.)
	for _, c := range []struct {
		g     Geometry
		nbufs int
	}{
		{Geometry{BlockBytes: 16, SliceBytes: 4}, 4},
		{Geometry{BlockBytes: 16, SliceBytes: 4}, 4},
		{Geometry{BlockBytes: 10, SliceBytes: 4}, 3},
		{Geometry{BlockBytes: 100, SliceBytes: 7}, 8},
		{Geometry{BlockBytes: 8, SliceBytes: 64}, 2},
	} {
		g := c.g
		for _, total := range []uint64{1, g.BlockBytes - 1, g.BlockBytes, g.BlockBytes + 1, 5*g.BlockBytes - 3, 5 * g.BlockBytes} {
			for _, announce := range []bool{false, true} {
				out := feed(t, g, c.nbufs, total, min(c.nbufs, 3), rng, announce)
				nblocks := (total + g.BlockBytes - 1) / g.BlockBytes
				if uint64(len(out)) != nblocks {
					t.Fatalf("%+v total %d: %d blocks filled, want %d", g, total, len(out), nblocks)
				}
				var sum uint64
				for i, f := range out {
					if f.Seq != uint64(i) || f.Index != i%c.nbufs {
						t.Fatalf("%+v total %d: fill %d = %+v", g, total, i, f)
					}
					if i < len(out)-1 && f.Bytes != g.BlockBytes {
						t.Fatalf("%+v total %d: block %d partial (%d bytes) before the end", g, total, i, f.Bytes)
					}
					if f.Last != (i == len(out)-1) {
						t.Fatalf("%+v total %d announce %v: block %d Last=%v", g, total, announce, i, f.Last)
					}
					sum += f.Bytes
				}
				if sum != total {
					t.Fatalf("%+v total %d: filled %d bytes", g, total, sum)
				}
			}
		}
	}
}

func TestAssemblerRejectsBadCompletions(t *testing.T) {
	g := Geometry{BlockBytes: 16, SliceBytes: 4}
	a, _ := New(g)
	if _, err := a.Resolve(0); !errors.Is(err, ErrPlacement) {
		t.Fatalf("resolve with no open block: %v", err)
	}
	a.Open(0)
	if _, err := a.Resolve(4); !errors.Is(err, ErrPlacement) {
		t.Fatalf("resolve outside the window: %v", err)
	}
	if err := a.Land(0, 5); !errors.Is(err, ErrPlacement) {
		t.Fatalf("oversized slice: %v", err)
	}
	if err := a.Land(0, 4); err != nil {
		t.Fatal(err)
	}
	if err := a.Land(0, 4); !errors.Is(err, ErrPlacement) {
		t.Fatalf("duplicate slice: %v", err)
	}
	if err := a.Land(1, 2); err != nil { // short: stream ends at byte 6
		t.Fatal(err)
	}
	if err := a.Land(2, 4); !errors.Is(err, ErrPlacement) {
		t.Fatalf("slice after the short one: %v", err)
	}
	if err := a.SetEnd(7); !errors.Is(err, ErrPlacement) {
		t.Fatalf("end that contradicts the short slice: %v", err)
	}
	if err := a.SetEnd(6); err != nil {
		t.Fatal(err)
	}
	if f := a.TakeFilled(); len(f) != 1 || f[0].Bytes != 6 {
		t.Fatalf("filled %+v, want one block of 6 bytes", f)
	}
	if !a.Complete() {
		t.Fatal("not complete")
	}

	b, _ := New(g)
	b.Open(0)
	if err := b.Land(3, 4); err != nil {
		t.Fatal(err)
	}
	if err := b.SetEnd(8); !errors.Is(err, ErrPlacement) {
		t.Fatalf("end before landed data: %v", err)
	}
}

func TestAssemblerTruncate(t *testing.T) {
	g := Geometry{BlockBytes: 16, SliceBytes: 4}
	a, _ := New(g)
	a.Open(2)
	a.Open(3)
	a.Open(0)
	for _, sl := range []uint64{0, 1, 2, 3, 4, 5, 7, 8} { // block 0 full, block 1 has 0,1,_,3, block 2 has 0
		if err := a.Land(sl, 4); err != nil {
			t.Fatal(err)
		}
	}
	fill, lost := a.Truncate()
	want := []Filled{{Seq: 0, Index: 2, Bytes: 16}, {Seq: 1, Index: 3, Bytes: 8, Last: true}}
	if len(fill) != len(want) || fill[0] != want[0] || fill[1] != want[1] {
		t.Fatalf("truncate = %+v, want %+v", fill, want)
	}
	if lost != 8 {
		t.Fatalf("lost %d bytes, want 8 (slice 7 and slice 8)", lost)
	}

	// Nothing landed at all: nothing to fill.
	b, _ := New(g)
	b.Open(0)
	if fill, lost := b.Truncate(); len(fill) != 0 || lost != 0 {
		t.Fatalf("empty truncate = %+v, %d", fill, lost)
	}
}

func TestResolveWraps(t *testing.T) {
	g := Geometry{BlockBytes: 1 << 20, SliceBytes: 1}
	a, _ := New(g)
	// Move the window past 2^32 slices.
	a.next = (1 << 32) / (1 << 20)
	a.filled = a.next
	a.Open(0)
	a.Open(1)
	sl := a.next*a.s - 5
	got, err := a.Resolve(uint32(sl))
	if err != nil || got != sl {
		t.Fatalf("resolve(%d) = %d, %v; want %d", uint32(sl), got, err, sl)
	}
}

func TestAssemblerHoldsBoundaryBlock(t *testing.T) {
	g := Geometry{BlockBytes: 8, SliceBytes: 4}
	a, _ := New(g)
	a.Hold = true
	a.Open(0)
	a.Open(1)
	for _, sl := range []uint64{0, 1} {
		if err := a.Land(sl, 4); err != nil {
			t.Fatal(err)
		}
	}
	if f := a.TakeFilled(); len(f) != 0 {
		t.Fatalf("a full block was released before the stream went past it: %+v", f)
	}
	if err := a.Land(3, 4); err != nil { // data beyond the boundary: block 0 is not the last
		t.Fatal(err)
	}
	if f := a.TakeFilled(); len(f) != 1 || f[0].Last || f[0].Bytes != 8 {
		t.Fatalf("filled %+v, want block 0 full and not last", f)
	}
	if err := a.Land(2, 4); err != nil {
		t.Fatal(err)
	}
	if err := a.SetEnd(16); err != nil {
		t.Fatal(err)
	}
	if f := a.TakeFilled(); len(f) != 1 || !f[0].Last || f[0].Bytes != 8 {
		t.Fatalf("filled %+v, want block 1 full and last", f)
	}
}
