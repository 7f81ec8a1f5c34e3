package ringwatch

import (
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/dada"
)

func state(w uint64, readers ...dada.ReaderState) dada.RingState {
	return dada.RingState{NBufs: 8, BufSize: 1 << 20, WBufCurr: w, Readers: readers}
}

// The fill is the slowest slot's unopened blocks; an empty slot (READER_CONN free) counts
// too, since the writer waits for every slot.
func TestSummarizeFillAndLag(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	s := Summarize(state(20,
		dada.ReaderState{RBufs: 18, Full: 2, ConnSem: 0, RState: 1},
		dada.ReaderState{RBufs: 14, Full: 6, ConnSem: 1}), nil, now)
	if s.FilledBlocks != 6 || s.FillRatio() != 0.75 || s.Written != 20 {
		t.Fatalf("fill %d (%.2f), written %d: want 6 (0.75), 20", s.FilledBlocks, s.FillRatio(), s.Written)
	}
	r0, r1 := s.Readers[0], s.Readers[1]
	if !r0.Connected || r0.LagBlocks != 2 || r0.LagBytes != 2<<20 || r1.Connected || r1.LagBlocks != 6 {
		t.Fatalf("readers %+v", s.Readers)
	}
	if !r0.LastAdvance.Equal(now) {
		t.Fatalf("first look: last advance %v, want %v", r0.LastAdvance, now)
	}
}

// A slot's last advance stays while its position stands still and moves when it moves.
func TestSummarizeLastAdvance(t *testing.T) {
	t.Parallel()
	t0, t1, t2 := time.Unix(1000, 0), time.Unix(1010, 0), time.Unix(1020, 0)
	a := Summarize(state(10, dada.ReaderState{RBufs: 5, Full: 5}, dada.ReaderState{RBufs: 9, Full: 1}), nil, t0)
	b := Summarize(state(12, dada.ReaderState{RBufs: 5, Full: 7}, dada.ReaderState{RBufs: 11, Full: 1}), &a, t1)
	if !b.Readers[0].LastAdvance.Equal(t0) || !b.Readers[1].LastAdvance.Equal(t1) {
		t.Fatalf("after 10 s: last advances %v, %v: want %v (stalled), %v", b.Readers[0].LastAdvance, b.Readers[1].LastAdvance, t0, t1)
	}
	c := Summarize(state(12, dada.ReaderState{RBufs: 6, Full: 6}, dada.ReaderState{RBufs: 11, Full: 1}), &b, t2)
	if !c.Readers[0].LastAdvance.Equal(t2) || !c.Readers[1].LastAdvance.Equal(t1) {
		t.Fatalf("after 20 s: last advances %v, %v", c.Readers[0].LastAdvance, c.Readers[1].LastAdvance)
	}
}

func TestSummarizeEmptyGeometry(t *testing.T) {
	t.Parallel()
	if s := Summarize(dada.RingState{}, nil, time.Now()); s.FillRatio() != 0 || len(s.Readers) != 0 {
		t.Fatalf("empty ring: %+v", s)
	}
}

func TestSummaryDocument(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 28, 12, 0, 0, 5, time.UTC)
	d := Summarize(state(9, dada.ReaderState{RBufs: 6, Full: 3, RState: 6}), nil, at).Document()
	if d.FilledBlocks != 3 || d.Blocks != 8 || len(d.Readers) != 1 {
		t.Fatalf("document %+v", d)
	}
	r := d.Readers[0]
	if r.Slot != 0 || !r.Connected || r.State != "READING" || r.LagBlocks != 3 || r.LagBytes != 3<<20 || r.LastAdvance != "2026-11-28T12:00:00.000000005Z" {
		t.Fatalf("reader slot %+v", r)
	}
}

// Blocks the writer holds open are not free either: in use are the filled and the open.
func TestSummarizeOpenBlocks(t *testing.T) {
	t.Parallel()
	st := state(5, dada.ReaderState{RBufs: 4, Full: 1})
	st.WBufNext = 8
	s := Summarize(st, nil, time.Now())
	if s.OpenBlocks != 3 || s.InUse() != 4 || s.FillRatio() != 0.5 {
		t.Fatalf("open %d, in use %d, ratio %.2f: want 3, 4, 0.50", s.OpenBlocks, s.InUse(), s.FillRatio())
	}
	st.WBufNext = 50 // more than the ring: capped
	if s := Summarize(st, nil, time.Now()); s.OpenBlocks != 8 || s.InUse() != 8 {
		t.Fatalf("open %d, in use %d: want both capped at 8", s.OpenBlocks, s.InUse())
	}
}
