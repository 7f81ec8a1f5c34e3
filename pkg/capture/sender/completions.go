package sender

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
)

// poll reaps send completions; wait blocks until at least one arrives (on the
// completion channel when the endpoint has one and BusyPoll is off, else
// spinning: yielding, and with BusyPoll off sleeping 20 µs after a while).
func (s *sendSession) poll(wcs []fabric.Completion, wait bool) error {
	for spins := 0; ; spins++ {
		n, err := s.pollOnce(wcs, wait && spins > 0)
		if err != nil {
			return fmt.Errorf("poll send completions: %w", err)
		}
		if err := s.completed(wcs[:n]); err != nil {
			return err
		}
		if n > 0 || !wait || s.fl.n == 0 {
			return nil
		}
		if err := s.ctx.Err(); err != nil {
			return fmt.Errorf("wait for send completions: %w", err)
		}
		s.backoff(spins)
	}
}

// pollOnce polls the completion queues once; sleep sleeps on the completion
// channel first, when the endpoint has one, work requests are in flight and
// BusyPoll is off.
func (s *sendSession) pollOnce(wcs []fabric.Completion, sleep bool) (int, error) {
	w, canWait := s.ep.(fabric.Waiter)
	if !sleep || !canWait || s.fl.n == 0 || s.cfg.BusyPoll {
		return s.ep.Poll(wcs)
	}
	n, ok, err := w.PollWait(s.ctx, wcs)
	if !ok {
		return s.ep.Poll(wcs)
	}
	return n, err
}

// completed frees the send slots of the completions' work requests: a
// signalled one completes every earlier WR of its queue pair. A completion
// with an error fails the stream.
func (s *sendSession) completed(wcs []fabric.Completion) error {
	for _, wc := range wcs {
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
		s.acked += s.fl.retire(int(wc.ID>>32), int(uint32(wc.ID)))
	}
	return nil
}

// backoff yields between polls, and with BusyPoll off sleeps 20 µs after a
// while.
func (s *sendSession) backoff(spins int) {
	if spins < 64 || s.cfg.BusyPoll {
		runtime.Gosched()
	} else {
		time.Sleep(20 * time.Microsecond)
	}
}

// reap takes the send completions that are already there.
func (s *sendSession) reap(wcs []fabric.Completion) (bool, error) {
	before := s.fl.n
	if err := s.poll(wcs, false); err != nil {
		return false, err
	}
	return s.fl.n != before, nil
}
