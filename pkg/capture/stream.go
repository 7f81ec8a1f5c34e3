package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// stream moves data until the stream is complete, the sender goes away or
// something fails. complete reports a full, verified stream; msg says why not.
func (s *session) stream(ctx context.Context) (complete bool, msg string, err error) {
	ctrl := make(chan ctrlEvent, 4)
	quit := make(chan struct{})
	defer close(quit)
	go s.readControl(ctrl, quit)
	if end := s.begin(ctx); end != nil {
		return end.result()
	}
	l := &streamLoop{s: s, ctx: ctx, ctrl: ctrl, wcs: make([]fabric.Completion, 64), w: newIdler(s.ep, s.r.cfg.BusyPoll)}
	for {
		if end := l.pass(); end != nil {
			return end.result()
		}
	}
}

// ending is how a stream ended: complete, or why not (msg) and, for a local
// failure, the error.
type ending struct {
	complete bool
	msg      string
	err      error
}

func (e *ending) result() (bool, string, error) { return e.complete, e.msg, e.err }

func endWith(msg string, err error) *ending { return &ending{msg: msg, err: err} }

// ringEnding is ringFailure as an ending.
func ringEnding(ctx context.Context, err error) *ending {
	c, m, e := ringFailure(ctx, err)
	return &ending{complete: c, msg: m, err: e}
}

// readControl reads the sender's control messages during the stream and
// hands them to the stream loop on ctrl until quit is closed; the connection
// failing ends it with an event saying so.
func (s *session) readControl(ctrl chan<- ctrlEvent, quit <-chan struct{}) {
	_ = s.k.NetConn().SetDeadline(time.Time{})
	deliver := func(e ctrlEvent) bool {
		select {
		case ctrl <- e:
			return true
		case <-quit:
			return false
		}
	}
	for {
		m, err := s.k.Recv()
		if err != nil {
			if !errors.Is(err, wire.ErrProtocol) {
				err = fmt.Errorf("%w: %w", wire.ErrPeerGone, err) // EOF, reset, ...
			}
			deliver(ctrlEvent{err: err})
			return
		}
		end, ok := m.(wire.End)
		if !ok {
			deliver(ctrlEvent{err: fmt.Errorf("%w: unexpected %T during the stream", wire.ErrProtocol, m)})
			return
		}
		if !deliver(ctrlEvent{end: &end}) {
			return
		}
	}
}

// begin holds the first block (and, in send mode, posts its receives) before
// it accepts; then it accepts and grants the first block (write mode) or
// the receives posted (send mode).
func (s *session) begin(ctx context.Context) *ending {
	r := s.r
	nq := len(s.hello.QPs)
	s.posted = make([]int, nq)
	s.consumed = make([]int, nq)
	s.cursor = make([]uint64, nq)
	s.untold = make([]int, nq)
	for q := range s.cursor {
		s.cursor[q] = s.g.FirstOnQP(q)
	}
	first, end := s.firstBlock(ctx)
	if end != nil {
		return end
	}
	s.openBlock(first)
	if err := s.postFirst(nq); err != nil {
		return endWith("receive post failed", err)
	}
	mode, regions, _ := r.fab.Registration()
	acc := wire.Accept{Mode: r.cfg.Mode, MsgBytes: uint32(r.cfg.MsgBytes), NBufs: uint32(r.ring.NBufs), BufSize: uint64(r.ring.BufSize),
		MRMode: mode, Fabric: r.fab.Fabric(), QPs: s.ep.Local()}
	if r.cfg.Mode == wire.ModeWrite {
		acc.Regions = regions
	}
	if err := s.k.Send(acc); err != nil {
		return endWith("sender went away during the handshake", nil)
	}
	var err error
	if r.cfg.Mode == wire.ModeWrite {
		err = s.k.Send(wire.Credit{Seq: 0, Index: uint32(first)})
	} else if _, err = s.queueGrants(); err == nil {
		err = s.k.Flush()
	}
	if err != nil {
		return endWith("sender went away", nil)
	}
	return nil
}

// firstBlock is the first block of the stream, waiting (held back) while the
// readers hold every block.
func (s *session) firstBlock(ctx context.Context) (int, *ending) {
	select {
	case first := <-s.rw.opened:
		return first, nil
	default:
	}
	s.holdBegan() // every block is still with the readers
	first, msg, err := s.awaitFirstBlock(ctx)
	if first < 0 {
		return first, endWith(msg, err)
	}
	s.holdEnded()
	return first, nil
}

