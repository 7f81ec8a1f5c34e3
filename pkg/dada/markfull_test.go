package dada

import (
	"context"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/ringcap/ringcap/pkg/pattern"
)

// ringView is what readers see of a data ring: its snapshot without the key, and the
// writer's per-block counts.
type ringView struct {
	State  RingState
	Counts []uint8
}

func viewOf(t *testing.T, h *HDU) ringView {
	t.Helper()
	s, err := h.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	v := ringView{State: s.Data}
	v.State.Key = 0
	for b := range uint64(h.Data.nbufs) {
		v.Counts = append(v.Counts, h.Data.sync.count(b))
	}
	return v
}

// MarkFilledFull(k) leaves the ring (sync fields, counts and every reader's
// semaphores) exactly as k calls of MarkFilled(BufSize) do, at the first block of an
// observation (start of data) and inside it, with two readers; and both readers then
// read every byte of the observation.
func TestMarkFilledFullMatchesSingleMarks(t *testing.T) {
	const nbufs, bufsz = 8, 8192
	ctx := context.Background()
	batched := createTestRing(t, Config{NBufs: nbufs, BufSize: bufsz, Readers: 2})
	single := createTestRing(t, Config{NBufs: nbufs, BufSize: bufsz, Readers: 2})
	var ws []*Writer
	for _, h := range []*HDU{batched, single} {
		w, err := h.LockWrite(ctx, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Close() })
		if err := w.WriteHeader([]byte("HDR_SIZE 4096\n")); err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			b, err := w.OpenBlock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pattern.Fill(b.Data, 9, uint64(i*bufsz))
		}
		ws = append(ws, w)
	}
	for _, k := range []int{2, 3} { // 2 includes the first block of the observation
		if err := ws[0].MarkFilledFull(k); err != nil {
			t.Fatal(err)
		}
		for range k {
			if err := ws[1].MarkFilled(bufsz); err != nil {
				t.Fatal(err)
			}
		}
		if b, s := viewOf(t, batched), viewOf(t, single); !reflect.DeepEqual(b, s) {
			t.Fatalf("after %d blocks: MarkFilledFull left\n%+v\nk single marks left\n%+v", k, b, s)
		}
	}
	if err := ws[0].MarkFilledFull(2); !errors.Is(err, ErrNoOpenBlock) {
		t.Fatalf("MarkFilledFull(2) with one block open = %v, want ErrNoOpenBlock", err)
	}
	if err := ws[0].MarkFilled(100); err != nil { // end of data
		t.Fatal(err)
	}
	for range 2 {
		r, err := batched.LockRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.ReadHeader(ctx); err != nil {
			t.Fatal(err)
		}
		buf, err := io.ReadAll(r)
		if err != nil || len(buf) != 5*bufsz+100 {
			t.Fatalf("read %d bytes, %v; want %d", len(buf), err, 5*bufsz+100)
		}
		if bad, ok := pattern.Verify(buf, 9, 0); !ok {
			t.Fatalf("mismatch at byte %d", bad)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
