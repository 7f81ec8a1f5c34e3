package dada

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Resuming an observation a reader left (beyond PSRDADA).
//
// A reader that leaves its slot in the middle of an observation (closed, or killed) has
// consumed the observation's header on the header ring and part of its data. PSRDADA's
// next reader on that slot waits for the next header, which the writer never gets to
// write while it waits for that slot to clear a block: both hang. LockRead instead finds
// where the slot stands and resumes there: ReadHeader returns the observation's header
// (still in the header ring, the block before the slot's r_bufs) with OBS_OFFSET raised
// by the bytes already consumed, and the data continue with the slot's next unread block.
// Nothing in shared memory changes beyond what a reader does anyway, so PSRDADA's readers
// and writers keep working with the slot afterwards.

// ErrCannotResume: a reader slot was left in the middle of an observation in a state from
// which where to resume cannot be told safely.
var ErrCannotResume = errors.New("cannot resume the observation a reader left")

// Resume describes the observation in progress that a Reader took over.
type Resume struct {
	// Slot is the data ring's reader slot.
	Slot int
	// Killed: the reader that left was killed (its slot state was not DISCON); otherwise
	// it closed.
	Killed bool
	// Offset is how many bytes of the observation the earlier reader(s) consumed: the
	// header's OBS_OFFSET was raised by it, and the data continue from there.
	Offset uint64
	// Header is the observation's header with OBS_OFFSET raised by Offset.
	Header []byte
}

// Resumed reports whether LockRead took over an observation in progress, and where.
func (r *Reader) Resumed() (Resume, bool) {
	if r.resume == nil {
		return Resume{}, false
	}
	return *r.resume, true
}

// How the blocks a slot holds (FULL taken, not cleared) are sampled: see heldBlocks.
const (
	heldSamples   = 10
	heldSampleGap = 5 * time.Millisecond
)

// heldBlocks returns how many blocks the slot's reader took (FULL) and did not clear:
// w_buf_curr − r_bufs − FULL, since the writer posts one FULL per block it marks filled
// and the slot's reader moves r_bufs past each block it clears. A writer raises w_buf_curr
// before it posts FULL, so a post in flight can only make the difference look larger: the
// smallest of a few samples is taken (the first that is 0 ends the sampling).
func (q *rbuf) heldBlocks() (int64, error) {
	r, s := q.r, q.r.sync
	best := int64(math.MaxInt64)
	for i := 0; i < heldSamples; i++ {
		full, err := semValue(r.dataSem[q.iread], semFull)
		if err != nil {
			return 0, fmt.Errorf("read reader %d's full blocks on ring %s: %w", q.iread, r.key, semErr(err))
		}
		best = min(best, int64(s.wBufCurr())-int64(s.rBufs(q.iread))-int64(full))
		if best <= 0 {
			break
		}
		time.Sleep(heldSampleGap)
	}
	return best, nil
}

// resumePoint decides, right after lockRead, whether the slot was left inside a transfer
// and, if so, readies q to continue it: state READING at the slot's next unread block. It
// returns the bytes of the transfer already consumed.
func (q *rbuf) resumePoint() (offset uint64, ok bool, err error) {
	r, s := q.r, q.r.sync
	if q.left != stateDiscon && q.left != stateReading {
		return 0, false, nil // killed between transfers: lockRead readied it for the next
	}
	held, err := q.heldBlocks()
	if err != nil {
		return 0, false, err
	}
	x := s.rXfer(q.iread) % Xfers
	pos, sBuf := s.rBufs(q.iread), s.sBuf(x)
	if q.left == stateDiscon {
		// Stale: slot x still describes a transfer that ended before the reader's
		// position, eight transfers back (or the initial values).
		stale := s.eod(x) && sBuf <= s.eBuf(x) && s.eBuf(x) < pos
		if held < 0 || held > 1 {
			if pos > sBuf && !stale {
				return 0, false, fmt.Errorf("reader slot %d of ring %s was left inside an observation, holding %d blocks: %w", q.iread, r.key, held, ErrCannotResume)
			}
			return 0, false, nil
		}
		if pos+uint64(held) <= sBuf || stale {
			return 0, false, nil // the slot's reader never began this transfer
		}
	} else if held != 0 {
		// A killed ringcap reader's held block comes back (SEM_UNDO), so held is 0 unless
		// it died between clearing a block and moving past it, or it was a PSRDADA reader
		// holding one: the two need different repairs and cannot be told apart.
		return 0, false, fmt.Errorf("reader slot %d of ring %s was left by a killed reader in the middle of block %d (%d blocks taken and not cleared): %w", q.iread, r.key, pos, held, ErrCannotResume)
	}
	if sBuf > pos {
		return 0, false, fmt.Errorf("reader slot %d of ring %s was left inside an observation whose transfer slot the writer has reused (it is 8 observations ahead): %w", q.iread, r.key, ErrCannotResume)
	}
	q.setState(stateReading)
	q.xfer, q.owed, q.startByte = x, int(held), 0
	if pos == sBuf {
		q.startByte = s.sByte(x)
	} else {
		offset = (pos-sBuf)*uint64(r.bufsz) - s.sByte(x)
	}
	return offset, true, nil
}

// resumeHeader returns the header of the observation the header slot's reader read last
// (the block before its r_bufs), with OBS_OFFSET raised by offset.
func (q *rbuf) resumeHeader(offset uint64) ([]byte, error) {
	r, s := q.r, q.r.sync
	next := s.rBufs(q.iread)
	if next == 0 {
		return nil, fmt.Errorf("reader slot %d of header ring %s has read no header: %w", q.iread, r.key, ErrCannotResume)
	}
	seq := next - 1
	blk := bytes.Clone(r.blocks[r.index(seq)])
	// The writer raises w_buf_next before it fills a block: read after the copy, it says
	// whether the copy may have met a newer header.
	if s.wBufNext() > seq+uint64(r.nbufs) {
		return nil, fmt.Errorf("header ring %s: the header of the observation left in progress (block %d) was overwritten: %w", r.key, seq, ErrCannotResume)
	}
	h, err := ParseHeader(blk)
	if err != nil {
		return nil, fmt.Errorf("header of the observation left in progress: %w", err)
	}
	orig, err := h.OBSOffset()
	if err != nil && !errors.Is(err, ErrNoKey) {
		return nil, fmt.Errorf("header of the observation left in progress: %w", err)
	}
	if err := h.Set("OBS_OFFSET", strconv.FormatUint(orig+offset, 10)); err != nil {
		return nil, fmt.Errorf("header of the observation left in progress: %w", err)
	}
	return []byte(h.String()), nil
}

// takeOver runs after LockRead has both slots: when the data slot was left inside an
// observation, the reader resumes it (see Resume).
func (r *Reader) takeOver() error {
	off, ok, err := r.data.resumePoint()
	if err != nil || !ok {
		return err
	}
	hdr, err := r.hdr.resumeHeader(off)
	if err != nil {
		return err
	}
	r.resume = &Resume{Slot: r.data.iread, Killed: r.data.left != stateDiscon, Offset: off, Header: hdr}
	r.pending = hdr
	return nil
}
