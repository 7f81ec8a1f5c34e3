package dada

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// obsHeader is observation i's header: its name is what the readers check.
func obsHeader(i int) []byte {
	return []byte(fmt.Sprintf("HDR_SIZE 4096\nOBS_OFFSET 0\nOBSNAME OBS%d\n", i))
}

func obsName(hdr []byte) string {
	for _, l := range strings.Split(string(hdr), "\n") {
		if v, ok := strings.CutPrefix(l, "OBSNAME "); ok {
			return v
		}
	}
	return ""
}

// writeNamedObs writes observation i (header and n pattern bytes), in a writer session
// of its own when perSession, else on w.
func writeNamedObs(ctx context.Context, h *HDU, w *Writer, o WriterOptions, i, n int) error {
	own := w == nil
	if own {
		var err error
		if w, err = h.LockWrite(ctx, o); err != nil {
			return err
		}
	}
	if err := w.WriteHeaderContext(ctx, obsHeader(i)); err != nil {
		return err
	}
	if err := writeData(ctx, w, uint64(i), n); err != nil {
		return err
	}
	if err := w.EndOfDataContext(ctx); err != nil {
		return err
	}
	if own {
		return w.CloseContext(ctx)
	}
	return nil
}

func writeData(ctx context.Context, w *Writer, seed uint64, n int) error {
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = byte(seed + uint64(i))
	}
	_, err := w.WriteContext(ctx, buf)
	return err
}

// A fresh reader per observation (dada_dbdisk -s, ringcap ring read -s) gets that
// observation's header, never an earlier one's, in both header styles, whether each
// observation is a writer session of its own (ringcap ring write) or one writer writes
// them all (ringcap recv); a persistent reader on a second slot keeps reading every
// observation past the 8 transfer slots; the header viewer (PeekHeader, as dada_header)
// shows the header a reader would get next.
func TestFreshReaderGetsItsObservationsHeader(t *testing.T) {
	for _, style := range []bool{false, true} {
		for _, perSession := range []bool{true, false} {
			t.Run(fmt.Sprintf("newStyleHeader=%v/sessionPerObservation=%v", style, perSession), func(t *testing.T) {
				testFreshReaders(t, WriterOptions{NewStyleHeader: style}, perSession)
			})
		}
	}
}

func testFreshReaders(t *testing.T, o WriterOptions, perSession bool) {
	h := createTestRing(t, Config{NBufs: 4, BufSize: 4096, Readers: 2})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const observations = 12
	persistent, err := connect(t, h.Key()).LockRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = persistent.Close() }()
	// The persistent reader takes its first header before the second observation
	// starts (a reader still waiting for an earlier observation's header keeps the
	// start of data on it, see moveSOD).
	pdone, pstarted := make(chan error, 1), make(chan struct{})
	go func() {
		err := readNamed(ctx, persistent, observations, sync.OnceFunc(func() { close(pstarted) }))
		if err != nil {
			cancel() // the writer would wait for it forever
		}
		pdone <- err
	}()

	wh := connect(t, h.Key())
	var w *Writer
	if !perSession {
		if w, err = wh.LockWrite(ctx, o); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = w.CloseContext(ctx) }()
	}
	for i := 0; i < observations; i++ {
		fresh, err := connect(t, h.Key()).LockRead(ctx)
		if err != nil {
			t.Fatalf("observation %d: lock read: %v", i, err)
		}
		got, drained := make(chan string, 1), make(chan error, 1)
		go func() {
			hdr, err := fresh.ReadHeader(ctx)
			if err != nil {
				got <- err.Error()
				drained <- err
				return
			}
			got <- obsName(hdr)
			_, err = drain(ctx, fresh)
			drained <- err
		}()
		if err := writeNamedObs(ctx, wh, w, o, i, 5000+i); err != nil {
			select {
			case perr := <-pdone:
				t.Fatalf("observation %d: write: %v; persistent reader: %v", i, err, perr)
			default:
			}
			t.Fatalf("observation %d: write: %v", i, err)
		}
		if i == 0 {
			<-pstarted
		}
		if name := <-got; name != fmt.Sprintf("OBS%d", i) {
			t.Errorf("observation %d: a fresh reader got the header of %q", i, name)
		}
		if err := <-drained; err != nil {
			t.Fatalf("observation %d: fresh reader: %v", i, err)
		}
		if err := fresh.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-pdone; err != nil {
		t.Fatalf("persistent reader: %v", err)
	}
}

// readNamed reads n observations in a row on one reader, checking each header's name.
// It calls started once it has the first header (or has failed).
func readNamed(ctx context.Context, r *Reader, n int, started func()) error {
	defer started()
	for i := 0; i < n; i++ {
		hdr, err := r.ReadHeader(ctx)
		started()
		if err != nil {
			return fmt.Errorf("observation %d: %w", i, err)
		}
		if name := obsName(hdr); name != fmt.Sprintf("OBS%d", i) {
			return fmt.Errorf("observation %d: header of %q", i, name)
		}
		if _, err := drain(ctx, r); err != nil {
			return fmt.Errorf("observation %d: %w", i, err)
		}
	}
	return nil
}

// drain reads the rest of the current observation and readies r for the next one.
func drain(ctx context.Context, r *Reader) (int, error) {
	n := 0
	for {
		b, err := r.NextBlock(ctx)
		if errors.Is(err, io.EOF) {
			return n, r.Reset()
		}
		if err != nil {
			return n, err
		}
		n += len(b.Data)
		if err := r.MarkCleared(); err != nil {
			return n, err
		}
	}
}

// The header viewer (PeekHeader, as dada_header) shows the observation that was just
// written, and a reader that starts after it was written gets it, observation after
// observation, in both header styles.
func TestViewerAndLateReaderSeeTheCurrentHeader(t *testing.T) {
	for _, style := range []bool{false, true} {
		for _, perSession := range []bool{true, false} {
			t.Run(fmt.Sprintf("newStyleHeader=%v/sessionPerObservation=%v", style, perSession), func(t *testing.T) {
				h := createTestRing(t, Config{NBufs: 4, BufSize: 4096})
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				o := WriterOptions{NewStyleHeader: style}
				var w *Writer
				if !perSession {
					var err error
					if w, err = h.LockWrite(ctx, o); err != nil {
						t.Fatal(err)
					}
					defer func() { _ = w.Close() }()
				}
				for i := 0; i < 10; i++ {
					if err := writeNamedObs(ctx, h, w, o, i, 5000); err != nil {
						t.Fatalf("observation %d: write: %v", i, err)
					}
					hdr, err := h.PeekHeader(ctx)
					if err != nil || obsName(hdr) != fmt.Sprintf("OBS%d", i) {
						t.Errorf("observation %d: the viewer shows %q (%v)", i, obsName(hdr), err)
					}
					r, err := connect(t, h.Key()).LockRead(ctx)
					if err != nil {
						t.Fatal(err)
					}
					hdr, err = r.ReadHeader(ctx)
					if err != nil || obsName(hdr) != fmt.Sprintf("OBS%d", i) {
						t.Errorf("observation %d: a late reader got %q (%v)", i, obsName(hdr), err)
					}
					if n, err := drain(ctx, r); err != nil || n != 5000 {
						t.Fatalf("observation %d: read %d bytes (%v)", i, n, err)
					}
					if err := r.Close(); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}
