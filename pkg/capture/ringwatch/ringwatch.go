// Package ringwatch says how full a ring is and how far each reader slot is behind, from the
// ring's own sync fields and semaphores (dada.Snapshot, what dada_dbmonitor reads): the data
// for the receiver's ring metrics and status, so an operator sees a reader falling behind
// before the ring fills and the sender is held back. It reads; it never changes the ring.
package ringwatch

import (
	"time"

	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/dada"
)

// Reader is one reader slot of the data ring.
type Reader struct {
	Slot int
	// Connected: a reader holds the slot (its READER_CONN semaphore is taken).
	Connected bool
	// State is the slot's reader state as PSRDADA names it (READER, RSTOP, DISCON, ...).
	State string
	// LagBlocks are the blocks written that this slot has not opened yet (its FULL
	// semaphore, the FUL column of dada_dbmonitor); LagBytes the same in bytes.
	LagBlocks int
	LagBytes  uint64
	// Blocks is how many blocks the slot has gone past (r_bufs).
	Blocks uint64
	// LastAdvance is when Blocks last grew, as this watcher saw it (the first look counts).
	LastAdvance time.Time
}

// Summary is the ring's fill and its reader slots at one look.
type Summary struct {
	Blocks     int
	BlockBytes int
	// FilledBlocks are the blocks the slowest reader slot has still to open: the writer has
	// Blocks - FilledBlocks left before it waits.
	FilledBlocks int
	// OpenBlocks are the blocks the writer holds open (w_buf_next - w_buf_curr): data is
	// landing in them, or they are opened ahead for it. They are not free to the writer
	// either: InUse is both.
	OpenBlocks int
	// Written is how many blocks the writer has marked filled (w_buf_curr).
	Written uint64
	Readers []Reader
	At      time.Time
}

// InUse are the blocks not free to the writer: filled for a reader, or held open.
func (s Summary) InUse() int { return min(s.FilledBlocks+s.OpenBlocks, s.Blocks) }

// FillRatio is InUse of Blocks, 0 for an empty geometry: at 1 the receiver waits for a
// reader to clear a block.
func (s Summary) FillRatio() float64 {
	if s.Blocks == 0 {
		return 0
	}
	return float64(s.InUse()) / float64(s.Blocks)
}

// Summarize reads the data ring's state st at now; prev (nil on the first look) carries
// each slot's last advance forward when its position has not moved.
func Summarize(st dada.RingState, prev *Summary, now time.Time) Summary {
	s := Summary{Blocks: st.NBufs, BlockBytes: st.BufSize, Written: st.WBufCurr, At: now}
	if st.WBufNext > st.WBufCurr {
		s.OpenBlocks = int(min(st.WBufNext-st.WBufCurr, uint64(st.NBufs)))
	}
	for i, r := range st.Readers {
		rd := Reader{
			Slot: i, Connected: r.ConnSem == 0, State: dada.StateName(r.RState),
			LagBlocks: max(r.Full, 0), Blocks: r.RBufs, LastAdvance: now,
		}
		rd.LagBytes = uint64(rd.LagBlocks) * uint64(st.BufSize)
		if prev != nil && i < len(prev.Readers) && prev.Readers[i].Blocks == r.RBufs {
			rd.LastAdvance = prev.Readers[i].LastAdvance
		}
		s.FilledBlocks = max(s.FilledBlocks, rd.LagBlocks)
		s.Readers = append(s.Readers, rd)
	}
	s.FilledBlocks = min(s.FilledBlocks, s.Blocks)
	return s
}

// Document is the summary as the receiver's status document carries it.
func (s Summary) Document() *statusdoc.RingFill {
	d := &statusdoc.RingFill{FilledBlocks: s.FilledBlocks, OpenBlocks: s.OpenBlocks, Blocks: s.Blocks, Readers: []statusdoc.ReaderSlot{}}
	for _, r := range s.Readers {
		d.Readers = append(d.Readers, statusdoc.ReaderSlot{
			Slot: r.Slot, Connected: r.Connected, State: r.State, LagBlocks: r.LagBlocks, LagBytes: r.LagBytes,
			LastAdvance: r.LastAdvance.UTC().Format(time.RFC3339Nano),
		})
	}
	return d
}
