package capture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
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

// Serve accepts connections on ln until ctx is cancelled or a stop condition
// is met. Bad handshakes are answered with a Reject and do not stop serving.
// It returns nil after a stop condition and ctx.Err() on cancellation.
func (r *Receiver) Serve(ctx context.Context, ln net.Listener) error {
	r.started = time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if r.cfg.StopDuration > 0 {
		stopTimer := time.AfterFunc(r.cfg.StopDuration, func() {
			r.log.Info("Stop duration reached", "duration", r.cfg.StopDuration)
			r.stopping.Store(true)
			if !r.busy.Load() {
				cancel()
			}
		})
		defer stopTimer.Stop()
	}
	pending := make(chan *pendingConn)
	acceptErr := make(chan error, 1)
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				acceptErr <- err
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.greet(ctx, c, pending)
			}()
		}
	}()
	defer func() {
		_ = ln.Close()
		if err := <-acceptErr; err != nil {
			r.log.Debug("Listener closed", "err", err)
		}
		cancel()
		wg.Wait()
	}()
	r.t.SetState(statusdoc.StateListening, "waiting for a sender on "+ln.Addr().String())
	r.log.Info("Listening for senders", "address", ln.Addr().String(), "mode", r.cfg.Mode, "qps", r.cfg.QPs)
	for {
		select {
		case <-ctx.Done():
			if r.stopping.Load() {
				return nil
			}
			return ctx.Err()
		case err := <-acceptErr:
			acceptErr <- err
			return fmt.Errorf("accept on %s: %w", ln.Addr(), err)
		case p := <-pending:
			r.busy.Store(true)
			err := r.handle(ctx, p)
			r.busy.Store(false)
			if err != nil && ctx.Err() != nil {
				// A stop (SIGINT/SIGTERM) ended the stream: what failed after it
				// (ending the observation in the ring) is the stop's doing; the
				// writer's close ends the observation if the readers let it.
				r.log.Warn("Stream ended by a stop", "err", err.Error())
				return ctx.Err()
			}
			if err != nil {
				r.t.SetState(statusdoc.StateFailed, err.Error())
				return err
			}
			if r.stopReached() {
				return nil
			}
			if ctx.Err() == nil {
				r.t.SetState(statusdoc.StateListening, "waiting for a sender on "+ln.Addr().String())
			}
		}
	}
}

// pendingConn is a connection whose handshake checked out.
type pendingConn struct {
	k     *wire.Conn
	hello wire.Hello
	log   *slog.Logger
}

// settings is what the receiver tells each sender first.
func (r *Receiver) settings() wire.Settings {
	return wire.Settings{Mode: r.cfg.Mode, QPs: uint16(r.cfg.QPs), MsgBytes: uint32(r.cfg.MsgBytes), Fabric: r.fab.Fabric()}
}

// greet reads and checks a connection's preamble and hello, answering bad
// ones with a Reject, and queues good ones for the (single) session loop. A
// sender that arrives while another is streaming waits up to the handshake
// timeout for its turn. A sender of the previous protocol version
// (wire.MinProtocolVersion) is served as that version was: the connection
// speaks its version.
func (r *Receiver) greet(ctx context.Context, c net.Conn, pending chan<- *pendingConn) {
	if !r.cfg.Senders.Allows(c.RemoteAddr()) {
		r.refuseSender(c)
		return
	}
	log := r.log.With("peer", c.RemoteAddr().String())
	k := wire.NewConn(c)
	_ = c.SetDeadline(time.Now().Add(r.cfg.HandshakeTimeout))
	reject := func(msg string) {
		log.Warn("Rejected sender", "reason", msg)
		_ = k.Send(wire.Reject{Message: msg})
		_ = c.Close()
	}
	version, err := k.ReadPreamble()
	if err != nil {
		reject(rejectText(err))
		return
	}
	if version != wire.ProtocolVersion {
		log = log.With("protocolVersion", version)
	}
	if err := k.Send(r.settings()); err != nil {
		log.Warn("Sender went away before the hello", "err", err)
		_ = c.Close()
		return
	}
	m, err := k.Recv()
	if err != nil {
		reject(rejectText(fmt.Errorf("read hello: %w", err)))
		return
	}
	hello, ok := m.(wire.Hello)
	if !ok {
		reject(fmt.Sprintf("expected a hello message, got %T", m))
		return
	}
	if msg := r.mismatch(hello); msg != "" {
		reject(msg)
		return
	}
	t := time.NewTimer(r.cfg.HandshakeTimeout)
	defer t.Stop()
	select {
	case pending <- &pendingConn{k: k, hello: hello, log: log}:
	case <-t.C:
		reject("receiver is busy with another sender")
	case <-ctx.Done():
		reject("receiver is shutting down")
	}
}

