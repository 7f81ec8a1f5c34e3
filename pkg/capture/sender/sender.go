package sender

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"runtime"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/pattern"
)

// Source produces the stream. Fill writes the stream bytes starting at
// offset into dst and returns how many it wrote; fewer than len(dst) means
// the stream ends there. A plain Source is asked for offsets in increasing
// order; a RandomAccessSource in any order.
type Source interface {
	Fill(dst []byte, offset uint64) (int, error)
}

// RandomAccessSource is a Source that can fill any offset at any time. With
// one the sender lets every queue pair run ahead on its own (a stalled queue
// pair delays only its own slices); a plain Source keeps strict slice order.
type RandomAccessSource interface {
	Source
	RandomAccess()
}

// PatternSource is the deterministic test stream of pkg/pattern, which any
// reader can verify (`ringcap ring read --verify SEED`).
type PatternSource struct{ Seed uint64 }

// Fill implements Source.
func (p PatternSource) Fill(dst []byte, offset uint64) (int, error) {
	pattern.Fill(dst, p.Seed, offset)
	return len(dst), nil
}

// RandomAccess implements RandomAccessSource.
func (PatternSource) RandomAccess() {}

// ReaderSource streams any reader (a pipe, a socket), in order.
type ReaderSource struct{ R io.Reader }

// Fill implements Source.
func (f ReaderSource) Fill(dst []byte, _ uint64) (int, error) {
	n, err := io.ReadFull(f.R, dst)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil
	}
	return n, err
}

// FileSource streams a regular file (any io.ReaderAt), stream byte k being
// byte k of the file.
type FileSource struct{ R io.ReaderAt }

// Fill implements Source.
func (f FileSource) Fill(dst []byte, offset uint64) (int, error) {
	if offset > math.MaxInt64 {
		return 0, nil
	}
	n, err := f.R.ReadAt(dst, int64(offset))
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// RandomAccess implements RandomAccessSource.
func (FileSource) RandomAccess() {}

// NoFillSource leaves the send buffers as they are (zeros), as perftest does:
// for benchmarks that measure the transport, not the data generator.
type NoFillSource struct{}

// Fill implements Source.
func (NoFillSource) Fill(dst []byte, _ uint64) (int, error) { return len(dst), nil }

// RandomAccess implements RandomAccessSource.
func (NoFillSource) RandomAccess() {}

// Config configures Send.
type Config struct {
	Mode     wire.Mode
	QPs      int
	MsgBytes uint64
	// Header holds keywords for the observation's header (SOURCE,
	// UTC_START, ...), sent in the Hello; the receiver merges them over its
	// template (see ObservationHeaders for the precedence).
	Header  []wire.HeaderField
	TxDepth int // send WRs in flight per queue pair (default 16)
	// PostList caps the work requests handed to the device in one post
	// (default 0: all a queue pair can take at once). 1 posts them one by
	// one, as perftest does by default: on a software device (rxe) each
	// post then moves one message through the kernel's network path before
	// the next, instead of queueing a queue pair's whole batch there.
	PostList int
	// AckTimeout is the queue pairs' local ACK timeout exponent (default
	// DefaultAckTimeout).
	AckTimeout uint8
	// Bytes is the stream length (0: until Duration or the end of Source).
	Bytes    uint64
	Duration time.Duration
	Source   Source
	// RateBytesPerSecond limits the send rate (0: unlimited).
	RateBytesPerSecond float64
	// Progress is called about every ProgressEvery with the running totals.
	Progress      func(Progress)
	ProgressEvery time.Duration
	DialTimeout   time.Duration
	// AnswerTimeout bounds the wait for the receiver's answer to the Hello
	// (default 20 s); each report that the receiver is held back by its
	// ring's readers (no block free for the stream yet) starts it anew.
	AnswerTimeout time.Duration
	// DoneTimeout bounds the wait for the receiver's final word (default 60 s).
	DoneTimeout time.Duration
	// Pin places the thread that posts work requests on one CPU (default:
	// anywhere). With a software RDMA device (rxe) the doorbell runs the
	// device's transmit path on the posting CPU, and doorbells of one queue
	// pair rung from two CPUs leave through two per-CPU network queues, out of
	// order: pin there.
	Pin CPUPin
	// PostCPUs, with two or more CPUs, posts from one OS thread per CPU
	// listed, pinned there (Pin must then be PinNone); queue pair q is posted
	// from thread q mod len(PostCPUs). On a software RDMA device the posting
	// CPU carries its queue pairs' whole data path (the transmit path, and
	// the receive, acknowledgement and completion paths that follow), so one
	// posting thread per CPU spreads that work. One CPU listed is PinTo it.
	PostCPUs []int
	// BusyPoll keeps polling the completion queue while every send slot is
	// in flight instead of sleeping on completion events (as perftest's
	// client does): a CPU kept busy for the lowest latency.
	BusyPoll bool
	Log      *slog.Logger
}

// CPUPin says where the sender's posting thread runs: PinNone, PinCurrent or
// PinTo(n).
type CPUPin int

const (
	// PinNone leaves the posting thread to the scheduler.
	PinNone CPUPin = 0
	// PinCurrent pins it to the CPU it runs on when the stream starts.
	PinCurrent CPUPin = -1
)

// PinTo pins the posting thread to CPU n.
func PinTo(n int) CPUPin { return CPUPin(n + 1) }

// pinThread pins the calling (locked) OS thread as p says; unpin restores
// its former CPU set before the thread goes back to the Go scheduler.
func pinThread(p CPUPin, log *slog.Logger) (unpin func(), err error) {
	if p == PinNone {
		return func() {}, nil
	}
	cpu := int(p) - 1
	if p == PinCurrent {
		var c uint32
		if _, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&c)), 0, 0); e != 0 {
			return nil, fmt.Errorf("find the current CPU to pin the posting thread to: %w", e)
		}
		cpu = int(c)
	}
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, fmt.Errorf("read the posting thread's CPU set: %w", err)
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("pin the posting thread to CPU %d: %w", cpu, err)
	}
	log.Info("Pinned the posting thread", "cpu", cpu)
	return func() { _ = unix.SchedSetaffinity(0, &old) }, nil
}