// postFirst posts the receives the first block needs: empty ones for the
// write-mode immediates, or the block's slices in send mode.
func (s *session) postFirst(nq int) error {
	if s.r.cfg.Mode != wire.ModeWrite {
		return s.postSlices()
	}
	for q := range nq {
		if err := s.postEmpty(q, s.r.cfg.RxDepth); err != nil {
			return err
		}
	}
	return nil
}

// streamLoop is the state of one stream's receive loop.
type streamLoop struct {
	s          *session
	ctx        context.Context
	ctrl       chan ctrlEvent
	wcs        []fabric.Completion
	w          *idler
	idle       int
	peerGone   bool
	goneDetail string
	gotEnd     bool // Done answers the sender's End, even when the length was known
	rate       rateMeter
}

// pass is one pass of the loop: newly opened blocks, completions, filled
// blocks, control messages; then it sleeps or spins when nothing moved. It
// returns how the stream ended, or nil to go on.
func (l *streamLoop) pass() *ending {
	s := l.s
	opened, end := l.takeOpened()
	if end != nil {
		return end
	}
	reaped, end := l.reap()
	if end != nil {
		return end
	}
	l.grant()
	if end := l.commitFilled(); end != nil {
		return end
	}
	got, end := l.control()
	if end != nil {
		return end
	}
	if l.peerGone {
		// The sender vanished without an End: take what already landed.
		s.drain(l.wcs, 200*time.Millisecond)
		return endWith("sender disconnected before the end of the stream"+l.goneDetail, nil)
	}
	if !s.a.complete() && s.a.room() == 0 {
		s.holdBegan() // no block can take data: the sender is held back
	}
	if err := s.reportHeld(false); err != nil {
		l.peerGone = true
	}
	if opened || reaped || got {
		l.idle = 0
		return nil
	}
	l.idle++
	if l.idle == 1 {
		l.rate.sample(time.Now())
		l.w.coalesce = coalescePeriod(l.rate.rate, s.completionsPerBlock(), s.usableReceives())
		l.w.lazyOpen = s.a.room() >= 2
		l.w.eventWait = eventWaitFor(!s.held.since.IsZero())
	}
	if err := l.w.idle(l.ctx, l.idle, l.ctrl, s.rw); err != nil {
		return ringEnding(l.ctx, err)
	}
	return nil
}

// takeOpened takes the blocks the ring worker opened (those a sleep took from
// its channel first): a credit for each in write mode, receives for their
// slices in send mode. The credits of the blocks taken in one call go out in
// one write (blocks often come free several at a time).
func (l *streamLoop) takeOpened() (bool, *ending) {
	s := l.s
	taken, credits := 0, 0
	defer func() {
		if credits > 0 && s.k.Flush() != nil {
			l.peerGone = true
		}
	}()
	for {
		idx, ok := l.nextOpened()
		if !ok {
			return taken > 0, nil
		}
		taken++
		s.holdEnded()
		seq := s.openBlock(idx)
		if s.r.cfg.Mode == wire.ModeWrite {
			if err := s.k.QueueCredit(wire.Credit{Seq: seq, Index: uint32(idx)}); err != nil {
				l.peerGone = true
			}
			credits++
		} else if err := s.postSlices(); err != nil {
			return true, endWith("receive post failed", err)
		}
	}
}

// grant tells the sender of the receives posted (send mode) that it is due
// to hear of, in one write.
func (l *streamLoop) grant() {
	queued, err := l.s.queueGrants()
	if err == nil && queued {
		err = l.s.k.Flush()
	}
	if err != nil {
		l.peerGone = true
	}
}

// nextOpened is the next block the ring worker opened, if any.
func (l *streamLoop) nextOpened() (int, bool) {
	if len(l.w.opened) > 0 {
		idx := l.w.opened[0]
		l.w.opened = l.w.opened[1:]
		return idx, true
	}
	select {
	case idx := <-l.s.rw.opened:
		return idx, true
	default:
		return 0, false
	}
}

