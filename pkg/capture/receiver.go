package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringcap/ringcap/pkg/dada"
)

// BlockWriter is what the receiver needs from the ring's writer (pkg/dada's
// Writer through an adapter). Calls come from one goroutine at a time.
type BlockWriter interface {
	// WriteHeader writes the observation's header before its data.
	WriteHeader(hdr []byte) error
	// OpenBlock returns the ring index of the next block to fill, waiting
	// while the slowest reader still holds it; ctx cancels the wait.
	OpenBlock(ctx context.Context) (int, error)
	// MarkFilled marks the oldest open block filled with nbytes. eod ends the
	// observation on this block (also implied by nbytes < block size).
	MarkFilled(nbytes int, eod bool) error
	// EndOfData ends the observation when no block carried the end (nothing
	// was received) and releases blocks that were opened but not used.
	EndOfData() error
}

// RingGeometry is the shape of the ring the receiver fills.
type RingGeometry struct {
	NBufs   int
	BufSize int
}

// ReceiverConfig configures a Receiver.
type ReceiverConfig struct {
	Mode     Mode
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
	Senders *SenderFilter
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
	if err := validateLink(c.Mode, c.QPs, c.MsgBytes); err != nil {
		return err
	}
	switch {
	case c.RxDepth < 1:
		return fmt.Errorf("--rx-depth %d: want at least 1", c.RxDepth)
	case c.Header.Size < 1:
		return errors.New("no header block size")
	}
	return nil
}

// Receiver accepts senders one at a time and writes each stream into the
// ring as one observation.
type Receiver struct {
	cfg  ReceiverConfig
	ring RingGeometry
	w    BlockWriter
	fab  ReceiverFabric
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
func NewReceiver(cfg ReceiverConfig, ring RingGeometry, w BlockWriter, fab ReceiverFabric, t *Tracker) (*Receiver, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if ring.NBufs < 1 || ring.BufSize < 1 {
		return nil, fmt.Errorf("ring geometry %d x %d", ring.NBufs, ring.BufSize)
	}
	g := Geometry{BlockBytes: uint64(ring.BufSize), MsgBytes: cfg.MsgBytes, QPs: cfg.QPs, NBufs: ring.NBufs}
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

func (r *Receiver) geometry() Geometry {
	return Geometry{BlockBytes: uint64(r.ring.BufSize), MsgBytes: r.cfg.MsgBytes, QPs: r.cfg.QPs, NBufs: r.ring.NBufs, WholeBlocks: r.cfg.Mode.wholeBlocks()}
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
	r.t.SetState(StateListening, "waiting for a sender on "+ln.Addr().String())
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
			if err != nil {
				r.t.SetState(StateFailed, err.Error())
				return err
			}
			if r.stopReached() {
				return nil
			}
			if ctx.Err() == nil {
				r.t.SetState(StateListening, "waiting for a sender on "+ln.Addr().String())
			}
		}
	}
}

// pendingConn is a connection whose handshake checked out.
type pendingConn struct {
	k     *conn
	hello Hello
	log   *slog.Logger
}

