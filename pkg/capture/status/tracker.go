package status

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ringcap/ringcap/pkg/capture/ringwatch"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// Tracker holds the live Status and the Prometheus metrics of a receiver.
// Every method is safe for concurrent use.
type Tracker struct {
	mu     sync.Mutex
	st     statusdoc.Status
	start  time.Time
	rateAt time.Time
	rateB  uint64
	held   HoldClock
	ring   *ringwatch.Watcher // nil until WatchRing
	cur    current            // the current observation (observation.go)
	live   func(*statusdoc.Status)

	reg       *prometheus.Registry
	bytes     *prometheus.CounterVec
	messages  *prometheus.CounterVec
	blocks    prometheus.Counter
	wcErrors  *prometheus.CounterVec
	obs       *prometheus.CounterVec
	stateGage *prometheus.GaugeVec
	refused   prometheus.Counter
}

// NewTracker returns a tracker in state Starting.
func NewTracker() *Tracker {
	t := &Tracker{reg: prometheus.NewRegistry(), start: time.Now()}
	// gidIndex reads 0 until the endpoint is chosen, as it always has.
	t.st = statusdoc.Status{Version: statusdoc.Version, State: statusdoc.StateStarting, StartTime: t.start.UTC().Format(time.RFC3339),
		Endpoint: statusdoc.Endpoint{GIDIndex: new(int)}}
	t.bytes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringcap_recv_bytes_total", Help: "Bytes received into the ring, per queue pair."}, []string{"qp"})
	t.messages = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringcap_recv_messages_total", Help: "Messages (slices) received, per queue pair."}, []string{"qp"})
	t.blocks = prometheus.NewCounter(prometheus.CounterOpts{Name: "ringcap_recv_blocks_filled_total", Help: "Ring blocks marked filled."})
	// Held-back time is read when scraped, so that a hold going on now shows
	// (and grows) before it ends.
	heldBack := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ringcap_recv_held_back_seconds_total",
		Help: "Seconds the sender was held back because no ring block was free (slow readers), the hold going on now included."},
		func() float64 { return t.heldBack(time.Now()).Total.Seconds() })
	heldNow := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ringcap_recv_held_back_current_seconds",
		Help: "Seconds the hold going on now has lasted (0: the receiver is not held back by readers)."},
		func() float64 { return t.heldBack(time.Now()).Current.Seconds() })
	t.wcErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringcap_recv_completion_errors_total", Help: "Failed work completions, per queue pair and status."}, []string{"qp", "status"})
	t.obs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringcap_recv_observations_total", Help: "Observations ended, by outcome."}, []string{"outcome"})
	// Computed when scraped, as /status computes it: a scrape alone keeps it current.
	rate := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ringcap_recv_rate_bytes_per_second", Help: "Receive rate since the previous reading of /status or /metrics (at least a second before)."}, t.rateNow)
	t.stateGage = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ringcap_recv_state", Help: "1 for the receiver's current state."}, []string{"state"})
	t.refused = prometheus.NewCounter(prometheus.CounterOpts{Name: "ringcap_recv_refused_senders_total",
		Help: "Connections refused because the sender's address is outside the receiver's allowlist (--allowed-senders)."})
	t.reg.MustRegister(t.bytes, t.messages, t.blocks, heldBack, heldNow, t.wcErrors, t.obs, rate, t.stateGage, t.refused, observationCollector{t},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	t.setStateGauge(statusdoc.StateStarting)
	return t
}

func (t *Tracker) setStateGauge(s string) {
	for _, x := range statusdoc.States {
		v := 0.0
		if x == s {
			v = 1
		}
		t.stateGage.WithLabelValues(x).Set(v)
	}
}

// Update changes the status under the lock.
func (t *Tracker) Update(f func(*statusdoc.Status)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f(&t.st)
}

// SetState sets the state and message.
func (t *Tracker) SetState(state, msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.st.State, t.st.Message = state, msg
	if state == statusdoc.StateFinished || state == statusdoc.StateFailed {
		t.st.CompletionTime = time.Now().UTC().Format(time.RFC3339)
	}
	t.setStateGauge(state)
}

// WatchRing adds the ring's fill and reader slots to the status (ringFill) and the
// metrics (ringcap_ring_*), read at each snapshot and scrape; it replaces the ring an
// earlier run watched.
func (t *Tracker) WatchRing(w *ringwatch.Watcher) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ring != nil {
		t.reg.Unregister(t.ring)
	}
	if err := t.reg.Register(w); err != nil {
		return fmt.Errorf("register the ring metrics: %w", err)
	}
	t.ring = w
	return nil
}

