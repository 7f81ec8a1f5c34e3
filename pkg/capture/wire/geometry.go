package wire

import (
	"errors"
	"fmt"
	"math/bits"
	"time"
)

// Geometry is how a stream is cut into ring blocks and messages. Slice g of
// the stream (g = 0, 1, 2, ... over the whole observation) is slice g mod S of
// block g div S, where S = SlicesPerBlock; it starts at byte
// (g div S)*BlockBytes + (g mod S)*MsgBytes of the stream. Every slice is
// MsgBytes long except the last of each block (when BlockBytes is not a
// multiple of MsgBytes) and the last of the stream. Slices are striped over
// the queue pairs: slice g travels on queue pair g mod QPs; or, with
// WholeBlocks, each block travels whole on one queue pair, the one that takes
// it (the sender hands the next block to whichever queue pair has room). Both
// ends compute the same placement, so data is placed by sequence number,
// never by arrival order.
type Geometry struct {
	BlockBytes uint64
	MsgBytes   uint64
	QPs        int
	NBufs      int // ring blocks (bounds the window of open blocks)
	// WholeBlocks sends each block whole on one queue pair instead of
	// striping slices (write mode): the queue pair's last write into the
	// block carries the block's only immediate, so the receiver takes one
	// completion per block whatever the number of queue pairs. Blocks go to
	// the queue pairs as they free up, not in turn, so queue pairs that run
	// faster (their CPU less loaded) carry more blocks instead of waiting for
	// the slowest one.
	WholeBlocks bool
}

// Validate checks that the geometry can be used and that every slice number
// inside the window of open blocks fits a 32-bit immediate unambiguously.
func (g Geometry) Validate() error {
	switch {
	case g.BlockBytes == 0:
		return errors.New("block size is 0")
	case g.MsgBytes == 0:
		return errors.New("message size is 0")
	case g.MsgBytes > 1<<31:
		return fmt.Errorf("message size %d exceeds 2 GiB", g.MsgBytes)
	case g.QPs < 1 || g.QPs > MaxQPs:
		return fmt.Errorf("%d queue pairs (want 1..%d)", g.QPs, MaxQPs)
	case g.NBufs < 1:
		return fmt.Errorf("%d ring blocks", g.NBufs)
	}
	if hi, lo := bits.Mul64(g.SlicesPerBlock(), uint64(g.NBufs)*2); hi != 0 || lo > 1<<32 {
		return fmt.Errorf("%d blocks of %d slices do not fit the 32-bit immediate: use larger messages", g.NBufs, g.SlicesPerBlock())
	}
	return nil
}

// SlicesPerBlock is S, the number of messages per ring block.
func (g Geometry) SlicesPerBlock() uint64 {
	return (g.BlockBytes + g.MsgBytes - 1) / g.MsgBytes
}

// Slice returns the block sequence number, the offset inside the block and the
// full length of slice n (ignoring the end of the stream).
func (g Geometry) Slice(n uint64) (block, off, length uint64) {
	s := g.SlicesPerBlock()
	block, k := n/s, n%s
	off = k * g.MsgBytes
	length = min(g.MsgBytes, g.BlockBytes-off)
	return block, off, length
}

// StreamOffset is the stream byte at which slice n starts.
func (g Geometry) StreamOffset(n uint64) uint64 {
	block, off, _ := g.Slice(n)
	return block*g.BlockBytes + off
}

// SliceBlock is the block sequence number of slice n.
func (g Geometry) SliceBlock(n uint64) uint64 { return n / g.SlicesPerBlock() }

// NoSlice is FirstOnQP's and NextOnQP's answer for a queue pair whose next
// slice is not fixed: with WholeBlocks, it takes the next block nobody has.
const NoSlice = ^uint64(0)

// QP is the queue pair that carries slice n when slices are striped (not
// WholeBlocks).
func (g Geometry) QP(n uint64) int { return int(n % uint64(g.QPs)) }

// FirstOnQP is the first slice queue pair q carries: q, or NoSlice with
// WholeBlocks.
func (g Geometry) FirstOnQP(q int) uint64 {
	if g.WholeBlocks {
		return NoSlice
	}
	return uint64(q)
}

// NextOnQP is the slice after n on n's queue pair: n+QPs; with WholeBlocks
// the next slice of n's block, or NoSlice after the block's last one.
func (g Geometry) NextOnQP(n uint64) uint64 {
	if !g.WholeBlocks {
		return n + uint64(g.QPs)
	}
	if (n+1)%g.SlicesPerBlock() == 0 {
		return NoSlice
	}
	return n + 1
}

// SliceAt returns the slice holding stream byte off.
func (g Geometry) SliceAt(off uint64) uint64 {
	return (off/g.BlockBytes)*g.SlicesPerBlock() + (off%g.BlockBytes)/g.MsgBytes
}

// Slices is the number of slices a stream of total bytes is cut into.
func (g Geometry) Slices(total uint64) uint64 {
	if total == 0 {
		return 0
	}
	return g.SliceAt(total-1) + 1
}

// ValidateLink checks the settings a receiver and its senders must agree on.
func ValidateLink(mode Mode, qps int, msgBytes uint64) error {
	switch {
	case mode != ModeSend && mode != ModeWrite:
		return fmt.Errorf("unknown transfer mode %d", mode)
	case qps < 1 || qps > MaxQPs:
		return fmt.Errorf("--qps %d: want 1..%d", qps, MaxQPs)
	case msgBytes == 0 || msgBytes > 1<<31:
		return fmt.Errorf("--msg-bytes %d: want 1..2147483648", msgBytes)
	}
	return nil
}

// ErrPeerGone is returned when the other side went away mid-stream.
var ErrPeerGone = errors.New("peer disconnected")

// AnswerHeldEvery is how often a receiver held back before its answer tells
// the sender so.
const AnswerHeldEvery = time.Second
