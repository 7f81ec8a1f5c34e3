package dada

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// This file holds the per-process side of one ring (PSRDADA's ipcbuf_t) for a writer and a
// reader, following the contract's sequences step by step. Loops that do one semaphore
// operation per reader keep their progress, so a wait cancelled half way resumes where it
// stopped instead of taking from some readers twice.

// wbuf is a writer's state on one ring.
type wbuf struct {
	r     *Ring
	state int32
	xfer  uint64
	// progress of per-reader loops (readers already done)
	sodDone, clearDone, eodDone int
	// sodCharged: chargeRestart has taken the SODACKs of a start-of-data that
	// moveSOD has not yet published.
	sodCharged bool
}

func (w *wbuf) setState(s int32) {
	w.state = s
	w.r.sync.setWState(s)
}

// lockWrite takes the ring's write lock (SEM_UNDO, so it is released if the process dies).
func (w *wbuf) lockWrite(ctx context.Context) error {
	r := w.r
	if err := r.semOp(ctx, r.connSem, semWrite, -1, semUndo); err != nil {
		return fmt.Errorf("lock ring %s for writing: %w", r.key, err)
	}
	if r.sync.wState() == stateDiscon {
		w.setState(stateWChange)
	} else {
		// A writer that replaces a crashed one continues the same transfer. Blocks the
		// crashed writer opened but never marked filled are handed out again (their
		// back-pressure was already taken), so w_buf_next and w_buf_curr agree again.
		w.setState(stateWriting)
		if curr := r.sync.wBufCurr(); r.sync.wBufNext() > curr {
			r.sync.setWBufNext(curr)
		}
	}
	w.xfer = r.sync.wXfer() % Xfers
	return nil
}

func (w *wbuf) unlockWrite() error {
	r := w.r
	r.sync.setWState(stateDiscon)
	w.state = stateViewer
	if err := r.semOp(context.Background(), r.connSem, semWrite, 1, semUndo); err != nil {
		return fmt.Errorf("unlock ring %s for writing: %w", r.key, err)
	}
	return nil
}

// enableSOD raises start-of-data at (startBuf, startByte).
func (w *wbuf) enableSOD(ctx context.Context, startBuf, startByte uint64) error {
	r, s := w.r, w.r.sync
	for ; w.sodDone < r.nreaders; w.sodDone++ {
		if err := r.semOp(ctx, r.dataSem[w.sodDone], semSODAck, -1, 0); err != nil {
			return fmt.Errorf("start of data on ring %s: wait for reader %d to acknowledge an earlier transfer: %w", r.key, w.sodDone, err)
		}
	}
	w.sodDone = 0
	s.setSBuf(w.xfer, startBuf)
	s.setSByte(w.xfer, startByte)
	curr := s.wBufCurr()
	if curr == 0 {
		s.setEOD(w.xfer, false)
	}
	nb := uint64(r.nbufs)
	for b := startBuf; b < curr; b++ {
		s.setCount(b%nb, s.count(b%nb)+1)
	}
	w.setState(stateWriting)
	if n := curr - startBuf; n > 0 {
		for i := 0; i < r.nreaders; i++ {
			if err := r.semOp(context.Background(), r.dataSem[i], semFull, int16(n), 0); err != nil {
				return fmt.Errorf("start of data on ring %s: post full blocks to reader %d: %w", r.key, i, err)
			}
		}
	}
	return nil
}

// chargeRestart takes, for a start-of-data inside the open transfer, an SODACK from every
// reader that will consume it: every reader not in READING. A reader in READING is
// already inside the transfer and never acknowledges a start-of-data again (charging it
// would stop the writer after 8 observations); any other reader (waiting, or a slot a
// reader may take later) starts at the moved start-of-data and acknowledges it there.
func (w *wbuf) chargeRestart(ctx context.Context) error {
	if w.sodCharged {
		return nil
	}
	r, s := w.r, w.r.sync
	for ; w.sodDone < r.nreaders; w.sodDone++ {
		if s.rState(w.sodDone) == stateReading {
			continue
		}
		if err := r.semOp(ctx, r.dataSem[w.sodDone], semSODAck, -1, 0); err != nil {
			return fmt.Errorf("start of observation on ring %s: wait for reader %d to acknowledge an earlier one: %w", r.key, w.sodDone, err)
		}
	}
	w.sodDone = 0
	w.sodCharged = true
	return nil
}

