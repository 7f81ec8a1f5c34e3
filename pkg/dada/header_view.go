package dada

import (
	"bytes"
	"context"
	"fmt"
	"time"
)

// LatestHeader returns the header the writer wrote last (the current observation's, or the
// last one's once it has ended), trimmed at the first NUL, whether or not readers have
// consumed it, polling until the first header is written. Unlike PeekHeader (dada_header's
// choice, the oldest header some reader slot has not consumed), a reader slot nobody uses
// does not hold it at an old observation. It takes no locks.
func (h *HDU) LatestHeader(ctx context.Context) ([]byte, error) {
	for {
		hdr, ok, err := h.latestHeader()
		if err != nil || ok {
			return hdr, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for a header on ring %s: %w", h.key, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// latestHeader copies the newest filled header block that is not empty (a PSRDADA writer
// may end the header ring's transfer with an empty block), and copies again when the
// writer may have reached a copied block again meanwhile.
func (h *HDU) latestHeader() ([]byte, bool, error) {
	if !h.enter() {
		return nil, false, ErrClosed
	}
	defer h.exit()
	r, s := h.Header, h.Header.sync
	nb := uint64(r.nbufs)
	for {
		curr := s.wBufCurr()
		var out []byte
		lo := curr // the oldest block copied
		// The writer has block w_buf_curr open (or opens it next); the blocks before it
		// hold the headers, the newest last.
		for lo > 0 && curr-lo < nb-1 && len(out) == 0 {
			lo--
			out = bytes.Clone(r.blocks[lo%nb])
			if i := bytes.IndexByte(out, 0); i >= 0 {
				out = out[:i]
			}
		}
		// The writer, at block w_buf_curr now at most, reaches block lo again at lo+nbufs.
		if s.wBufCurr() < lo+nb {
			return out, len(out) > 0, nil
		}
	}
}
