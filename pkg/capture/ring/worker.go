package ring

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Worker owns every call into the BlockWriter of one observation: it opens
// blocks ahead (up to the window) and marks them filled in order, so a wait
// for a slow reader never stalls the loop that lands the data. Run it on a
// goroutine of its own; the blocks it opens come on Opened, its failure on
// Errs; Stop ends it.
type Worker struct {
	w      BlockWriter
	window int
	idx    []int // the blocks one open call opened
	opened chan int
	cmds   chan cmd
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

// cmd is a command to the worker: mark blocks filled, or end the data.
type cmd struct {
	n     int // bytes in each block
	count int // blocks to mark filled (more than one: full blocks, no eod)
	eod   bool
	end   bool
	reply chan error
}

// NewWorker returns a worker over w that keeps up to window blocks open.
func NewWorker(w BlockWriter, window int) *Worker {
	return &Worker{w: w, window: window, idx: make([]int, max(window, 1)), opened: make(chan int, window+1), cmds: make(chan cmd, window+2),
		errc: make(chan error, 1), done: make(chan struct{}), max: ^uint64(0), quit: make(chan struct{})}
}

// Run opens blocks and runs the commands queued by Fill and EndOfData until
// the end of data, a failure, Stop or ctx.
func (rw *Worker) Run(ctx context.Context) {
	defer close(rw.done)
	defer rw.cancelOpen()
	var st workerState
	for {
		select {
		case c := <-rw.cmds:
			if rw.exec(ctx, &st, c) {
				return
			}
			continue
		case <-rw.quit:
			return
		default:
		}
		if octx, canOpen := rw.openContext(ctx, st.open, st.total); canOpen {
			if rw.openStep(ctx, octx, &st) {
				return
			}
			continue
		}
		select {
		case c := <-rw.cmds:
			if rw.exec(ctx, &st, c) {
				return
			}
		case <-rw.quit:
			return
		case <-ctx.Done():
			return
		}
	}
}

// workerState is what Run counts: blocks open now and opened in all.
type workerState struct {
	open  int
	total uint64
}

// exec runs one command; it reports whether the worker is done.
func (rw *Worker) exec(ctx context.Context, st *workerState, c cmd) bool {
	if c.end {
		c.reply <- rw.w.EndOfData(ctx)
		return true
	}
	if c.eod {
		// The observation ends with this block: opening another one
		// would start the next observation in the ring.
		rw.Limit(st.total)
	}
	st.open -= c.count
	if err := rw.markFilled(ctx, c); err != nil {
		rw.errc <- err
		return true
	}
	return false
}

// openStep opens the next blocks and hands them out; it reports whether the
// worker is done (stopping, or failed).
func (rw *Worker) openStep(ctx, octx context.Context, st *workerState) bool {
	n, err := rw.open(octx, st.open, st.total)
	for _, idx := range rw.idx[:n] {
		rw.opened <- idx
	}
	st.open += n
	st.total += uint64(n)
	switch {
	case err == nil:
		return false
	case octx.Err() != nil && ctx.Err() == nil:
		return false // cancelled because no more blocks are needed
	case ctx.Err() != nil:
		return true
	}
	rw.errc <- fmt.Errorf("open ring block: %w", err)
	return true
}

// open opens the next block into rw.idx[0], waiting for it, and with a
// BlocksOpener as many more as the window and the limit allow that are free
// at once; it returns how many it opened.
func (rw *Worker) open(ctx context.Context, open int, total uint64) (int, error) {
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
func (rw *Worker) markFilled(ctx context.Context, c cmd) error {
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
func (rw *Worker) openContext(ctx context.Context, open int, total uint64) (context.Context, bool) {
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
func (rw *Worker) cancelOpen() {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.openCancel != nil {
		rw.openCancel()
	}
}

// Limit caps the number of blocks to open (the stream's length is known);
// a wait for a block beyond it is cancelled.
func (rw *Worker) Limit(n uint64) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if n < rw.max {
		rw.max = n
	}
}

func (rw *Worker) call(c cmd) error {
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

// Fill queues marking the count oldest open blocks filled with n bytes each
// (count > 1 only for full blocks without eod); it does not wait (the worker
// may be waiting for a reader to free a block to open). Errors come on errc.
func (rw *Worker) Fill(n, count int, eod bool) error {
	select {
	case rw.cmds <- cmd{n: n, count: count, eod: eod}:
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

// EndOfData waits for the queued fills, then ends the observation.
func (rw *Worker) EndOfData() error {
	rw.Limit(0)
	if err := rw.call(cmd{end: true}); err != nil {
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

// Stop ends the worker and waits for it; it may be called more than once.
func (rw *Worker) Stop() {
	rw.stopOnce.Do(func() { close(rw.quit) })
	rw.cancelOpen()
	<-rw.done
}

// Opened delivers the ring index of each block opened, in order.
func (rw *Worker) Opened() <-chan int { return rw.opened }

// Errs delivers the worker's failure.
func (rw *Worker) Errs() <-chan error { return rw.errc }