// moveSOD publishes the start-of-data that chargeRestart paid for, at header block seq:
// readers that start from now on begin there. A reader slot not in READING that has not
// yet consumed an earlier block keeps it (the start is the oldest such block): that slot's
// data ring is still at the earlier observation, whose header it must read first. Call it
// after the block is written and before it is marked filled, so that no reader reaches
// the block before it holds its data.
func (w *wbuf) moveSOD(seq uint64) {
	r, s := w.r, w.r.sync
	start := seq
	for i := 0; i < r.nreaders; i++ {
		if s.rState(i) != stateReading {
			start = min(start, s.rBufs(i))
		}
	}
	s.setSBuf(w.xfer, start)
	s.setSByte(w.xfer, 0)
	w.sodCharged = false
}

// getNextWrite returns the next block to fill (ring index and absolute count), waiting
// while the slowest reader still holds it.
func (w *wbuf) getNextWrite(ctx context.Context) (int, uint64, error) {
	r, s := w.r, w.r.sync
	if w.state == stateWChange {
		if err := w.enableSOD(ctx, s.wBufCurr(), 0); err != nil {
			return 0, 0, err
		}
	}
	if err := w.awaitNextClear(ctx); err != nil {
		return 0, 0, err
	}
	next := s.wBufNext()
	s.setWBufNext(next + 1)
	return r.index(next), next, nil
}

// awaitNextClear waits until every reader has cleared the block getNextWrite hands out
// next, taking the CLEARs it needs. It changes nothing a reader looks at, and a wait
// cancelled half way resumes where it stopped.
func (w *wbuf) awaitNextClear(ctx context.Context) error {
	r, s := w.r, w.r.sync
	b := uint64(r.index(s.wBufNext()))
	for s.count(b) > 0 {
		for ; w.clearDone < r.nreaders; w.clearDone++ {
			if err := r.semOp(ctx, r.dataSem[w.clearDone], semClear, -1, 0); err != nil {
				return fmt.Errorf("wait for reader %d to clear block %d of ring %s: %w", w.clearDone, b, r.key, err)
			}
		}
		w.clearDone = 0
		s.setCount(b, s.count(b)-1)
	}
	return nil
}

// openFree opens up to k more blocks after w_buf_next without waiting: as many, in order,
// as every reader has already cleared. Each reader's CLEAR value (GETVAL) is a lower bound
// of what it has cleared, since only the writer takes from CLEAR. The CLEARs those blocks
// need are taken with one semop of -n per reader instead of n of -1 (getNextWrite's loop
// would not have waited for any of them), and they end with the same counts and w_buf_next.
// It returns the absolute count of the first block opened and how many were.
func (w *wbuf) openFree(k int) (uint64, int, error) {
	r, s := w.r, w.r.sync
	avail := math.MaxInt
	for i := 0; i < r.nreaders; i++ {
		v, err := semValue(r.dataSem[i], semClear)
		if err != nil {
			return 0, 0, fmt.Errorf("read how many blocks reader %d of ring %s cleared: %w", i, r.key, semErr(err))
		}
		avail = min(avail, v)
	}
	next, nb := s.wBufNext(), uint64(r.nbufs)
	// Never more than the ring holds: a block still open has count 0 too.
	k = min(k, int(nb-min(nb, next-s.wBufCurr())))
	need, n := 0, 0
	for ; n < k; n++ {
		c := int(s.count((next + uint64(n)) % nb))
		if need+c > avail {
			break
		}
		need += c
	}
	for i := 0; need > 0 && i < r.nreaders; i++ {
		// Cannot wait (see above), so no context: a failure means the ring is gone.
		if err := r.semOp(context.Background(), r.dataSem[i], semClear, int16(-need), 0); err != nil {
			return 0, 0, fmt.Errorf("take %d cleared blocks from reader %d of ring %s: %w", need, i, r.key, err)
		}
	}
	for b := next; b < next+uint64(n); b++ {
		s.setCount(b%nb, 0)
	}
	s.setWBufNext(next + uint64(n))
	return next, n, nil
}

