package dada

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// WriterOptions controls a Writer.
type WriterOptions struct {
	// NewStyleHeader raises end-of-data on the header ring after every header, as PSRDADA
	// 1.1.0's dada_client writers do. The default (old style) keeps the header ring one
	// long transfer, which every PSRDADA reader version handles across observations; each
	// header still moves that transfer's start-of-data to itself (as PSRDADA's old-style
	// writers raise a start-of-data per session), so a reader that starts later gets the
	// current observation's header, while a reader already inside the transfer is never
	// asked to acknowledge it.
	NewStyleHeader bool
}

// WriteBlock is a data block opened for writing. Data is the whole block (BufSize bytes)
// and stays valid until the block is marked filled.
type WriteBlock struct {
	Index int    // ring index (Seq % NBufs)
	Seq   uint64 // absolute block count since the ring was created
	Data  []byte
}

// ErrNoOpenBlock: MarkFilled without an open block.
var ErrNoOpenBlock = errors.New("no open block")

// Writer holds the write locks of a HDU's header and data rings (dada_hdu_lock_write).
// It writes any number of observations (transfers) in a row: WriteHeader, data (Write, or
// OpenBlock/MarkFilled), EndOfData; Close ends an open observation and unlocks.
// A Writer's methods may be called from several goroutines but are serialised.
type Writer struct {
	h    *HDU
	opts WriterOptions
	hdr  wbuf
	data wbuf

	mu       sync.Mutex
	open     []WriteBlock // blocks handed out and not yet marked filled, oldest first
	cur      []byte       // streaming Write: the block being filled ...
	curOff   int          // ... and how many bytes it holds
	inObs    bool         // something (header or data) was written since the last EOD
	closed   bool
	closeErr error
}

// LockWrite locks the header ring and then the data ring for writing, waiting while another
// writer holds them. The locks are released if the process dies (SEM_UNDO).
func (h *HDU) LockWrite(ctx context.Context, o WriterOptions) (*Writer, error) {
	if !h.enter() {
		return nil, ErrClosed
	}
	defer h.exit()
	w := &Writer{h: h, opts: o, hdr: wbuf{r: h.Header}, data: wbuf{r: h.Data}}
	if err := w.hdr.lockWrite(ctx); err != nil {
		return nil, err
	}
	if err := w.data.lockWrite(ctx); err != nil {
		_ = w.hdr.unlockWrite()
		return nil, err
	}
	if !o.NewStyleHeader && w.hdr.state == stateWChange && w.hdr.xferOpen() {
		// Old style keeps the header ring one long transfer: continue it instead of
		// raising a start-of-data per session, which a persistent reader (in READING)
		// never acknowledges, so SODACK would run out after 8 sessions.
		w.hdr.setState(stateWriting)
	}
	h.addHandle(w)
	return w, nil
}

// HDU returns the writer's HDU.
func (w *Writer) HDU() *HDU { return w.h }

// WriteHeader writes one ASCII header block (NUL padded to the header block size) for the
// next observation.
func (w *Writer) WriteHeader(hdr []byte) error {
	return w.WriteHeaderContext(context.Background(), hdr)
}

// WriteHeaderContext is WriteHeader with a context for its waits (a header block still
// held by a reader).
func (w *Writer) WriteHeaderContext(ctx context.Context, hdr []byte) error {
	if err := w.acquire(); err != nil {
		return err
	}
	defer w.leave()
	r := w.h.Header
	if len(hdr) > r.bufsz {
		return fmt.Errorf("write header: %d bytes do not fit the %d-byte header block", len(hdr), r.bufsz)
	}
	if w.hdr.state == stateWriter { // after a new-style header: start the next transfer
		w.hdr.setState(stateWChange)
	}
	// An old-style header inside the header ring's open transfer starts an observation
	// all the same: its start-of-data moves to this header, so a reader that starts now
	// (dada_dbdisk -s) and the header viewers get it instead of the first observation's.
	restart := !w.opts.NewStyleHeader && w.hdr.state == stateWriting
	if restart {
		if err := w.hdr.chargeRestart(ctx); err != nil {
			return fmt.Errorf("write header: %w", err)
		}
	}
	idx, seq, err := w.hdr.getNextWrite(ctx)
	if err != nil {
		return fmt.Errorf("write header: %w", err)
	}
	blk := r.blocks[idx]
	n := copy(blk, hdr)
	clear(blk[n:])
	if restart {
		w.hdr.moveSOD(seq)
	}
	if w.opts.NewStyleHeader {
		w.hdr.enableEOD()
	}
	if _, err := w.hdr.markFilled(ctx, uint64(r.bufsz)); err != nil {
		return fmt.Errorf("write header: %w", err)
	}
	if w.opts.NewStyleHeader {
		w.hdr.finishXfer()
	}
	w.inObs = true
	return nil
}

