package assemble

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/ipctest"
	"github.com/ringcap/ringcap/internal/ringtest"
	"github.com/ringcap/ringcap/pkg/dada"
)

var testKeys = ipctest.NewKeys(0x6800, 0x40, 0x10, 0x100) // 0x6800..0x6bf0: no other package's band

// TestMain runs the tests in a SysV IPC namespace of their own and fails them
// when a goroutine outlives them or a ring is left behind.
func TestMain(m *testing.M) { os.Exit(ipctest.Main(m, testKeys, 64)) }

// run is one observation through an assembler on a real ring, read back by a
// pkg/dada reader.
type run struct {
	records []Record
	data    []byte
	hdr     []byte
	counts  Counters
}

const testHeader = "HDR_VERSION 1.0\nSOURCE assemble-test\n"

// assemble creates a ring of nbufs blocks of bufsz bytes, puts the packets
// with put through an assembler of window blocks (maxAhead: Config.MaxAhead),
// closes it and returns what the reader read, the records and the counts.
func assemble(t *testing.T, nbufs, bufsz uint64, window, maxAhead int, put func(a *Assembler)) run {
	t.Helper()
	h := ringtest.New(t, testKeys, nbufs, bufsz)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := h.LockWrite(ctx, dada.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := w.Close(); err != nil {
			t.Errorf("close writer: %v", err)
		}
	}()
	var out run
	type result struct {
		hdr, data []byte
		err       error
	}
	done := make(chan result, 1)
	go func() {
		hdr, data, err := ringtest.ReadObservation(ctx, h)
		done <- result{hdr, data, err}
	}()
	cfg := ForDada(w, window)
	cfg.MaxAhead = maxAhead
	cfg.Header = func() ([]byte, error) { return []byte(testHeader), nil }
	cfg.OnBlock = func(r Record) {
		r.Missing = append([]Range(nil), r.Missing...)
		out.records = append(out.records, r)
	}
	a, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	put(a)
	if err := a.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if err := a.Put(0, []byte{1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("put after close: %v, want ErrClosed", err)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("read the observation: %v", res.err)
	}
	out.hdr, out.data, out.counts = res.hdr, res.data, a.Snapshot()
	checkInvariant(t, out.counts)
	return out
}

// checkInvariant checks that every packet is counted under one outcome.
func checkInvariant(t *testing.T, c Counters) {
	t.Helper()
	if sum := c.Received + c.Late + c.OutOfWindow + c.Duplicate + c.Malformed; sum != c.Packets {
		t.Fatalf("counters %+v: outcomes add up to %d, not the %d packets", c, sum, c.Packets)
	}
}
