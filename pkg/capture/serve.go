package capture

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/observation"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// Serve accepts connections on ln until ctx is cancelled or a stop condition
// is met. Bad handshakes are answered with a Reject and do not stop serving.
// It returns nil after a stop condition and ctx.Err() on cancellation.
func (r *Receiver) Serve(ctx context.Context, ln net.Listener) error {
	r.started = time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if r.cfg.StopDuration > 0 {
		stopTimer := time.AfterFunc(r.cfg.StopDuration, func() {
			r.log.Info("Stop duration reached", "duration", r.cfg.StopDuration)
			r.stopping.Store(true)
			if !r.busy.Load() {
				cancel()
			}
		})
		defer stopTimer.Stop()
	}
	pending := make(chan *pendingConn)
	acceptErr := make(chan error, 1)
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				acceptErr <- err
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.greet(ctx, c, pending)
			}()
		}
	}()
	defer func() {
		_ = ln.Close()
		if err := <-acceptErr; err != nil {
			r.log.Debug("Listener closed", "err", err)
		}
		cancel()
		wg.Wait()
	}()
	r.t.SetState(statusdoc.StateListening, "waiting for a sender on "+ln.Addr().String())
	r.log.Info("Listening for senders", "address", ln.Addr().String(), "mode", r.cfg.Mode, "qps", r.cfg.QPs)
	for {
		select {
		case <-ctx.Done():
			if r.stopping.Load() {
				return nil
			}
			return ctx.Err()
		case err := <-acceptErr:
			acceptErr <- err
			return fmt.Errorf("accept on %s: %w", ln.Addr(), err)
		case p := <-pending:
			r.busy.Store(true)
			err := r.handle(ctx, p)
			r.busy.Store(false)
			if err != nil && ctx.Err() != nil {
				// A stop (SIGINT/SIGTERM) ended the stream: what failed after it
				// (ending the observation in the ring) is the stop's doing; the
				// writer's close ends the observation if the readers let it.
				r.log.Warn("Stream ended by a stop", "err", err.Error())
				return ctx.Err()
			}
			if err != nil {
				r.t.SetState(statusdoc.StateFailed, err.Error())
				return err
			}
			if r.stopReached() {
				return nil
			}
			if ctx.Err() == nil {
				r.t.SetState(statusdoc.StateListening, "waiting for a sender on "+ln.Addr().String())
			}
		}
	}
}

// handle runs one accepted connection. Problems caused by the peer are
// answered and logged and return nil (the receiver keeps serving); only
// failures of the receiver itself (ring, fabric) are returned.
func (r *Receiver) handle(ctx context.Context, p *pendingConn) error {
	k, hello, log := p.k, p.hello, p.log
	var parts observation.Closers // the connection, then the queue pairs: closed in reverse
	defer func() { _ = parts.Close() }()
	parts.Push(k.NetConn().Close)
	_ = k.NetConn().SetDeadline(time.Now().Add(r.cfg.HandshakeTimeout))
	reject := func(msg string) error {
		log.Warn("Rejected sender", "reason", msg)
		_ = k.Send(wire.Reject{Message: msg})
		return nil
	}
	ep, err := r.fab.Open(ctx, fabric.EndpointConfig{QPs: r.cfg.QPs, SendDepth: 1, RecvDepth: r.cfg.RxDepth, CQPerQP: r.cfg.CQPerQP})
	if err != nil {
		msg := fmt.Sprintf("receiver could not create %d queue pairs: %v", r.cfg.QPs, err)
		_ = reject(msg)
		r.t.SetState(statusdoc.StateFailed, msg)
		return fmt.Errorf("create queue pairs: %w", err)
	}
	parts.Push(ep.Close) // idempotent: the observation closes it first (session.run)
	if err := ep.Connect(hello.QPs); err != nil {
		msg := fmt.Sprintf("receiver could not connect its queue pairs to the sender's: %v", err)
		_ = reject(msg)
		r.t.Update(func(s *statusdoc.Status) { s.Message = msg })
		return nil
	}
	s := &session{r: r, k: k, ep: ep, hello: hello, log: log, qpc: r.t.QueuePairs(r.cfg.QPs)}
	return s.run(ctx)
}
