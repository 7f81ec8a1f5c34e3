package dada

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/pattern"
)

// resumeWait bounds the waits of the resume tests, so that a reader or writer that hangs
// (as both did before resuming existed) fails the test instead of the whole run.
const resumeWait = 30 * time.Second

// writeStream writes one observation of n pattern bytes (seed) whose header says obsOffset,
// the pattern continuing from obsOffset, streaming in chunks of 10000 bytes.
func writeStream(ctx context.Context, w *Writer, seed, obsOffset uint64, n int) error {
	hdr := fmt.Sprintf("HDR_SIZE 4096\nSOURCE J0437-4715\nOBS_OFFSET %d\n", obsOffset)
	if err := w.WriteHeaderContext(ctx, []byte(hdr)); err != nil {
		return err
	}
	buf := make([]byte, 10000)
	for off := 0; off < n; {
		c := min(len(buf), n-off)
		pattern.Fill(buf[:c], seed, obsOffset+uint64(off))
		if _, err := w.WriteContext(ctx, buf[:c]); err != nil {
			return err
		}
		off += c
	}
	return w.EndOfDataContext(ctx)
}

// readRest reads a reader's observation to its end with Read, verifying the pattern from
// the header's OBS_OFFSET, and returns that offset and the byte count.
func readRest(ctx context.Context, t *testing.T, r *Reader, seed uint64) (uint64, int) {
	t.Helper()
	hdr, err := r.ReadHeader(ctx)
	if err != nil {
		t.Fatalf("read header: %v", err)
	}
	ph, err := ParseHeader(hdr)
	if err != nil {
		t.Fatal(err)
	}
	if src, _ := ph.Get("SOURCE"); src != "J0437-4715" {
		t.Fatalf("header lost its other keys:\n%s", hdr)
	}
	off, err := ph.OBSOffset()
	if err != nil {
		t.Fatalf("header: %v\n%s", err, hdr)
	}
	buf := make([]byte, 70000)
	n := 0
	for {
		c, err := r.ReadContext(ctx, buf)
		if bad, ok := pattern.Verify(buf[:c], seed, off+uint64(n)); !ok {
			t.Fatalf("byte %d of the observation (OBS_OFFSET %d) does not match", off+uint64(n)+uint64(bad), off)
		}
		n += c
		if errors.Is(err, io.EOF) {
			return off, n
		}
		if err != nil {
			t.Fatalf("read after %d bytes: %v", n, err)
		}
	}
}