// Progress is a running total of a send.
type Progress struct {
	Bytes uint64 // posted
	// Acked is the bytes whose send completions have come back: landed in
	// the receiver's memory. It trails Bytes by what is in flight, so a rate
	// over an interval of a running stream is best taken from it.
	Acked   uint64
	Total   uint64 // 0 when unknown
	Elapsed time.Duration
	// HeldBack is the time the receiver has been held back by its ring's
	// readers (no block free for the stream), as it reports, the hold going
	// on now included.
	HeldBack time.Duration
	// Holding says the receiver is held back now; HoldFor is how long this
	// hold has lasted.
	Holding bool
	HoldFor time.Duration
}

// Result is the outcome of Send.
type Result struct {
	Bytes   uint64
	Seconds float64
	Gbps    float64
	QPs     int
	Mode    wire.Mode
	MRMode  wire.MRMode
	// HeldBackSeconds is the time the receiver was held back by its ring's
	// readers during the stream, as it reports.
	HeldBackSeconds float64
	Complete        bool
	Receiver        wire.Done // the receiver's account of the observation
}

// RejectedError is returned when the receiver refused the connection.
type RejectedError struct{ Message string }

func (e *RejectedError) Error() string { return "receiver refused the connection: " + e.Message }

// Validate checks the configuration.
func (c Config) Validate() error {
	if err := wire.ValidateLink(c.Mode, c.QPs, c.MsgBytes); err != nil {
		return err
	}
	switch {
	case c.Source == nil:
		return errors.New("no data source")
	case c.Bytes == 0 && c.Duration <= 0:
		if _, ok := c.Source.(ReaderSource); !ok {
			return errors.New("give --bytes or --duration")
		}
	}
	if c.AckTimeout > 30 {
		return fmt.Errorf("ACK timeout exponent %d: want 1..30", c.AckTimeout)
	}
	if len(c.Header) > wire.MaxHeaderFields {
		return fmt.Errorf("%d header keywords: at most %d", len(c.Header), wire.MaxHeaderFields)
	}
	for _, f := range c.Header {
		if err := dada.NewHeader().Set(f.Key, f.Value); err != nil {
			return fmt.Errorf("header keyword %s=%s: %w", f.Key, f.Value, err)
		}
	}
	if c.TxDepth < 0 {
		return fmt.Errorf("--tx-depth %d: want 1 or more (0: the default, 16)", c.TxDepth)
	}
	if c.PostList < 0 {
		return fmt.Errorf("--post-list %d: want 0 (no cap) or more", c.PostList)
	}
	if len(c.PostCPUs) > 0 && c.Pin != PinNone {
		return errors.New("give either one CPU to pin the posting thread to or a list of CPUs for posting threads, not both")
	}
	if len(c.PostCPUs) > c.QPs {
		return fmt.Errorf("%d posting threads for %d queue pairs: want at most one per queue pair", len(c.PostCPUs), c.QPs)
	}
	for _, cpu := range c.PostCPUs {
		if cpu < 0 {
			return fmt.Errorf("posting thread CPU %d: want 0 or more", cpu)
		}
	}
	return nil
}

