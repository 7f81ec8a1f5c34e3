package sender

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// Send connects to a receiver at addr and streams cfg.Source to it (Connect,
// then Stream). Cancelling ctx stops the stream early; the receiver then ends
// the observation on the bytes that landed and marks it incomplete.
func Send(ctx context.Context, addr string, cfg Config, fab fabric.SenderFabric) (Result, error) {
	l, cfg, err := Connect(ctx, addr, cfg)
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = l.Close() }()
	return l.Stream(ctx, cfg, fab)
}

// Link is a connection to a receiver that has told its Settings.
type Link struct {
	addr     string
	c        net.Conn
	k        *wire.Conn
	Settings wire.Settings
}

// Connect connects to the receiver at addr and reads its Settings. The
// returned Config takes the receiver's mode, queue pairs and message size
// where cfg leaves them zero; where cfg gives one that differs, Connect
// fails, naming both, before anything is created.
func Connect(ctx context.Context, addr string, cfg Config) (*Link, Config, error) {
	cfg.defaults()
	if err := cfg.validateGiven(); err != nil {
		return nil, cfg, err
	}
	d := net.Dialer{Timeout: cfg.DialTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, cfg, fmt.Errorf("connect to receiver: %w", err)
	}
	l := &Link{addr: addr, c: c, k: wire.NewConn(c)}
	_ = c.SetDeadline(time.Now().Add(cfg.DialTimeout + cfg.AnswerTimeout))
	if l.Settings, err = l.readSettings(); err != nil {
		_ = c.Close()
		return nil, cfg, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	if cfg, err = cfg.adopt(l.Settings); err != nil {
		_ = c.Close()
		return nil, cfg, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	return l, cfg, nil
}

// readSettings sends the preamble and reads the receiver's Settings (or its
// refusal).
func (l *Link) readSettings() (wire.Settings, error) {
	if err := l.k.WritePreamble(); err != nil {
		return wire.Settings{}, err
	}
	m, err := l.k.Recv()
	if err != nil {
		return wire.Settings{}, fmt.Errorf("read the receiver's settings: %w", err)
	}
	switch m := m.(type) {
	case wire.Settings:
		return m, nil
	case wire.Reject:
		return wire.Settings{}, &RejectedError{Message: m.Message}
	}
	return wire.Settings{}, fmt.Errorf("%w: expected the receiver's settings, got %T", wire.ErrProtocol, m)
}

// Close closes the connection; it is safe to call more than once.
func (l *Link) Close() error {
	_ = l.c.Close()
	return nil
}

// Stream streams cfg.Source over the fabric (whose buffer holds at least
// SendBufferBytes(cfg)) to the receiver of the link. cfg is what Connect
// returned.
func (l *Link) Stream(ctx context.Context, cfg Config, fab fabric.SenderFabric) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if need := SendBufferBytes(cfg); uint64(len(fab.Buffer())) < need {
		return Result{}, fmt.Errorf("send buffer of %d bytes, need %d", len(fab.Buffer()), need)
	}
	addr, c, k := l.addr, l.c, l.k
	ep, err := fab.Open(ctx, fabric.EndpointConfig{QPs: cfg.QPs, SendDepth: cfg.TxDepth, RecvDepth: 1, AckTimeout: cfg.AckTimeout})
	if err != nil {
		return Result{}, fmt.Errorf("create %d queue pairs: %w", cfg.QPs, err)
	}
	defer fabric.CloseLogged(cfg.Log, "the sender's queue pairs", ep)
	hello := wire.Hello{Mode: cfg.Mode, MsgBytes: uint32(cfg.MsgBytes), TotalBytes: cfg.Bytes, Fabric: fab.Fabric(), QPs: ep.Local(), Header: cfg.Header}
	if err := k.Send(hello); err != nil {
		return Result{}, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	held, heldAt, acc, err := awaitAnswer(k, c, cfg)
	if err != nil {
		return Result{}, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	if len(acc.QPs) != cfg.QPs || acc.Mode != cfg.Mode || uint64(acc.MsgBytes) != cfg.MsgBytes || acc.Fabric != hello.Fabric {
		return Result{}, fmt.Errorf("handshake with %s: %w: receiver answered %d queue pairs, %s mode, %d-byte messages, %v", addr, wire.ErrProtocol, len(acc.QPs), acc.Mode, acc.MsgBytes, acc.Fabric)
	}
	if err := ep.Connect(acc.QPs); err != nil {
		return Result{}, fmt.Errorf("connect queue pairs to %s: %w", addr, err)
	}
	_ = c.SetDeadline(time.Time{})
	cfg.Log.Info("Connected", "receiver", addr, "mode", cfg.Mode, "qps", cfg.QPs, "mr", acc.MRMode, "blocks", acc.NBufs, "blockBytes", acc.BufSize)
	s := &sendSession{ctx: ctx, base: ctx, cfg: cfg, k: k, ep: ep, acc: acc, buf: fab.Buffer()}
	if !heldAt.IsZero() {
		s.held.note(held, heldAt)
	}
	return s.run(ctx)
}

// awaitAnswer reads the receiver's answer to the Hello. Until the receiver has
// a ring block for the stream it reports that its readers hold it back (Held,
// every wire.AnswerHeldEvery): each report is shown as progress and gives the
// answer AnswerTimeout more (at least three report intervals), so a sender
// waits for slow readers instead of giving up with a timeout. It returns the
// last such report and when it came (zero without one).
func awaitAnswer(k *wire.Conn, c net.Conn, cfg Config) (wire.Held, time.Time, wire.Accept, error) {
	var (
		last wire.Held
		at   time.Time
		view heldView
	)
	start := time.Now()
	for {
		m, err := k.Recv()
		if err != nil {
			if !at.IsZero() {
				err = fmt.Errorf("%w (the receiver was held back by its ring's readers for %s)", err, view.state(time.Now()).current.Round(time.Millisecond))
			}
			return last, at, wire.Accept{}, fmt.Errorf("read answer: %w", err)
		}
		switch m := m.(type) {
		case wire.Held:
			last, at = m, time.Now()
			view.note(m, at)
			_ = c.SetDeadline(at.Add(max(cfg.AnswerTimeout, 3*wire.AnswerHeldEvery)))
			if cfg.Progress != nil {
				h := view.state(at)
				cfg.Progress(Progress{Total: cfg.Bytes, Elapsed: at.Sub(start), HeldBack: h.total, Holding: h.holding, HoldFor: h.current})
			}
		case wire.Reject:
			return last, at, wire.Accept{}, &RejectedError{Message: m.Message}
		case wire.Accept:
			return last, at, m, nil
		default:
			return last, at, wire.Accept{}, fmt.Errorf("%w: unexpected %T", wire.ErrProtocol, m)
		}
	}
}
