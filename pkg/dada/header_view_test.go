package dada

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// LatestHeader shows the header the writer wrote last, observation after observation,
// past the header ring's 8 blocks, in both header styles, while a reader reads each
// observation; before the first header it waits (and gives up with its context).
func TestLatestHeader(t *testing.T) {
	for _, style := range []bool{false, true} {
		t.Run(fmt.Sprintf("newStyleHeader=%v", style), func(t *testing.T) {
			h := createTestRing(t, Config{NBufs: 4, BufSize: 4096})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			none, stop := context.WithCancel(ctx)
			stop()
			if _, err := h.LatestHeader(none); !errors.Is(err, context.Canceled) {
				t.Fatalf("LatestHeader before any header = %v, want context.Canceled", err)
			}
			o := WriterOptions{NewStyleHeader: style}
			w, err := h.LockWrite(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = w.Close() }()
			r, err := connect(t, h.Key()).LockRead(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = r.Close() }()
			for i := 0; i < 12; i++ {
				if err := writeNamedObs(ctx, h, w, o, i, 5000); err != nil {
					t.Fatalf("observation %d: write: %v", i, err)
				}
				if hdr, err := h.LatestHeader(ctx); err != nil || obsName(hdr) != fmt.Sprintf("OBS%d", i) {
					t.Errorf("observation %d written: LatestHeader shows %q (%v)", i, obsName(hdr), err)
				}
				if _, err := r.ReadHeader(ctx); err != nil {
					t.Fatal(err)
				}
				if _, err := drain(ctx, r); err != nil {
					t.Fatal(err)
				}
				if hdr, err := h.LatestHeader(ctx); err != nil || obsName(hdr) != fmt.Sprintf("OBS%d", i) {
					t.Errorf("observation %d read: LatestHeader shows %q (%v)", i, obsName(hdr), err)
				}
			}
		})
	}
}