// OpenBlock returns the next data block to fill (ipcbuf_get_next_write). Several blocks
// may be open at once; MarkFilled marks them in the order they were opened. It waits while
// the slowest reader still holds the block; cancelling ctx ends the wait. The first block of
// an observation raises start-of-data.
func (w *Writer) OpenBlock(ctx context.Context) (WriteBlock, error) {
	if err := w.acquire(); err != nil {
		return WriteBlock{}, err
	}
	defer w.leave()
	if w.cur != nil {
		return WriteBlock{}, errors.New("open block: a streaming Write is in progress")
	}
	return w.openBlock(ctx)
}

// OpenBlocks opens the next blocks to fill into dst, at least one and at most len(dst), and
// returns how many it opened: the first as OpenBlock does (waiting while the slowest reader
// holds it), then as many of the following ones as every reader has already cleared,
// without waiting, taking their clears from each reader in one step instead of one per
// block. The readers' protocol is unchanged.
func (w *Writer) OpenBlocks(ctx context.Context, dst []WriteBlock) (int, error) {
	if err := w.acquire(); err != nil {
		return 0, err
	}
	defer w.leave()
	switch {
	case w.cur != nil:
		return 0, errors.New("open blocks: a streaming Write is in progress")
	case len(dst) == 0:
		return 0, nil
	}
	b, err := w.openBlock(ctx)
	if err != nil {
		return 0, err
	}
	dst[0] = b
	if len(dst) == 1 || w.data.state != stateWriting {
		return 1, nil
	}
	seq, n, err := w.data.openFree(len(dst) - 1)
	if err != nil {
		return 1, fmt.Errorf("open blocks: %w", err)
	}
	nb := uint64(w.h.Data.nbufs)
	for i := range n {
		idx := int((seq + uint64(i)) % nb)
		b := WriteBlock{Index: idx, Seq: seq + uint64(i), Data: w.h.Data.blocks[idx]}
		w.open = append(w.open, b)
		dst[1+i] = b
	}
	return 1 + n, nil
}

func (w *Writer) openBlock(ctx context.Context) (WriteBlock, error) {
	if w.data.state == stateWriter { // previous observation ended: the next one starts here
		w.data.finishXfer()
		w.data.setState(stateWChange)
	}
	idx, seq, err := w.data.getNextWrite(ctx)
	if err != nil {
		return WriteBlock{}, fmt.Errorf("open block: %w", err)
	}
	b := WriteBlock{Index: idx, Seq: seq, Data: w.h.Data.blocks[idx]}
	w.open = append(w.open, b)
	w.inObs = true
	return b, nil
}

// MarkFilled marks the oldest open block as holding nbytes bytes. nbytes < BufSize ends the
// observation (end-of-data); other blocks still open are then discarded.
func (w *Writer) MarkFilled(nbytes int) error {
	return w.markFilledGuarded(context.Background(), nbytes, false)
}

// MarkFilledEOD marks the oldest open block as holding nbytes bytes and ends the
// observation with it, also when the block is full.
func (w *Writer) MarkFilledEOD(nbytes int) error {
	return w.markFilledGuarded(context.Background(), nbytes, true)
}

// MarkFilledContext is MarkFilled, or MarkFilledEOD when eod, with a context for the
// waits an end of data may have (readers acknowledging the previous one, a free block
// for an empty end): when ctx ends first, nothing of the end is published.
func (w *Writer) MarkFilledContext(ctx context.Context, nbytes int, eod bool) error {
	return w.markFilledGuarded(ctx, nbytes, eod)
}

