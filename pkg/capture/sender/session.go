package sender

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

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

	poster   poster   // hands work requests to the fabric
	fl       flight   // send slots: free or in flight
	held     heldView // the receiver's holds, as it reports them
	start    time.Time
	nextProg time.Time // when the next progress report is due

	plan    planner // what goes where
	cur     cursor  // where posting stands
	pace    pacer   // rate limit
	ordered bool    // post in strict slice order (sequential source)
	rr      int     // queue pair to try first
	hi      uint64  // 1 + the highest slice posted
	sent    uint64  // bytes posted
	acked   uint64  // bytes whose send completions came back
	extent  uint64  // stream byte just after the furthest slice posted
	cr      credits
	rg      grants          // send mode: the receives the receiver has posted
	wrs     []fabric.SendWR // staged work requests of one queue pair
	tail    []tailWrite     // write mode: per queue pair, a plain write still owed its immediate
}

// tailWrite is a slice a queue pair wrote as a plain RDMA WRITE, expecting
// to carry on in the same block; if the stream ends first, a zero-length
// RDMA_WRITE_WITH_IMM naming it tells the receiver it has landed.
type tailWrite struct {
	slice uint64
	addr  uint64
	rkey  uint64
	set   bool
}

type senderEvent struct {
	credit *wire.Credit
	posted *wire.Posted
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
	s.pace = newPacer(cfg.RateBytesPerSecond, start)
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
		s.lanes, s.poster = lanes, lanePoster{lanes}
		return lanes.Stop, nil
	}
	// One OS thread posts everything: a goroutine that hopped between
	// threads (and so CPUs) would ring the doorbells of one queue pair
	// from several CPUs, and a software RDMA device then emits its
	// packets through several per-CPU network queues, out of order.
	s.poster = endpointPoster{s.ep}
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

// handle acts on one event from the receiver: a credit, a receive grant, an
// early Done or a failure.
func (s *sendSession) handle(c *control, ev senderEvent) error {
	switch {
	case ev.credit != nil:
		return s.cr.add(*ev.credit)
	case ev.posted != nil:
		return s.rg.add(*ev.posted)
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
		if s.cfg.Duration > 0 && s.cur.limit == noLimit && time.Since(s.start) >= s.cfg.Duration {
			s.cur.limit = s.hi // finish the slices below the furthest one posted, then stop
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
// a grant (its block's credit, or in send mode its receive).
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
// with nothing in flight or a slice waiting for a grant (a credit or a
// receive), until the receiver sends one. (Sleeping on completions alone would miss a grant while
// a stalled queue pair holds the only WRs in flight.)
func (s *sendSession) idle(ctx context.Context, c *control, wcs []fabric.Completion, credit bool) error {
	if s.fl.n > 0 && !credit {
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
	if stopErr != nil && c.peer.Err() != nil {
		_, _ = s.drainEvents(c) // a Done the receiver sent before it went
	}
	if c.early != nil {
		res.Receiver = *c.early
		res.HeldBackSeconds = s.held.state(time.Now()).total.Seconds()
		return res, withReceiver(stopErr, *c.early)
	}
	if stopErr != nil && c.peer.Err() != nil {
		// The receiver's connection is gone, and stopErr says how: no Done
		// can come, so none is waited for (DoneTimeout).
		res.HeldBackSeconds = s.held.state(time.Now()).total.Seconds()
		return res, stopErr
	}
	if err := s.k.Send(wire.End{Bytes: s.extent, Complete: complete}); err != nil {
		res.HeldBackSeconds = s.held.state(time.Now()).total.Seconds()
		if stopErr != nil {
			return res, stopErr
		}
		return res, fmt.Errorf("send end of stream: %w", err)
	}
	res, err := s.awaitDone(c, res, complete, stopErr)
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
	s.fl = newFlight(cfg.QPs, cfg.TxDepth)
	s.tail = make([]tailWrite, cfg.QPs)
	s.cur = newCursor(s.g, cfg.Bytes)
	s.plan = newPlanner(s.g, cfg.Bytes, uint64(s.acc.NBufs)*s.g.SlicesPerBlock(), cfg.TxDepth, cfg.MsgBytes)
	_, random := cfg.Source.(RandomAccessSource)
	s.ordered = !random
	s.cr = credits{nbufs: s.acc.NBufs}
	s.rg = make(grants, cfg.QPs)
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
		case wire.Posted:
			ev.posted = &m
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