// xferOpen reports whether the writer's current transfer slot has seen start-of-data and no
// end-of-data since (eod is left set on slots whose SOD came after buffer 0, so compare
// e_buf with s_buf as well).
func (w *wbuf) xferOpen() bool {
	s := w.r.sync
	ended := s.eod(w.xfer) && s.eBuf(w.xfer) >= s.sBuf(w.xfer)
	return s.wBufCurr() > 0 && !ended
}

// enableEOD makes the next markFilled end the transfer.
func (w *wbuf) enableEOD() {
	if w.state == stateWriting {
		w.setState(stateWChange)
	}
}

// markFilled marks the oldest open block (w_buf_curr) filled with nbytes. A short block, or
// the WCHANGE state, ends the transfer.
func (w *wbuf) markFilled(ctx context.Context, nbytes uint64) (eod bool, err error) {
	r, s := w.r, w.r.sync
	if w.state == stateWriter {
		s.setWBufCurr(s.wBufCurr() + 1)
		return false, nil
	}
	curr := s.wBufCurr()
	if w.state == stateWChange || nbytes < uint64(r.bufsz) {
		for ; w.eodDone < r.nreaders; w.eodDone++ {
			if err := r.semOp(ctx, r.dataSem[w.eodDone], semEODAck, -1, 0); err != nil {
				return false, fmt.Errorf("end of data on ring %s: wait for reader %d to acknowledge an earlier transfer: %w", r.key, w.eodDone, err)
			}
		}
		if nbytes == 0 {
			// The empty end-of-data block takes the next block as well: wait for it
			// before the end is published, so that a cancelled wait leaves nothing
			// half done (the getNextWrite below then finds it clear).
			if err := w.awaitNextClear(ctx); err != nil {
				return false, fmt.Errorf("end of data on ring %s: %w", r.key, err)
			}
		}
		w.eodDone = 0
		s.setEBuf(w.xfer, curr)
		s.setEByte(w.xfer, nbytes)
		s.setEOD(w.xfer, true)
		s.setWXfer(s.wXfer() + 1)
		w.xfer = s.wXfer() % Xfers
		w.setState(stateWriter)
		eod = true
		if nbytes == 0 {
			if _, _, err := w.getNextWrite(ctx); err != nil {
				return eod, err
			}
		}
	}
	nb := uint64(r.nbufs)
	s.setCount(curr%nb, s.count(curr%nb)+1)
	s.setWBufCurr(curr + 1)
	// The shared fields above are written before FULL is posted: semop is the barrier.
	for i := 0; i < r.nreaders; i++ {
		if err := r.semOp(context.Background(), r.dataSem[i], semFull, 1, 0); err != nil {
			return eod, fmt.Errorf("post full block to reader %d of ring %s: %w", i, r.key, err)
		}
	}
	return eod, nil
}

// markFilledFull marks the k oldest open blocks filled with bufsz bytes each, inside the
// open transfer (state WRITING, no end of data): each block's count and w_buf_curr as
// markFilled sets them, then one FULL +k per reader instead of k posts of +1. A reader
// sees the same values it would see had it not run between k single posts (PSRDADA's
// enable_sod posts FULL +n the same way), and each of its FULL -1 waits finds a block.
func (w *wbuf) markFilledFull(k uint64) error {
	r, s := w.r, w.r.sync
	nb := uint64(r.nbufs)
	curr := s.wBufCurr()
	for b := curr; b < curr+k; b++ {
		s.setCount(b%nb, s.count(b%nb)+1)
	}
	s.setWBufCurr(curr + k)
	// The shared fields above are written before FULL is posted: semop is the barrier.
	for i := 0; i < r.nreaders; i++ {
		if err := r.semOp(context.Background(), r.dataSem[i], semFull, int16(k), 0); err != nil {
			return fmt.Errorf("post %d full blocks to reader %d of ring %s: %w", k, i, r.key, err)
		}
	}
	return nil
}