// markFilledGuarded is MarkFilled and MarkFilledEOD: it holds the handle and the writer's
// lock around markFilled and refuses a closed writer or one in the middle of a streaming Write.
func (w *Writer) markFilledGuarded(ctx context.Context, nbytes int, eod bool) error {
	if err := w.acquire(); err != nil {
		return err
	}
	defer w.leave()
	if w.cur != nil {
		return errors.New("mark filled: a streaming Write is in progress")
	}
	return w.markFilled(ctx, nbytes, eod)
}

func (w *Writer) markFilled(ctx context.Context, nbytes int, eod bool) error {
	if len(w.open) == 0 {
		return fmt.Errorf("mark filled: %w", ErrNoOpenBlock)
	}
	if nbytes < 0 || nbytes > w.h.Data.bufsz {
		return fmt.Errorf("mark filled: %d bytes out of range 0..%d", nbytes, w.h.Data.bufsz)
	}
	if eod {
		w.data.enableEOD()
	}
	ended, err := w.data.markFilled(ctx, uint64(nbytes))
	if err != nil {
		return fmt.Errorf("mark block %d filled: %w", w.open[0].Seq, err)
	}
	// Shift down rather than reslice, so that the next append reuses the array.
	w.open = w.open[:copy(w.open, w.open[1:])]
	if ended {
		w.endObs()
	}
	return nil
}

// MarkFilledFull marks the k oldest open blocks filled, each with BufSize bytes, inside the
// observation (no end of data): as k calls of MarkFilled(BufSize), with one post of k
// full blocks to each reader instead of k posts of one, so a reader waiting for the
// first is woken once, not k times. The readers' protocol is unchanged (each still takes
// one FULL per block).
func (w *Writer) MarkFilledFull(k int) error {
	if err := w.acquire(); err != nil {
		return err
	}
	defer w.leave()
	switch {
	case w.cur != nil:
		return errors.New("mark filled: a streaming Write is in progress")
	case k < 0 || k > len(w.open):
		return fmt.Errorf("mark %d blocks filled: %d open: %w", k, len(w.open), ErrNoOpenBlock)
	case k == 0:
		return nil
	case k == 1 || w.data.state != stateWriting:
		for range k { // the first block of an observation (start of data), one at a time
			if err := w.markFilled(context.Background(), w.h.Data.bufsz, false); err != nil {
				return err
			}
		}
		return nil
	}
	if err := w.data.markFilledFull(uint64(k)); err != nil {
		return fmt.Errorf("mark blocks %d..%d filled: %w", w.open[0].Seq, w.open[k-1].Seq, err)
	}
	w.open = w.open[:copy(w.open, w.open[k:])]
	return nil
}

// endObs discards blocks still open after an EOD and moves the counters past it.
func (w *Writer) endObs() {
	w.open = nil
	w.cur, w.curOff = nil, 0
	w.data.finishXfer()
	w.inObs = false
}

// Write copies p into the ring (ipcio_write): blocks are marked filled when the next write
// needs the following block, so an observation of exactly N blocks ends on its last full
// block, never with an extra empty one.
func (w *Writer) Write(p []byte) (int, error) { return w.WriteContext(context.Background(), p) }

// WriteContext is Write with a context for the waits for free blocks.
func (w *Writer) WriteContext(ctx context.Context, p []byte) (int, error) {
	if err := w.acquire(); err != nil {
		return 0, err
	}
	defer w.leave()
	if w.cur == nil && len(w.open) > 0 {
		return 0, errors.New("write: blocks opened with OpenBlock are not marked filled")
	}
	n := 0
	for len(p) > 0 {
		if w.cur != nil && w.curOff == len(w.cur) {
			w.cur = nil
			if err := w.markFilled(ctx, len(w.open[0].Data), false); err != nil {
				return n, err
			}
		}
		if w.cur == nil {
			b, err := w.openBlock(ctx)
			if err != nil {
				return n, err
			}
			w.cur, w.curOff = b.Data, 0
		}
		c := copy(w.cur[w.curOff:], p)
		w.curOff += c
		p = p[c:]
		n += c
	}
	return n, nil
}

