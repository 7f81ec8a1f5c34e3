package ring

import (
	"context"
	"sync"
	"testing"
	"time"
)

// fakeWriter opens blocks 0, 1, 2, ... of a ring of nbufs without waiting,
// and records what was marked filled.
type fakeWriter struct {
	mu     sync.Mutex
	nbufs  int
	opened int
	filled []int // bytes of each block marked filled
	eod    []bool
	ended  bool
}

func (w *fakeWriter) WriteHeader([]byte) error { return nil }

func (w *fakeWriter) OpenBlock(context.Context) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.opened++
	return (w.opened - 1) % w.nbufs, nil
}

func (w *fakeWriter) MarkFilled(_ context.Context, n int, eod bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.filled, w.eod = append(w.filled, n), append(w.eod, eod)
	return nil
}

func (w *fakeWriter) EndOfData(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ended = true
	return nil
}

// next is the next block the worker opened, failing when none comes soon.
func next(t *testing.T, rw *Worker) int {
	t.Helper()
	select {
	case idx := <-rw.Opened():
		return idx
	case <-time.After(5 * time.Second):
		t.Fatal("no block opened")
		return -1
	}
}

// none checks that the worker opens no block now.
func none(t *testing.T, rw *Worker, why string) {
	t.Helper()
	select {
	case idx := <-rw.Opened():
		t.Fatalf("block %d opened: want none (%s)", idx, why)
	case <-time.After(50 * time.Millisecond):
	}
}

// The worker keeps the window open, opens the next block once one is
// filled, opens none past its limit, and marks blocks filled in order before
// it ends the data.
func TestWorkerWindowLimitAndEnd(t *testing.T) {
	w := &fakeWriter{nbufs: 4}
	rw := NewWorker(w, 2)
	go rw.Run(t.Context())
	defer rw.Stop()
	if a, b := next(t, rw), next(t, rw); a != 0 || b != 1 {
		t.Fatalf("opened %d, %d; want 0, 1", a, b)
	}
	none(t, rw, "the window of 2 is open")
	if err := rw.Fill(8, 1, false); err != nil {
		t.Fatal(err)
	}
	if c := next(t, rw); c != 2 {
		t.Fatalf("opened %d after a fill, want 2", c)
	}
	rw.Limit(3)
	if err := rw.Fill(8, 1, false); err != nil {
		t.Fatal(err)
	}
	none(t, rw, "the limit of 3 blocks is reached")
	if err := rw.Fill(5, 1, true); err != nil {
		t.Fatal(err)
	}
	if err := rw.EndOfData(); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.filled) != 3 || w.filled[0] != 8 || w.filled[1] != 8 || w.filled[2] != 5 || !w.eod[2] || !w.ended {
		t.Fatalf("filled %v (eod %v), ended %v: want 8, 8, 5 with the end of data on the last", w.filled, w.eod, w.ended)
	}
	rw.Stop() // a second Stop returns
}