// A reader that closes in the middle of an observation leaves its slot to the next reader,
// which resumes the observation: its header with OBS_OFFSET at the byte where it resumes,
// then the rest of the data byte for byte, while the writer (blocked on the full ring)
// goes on; the next observation is read as usual and the slot's semaphores end where a
// reader that read everything leaves them. Before resuming existed the second reader
// waited for the next header and the writer for a cleared block, both for ever.
func TestReaderClosedMidObservationResumes(t *testing.T) {
	const bs, seed, obsOffset = 64 << 10, 81, 4096
	const total = 10*bs + 777
	for _, tc := range []struct {
		name string
		read int    // bytes the first reader takes with Read before it closes
		want uint64 // where the next reader resumes: a block Read had begun is read again
	}{
		{"at a block boundary", 3 * bs, 3 * bs},
		{"inside a block", 3*bs + bs/2, 3 * bs},
		// Left before its first data block: the header is given back, and the next
		// reader reads the observation from its start as if the first never had.
		{"header only", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := createTestRing(t, Config{NBufs: 4, BufSize: bs})
			ctx, cancel := context.WithTimeout(context.Background(), resumeWait)
			defer cancel()
			w, err := connect(t, h.Key()).LockWrite(ctx, WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r1, err := connect(t, h.Key()).LockRead(ctx)
			if err != nil {
				t.Fatal(err)
			}
			werr := make(chan error, 1)
			go func() {
				err := writeStream(ctx, w, seed, obsOffset, total)
				if err == nil {
					err = writeStream(ctx, w, seed+1, 0, 2*bs+5)
				}
				werr <- errors.Join(err, w.Close())
			}()
			if _, err := r1.ReadHeader(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(readerCtx{ctx, r1}, make([]byte, tc.read)); err != nil {
				t.Fatal(err)
			}
			if err := r1.Close(); err != nil {
				t.Fatal(err)
			}

			r2, err := connect(t, h.Key()).LockRead(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = r2.Close() }()
			res, ok := r2.Resumed()
			if tc.read == 0 {
				if ok {
					t.Fatalf("Resumed() = %+v after a reader that read no data", res)
				}
			} else if !ok || res.Killed || res.Offset != tc.want || res.Slot != 0 {
				t.Fatalf("Resumed() = %+v, %v; want offset %d of a reader that closed", res, ok, tc.want)
			}
			off, n := readRest(ctx, t, r2, seed)
			if off != obsOffset+tc.want || n != total-int(tc.want) {
				t.Fatalf("resumed at OBS_OFFSET %d with %d bytes, want %d and %d", off, n, obsOffset+tc.want, total-int(tc.want))
			}
			if err := r2.Reset(); err != nil {
				t.Fatal(err)
			}
			if off, n := readRest(ctx, t, r2, seed+1); off != 0 || n != 2*bs+5 {
				t.Fatalf("next observation: OBS_OFFSET %d, %d bytes", off, n)
			}
			if err := <-werr; err != nil {
				t.Fatalf("writer: %v", err)
			}
			checkSlotAtRest(t, h, 0)
		})
	}
}

// readerCtx is a Reader as an io.Reader with a context for its waits.
type readerCtx struct {
	ctx context.Context
	r   *Reader
}

func (rc readerCtx) Read(p []byte) (int, error) { return rc.r.ReadContext(rc.ctx, p) }

// checkSlotAtRest checks that data reader slot i holds nothing and owes no acknowledgement:
// what a reader that read every observation leaves.
func checkSlotAtRest(t *testing.T, h *HDU, i int) {
	t.Helper()
	s, err := h.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Data.Readers[i]; r.SODAck != Xfers || r.EODAck != Xfers || r.Full != 0 {
		t.Errorf("data reader slot %d after the run: %+v, want SODACK=EODACK=%d FULL=0", i, r, Xfers)
	}
}

// A reader killed holding a block: its FULL comes back with the slot (it was taken with
// SEM_UNDO), and the next reader resumes the observation at that block, with the rest of
// the data in order and no FULL short (PSRDADA's new reader waits one block too long and
// reads one behind, and waits for the next header in the first place).
func TestReaderKilledMidBlockResumes(t *testing.T) {
	const bs, seed = 64 << 10, 78
	h := createTestRing(t, Config{NBufs: 4, BufSize: bs})
	ctx, cancel := context.WithTimeout(context.Background(), resumeWait)
	defer cancel()
	w := headerWriterOf(t, h, "HDR_SIZE 4096\nSOURCE J0437-4715\nOBS_OFFSET 0\n")
	put := func(seq int, n int) {
		b, err := w.OpenBlock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pattern.Fill(b.Data, seed, uint64(seq*bs))
		if err := w.MarkFilled(n); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		put(i, bs)
	}
	rd := startChild(t, "reader-hang", h.Key(), "RINGCAP_TEST_BLOCKS=1")
	if got := rd.ready(t); got["seq"] != "1" || got["slot"] != "0" {
		t.Fatalf("reader holds %v, want seq 1 slot 0", got)
	}
	rd.kill(t)
	s := h.Data.sync
	ds := h.Data.dataSem[0]
	if v := semv(t, h.Data.connSem, semRead); v != 1 {
		t.Errorf("READ = %d after the reader died, want 1 (SEM_UNDO)", v)
	}
	if s.rState(0) != stateReading || s.rBufs(0) != 1 {
		t.Errorf("after the crash: r_state=%s r_bufs=%d, want READING 1", StateName(s.rState(0)), s.rBufs(0))
	}
	if full, clr := semv(t, ds, semFull), semv(t, ds, semClear); full != 2 || clr != 1 {
		t.Errorf("FULL=%d CLEAR=%d, want 2 1 (the held block's FULL given back)", full, clr)
	}
	r, err := connect(t, h.Key()).LockRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	if res, ok := r.Resumed(); !ok || !res.Killed || res.Offset != bs {
		t.Fatalf("Resumed() = %+v, %v; want offset %d of a killed reader", res, ok, bs)
	}
	put(3, 100) // end of data
	off, n := readRest(ctx, t, r, seed)
	if off != bs || n != 2*bs+100 {
		t.Fatalf("resumed at OBS_OFFSET %d with %d bytes, want %d and %d", off, n, bs, 2*bs+100)
	}
	if err := r.Reset(); err != nil {
		t.Fatal(err)
	}
	checkSlotAtRest(t, h, 0)
}

// A slot left by a killed reader that still holds a block (a PSRDADA reader, whose FULL
// is not given back) cannot be resumed safely: LockRead says so and gives the slot back.
func TestResumeRefusesAnUncertainSlot(t *testing.T) {
	const bs = 4096
	h := createTestRing(t, Config{NBufs: 4, BufSize: bs})
	ctx, cancel := context.WithTimeout(context.Background(), resumeWait)
	defer cancel()
	w := headerWriterOf(t, h, "HDR_SIZE 4096\nOBS_OFFSET 0\n")
	if _, err := w.Write(make([]byte, 3*bs)); err != nil {
		t.Fatal(err)
	}
	r1, err := connect(t, h.Key()).LockRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r1.ReadHeader(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(readerCtx{ctx, r1}, make([]byte, bs)); err != nil {
		t.Fatal(err)
	}
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}
	// What a killed PSRDADA reader leaves: READING, one FULL taken for a block it never cleared.
	h.Data.sync.setRState(0, stateReading)
	if err := semOpClosing(ctx, nil, h.Data.dataSem[0], semFull, -1, 0); err != nil {
		t.Fatal(err)
	}
	_, err = connect(t, h.Key()).LockRead(ctx)
	if !errors.Is(err, ErrCannotResume) {
		t.Fatalf("LockRead on the uncertain slot = %v, want ErrCannotResume", err)
	}
	snap, err := h.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if snap.Data.SemRead != 1 || snap.Header.SemRead != 1 || snap.Data.Readers[0].ConnSem != 1 {
		t.Fatalf("the refused slot was not given back: %+v", snap.Data)
	}
}

// A reader killed after it read a header and before the observation's first data block
// leaves the header to the slot's next reader (its FULL, taken with SEM_UNDO, comes back
// and it was not cleared): that reader reads the observation from its start, header and
// all, instead of waiting for the next header while the writer waits for the slot.
func TestReaderKilledBeforeDataLeavesTheHeader(t *testing.T) {
	const bs, seed = 4096, 79
	h := createTestRing(t, Config{NBufs: 4, BufSize: bs})
	ctx, cancel := context.WithTimeout(context.Background(), resumeWait)
	defer cancel()
	w, err := h.LockWrite(ctx, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rd := startChild(t, "reader-header-hang", h.Key())
	werr := make(chan error, 1)
	go func() { werr <- errors.Join(writeStream(ctx, w, seed, 0, 10*bs+3), w.Close()) }()
	if got := rd.ready(t); got["slot"] != "0" {
		t.Fatalf("reader holds %v, want slot 0", got)
	}
	rd.kill(t)
	r, err := connect(t, h.Key()).LockRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	if res, ok := r.Resumed(); ok {
		t.Fatalf("Resumed() = %+v after a reader that read no data", res)
	}
	if off, n := readRest(ctx, t, r, seed); off != 0 || n != 10*bs+3 {
		t.Fatalf("read OBS_OFFSET %d and %d bytes, want the whole observation (0, %d)", off, n, 10*bs+3)
	}
	if err := <-werr; err != nil {
		t.Fatalf("writer: %v", err)
	}
	if err := r.Reset(); err != nil {
		t.Fatal(err)
	}
	checkSlotAtRest(t, h, 0)
}
