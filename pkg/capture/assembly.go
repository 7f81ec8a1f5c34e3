package capture

import (
	"fmt"
	"math/bits"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// Filled says what to do with one ring block: mark it filled with Bytes valid
// bytes. Bytes < block size ends the observation (end of data).
type Filled struct {
	Seq   uint64 // block sequence number within the observation
	Index int    // ring index of the block
	Bytes uint64
	// Last is set on the final block of the observation; it carries the
	// end of data even when it is full (an observation that ends on a block
	// boundary ends on that block, never with an extra empty one).
	Last bool
}

// assembler tracks the open blocks of one observation on the receiving side:
// which slices have landed (a presence bitmap per block, as spead2 keeps one per
// heap), which blocks are complete, and where the stream ends. It is pure
// logic, driven by the receiver with block openings and completions.
type assembler struct {
	g      wire.Geometry
	s      uint64 // slices per block
	open   []*asmBlock
	next   uint64 // sequence number of the next block to open
	end    uint64 // stream length once known
	hasEnd bool
	short  uint64 // a slice shorter than its full length marks the end here
	hasSh  bool
	landed uint64      // bytes landed in total
	filled uint64      // blocks handed out by takeFilled
	spare  []*asmBlock // blocks taken out of the window, reused by openBlock
	out    []Filled    // takeFilled's result, reused
	// hold keeps the newest full block back while the end of the stream is
	// unknown and nothing has landed after it, so that a stream ending on
	// that block boundary can still end on it (needs a window of >= 2).
	hold bool
}

type asmBlock struct {
	seq     uint64
	index   int
	present []uint64 // bitmap of landed slices
	count   uint64   // slices landed
	bytes   uint64   // bytes landed
}

func newAssembler(g wire.Geometry) (*assembler, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return &assembler{g: g, s: g.SlicesPerBlock()}, nil
}

// openBlock adds the next block (ring index) to the window and returns its
// sequence number.
func (a *assembler) openBlock(index int) uint64 {
	var b *asmBlock
	if n := len(a.spare); n > 0 {
		b, a.spare = a.spare[n-1], a.spare[:n-1]
		clear(b.present)
		*b = asmBlock{present: b.present}
	} else {
		b = &asmBlock{present: make([]uint64, (a.s+63)/64)}
	}
	b.seq, b.index = a.next, index
	a.open = append(a.open, b)
	a.next++
	return b.seq
}

// dropFront takes the n oldest blocks out of the window, keeping them for
// reuse; the window's array is shifted down so that appends reuse it.
func (a *assembler) dropFront(n int) {
	a.spare = append(a.spare, a.open[:n]...)
	a.open = a.open[:copy(a.open, a.open[n:])]
}

// room is the number of open blocks that can still take data: when it is 0
// the sender cannot make progress until a reader frees a block.
func (a *assembler) room() int {
	n := 0
	for _, b := range a.open {
		if b.bytes < a.expected(b.seq) {
			n++
		}
	}
	return n
}

// window returns the number of open blocks and the first slice number not
// covered by them.
func (a *assembler) window() (blocks int, endSlice uint64) {
	return len(a.open), a.next * a.s
}

// resolve turns a 32-bit immediate into the slice number inside the window.
func (a *assembler) resolve(imm uint32) (uint64, error) {
	if len(a.open) == 0 {
		return 0, fmt.Errorf("%w: data for slice %d while no block is open", wire.ErrProtocol, imm)
	}
	base := a.open[0].seq * a.s
	n := base + uint64(imm-uint32(base))
	if n >= a.next*a.s {
		return 0, fmt.Errorf("%w: slice %d (immediate %d) is outside the open blocks %d..%d", wire.ErrProtocol, n, imm, a.open[0].seq, a.next-1)
	}
	return n, nil
}

// landedIn is the number of slices of open block seq that have landed.
func (a *assembler) landedIn(seq uint64) (uint64, error) {
	if len(a.open) == 0 || seq < a.open[0].seq || seq >= a.next {
		return 0, fmt.Errorf("%w: block %d is not open", wire.ErrProtocol, seq)
	}
	return a.open[seq-a.open[0].seq].count, nil
}

// slice is wire.Geometry's Slice with the slices per block computed once:
// one division per call instead of two (the receive loop's per-message cost).
func (a *assembler) slice(n uint64) (block, off, length uint64) {
	block, k := n/a.s, n%a.s
	off = k * a.g.MsgBytes
	return block, off, min(a.g.MsgBytes, a.g.BlockBytes-off)
}

// land records that n bytes of slice sl have arrived.
func (a *assembler) land(sl uint64, n uint64) error {
	seq, k := sl/a.s, sl%a.s
	off := k * a.g.MsgBytes
	full := min(a.g.MsgBytes, a.g.BlockBytes-off)
	if len(a.open) == 0 || seq < a.open[0].seq || seq >= a.next {
		return fmt.Errorf("%w: slice %d belongs to block %d, which is not open", wire.ErrProtocol, sl, seq)
	}
	b := a.open[seq-a.open[0].seq]
	if b.present[k/64]&(1<<(k%64)) != 0 {
		return fmt.Errorf("%w: slice %d arrived twice", wire.ErrProtocol, sl)
	}
	if n > full {
		return fmt.Errorf("%w: slice %d carries %d bytes, at most %d fit", wire.ErrProtocol, sl, n, full)
	}
	start := seq*a.g.BlockBytes + off
	if a.hasEnd && start+n > a.end {
		return fmt.Errorf("%w: slice %d ends at byte %d, after the announced end %d", wire.ErrProtocol, sl, start+n, a.end)
	}
	if a.hasSh && start >= a.short {
		return fmt.Errorf("%w: slice %d arrived after the stream ended at byte %d", wire.ErrProtocol, sl, a.short)
	}
	if n < full {
		if a.hasSh {
			return fmt.Errorf("%w: second short slice %d (the stream already ended at byte %d)", wire.ErrProtocol, sl, a.short)
		}
		a.hasSh, a.short = true, start+n
		if a.hasEnd && a.short != a.end {
			return fmt.Errorf("%w: short slice ends the stream at byte %d, the sender announced %d", wire.ErrProtocol, a.short, a.end)
		}
	}
	b.present[k/64] |= 1 << (k % 64)
	b.count++
	b.bytes += n
	a.landed += n
	return nil
}

// setEnd records the sender's announced stream length.
func (a *assembler) setEnd(total uint64) error {
	if a.hasEnd {
		if a.end != total {
			return fmt.Errorf("%w: the sender announced %d bytes, then %d", wire.ErrProtocol, a.end, total)
		}
		return nil
	}
	if a.hasSh && a.short != total {
		return fmt.Errorf("%w: the sender announced %d bytes but a short slice ended the stream at byte %d", wire.ErrProtocol, total, a.short)
	}
	if total < a.filled*a.g.BlockBytes {
		return fmt.Errorf("%w: the sender announced %d bytes but %d blocks were already filled", wire.ErrProtocol, total, a.filled)
	}
	if total < a.landedEnd() {
		return fmt.Errorf("%w: the sender announced %d bytes but data up to byte %d has landed", wire.ErrProtocol, total, a.landedEnd())
	}
	a.hasEnd, a.end = true, total
	return nil
}

// landedEnd is the stream byte just after the furthest slice that landed.
func (a *assembler) landedEnd() uint64 {
	var end uint64
	for _, b := range a.open {
		for w := len(b.present) - 1; w >= 0; w-- {
			if b.present[w] == 0 {
				continue
			}
			k := uint64(w*64 + 63 - bits.LeadingZeros64(b.present[w]))
			sl := b.seq*a.s + k
			_, _, full := a.g.Slice(sl)
			e := a.g.StreamOffset(sl) + full
			if a.hasSh && e > a.short {
				e = a.short
			}
			end = max(end, e)
			break
		}
	}
	return end
}

// endBlocks is the number of blocks of the announced stream (valid after setEnd).
func (a *assembler) endBlocks() uint64 {
	return (a.end + a.g.BlockBytes - 1) / a.g.BlockBytes
}

// expected is the number of bytes block seq will hold.
func (a *assembler) expected(seq uint64) uint64 {
	if !a.hasEnd {
		return a.g.BlockBytes
	}
	start := seq * a.g.BlockBytes
	if a.end <= start {
		return 0
	}
	return min(a.g.BlockBytes, a.end-start)
}

// takeFilled pops the complete blocks at the front of the window, oldest
// first. A block is complete when all its bytes have landed: a full block, or
// the last block of an announced stream. The result is valid until the next
// call.
func (a *assembler) takeFilled() []Filled {
	out, n := a.out[:0], 0
	for ; n < len(a.open); n++ {
		b := a.open[n]
		want := a.expected(b.seq)
		if want == 0 || b.bytes != want {
			break
		}
		if a.hold && !a.hasEnd && (len(a.open) < n+2 || a.open[n+1].count == 0) {
			break
		}
		last := a.hasEnd && b.seq+1 == a.endBlocks()
		out = append(out, Filled{Seq: b.seq, Index: b.index, Bytes: b.bytes, Last: last})
		a.filled++
	}
	a.dropFront(n)
	a.out = out
	return out
}

// complete reports whether every byte of the announced stream has been handed
// out by takeFilled.
func (a *assembler) complete() bool {
	return a.hasEnd && a.filled >= a.endBlocks()
}

// truncate ends an observation that stopped early (the sender died or
// failed). It returns the blocks to mark filled: every complete block at the
// front of the window, then the longest prefix of landed slices of the next
// one — the exact byte count a reader can trust. The final entry is marked
// Last; fill is empty when nothing landed. lost counts landed bytes beyond
// the prefix, which cannot be trusted and are not committed.
func (a *assembler) truncate() (fill []Filled, lost uint64) {
	a.hold = false
	fill = a.takeFilled()
	var landedAfter uint64
	if len(a.open) > 0 {
		b := a.open[0]
		var prefix uint64
		for k := uint64(0); k < a.s; k++ {
			if b.present[k/64]&(1<<(k%64)) == 0 {
				break
			}
			_, off, full := a.g.Slice(b.seq*a.s + k)
			prefix = off + full
			if a.hasSh && b.seq*a.g.BlockBytes+prefix > a.short {
				prefix = a.short - b.seq*a.g.BlockBytes
				break
			}
		}
		if prefix > 0 {
			fill = append(fill, Filled{Seq: b.seq, Index: b.index, Bytes: prefix, Last: true})
			a.filled++
		}
		for _, o := range a.open {
			landedAfter += o.bytes
		}
		landedAfter -= prefix
	}
	a.open = nil
	if n := len(fill); n > 0 {
		fill[n-1].Last = true
	}
	return fill, landedAfter
}