// finishXfer moves both write counters past the last transfer's EOD block (ipcio_stop).
func (w *wbuf) finishXfer() {
	s := w.r.sync
	if x := s.wXfer(); x > 0 {
		next := s.eBuf((x-1)%Xfers) + 1
		s.setWBufCurr(next)
		s.setWBufNext(next)
	}
}

// rbuf is a reader's state on one ring.
type rbuf struct {
	r         *Ring
	iread     int
	state     int32
	xfer      uint64
	startByte uint64
	// left is the slot's state (r_states) when lockRead took it: DISCON after a reader
	// that closed, any other state after one that was killed.
	left int32
	// owed counts blocks whose FULL a reader that left took without clearing them: the
	// next getNextRead takes none for them.
	owed int
	// undoFull: the open block's FULL was taken with SEM_UNDO, so that a reader killed
	// while holding it gives it back; markCleared settles the adjustment.
	undoFull bool
	// beforeSOD, if set, runs when a full block has been taken and before the reader
	// consumes the start of data it begins (Reader.settleHeader).
	beforeSOD func() error
}

func (q *rbuf) setState(st int32) {
	q.state = st
	q.r.sync.setRState(q.iread, st)
}

// lockRead takes a reader slot: the READ lock, then the first free READER_CONN of the slots
// ordered by r_bufs (both with SEM_UNDO), trying slot prefer (if >= 0) first.
func (q *rbuf) lockRead(ctx context.Context, prefer int) error {
	r, s := q.r, q.r.sync
	if err := r.semOp(ctx, r.connSem, semRead, -1, semUndo); err != nil {
		return fmt.Errorf("lock ring %s for reading: %w", r.key, err)
	}
	order := make([]int, r.nreaders)
	for i := range order {
		order[i] = i
	}
	// insertion sort by r_bufs, stable so equal counts keep slot order
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && s.rBufs(order[j]) < s.rBufs(order[j-1]); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	if prefer >= 0 && prefer < len(order) {
		order = append([]int{prefer}, slices.DeleteFunc(order, func(i int) bool { return i == prefer })...)
	}
	q.iread = -1
	for _, i := range order {
		if err := r.semOp(context.Background(), r.dataSem[i], semReaderConn, -1, ipcNoWait|semUndo); err == nil {
			q.iread = i
			break
		}
	}
	if q.iread < 0 {
		_ = r.semOp(context.Background(), r.connSem, semRead, 1, semUndo)
		return fmt.Errorf("lock ring %s for reading: no free reader slot", r.key)
	}
	q.left = s.rState(q.iread)
	if q.left == stateReading {
		// A reader replacing a killed one resumes its transfer.
		q.setState(stateReading)
	} else {
		// A slot left between transfers (closed, or killed waiting for or after an end
		// of data) waits for the next start of data.
		q.setState(stateReader)
	}
	q.xfer = s.rXfer(q.iread) % Xfers
	return nil
}

func (q *rbuf) unlockRead() error { return q.unlockReadAs(stateDiscon) }

