package rc

import (
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/placement"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// The window's slice, with the slices per block computed once, is
// wire.Geometry's Slice: the RC receiver places a message where the sender
// sent it.
func TestWindowSliceIsTheWireGeometrys(t *testing.T) {
	for _, g := range []wire.Geometry{
		{BlockBytes: 4 << 20, MsgBytes: 64 << 10, QPs: 4, NBufs: 8},
		{BlockBytes: 10000, MsgBytes: 4096, QPs: 3, NBufs: 4}, // a short last slice in every block
		{BlockBytes: 4096, MsgBytes: 4096, QPs: 1, NBufs: 2},
	} {
		pg := placement.Geometry{BlockBytes: g.BlockBytes, SliceBytes: g.MsgBytes}
		a, err := placement.New(pg)
		if err != nil {
			t.Fatal(err)
		}
		for n := range 3*g.SlicesPerBlock() + 1 {
			b, off, l := a.Slice(n)
			wb, woff, wl := g.Slice(n)
			if b != wb || off != woff || l != wl {
				t.Fatalf("%+v slice %d: (%d, %d, %d), want (%d, %d, %d)", g, n, b, off, l, wb, woff, wl)
			}
			if o := g.StreamOffset(n); pg.StreamOffset(n) != o || pg.SliceAt(o) != n || pg.Slices(o+1) != g.Slices(o+1) {
				t.Fatalf("%+v slice %d: placement and wire disagree on its offset %d", g, n, o)
			}
		}
	}
}
