package dada

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/testkit"
	"github.com/ringcap/ringcap/pkg/pattern"
)

func connect(t testing.TB, k Key) *HDU {
	t.Helper()
	h, err := Connect(k, ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// writeObs writes one observation of n pattern bytes (seed) with a header, streaming in
// chunks of chunk bytes.
func writeObs(w *Writer, seed uint64, n, chunk int) error {
	if err := w.WriteHeader([]byte(fmt.Sprintf("HDR_SIZE 4096\nOBS_OFFSET 0\nSEED %d\nBYTES %d\n", seed, n))); err != nil {
		return err
	}
	buf := make([]byte, chunk)
	for off := 0; off < n; {
		c := min(chunk, n-off)
		pattern.Fill(buf[:c], seed, uint64(off))
		if _, err := w.Write(buf[:c]); err != nil {
			return err
		}
		off += c
	}
	return w.EndOfData()
}

// readObs reads one observation, verifying the pattern, and returns its byte count.
func readObs(ctx context.Context, r *Reader, seed uint64) (int, error) {
	if _, err := r.ReadHeader(ctx); err != nil {
		return 0, err
	}
	n := 0
	for {
		b, err := r.NextBlock(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, err
		}
		if bad, ok := pattern.Verify(b.Data, seed, uint64(n)); !ok {
			return n, fmt.Errorf("block %d: mismatch at stream byte %d", b.Seq, n+bad)
		}
		n += len(b.Data)
		if err := r.MarkCleared(); err != nil {
			return n, err
		}
	}
	return n, r.Reset()
}

// The contract's oracle: one observation of 5.5 MiB + 123 bytes into 8 x 1 MiB blocks
// leaves exactly these bytes at these offsets of the sync segment (as dada_diskdb does).
func TestSyncBytesAfterKnownObservation(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 8, BufSize: 1 << 20})
	w, err := h.LockWrite(context.Background(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 5*(1<<20) + (1 << 19) + 123
	if err := writeObs(w, 1, n, 100000); err != nil {
		t.Fatal(err)
	}
	raw := h.Data.sync.bytes()
	u64 := func(off int) uint64 { return binary.LittleEndian.Uint64(raw[off:]) }
	for _, c := range []struct {
		name string
		got  uint64
		want uint64
	}{
		{"w_buf_next@56", u64(56), 6}, {"w_buf_curr@64", u64(64), 6}, {"w_xfer@80", u64(80), 1},
		{"s_buf[0]@256", u64(256), 0}, {"s_byte[0]@320", u64(320), 0}, {"eod[0]@384", uint64(raw[384]), 1},
		{"e_buf[0]@392", u64(392), 5}, {"e_byte[0]@456", u64(456), 524411},
		{"w_state@72 (WRITING? no: WRITER after EOD)", uint64(binary.LittleEndian.Uint32(raw[72:])), stateWriter},
		{"nbufs@40", u64(40), 8}, {"bufsz@48", u64(48), 1 << 20},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	// count[] at 528: blocks 0..5 each pending once for the reader.
	for b := 0; b < 8; b++ {
		want := byte(0)
		if b < 6 {
			want = 1
		}
		if raw[528+b] != want {
			t.Errorf("count[%d] = %d, want %d", b, raw[528+b], want)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(raw[72:]) != stateDiscon {
		t.Errorf("w_state after unlock = %d", binary.LittleEndian.Uint32(raw[72:]))
	}
	r, err := h.LockRead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, err := readObs(context.Background(), r, 1)
	if err != nil || got != n {
		t.Fatalf("read %d bytes (%v), want %d", got, err, n)
	}
	// 1.1.0 reader semantics: r_bufs moves past the EOD block, r_xfers to the next slot.
	if u64(88) != 6 || u64(184) != 1 {
		t.Errorf("r_bufs[0]=%d r_xfers[0]=%d, want 6, 1", u64(88), u64(184))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// The next observation starts at s_buf 6 (e_buf + 1) in slot 1.
	w, err = h.LockWrite(context.Background(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeObs(w, 2, 10, 10); err != nil {
		t.Fatal(err)
	}
	if u64(256+8) != 6 || u64(392+8) != 6 || u64(456+8) != 10 {
		t.Errorf("slot 1 = [%d,%d] => [%d,%d], want [6,0] => [6,10]", u64(264), u64(328), u64(400), u64(464))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// Several observations of awkward sizes through a small ring, writer and reader on their
// own handles, with back-pressure on every block.
func TestObservationsInARow(t *testing.T) {
	for _, style := range []bool{false, true} {
		t.Run(fmt.Sprintf("newStyleHeader=%v", style), func(t *testing.T) {
			h := createTestRing(t, Config{NBufs: 3, BufSize: 64 << 10})
			sizes := []int{1, 64 << 10, 3 * 64 << 10, 5*(64<<10) + 17, 0, 1<<20 + 5}
			ctx := context.Background()
			errc := make(chan error, 1)
			go func() {
				// Not closed by t.Cleanup: if the test fails, its Destroy ends this
				// writer's waits, and the memory stays attached until it returns.
				wh, err := Connect(h.Key(), ConnectOptions{})
				if err != nil {
					errc <- err
					return
				}
				defer func() { _ = wh.Close() }()
				w, err := wh.LockWrite(ctx, WriterOptions{NewStyleHeader: style})
				if err != nil {
					errc <- err
					return
				}
				for i, n := range sizes {
					if err := writeObs(w, uint64(100+i), n, 7000); err != nil {
						errc <- fmt.Errorf("observation %d: %w", i, err)
						return
					}
				}
				errc <- w.Close()
			}()
			r, err := connect(t, h.Key()).LockRead(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = r.Close() }()
			for i, n := range sizes {
				got, err := readObs(ctx, r, uint64(100+i))
				if err != nil || got != n {
					t.Fatalf("observation %d: read %d bytes (%v), want %d", i, got, err, n)
				}
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Both readers receive everything, and the writer waits for the slower one.
func TestTwoReadersSlowestGates(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 2, BufSize: 4096, Readers: 2})
	ctx := context.Background()
	w, err := h.LockWrite(ctx, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r0, err := connect(t, h.Key()).LockRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := connect(t, h.Key()).LockRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r0.Slot() == r1.Slot() {
		t.Fatalf("both readers got slot %d", r0.Slot())
	}
	if err := w.WriteHeader([]byte("HDR_SIZE 4096\n")); err != nil {
		t.Fatal(err)
	}
	fill := func(seq int) {
		b, err := w.OpenBlock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pattern.Fill(b.Data, 9, uint64(seq*4096))
		if err := w.MarkFilled(4096); err != nil {
			t.Fatal(err)
		}
	}
	fill(0)
	fill(1)
	_ = fill
	// r0 reads and clears both blocks; r1 reads none yet.
	for _, r := range []*Reader{r0} {
		if _, err := r.ReadHeader(ctx); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			b, err := r.NextBlock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := pattern.Verify(b.Data, 9, uint64(i*4096)); !ok {
				t.Fatalf("reader 0 block %d mismatch", i)
			}
			if err := r.MarkCleared(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The ring is full for r1, so the writer cannot reuse block 0.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = w.OpenBlock(cctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("OpenBlock while the slow reader holds every block = %v, want DeadlineExceeded", err)
	}
	// The cancelled wait took CLEAR from r0 already; after r1 clears one block the writer
	// resumes without taking from r0 twice.
	if _, err := r1.ReadHeader(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := r1.NextBlock(ctx)
	if err != nil || b.Seq != 0 {
		t.Fatalf("reader 1 NextBlock = %+v, %v", b, err)
	}
	if err := r1.MarkCleared(); err != nil {
		t.Fatal(err)
	}
	// The last block ends the observation although it is full: EndOfData would have to
	// open one more (empty) block, which the slow reader still holds.
	wb, err := w.OpenBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pattern.Fill(wb.Data, 9, 2*4096)
	if err := w.MarkFilledEOD(4096); err != nil {
		t.Fatal(err)
	}
	if err := w.EndOfData(); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*Reader{"r0": r0, "r1": r1} {
		n := 0
		for {
			b, err := r.NextBlock(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n += len(b.Data)
			if err := r.MarkCleared(); err != nil {
				t.Fatal(err)
			}
		}
		if name == "r0" && n != 4096 || name == "r1" && n != 2*4096 {
			t.Errorf("%s read %d more bytes", name, n)
		}
	}
	snap, err := h.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for i, rs := range snap.Data.Readers {
		if rs.RState != stateRStop || rs.RBufs != 3 || rs.EODAck != 8 || rs.SODAck != 8 {
			t.Errorf("reader %d: %+v", i, rs)
		}
	}
	for _, c := range []io.Closer{w, r0, r1} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// Several blocks open at once (a receiver filling blocks out of order), the last one short.
func TestSeveralOpenBlocks(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 4, BufSize: 8192})
	ctx := context.Background()
	w, err := h.LockWrite(ctx, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	var blocks []WriteBlock
	for i := 0; i < 3; i++ {
		b, err := w.OpenBlock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if b.Seq != uint64(i) || b.Index != i || len(b.Data) != 8192 {
			t.Fatalf("block %d = {%d %d %d}", i, b.Index, b.Seq, len(b.Data))
		}
		blocks = append(blocks, b)
	}
	for i := 2; i >= 0; i-- { // fill newest first
		pattern.Fill(blocks[i].Data, 5, uint64(i*8192))
	}
	if err := w.MarkFilled(8192); err != nil {
		t.Fatal(err)
	}
	if err := w.MarkFilled(8192); err != nil {
		t.Fatal(err)
	}
	if err := w.MarkFilled(100); err != nil { // EOD
		t.Fatal(err)
	}
	if err := w.MarkFilled(1); !errors.Is(err, ErrNoOpenBlock) {
		t.Fatalf("MarkFilled without an open block = %v", err)
	}
	r, err := h.LockRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	buf, err := io.ReadAll(r)
	if err != nil || len(buf) != 2*8192+100 {
		t.Fatalf("read %d bytes, %v", len(buf), err)
	}
	if bad, ok := pattern.Verify(buf, 5, 0); !ok {
		t.Fatalf("mismatch at %d", bad)
	}
	// The next observation starts right after the EOD block.
	b, err := w.OpenBlock(ctx)
	if err != nil || b.Seq != 3 {
		t.Fatalf("next observation's first block = %+v, %v", b, err)
	}
}

func TestWaitsAreCancellable(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 2, BufSize: 4096})
	r, err := h.LockRead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var nerr error
	go func() {
		defer wg.Done()
		_, nerr = r.NextBlock(ctx)
	}()
	cancel()
	wg.Wait()
	if !errors.Is(nerr, context.Canceled) {
		t.Fatalf("NextBlock after cancel = %v", nerr)
	}
	// A second writer waits for the lock, and can be cancelled too.
	w, err := h.LockWrite(context.Background(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cctx, c2 := context.WithCancel(context.Background())
	c2()
	if _, err := h.LockWrite(cctx, WriterOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("second LockWrite = %v", err)
	}
	if _, err := w.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// The reader still works after the cancelled wait (it saw no header: read data only).
	b, err := r.NextBlock(context.Background())
	if err != nil || string(b.Data) != "abc" || !b.EOD {
		t.Fatalf("NextBlock = %q eod=%v, %v", b.Data, b.EOD, err)
	}
}

func TestRemovedRingEndsWaits(t *testing.T) {
	k := testKey(t)
	h, err := Create(Config{Key: k, NBufs: 2, BufSize: 4096, HeaderBufSize: 4096, Readers: 1})
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.LockRead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := r.NextBlock(context.Background()); done <- err }()
	if err := Destroy(k); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrRingRemoved) {
		t.Fatalf("NextBlock on a removed ring = %v", err)
	}
	_ = r.Close()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}

// Writer sessions (lock, header, data, unlock) one after another with one persistent
// reader, more than the 8 transfer slots, in both header styles.
func TestManyWriterSessionsPersistentReader(t *testing.T) {
	for _, style := range []bool{false, true} {
		t.Run(fmt.Sprintf("newStyleHeader=%v", style), func(t *testing.T) {
			h := createTestRing(t, Config{NBufs: 2, BufSize: 4096})
			const sessions = 12
			ctx := context.Background()
			errc := make(chan error, 1)
			go func() {
				wh, err := Connect(h.Key(), ConnectOptions{})
				if err != nil {
					errc <- err
					return
				}
				defer func() { _ = wh.Close() }()
				for i := 0; i < sessions; i++ {
					w, err := wh.LockWrite(ctx, WriterOptions{NewStyleHeader: style})
					if err != nil {
						errc <- err
						return
					}
					if err := writeObs(w, uint64(i), 5000+i, 3000); err != nil {
						errc <- fmt.Errorf("session %d: %w", i, err)
						return
					}
					if err := w.Close(); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			r, err := connect(t, h.Key()).LockRead(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = r.Close() }()
			for i := 0; i < sessions; i++ {
				rctx, cancel := context.WithTimeout(ctx, time.Minute)
				n, err := readObs(rctx, r, uint64(i))
				cancel()
				if err != nil || n != 5000+i {
					t.Fatalf("session %d: read %d bytes, %v", i, n, err)
				}
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// HDU.Close ends blocked waits with ErrClosed, releases the locks of Writers and Readers
// still open, and leaves the handles closed.
func TestHDUCloseUnblocksAndReleases(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 2, BufSize: 4096})
	c, w, r := lockedPair(t, h.Key())
	ctx := context.Background()
	for i := 0; i < 2; i++ { // fill the ring: the next OpenBlock waits for the reader
		if _, err := w.OpenBlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := w.MarkFilled(4096); err != nil {
			t.Fatal(err)
		}
	}
	werr := make(chan error, 1)
	go func() { _, err := w.OpenBlock(ctx); werr <- err }()
	// Close once the writer waits in OpenBlock (on the ring's semaphore).
	testkit.WaitFor(t, time.Minute, "the writer to wait for a free block", func() (bool, string) {
		n := semWaiters.Load()
		return n > 0, fmt.Sprintf("%d goroutines waiting on a semaphore", n)
	})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-werr; !errors.Is(err, ErrClosed) {
		t.Fatalf("OpenBlock blocked across HDU.Close = %v, want ErrClosed", err)
	}
	if _, err := r.NextBlock(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("NextBlock after HDU.Close = %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Writer.Close after HDU.Close = %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Reader.Close after HDU.Close = %v", err)
	}
	s, err := h.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if s.Data.SemWrite != 1 || s.Header.SemWrite != 1 || s.Data.SemRead != 1 || s.Data.Readers[0].ConnSem != 1 {
		t.Fatalf("locks not released by HDU.Close: %+v", s.Data)
	}
	if _, err := c.Snapshot(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Snapshot on a closed HDU = %v", err)
	}
}

// HDU.Close in the middle of a busy stream: a writer and a reader handing blocks over as
// fast as they can on their own goroutines both end with ErrClosed, and no operation
// touches the rings after they are detached (that would fault; the loops do not touch
// the blocks' bytes, which Close takes away from a caller holding them). Handle operations hold
// only their handle's lock; Close releases each handle under it before detaching.
func TestHDUCloseDuringBusyStream(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 4, BufSize: 4096})
	c, w, r := lockedPair(t, h.Key())
	ctx := context.Background()
	if err := w.WriteHeader([]byte("HDR_SIZE 4096\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadHeader(ctx); err != nil {
		t.Fatal(err)
	}
	var moved atomic.Int64
	errs := make(chan error, 2)
	go func() { errs <- busyWriter(ctx, w, &moved) }()
	go func() { errs <- busyReader(ctx, r, &moved) }()
	for moved.Load() < 1000 {
		time.Sleep(time.Millisecond)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Fatalf("busy loop across HDU.Close ended with %v, want ErrClosed", err)
		}
	}
}

func busyWriter(ctx context.Context, w *Writer, moved *atomic.Int64) error {
	for {
		b, err := w.OpenBlock(ctx)
		if err != nil {
			return err
		}
		if err := w.MarkFilled(len(b.Data)); err != nil {
			return err
		}
		moved.Add(1)
	}
}

func busyReader(ctx context.Context, r *Reader, moved *atomic.Int64) error {
	for {
		if _, err := r.NextBlock(ctx); err != nil {
			return err
		}
		if err := r.MarkCleared(); err != nil {
			return err
		}
		moved.Add(1)
	}
}

// lockedPair connects a second handle to the ring of key and locks it for writing and
// for reading.
func lockedPair(t *testing.T, key Key) (*HDU, *Writer, *Reader) {
	t.Helper()
	c := connect(t, key)
	w, err := c.LockWrite(context.Background(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.LockRead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c, w, r
}