// mismatch says how a sender's hello differs from what this receiver runs
// ("" when it does not), naming both sides.
func (r *Receiver) mismatch(hello wire.Hello) string {
	switch own := r.fab.Fabric(); {
	case hello.Fabric != own:
		return fmt.Sprintf("sender uses %v, this receiver uses %v (--transport, --ofi-provider)", hello.Fabric, own)
	case len(hello.QPs) != r.cfg.QPs:
		return fmt.Sprintf("sender asked for %d queue pairs, this receiver uses %d (--qps)", len(hello.QPs), r.cfg.QPs)
	case hello.Mode != r.cfg.Mode:
		return fmt.Sprintf("sender asked for %s mode, this receiver runs %s mode (--mode)", hello.Mode, r.cfg.Mode)
	case uint64(hello.MsgBytes) != r.cfg.MsgBytes:
		return fmt.Sprintf("sender uses %d-byte messages, this receiver %d (--msg-bytes)", hello.MsgBytes, r.cfg.MsgBytes)
	}
	return ""
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

func rejectText(err error) string {
	var ve *wire.VersionError
	switch {
	case errors.As(err, &ve):
		return ve.Error()
	case errors.Is(err, wire.ErrProtocol):
		return "not a ringcap sender: " + err.Error()
	}
	return err.Error()
}

// handle runs one accepted connection. Problems caused by the peer are
// answered and logged and return nil (the receiver keeps serving); only
// failures of the receiver itself (ring, fabric) are returned.
func (r *Receiver) handle(ctx context.Context, p *pendingConn) error {
	k, hello, log := p.k, p.hello, p.log
	defer func() { _ = k.NetConn().Close() }()
	_ = k.NetConn().SetDeadline(time.Now().Add(r.cfg.HandshakeTimeout))
	reject := func(msg string) error {
		log.Warn("Rejected sender", "reason", msg)
		_ = k.Send(wire.Reject{Message: msg})
		return nil
	}
	ep, err := r.fab.Open(ctx, fabric.EndpointConfig{QPs: r.cfg.QPs, SendDepth: 1, RecvDepth: r.cfg.RxDepth, CQPerQP: r.cfg.CQPerQP})
	if err != nil {
		msg := fmt.Sprintf("receiver could not create %d queue pairs: %v", r.cfg.QPs, err)
		_ = reject(msg)
		r.t.SetState(statusdoc.StateFailed, msg)
		return fmt.Errorf("create queue pairs: %w", err)
	}
	defer func() { _ = ep.Close() }()
	if err := ep.Connect(hello.QPs); err != nil {
		msg := fmt.Sprintf("receiver could not connect its queue pairs to the sender's: %v", err)
		_ = reject(msg)
		r.t.Update(func(s *statusdoc.Status) { s.Message = msg })
		return nil
	}
	s := &session{r: r, k: k, ep: ep, hello: hello, log: log, qpc: r.t.QueuePairs(r.cfg.QPs)}
	return s.run(ctx)
}
