// Package ringtest creates PSRDADA rings for tests, at a test binary's ring keys
// (internal/ipctest) and destroyed when the test ends, and reads an observation back
// from one with a pkg/dada reader.
package ringtest

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/ringcap/ringcap/internal/ipctest"
	"github.com/ringcap/ringcap/pkg/dada"
)

// New creates a ring of nbufs blocks of bufsz bytes at the next of keys, destroyed at
// the end of the test.
func New(t testing.TB, keys *ipctest.Keys, nbufs, bufsz uint64) *dada.HDU {
	t.Helper()
	return create(t, keys, nbufs, bufsz, false)
}

// NewHugePages is New with the data blocks in huge pages (SHM_HUGETLB: bufsz a multiple
// of the kernel's huge page size, and vm.nr_hugepages enough for nbufs of them).
func NewHugePages(t testing.TB, keys *ipctest.Keys, nbufs, bufsz uint64) *dada.HDU {
	t.Helper()
	return create(t, keys, nbufs, bufsz, true)
}

func create(t testing.TB, keys *ipctest.Keys, nbufs, bufsz uint64, huge bool) *dada.HDU {
	t.Helper()
	cfg := dada.DefaultConfig()
	cfg.Key, cfg.NBufs, cfg.BufSize, cfg.HugePages = dada.Key(keys.Next()), nbufs, bufsz, huge
	h, err := dada.Create(cfg)
	if err != nil {
		t.Fatalf("create ring: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Destroy(); err != nil {
			t.Errorf("destroy ring: %v", err)
		}
	})
	return h
}

// ReadObservation reads one observation from h with a pkg/dada reader: its header and
// its bytes.
func ReadObservation(ctx context.Context, h *dada.HDU) (hdr, data []byte, err error) {
	r, err := h.LockRead(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer func() { err = errors.Join(err, r.Close()) }()
	if hdr, err = r.ReadHeader(ctx); err != nil {
		return nil, nil, err
	}
	for {
		b, err := r.NextBlock(ctx)
		if errors.Is(err, io.EOF) {
			return hdr, data, nil
		}
		if err != nil {
			return hdr, data, err
		}
		data = append(data, b.Data...)
		if err := r.MarkCleared(); err != nil {
			return hdr, data, err
		}
		if b.EOD {
			return hdr, data, nil
		}
	}
}

// Drain reads one observation of h as a reader that keeps nothing: each block cleared as
// soon as it is filled, until the data end or ctx ends.
func Drain(ctx context.Context, h *dada.HDU) (err error) {
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
		if err := r.MarkCleared(); err != nil || blk.EOD {
			return err
		}
	}
}

// DrainedWriter locks h for writing (unlocked when the test ends) and starts a reader
// that drains it (Drain); the channel gets the reader's result.
func DrainedWriter(ctx context.Context, tb testing.TB, h *dada.HDU) (*dada.Writer, <-chan error) {
	tb.Helper()
	w, err := h.LockWrite(ctx, dada.WriterOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = w.Close() })
	drained := make(chan error, 1)
	go func() { drained <- Drain(ctx, h) }()
	return w, drained
}
