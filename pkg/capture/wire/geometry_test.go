package wire

import (
	"slices"
	"testing"
)

func TestGeometrySlices(t *testing.T) {
	t.Parallel()
	g := Geometry{BlockBytes: 10, MsgBytes: 4, QPs: 3, NBufs: 4}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if s := g.SlicesPerBlock(); s != 3 {
		t.Fatalf("slices per block = %d, want 3", s)
	}
	// block 0: [0,4) [4,8) [8,10); block 1: [10,14) [14,18) [18,20)
	want := []struct{ block, off, n, stream uint64 }{
		{0, 0, 4, 0}, {0, 4, 4, 4}, {0, 8, 2, 8}, {1, 0, 4, 10}, {1, 4, 4, 14}, {1, 8, 2, 18},
	}
	for n, w := range want {
		b, off, l := g.Slice(uint64(n))
		if b != w.block || off != w.off || l != w.n || g.StreamOffset(uint64(n)) != w.stream {
			t.Errorf("slice %d = block %d off %d len %d stream %d, want %+v", n, b, off, l, g.StreamOffset(uint64(n)), w)
		}
		if got := g.SliceAt(w.stream); got != uint64(n) {
			t.Errorf("SliceAt(%d) = %d, want %d", w.stream, got, n)
		}
		if got := g.SliceAt(w.stream + w.n - 1); got != uint64(n) {
			t.Errorf("SliceAt(%d) = %d, want %d", w.stream+w.n-1, got, n)
		}
		if g.QP(uint64(n)) != n%3 {
			t.Errorf("QP(%d) = %d", n, g.QP(uint64(n)))
		}
	}
	for total, slices := range map[uint64]uint64{0: 0, 1: 1, 4: 1, 5: 2, 10: 3, 11: 4, 20: 6} {
		if got := g.Slices(total); got != slices {
			t.Errorf("Slices(%d) = %d, want %d", total, got, slices)
		}
	}
}

// Striped slices (send mode): each queue pair's slices, walked with
// FirstOnQP and NextOnQP, are exactly the slices QP assigns it, in order.
// Whole blocks (write mode): a queue pair starts with no slice, and from a
// block's first slice it walks that block's slices and then has none again
// (it takes the next block nobody has).
func TestGeometryQueuePairWalk(t *testing.T) {
	t.Parallel()
	g := Geometry{BlockBytes: 10, MsgBytes: 4, QPs: 2, NBufs: 4} // 3 slices per block
	const n = 30
	got := make([][]uint64, g.QPs)
	for q := range g.QPs {
		for sl := g.FirstOnQP(q); sl < n; sl = g.NextOnQP(sl) {
			got[q] = append(got[q], sl)
		}
	}
	want := make([][]uint64, g.QPs)
	for sl := range uint64(n) {
		want[g.QP(sl)] = append(want[g.QP(sl)], sl)
	}
	for q := range g.QPs {
		if !slices.Equal(got[q], want[q]) {
			t.Errorf("striped slices: queue pair %d walks %v, want %v", q, got[q], want[q])
		}
	}
	g.WholeBlocks = true
	for q := range g.QPs {
		if f := g.FirstOnQP(q); f != NoSlice {
			t.Errorf("whole blocks: queue pair %d starts at slice %d, want none", q, f)
		}
	}
	for b := range uint64(4) {
		var walk []uint64
		for sl := b * 3; sl != NoSlice; sl = g.NextOnQP(sl) {
			walk = append(walk, sl)
		}
		if w := []uint64{b * 3, b*3 + 1, b*3 + 2}; !slices.Equal(walk, w) {
			t.Errorf("whole blocks: block %d walks %v, want %v", b, walk, w)
		}
	}
}

func TestGeometryValidate(t *testing.T) {
	t.Parallel()
	for _, g := range []Geometry{
		{BlockBytes: 0, MsgBytes: 1, QPs: 1, NBufs: 1},
		{BlockBytes: 1, MsgBytes: 0, QPs: 1, NBufs: 1},
		{BlockBytes: 1, MsgBytes: 1, QPs: 0, NBufs: 1},
		{BlockBytes: 1, MsgBytes: 1, QPs: 65, NBufs: 1},
		{BlockBytes: 1, MsgBytes: 1, QPs: 1, NBufs: 0},
		{BlockBytes: 1 << 40, MsgBytes: 1, QPs: 1, NBufs: 8}, // slice numbers overflow the immediate
	} {
		if err := g.Validate(); err == nil {
			t.Errorf("%+v: no error", g)
		}
	}
}
