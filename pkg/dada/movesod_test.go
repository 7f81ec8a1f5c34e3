package dada

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

// moveSOD moves the header ring's start of data to each new old-style header, except
// that a reader slot not in READING which has not yet read an earlier header holds it
// there (a reader taking that slot must read that header first: its data ring is still at
// that observation, and the writer needs its clear of that header block). A slot in
// READING, however far behind, does not hold it. Both cases, with a reader that takes the
// slot afterwards:
//   - an idle slot, next to a reader that has read every observation: the new reader
//     reads from observation 0, header and data together, and the writer goes on past the
//     header ring's 8 blocks;
//   - a slot in READING that lags (a reader that has read observation 0 only), next to a
//     slot whose reader read observations 0 and 1 and left: the new reader on that slot
//     gets observation 2, not the lagging reader's observation 1.
func TestMoveSODLaggingReaderSlot(t *testing.T) {
	t.Run("idle slot holds the start", testMoveSODIdleSlot)
	t.Run("slot in READING does not", testMoveSODReadingSlot)
}

func testMoveSODIdleSlot(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 8, BufSize: 4096, Readers: 2})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := WriterOptions{}
	w, err := h.LockWrite(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = w.CloseContext(ctx) }()
	a := lockReadSlot(ctx, t, h, 0)
	for i := 0; i < 3; i++ {
		if err := writeNamedObs(ctx, h, w, o, i, 1000+i); err != nil {
			t.Fatalf("observation %d: write: %v", i, err)
		}
		readObsAs(ctx, t, a, "reader on slot 0", i)
	}
	b := lockReadSlot(ctx, t, h, 1) // the idle slot
	for i := 0; i < 12; i++ {
		if i >= 3 {
			if err := writeNamedObs(ctx, h, w, o, i, 1000+i); err != nil {
				t.Fatalf("observation %d: write: %v", i, err)
			}
			readObsAs(ctx, t, a, "reader on slot 0", i)
		}
		readObsAs(ctx, t, b, "reader on the idle slot", i)
	}
}

func testMoveSODReadingSlot(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 8, BufSize: 4096, Readers: 2})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := WriterOptions{}
	w, err := h.LockWrite(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = w.CloseContext(ctx) }()
	lagging := lockReadSlot(ctx, t, h, 0)
	b := lockReadSlot(ctx, t, h, 1)
	for i := 0; i < 2; i++ {
		if err := writeNamedObs(ctx, h, w, o, i, 1000+i); err != nil {
			t.Fatalf("observation %d: write: %v", i, err)
		}
		if i == 0 {
			readObsAs(ctx, t, lagging, "lagging reader", 0)
		}
		readObsAs(ctx, t, b, "reader on slot 1", i)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := writeNamedObs(ctx, h, w, o, 2, 1002); err != nil {
		t.Fatalf("observation 2: write: %v", err)
	}
	c := lockReadSlot(ctx, t, h, 1)
	readObsAs(ctx, t, c, "new reader on slot 1", 2)
	for i := 1; i < 3; i++ {
		readObsAs(ctx, t, lagging, "lagging reader", i)
	}
}

// lockReadSlot takes a reader slot and checks it is slot on both rings.
func lockReadSlot(ctx context.Context, t *testing.T, h *HDU, slot int) *Reader {
	t.Helper()
	r, err := connect(t, h.Key()).LockRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	if r.data.iread != slot || r.hdr.iread != slot {
		t.Fatalf("reader took slot %d on the data ring and %d on the header ring, want %d", r.data.iread, r.hdr.iread, slot)
	}
	return r
}

// readObsAs reads one observation on r and checks it is observation i (writeNamedObs's
// header and data of 1000+i bytes).
func readObsAs(ctx context.Context, t *testing.T, r *Reader, who string, i int) {
	t.Helper()
	hdr, err := r.ReadHeader(ctx)
	if err != nil {
		t.Fatalf("%s, observation %d: %v", who, i, err)
	}
	want := fmt.Sprintf("OBS%d", i)
	got := obsName(hdr)
	first, n, err := drainFirst(ctx, r)
	if err != nil {
		t.Fatalf("%s, observation %d (header of %s): %v", who, i, got, err)
	}
	if got != want || n != 1000+i || first != byte(i) {
		t.Fatalf("%s, observation %d: header of %s, %d data bytes starting with %d; want header of %s, %d bytes starting with %d",
			who, i, got, n, first, want, 1000+i, byte(i))
	}
}

// drainFirst reads the rest of the observation (as drain) and returns its first byte too.
func drainFirst(ctx context.Context, r *Reader) (byte, int, error) {
	var first byte
	n := 0
	for {
		b, err := r.NextBlock(ctx)
		if errors.Is(err, io.EOF) {
			return first, n, r.Reset()
		}
		if err != nil {
			return first, n, err
		}
		if n == 0 && len(b.Data) > 0 {
			first = b.Data[0]
		}
		n += len(b.Data)
		if err := r.MarkCleared(); err != nil {
			return first, n, err
		}
	}
}
