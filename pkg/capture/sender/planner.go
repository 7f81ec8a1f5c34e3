package sender

import "github.com/ringcap/ringcap/pkg/capture/wire"

// The sender is a pipeline: the planner decides what goes where (which slice
// a queue pair posts next, into which block at which offset, from which send
// slot), the grants admit it (write mode: the block's credit; send mode: the
// receiver's receive), the pacer holds it to the rate, the source fills it,
// and a poster hands the batch to the fabric. Only the last steps change the
// session.

// cursor is where posting stands; the planner reads it, the session moves it.
type cursor struct {
	next  []uint64 // next slice per queue pair (wire.NoSlice: none, with whole blocks)
	block uint64   // whole blocks: the next block no queue pair has taken
	limit uint64   // first slice not to send (noLimit until known)
}

// noLimit marks a stream whose last slice is not known yet.
const noLimit = ^uint64(0)

// newCursor starts a stream of the geometry, of bytes bytes (0: unknown).
func newCursor(g wire.Geometry, bytes uint64) cursor {
	c := cursor{next: make([]uint64, g.QPs), limit: noLimit}
	for q := range c.next {
		c.next[q] = g.FirstOnQP(q)
	}
	if bytes > 0 {
		c.limit = g.Slices(bytes)
	}
	return c
}

// planner decides what goes where; it changes nothing.
type planner struct {
	g        wire.Geometry
	perBlock uint64 // g.SlicesPerBlock(), divided once here rather than per slice
	bytes    uint64 // stream length (0: until the source ends)
	ahead    uint64 // look-ahead: slices past the oldest unfinished one
	txDepth  int    // send slots per queue pair
	msgBytes uint64 // bytes per send slot
}

// newPlanner plans a stream of the geometry, of bytes bytes (0: until the source
// ends), at most ahead slices past the oldest unfinished one, from txDepth send slots
// of msgBytes per queue pair.
func newPlanner(g wire.Geometry, bytes, ahead uint64, txDepth int, msgBytes uint64) planner {
	return planner{g: g, perBlock: g.SlicesPerBlock(), bytes: bytes, ahead: ahead, txDepth: txDepth, msgBytes: msgBytes}
}

// slice is wire.Geometry.Slice with the slices per block known: one division a
// slice, where the sender spends most of its time per message.
func (p *planner) slice(n uint64) (block, off, length uint64) {
	block = n / p.perBlock
	off = (n - block*p.perBlock) * p.g.MsgBytes
	return block, off, min(p.g.MsgBytes, p.g.BlockBytes-off)
}

// slicePlan is where one slice goes.
type slicePlan struct {
	q      int
	slice  uint64
	take   bool   // the first slice of a block no queue pair had taken
	seq    uint64 // the slice's block
	off    uint64 // byte offset in the block
	length uint64 // bytes at most (the source may end sooner)
	offset uint64 // stream byte offset
	slot   int    // send slot
	boff   uint64 // byte offset of the send slot in the send buffer
}

// untaken is the first slice of the next block no queue pair has taken
// (with whole blocks; wire.NoSlice otherwise).
func (p *planner) untaken(c *cursor) uint64 {
	if !p.g.WholeBlocks {
		return wire.NoSlice
	}
	return c.block * p.perBlock
}

// lowest is the lowest slice not yet posted.
func (p *planner) lowest(c *cursor) uint64 {
	lo := p.untaken(c)
	for _, n := range c.next {
		lo = min(lo, n)
	}
	return lo
}

// carrier is the queue pair that posts slice sl, the lowest one not posted,
// in strict slice order: the queue pair whose next slice it is, or, for the
// first slice of a block nobody has taken, the queue pair without a block
// that has the most free send slots.
func (p *planner) carrier(c *cursor, free [][]int, sl uint64) int {
	if !p.g.WholeBlocks {
		return p.g.QP(sl)
	}
	best := -1
	for q, n := range c.next {
		if n == sl {
			return q
		}
		if n == wire.NoSlice && (best < 0 || len(free[q]) > len(free[best])) {
			best = q
		}
	}
	return max(best, 0)
}

// plan is queue pair q's next slice (with whole blocks, when q has none, the
// first slice of the next block nobody has taken) in the last of q's free
// send slots; false when q cannot take one now: no free slot, or the slice is
// at the end of the stream or beyond the look-ahead from base, the oldest
// slice not completed.
func (p *planner) plan(c *cursor, q int, base uint64, free []int, sp *slicePlan) bool {
	sl, take := c.next[q], false
	if sl == wire.NoSlice && p.g.WholeBlocks {
		sl, take = p.untaken(c), true
	}
	if sl >= c.limit || sl >= base+p.ahead || len(free) == 0 {
		return false
	}
	seq, off, length := p.slice(sl)
	offset := seq*p.g.BlockBytes + off // wire.Geometry.StreamOffset, without its second division
	if p.bytes > 0 {
		length = min(length, p.bytes-offset)
	}
	slot := free[len(free)-1]
	boff := (uint64(q)*uint64(p.txDepth) + uint64(slot)) * p.msgBytes
	*sp = slicePlan{q: q, slice: sl, take: take, seq: seq, off: off, length: length, offset: offset, slot: slot, boff: boff}
	return true
}

// advance moves the cursor past a slice posted.
func (p *planner) advance(c *cursor, sp *slicePlan) {
	c.next[sp.q] = p.g.NextOnQP(sp.slice)
	if sp.take {
		c.block++
	}
}

// filled notes that the source gave n of the slice's bytes: none, the stream
// ends before it; fewer than its length, inside it.
func (c *cursor) filled(sp *slicePlan, n int) {
	switch {
	case n == 0:
		c.limit = min(c.limit, sp.slice)
	case uint64(n) < sp.length:
		c.limit = min(c.limit, sp.slice+1)
	}
}

// carriesOn reports whether slice sl's queue pair posts another slice of its
// block after it: in write mode sl then goes out as a plain RDMA WRITE, whose
// immediate the block's last slice carries.
func (p *planner) carriesOn(c *cursor, sl uint64) bool {
	return p.g.NextOnQP(sl) < c.limit // wire.NoSlice after the block's last slice
}
