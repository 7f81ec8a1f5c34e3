package dada

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ReadBlock is a data block returned by NextBlock. Data holds the valid bytes only and stays
// valid until MarkCleared.
type ReadBlock struct {
	Index int    // ring index
	Seq   uint64 // absolute block count
	Data  []byte
	EOD   bool // last block of the observation
}

// Reader holds a reader slot on a HDU's header and data rings (dada_hdu_lock_read).
type Reader struct {
	h    *HDU
	hdr  rbuf
	data rbuf

	resume  *Resume // the observation in progress LockRead took over, if any
	pending []byte  // its header, until ReadHeader returns it
	hdrHeld bool    // the header block ReadHeader returned is not cleared yet

	mu       sync.Mutex
	open     bool      // a block from NextBlock is not yet cleared
	blk      ReadBlock // streaming Read: current block ...
	blkOff   int       // ... and bytes of it consumed
	closed   bool
	closeErr error
}

// LockRead takes a reader slot on the header ring and then on the data ring, waiting while
// all slots are taken. The slot is released if the process dies (SEM_UNDO). When the slot's
// previous reader left it in the middle of an observation (closed or killed), the reader
// resumes that observation: see Resumed; where that cannot be done safely LockRead fails
// with ErrCannotResume.
func (h *HDU) LockRead(ctx context.Context) (*Reader, error) {
	if !h.enter() {
		return nil, ErrClosed
	}
	defer h.exit()
	r := &Reader{h: h, hdr: rbuf{r: h.Header}, data: rbuf{r: h.Data}}
	r.data.beforeSOD = r.settleHeader
	if err := r.hdr.lockRead(ctx, -1); err != nil {
		return nil, err
	}
	// The same slot on both rings, where it is free: a reader that left a slot left both.
	if err := r.data.lockRead(ctx, r.hdr.iread); err != nil {
		_ = r.hdr.unlockRead()
		return nil, err
	}
	if err := r.takeOver(); err != nil {
		err = fmt.Errorf("lock ring %s for reading: %w", h.key, err)
		return nil, errors.Join(err, r.data.unlockRead(), r.hdr.unlockRead())
	}
	h.addHandle(r)
	return r, nil
}

// Slot returns the reader slot (0..Readers-1) held on the data ring.
func (r *Reader) Slot() int { return r.data.iread }

// ReadHeader waits for the next header and returns it, trimmed at the first NUL (after a
// LockRead that resumed an observation: that observation's header, see Resumed). It copes
// with both header styles: after a new-style header (end-of-data on the header ring) the
// header ring is reset for the next one.
func (r *Reader) ReadHeader(ctx context.Context) ([]byte, error) {
	if err := r.acquire(); err != nil {
		return nil, err
	}
	defer r.leave()
	if hdr := r.pending; hdr != nil {
		r.pending = nil
		return bytes.Clone(hdr), nil
	}
	if err := r.settleHeader(); err != nil { // a header read before without its data
		return nil, fmt.Errorf("read header: %w", err)
	}
	r.hdr.reset()
	for {
		_, _, data, _, ok, err := r.hdr.getNextRead(ctx)
		if err != nil {
			return nil, fmt.Errorf("read header: %w", err)
		}
		if !ok {
			r.hdr.reset()
			continue
		}
		if len(data) == 0 { // an empty end-of-data block on the header ring
			if err := r.hdr.markCleared(); err != nil {
				return nil, fmt.Errorf("read header: %w", err)
			}
			r.hdr.reset()
			continue
		}
		out := bytes.Clone(data)
		if i := bytes.IndexByte(out, 0); i >= 0 {
			out = out[:i]
		}
		// The header block is cleared when the observation's first data block arrives
		// (settleHeader), so that a reader that leaves before that leaves the header to
		// the slot's next reader instead of an observation without one.
		r.hdrHeld = true
		return out, nil
	}
}

// settleHeader clears the header block ReadHeader returned, once its observation's data
// begin (or another header is read).
func (r *Reader) settleHeader() error {
	if !r.hdrHeld {
		return nil
	}
	r.hdrHeld = false
	if err := r.hdr.markCleared(); err != nil {
		return err
	}
	r.hdr.reset()
	return nil
}

