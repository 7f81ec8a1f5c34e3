package dada

import (
	"context"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

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

// closeWriter closes w without waiting long for a block (a test failing half way leaves
// blocks with its readers): the observation is then left open, the locks released.
func closeWriter(w *Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = w.CloseContext(ctx)
}

// headerWriter locks h for writing until the test ends and writes one header.
func headerWriter(t *testing.T, h *HDU) *Writer {
	t.Helper()
	return headerWriterOf(t, h, "HDR_SIZE 4096\n")
}

// headerWriterOf locks h for writing until the test ends and writes the header hdr.
func headerWriterOf(t *testing.T, h *HDU, hdr string) *Writer {
	t.Helper()
	w, err := h.LockWrite(context.Background(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWriter(w) })
	if err := w.WriteHeader([]byte(hdr)); err != nil {
		t.Fatal(err)
	}
	return w
}

// drainReader clears what r can read within a short while and closes it, so that a test
// failing half way leaves its writer a block to close on.
func drainReader(r *Reader) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	for {
		if _, err := r.NextBlock(ctx); err != nil || r.MarkCleared() != nil {
			break
		}
	}
	_ = r.Close()
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
		w := headerWriter(t, h)
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

// OpenBlocks opens the first block as OpenBlock does and then as many of the next ones
// as the slowest of two readers has cleared, without waiting, leaving the ring exactly
// as the same number of OpenBlock calls do.
func TestOpenBlocksMatchesSingleOpens(t *testing.T) {
	const nbufs, bufsz = 4, 8192
	ctx := context.Background()
	batched := createTestRing(t, Config{NBufs: nbufs, BufSize: bufsz, Readers: 2})
	single := createTestRing(t, Config{NBufs: nbufs, BufSize: bufsz, Readers: 2})
	var ws []*Writer
	var rs [][]*Reader
	for _, h := range []*HDU{batched, single} {
		w := headerWriter(t, h)
		ws = append(ws, w)
		var readers []*Reader
		for range 2 {
			r, err := h.LockRead(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { drainReader(r) })
			if _, err := r.ReadHeader(ctx); err != nil {
				t.Fatal(err)
			}
			readers = append(readers, r)
		}
		rs = append(rs, readers)
	}
	dst := make([]WriteBlock, nbufs+2)
	// step opens up to max blocks on the batched ring (wanting got), as many one by one on
	// the other, and compares the two rings.
	step := func(max, want int) {
		t.Helper()
		n, err := ws[0].OpenBlocks(ctx, dst[:max])
		if err != nil || n != want {
			t.Fatalf("OpenBlocks(%d) = %d, %v; want %d", max, n, err, want)
		}
		for i := range n {
			b, err := ws[1].OpenBlock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if dst[i].Seq != b.Seq || dst[i].Index != b.Index || &dst[i].Data[0] != &batched.Data.blocks[b.Index][0] {
				t.Fatalf("OpenBlocks' block %d is %d (index %d), OpenBlock's %d (index %d)", i, dst[i].Seq, dst[i].Index, b.Seq, b.Index)
			}
		}
		if b, s := viewOf(t, batched), viewOf(t, single); !reflect.DeepEqual(b, s) {
			t.Fatalf("after opening %d blocks: OpenBlocks left\n%+v\nOpenBlock left\n%+v", n, b, s)
		}
	}
	// each applies fn to both rings.
	each := func(fn func(w *Writer, rs []*Reader) error) {
		t.Helper()
		for i := range ws {
			if err := fn(ws[i], rs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	clearBlocks := func(r *Reader, n int) error {
		for range n {
			if _, err := r.NextBlock(ctx); err != nil {
				return err
			}
			if err := r.MarkCleared(); err != nil {
				return err
			}
		}
		return nil
	}
	step(nbufs+2, nbufs) // a fresh ring: every block is free (the first starts the data), no more than the ring holds
	each(func(w *Writer, _ []*Reader) error {
		for range nbufs {
			if err := w.MarkFilled(bufsz); err != nil {
				return err
			}
		}
		return nil
	})
	each(func(_ *Writer, rs []*Reader) error {
		return errors.Join(clearBlocks(rs[0], 3), clearBlocks(rs[1], 2))
	})
	step(nbufs, 2) // the slower reader cleared two
	each(func(_ *Writer, rs []*Reader) error { return clearBlocks(rs[1], 1) })
	step(nbufs, 1) // two still open: at most two more, and one is cleared
	if b, s := viewOf(t, batched), viewOf(t, single); b.State.WBufNext != 7 || s.State.WBufNext != 7 {
		t.Fatalf("w_buf_next = %d and %d, want 7", b.State.WBufNext, s.State.WBufNext)
	}
	// End the observation on the open blocks and let both readers reach its end, so that
	// closing the writers waits for nothing.
	each(func(w *Writer, rs []*Reader) error {
		err := errors.Join(w.MarkFilled(bufsz), w.MarkFilled(bufsz), w.MarkFilled(100))
		for _, r := range rs {
			for err == nil {
				if _, err = r.NextBlock(ctx); err == nil {
					err = r.MarkCleared()
				}
			}
			if errors.Is(err, io.EOF) {
				err = nil
			}
		}
		return err
	})
}