// EndOfData ends the current observation (ipcio_stop): a block being filled by Write becomes
// the end-of-data block with the bytes it holds; an observation with a header but no data
// gets one empty block so readers see its start and end. Blocks from OpenBlock that were not
// marked filled are discarded (the oldest becomes an empty end-of-data block): block-API
// writers end with MarkFilled(n < BufSize) or MarkFilledEOD instead. The write lock is kept.
func (w *Writer) EndOfData() error { return w.EndOfDataContext(context.Background()) }

// EndOfDataContext is EndOfData with a context for the wait for the empty end-of-data
// block (only needed when no block is open).
func (w *Writer) EndOfDataContext(ctx context.Context) error {
	if err := w.acquire(); err != nil {
		return err
	}
	defer w.leave()
	return w.endOfData(ctx)
}

func (w *Writer) endOfData(ctx context.Context) error {
	if w.data.state == stateWriter && len(w.open) == 0 {
		// The last observation has ended (EOD raised).
		w.data.finishXfer()
		if !w.inObs {
			return nil
		}
		// A header was written since: give that observation its start and end.
		w.data.setState(stateWChange)
	}
	nbytes := 0
	if w.cur != nil {
		nbytes = w.curOff
		w.cur = nil
	}
	if len(w.open) == 0 {
		if !w.inObs && w.data.state == stateWChange {
			return nil // nothing written since the last EOD: no empty observation
		}
		if _, err := w.openBlock(ctx); err != nil {
			return fmt.Errorf("end of data: %w", err)
		}
	}
	w.data.enableEOD()
	if err := w.markFilled(ctx, nbytes, true); err != nil {
		return fmt.Errorf("end of data: %w", err)
	}
	return nil
}

// Close ends an open observation and releases the write locks (data ring, then header
// ring, as dada_hdu_unlock_write). Idempotent.
func (w *Writer) Close() error { return w.CloseContext(context.Background()) }

// CloseContext is Close with a context for the wait that ending the observation may need
// (a free block for an empty end-of-data block). When ctx ends first, the observation is
// left open, as a crashed writer leaves it (the next writer continues it), and the locks
// are released all the same.
func (w *Writer) CloseContext(ctx context.Context) error {
	if !w.h.enter() { // the HDU was closed, which released this writer
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.closeErr
	}
	defer w.h.exit()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closeLocked(ctx, false)
}

// release closes the writer without waiting (HDU.Close).
func (w *Writer) release() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return w.closeLocked(ctx, true)
}

// closeLocked ends an open observation and unlocks. With leaveOpen, an observation that
// cannot be ended without waiting is left open silently (HDU.Close).
func (w *Writer) closeLocked(ctx context.Context, leaveOpen bool) error {
	if w.closed {
		return w.closeErr
	}
	w.h.removeHandle(w)
	w.closed = true
	var errs []error
	if w.inObs || len(w.open) > 0 || w.cur != nil {
		err := w.endOfData(ctx)
		if err != nil && leaveOpen && (errors.Is(err, context.Canceled) || errors.Is(err, ErrClosed)) {
			err = nil
		}
		errs = append(errs, err)
	}
	errs = append(errs, w.data.unlockWrite(), w.hdr.unlockWrite())
	w.closeErr = errors.Join(errs...)
	return w.closeErr
}

// acquire holds the writer's lock for one operation; leave undoes it. It fails with
// ErrClosed when the HDU or the writer is closed. It does not hold the HDU open (no
// HDU.enter: two atomic operations fewer per call, on the path of every block):
// HDU.Close releases the writer under this same lock before it detaches the rings, so an
// operation that holds it still has them attached, and its waits end once Close begins.
func (w *Writer) acquire() error {
	w.mu.Lock()
	if w.closed || w.h.closing.Load() {
		w.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// leave ends what acquire began (a method, not a closure: no allocation per operation).
func (w *Writer) leave() { w.mu.Unlock() }
