package assemble

import (
	"context"
	"errors"
	"fmt"
	"math/bits"

	"github.com/ringcap/ringcap/pkg/capture/ring"
)

// ErrClosed is returned by Put after Close.
var ErrClosed = errors.New("assemble: assembler closed")

// Assembler writes placed payloads into the blocks of one observation in a
// ring (see the package documentation for the window and the counts).
type Assembler struct {
	cfg    Config
	ctx    context.Context
	w      *ring.Worker
	bsize  uint64
	window uint64
	ahead  uint64
	resync resync
	slots  []slot // open block seq lives in slots[seq & mask]
	mask   uint64 // len(slots)-1: slots are a power of two, at least the window
	base   uint64 // oldest block in the window
	next   uint64 // next block to open; base <= next <= base+window
	gaps   []Range
	header bool // the header is in the ring
	err    error
	closed bool
	cerr   error
	c      counters
}

// slot is one open block: its ring index, memory and the bytes present.
type slot struct {
	index    int
	data     []byte
	present  spans
	received uint64
}

// New starts an assembler over cfg's ring; the ring worker it starts opens
// blocks until Close or until ctx ends (which also ends a Put waiting for a
// block).
func New(ctx context.Context, cfg Config) (*Assembler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ahead := cfg.MaxAhead
	if ahead == 0 {
		ahead = cfg.Window
	}
	// One block beyond the window is opened ahead when the ring has it, so
	// that advancing rarely waits for the worker.
	w := ring.NewWorker(cfg.Writer, min(cfg.Window+1, cfg.RingBlocks))
	nslots := uint64(1) << bits.Len(uint(cfg.Window-1)) // a mask, not a division, finds a block's slot
	a := &Assembler{cfg: cfg, ctx: ctx, w: w, bsize: uint64(cfg.BlockBytes), window: uint64(cfg.Window),
		ahead: uint64(ahead), resync: newResync(cfg), slots: make([]slot, nslots), mask: nslots - 1}
	go w.Run(ctx)
	return a, nil
}

// Put copies payload into the ring at stream byte offset, or counts why it
// does not. It returns an error only when the ring fails (or after Close);
// the assembler is then done and Close ends it.
func (a *Assembler) Put(offset uint64, payload []byte) error {
	if a.err != nil {
		return a.err
	}
	a.c.packets.Add(1)
	n := uint64(len(payload))
	if n == 0 {
		a.c.received.Add(1)
		return nil
	}
	end := offset + n
	if end < offset {
		a.c.malformed.Add(1) // the payload runs past the end of the stream's byte space
		return nil
	}
	first := offset / a.bsize
	in := offset - first*a.bsize // the payload's start in block first
	last := first
	if in+n > a.bsize {
		last = (end - 1) / a.bsize
	}
	switch {
	case first < a.base:
		a.c.late.Add(1)
		return nil
	case last-first >= a.window:
		a.c.outOfWindow.Add(1)
		return nil
	case last >= a.base+a.window+a.ahead:
		if ok, err := a.resync.moved(a.base+a.window, last); !ok {
			a.c.outOfWindow.Add(1)
			return err
		}
	default:
		a.resync.strays = 0
	}
	if err := a.reach(last); err != nil {
		return a.fail(err)
	}
	if a.present(first, in, n) {
		a.c.duplicate.Add(1)
		return nil
	}
	a.place(first, in, payload)
	a.c.received.Add(1)
	a.c.receivedBytes.Add(n)
	return nil
}

// fail records the ring's failure; every later Put returns it.
func (a *Assembler) fail(err error) error {
	a.err = err
	return err
}

// reach makes block last open: the window advances past the blocks that
// leave it (handed over) and opens the blocks up to last.
func (a *Assembler) reach(last uint64) error {
	for last >= a.base+a.window {
		if err := a.handOver(false); err != nil {
			return err
		}
	}
	for a.next <= last {
		if err := a.open(); err != nil {
			return err
		}
	}
	return nil
}

// open opens block a.next, waiting for the ring worker to deliver a block.
func (a *Assembler) open() error {
	var idx int
	select {
	case idx = <-a.w.Opened():
	case err := <-a.w.Errs():
		return fmt.Errorf("assemble: open block %d: %w", a.next, err)
	case <-a.ctx.Done():
		return fmt.Errorf("assemble: open block %d: %w", a.next, a.ctx.Err())
	}
	s := a.slot(a.next)
	s.index, s.data, s.present, s.received = idx, a.cfg.Block(idx)[:a.bsize], s.present[:0], 0
	a.next++
	return nil
}

// slot is the slot of open block seq.
func (a *Assembler) slot(seq uint64) *slot { return &a.slots[seq&a.mask] }

// present reports whether any byte of the n bytes from byte in of block seq
// on is already present.
func (a *Assembler) present(seq, in, n uint64) bool {
	for n > 0 {
		k := min(n, a.bsize-in)
		if a.slot(seq).present.overlaps(in, in+k) {
			return true
		}
		seq, in, n = seq+1, 0, n-k
	}
	return false
}

// place copies p to byte in of block seq on, split at block boundaries.
func (a *Assembler) place(seq, in uint64, p []byte) {
	for len(p) > 0 {
		k := min(uint64(len(p)), a.bsize-in)
		s := a.slot(seq)
		copy(s.data[in:], p[:k])
		s.present.add(in, in+k)
		s.received += k
		seq, in, p = seq+1, 0, p[k:]
	}
}
