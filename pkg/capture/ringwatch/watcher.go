package ringwatch

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringcap/ringcap/pkg/dada"
)

// Watcher looks at a ring when asked (a scrape of /metrics, a read of /status) and keeps
// the last look, so that a slot's last advance spans looks.
type Watcher struct {
	snapshot func() (dada.Snapshot, error)
	now      func() time.Time
	mu       sync.Mutex
	last     *Summary
}

// NewWatcher watches the ring that snapshot reads (dada.HDU.Snapshot).
func NewWatcher(snapshot func() (dada.Snapshot, error)) *Watcher {
	return &Watcher{snapshot: snapshot, now: time.Now}
}

// Look reads the ring now.
func (w *Watcher) Look() (Summary, error) {
	snap, err := w.snapshot()
	if err != nil {
		return Summary{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	s := Summarize(snap.Data, w.last, w.now())
	w.last = &s
	return s, nil
}

var (
	descBlocks  = prometheus.NewDesc("ringcap_ring_blocks", "Blocks of the data ring.", nil, nil)
	descFilled  = prometheus.NewDesc("ringcap_ring_filled_blocks", "Blocks the slowest reader slot has still to open: the ring is full, and the sender held back, when this reaches ringcap_ring_blocks.", nil, nil)
	descOpen    = prometheus.NewDesc("ringcap_ring_open_blocks", "Blocks the receiver holds open (data landing, or opened ahead): not free to the writer either; filled plus open at ringcap_ring_blocks is a full ring.", nil, nil)
	descWritten = prometheus.NewDesc("ringcap_ring_written_blocks_total", "Blocks the writer has marked filled (w_buf_curr).", nil, nil)
	descLag     = prometheus.NewDesc("ringcap_ring_reader_lag_blocks", "Blocks written that the reader slot has not opened yet (its FULL semaphore).", []string{"slot"}, nil)
	descLagB    = prometheus.NewDesc("ringcap_ring_reader_lag_bytes", "ringcap_ring_reader_lag_blocks in bytes.", []string{"slot"}, nil)
	descConn    = prometheus.NewDesc("ringcap_ring_reader_connected", "1 while a reader holds the slot, 0 for an empty slot (the writer still waits for it).", []string{"slot"}, nil)
	descSince   = prometheus.NewDesc("ringcap_ring_reader_seconds_since_advance", "Seconds since the reader slot last went past a block, as the receiver saw it at its looks (scrapes and status reads).", []string{"slot"}, nil)
)

// Describe sends the ring metrics' descriptors.
func (w *Watcher) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBlocks, descFilled, descOpen, descWritten, descLag, descLagB, descConn, descSince} {
		ch <- d
	}
}

// Collect looks at the ring and sends its metrics; nothing while the ring cannot be read
// (not created yet, or closed).
func (w *Watcher) Collect(ch chan<- prometheus.Metric) {
	s, err := w.Look()
	if err != nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descBlocks, float64(s.Blocks))
	gauge(descFilled, float64(s.FilledBlocks))
	gauge(descOpen, float64(s.OpenBlocks))
	ch <- prometheus.MustNewConstMetric(descWritten, prometheus.CounterValue, float64(s.Written))
	for _, r := range s.Readers {
		slot := strconv.Itoa(r.Slot)
		gauge(descLag, float64(r.LagBlocks), slot)
		gauge(descLagB, float64(r.LagBytes), slot)
		gauge(descConn, b2f(r.Connected), slot)
		gauge(descSince, s.At.Sub(r.LastAdvance).Seconds(), slot)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
