package assemble

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/ringcap/ringcap/internal/ringtest"
	"github.com/ringcap/ringcap/pkg/dada"
)

// BenchmarkPut puts 8 KiB payloads in order into a real ring of 8 blocks of
// 1 MiB that a reader drains: the cost of one packet (the copy into the
// block, presence, counters and the hand-overs), in ns per packet.
func BenchmarkPut(b *testing.B) {
	const pkt = 8 << 10
	h := ringtest.New(b, testKeys, 8, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := h.LockWrite(ctx, dada.WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	drained := make(chan error, 1)
	go func() { drained <- drain(ctx, h) }()
	cfg := ForDada(w, 4)
	cfg.Header = func() ([]byte, error) { return []byte(testHeader), nil }
	a, err := New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	p := make([]byte, pkt)
	b.SetBytes(pkt)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := a.Put(uint64(i)*pkt, p); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := a.Close(); err != nil {
		b.Fatal(err)
	}
	if err := <-drained; err != nil {
		b.Fatal(err)
	}
}

// drain reads one observation from h, clearing each block at once.
func drain(ctx context.Context, h *dada.HDU) (err error) {
	r, err := h.LockRead(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.Close()) }()
	if _, err := r.ReadHeader(ctx); err != nil {
		return err
	}
	for {
		blk, err := r.NextBlock(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := r.MarkCleared(); err != nil {
			return err
		}
		if blk.EOD {
			return nil
		}
	}
}