// unlockReadAs releases the slot leaving r_states at st: DISCON, or the state a killed
// reader would leave.
func (q *rbuf) unlockReadAs(st int32) error {
	r := q.r
	r.sync.setRState(q.iread, st)
	q.state = stateViewer
	err1 := r.semOp(context.Background(), r.dataSem[q.iread], semReaderConn, 1, semUndo)
	err2 := r.semOp(context.Background(), r.connSem, semRead, 1, semUndo)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("unlock reader %d of ring %s: %w", q.iread, r.key, firstErr(err1, err2))
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// getNextRead waits for the next full block. It returns ok=false after end of data.
func (q *rbuf) getNextRead(ctx context.Context) (idx int, seq uint64, data []byte, eod, ok bool, err error) {
	r, s := q.r, q.r.sync
	if q.state == stateRStop {
		return 0, 0, nil, false, false, nil
	}
	sem := r.dataSem[q.iread]
	if q.owed > 0 {
		q.owed--
		q.undoFull = false
	} else {
		if err := r.semOp(ctx, sem, semFull, -1, semUndo); err != nil {
			return 0, 0, nil, false, false, fmt.Errorf("wait for a full block of ring %s: %w", r.key, err)
		}
		q.undoFull = true
	}
	if q.state == stateReader {
		if q.beforeSOD != nil {
			if err := q.beforeSOD(); err != nil {
				return 0, 0, nil, false, false, fmt.Errorf("start of data on ring %s: %w", r.key, err)
			}
		}
		q.xfer = s.rXfer(q.iread) % Xfers
		s.setRBufs(q.iread, s.sBuf(q.xfer))
		q.startByte = s.sByte(q.xfer)
		// READING after r_bufs: a reader killed in between is found at the start of
		// the transfer, not before it (see resume.go).
		q.setState(stateReading)
		if err := r.semOp(context.Background(), sem, semSODAck, 1, 0); err != nil {
			return 0, 0, nil, false, false, fmt.Errorf("acknowledge start of data on ring %s: %w", r.key, err)
		}
	}
	seq = s.rBufs(q.iread)
	idx = r.index(seq)
	end := uint64(r.bufsz)
	eod = s.eod(q.xfer) && seq == s.eBuf(q.xfer)
	if eod {
		end = s.eByte(q.xfer)
	}
	start := min(q.startByte, end)
	end = min(end, uint64(r.bufsz))
	return idx, seq, r.blocks[idx][start:end], eod, true, nil
}

// markCleared releases the block returned by getNextRead, with the exact EOD test.
func (q *rbuf) markCleared() error {
	r, s := q.r, q.r.sync
	sem := r.dataSem[q.iread]
	if err := q.clear(sem); err != nil {
		return fmt.Errorf("clear block of ring %s: %w", r.key, err)
	}
	q.startByte = 0
	cur := s.rBufs(q.iread)
	if s.eod(q.xfer) && cur == s.eBuf(q.xfer) {
		q.setState(stateRStop)
		s.setRBufs(q.iread, cur+1)
		s.setRXfer(q.iread, s.rXfer(q.iread)+1)
		q.xfer = s.rXfer(q.iread) % Xfers
		if err := r.semOp(context.Background(), sem, semEODAck, 1, 0); err != nil {
			return fmt.Errorf("acknowledge end of data on ring %s: %w", r.key, err)
		}
		return nil
	}
	s.setRBufs(q.iread, cur+1)
	return nil
}

// clear posts CLEAR for the open block. When its FULL was taken with SEM_UNDO, the same
// atomic semop settles that adjustment (FULL +1 with SEM_UNDO, then FULL -1 without: the
// value is unchanged), so a reader killed at any point either still holds the block
// (given back by the kernel) or has cleared it, never half of each.
func (q *rbuf) clear(sem int) error {
	if !q.undoFull {
		return q.r.semOp(context.Background(), sem, semClear, 1, 0)
	}
	q.undoFull = false
	return semOps(sem, []sembuf{{num: semClear, op: 1}, {num: semFull, op: 1, flg: semUndo}, {num: semFull, op: -1}})
}

// keep leaves the open block held (FULL taken, not cleared) for the slot's next reader: it
// settles the SEM_UNDO adjustment of its FULL, so that this process's exit does not give
// the FULL back as well.
func (q *rbuf) keep() error {
	if !q.undoFull {
		return nil
	}
	q.undoFull = false
	if err := semOps(q.r.dataSem[q.iread], []sembuf{{num: semFull, op: 1, flg: semUndo}, {num: semFull, op: -1}}); err != nil {
		return fmt.Errorf("leave block %d of ring %s to the next reader: %w", q.r.sync.rBufs(q.iread), q.r.key, err)
	}
	return nil
}

// unread gives the open block back untaken (FULL +1 with SEM_UNDO, which also settles the
// adjustment of its SEM_UNDO take): the slot's next reader reads it as if this one never had.
func (q *rbuf) unread() error {
	if !q.undoFull {
		return nil
	}
	q.undoFull = false
	if err := q.r.semOp(context.Background(), q.r.dataSem[q.iread], semFull, 1, semUndo); err != nil {
		return fmt.Errorf("give block %d of ring %s back: %w", q.r.sync.rBufs(q.iread), q.r.key, err)
	}
	return nil
}

// reset readies a reader that reached end of data for the next transfer.
func (q *rbuf) reset() {
	if q.state == stateRStop {
		q.setState(stateReader)
	}
}
