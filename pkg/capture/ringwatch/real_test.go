package ringwatch

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ringcap/ringcap/internal/ipctest"
	"github.com/ringcap/ringcap/pkg/dada"
)

var keys = ipctest.NewKeys(0x7e00, 0x10, 0x10, 0x100) // 0x7e00..0x7ef0: no other package's band

// TestMain runs the tests in a SysV IPC namespace of their own and fails them when a ring
// is left behind.
func TestMain(m *testing.M) {
	ipctest.Isolate()
	code := m.Run()
	if !ipctest.CheckLeaks(keys.Used(), 16) {
		code = 1
	}
	os.Exit(code)
}

// On a real ring with two reader slots, one reading and one empty: after 3 blocks written
// and 1 read, the reading slot lags 2, the empty slot 3, and the ring is 3 of 4 full.
func TestWatcherOnARealRing(t *testing.T) {
	cfg := dada.DefaultConfig()
	cfg.Key, cfg.NBufs, cfg.BufSize, cfg.Readers = dada.Key(keys.Next()), 4, 4096, 2
	h, err := dada.Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Destroy() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := h.LockWrite(ctx, dada.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The empty slot never clears a block, so the writer's end of data may wait: bound it.
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = w.CloseContext(cctx)
	}()
	if err := w.WriteHeader([]byte("HDR_SIZE 4096\n")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := w.OpenBlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := w.MarkFilled(4096); err != nil {
			t.Fatal(err)
		}
	}
	r, err := h.LockRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	if _, err := r.ReadHeader(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.NextBlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.MarkCleared(); err != nil {
		t.Fatal(err)
	}

	wt := NewWatcher(h.Snapshot)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(wt)
	want := `
# HELP ringcap_ring_blocks Blocks of the data ring.
# TYPE ringcap_ring_blocks gauge
ringcap_ring_blocks 4
# HELP ringcap_ring_filled_blocks Blocks the slowest reader slot has still to open: the ring is full, and the sender held back, when this reaches ringcap_ring_blocks.
# TYPE ringcap_ring_filled_blocks gauge
ringcap_ring_filled_blocks 3
# HELP ringcap_ring_reader_connected 1 while a reader holds the slot, 0 for an empty slot (the writer still waits for it).
# TYPE ringcap_ring_reader_connected gauge
ringcap_ring_reader_connected{slot="0"} 1
ringcap_ring_reader_connected{slot="1"} 0
# HELP ringcap_ring_reader_lag_blocks Blocks written that the reader slot has not opened yet (its FULL semaphore).
# TYPE ringcap_ring_reader_lag_blocks gauge
ringcap_ring_reader_lag_blocks{slot="0"} 2
ringcap_ring_reader_lag_blocks{slot="1"} 3
# HELP ringcap_ring_written_blocks_total Blocks the writer has marked filled (w_buf_curr).
# TYPE ringcap_ring_written_blocks_total counter
ringcap_ring_written_blocks_total 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ringcap_ring_blocks", "ringcap_ring_filled_blocks",
		"ringcap_ring_reader_connected", "ringcap_ring_reader_lag_blocks", "ringcap_ring_written_blocks_total"); err != nil {
		t.Fatal(err)
	}
}

// A closed ring gives no metrics and no error to the scrape.
func TestWatcherOfAClosedRing(t *testing.T) {
	cfg := dada.DefaultConfig()
	cfg.Key, cfg.NBufs, cfg.BufSize, cfg.Readers = dada.Key(keys.Next()), 2, 4096, 1
	h, err := dada.Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Destroy(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewWatcher(h.Snapshot))
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Fatalf("metrics of a closed ring: %d series, %v", n, err)
	}
}
