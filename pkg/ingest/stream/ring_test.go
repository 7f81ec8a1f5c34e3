package stream

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/ingesttest"
	"github.com/ringcap/ringcap/internal/ipctest"
	"github.com/ringcap/ringcap/internal/ringtest"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/ingest/assemble"
)

var testKeys = ipctest.NewKeys(0x7800, 0x20, 0x10, 0x100) // 0x7800..0x79f0: no other package's band

// TestMain runs the tests in a SysV IPC namespace of their own and fails them
// when a goroutine outlives them or a ring is left behind.
func TestMain(m *testing.M) { os.Exit(ipctest.Main(m, testKeys, 64)) }

// observation is what a reader read of one observation, with the pipeline's
// counts and the assembler's block records.
type observation struct {
	hdr     *dada.Header
	data    []byte
	counts  Counters
	records []assemble.Record
}

// memSource is an in-memory Source: its packets in order.
type memSource [][]byte

func (s memSource) Run(ctx context.Context, handle func([]byte)) error {
	for _, p := range s {
		if err := ctx.Err(); err != nil {
			return err
		}
		handle(p)
	}
	return nil
}

// observe runs packets through a pipeline of cfg into a new ring of nbufs
// blocks of bufsz bytes with a reorder window of window blocks, closes it
// and returns what a reader read.
func observe(t *testing.T, cfg Config, nbufs, bufsz uint64, window int, packets [][]byte) observation {
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
	type result struct {
		hdr, data []byte
		err       error
	}
	done := make(chan result, 1)
	go func() {
		hdr, data, err := ringtest.ReadObservation(ctx, h)
		done <- result{hdr, data, err}
	}()
	var out observation
	acfg := assemble.ForDada(w, window)
	acfg.OnBlock = func(r assemble.Record) {
		r.Missing = append([]assemble.Range(nil), r.Missing...)
		out.records = append(out.records, r)
	}
	cfg.HeaderBytes = h.Header.BufSize()
	p, err := New(ctx, cfg, acfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(ctx, memSource(packets)); err != nil {
		t.Fatalf("run: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("read the observation: %v", res.err)
	}
	if out.hdr, err = dada.ParseHeader(res.hdr); err != nil {
		t.Fatal(err)
	}
	out.data, out.counts = res.data, p.Snapshot()
	checkInvariant(t, out.counts)
	return out
}

// checkInvariant checks that every packet is counted under one outcome, and
// that the pipeline's outcomes agree with the assembler's.
func checkInvariant(t *testing.T, c Counters) {
	t.Helper()
	if c.Outcomes() != c.Packets {
		t.Fatalf("counters %+v: outcomes add up to %d, not the %d packets", c, c.Outcomes(), c.Packets)
	}
	a := c.Assemble
	if a.Packets+c.Invalid+c.OutOfRange+c.BeforeStart+c.Control != c.Packets || a.ReceivedBytes != c.PlacedBytes {
		t.Fatalf("counters %+v: the assembler's %+v disagree", c, a)
	}
}

// checkHeader checks the header's keys.
func checkHeader(t *testing.T, hd *dada.Header, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := hd.Get(k); !ok || got != v {
			t.Errorf("header %s = %q, want %q\n%s", k, got, v, hd)
		}
	}
}

// checkData checks that data is the stream pattern from stream byte base on,
// but for the zero-filled byte ranges gaps ([off, end) in data).
func checkData(t *testing.T, data []byte, total int, base uint64, gaps [][2]int) {
	t.Helper()
	if len(data) != total {
		t.Fatalf("read %d bytes, want %d", len(data), total)
	}
	for i, b := range data {
		want := ingesttest.PatternByte(base + uint64(i))
		for _, g := range gaps {
			if i >= g[0] && i < g[1] {
				want = 0
			}
		}
		if b != want {
			t.Fatalf("byte %d is %#x, want %#x", i, b, want)
		}
	}
}
