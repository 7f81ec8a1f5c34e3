package dada

import (
	"context"
	"fmt"
	"testing"

	"github.com/ringcap/ringcap/pkg/pattern"
)

func semv(t *testing.T, id, num int) int {
	t.Helper()
	v, err := semValue(id, num)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A writer killed mid-transfer: the write lock comes back (SEM_UNDO), w_state stays
// WRITING, and a new writer continues the same transfer; a reader (another process) gets
// the whole observation intact.
func TestWriterKilledMidTransfer(t *testing.T) {
	const bs, seed = 64 << 10, 77
	h := createTestRing(t, Config{NBufs: 4, BufSize: bs})
	w1 := startChild(t, "writer-hang", h.Key(), "RINGCAP_TEST_BLOCKS=2", fmt.Sprint("RINGCAP_TEST_SEED=", seed))
	if got := w1.ready(t)["seq"]; got != "2" {
		t.Fatalf("writer opened block %s, want 2", got)
	}
	if v := semv(t, h.Data.connSem, semWrite); v != 0 {
		t.Fatalf("write lock = %d while the writer lives", v)
	}
	w1.kill(t)
	s := h.Data.sync
	if v := semv(t, h.Data.connSem, semWrite); v != 1 {
		t.Errorf("data ring write lock = %d after the writer died, want 1 (SEM_UNDO)", v)
	}
	if v := semv(t, h.Header.connSem, semWrite); v != 1 {
		t.Errorf("header ring write lock = %d after the writer died, want 1", v)
	}
	if s.wState() != stateWriting || s.wBufCurr() != 2 || s.wBufNext() != 3 {
		t.Errorf("after the crash: w_state=%s w_buf_curr=%d w_buf_next=%d, want WRITING 2 3",
			StateName(s.wState()), s.wBufCurr(), s.wBufNext())
	}
	if v := semv(t, h.Data.dataSem[0], semFull); v != 2 {
		t.Errorf("FULL = %d, want 2 (not undone)", v)
	}
	if v := semv(t, h.Data.dataSem[0], semSODAck); v != 7 {
		t.Errorf("SODACK = %d, want 7 (not undone)", v)
	}

	// A reader in another process reads the whole observation while a new writer resumes.
	rd := startChild(t, "reader-verify", h.Key(), fmt.Sprint("RINGCAP_TEST_SEED=", seed))
	w, err := connect(t, h.Key()).LockWrite(context.Background(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w.data.state != stateWriting {
		t.Fatalf("new writer state %s, want WRITING (continues the transfer)", StateName(w.data.state))
	}
	const total = 6*bs + 1000
	for off := 2 * bs; off < total; {
		b, err := w.OpenBlock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if b.Seq != uint64(off/bs) {
			t.Fatalf("resumed writer got block %d at offset %d", b.Seq, off)
		}
		n := min(bs, total-off)
		pattern.Fill(b.Data[:n], seed, uint64(off))
		if err := w.MarkFilled(n); err != nil {
			t.Fatal(err)
		}
		off += n
	}
	if got := rd.ready(t)["bytes"]; got != fmt.Sprint(total) {
		t.Fatalf("reader got %s bytes, want %d", got, total)
	}
	rd.wait(t)
	if s.rState(0) != stateDiscon || semv(t, h.Data.connSem, semRead) != 1 {
		t.Errorf("reader slot not released: r_state=%s READ=%d", StateName(s.rState(0)), semv(t, h.Data.connSem, semRead))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// A writer process and two reader processes: both readers get every byte of several
// observations, the writer gated by whichever is slower.
func TestWriterAndTwoReaderProcesses(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 4, BufSize: 256 << 10, Readers: 2})
	env := []string{"RINGCAP_TEST_SEED=500", "RINGCAP_TEST_OBS=3", fmt.Sprint("RINGCAP_TEST_BYTES=", 3<<20+99)}
	r0 := startChild(t, "reader-verify", h.Key(), env...)
	r1 := startChild(t, "reader-verify", h.Key(), env...)
	w := startChild(t, "writer", h.Key(), env...)
	w.ready(t)
	w.wait(t)
	for i, r := range []*child{r0, r1} {
		if got := r.ready(t)["bytes"]; got != fmt.Sprint(3*(3<<20+99)) {
			t.Fatalf("reader process %d read %s bytes", i, got)
		}
		r.wait(t)
	}
	s, err := h.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range s.Data.Readers {
		if r.RXfer != 3 || r.RState != stateDiscon || r.SODAck != 8 || r.EODAck != 8 || r.Full != 0 {
			t.Errorf("reader slot %d after the run: %+v", i, r)
		}
	}
}