// reap polls for completions, lands them and reposts.
func (l *streamLoop) reap() (bool, *ending) {
	s := l.s
	n, err := s.ep.Poll(l.wcs)
	if err != nil {
		return false, endWith("completion polling failed", err)
	}
	defer s.r.t.landed(s.qpc)
	for _, wc := range l.wcs[:n] {
		if err := s.complete(wc); err != nil {
			return true, l.completionFailed(err)
		}
	}
	if n == 0 {
		return false, nil
	}
	l.rate.add(n)
	if s.firstByte.IsZero() {
		s.firstByte = time.Now() // UTC_START: when the first byte landed
	}
	if err := s.repost(); err != nil {
		return true, endWith("receive post failed", err)
	}
	if s.r.cfg.Mode == wire.ModeSend {
		if err := s.postSlices(); err != nil {
			return true, endWith("receive post failed", err)
		}
	}
	return true, nil
}

// completionFailed ends the stream on a failed completion, counted by queue
// pair; a sender that dies can take the queue pairs down with it (flushed
// receives): the message says so when its connection is gone too.
func (l *streamLoop) completionFailed(err error) *ending {
	var we *fabric.WCError
	if !errors.As(err, &we) {
		return endWith(err.Error(), nil)
	}
	l.s.r.t.completionError(we.QP, we.Status)
	msg := err.Error()
	select {
	case e := <-l.ctrl:
		if errors.Is(e.err, wire.ErrPeerGone) {
			msg = "sender disconnected before the end of the stream (" + msg + ")"
		}
	case <-time.After(500 * time.Millisecond):
	}
	return endWith(msg, nil)
}

// commitFilled marks the blocks that are complete filled, oldest first, and
// ends the stream once every byte up to the End has landed.
func (l *streamLoop) commitFilled() *ending {
	s := l.s
	for _, f := range s.a.takeFilled() {
		if err := s.commit(f); err != nil {
			return ringEnding(l.ctx, err)
		}
	}
	if err := s.flushFull(); err != nil {
		return ringEnding(l.ctx, err)
	}
	if s.a.hasEnd {
		s.rw.limit(s.a.endBlocks())
	}
	if s.a.complete() && l.gotEnd {
		return &ending{complete: true}
	}
	return nil
}

// control takes a control message (one a sleep took first) or a failure.
func (l *streamLoop) control() (bool, *ending) {
	var e ctrlEvent
	if l.w.ctrl != nil {
		e, l.w.ctrl = *l.w.ctrl, nil
	} else {
		select {
		case e = <-l.ctrl:
		case err := <-l.s.rw.errc:
			return false, ringEnding(l.ctx, err)
		case <-l.ctx.Done():
			return false, endWith("receiver stopped", nil)
		default:
			return false, nil
		}
	}
	return true, l.event(e)
}

// event acts on one control event: an End (complete or cut short), the
// sender gone, or a protocol failure.
func (l *streamLoop) event(e ctrlEvent) *ending {
	s := l.s
	switch {
	case e.end != nil && !e.end.Complete:
		// A stream cut short ends where the sender stopped, whatever
		// length it had announced: what landed gap-free is kept.
		if !s.a.hasEnd {
			if err := s.a.setEnd(e.end.Bytes); err != nil {
				return endWith(err.Error(), nil)
			}
		}
		s.drain(l.wcs, 200*time.Millisecond)
		return endWith(fmt.Sprintf("sender stopped early after %d bytes", e.end.Bytes), nil)
	case e.end != nil:
		if err := s.a.setEnd(e.end.Bytes); err != nil {
			return endWith(err.Error(), nil)
		}
		l.gotEnd = true
	case errors.Is(e.err, wire.ErrPeerGone):
		l.peerGone = true
		if !errors.Is(e.err, io.EOF) {
			l.goneDetail = " (" + e.err.Error() + ")"
		}
	default:
		return endWith(e.err.Error(), nil)
	}
	return nil
}

// spinFor is how long an idle receive loop keeps polling before it sleeps on
// the completion channel: on a hardware link the next message is microseconds
// away and a sleep would cost more; a count of passes instead would spin for
// milliseconds on an emulated machine, where every pass is slow, taking CPU
// from the kernel that moves the data.
const spinFor = 20 * time.Microsecond

