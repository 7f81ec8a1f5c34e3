package sender

import (
	"slices"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// Blocks of 10 bytes cut into slices of 4, 4 and 2 bytes, on 2 queue pairs,
// a ring of 2 blocks (a look-ahead of 6 slices), 4 send slots of 4 bytes.
func testPlanner(whole bool, bytes uint64) planner {
	g := wire.Geometry{BlockBytes: 10, MsgBytes: 4, QPs: 2, NBufs: 2, WholeBlocks: whole}
	return newPlanner(g, bytes, 6, 4, 4)
}

// plan says which slice a queue pair posts next, where it lands (block,
// offset, length) and which send slot holds it, or that the queue pair
// cannot take one now.
func TestPlannerPlan(t *testing.T) {
	all := []int{0, 1, 2, 3}
	for _, c := range []struct {
		name  string
		whole bool
		bytes uint64
		cur   cursor
		q     int
		base  uint64
		free  []int
		want  slicePlan
		ok    bool
	}{
		{"striped, the first slice", false, 0, cursor{next: []uint64{0, 1}, limit: noLimit}, 0, 0, all,
			slicePlan{q: 0, slice: 0, seq: 0, off: 0, length: 4, offset: 0, slot: 3, boff: 12}, true},
		{"striped, a block's short last slice", false, 0, cursor{next: []uint64{4, 5}, limit: noLimit}, 1, 0, []int{0, 2},
			slicePlan{q: 1, slice: 5, seq: 1, off: 8, length: 2, offset: 18, slot: 2, boff: 24}, true},
		{"striped, cut at the stream's end", false, 17, cursor{next: []uint64{4, 5}, limit: 5}, 0, 0, all,
			slicePlan{q: 0, slice: 4, seq: 1, off: 4, length: 3, offset: 14, slot: 3, boff: 12}, true},
		{"striped, at the limit", false, 17, cursor{next: []uint64{4, 5}, limit: 5}, 1, 0, all, slicePlan{}, false},
		{"striped, beyond the look-ahead", false, 0, cursor{next: []uint64{6, 7}, limit: noLimit}, 0, 0, all, slicePlan{}, false},
		{"striped, inside the look-ahead", false, 0, cursor{next: []uint64{6, 7}, limit: noLimit}, 0, 1, all,
			slicePlan{q: 0, slice: 6, seq: 2, off: 0, length: 4, offset: 20, slot: 3, boff: 12}, true},
		{"striped, no free slot", false, 0, cursor{next: []uint64{0, 1}, limit: noLimit}, 0, 0, nil, slicePlan{}, false},
		{"whole blocks, the next block nobody has", true, 0, cursor{next: []uint64{wire.NoSlice, 1}, block: 1, limit: noLimit}, 0, 0, []int{1},
			slicePlan{q: 0, slice: 3, take: true, seq: 1, off: 0, length: 4, offset: 10, slot: 1, boff: 4}, true},
		{"whole blocks, on in the block", true, 0, cursor{next: []uint64{wire.NoSlice, 1}, block: 1, limit: noLimit}, 1, 0, all,
			slicePlan{q: 1, slice: 1, seq: 0, off: 4, length: 4, offset: 4, slot: 3, boff: 28}, true},
		{"whole blocks, the next block beyond the look-ahead", true, 0, cursor{next: []uint64{wire.NoSlice, 1}, block: 2, limit: noLimit}, 0, 0, all, slicePlan{}, false},
	} {
		p := testPlanner(c.whole, c.bytes)
		var got slicePlan
		ok := p.plan(&c.cur, c.q, c.base, c.free, &got)
		if ok != c.ok || got != c.want {
			t.Errorf("%s: plan = %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// In strict slice order the lowest slice not posted goes on the queue pair
// whose next slice it is; the first slice of a block nobody has, on the queue
// pair without a block that has the most free send slots.
func TestPlannerCarrier(t *testing.T) {
	free := [][]int{{0}, {0, 1, 2}, {0, 1}}
	for _, c := range []struct {
		name  string
		whole bool
		next  []uint64
		block uint64
		sl    uint64
		want  int
	}{
		{"striped", false, []uint64{6, 4, 5}, 0, 4, 1},
		{"whole blocks, a queue pair's next slice", true, []uint64{1, wire.NoSlice, wire.NoSlice}, 1, 1, 0},
		{"whole blocks, a new block to the freest", true, []uint64{wire.NoSlice, wire.NoSlice, wire.NoSlice}, 0, 0, 1},
		{"whole blocks, a new block to the only one without", true, []uint64{4, 7, wire.NoSlice}, 3, 9, 2},
	} {
		p := testPlanner(c.whole, 0)
		p.g.QPs = 3
		cur := cursor{next: c.next, block: c.block, limit: noLimit}
		if got := p.carrier(&cur, free, c.sl); got != c.want {
			t.Errorf("%s: carrier of slice %d = %d, want %d", c.name, c.sl, got, c.want)
		}
	}
}

// lowest is the lowest slice not posted, the next block's first counting
// with whole blocks.
func TestPlannerLowest(t *testing.T) {
	striped, whole := testPlanner(false, 0), testPlanner(true, 0)
	if got := striped.lowest(&cursor{next: []uint64{4, 3}}); got != 3 {
		t.Errorf("striped lowest = %d, want 3", got)
	}
	if got := whole.lowest(&cursor{next: []uint64{wire.NoSlice, wire.NoSlice}, block: 2}); got != 6 {
		t.Errorf("whole blocks, none taken: lowest = %d, want 6", got)
	}
	if got := whole.lowest(&cursor{next: []uint64{4, wire.NoSlice}, block: 2}); got != 4 {
		t.Errorf("whole blocks, one in a block: lowest = %d, want 4", got)
	}
}

// The cursor moves on past a slice posted: striped to the queue pair's next
// stripe, with whole blocks through the block and then to none.
func TestPlannerAdvance(t *testing.T) {
	p := testPlanner(false, 0)
	c := cursor{next: []uint64{0, 1}, limit: noLimit}
	p.advance(&c, &slicePlan{q: 1, slice: 1})
	if !slices.Equal(c.next, []uint64{0, 3}) || c.block != 0 {
		t.Errorf("striped: cursor %+v", c)
	}
	w := testPlanner(true, 0)
	c = cursor{next: []uint64{wire.NoSlice, wire.NoSlice}, limit: noLimit}
	w.advance(&c, &slicePlan{q: 1, slice: 0, take: true})
	if !slices.Equal(c.next, []uint64{wire.NoSlice, 1}) || c.block != 1 {
		t.Errorf("whole blocks, a block taken: cursor %+v", c)
	}
	w.advance(&c, &slicePlan{q: 1, slice: 1})
	w.advance(&c, &slicePlan{q: 1, slice: 2})
	if !slices.Equal(c.next, []uint64{wire.NoSlice, wire.NoSlice}) || c.block != 1 {
		t.Errorf("whole blocks, a block done: cursor %+v", c)
	}
}

// A source that ends inside or before a slice sets the limit there.
func TestCursorFilled(t *testing.T) {
	sp := slicePlan{slice: 7, length: 4}
	for _, c := range []struct {
		n     int
		limit uint64
		want  uint64
	}{
		{4, noLimit, noLimit},
		{3, noLimit, 8},
		{0, noLimit, 7},
		{0, 5, 5},
	} {
		cur := cursor{limit: c.limit}
		cur.filled(&sp, c.n)
		if cur.limit != c.want {
			t.Errorf("%d of %d bytes, limit %d: limit %d, want %d", c.n, sp.length, c.limit, cur.limit, c.want)
		}
	}
}

// With whole blocks a slice carries on in its block (goes out as a plain
// write) unless it is the block's last or the stream's last.
func TestPlannerCarriesOn(t *testing.T) {
	p := testPlanner(true, 0)
	for _, c := range []struct {
		sl, limit uint64
		want      bool
	}{
		{3, noLimit, true},
		{4, noLimit, true},
		{5, noLimit, false},
		{4, 5, false},
	} {
		if got := p.carriesOn(&cursor{limit: c.limit}, c.sl); got != c.want {
			t.Errorf("slice %d, limit %d: carries on %v, want %v", c.sl, c.limit, got, c.want)
		}
	}
}

// A new cursor starts each queue pair on its first slice and knows the limit
// of a stream of known length.
func TestNewCursor(t *testing.T) {
	g := testPlanner(false, 0).g
	if c := newCursor(g, 17); !slices.Equal(c.next, []uint64{0, 1}) || c.limit != 5 {
		t.Errorf("striped, 17 bytes: %+v", c)
	}
	g.WholeBlocks = true
	if c := newCursor(g, 0); !slices.Equal(c.next, []uint64{wire.NoSlice, wire.NoSlice}) || c.limit != noLimit {
		t.Errorf("whole blocks, unknown length: %+v", c)
	}
}

// The planner's slice, with the slices per block divided once, places every slice
// where wire.Geometry.Slice does.
func TestPlannerSliceIsGeometrySlice(t *testing.T) {
	t.Parallel()
	for _, g := range []wire.Geometry{
		{BlockBytes: 10, MsgBytes: 4, QPs: 2},
		{BlockBytes: 12, MsgBytes: 4, QPs: 3, WholeBlocks: true},
		{BlockBytes: 1 << 20, MsgBytes: 65536, QPs: 4},
		{BlockBytes: 1000, MsgBytes: 1000, QPs: 1},
	} {
		p := newPlanner(g, 0, 1, 1, g.MsgBytes)
		for n := range uint64(100) {
			b, o, l := p.slice(n)
			wb, wo, wl := g.Slice(n)
			if b != wb || o != wo || l != wl {
				t.Fatalf("%+v slice %d: planner (%d, %d, %d), geometry (%d, %d, %d)", g, n, b, o, l, wb, wo, wl)
			}
		}
	}
}
