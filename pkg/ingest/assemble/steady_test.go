package assemble

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/ringtest"
	"github.com/ringcap/ringcap/pkg/dada"
)

// memWriter is a ring.BlockWriter over blocks in memory that never waits.
type memWriter struct {
	mu     sync.Mutex
	blocks [][]byte
	opened int
	filled int
}

func (m *memWriter) WriteHeader([]byte) error { return nil }

func (m *memWriter) OpenBlock(context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.opened++
	return (m.opened - 1) % len(m.blocks), nil
}

func (m *memWriter) MarkFilled(context.Context, int, bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.filled++
	return nil
}

func (m *memWriter) EndOfData(context.Context) error { return nil }

// Put allocates nothing once the window is warm, across block boundaries.
func TestPutAllocatesNothing(t *testing.T) {
	const nbufs, size, pkt = 8, 64 << 10, 8 << 10
	m := &memWriter{}
	for range nbufs {
		m.blocks = append(m.blocks, make([]byte, size))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := New(ctx, Config{Writer: m, Block: func(i int) []byte { return m.blocks[i] }, BlockBytes: size, RingBlocks: nbufs, Window: 4})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, pkt)
	var off uint64
	put := func() {
		if err := a.Put(off, p); err != nil {
			t.Fatal(err)
		}
		off += pkt
	}
	for range 100 { // warm: every slot opened and handed over once
		put()
	}
	if n := testing.AllocsPerRun(1000, put); n != 0 {
		t.Fatalf("Put allocates %v times per packet", n)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

// A Put waiting for a block the readers hold ends with its context; Close
// then stops the assembler without handing anything over.
func TestPutWaitEndsWithContext(t *testing.T) {
	h := ringtest.New(t, testKeys, 2, bsize)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := h.LockWrite(ctx, dada.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(ctx, ForDada(w, 2))
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, bsize)
	for seq := range uint64(2) {
		if err := a.Put(seq*bsize, p); err != nil {
			t.Fatal(err)
		}
	}
	time.AfterFunc(100*time.Millisecond, cancel)
	// Block 2 needs ring block 0 back: no reader clears it.
	if err := a.Put(2*bsize, p); !errors.Is(err, context.Canceled) {
		t.Fatalf("put waiting for a block: %v, want context.Canceled", err)
	}
	if err := a.Put(3*bsize, p); !errors.Is(err, context.Canceled) {
		t.Fatalf("put after the failure: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	// The observation cannot end without a free block: leave it open.
	if err := w.CloseContext(ctx); err != nil {
		t.Logf("close writer: %v", err)
	}
}