// idler is how the receive loop waits when nothing moves: while completions
// come at a steady rate (coalesce > 0), a sleep of that long on a timer
// (coalesce.go); else yields for up to spinFor, then (with a fabric.Notifier)
// arming the completion queue, one more pass, and a sleep until a completion,
// a ring block, a control message or a failure arrives; without one, short
// sleeps. A busy idler only ever yields.
type idler struct {
	n        fabric.Notifier
	busy     bool
	procs    int // GOMAXPROCS when the stream began
	armed    bool
	since    time.Time     // when this idle spell began
	coalesce time.Duration // set by the loop at the start of each idle spell
	// eventWait bounds a sleep on a completion event (eventWaitFor); set
	// with coalesce.
	eventWait time.Duration
	// lazyOpen (set with coalesce) leaves the blocks the ring worker opens
	// to the next wake: the sender still has room in two open blocks, so
	// their credits or receives are not due yet, and in write mode the
	// block's completion wakes the loop anyway. It saves a wake a block.
	lazyOpen bool
	napped   bool // this spell had its coalescing sleep
	timer    *time.Timer
	opened   []int      // blocks the sleep took from the ring worker
	ctrl     *ctrlEvent // a control message the sleep took
}

func newIdler(ep fabric.Endpoint, busy bool) *idler {
	w := &idler{busy: busy, procs: runtime.GOMAXPROCS(0), eventWait: eventWaitFor(false)}
	if n, ok := ep.(fabric.Notifier); ok {
		w.n = n
	}
	return w
}

// idle waits after the idle-th pass in a row that moved nothing; it returns
// the ring worker's failure.
func (w *idler) idle(ctx context.Context, idle int, ctrl chan ctrlEvent, rw *ringWorker) error {
	if idle == 1 {
		w.since, w.napped = time.Now(), false
	}
	switch {
	case w.busy && idle >= 2 && w.procs > 1:
		// Nothing moved twice in a row: let the threads this loop waits
		// for run, on this core too. (With one P no other thread of the
		// process runs Go code while this one holds it: the OS yield would
		// only hand the core to other processes.)
		runtime.Gosched()
		osYield()
		return nil
	case w.busy || idle < 2 || !w.coalescing() && time.Since(w.since) < spinFor:
		runtime.Gosched()
		return nil
	case w.coalescing():
		// A pass after this sleep that moves nothing means the stream
		// paused: the spell goes on to sleep on the next completion.
		w.napped = true
		return w.sleep(ctx, w.coalesce, nil, ctrl, rw)
	case w.n == nil:
		time.Sleep(50 * time.Microsecond)
		return nil
	case !w.armed:
		if err := w.n.Arm(); err != nil {
			w.n = nil  // cannot sleep on completions: short sleeps from now on
			return nil //nolint:nilerr // not the stream's failure: the loop goes on without events
		}
		w.armed = true
		return nil // one more pass: a completion before the arming raises no event
	}
	w.armed = false
	return w.sleep(ctx, w.eventWait, w.n.Events(), ctrl, rw)
}

// eventWaitFor is how long an idle loop sleeps on a completion event before it
// passes anyway. Completions, opened blocks, control messages and failures wake
// it at once, so the limit is a safety net: but during a hold it is the
// cadence of the held reports (heldReportEvery), which go out from passes.
// Under TCG each spare wake costs the loop a pass and an arming: at a block a
// tenth of a second, a 50 ms net doubled the wakes of a write-mode stream.
func eventWaitFor(holding bool) time.Duration {
	if holding {
		return heldReportEvery
	}
	return time.Second
}

// coalescing reports whether this idle spell sleeps on the coalescing timer next:
// the next completion is a known while away, so the spell does not spin first.
func (w *idler) coalescing() bool { return w.coalesce > 0 && !w.napped }

// sleep waits for d, a completion event (events; nil: none), a block the ring
// worker opened (unless lazyOpen), a control message, the ring worker's failure
// or ctx.
func (w *idler) sleep(ctx context.Context, d time.Duration, events <-chan struct{}, ctrl chan ctrlEvent, rw *ringWorker) error {
	opened := rw.opened
	if w.lazyOpen {
		opened = nil
	}
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	defer w.timer.Stop()
	select {
	case <-events:
	case idx := <-opened:
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
func (s *session) drain(wcs []fabric.Completion, d time.Duration) {
	deadline := time.Now().Add(d)
	defer s.r.t.landed(s.qpc)
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
