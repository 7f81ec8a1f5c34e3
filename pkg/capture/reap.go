package capture

import (
	"errors"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

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
		s.o.HoldEnded()
		seq := s.a.Open(idx)
		if s.r.cfg.Mode == wire.ModeWrite {
			if err := s.k.QueueCredit(wire.Credit{Seq: seq, Index: uint32(idx)}); err != nil {
				l.peerGone = true
			}
			credits++
		} else if err := s.q.PostSlices(); err != nil {
			return true, endWith("receive post failed", err)
		}
	}
}

// grant tells the sender of the receives posted (send mode) that it is due
// to hear of, in one write.
func (l *streamLoop) grant() {
	queued, err := l.s.q.QueueGrants(l.s.k)
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
	case idx := <-l.s.rw.Opened():
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
	defer s.r.t.Landed(s.qpc)
	for _, wc := range l.wcs[:n] {
		if err := s.q.Complete(wc); err != nil {
			return true, l.completionFailed(err)
		}
	}
	if n == 0 {
		return false, nil
	}
	l.rate.add(n)
	s.o.DataLanded(time.Now()) // UTC_START: when the first byte landed
	if err := s.q.Repost(); err != nil {
		return true, endWith("receive post failed", err)
	}
	if s.r.cfg.Mode == wire.ModeSend {
		if err := s.q.PostSlices(); err != nil {
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
	l.s.r.t.CompletionError(we.QP, we.Status)
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

// drain processes completions that are still arriving for a short while.
func (s *session) drain(wcs []fabric.Completion, d time.Duration) {
	deadline := time.Now().Add(d)
	defer s.r.t.Landed(s.qpc)
	for time.Now().Before(deadline) {
		n, err := s.ep.Poll(wcs)
		if err != nil {
			return
		}
		for _, wc := range wcs[:n] {
			if s.q.Complete(wc) != nil {
				return
			}
		}
		if s.q.Repost() != nil {
			return
		}
		if n == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}