// Register adds a collector to the tracker's metrics (what /metrics serves).
func (t *Tracker) Register(c prometheus.Collector) error {
	if err := t.reg.Register(c); err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}
	return nil
}

// SetLive sets a function that brings the status up to date from live
// counters (a packet pipeline's) at each snapshot, before the derived fields
// are computed; it runs under the tracker's lock, so it must not call the
// tracker. nil removes it.
func (t *Tracker) SetLive(f func(*statusdoc.Status)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.live = f
}

// refresh runs the live function, if any; the caller holds t.mu.
func (t *Tracker) refresh() {
	if t.live != nil {
		t.live(&t.st)
	}
}

// Snapshot returns a copy of the status with the derived fields computed.
func (t *Tracker) Snapshot() statusdoc.Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refresh()
	if t.ring != nil {
		t.st.RingFill = nil
		if sum, err := t.ring.Look(); err == nil {
			t.st.RingFill = sum.Document()
		}
	}
	now := time.Now()
	t.updateRate(now)
	s := t.st
	s.CurrentObservation = t.currentDoc()
	h := t.held.At(now)
	s.HeldBackSeconds = h.Total.Seconds()
	if h.Holding {
		s.HeldBackSince = h.Since.UTC().Format(time.RFC3339Nano)
	}
	if s.LastObservation != nil {
		o := *s.LastObservation
		s.LastObservation = &o
	}
	if s.Endpoint.GIDIndex != nil {
		g := *s.Endpoint.GIDIndex
		s.Endpoint.GIDIndex = &g
	}
	if s.Packets != nil {
		p := *s.Packets
		s.Packets = &p
	}
	return s
}

// updateRate recomputes the receive rate over the time since it was last
// computed, once that is a second or more; the caller holds t.mu.
func (t *Tracker) updateRate(now time.Time) {
	if d := now.Sub(t.rateAt); d >= time.Second || t.rateAt.IsZero() {
		if !t.rateAt.IsZero() {
			t.st.RateBytesPerSecond = float64(t.st.BytesReceived-t.rateB) / d.Seconds()
		}
		t.rateAt, t.rateB = now, t.st.BytesReceived
	}
}

// rateNow is the receive rate as of now, for a scrape.
func (t *Tracker) rateNow() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refresh()
	t.updateRate(time.Now())
	return t.st.RateBytesPerSecond
}

// BlockFilled counts a block marked filled.
func (t *Tracker) BlockFilled() {
	t.blocks.Inc()
	t.mu.Lock()
	t.st.BlocksFilled++
	t.mu.Unlock()
}

// HoldBegan records that the receiver is held back by readers from now on
// (no ring block is free for the stream); a hold already going on goes on.
func (t *Tracker) HoldBegan(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.held.Begin(now)
}

// HoldEnded records that a block freed: the hold going on, if any, ends.
func (t *Tracker) HoldEnded(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.held.End(now)
}

// heldBack is the held-back time as of now.
func (t *Tracker) heldBack(now time.Time) HoldState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.held.At(now)
}

// CompletionError counts a failed work completion on queue pair qp.
func (t *Tracker) CompletionError(qp int, status string) {
	t.wcErrors.WithLabelValues(strconv.Itoa(qp), status).Inc()
	t.mu.Lock()
	t.st.CompletionErrors++
	t.mu.Unlock()
}

// ObservationDone records an observation that ended.
func (t *Tracker) ObservationDone(o statusdoc.Observation) {
	outcome := "complete"
	if !o.Complete {
		outcome = "incomplete"
	}
	t.obs.WithLabelValues(outcome).Inc()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observationEnded()
	t.st.Observations++
	if !o.Complete {
		t.st.IncompleteObs++
	}
	t.st.LastObservation = &o
	t.st.Seconds += o.Seconds
	if t.st.Seconds > 0 {
		t.st.Gbps = float64(t.st.BytesReceived) * 8 / t.st.Seconds / 1e9
	}
}

// Gatherer is the registry of the tracker's metrics (what /metrics serves).
func (t *Tracker) Gatherer() prometheus.Gatherer { return t.reg }

// Handler serves /metrics and /status.
func (t *Tracker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(t.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(t.Snapshot())
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	return mux
}

// WriteSummary writes the status JSON to path. It writes in place (truncate
// and write) rather than renaming a temporary file over it, because the usual
// target in Kubernetes, /dev/termination-log, is a bind-mounted file that
// cannot be replaced.
func (t *Tracker) WriteSummary(path string) error {
	b, err := json.MarshalIndent(t.Snapshot(), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// SenderRefused counts a sender refused by the allowlist.
func (t *Tracker) SenderRefused() {
	t.refused.Inc()
	t.Update(func(s *statusdoc.Status) { s.RefusedSenders++ })
}