// NextBlock waits for the next full data block (ipcbuf_get_next_read). It returns io.EOF at
// the end of the observation; Reset then readies the reader for the next one.
func (r *Reader) NextBlock(ctx context.Context) (ReadBlock, error) {
	if err := r.acquire(); err != nil {
		return ReadBlock{}, err
	}
	defer r.leave()
	if r.open {
		return ReadBlock{}, errors.New("next block: the previous block is not cleared")
	}
	return r.nextBlock(ctx)
}

func (r *Reader) nextBlock(ctx context.Context) (ReadBlock, error) {
	idx, seq, data, eod, ok, err := r.data.getNextRead(ctx)
	if err != nil {
		return ReadBlock{}, fmt.Errorf("next block: %w", err)
	}
	if !ok {
		return ReadBlock{}, io.EOF
	}
	r.open = true
	return ReadBlock{Index: idx, Seq: seq, Data: data, EOD: eod}, nil
}

// MarkCleared releases the block returned by NextBlock to the writer.
func (r *Reader) MarkCleared() error {
	if err := r.acquire(); err != nil {
		return err
	}
	defer r.leave()
	return r.markCleared()
}

func (r *Reader) markCleared() error {
	if !r.open {
		return errors.New("mark cleared: no block is open")
	}
	r.open = false
	return r.data.markCleared()
}

// Read copies the observation's bytes into p (ipcio_read), returning io.EOF at its end.
func (r *Reader) Read(p []byte) (int, error) { return r.ReadContext(context.Background(), p) }

// ReadContext is Read with a context for the waits.
func (r *Reader) ReadContext(ctx context.Context, p []byte) (int, error) {
	if err := r.acquire(); err != nil {
		return 0, err
	}
	defer r.leave()
	n := 0
	for n < len(p) {
		if !r.open {
			if r.data.state == stateRStop {
				break
			}
			if n > 0 && ctx.Err() != nil {
				break
			}
			b, err := r.nextBlock(ctx)
			if err != nil {
				if n > 0 && !errors.Is(err, io.EOF) {
					return n, err
				}
				if errors.Is(err, io.EOF) {
					break
				}
				return n, err
			}
			r.blk, r.blkOff = b, 0
		}
		c := copy(p[n:], r.blk.Data[r.blkOff:])
		n += c
		r.blkOff += c
		if r.blkOff == len(r.blk.Data) {
			if err := r.markCleared(); err != nil {
				return n, err
			}
			r.blk = ReadBlock{}
		}
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Reset readies the reader for the next observation after io.EOF (ipcbuf_reset).
func (r *Reader) Reset() error {
	if err := r.acquire(); err != nil {
		return err
	}
	defer r.leave()
	if r.open {
		return errors.New("reset: a block is still open")
	}
	r.data.reset()
	r.hdr.reset()
	return nil
}

// Close releases the reader slots (data ring, then header ring). A block still open (from
// NextBlock, or one Read consumed part of) is left to the slot's next reader, which
// resumes the observation with it (see Resumed). Idempotent.
func (r *Reader) Close() error {
	if !r.h.enter() { // the HDU was closed, which released this reader
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.closeErr
	}
	defer r.h.exit()
	return r.release()
}

// release gives the reader slots back, leaving an open block held (also used by HDU.Close).
func (r *Reader) release() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.closeErr
	}
	r.h.removeHandle(r)
	r.closed = true
	var errs []error
	if r.open {
		// Left held, not cleared: the next reader on the slot reads this block again
		// (it resumes the observation here), so nothing the caller may not have
		// finished with is lost.
		r.open = false
		errs = append(errs, r.data.keep())
	}
	if r.hdrHeld {
		// The header of an observation whose data this reader never began: given back,
		// the slot left as a killed reader leaves it, so its next reader reads it again.
		r.hdrHeld = false
		errs = append(errs, r.hdr.unread(), r.data.unlockRead(), r.hdr.unlockReadAs(r.hdr.state))
	} else {
		errs = append(errs, r.data.unlockRead(), r.hdr.unlockRead())
	}
	r.closeErr = errors.Join(errs...)
	return r.closeErr
}

// acquire holds the reader's lock for one operation; leave undoes it. It fails with
// ErrClosed when the HDU or the reader is closed. Like Writer.acquire it does not hold
// the HDU open: HDU.Close releases the reader under this lock before detaching.
func (r *Reader) acquire() error {
	r.mu.Lock()
	if r.closed || r.h.closing.Load() {
		r.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// leave ends what acquire began (a method, not a closure: no allocation per operation).
func (r *Reader) leave() { r.mu.Unlock() }
