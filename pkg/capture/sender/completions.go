package sender

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
)

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
