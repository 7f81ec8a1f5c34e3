package placement

import (
	"errors"
	"testing"
)

// A byte offset names a block and a slot in it; the slot's length is the
// slice size but for the last slot of a block that is not a multiple of it.
func TestLocate(t *testing.T) {
	g := Geometry{BlockBytes: 10, SliceBytes: 4} // slots of 4, 4, 2 bytes
	for _, c := range []struct {
		off         uint64
		block, slot uint64
		slice       uint64 // the slice's number in the stream
		length      uint64
	}{
		{0, 0, 0, 0, 4},
		{4, 0, 1, 1, 4},
		{8, 0, 2, 2, 2},
		{10, 1, 0, 3, 4},
		{18, 1, 2, 5, 2},
		{20, 2, 0, 6, 4},
		{1000, 100, 0, 300, 4},
	} {
		block, slot, err := g.Locate(c.off)
		if err != nil || block != c.block || slot != c.slot {
			t.Errorf("Locate(%d) = %d, %d, %v; want %d, %d", c.off, block, slot, err, c.block, c.slot)
			continue
		}
		if n := g.SliceAt(c.off); n != c.slice {
			t.Errorf("SliceAt(%d) = %d, want %d", c.off, n, c.slice)
		}
		if b, _, l := g.Slice(c.slice); b != c.block || l != c.length || g.StreamOffset(c.slice) != c.off {
			t.Errorf("slice %d: block %d, %d bytes at %d; want block %d, %d bytes at %d", c.slice, b, l, g.StreamOffset(c.slice), c.block, c.length, c.off)
		}
	}
	for _, off := range []uint64{1, 7, 9, 11, 19} {
		if _, _, err := g.Locate(off); !errors.Is(err, ErrPlacement) {
			t.Errorf("Locate(%d) inside a slice: %v, want ErrPlacement", off, err)
		}
	}
}

func TestSlicesAndBlocks(t *testing.T) {
	g := Geometry{BlockBytes: 10, SliceBytes: 4}
	for _, c := range []struct{ total, slices, blocks uint64 }{
		{0, 0, 0}, {1, 1, 1}, {4, 1, 1}, {5, 2, 1}, {10, 3, 1}, {11, 4, 2}, {30, 9, 3},
	} {
		if s, b := g.Slices(c.total), g.Blocks(c.total); s != c.slices || b != c.blocks {
			t.Errorf("%d bytes: %d slices in %d blocks, want %d in %d", c.total, s, b, c.slices, c.blocks)
		}
	}
	for _, bad := range []Geometry{{BlockBytes: 0, SliceBytes: 4}, {BlockBytes: 4, SliceBytes: 0}} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v) accepted a geometry that places nothing", bad)
		}
	}
}

// The window advances as blocks fill: the blocks it opens take the slices
// after the last open one, the filled ones leave it in order, and a block
// that landed out of order waits for the ones before it.
func TestWindowAdvance(t *testing.T) {
	g := Geometry{BlockBytes: 8, SliceBytes: 4}
	a, _ := New(g)
	steps := []struct {
		name     string
		do       func() error
		open     int    // blocks open after the step
		endSlice uint64 // first slice past them
		filled   []Filled
		room     int
	}{
		{"open ring blocks 5 and 6", func() error { a.Open(5); a.Open(6); return nil }, 2, 4, nil, 2},
		{"block 1 fills first", func() error { return errors.Join(a.LandAt(8, 4), a.LandAt(12, 4)) }, 2, 4, nil, 1},
		{"block 0 half", func() error { return a.LandAt(0, 4) }, 2, 4, nil, 1},
		{"block 0 complete: both leave in order", func() error { return a.LandAt(4, 4) }, 0, 4,
			[]Filled{{Seq: 0, Index: 5, Bytes: 8}, {Seq: 1, Index: 6, Bytes: 8}}, 0},
		{"open ring block 7", func() error { a.Open(7); return nil }, 1, 6, nil, 1},
		{"land its first slice", func() error { return a.Land(4, 4) }, 1, 6, nil, 1},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		filled := a.TakeFilled()
		if n, end := a.Span(); n != s.open || end != s.endSlice {
			t.Fatalf("%s: window of %d blocks up to slice %d, want %d up to %d", s.name, n, end, s.open, s.endSlice)
		}
		if len(filled) != len(s.filled) {
			t.Fatalf("%s: filled %+v, want %+v", s.name, filled, s.filled)
		}
		for i := range filled {
			if filled[i] != s.filled[i] {
				t.Fatalf("%s: filled %+v, want %+v", s.name, filled, s.filled)
			}
		}
		if r := a.Room(); r != s.room {
			t.Fatalf("%s: room for %d blocks, want %d", s.name, r, s.room)
		}
	}
	if a.Index(2) != 7 {
		t.Fatalf("block 2 is in ring block %d, want 7", a.Index(2))
	}
}

