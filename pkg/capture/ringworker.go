package capture

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ringWorker owns every call into the BlockWriter of one observation: it
// opens blocks ahead (up to the window) and marks them filled in order, so a
// wait for a slow reader never stalls the completion loop.
type ringWorker struct {
	w      BlockWriter
	window int
	idx    []int // the blocks one open call opened
	opened chan int
	cmds   chan ringCmd
	errc   chan error
	done   chan struct{}

	mu  sync.Mutex
	max uint64 // blocks to open at most (^0: unlimited)
	// octx bounds the waits of OpenBlock; openCancel cancels it (a block
	// no longer needed, the observation's end, stop). It serves open after
	// open until cancelled: a context per block would cost an allocation and
	// a registration with the parent per block.
	octx       context.Context
	openCancel context.CancelFunc
	stopOnce   sync.Once
	quit       chan struct{}
}

type ringCmd struct {
	n     int // bytes in each block
	count int // blocks to mark filled (more than one: full blocks, no eod)
	eod   bool
	end   bool
	reply chan error
}

func newRingWorker(w BlockWriter, window int) *ringWorker {
	return &ringWorker{w: w, window: window, idx: make([]int, max(window, 1)), opened: make(chan int, window+1), cmds: make(chan ringCmd, window+2),
		errc: make(chan error, 1), done: make(chan struct{}), max: ^uint64(0), quit: make(chan struct{})}
}

func (rw *ringWorker) run(ctx context.Context) {
	defer close(rw.done)
	defer rw.cancelOpen()
	open, total := 0, uint64(0)
	// exec runs one command; it reports whether the worker is done.
	exec := func(c ringCmd) bool {
		if c.end {
			c.reply <- rw.w.EndOfData(ctx)
			return true
		}
		if c.eod {
			// The observation ends with this block: opening another one
			// would start the next observation in the ring.
			rw.limit(total)
		}
		open -= c.count
		if err := rw.markFilled(ctx, c); err != nil {
			rw.errc <- err
			return true
		}
		return false
	}
	for {
		select {
		case c := <-rw.cmds:
			if exec(c) {
				return
			}
			continue
		case <-rw.quit:
			return
		default:
		}
		octx, canOpen := rw.openContext(ctx, open, total)
		if canOpen {
			n, err := rw.open(octx, open, total)
			for _, idx := range rw.idx[:n] {
				rw.opened <- idx
			}
			open += n
			total += uint64(n)
			if err != nil {
				if octx.Err() != nil && ctx.Err() == nil {
					continue // cancelled because no more blocks are needed
				}
				if ctx.Err() != nil {
					return
				}
				rw.errc <- fmt.Errorf("open ring block: %w", err)
				return
			}
			continue
		}
		select {
		case c := <-rw.cmds:
			if exec(c) {
				return
			}
		case <-rw.quit:
			return
		case <-ctx.Done():
			return
		}
	}
}

// open opens the next block into rw.idx[0], waiting for it, and with a
// BlocksOpener as many more as the window and the limit allow that are free
// at once; it returns how many it opened.
func (rw *ringWorker) open(ctx context.Context, open int, total uint64) (int, error) {
	if bo, ok := rw.w.(BlocksOpener); ok {
		rw.mu.Lock()
		k := uint64(rw.window - open)
		if rw.max <= total {
			k = 0 // limited since openContext: nothing more to open
		} else if left := rw.max - total; left < k {
			k = left
		}
		rw.mu.Unlock()
		return bo.OpenBlocks(ctx, rw.idx[:k])
	}
	idx, err := rw.w.OpenBlock(ctx)
	if err != nil {
		return 0, err
	}
	rw.idx[0] = idx
	return 1, nil
}

// markFilled marks the c.count oldest open blocks filled: several full ones
// in one step when the writer can (FullBlocksFiller), else one at a time.
func (rw *ringWorker) markFilled(ctx context.Context, c ringCmd) error {
	if f, ok := rw.w.(FullBlocksFiller); ok && c.count > 1 {
		if err := f.MarkFilledFull(c.count); err != nil {
			return fmt.Errorf("mark %d ring blocks filled: %w", c.count, err)
		}
		return nil
	}
	for range c.count {
		if err := rw.w.MarkFilled(ctx, c.n, c.eod); err != nil {
			return fmt.Errorf("mark ring block filled (%d bytes): %w", c.n, err)
		}
	}
	return nil
}

// openContext reports whether another block may be opened (fewer than the
// window open, fewer than the limit in all) and the context for its wait:
// the current one, or a new one when that was cancelled. None once stopping.
func (rw *ringWorker) openContext(ctx context.Context, open int, total uint64) (context.Context, bool) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if open >= rw.window || total >= rw.max {
		return nil, false
	}
	select {
	case <-rw.quit:
		return nil, false // stop cancels the current context: no new one
	default:
	}
	if rw.octx == nil || rw.octx.Err() != nil {
		rw.octx, rw.openCancel = context.WithCancel(ctx)
	}
	return rw.octx, true
}

// cancelOpen cancels the wait of OpenBlock, if any.
func (rw *ringWorker) cancelOpen() {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.openCancel != nil {
		rw.openCancel()
	}
}

// limit caps the number of blocks to open (the stream's length is known);
// a wait for a block beyond it is cancelled.
func (rw *ringWorker) limit(n uint64) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if n < rw.max {
		rw.max = n
	}
}

func (rw *ringWorker) call(c ringCmd) error {
	c.reply = make(chan error, 1)
	if c.end {
		rw.cancelOpen()
	}
	select {
	case rw.cmds <- c:
	case <-rw.done:
		return errors.New("ring worker stopped")
	}
	select {
	case err := <-c.reply:
		return err
	case <-rw.done:
		select {
		case err := <-c.reply:
			return err
		default:
			return errors.New("ring worker stopped")
		}
	}
}

// fill queues marking the count oldest open blocks filled with n bytes each
// (count > 1 only for full blocks without eod); it does not wait (the worker
// may be waiting for a reader to free a block to open). Errors come on errc.
func (rw *ringWorker) fill(n, count int, eod bool) error {
	select {
	case rw.cmds <- ringCmd{n: n, count: count, eod: eod}:
		return nil
	case <-rw.done:
		select {
		case err := <-rw.errc:
			rw.errc <- err
			return err
		default:
			return errors.New("ring worker stopped")
		}
	}
}

// endOfData waits for the queued fills, then ends the observation.
func (rw *ringWorker) endOfData() error {
	rw.limit(0)
	if err := rw.call(ringCmd{end: true}); err != nil {
		select {
		case ferr := <-rw.errc:
			rw.errc <- ferr
			return ferr
		default:
		}
		return fmt.Errorf("end of data: %w", err)
	}
	return nil
}

func (rw *ringWorker) stop() {
	rw.stopOnce.Do(func() { close(rw.quit) })
	rw.cancelOpen()
	<-rw.done
}
