package receiver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/ring"
	"github.com/ringcap/ringcap/pkg/capture/status"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/ingest/assemble"
	"github.com/ringcap/ringcap/pkg/ingest/stream"
	"github.com/ringcap/ringcap/pkg/ingest/udp"
)

// session is one run of the receiver: one observation.
type session struct {
	cfg   Config
	scfg  stream.Config
	w     *dada.Writer
	udp   interface{ Stats() udp.Stats }
	gate  *gate // the allowlist's refusals (nil: none)
	t     *status.Tracker
	log   *slog.Logger
	note  string // the buffer shortfall, kept in every state message
	where string // the sockets, for the state messages

	// The receive path's own (one goroutine at a time).
	pctx    context.Context // the pipeline's: outlives a stop by StopGrace
	stop    context.CancelFunc
	p       *stream.Pipeline
	err     error // the pipeline's failure
	begun   time.Time
	stopAt  atomic.Bool // a stop condition was reached
	why     string      // which one, set once
	whyOnce sync.Once   // guards why

	pipe atomic.Pointer[stream.Pipeline] // for the counts, read from any goroutine
}

func newSession(c Config, scfg stream.Config, w *dada.Writer, u interface{ Stats() udp.Stats }, t *status.Tracker, log *slog.Logger) *session {
	return &session{cfg: c, scfg: scfg, w: w, udp: u, t: t, log: log}
}

// listening reports the bound sockets: state Listening.
func (s *session) listening(socks []udp.SocketInfo, reason string) {
	var addrs []string
	for _, k := range socks {
		addrs = append(addrs, k.Local.String())
	}
	s.where = strings.Join(addrs, ", ")
	s.note = bufferNote(socks)
	if s.note != "" {
		s.log.Warn("Socket receive buffer too small", "detail", s.note)
	}
	s.t.Update(func(st *statusdoc.Status) { st.Endpoint = endpointDoc(socks, reason) })
	s.setState(statusdoc.StateListening, fmt.Sprintf("waiting for %s packets on %s", s.cfg.Stream.Protocol, s.where))
	s.log.Info("Listening for packets", "protocol", s.cfg.Stream.Protocol, "sockets", s.where, "cpus", threadCPUs(socks))
}

// setState sets the state with the buffer note, if any, after the message.
func (s *session) setState(state, msg string) {
	if s.note != "" {
		msg += "; " + s.note
	}
	s.t.SetState(state, msg)
}

// counts are the packet counts now.
func (s *session) counts() statusdoc.Packets {
	var c stream.Counters
	if p := s.pipe.Load(); p != nil {
		c = p.Snapshot()
	}
	p := packetsDoc(s.cfg.Stream.Protocol, c, s.udp.Stats())
	p.Refused = s.gate.count()
	return p
}

// live brings the status up to date (the tracker's SetLive).
func (s *session) live(st *statusdoc.Status) {
	p := s.counts()
	st.Packets, st.BytesReceived = &p, p.ReceivedBytes
}

// run receives from src until a stop condition, ctx or a failure, then ends
// the observation.
func (s *session) run(ctx context.Context, src stream.Source) error {
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	s.stop = stop
	pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer pcancel()
	s.pctx = pctx
	go graceAfter(ctx, pctx, pcancel)
	if d := s.cfg.StopDuration; d > 0 {
		timer := time.AfterFunc(d, func() { s.reached("stop duration reached", "duration", d) })
		defer timer.Stop()
	}
	if d := s.cfg.IdleTimeout; d > 0 {
		go s.watchIdle(sctx, d)
	}
	err := src.Run(sctx, s.handle)
	switch {
	case s.err != nil && ctx.Err() != nil:
		// A stop (SIGINT/SIGTERM) ended a wait for the readers: the stop's
		// doing, as for an RDMA stream.
		s.log.Warn("Stream ended by a stop", "err", s.err.Error())
	case s.err != nil:
		err = s.err
	}
	return errors.Join(err, s.end(ctx, err))
}