// The end of an observation: announced before or after the data, set by a
// short slice, or cut short (Truncate); the last block carries it.
func TestEndOfObservation(t *testing.T) {
	g := Geometry{BlockBytes: 8, SliceBytes: 4}
	cases := []struct {
		name   string
		end    uint64 // announced (0: not)
		land   [][2]uint64
		fill   []Filled
		done   bool
		endBlk uint64
	}{
		{"announced, ends inside a block", 10, [][2]uint64{{0, 4}, {4, 4}, {8, 2}},
			[]Filled{{Seq: 0, Index: 0, Bytes: 8}, {Seq: 1, Index: 1, Bytes: 2, Last: true}}, true, 2},
		{"announced, ends on a block boundary", 8, [][2]uint64{{0, 4}, {4, 4}},
			[]Filled{{Seq: 0, Index: 0, Bytes: 8, Last: true}}, true, 1},
		{"nothing announced, nothing sent", 0, nil, nil, false, 0},
		{"a short slice ends it before the announcement", 0, [][2]uint64{{0, 4}, {4, 1}}, nil, false, 0},
	}
	for _, c := range cases {
		a, _ := New(g)
		a.Open(0)
		a.Open(1)
		if c.end > 0 {
			if err := a.SetEnd(c.end); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		for _, l := range c.land {
			if err := a.LandAt(l[0], l[1]); err != nil {
				t.Fatalf("%s: land %d bytes at %d: %v", c.name, l[1], l[0], err)
			}
		}
		fill := a.TakeFilled()
		if len(fill) != len(c.fill) || a.Complete() != c.done {
			t.Fatalf("%s: filled %+v (complete %v), want %+v (complete %v)", c.name, fill, a.Complete(), c.fill, c.done)
		}
		for i := range fill {
			if fill[i] != c.fill[i] {
				t.Fatalf("%s: filled %+v, want %+v", c.name, fill, c.fill)
			}
		}
		if end, ok := a.End(); c.end > 0 && (!ok || end != c.end || a.EndBlocks() != c.endBlk) {
			t.Fatalf("%s: end %d (%v) in %d blocks, want %d in %d", c.name, end, ok, a.EndBlocks(), c.end, c.endBlk)
		}
	}
	// The short slice set the end at byte 5: an announcement of another end
	// is refused, the same one accepted, and data past it refused.
	a, _ := New(g)
	a.Open(0)
	if err := errors.Join(a.LandAt(0, 4), a.LandAt(4, 1)); err != nil {
		t.Fatal(err)
	}
	if err := a.SetEnd(8); !errors.Is(err, ErrPlacement) {
		t.Fatalf("an end after the short slice's: %v", err)
	}
	if err := a.SetEnd(5); err != nil || len(a.TakeFilled()) != 1 || !a.Complete() {
		t.Fatalf("the short slice's end: %v, complete %v", err, a.Complete())
	}
}
