package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/rc"
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
	l := &streamLoop{s: s, ctx: ctx, ctrl: ctrl, wcs: make([]fabric.Completion, 64), w: newIdler(s.ep, s.r.cfg.BusyPoll, s.rw)}
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
	if !s.a.Complete() && s.a.Room() == 0 {
		s.o.HoldBegan() // no block can take data: the sender is held back
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
		l.w.coalesce = coalescePeriod(l.rate.rate, s.q.CompletionsPerBlock(), s.q.Usable())
		l.w.lazyOpen = s.a.Room() >= 2
		l.w.eventWait = eventWaitFor(s.o.Holds().Holding())
	}
	if err := l.w.idle(l.ctx, l.idle, l.ctrl); err != nil {
		return ringEnding(l.ctx, err)
	}
	return nil
}

// commitFilled marks the blocks that are complete filled, oldest first, and
// ends the stream once every byte up to the End has landed.
func (l *streamLoop) commitFilled() *ending {
	s := l.s
	if err := s.o.CommitFilled(); err != nil {
		return ringEnding(l.ctx, err)
	}
	if s.a.Complete() && l.gotEnd {
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
		case err := <-l.s.rw.Errs():
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
		if _, ok := s.a.End(); !ok {
			if err := s.a.SetEnd(e.end.Bytes); err != nil {
				return endWith(rc.ProtocolError(err).Error(), nil)
			}
		}
		s.drain(l.wcs, 200*time.Millisecond)
		return endWith(fmt.Sprintf("sender stopped early after %d bytes", e.end.Bytes), nil)
	case e.end != nil:
		if err := s.a.SetEnd(e.end.Bytes); err != nil {
			return endWith(rc.ProtocolError(err).Error(), nil)
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

// ringFailure ends a stream whose ring operation failed; while the receiver
// is stopping that is the ring worker stopping with it, not a failure.
func ringFailure(ctx context.Context, err error) (bool, string, error) {
	if ctx.Err() != nil {
		return false, "receiver stopped", nil //nolint:nilerr // a stop, reported as the message
	}
	return false, "ring failure", err
}