// graceAfter cancels the pipeline's context (cancel) StopGrace after ctx
// ends, unless it ended first.
func graceAfter(ctx, pctx context.Context, cancel context.CancelFunc) {
	select {
	case <-ctx.Done():
	case <-pctx.Done():
		return
	}
	t := time.NewTimer(StopGrace)
	defer t.Stop()
	select {
	case <-t.C:
		cancel()
	case <-pctx.Done():
	}
}

// reached stops the run at a stop condition; the first one reached is the
// one the observation names.
func (s *session) reached(msg string, args ...any) {
	s.whyOnce.Do(func() {
		s.why = msg
		s.stopAt.Store(true)
		s.log.Info("Stop condition reached: "+msg, args...)
		s.stop()
	})
}

// handle is one packet: the observation begins at the first.
// Packets after a stop condition are not the observation's: the sockets are
// closing.
func (s *session) handle(pkt []byte) {
	if s.err != nil || s.stopAt.Load() {
		return
	}
	if s.p == nil && !s.begin() {
		return
	}
	if err := s.p.Handle(pkt); err != nil {
		s.err = err
		s.stop()
		return
	}
	if s.cfg.StopBytes > 0 && s.p.Snapshot().PlacedBytes >= s.cfg.StopBytes {
		s.reached("bytes received", "bytes", s.cfg.StopBytes)
	}
	if n := s.cfg.StopHeaps; n > 0 && s.p.Stops() >= uint64(n) {
		s.reached("the sender's stream-stop heap", "heaps", n)
	}
}

// begin makes the observation's pipeline.
func (s *session) begin() bool {
	acfg := assemble.ForDada(s.w, s.cfg.ReorderBlocks)
	acfg.Writer = ringWriter{DadaWriter: ring.DadaWriter{W: s.w}, t: s.t, presence: s.cfg.presence}
	acfg.OnBlock = s.onBlock
	p, err := stream.New(s.pctx, s.scfg, acfg)
	if err != nil {
		s.err = fmt.Errorf("start the observation: %w", err)
		s.stop()
		return false
	}
	s.p, s.begun = p, time.Now()
	s.pipe.Store(p)
	s.t.ObservationBegan(1)
	s.setState(statusdoc.StateReceiving, fmt.Sprintf("receiving %s packets on %s", s.cfg.Stream.Protocol, s.where))
	return true
}

// end ends the observation, if one began: the open blocks are handed over
// and the data end.
func (s *session) end(ctx context.Context, runErr error) error {
	if s.p == nil {
		return nil
	}
	err := s.p.Close()
	if err != nil && ctx.Err() != nil && runErr == nil {
		s.log.Warn("Stopped without handing over every open block: the readers held the ring's blocks", "err", err)
		err = nil
	}
	c := s.p.Snapshot()
	secs := time.Since(s.begun).Seconds()
	o := statusdoc.Observation{Number: 1, Bytes: c.PlacedBytes, Blocks: c.Assemble.Blocks, Seconds: secs,
		Complete: err == nil && runErr == nil && c.Assemble.ZeroFilled == 0,
		Message:  fmt.Sprintf("%d of %d packets received, %d bytes zero-filled", c.Received, c.Packets, c.Assemble.ZeroFilled)}
	if s.stopAt.Load() {
		o.Message += "; ended: " + s.why
	}
	if secs > 0 {
		o.Gbps = float64(c.PlacedBytes) * 8 / secs / 1e9
	}
	s.t.ObservationDone(o)
	return err
}

// threadCPUs names the CPU each socket's receive thread is pinned to, "" when none is.
func threadCPUs(socks []udp.SocketInfo) string {
	var cpus []string
	for _, k := range socks {
		if k.Pinned {
			cpus = append(cpus, strconv.Itoa(k.CPU))
		}
	}
	return strings.Join(cpus, ",")
}
