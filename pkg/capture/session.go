package capture

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/observation"
	"github.com/ringcap/ringcap/pkg/capture/obsheader"
	"github.com/ringcap/ringcap/pkg/capture/placement"
	"github.com/ringcap/ringcap/pkg/capture/rc"
	"github.com/ringcap/ringcap/pkg/capture/ring"
	"github.com/ringcap/ringcap/pkg/capture/status"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
)

// session is one sender's stream over RC queue pairs into one observation:
// the connection, the queue pairs and their receives (receives.go, land.go),
// the stream loop (stream.go); the observation owns the ring side.
type session struct {
	r     *Receiver
	k     *wire.Conn
	ep    fabric.Endpoint
	hello wire.Hello
	log   *slog.Logger

	g       wire.Geometry
	o       *observation.Observation
	a       *placement.Window   // o's window
	rw      *ring.Worker        // o's ring worker
	q       *rc.Receives        // the queue pairs' receives
	qpc     []status.QPCounters // per queue pair, its metrics
	heldRep holdReporter        // what the sender was told of holds
}

func (s *session) run(ctx context.Context) error {
	r := s.r
	start := time.Now()
	s.g = r.geometry()
	n := r.obs
	// The header is checked now (a sender whose keywords cannot be used is
	// refused) and written when the first byte lands (its UTC_START).
	if refused, err := s.checkHeader(n); refused || err != nil {
		return err
	}
	r.obs++
	r.t.SetState(statusdoc.StateReceiving, fmt.Sprintf("observation %d from %s", n, s.k.NetConn().RemoteAddr()))
	w := r.window()
	s.log.Info("Observation started", "observation", n, "mode", s.hello.Mode, "qps", len(s.hello.QPs), "msgBytes", s.hello.MsgBytes, "totalBytes", s.hello.TotalBytes, "window", w, "busyPoll", r.cfg.BusyPoll, "protocolVersion", s.k.Version())

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.startObservation(ctx, n, w); err != nil {
		return err
	}
	// The queue pairs write into the observation's blocks: End closes them
	// before it commits the end, so that no DMA touches a block after it
	// is handed to readers.
	s.o.Attach(func() error {
		fabric.CloseLogged(s.log, "the queue pairs of a sender's session", s.ep)
		return nil
	})
	complete, msg, err := s.stream(ctx)
	lost, ferr := s.o.End(complete)
	if lost > 0 {
		msg += fmt.Sprintf("; %d bytes past the first gap were discarded", lost)
	}
	if err == nil {
		err = ferr
	}
	s.report(time.Since(start).Seconds(), complete && err == nil, msg)
	return err
}

// checkHeader builds observation n's header to check the sender's keywords:
// a sender whose keywords cannot be used is refused; err is the receiver's
// own failure.
func (s *session) checkHeader(n int) (refused bool, err error) {
	_, err = s.header(n, time.Now())
	if obsheader.IsSendersFault(err) {
		s.log.Warn("Rejected sender", "reason", err.Error())
		_ = s.k.Send(wire.Reject{Message: err.Error()})
		return true, nil
	}
	if err != nil {
		_ = s.k.Send(wire.Reject{Message: "receiver could not build the header"})
		return true, fmt.Errorf("build header for observation %d: %w", n, err)
	}
	return false, nil
}

// startObservation starts observation n with a window of w blocks.
func (s *session) startObservation(ctx context.Context, n, w int) error {
	r := s.r
	o, err := observation.Start(ctx, observation.Config{Number: n, Geometry: placement.Geometry{BlockBytes: s.g.BlockBytes, SliceBytes: s.g.MsgBytes},
		Writer: r.w, Blocks: w, HeaderSize: r.cfg.Header.Size, Tracker: r.t, Last: r.lastObservation, Log: s.log,
		Header: func(start time.Time) (*dada.Header, error) { return s.header(n, start) }})
	if err != nil {
		return err
	}
	s.o, s.a, s.rw = o, o.Window(), o.Ring()
	if s.hello.TotalBytes > 0 {
		_ = s.a.SetEnd(s.hello.TotalBytes) // nothing has landed: cannot fail
	}
	return nil
}

// report records the observation that ended in the status and tells the
// sender (Done).
func (s *session) report(secs float64, complete bool, msg string) {
	r, n := s.r, s.o.Number()
	bytes, blocks := s.o.Bytes(), s.o.Blocks()
	o := statusdoc.Observation{Number: n, Bytes: bytes, Blocks: blocks, Seconds: secs, Complete: complete, Message: msg}
	if secs > 0 {
		o.Gbps = float64(bytes) * 8 / secs / 1e9
	}
	r.total += bytes
	r.t.ObservationDone(o)
	_ = s.k.NetConn().SetDeadline(time.Now().Add(r.cfg.HandshakeTimeout))
	_ = s.reportHeld(true)
	_ = s.k.Send(wire.Done{Bytes: bytes, Blocks: blocks, OK: o.Complete, Message: msg})
	if o.Complete {
		s.log.Info("Observation complete", "observation", n, "bytes", bytes, "blocks", blocks, "seconds", secs, "gbps", o.Gbps)
	} else {
		s.log.Warn("Observation incomplete", "observation", n, "bytes", bytes, "blocks", blocks, "reason", msg)
		r.t.Update(func(st *statusdoc.Status) { st.Message = fmt.Sprintf("observation %d incomplete: %s", n, msg) })
	}
}

// header builds observation n's header from the template and the sender's
// keywords, with UTC_START at start unless they set it.
func (s *session) header(n int, start time.Time) (*dada.Header, error) {
	b := s.r.cfg.Header
	b.Mode, b.QPs = s.r.cfg.Mode, s.r.cfg.QPs
	return b.Build(n, s.hello.Header, start)
}

// awaitFirstBlock waits for the stream's first ring block while the readers
// hold every one, telling the sender it is held back (Held) so that it keeps
// waiting for its answer. It returns -1, with why, when the ring fails (err),
// the receiver stops or the sender goes away first.
func (s *session) awaitFirstBlock(ctx context.Context) (int, string, error) {
	const gone = "sender went away while the readers held every ring block"
	// A hold shorter than a tick (the ring worker opening the block) goes
	// unreported.
	tick := time.NewTicker(wire.AnswerHeldEvery)
	defer tick.Stop()
	for {
		select {
		case first := <-s.rw.Opened():
			return first, "", nil
		case e := <-s.rw.Errs():
			_ = s.k.Send(wire.Reject{Message: "receiver could not open a ring block"})
			return -1, "ring failure", e
		case <-ctx.Done():
			_ = s.k.Send(wire.Reject{Message: "receiver is shutting down"})
			return -1, "receiver stopped", nil
		case <-tick.C:
			if s.reportHeld(false) != nil {
				return -1, gone, nil
			}
		}
	}
}

// reportHeld tells the sender about holds when there is news (see
// holdReporter); final sends the observation's account of holds if it had
// any, news or not, ahead of Done.
func (s *session) reportHeld(final bool) error {
	held := s.o.Holds()
	if !final && !held.Holding() && held.Ended() == s.heldRep.total && !s.heldRep.holding {
		return nil // nothing new: the common case, without reading the clock
	}
	now := time.Now()
	st := held.At(now)
	if final && (st.Total > 0 || s.heldRep.holding) || !final && s.heldRep.due(now, st) {
		return s.k.Send(s.heldRep.message(now, st))
	}
	return nil
}
