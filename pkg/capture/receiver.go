package capture

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// ReceiverConfig configures a Receiver.
type ReceiverConfig struct {
	Mode     wire.Mode
	QPs      int
	MsgBytes uint64
	RxDepth  int  // receive WRs per queue pair (default 128)
	CQPerQP  bool // one completion queue per queue pair
	// BusyPoll keeps the receive loop polling when nothing arrives instead
	// of sleeping on completion events: a CPU kept busy for the lowest
	// latency, as perftest and dedicated capture hosts run.
	BusyPoll bool
	// Window is the number of ring blocks held open for incoming data
	// (0: automatic, enough to keep every receive queue full, at most the
	// ring size).
	Window int
	// Stop conditions (0: none). The receiver returns after the observation
	// during which a limit was reached.
	StopBytes        uint64
	StopDuration     time.Duration
	StopObservations int
	// Header builds each observation's header (its Mode and QPs are the
	// receiver's own).
	Header ObservationHeaders
	// HandshakeTimeout bounds the handshake (default 10 s).
	HandshakeTimeout time.Duration
	Log              *slog.Logger

	// Senders is the sender allowlist; nil allows every sender.
	Senders *endpoint.SenderFilter
}

func (c *ReceiverConfig) defaults() {
	if c.RxDepth == 0 {
		c.RxDepth = 128
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// Validate checks the configuration.
func (c ReceiverConfig) Validate() error {
	if err := wire.ValidateLink(c.Mode, c.QPs, c.MsgBytes); err != nil {
		return err
	}
	switch {
	case c.RxDepth < 1:
		return fmt.Errorf("--rx-depth %d: want at least 1", c.RxDepth)
	case c.Header.Size < 1:
		return errors.New("no header block size")
	}
	return c.Header.Check()
}

// Receiver accepts senders one at a time and writes each stream into the
// ring as one observation.
type Receiver struct {
	cfg  ReceiverConfig
	ring RingGeometry
	w    BlockWriter
	fab  fabric.ReceiverFabric
	t    *Tracker
	log  *slog.Logger

	busy     atomic.Bool
	obs      int
	total    uint64
	started  time.Time
	stopping atomic.Bool
}

// NewReceiver returns a receiver over an already locked ring writer and a
// fabric with the ring registered. The tracker receives status and metrics.
func NewReceiver(cfg ReceiverConfig, ring RingGeometry, w BlockWriter, fab fabric.ReceiverFabric, t *Tracker) (*Receiver, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if ring.NBufs < 1 || ring.BufSize < 1 {
		return nil, fmt.Errorf("ring geometry %d x %d", ring.NBufs, ring.BufSize)
	}
	g := wire.Geometry{BlockBytes: uint64(ring.BufSize), MsgBytes: cfg.MsgBytes, QPs: cfg.QPs, NBufs: ring.NBufs}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("ring of %d blocks of %d bytes with %d-byte messages: %w", ring.NBufs, ring.BufSize, cfg.MsgBytes, err)
	}
	if t == nil {
		t = NewTracker()
	}
	return &Receiver{cfg: cfg, ring: ring, w: w, fab: fab, t: t, log: cfg.Log}, nil
}

// Tracker returns the receiver's status tracker.
func (r *Receiver) Tracker() *Tracker { return r.t }

func (r *Receiver) geometry() wire.Geometry {
	return wire.Geometry{BlockBytes: uint64(r.ring.BufSize), MsgBytes: r.cfg.MsgBytes, QPs: r.cfg.QPs, NBufs: r.ring.NBufs, WholeBlocks: r.cfg.Mode.WholeBlocks()}
}

// window is the number of blocks held open at once.
func (r *Receiver) window() int {
	w := r.cfg.Window
	if w <= 0 {
		g := r.geometry()
		per := g.SlicesPerBlock()
		need := (uint64(r.cfg.RxDepth)*uint64(r.cfg.QPs) + per - 1) / per
		w = int(min(need+1, uint64(r.ring.NBufs)))
		w = max(w, min(2, r.ring.NBufs))
	}
	return min(w, r.ring.NBufs)
}

func (r *Receiver) stopReached() bool {
	switch {
	case r.stopping.Load():
		return true
	case r.stopObservations():
		r.log.Info("Stop observations reached", "observations", r.obs)
		return true
	case r.stopBytes(0):
		r.log.Info("Stop bytes reached", "bytes", r.total)
		return true
	}
	return false
}

// lastObservation reports whether the observation now ending, with its bytes, meets
// the stop condition: the receiver serves no sender after it.
func (r *Receiver) lastObservation(bytes uint64) bool {
	return r.stopping.Load() || r.stopObservations() || r.stopBytes(bytes)
}

// stopObservations: the observations started (the current one counted) reach the stop.
func (r *Receiver) stopObservations() bool {
	return r.cfg.StopObservations > 0 && r.obs >= r.cfg.StopObservations
}

// stopBytes: the bytes received, with more not yet counted, reach the stop.
func (r *Receiver) stopBytes(more uint64) bool {
	return r.cfg.StopBytes > 0 && r.total+more >= r.cfg.StopBytes
}
