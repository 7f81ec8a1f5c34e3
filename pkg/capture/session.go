package capture

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
)

// session is one observation: one connection's stream into the ring.
type session struct {
	r     *Receiver
	k     *wire.Conn
	ep    fabric.Endpoint
	hello wire.Hello
	log   *slog.Logger

	g        wire.Geometry
	a        *assembler
	rw       *ringWorker
	posted   []int           // receive WRs outstanding per queue pair
	consumed []int           // write mode: scatter-less receive WRs used up since the last repost
	empty    []fabric.RecvWR // reused by postEmpty
	slices   []fabric.RecvWR // reused by postSlices
	cursor   []uint64        // per queue pair, its next slice to post receives for (send mode)
	untold   []int           // per queue pair, receives posted that the sender was not told of (send mode, see queueGrants)
	qpc      []qpCounters    // per queue pair, its metrics
	bytes    uint64
	blocks   uint64
	// fullPending counts full blocks committed but not yet sent to the ring
	// worker (see flushFull).
	fullPending int
	held        holdClock    // this observation's holds
	heldRep     holdReporter // what the sender was told of them

	obs        int       // the observation's number
	firstByte  time.Time // when the first completion came (zero before)
	headerDone bool      // the header is in the ring
}

type ctrlEvent struct {
	end *wire.End
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
		_ = s.k.Send(wire.Reject{Message: err.Error()})
		return nil
	}
	if err != nil {
		_ = s.k.Send(wire.Reject{Message: "receiver could not build the header"})
		return fmt.Errorf("build header for observation %d: %w", n, err)
	}
	r.obs++
	r.t.SetState(statusdoc.StateReceiving, fmt.Sprintf("observation %d from %s", n, s.k.NetConn().RemoteAddr()))
	s.log.Info("Observation started", "observation", n, "mode", s.hello.Mode, "qps", len(s.hello.QPs), "msgBytes", s.hello.MsgBytes, "totalBytes", s.hello.TotalBytes, "window", w, "busyPoll", r.cfg.BusyPoll, "protocolVersion", s.k.Version())

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
	fabric.CloseLogged(s.log, "the queue pairs of a sender's session", s.ep)
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
	o := statusdoc.Observation{Number: n, Bytes: s.bytes, Blocks: s.blocks, Seconds: secs, Complete: complete && err == nil, Message: msg}
	if secs > 0 {
		o.Gbps = float64(s.bytes) * 8 / secs / 1e9
	}
	r.total += s.bytes
	r.t.observationDone(o)
	_ = s.k.NetConn().SetDeadline(time.Now().Add(r.cfg.HandshakeTimeout))
	_ = s.reportHeld(true)
	_ = s.k.Send(wire.Done{Bytes: s.bytes, Blocks: s.blocks, OK: o.Complete, Message: msg})
	if o.Complete {
		s.log.Info("Observation complete", "observation", n, "bytes", s.bytes, "blocks", s.blocks, "seconds", secs, "gbps", o.Gbps)
	} else {
		s.log.Warn("Observation incomplete", "observation", n, "bytes", s.bytes, "blocks", s.blocks, "reason", msg)
		r.t.Update(func(st *statusdoc.Status) { st.Message = fmt.Sprintf("observation %d incomplete: %s", n, msg) })
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
	s.r.t.Update(func(st *statusdoc.Status) { st.Header = statusHeader(hd) })
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
	tick := time.NewTicker(wire.AnswerHeldEvery)
	defer tick.Stop()
	for {
		select {
		case first := <-s.rw.opened:
			return first, "", nil
		case e := <-s.rw.errc:
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
		return s.k.Send(s.heldRep.message(now, st))
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
	if err := s.flushFull(); err != nil {
		return err
	}
	s.endingObservation(s.bytes)
	return s.rw.endOfData()
}

// endingObservation is called before the end of data reaches the readers: when this
// observation meets the stop condition, the status says Finished from now on, so a
// reader that exits at the end of data (ring read -s) exits because the capture is
// done, while the session and the fabric still close.
func (s *session) endingObservation(bytes uint64) {
	if s.r.lastObservation(bytes) {
		s.r.t.SetState(statusdoc.StateFinished, fmt.Sprintf("stop condition reached with observation %d; closing", s.obs))
	}
}

// commit hands block f to the ring worker to be marked filled. Full blocks
// inside the observation wait in fullPending until flushFull (or a block that
// is not full) sends them as one command.
func (s *session) commit(f Filled) error {
	if err := s.writeHeader(); err != nil {
		return err
	}
	if f.Bytes == s.g.BlockBytes && !f.Last {
		s.fullPending++
	} else {
		if err := s.flushFull(); err != nil {
			return err
		}
		if f.Last {
			s.endingObservation(s.bytes + f.Bytes)
		}
		if err := s.rw.fill(int(f.Bytes), 1, f.Last); err != nil {
			return err
		}
	}
	s.bytes += f.Bytes
	s.blocks++
	s.r.t.blockFilled()
	return nil
}

// flushFull sends the full blocks committed since the last flush to the ring
// worker, to be marked filled in one step (one wake-up of each reader).
func (s *session) flushFull() error {
	k := s.fullPending
	if k == 0 {
		return nil
	}
	s.fullPending = 0
	return s.rw.fill(int(s.g.BlockBytes), k, false)
}
