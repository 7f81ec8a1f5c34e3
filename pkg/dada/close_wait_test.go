package dada

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A Close that must wait for a free block to end the observation with an empty
// end-of-data block (the ring's last free block taken for it, the next one held by a
// reader) gives up when its context ends instead of waiting for ever, and leaves
// nothing half published: the reader still reads the three filled blocks and finds no
// end of data after them.
func TestCloseContextGivesUpWaitingForTheEmptyEODBlock(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 4, BufSize: 4096})
	ctx := context.Background()
	w, err := h.LockWrite(ctx, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteHeader([]byte("HDR_VERSION 1.0\n")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := w.OpenBlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := w.MarkFilled(4096); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- w.CloseContext(cctx) }()
	select {
	case err := <-closed:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close with every other block held: %v, want the context's deadline", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return 30 s after its context ended") // it waited with context.Background()
	}
	r, err := h.LockRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	if _, err := r.ReadHeader(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		b, err := r.NextBlock(ctx)
		if err != nil || len(b.Data) != 4096 {
			t.Fatalf("block %d: %d bytes, %v", i, len(b.Data), err)
		}
		if err := r.MarkCleared(); err != nil {
			t.Fatal(err)
		}
	}
	rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer rcancel()
	if b, err := r.NextBlock(rctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after the cancelled close: block of %d bytes, %v; want no end of data published", len(b.Data), err)
	}
}