// greet reads and checks a connection's preamble and hello, answering bad
// ones with a Reject, and queues good ones for the (single) session loop. A
// sender that arrives while another is streaming waits up to the handshake
// timeout for its turn.
func (r *Receiver) greet(ctx context.Context, c net.Conn, pending chan<- *pendingConn) {
	if !r.cfg.Senders.Allows(c.RemoteAddr()) {
		r.refuseSender(c)
		return
	}
	log := r.log.With("peer", c.RemoteAddr().String())
	k := newConn(c)
	_ = c.SetDeadline(time.Now().Add(r.cfg.HandshakeTimeout))
	reject := func(msg string) {
		log.Warn("Rejected sender", "reason", msg)
		_ = k.send(Reject{Message: msg})
		_ = c.Close()
	}
	if err := ReadPreamble(k.r); err != nil {
		reject(rejectText(err))
		return
	}
	m, err := k.recv()
	if err != nil {
		reject(rejectText(fmt.Errorf("read hello: %w", err)))
		return
	}
	hello, ok := m.(Hello)
	if !ok {
		reject(fmt.Sprintf("expected a hello message, got %T", m))
		return
	}
	switch {
	case len(hello.QPs) != r.cfg.QPs:
		reject(fmt.Sprintf("sender asked for %d queue pairs, this receiver uses %d (--qps)", len(hello.QPs), r.cfg.QPs))
		return
	case hello.Mode != r.cfg.Mode:
		reject(fmt.Sprintf("sender asked for %s mode, this receiver runs %s mode (--mode)", hello.Mode, r.cfg.Mode))
		return
	case uint64(hello.MsgBytes) != r.cfg.MsgBytes:
		reject(fmt.Sprintf("sender uses %d-byte messages, this receiver %d (--msg-bytes)", hello.MsgBytes, r.cfg.MsgBytes))
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

func (r *Receiver) stopReached() bool {
	switch {
	case r.stopping.Load():
		return true
	case r.cfg.StopObservations > 0 && r.obs >= r.cfg.StopObservations:
		r.log.Info("Stop observations reached", "observations", r.obs)
		return true
	case r.cfg.StopBytes > 0 && r.total >= r.cfg.StopBytes:
		r.log.Info("Stop bytes reached", "bytes", r.total)
		return true
	}
	return false
}

func rejectText(err error) string {
	var ve *VersionError
	switch {
	case errors.As(err, &ve):
		return ve.Error()
	case errors.Is(err, ErrProtocol):
		return "not a ringcap sender: " + err.Error()
	}
	return err.Error()
}

// handle runs one accepted connection. Problems caused by the peer are
// answered and logged and return nil (the receiver keeps serving); only
// failures of the receiver itself (ring, fabric) are returned.
func (r *Receiver) handle(ctx context.Context, p *pendingConn) error {
	k, hello, log := p.k, p.hello, p.log
	defer func() { _ = k.c.Close() }()
	_ = k.c.SetDeadline(time.Now().Add(r.cfg.HandshakeTimeout))
	reject := func(msg string) error {
		log.Warn("Rejected sender", "reason", msg)
		_ = k.send(Reject{Message: msg})
		return nil
	}
	ep, err := r.fab.Open(ctx, EndpointConfig{QPs: r.cfg.QPs, SendDepth: 1, RecvDepth: r.cfg.RxDepth, CQPerQP: r.cfg.CQPerQP})
	if err != nil {
		msg := fmt.Sprintf("receiver could not create %d queue pairs: %v", r.cfg.QPs, err)
		_ = reject(msg)
		r.t.SetState(StateFailed, msg)
		return fmt.Errorf("create queue pairs: %w", err)
	}
	defer func() { _ = ep.Close() }()
	if err := ep.Connect(hello.QPs); err != nil {
		msg := fmt.Sprintf("receiver could not connect its queue pairs to the sender's: %v", err)
		_ = reject(msg)
		r.t.Update(func(s *Status) { s.Message = msg })
		return nil
	}
	s := &session{r: r, k: k, ep: ep, hello: hello, log: log}
	return s.run(ctx)
}

// session is one observation: one connection's stream into the ring.
type session struct {
	r     *Receiver
	k     *conn
	ep    Endpoint
	hello Hello
	log   *slog.Logger

	g        Geometry
	a        *assembler
	rw       *ringWorker
	posted   []int    // receive WRs outstanding per queue pair
	consumed []int    // write mode: scatter-less receive WRs used up since the last repost
	empty    []RecvWR // reused by postEmpty
	cursor   []uint64 // per queue pair, its next slice to post receives for (send mode)
	bytes    uint64
	blocks   uint64
	held     holdClock    // this observation's holds
	heldRep  holdReporter // what the sender was told of them

	obs        int       // the observation's number
	firstByte  time.Time // when the first completion came (zero before)
	headerDone bool      // the header is in the ring
}

type ctrlEvent struct {
	end *End
	err error
}

func (s *session) run(ctx context.Context) (err error) {
	r := s.r
	start := time.Now()
	s.g = r.geometry()
	s.a, _ = newAssembler(s.g)
	w := r.window()
	s.a.hold = w >= 2
	if s.hello.TotalBytes > 0 {
		_ = s.a.setEnd(s.hello.TotalBytes) // nothing has landed: cannot fail
	}
	n := r.obs
	// The header is checked now (a sender whose keywords cannot be used is
	// refused) and written when the first byte lands (its UTC_START).
	s.obs = n
	_, err = s.header(time.Now())
	if isHeaderError(err) {
		s.log.Warn("Rejected sender", "reason", err.Error())
		_ = s.k.send(Reject{Message: err.Error()})
		return nil
	}
	if err != nil {
		_ = s.k.send(Reject{Message: "receiver could not build the header"})
		return fmt.Errorf("build header for observation %d: %w", n, err)
	}
	r.obs++
	r.t.SetState(StateReceiving, fmt.Sprintf("observation %d from %s", n, s.k.c.RemoteAddr()))
	s.log.Info("Observation started", "observation", n, "mode", s.hello.Mode, "qps", len(s.hello.QPs), "msgBytes", s.hello.MsgBytes, "totalBytes", s.hello.TotalBytes, "window", w, "busyPoll", r.cfg.BusyPoll)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.rw = newRingWorker(r.w, w)
	go s.rw.run(ctx)

	complete, msg, err := s.stream(ctx)
	if !complete && s.a.room() == 0 {
		// Ended before the loop saw that no block can take data (the
		// last blocks landed with the sender's End): ending the observation
		// may wait for a block the readers hold.
		s.holdBegan()
	}
	// Stop the data path before committing the end: no DMA may touch a block
	// after it is handed to readers.
	_ = s.ep.Close()
	if err == nil || !complete {
		var fill []Filled
		if !complete {
			var lost uint64
			fill, lost = s.a.truncate()
			if lost > 0 {
				msg += fmt.Sprintf("; %d bytes past the first gap were discarded", lost)
			}
		}
		if ferr := s.finish(fill); ferr != nil && err == nil {
			err = ferr
		}
	}
	s.rw.stop()
	// A hold going on when the stream ended lasted until the end of the
	// observation was in the ring (which may need a block the readers hold).
	s.holdEnded()
	secs := time.Since(start).Seconds()
	o := ObservationStatus{Number: n, Bytes: s.bytes, Blocks: s.blocks, Seconds: secs, Complete: complete && err == nil, Message: msg}
	if secs > 0 {
		o.Gbps = float64(s.bytes) * 8 / secs / 1e9
	}
	r.total += s.bytes
	r.t.observationDone(o)
	_ = s.k.c.SetDeadline(time.Now().Add(r.cfg.HandshakeTimeout))
	_ = s.reportHeld(true)
	_ = s.k.send(Done{Bytes: s.bytes, Blocks: s.blocks, OK: o.Complete, Message: msg})
	if o.Complete {
		s.log.Info("Observation complete", "observation", n, "bytes", s.bytes, "blocks", s.blocks, "seconds", secs, "gbps", o.Gbps)
	} else {
		s.log.Warn("Observation incomplete", "observation", n, "bytes", s.bytes, "blocks", s.blocks, "reason", msg)
		r.t.Update(func(st *Status) { st.Message = fmt.Sprintf("observation %d incomplete: %s", n, msg) })
	}
	return err
}

// header builds the observation's header from the template and the sender's
// keywords, with UTC_START at start unless they set it.
func (s *session) header(start time.Time) (*dada.Header, error) {
	b := s.r.cfg.Header
	b.Mode, b.QPs = s.r.cfg.Mode, s.r.cfg.QPs
	return b.Build(s.obs, s.hello.Header, start)
}

// writeHeader writes the observation's header into the ring once, before its
// first block is committed: UTC_START, unless the sender or the template set
// it, is when the first byte landed (or, for a stream without data, now). It
// shows the header's main keywords in the status.
func (s *session) writeHeader() error {
	if s.headerDone {
		return nil
	}
	start := s.firstByte
	if start.IsZero() {
		start = time.Now()
	}
	hd, err := s.header(start)
	if err != nil {
		return fmt.Errorf("build header for observation %d: %w", s.obs, err)
	}
	blk, err := hd.Bytes(s.r.cfg.Header.Size)
	if err != nil {
		return fmt.Errorf("build header for observation %d: %w", s.obs, err)
	}
	if err := s.r.w.WriteHeader(blk); err != nil {
		return fmt.Errorf("write header of observation %d: %w", s.obs, err)
	}
	s.headerDone = true
	s.r.t.Update(func(st *Status) { st.Header = statusHeader(hd) })
	return nil
}

// awaitFirstBlock waits for the stream's first ring block while the readers
// hold every one, telling the sender it is held back (Held) so that it keeps
// waiting for its answer. It returns -1, with why, when the ring fails (err),
// the receiver stops or the sender goes away first.
func (s *session) awaitFirstBlock(ctx context.Context) (int, string, error) {
	const gone = "sender went away while the readers held every ring block"
	// A hold shorter than a tick (the ring worker opening the block) goes
	// unreported.
	tick := time.NewTicker(answerHeldEvery)
	defer tick.Stop()
	for {
		select {
		case first := <-s.rw.opened:
			return first, "", nil
		case e := <-s.rw.errc:
			_ = s.k.send(Reject{Message: "receiver could not open a ring block"})
			return -1, "ring failure", e
		case <-ctx.Done():
			_ = s.k.send(Reject{Message: "receiver is shutting down"})
			return -1, "receiver stopped", nil
		case <-tick.C:
			if s.reportHeld(false) != nil {
				return -1, gone, nil
			}
		}
	}
}

// holdBegan starts a hold (no ring block free for the stream), in the
// observation's account and the receiver's status, unless one is going on.
func (s *session) holdBegan() {
	if s.held.since.IsZero() {
		now := time.Now()
		s.held.begin(now)
		s.r.t.holdBegan(now)
	}
}

// holdEnded ends the hold going on, if any (a block came free).
func (s *session) holdEnded() {
	if !s.held.since.IsZero() {
		now := time.Now()
		s.held.end(now)
		s.r.t.holdEnded(now)
	}
}

// reportHeld tells the sender about holds when there is news (see
// holdReporter); final sends the observation's account of holds if it had
// any, news or not, ahead of Done.
func (s *session) reportHeld(final bool) error {
	if !final && s.held.since.IsZero() && s.held.done == s.heldRep.total && !s.heldRep.holding {
		return nil // nothing new: the common case, without reading the clock
	}
	now := time.Now()
	st := s.held.at(now)
	if final && (st.total > 0 || s.heldRep.holding) || !final && s.heldRep.due(now, st) {
		return s.k.send(s.heldRep.message(now, st))
	}
	return nil
}

// finish commits the last blocks and ends the observation in the ring.
func (s *session) finish(fill []Filled) error {
	if err := s.writeHeader(); err != nil {
		return err
	}
	for _, f := range fill {
		if err := s.commit(f); err != nil {
			return err
		}
	}
	return s.rw.endOfData()
}

func (s *session) commit(f Filled) error {
	if err := s.writeHeader(); err != nil {
		return err
	}
	if err := s.rw.fill(int(f.Bytes), f.Last); err != nil {
		return err
	}
	s.bytes += f.Bytes
	s.blocks++
	s.r.t.blockFilled()
	return nil
}

// stream moves data until the stream is complete, the sender goes away or
// something fails. complete reports a full, verified stream; msg says why not.
func (s *session) stream(ctx context.Context) (complete bool, msg string, err error) {
	r := s.r
	ctrl := make(chan ctrlEvent, 4)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		_ = s.k.c.SetDeadline(time.Time{})
		deliver := func(e ctrlEvent) bool {
			select {
			case ctrl <- e:
				return true
			case <-quit:
				return false
			}
		}
		for {
			m, err := s.k.recv()
			if err != nil {
				if !errors.Is(err, ErrProtocol) {
					err = fmt.Errorf("%w: %w", ErrPeerGone, err) // EOF, reset, ...
				}
				deliver(ctrlEvent{err: err})
				return
			}
			switch m := m.(type) {
			case End:
				if !deliver(ctrlEvent{end: &m}) {
					return
				}
			default:
				deliver(ctrlEvent{err: fmt.Errorf("%w: unexpected %T during the stream", ErrProtocol, m)})
				return
			}
		}
	}()

	nq := len(s.hello.QPs)
	s.posted = make([]int, nq)
	s.consumed = make([]int, nq)
	s.cursor = make([]uint64, nq)
	for q := range s.cursor {
		s.cursor[q] = s.g.FirstOnQP(q)
	}
	// Hold the first block (and, in send mode, post its receives) before
	// accepting, so the sender's first messages find receive WRs.
	var first int
	select {
	case first = <-s.rw.opened:
	default:
		s.holdBegan() // every block is still with the readers
		var msg string
		var err error
		if first, msg, err = s.awaitFirstBlock(ctx); first < 0 {
			return false, msg, err
		}
		s.holdEnded()
	}
	s.openBlock(first)
	if r.cfg.Mode == ModeWrite {
		for q := range nq {
			if err := s.postEmpty(q, r.cfg.RxDepth); err != nil {
				return false, "receive post failed", err
			}
		}
	} else if err := s.postSlices(); err != nil {
		return false, "receive post failed", err
	}
	mode, regions, _ := r.fab.Registration()
	acc := Accept{Mode: r.cfg.Mode, MsgBytes: uint32(r.cfg.MsgBytes), NBufs: uint32(r.ring.NBufs), BufSize: uint64(r.ring.BufSize),
		MRMode: mode, QPs: s.ep.Local()}
	if r.cfg.Mode == ModeWrite {
		acc.Regions = regions
	}
	if err := s.k.send(acc); err != nil {
		return false, "sender went away during the handshake", nil
	}
	if r.cfg.Mode == ModeWrite {
		if err := s.k.send(Credit{Seq: 0, Index: uint32(first)}); err != nil {
			return false, "sender went away", nil
		}
	}

	wcs := make([]Completion, 64)
	w := newIdler(s.ep, r.cfg.BusyPoll)
	idle := 0
	peerGone := false
	goneDetail := ""
	gotEnd := false // Done answers the sender's End, even when the length was known
	for {
		progressed := false
		// Newly opened blocks (those a sleep took from the channel first).
		for more := true; more; {
			var idx int
			if len(w.opened) > 0 {
				idx, w.opened = w.opened[0], w.opened[1:]
			} else {
				select {
				case idx = <-s.rw.opened:
				default:
					more = false
					continue
				}
			}
			progressed = true
			s.holdEnded()
			seq := s.openBlock(idx)
			if r.cfg.Mode == ModeWrite {
				if err := s.k.send(Credit{Seq: seq, Index: uint32(idx)}); err != nil {
					peerGone = true
				}
			} else if err := s.postSlices(); err != nil {
				return false, "receive post failed", err
			}
		}
		// Completions.
		n, err := s.ep.Poll(wcs)
		if err != nil {
			return false, "completion polling failed", err
		}
		for _, wc := range wcs[:n] {
			if err := s.complete(wc); err != nil {
				var we *WCError
				if !errors.As(err, &we) {
					return false, err.Error(), nil
				}
				r.t.completionError(we.QP, we.Status)
				// A sender that dies can take the queue pairs down with it
				// (flushed receives): say so when its connection is gone too.
				msg := err.Error()
				select {
				case e := <-ctrl:
					if errors.Is(e.err, ErrPeerGone) {
						msg = "sender disconnected before the end of the stream (" + msg + ")"
					}
				case <-time.After(500 * time.Millisecond):
				}
				return false, msg, nil
			}
		}
		if n > 0 {
			progressed = true
			if s.firstByte.IsZero() {
				s.firstByte = time.Now() // UTC_START: when the first byte landed
			}
			if err := s.repost(); err != nil {
				return false, "receive post failed", err
			}
			if r.cfg.Mode == ModeSend {
				if err := s.postSlices(); err != nil {
					return false, "receive post failed", err
				}
			}
		}
		// Blocks that are complete, oldest first.
		for _, f := range s.a.takeFilled() {
			if err := s.commit(f); err != nil {
				return ringFailure(ctx, err)
			}
		}
		if s.a.hasEnd {
			s.rw.limit(s.a.endBlocks())
		}
		if s.a.complete() && gotEnd {
			return true, "", nil
		}
		// Control messages (one a sleep took first) and failures.
		var e ctrlEvent
		got := false
		if w.ctrl != nil {
			e, got, w.ctrl = *w.ctrl, true, nil
		} else {
			select {
			case e = <-ctrl:
				got = true
			case err := <-s.rw.errc:
				return ringFailure(ctx, err)
			case <-ctx.Done():
				return false, "receiver stopped", nil
			default:
			}
		}
		if got {
			progressed = true
			switch {
			case e.end != nil && !e.end.Complete:
				// A stream cut short ends where the sender stopped, whatever
				// length it had announced: what landed gap-free is kept.
				if !s.a.hasEnd {
					if err := s.a.setEnd(e.end.Bytes); err != nil {
						return false, err.Error(), nil
					}
				}
				s.drain(wcs, 200*time.Millisecond)
				return false, fmt.Sprintf("sender stopped early after %d bytes", e.end.Bytes), nil
			case e.end != nil:
				if err := s.a.setEnd(e.end.Bytes); err != nil {
					return false, err.Error(), nil
				}
				gotEnd = true
			case errors.Is(e.err, ErrPeerGone):
				peerGone = true
				if !errors.Is(e.err, io.EOF) {
					goneDetail = " (" + e.err.Error() + ")"
				}
			default:
				return false, e.err.Error(), nil
			}
		}
		if peerGone {
			// The sender vanished without an End: take what already landed.
			s.drain(wcs, 200*time.Millisecond)
			return false, "sender disconnected before the end of the stream" + goneDetail, nil
		}
		if !s.a.complete() && s.a.room() == 0 {
			s.holdBegan() // no block can take data: the sender is held back
		}
		if err := s.reportHeld(false); err != nil {
			peerGone = true
		}
		if progressed {
			idle = 0
			continue
		}
		idle++
		if err := w.idle(ctx, idle, ctrl, s.rw); err != nil {
			return ringFailure(ctx, err)
		}
	}
}

// spinFor is how long an idle receive loop keeps polling before it sleeps on
// the completion channel: on a hardware link the next message is microseconds
// away and a sleep would cost more; a count of passes instead would spin for
// milliseconds on an emulated machine, where every pass is slow, taking CPU
// from the kernel that moves the data.
const spinFor = 20 * time.Microsecond

// notifier is an Endpoint that can sleep until a completion arrives.
type notifier interface {
	// Arm requests an event for the next completion (poll again after it);
	// an error means the endpoint cannot wait this way.
	Arm() error
	// Events delivers a value after each completion event Arm requested.
	Events() <-chan struct{}
}

// idler is how the receive loop waits when nothing moves: yields for up to
// spinFor, then (with a notifier) arming the completion queue, one more pass,
// and a sleep until a completion, a ring block, a control message or a failure
// arrives; without one, short sleeps. A busy idler only ever yields.
type idler struct {
	n      notifier
	busy   bool
	armed  bool
	since  time.Time // when this idle spell began
	timer  *time.Timer
	opened []int      // blocks the sleep took from the ring worker
	ctrl   *ctrlEvent // a control message the sleep took
}

func newIdler(ep Endpoint, busy bool) *idler {
	w := &idler{busy: busy}
	if n, ok := ep.(notifier); ok {
		w.n = n
	}
	return w
}

// idle waits after the idle-th pass in a row that moved nothing; it returns
// the ring worker's failure.
func (w *idler) idle(ctx context.Context, idle int, ctrl chan ctrlEvent, rw *ringWorker) error {
	if idle == 1 {
		w.since = time.Now()
	}
	switch {
	case w.busy || idle < 2 || time.Since(w.since) < spinFor:
		runtime.Gosched()
		return nil
	case w.n == nil:
		time.Sleep(50 * time.Microsecond)
		return nil
	case !w.armed:
		if w.n.Arm() != nil {
			w.n = nil // cannot sleep on completions: short sleeps from now on
			return nil
		}
		w.armed = true
		return nil // one more pass: a completion before the arming raises no event
	}
	if w.timer == nil {
		w.timer = time.NewTimer(50 * time.Millisecond) // a safety net, not a schedule
	} else {
		w.timer.Reset(50 * time.Millisecond)
	}
	defer w.timer.Stop()
	w.armed = false
	select {
	case <-w.n.Events():
	case idx := <-rw.opened:
		w.opened = append(w.opened, idx)
	case e := <-ctrl:
		w.ctrl = &e
	case err := <-rw.errc:
		return err
	case <-ctx.Done():
	case <-w.timer.C:
	}
	return nil
}

// ringFailure ends a stream whose ring operation failed; while the receiver
// is stopping that is the ring worker stopping with it, not a failure.
func ringFailure(ctx context.Context, err error) (bool, string, error) {
	if ctx.Err() != nil {
		return false, "receiver stopped", nil //nolint:nilerr // a stop, reported as the message
	}
	return false, "ring failure", err
}

// drain processes completions that are still arriving for a short while.
func (s *session) drain(wcs []Completion, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		n, err := s.ep.Poll(wcs)
		if err != nil {
			return
		}
		for _, wc := range wcs[:n] {
			if s.complete(wc) != nil {
				return
			}
		}
		if s.repost() != nil {
			return
		}
		if n == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

func (s *session) openBlock(idx int) uint64 {
	return s.a.openBlock(idx)
}

// repost replaces the scatter-less receive WRs that write-mode completions
// consumed, one post per queue pair.
func (s *session) repost() error {
	for q, n := range s.consumed {
		if n > 0 {
			s.consumed[q] = 0
			if err := s.postEmpty(q, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// postEmpty posts n receive WRs without scatter entries on queue pair q.
func (s *session) postEmpty(q, n int) error {
	if n <= 0 {
		return nil
	}
	if cap(s.empty) < n {
		s.empty = make([]RecvWR, n)
	}
	wrs := s.empty[:n]
	for i := range wrs {
		wrs[i] = RecvWR{ID: uint64(q)}
	}
	if err := s.ep.PostRecv(q, wrs); err != nil {
		return fmt.Errorf("post %d receives on queue pair %d: %w", n, q, err)
	}
	s.posted[q] += n
	return nil
}

// postSlices keeps every receive queue as full as the open blocks allow
// (send mode): queue pair q gets slices q, q+N, q+2N, ... in order.
func (s *session) postSlices() error {
	_, endSlice := s.a.window()
	if s.a.hasEnd {
		endSlice = min(endSlice, s.g.Slices(s.a.end))
	}
	var wrs []RecvWR
	for q := range s.cursor {
		wrs = wrs[:0]
		for s.cursor[q] < endSlice && s.posted[q]+len(wrs) < s.r.cfg.RxDepth {
			sl := s.cursor[q]
			seq, off, length := s.g.Slice(sl)
			idx := s.a.open[seq-s.a.open[0].seq].index
			wrs = append(wrs, RecvWR{ID: sl, Block: idx, Offset: off, Length: length})
			s.cursor[q] = s.g.NextOnQP(sl)
		}
		if len(wrs) == 0 {
			continue
		}
		if err := s.ep.PostRecv(q, wrs); err != nil {
			return fmt.Errorf("post %d receives on queue pair %d: %w", len(wrs), q, err)
		}
		s.posted[q] += len(wrs)
	}
	return nil
}

// complete handles one work completion.
func (s *session) complete(wc Completion) error {
	if wc.Err != nil {
		var we *WCError
		if errors.As(wc.Err, &we) {
			return we
		}
		return &WCError{QP: wc.QP, Status: wc.Err.Error(), Recv: wc.Recv}
	}
	if !wc.Recv {
		return nil
	}
	s.posted[wc.QP]--
	var sl uint64
	if s.r.cfg.Mode == ModeSend {
		sl = wc.ID
		if wc.Imm != uint32(sl) {
			return fmt.Errorf("%w: queue pair %d delivered slice %d into the slot of slice %d", ErrProtocol, wc.QP, wc.Imm, sl)
		}
	} else {
		var err error
		if sl, err = s.a.resolve(wc.Imm); err != nil {
			return err
		}
		s.consumed[wc.QP]++ // reposted after the batch, one call per queue pair
	}
	if s.r.cfg.Mode == ModeWrite {
		return s.landWritten(wc.QP, sl, uint64(wc.Bytes))
	}
	if s.g.QP(sl) != wc.QP {
		return fmt.Errorf("%w: slice %d arrived on queue pair %d, expected %d", ErrProtocol, sl, wc.QP, s.g.QP(sl))
	}
	if err := s.a.land(sl, uint64(wc.Bytes)); err != nil {
		return err
	}
	s.r.t.landed(wc.QP, uint64(wc.Bytes))
	return nil
}

// landWritten lands what an immediate on queue pair q accounts for (write
// mode): the whole block travels on the queue pair that took it, and RC
// placed that queue pair's plain RDMA WRITEs into the block, whole slices
// from the first one not landed yet, before the immediate naming slice sl,
// which wrote n bytes of it, or none (n = 0) when sl itself went out plain
// and this ends the stream.
func (s *session) landWritten(q int, sl, n uint64) error {
	seq := s.g.SliceBlock(sl)
	done, err := s.a.landedIn(seq)
	if err != nil {
		return err
	}
	from := seq*s.g.SlicesPerBlock() + done
	if sl < from {
		return fmt.Errorf("%w: queue pair %d named slice %d, which had already landed", ErrProtocol, q, sl)
	}
	for x := from; x <= sl; x++ {
		k := n
		if x < sl || n == 0 {
			_, _, k = s.g.Slice(x)
		}
		if err := s.a.land(x, k); err != nil {
			return err
		}
		s.r.t.landed(q, k)
	}
	return nil
}

// ringWorker owns every call into the BlockWriter of one observation: it
// opens blocks ahead (up to the window) and marks them filled in order, so a
// wait for a slow reader never stalls the completion loop.
type ringWorker struct {
	w      BlockWriter
	window int
	opened chan int
	cmds   chan ringCmd
	errc   chan error
	done   chan struct{}

	mu         sync.Mutex
	max        uint64 // blocks to open at most (^0: unlimited)
	openCancel context.CancelFunc
	stopOnce   sync.Once
	quit       chan struct{}
}

type ringCmd struct {
	n     int
	eod   bool
	end   bool
	reply chan error
}

func newRingWorker(w BlockWriter, window int) *ringWorker {
	return &ringWorker{w: w, window: window, opened: make(chan int, window+1), cmds: make(chan ringCmd, window+2),
		errc: make(chan error, 1), done: make(chan struct{}), max: ^uint64(0), quit: make(chan struct{})}
}

func (rw *ringWorker) run(ctx context.Context) {
	defer close(rw.done)
	open, total := 0, uint64(0)
	// exec runs one command; it reports whether the worker is done.
	exec := func(c ringCmd) bool {
		if c.end {
			c.reply <- rw.w.EndOfData()
			return true
		}
		if c.eod {
			// The observation ends with this block: opening another one
			// would start the next observation in the ring.
			rw.limit(total)
		}
		open--
		if err := rw.w.MarkFilled(c.n, c.eod); err != nil {
			rw.errc <- fmt.Errorf("mark ring block filled (%d bytes): %w", c.n, err)
			return true
		}
		return false
	}
	for {
		select {
		case c := <-rw.cmds:
			if exec(c) {
				return
			}
			continue
		case <-rw.quit:
			return
		default:
		}
		rw.mu.Lock()
		canOpen := open < rw.window && total < rw.max
		var octx context.Context
		if canOpen {
			octx, rw.openCancel = context.WithCancel(ctx)
		}
		rw.mu.Unlock()
		if canOpen {
			idx, err := rw.w.OpenBlock(octx)
			rw.mu.Lock()
			rw.openCancel()
			rw.openCancel = nil
			rw.mu.Unlock()
			if err != nil {
				if octx.Err() != nil && ctx.Err() == nil {
					continue // cancelled because no more blocks are needed
				}
				if ctx.Err() != nil {
					return
				}
				rw.errc <- fmt.Errorf("open ring block: %w", err)
				return
			}
			open++
			total++
			rw.opened <- idx
			continue
		}
		select {
		case c := <-rw.cmds:
			if exec(c) {
				return
			}
		case <-rw.quit:
			return
		case <-ctx.Done():
			return
		}
	}
}

// limit caps the number of blocks to open (the stream's length is known);
// a wait for a block beyond it is cancelled.
func (rw *ringWorker) limit(n uint64) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if n < rw.max {
		rw.max = n
	}
}

func (rw *ringWorker) call(c ringCmd) error {
	c.reply = make(chan error, 1)
	rw.mu.Lock()
	if c.end && rw.openCancel != nil {
		rw.openCancel()
	}
	rw.mu.Unlock()
	select {
	case rw.cmds <- c:
	case <-rw.done:
		return errors.New("ring worker stopped")
	}
	select {
	case err := <-c.reply:
		return err
	case <-rw.done:
		select {
		case err := <-c.reply:
			return err
		default:
			return errors.New("ring worker stopped")
		}
	}
}

// fill queues marking the oldest open block filled; it does not wait (the
// worker may be waiting for a reader to free a block to open). Errors come
// on errc.
func (rw *ringWorker) fill(n int, eod bool) error {
	select {
	case rw.cmds <- ringCmd{n: n, eod: eod}:
		return nil
	case <-rw.done:
		select {
		case err := <-rw.errc:
			rw.errc <- err
			return err
		default:
			return errors.New("ring worker stopped")
		}
	}
}

// endOfData waits for the queued fills, then ends the observation.
func (rw *ringWorker) endOfData() error {
	rw.limit(0)
	if err := rw.call(ringCmd{end: true}); err != nil {
		select {
		case ferr := <-rw.errc:
			rw.errc <- ferr
			return ferr
		default:
		}
		return fmt.Errorf("end of data: %w", err)
	}
	return nil
}

func (rw *ringWorker) stop() {
	rw.stopOnce.Do(func() { close(rw.quit) })
	rw.mu.Lock()
	if rw.openCancel != nil {
		rw.openCancel()
	}
	rw.mu.Unlock()
	<-rw.done
}