func (c *Config) defaults() {
	if c.TxDepth == 0 {
		c.TxDepth = 16
	}
	if c.AckTimeout == 0 {
		c.AckTimeout = fabric.DefaultAckTimeout
	}
	if c.AnswerTimeout == 0 {
		c.AnswerTimeout = 20 * time.Second
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 10 * time.Second
	}
	if c.DoneTimeout == 0 {
		c.DoneTimeout = 60 * time.Second
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = time.Second
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if len(c.PostCPUs) == 1 && c.Pin == PinNone {
		c.Pin, c.PostCPUs = PinTo(c.PostCPUs[0]), nil
	}
}

// SendBufferBytes is the registered send buffer Send needs for cfg.
func SendBufferBytes(cfg Config) uint64 {
	cfg.defaults()
	return uint64(cfg.QPs) * uint64(cfg.TxDepth) * cfg.MsgBytes
}

// Send connects to a receiver at addr and streams cfg.Source to it. Cancelling
// ctx stops the stream early; the receiver then ends the observation on the
// bytes that landed and marks it incomplete.
func Send(ctx context.Context, addr string, cfg Config, fab fabric.SenderFabric) (Result, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if need := SendBufferBytes(cfg); uint64(len(fab.Buffer())) < need {
		return Result{}, fmt.Errorf("send buffer of %d bytes, need %d", len(fab.Buffer()), need)
	}
	d := net.Dialer{Timeout: cfg.DialTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Result{}, fmt.Errorf("connect to receiver: %w", err)
	}
	defer func() { _ = c.Close() }()
	k := wire.NewConn(c)
	_ = c.SetDeadline(time.Now().Add(cfg.DialTimeout + cfg.AnswerTimeout))

	ep, err := fab.Open(ctx, fabric.EndpointConfig{QPs: cfg.QPs, SendDepth: cfg.TxDepth, RecvDepth: 1, AckTimeout: cfg.AckTimeout})
	if err != nil {
		return Result{}, fmt.Errorf("create %d queue pairs: %w", cfg.QPs, err)
	}
	defer func() { _ = ep.Close() }()
	if err := k.WritePreamble(); err != nil {
		return Result{}, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	hello := wire.Hello{Mode: cfg.Mode, MsgBytes: uint32(cfg.MsgBytes), TotalBytes: cfg.Bytes, QPs: ep.Local(), Header: cfg.Header}
	if err := k.Send(hello); err != nil {
		return Result{}, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	held, heldAt, acc, err := awaitAnswer(k, c, cfg)
	if err != nil {
		return Result{}, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	if len(acc.QPs) != cfg.QPs || acc.Mode != cfg.Mode || uint64(acc.MsgBytes) != cfg.MsgBytes {
		return Result{}, fmt.Errorf("handshake with %s: %w: receiver answered %d queue pairs, %s mode, %d-byte messages", addr, wire.ErrProtocol, len(acc.QPs), acc.Mode, acc.MsgBytes)
	}
	if err := ep.Connect(acc.QPs); err != nil {
		return Result{}, fmt.Errorf("connect queue pairs to %s: %w", addr, err)
	}
	_ = c.SetDeadline(time.Time{})
	cfg.Log.Info("Connected", "receiver", addr, "mode", cfg.Mode, "qps", cfg.QPs, "mr", acc.MRMode, "blocks", acc.NBufs, "blockBytes", acc.BufSize)
	s := &sendSession{ctx: ctx, base: ctx, cfg: cfg, k: k, ep: ep, acc: acc, buf: fab.Buffer()}
	if !heldAt.IsZero() {
		s.held.note(held, heldAt)
	}
	return s.run(ctx)
}

// awaitAnswer reads the receiver's answer to the Hello. Until the receiver has
// a ring block for the stream it reports that its readers hold it back (Held,
// every wire.AnswerHeldEvery): each report is shown as progress and gives the
// answer AnswerTimeout more (at least three report intervals), so a sender
// waits for slow readers instead of giving up with a timeout. It returns the
// last such report and when it came (zero without one).
func awaitAnswer(k *wire.Conn, c net.Conn, cfg Config) (wire.Held, time.Time, wire.Accept, error) {
	var (
		last wire.Held
		at   time.Time
		view heldView
	)
	start := time.Now()
	for {
		m, err := k.Recv()
		if err != nil {
			if !at.IsZero() {
				err = fmt.Errorf("%w (the receiver was held back by its ring's readers for %s)", err, view.state(time.Now()).current.Round(time.Millisecond))
			}
			return last, at, wire.Accept{}, fmt.Errorf("read answer: %w", err)
		}
		switch m := m.(type) {
		case wire.Held:
			last, at = m, time.Now()
			view.note(m, at)
			_ = c.SetDeadline(at.Add(max(cfg.AnswerTimeout, 3*wire.AnswerHeldEvery)))
			if cfg.Progress != nil {
				h := view.state(at)
				cfg.Progress(Progress{Total: cfg.Bytes, Elapsed: at.Sub(start), HeldBack: h.total, Holding: h.holding, HoldFor: h.current})
			}
		case wire.Reject:
			return last, at, wire.Accept{}, &RejectedError{Message: m.Message}
		case wire.Accept:
			return last, at, m, nil
		default:
			return last, at, wire.Accept{}, fmt.Errorf("%w: unexpected %T", wire.ErrProtocol, m)
		}
	}
}

type sendSession struct {
	ctx   context.Context // bounds waits for completions: base, or base and a failed post
	base  context.Context
	lanes fabric.PostLanes // posting threads (PostCPUs), or nil: this thread posts
	cfg   Config
	k     *wire.Conn
	ep    fabric.Endpoint
	acc   wire.Accept
	buf   []byte
	g     wire.Geometry

	free     [][]int     // free send slots per queue pair
	inq      []sliceFIFO // slices in flight per queue pair
	inflight int
	unsig    []int    // unsignalled WRs posted since the last signalled one, per queue pair
	sigEvery int      // signal at least every sigEvery-th WR of a queue pair
	held     heldView // the receiver's holds, as it reports them
	start    time.Time
	nextProg time.Time // when the next progress report is due

	next    []uint64 // next slice per queue pair (wire.NoSlice: none, with whole blocks)
	block   uint64   // whole blocks: the next block no queue pair has taken
	limit   uint64   // first slice not to send (noLimit until known)
	ahead   uint64   // look-ahead: slices past the oldest unfinished one
	ordered bool     // post in strict slice order (sequential source)
	rr      int      // queue pair to try first
	hi      uint64   // 1 + the highest slice posted
	sent    uint64   // bytes posted
	acked   uint64   // bytes whose send completions came back
	extent  uint64   // stream byte just after the furthest slice posted
	cr      credits
	wrs     []fabric.SendWR // staged work requests of one queue pair
	tail    []tailWrite     // write mode: per queue pair, a plain write still owed its immediate
}

// tailWrite is a slice a queue pair wrote as a plain RDMA WRITE, expecting
// to carry on in the same block; if the stream ends first, a zero-length
// RDMA_WRITE_WITH_IMM naming it tells the receiver it has landed.
type tailWrite struct {
	slice uint64
	addr  uint64
	rkey  uint32
	set   bool
}

type senderEvent struct {
	credit *wire.Credit
	done   *wire.Done
	err    error
}

func (s *sendSession) run(ctx context.Context) (Result, error) {
	cfg := s.cfg
	s.g = wire.Geometry{BlockBytes: s.acc.BufSize, MsgBytes: cfg.MsgBytes, QPs: cfg.QPs, NBufs: int(s.acc.NBufs), WholeBlocks: cfg.Mode.WholeBlocks()}
	if err := s.g.Validate(); err != nil {
		return Result{}, fmt.Errorf("receiver geometry: %w", err)
	}
	stopPosting, err := s.startPosting()
	if err != nil {
		return Result{}, err
	}
	defer stopPosting()
	s.setup()
	c := s.startControl()
	defer c.stop()
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	defer context.AfterFunc(c.peer, wcancel)()
	defer s.waitWithin(wctx)()

	start := time.Now()
	s.start = start
	s.nextProg = start.Add(cfg.ProgressEvery)
	wcs := make([]fabric.Completion, 64)
	complete, stopErr := s.pump(ctx, c, wcs)
	// Landing is not bound to ctx, which may be what stopped the stream (see
	// land), but no wait outlasts the receiver.
	defer s.waitWithin(c.peer)()
	complete, stopErr = s.land(ctx, c, wcs, complete, stopErr)
	return s.finish(c, time.Since(start), complete, stopErr)
}

// startPosting starts the posting threads (PostCPUs) or locks the stream to
// this OS thread, pinned as Pin asks; stop undoes it.
func (s *sendSession) startPosting() (stop func(), err error) {
	cfg := s.cfg
	if len(cfg.PostCPUs) > 0 {
		// Every send slot can be a batch of its own, plus a tail per queue pair.
		lanes, err := startLanes(s.ep, cfg.PostCPUs, cfg.QPs*(cfg.TxDepth+1), cfg.Log)
		if err != nil {
			return nil, err
		}
		s.lanes = lanes
		return lanes.Stop, nil
	}
	// One OS thread posts everything: a goroutine that hopped between
	// threads (and so CPUs) would ring the doorbells of one queue pair
	// from several CPUs, and a software RDMA device then emits its
	// packets through several per-CPU network queues, out of order.
	runtime.LockOSThread()
	unpin, err := pinThread(cfg.Pin, cfg.Log)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return func() { unpin(); runtime.UnlockOSThread() }, nil
}

// control is the stream's side of the control connection: the receiver's
// events, and peer, cancelled once the receiver has ended the observation or
// its connection failed (work requests may then never complete: the queue
// pairs on the other side are gone, so no wait for them may outlast it).
type control struct {
	events chan senderEvent
	quit   chan struct{}
	peer   context.Context
	gone   context.CancelFunc
	early  *wire.Done // the receiver ended the observation before the sender
}

func (s *sendSession) startControl() *control {
	c := &control{events: make(chan senderEvent, 64), quit: make(chan struct{})}
	c.peer, c.gone = context.WithCancel(context.Background())
	go s.readControl(c.events, c.quit, c.gone)
	return c
}

func (c *control) stop() {
	close(c.quit)
	c.gone()
}

// handle acts on one event from the receiver: a credit, an early Done or a
// failure.
func (s *sendSession) handle(c *control, ev senderEvent) error {
	switch {
	case ev.credit != nil:
		return s.cr.add(*ev.credit)
	case ev.done != nil:
		c.early = ev.done
		return fmt.Errorf("receiver ended the observation early: %s", ev.done.Message)
	default:
		return ev.err
	}
}

// drainEvents handles the events that are waiting, if any.
func (s *sendSession) drainEvents(c *control) (bool, error) {
	got := false
	for {
		select {
		case ev := <-c.events:
			got = true
			if err := s.handle(c, ev); err != nil {
				return got, err
			}
		default:
			return got, nil
		}
	}
}

// peerReason replaces a wait cut short by the receiver's departure with what
// the receiver said (or how its connection failed).
func (s *sendSession) peerReason(ctx context.Context, c *control, err error) error {
	if c.peer.Err() == nil || ctx.Err() != nil {
		return err
	}
	if _, eerr := s.drainEvents(c); eerr != nil {
		return eerr
	}
	return err
}

// pump posts the stream until every slice is sent, the duration is up, ctx
// ends or something fails; it says whether the stream went out whole.
func (s *sendSession) pump(ctx context.Context, c *control, wcs []fabric.Completion) (complete bool, stopErr error) {
	for s.unsent() {
		if s.cfg.Duration > 0 && s.limit == noLimit && time.Since(s.start) >= s.cfg.Duration {
			s.limit = s.hi // finish the slices below the furthest one posted, then stop
			continue
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		moved, credit, err := s.step(c, wcs)
		if err != nil {
			return false, err
		}
		if moved {
			continue
		}
		if err := s.idle(ctx, c, wcs, credit); err != nil {
			if lerr := s.laneFailure(); lerr != nil {
				err = lerr
			}
			return false, s.peerReason(ctx, c, err)
		}
	}
	return true, nil
}

// step posts what is ready, reaps completions and handles the receiver's
// events; moved says whether anything did, credit whether a slice waits for
// its block's grant.
func (s *sendSession) step(c *control, wcs []fabric.Completion) (moved, credit bool, err error) {
	posted, credit, err := s.postReady()
	if err == nil {
		err = s.laneFailure()
	}
	if err != nil {
		return false, credit, err
	}
	reaped, err := s.reap(wcs)
	if err != nil {
		return false, credit, err
	}
	got, err := s.drainEvents(c)
	if err != nil {
		return false, credit, err
	}
	s.progress(false)
	return posted || reaped || got, credit, nil
}

// idle sleeps when nothing could move: until a completion frees a slot or,
// with nothing in flight or a slice waiting for its block's grant, until the
// receiver sends one. (Sleeping on completions alone would miss a grant while
// a stalled queue pair holds the only WRs in flight.)
func (s *sendSession) idle(ctx context.Context, c *control, wcs []fabric.Completion, credit bool) error {
	if s.inflight > 0 && !credit {
		return s.pollProgress(wcs)
	}
	select {
	case ev := <-c.events:
		return s.handle(c, ev)
	case <-ctx.Done():
	case <-time.After(time.Millisecond):
	}
	return nil
}

// land posts the immediates still owed (queue pairs whose last slice went out
// as a plain write; a stream cut short too, so that what was written lands)
// and lets every posted WR below the first slice not posted complete: only
// then has its data landed. (Not bound to ctx, which may be what stopped the
// stream: each WR completes on its own, successfully or with an error, while
// the receiver is there.) A stream cut short is kept up to that slice; WRs
// past it are not waited for: the receiver discards them, and those beyond
// the blocks it has open would wait for it forever.
func (s *sendSession) land(ctx context.Context, c *control, wcs []fabric.Completion, complete bool, stopErr error) (bool, error) {
	fail := func(err error) {
		if stopErr == nil {
			stopErr = err
		}
		complete = false
	}
	for {
		if err := s.postTails(); err != nil {
			fail(err)
		}
		if err := s.laneFailure(); err != nil {
			fail(err) // and wait for what was posted
		}
		if !s.landing() {
			break
		}
		s.progress(false)
		if err := s.pollProgress(wcs); err != nil {
			if lerr := s.laneFailure(); lerr != nil {
				fail(lerr)
				continue
			}
			fail(s.peerReason(ctx, c, err))
			break
		}
	}
	if s.lanes != nil {
		s.lanes.Stop() // everything handed over is posted (or failed)
		if err := s.laneFailure(); err != nil {
			fail(err)
		}
	}
	return complete, stopErr
}

// finish reports the stream's result: it ends the stream (End) and waits for
// the receiver's Done, unless the receiver ended the observation first.
func (s *sendSession) finish(c *control, elapsed time.Duration, complete bool, stopErr error) (Result, error) {
	s.progress(true)
	// A stream cut short counts only its gap-free prefix: that is what the
	// receiver keeps.
	bytes := s.sent
	if !complete {
		bytes = s.prefix()
	}
	res := Result{Bytes: bytes, Seconds: elapsed.Seconds(), QPs: s.cfg.QPs, Mode: s.cfg.Mode, MRMode: s.acc.MRMode}
	if elapsed > 0 {
		res.Gbps = float64(s.sent) * 8 / elapsed.Seconds() / 1e9
	}
	if c.early != nil {
		res.Receiver = *c.early
		res.HeldBackSeconds = s.held.state(time.Now()).total.Seconds()
		return res, withReceiver(stopErr, *c.early)
	}
	if err := s.k.Send(wire.End{Bytes: s.extent, Complete: complete}); err != nil {
		res.HeldBackSeconds = s.held.state(time.Now()).total.Seconds()
		if stopErr != nil {
			return res, stopErr
		}
		return res, fmt.Errorf("send end of stream: %w", err)
	}
	res, err := s.awaitDone(c.events, res, complete, stopErr)
	// The receiver's last word on holds comes before its Done.
	res.HeldBackSeconds = s.held.state(time.Now()).total.Seconds()
	return res, err
}

// progress reports the running totals when a report is due, or at once when
// final.
func (s *sendSession) progress(final bool) {
	if s.cfg.Progress == nil {
		return
	}
	now := time.Now()
	if !final && now.Before(s.nextProg) {
		return
	}
	h := s.held.state(now)
	s.cfg.Progress(Progress{Bytes: s.sent, Acked: s.acked, Total: s.cfg.Bytes, Elapsed: now.Sub(s.start),
		HeldBack: h.total, Holding: h.holding, HoldFor: h.current})
	s.nextProg = now.Add(s.cfg.ProgressEvery)
}

// pollProgress waits for send completions as poll does, but with progress
// reports no longer than until the next is due: a stream that does not move
// (the receiver held back by its readers) still reports at the usual
// interval.
func (s *sendSession) pollProgress(wcs []fabric.Completion) error {
	if s.cfg.Progress == nil {
		return s.poll(wcs, true)
	}
	base := s.ctx
	ctx, cancel := context.WithDeadline(base, s.nextProg)
	defer cancel()
	s.ctx = ctx
	err := s.poll(wcs, true)
	s.ctx = base
	if err != nil && errors.Is(err, context.DeadlineExceeded) && base.Err() == nil {
		return nil // a progress report is due
	}
	return err
}

// noLimit marks a stream whose last slice is not known yet.
const noLimit = ^uint64(0)

// setup prepares the per-queue-pair state. Queue pair q carries slices q,
// q+N, q+2N, ... in order, or in write mode whole blocks
// (wire.Geometry.WholeBlocks): a queue pair with room takes the next block nobody
// has, so one whose CPU is busier carries fewer blocks instead of holding the
// others back. Each queue pair moves on as soon as it has a free send slot, so
// one that stalls (a retransmission timeout on a lossy link) holds back only
// its own slices while the others run ahead, up to one ring of slices past the
// oldest unfinished one. A source that can only be read in order keeps the
// stream in strict slice order instead.
func (s *sendSession) setup() {
	cfg := s.cfg
	nq := cfg.QPs
	s.free = make([][]int, nq)
	s.inq = make([]sliceFIFO, nq)
	s.next = make([]uint64, nq)
	s.unsig = make([]int, nq)
	s.tail = make([]tailWrite, nq)
	// A completion per message costs a wake-up per message; one per quarter
	// of the send queue still frees slots early enough to keep it full.
	s.sigEvery = max(1, cfg.TxDepth/4)
	for q := range nq {
		for i := range cfg.TxDepth {
			s.free[q] = append(s.free[q], i)
		}
		s.inq[q] = newSliceFIFO(cfg.TxDepth)
		s.next[q] = s.g.FirstOnQP(q)
	}
	s.limit = noLimit
	if cfg.Bytes > 0 {
		s.limit = s.g.Slices(cfg.Bytes)
	}
	s.ahead = uint64(s.acc.NBufs) * s.g.SlicesPerBlock()
	_, random := cfg.Source.(RandomAccessSource)
	s.ordered = !random
	s.cr = credits{nbufs: s.acc.NBufs}
}

// readControl forwards the receiver's control messages until an error or
// Done, and then calls gone.
func (s *sendSession) readControl(events chan<- senderEvent, quit <-chan struct{}, gone func()) {
	defer gone()
	for {
		m, err := s.k.Recv()
		var ev senderEvent
		switch m := m.(type) {
		case wire.Credit:
			ev.credit = &m
		case wire.Held:
			s.held.note(m, time.Now())
			continue
		case wire.Done:
			ev.done = &m
		case wire.Reject:
			ev.err = &RejectedError{Message: m.Message}
		default:
			if err == nil {
				err = fmt.Errorf("%w: unexpected %T during the stream", wire.ErrProtocol, m)
			}
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				err = fmt.Errorf("receiver closed the connection: %w", wire.ErrPeerGone)
			}
			ev.err = err
		}
		select {
		case events <- ev:
		case <-quit:
			return
		}
		if ev.err != nil || ev.done != nil {
			return
		}
	}
}

// unsent reports whether slices below the limit are still to be posted.
func (s *sendSession) unsent() bool { return s.lowest() < s.limit }

// untaken is the first slice of the next block no queue pair has taken (with
// whole blocks; wire.NoSlice otherwise).
func (s *sendSession) untaken() uint64 {
	if !s.g.WholeBlocks {
		return wire.NoSlice
	}
	return s.block * s.g.SlicesPerBlock()
}

// lowest is the lowest slice not yet posted.
func (s *sendSession) lowest() uint64 {
	lo := s.untaken()
	for _, n := range s.next {
		lo = min(lo, n)
	}
	return lo
}

// carrier is the queue pair that posts slice sl, the lowest one not posted,
// in strict slice order: the queue pair whose next slice it is, or, for the
// first slice of a block nobody has taken, the queue pair without a block
// that has the most free send slots.
func (s *sendSession) carrier(sl uint64) int {
	if !s.g.WholeBlocks {
		return s.g.QP(sl)
	}
	best := -1
	for q, n := range s.next {
		if n == sl {
			return q
		}
		if n == wire.NoSlice && (best < 0 || len(s.free[q]) > len(s.free[best])) {
			best = q
		}
	}
	return max(best, 0)
}

// oldest is the lowest slice that has not completed yet.
func (s *sendSession) oldest() uint64 {
	lo := s.untaken()
	for q, n := range s.next {
		if f := &s.inq[q]; f.len() > 0 {
			n = f.front()
		}
		lo = min(lo, n)
	}
	return lo
}

// landing reports whether a slice below the first one not posted is still in
// flight (every slice in flight, once the whole stream is posted).
func (s *sendSession) landing() bool {
	return s.inflight > 0 && s.oldest() < s.lowest()
}

// prefix is the number of stream bytes before the first slice not posted.
func (s *sendSession) prefix() uint64 {
	lo := s.lowest()
	if lo >= s.hi {
		return s.extent
	}
	return s.g.StreamOffset(lo)
}

// postReady posts what every queue pair can take: slices with a free send
// slot, inside the look-ahead and (write mode) with their block granted, one
// PostSend per queue pair. credit reports that a slice waited for a grant.
func (s *sendSession) postReady() (posted, credit bool, err error) {
	defer func() {
		if err != nil {
			s.unstage()
		}
	}()
	nq := len(s.next)
	base := s.oldest()
	if s.ordered {
		// Strict slice order: the lowest slice not posted goes next, on its
		// carrier.
		for {
			q := s.carrier(s.lowest())
			ok, c, err := s.stage(q, base)
			credit = credit || c
			if err == nil && ok {
				err = s.flush(q)
			}
			if err != nil {
				return posted, credit, err
			}
			if !ok {
				break
			}
			posted = true
		}
	} else {
		for i := range nq {
			q := (s.rr + i) % nq
			for {
				ok, c, err := s.stage(q, base)
				credit = credit || c
				if err != nil {
					return posted, credit, err
				}
				if !ok {
					break
				}
				// Over PostList: post all but the newest WR. The newest
				// stays, so the batch that ends the round (flushed below,
				// signalled) is never empty.
				if pl := s.cfg.PostList; pl > 0 && len(s.wrs) > pl {
					n := len(s.wrs) - 1
					if err := s.post(q, s.wrs[:n]); err != nil {
						return posted, credit, err
					}
					s.wrs = append(s.wrs[:0], s.wrs[n])
					posted = true
				}
			}
			if len(s.wrs) > 0 {
				if err := s.flush(q); err != nil {
					return posted, credit, err
				}
				posted = true
			}
		}
		s.rr = (s.rr + 1) % nq
	}
	if s.cfg.Mode == wire.ModeWrite {
		s.cr.release(s.g.SliceBlock(s.lowest()))
	}
	return posted, credit, nil
}

// stage fills the next slice of queue pair q (with whole blocks, when q has
// none, the first slice of the next block nobody has taken) into a free send
// slot and adds its work request to the batch; ok is false when q cannot take
// it now (no slot, beyond the look-ahead or the end, no grant: credit) or the
// source ended before it.
func (s *sendSession) stage(q int, base uint64) (ok, credit bool, err error) {
	cfg := s.cfg
	sl, take := s.next[q], false
	if sl == wire.NoSlice && s.g.WholeBlocks {
		sl, take = s.untaken(), true
	}
	if sl >= s.limit || sl >= base+s.ahead || len(s.free[q]) == 0 {
		return false, false, nil
	}
	seq, off, length := s.g.Slice(sl)
	wr := fabric.SendWR{Op: fabric.OpSendImm, Imm: uint32(sl)}
	if cfg.Mode == wire.ModeWrite {
		cr, ok := s.cr.lookup(seq)
		if !ok {
			return false, true, nil
		}
		remote, rkey, err := s.acc.BlockTarget(cr.Index)
		if err != nil {
			return false, false, err
		}
		wr.Op, wr.RemoteAddr, wr.RKey = fabric.OpWriteImm, remote+off, rkey
	}
	offset := s.g.StreamOffset(sl)
	if cfg.Bytes > 0 {
		length = min(length, cfg.Bytes-offset)
	}
	slot := s.free[q][len(s.free[q])-1]
	boff := (uint64(q)*uint64(cfg.TxDepth) + uint64(slot)) * cfg.MsgBytes
	n, err := cfg.Source.Fill(s.buf[boff:boff+length], offset)
	if err != nil {
		return false, false, fmt.Errorf("read source at byte %d: %w", offset, err)
	}
	if n == 0 {
		s.limit = min(s.limit, sl) // the source ended before this slice
		return false, false, nil
	}
	if uint64(n) < length {
		s.limit = min(s.limit, sl+1) // the source ended inside this slice
	}
	if wr.Op == fabric.OpWriteImm {
		// Only a queue pair's last slice in a block carries the immediate:
		// RC places its plain writes before it, so that one completion at
		// the receiver accounts for them all (with whole blocks on each
		// queue pair, a completion and a receive WR per block).
		if s.g.NextOnQP(sl) < s.limit { // wire.NoSlice after the block's last slice
			wr.Op = fabric.OpWrite
			s.tail[q] = tailWrite{slice: sl, addr: wr.RemoteAddr, rkey: wr.RKey, set: true}
		} else {
			s.tail[q].set = false
		}
	}
	if cfg.RateBytesPerSecond > 0 {
		due := s.start.Add(time.Duration(float64(s.sent) / cfg.RateBytesPerSecond * float64(time.Second)))
		if w := time.Until(due); w > 0 {
			if len(s.wrs) > 0 {
				if err := s.flush(q); err != nil { // what is due goes out before the pause
					return false, false, err
				}
			}
			time.Sleep(w)
		}
	}
	wr.ID, wr.Offset, wr.Length = uint64(q)<<32|uint64(slot), boff, uint64(n)
	if s.unsig[q]++; s.unsig[q] >= s.sigEvery {
		wr.Signaled, s.unsig[q] = true, 0
	}
	s.wrs = append(s.wrs, wr)
	s.free[q] = s.free[q][:len(s.free[q])-1]
	s.inq[q].push(inFlight{slice: sl, slot: slot, bytes: uint64(n)})
	s.inflight++
	s.next[q] = s.g.NextOnQP(sl)
	if take {
		s.block++
	}
	s.sent += uint64(n)
	s.hi = max(s.hi, sl+1)
	s.extent = max(s.extent, offset+uint64(n))
	return true, false, nil
}

// flush posts the staged work requests of queue pair q in one call. The last
// one is signalled, so every posted WR is followed by a signalled one and its
// slot comes back even when nothing more is posted on q.
func (s *sendSession) flush(q int) error {
	s.wrs[len(s.wrs)-1].Signaled, s.unsig[q] = true, 0
	if err := s.post(q, s.wrs); err != nil {
		return err // still staged: postReady takes them out of flight
	}
	s.wrs = s.wrs[:0]
	return nil
}

// post hands work requests of queue pair q to the device as they are, or to
// q's posting thread.
func (s *sendSession) post(q int, wrs []fabric.SendWR) error {
	if s.lanes != nil {
		if err := s.lanes.Post(q, wrs); err != nil {
			return fabric.PostError(q, wrs, err)
		}
		return nil
	}
	if err := s.ep.PostSend(q, wrs); err != nil {
		return fabric.PostError(q, wrs, err)
	}
	return nil
}

// unstage takes the work requests staged and not posted (or in a post that
// failed: some may have been posted, but none is waited for) out of flight.
func (s *sendSession) unstage() {
	if len(s.wrs) > 0 {
		s.unpost(int(s.wrs[0].ID>>32), len(s.wrs))
		s.wrs = s.wrs[:0]
	}
}

// unpost takes queue pair q's n newest work requests out of flight: their
// slots are free again and their slices count as not sent.
func (s *sendSession) unpost(q, n int) {
	for f := &s.inq[q]; n > 0 && f.len() > 0; n-- {
		e := f.popBack()
		s.free[q] = append(s.free[q], e.slot)
		s.inflight--
		s.sent -= e.bytes
		s.unsend(q, e.slice)
	}
}

// unsend counts queue pair q's slice sl, and every later one, as not sent.
// In write mode the earlier slices of sl's block too (all q's: whole blocks
// travel on one queue pair): they went out as plain writes that only the
// immediate of the block's last slice lands at the receiver, and that
// immediate is now never posted. Only a stream that is ending unsends (a
// post failed): the gap-free prefix it keeps ends below sl, so blocks q took
// after sl's are not handed out again.
func (s *sendSession) unsend(q int, sl uint64) {
	if s.cfg.Mode == wire.ModeWrite {
		sl = s.g.SliceBlock(sl) * s.g.SlicesPerBlock()
		s.tail[q].set = false
	}
	s.next[q] = min(s.next[q], sl)
}

// waitWithin bounds waits for completions by base and, with posting
// threads, by their first failure (whose work requests would never
// complete); the returned func releases what it set up.
func (s *sendSession) waitWithin(base context.Context) func() {
	s.base, s.ctx = base, base
	if s.lanes == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(base)
	stop := context.AfterFunc(s.lanes.Failed(), cancel)
	s.ctx = ctx
	return func() { stop(); cancel() }
}

// laneFailure reports the first post a posting thread failed, once: it stops
// the threads, takes every work request they did not post out of flight,
// forgets the immediates the failed threads' queue pairs still owe, and from
// then on posts from this thread and waits within the base context alone.
func (s *sendSession) laneFailure() error {
	if s.lanes == nil || s.lanes.Failed().Err() == nil {
		return nil
	}
	s.lanes.Stop()
	var first error
	broken := map[int]bool{}
	for _, f := range s.lanes.TakeFailures() {
		s.unpost(f.QP, f.N)
		broken[f.QP%s.lanes.Threads()] = true
		if first == nil {
			first = f.Err
		}
	}
	for q, t := range s.tail {
		if t.set && broken[q%s.lanes.Threads()] {
			s.unsend(q, t.slice)
		}
	}
	s.lanes, s.ctx = nil, s.base
	return first
}

// postTails posts, on every queue pair whose last slice went out as a plain
// RDMA WRITE and that has a free send slot, a zero-length
// RDMA_WRITE_WITH_IMM naming that slice (its completion at the receiver lands
// it and the plain writes before it). A failed post forgets every tail: the
// stream is then incomplete.
func (s *sendSession) postTails() error {
	for q := range s.tail {
		t := &s.tail[q]
		if !t.set || len(s.free[q]) == 0 {
			continue
		}
		t.set = false
		slot := s.free[q][len(s.free[q])-1]
		wr := fabric.SendWR{ID: uint64(q)<<32 | uint64(slot), Op: fabric.OpWriteImm, Imm: uint32(t.slice), RemoteAddr: t.addr, RKey: t.rkey, Signaled: true}
		if err := s.post(q, []fabric.SendWR{wr}); err != nil {
			s.unsend(q, t.slice) // and every other immediate still owed
			for k, o := range s.tail {
				if o.set {
					s.unsend(k, o.slice)
				}
			}
			return fmt.Errorf("post the end of the stream: %w", err)
		}
		s.free[q] = s.free[q][:len(s.free[q])-1]
		s.inq[q].push(inFlight{slice: t.slice, slot: slot})
		s.inflight++
		s.unsig[q] = 0
	}
	return nil
}

// reap takes the send completions that are already there.
func (s *sendSession) reap(wcs []fabric.Completion) (bool, error) {
	before := s.inflight
	if err := s.poll(wcs, false); err != nil {
		return false, err
	}
	return s.inflight != before, nil
}

// withReceiver adds the receiver's account to the error that stopped a
// stream, unless it already is that account.
func withReceiver(err error, d wire.Done) error {
	if err == nil || d.OK || d.Message == "" || strings.Contains(err.Error(), d.Message) {
		return err
	}
	return fmt.Errorf("%w (the receiver: %s)", err, d.Message)
}

// awaitDone waits for the receiver's account of the observation.
func (s *sendSession) awaitDone(events <-chan senderEvent, res Result, complete bool, stopErr error) (Result, error) {
	timeout := time.After(s.cfg.DoneTimeout)
	// Progress reports go on while the receiver ends the observation (which
	// can wait for a block its readers hold).
	var tick <-chan time.Time
	if s.cfg.Progress != nil {
		t := time.NewTicker(s.cfg.ProgressEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-tick:
			s.progress(false)
		case ev := <-events:
			switch {
			case ev.done != nil:
				res.Receiver = *ev.done
				res.Complete = complete && ev.done.OK && ev.done.Bytes == res.Bytes
				if stopErr != nil {
					return res, withReceiver(stopErr, *ev.done)
				}
				if !ev.done.OK {
					return res, fmt.Errorf("receiver reports the observation incomplete: %s", ev.done.Message)
				}
				if ev.done.Bytes != res.Bytes {
					return res, fmt.Errorf("receiver committed %d bytes, %d were sent", ev.done.Bytes, res.Bytes)
				}
				return res, nil
			case ev.credit != nil:
				// late grants for blocks the stream did not need
			default:
				if stopErr != nil {
					return res, stopErr
				}
				return res, fmt.Errorf("waiting for the receiver's confirmation: %w", ev.err)
			}
		case <-timeout:
			if stopErr != nil {
				return res, stopErr
			}
			return res, fmt.Errorf("no confirmation from the receiver within %s", s.cfg.DoneTimeout)
		}
	}
}

// inFlight is a posted slice and the send slot holding its data.
type inFlight struct {
	slice uint64
	slot  int
	bytes uint64
}

// sliceFIFO holds the slices in flight on one queue pair, oldest first (a
// queue pair completes its work requests in order).
type sliceFIFO struct {
	buf        []inFlight
	head, size int
}

func newSliceFIFO(n int) sliceFIFO { return sliceFIFO{buf: make([]inFlight, n)} }
func (f *sliceFIFO) len() int      { return f.size }
func (f *sliceFIFO) front() uint64 { return f.buf[f.head].slice }
func (f *sliceFIFO) push(v inFlight) {
	f.buf[(f.head+f.size)%len(f.buf)] = v
	f.size++
}
func (f *sliceFIFO) pop() inFlight {
	v := f.buf[f.head]
	f.head = (f.head + 1) % len(f.buf)
	f.size--
	return v
}
func (f *sliceFIFO) popBack() inFlight {
	f.size--
	return f.buf[(f.head+f.size)%len(f.buf)]
}

// poll reaps send completions; wait blocks until at least one arrives (on the
// completion channel when the endpoint has one and BusyPoll is off, else
// spinning: yielding, and with BusyPoll off sleeping 20 µs after a while).
func (s *sendSession) poll(wcs []fabric.Completion, wait bool) error {
	for spins := 0; ; spins++ {
		var n int
		var err error
		w, canWait := s.ep.(fabric.Waiter)
		if wait && spins > 0 && canWait && s.inflight > 0 && !s.cfg.BusyPoll {
			var ok bool
			if n, ok, err = w.PollWait(s.ctx, wcs); !ok {
				n, err = s.ep.Poll(wcs)
			}
		} else {
			n, err = s.ep.Poll(wcs)
		}
		if err != nil {
			return fmt.Errorf("poll send completions: %w", err)
		}
		for _, wc := range wcs[:n] {
			if wc.Recv {
				continue
			}
			if wc.Err != nil {
				var we *fabric.WCError
				if errors.As(wc.Err, &we) {
					return we
				}
				return &fabric.WCError{QP: wc.QP, Status: wc.Err.Error()}
			}
			// The queue pair completed every WR up to this signalled one.
			q, slot := int(wc.ID>>32), int(uint32(wc.ID))
			for f := &s.inq[q]; f.len() > 0; {
				e := f.pop()
				s.free[q] = append(s.free[q], e.slot)
				s.inflight--
				s.acked += e.bytes
				if e.slot == slot {
					break
				}
			}
		}
		if n > 0 || !wait || s.inflight == 0 {
			return nil
		}
		if err := s.ctx.Err(); err != nil {
			return fmt.Errorf("wait for send completions: %w", err)
		}
		if spins < 64 || s.cfg.BusyPoll {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
}
