package placement

import (
	"errors"
	"fmt"
)

// Geometry is how a stream is cut into blocks and slices.
type Geometry struct {
	BlockBytes uint64 // bytes per ring block
	SliceBytes uint64 // bytes per slice (the unit data lands in)
}

// Validate checks that the geometry can place data.
func (g Geometry) Validate() error {
	switch {
	case g.BlockBytes == 0:
		return errors.New("block size is 0")
	case g.SliceBytes == 0:
		return errors.New("slice size is 0")
	}
	return nil
}

// SlicesPerBlock is S, the number of slices per block.
func (g Geometry) SlicesPerBlock() uint64 {
	return (g.BlockBytes + g.SliceBytes - 1) / g.SliceBytes
}

// Slice returns the block sequence number of slice n, its offset inside the
// block and its full length (ignoring the end of the stream).
func (g Geometry) Slice(n uint64) (block, off, length uint64) {
	s := g.SlicesPerBlock()
	block, k := n/s, n%s
	off = k * g.SliceBytes
	return block, off, min(g.SliceBytes, g.BlockBytes-off)
}

// StreamOffset is the stream byte at which slice n starts.
func (g Geometry) StreamOffset(n uint64) uint64 {
	block, off, _ := g.Slice(n)
	return block*g.BlockBytes + off
}

// Locate returns the block and the slot inside it of the slice that starts
// at stream byte off; an offset inside a slice is an error.
func (g Geometry) Locate(off uint64) (block, slot uint64, err error) {
	block, in := off/g.BlockBytes, off%g.BlockBytes
	if in%g.SliceBytes != 0 {
		return 0, 0, errorf("byte %d does not start a slice (block %d, %d bytes into a %d-byte slice)", off, block, in%g.SliceBytes, g.SliceBytes)
	}
	return block, in / g.SliceBytes, nil
}

// SliceAt returns the number of the slice holding stream byte off.
func (g Geometry) SliceAt(off uint64) uint64 {
	return (off/g.BlockBytes)*g.SlicesPerBlock() + (off%g.BlockBytes)/g.SliceBytes
}

// Slices is the number of slices a stream of total bytes is cut into.
func (g Geometry) Slices(total uint64) uint64 {
	if total == 0 {
		return 0
	}
	return g.SliceAt(total-1) + 1
}

// Blocks is the number of blocks a stream of total bytes fills.
func (g Geometry) Blocks(total uint64) uint64 {
	return (total + g.BlockBytes - 1) / g.BlockBytes
}

// ErrPlacement is matched (errors.Is) by every error about data that cannot
// be placed: outside the open blocks, twice, too long, past the end. Its
// messages name the data and nothing else, so a receiver can say in its own
// words whose fault it is (the RC receiver: a protocol error).
var ErrPlacement = errors.New("data cannot be placed")

type placementError string

func (e placementError) Error() string        { return string(e) }
func (e placementError) Is(target error) bool { return target == ErrPlacement }

func errorf(format string, a ...any) error { return placementError(fmt.Sprintf(format, a...)) }
