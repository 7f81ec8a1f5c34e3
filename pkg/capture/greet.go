package capture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// pendingConn is a connection whose handshake checked out.
type pendingConn struct {
	k     *wire.Conn
	hello wire.Hello
	log   *slog.Logger
}

// settings is what the receiver tells each sender first.
func (r *Receiver) settings() wire.Settings {
	return wire.Settings{Mode: r.cfg.Mode, QPs: uint16(r.cfg.QPs), MsgBytes: uint32(r.cfg.MsgBytes), Fabric: r.fab.Fabric()}
}

// greet reads and checks a connection's preamble and hello, answering bad
// ones with a Reject, and queues good ones for the (single) session loop. A
// sender that arrives while another is streaming waits up to the handshake
// timeout for its turn. A sender of the previous protocol version
// (wire.MinProtocolVersion) is served as that version was: the connection
// speaks its version.
func (r *Receiver) greet(ctx context.Context, c net.Conn, pending chan<- *pendingConn) {
	if !r.cfg.Senders.Allows(c.RemoteAddr()) {
		r.refuseSender(c)
		return
	}
	log := r.log.With("peer", c.RemoteAddr().String())
	k := wire.NewConn(c)
	_ = c.SetDeadline(time.Now().Add(r.cfg.HandshakeTimeout))
	reject := func(msg string) {
		log.Warn("Rejected sender", "reason", msg)
		_ = k.Send(wire.Reject{Message: msg})
		_ = c.Close()
	}
	version, err := k.ReadPreamble()
	if err != nil {
		reject(rejectText(err))
		return
	}
	if version != wire.ProtocolVersion {
		log = log.With("protocolVersion", version)
	}
	if err := k.Send(r.settings()); err != nil {
		log.Warn("Sender went away before the hello", "err", err)
		_ = c.Close()
		return
	}
	m, err := k.Recv()
	if err != nil {
		reject(rejectText(fmt.Errorf("read hello: %w", err)))
		return
	}
	hello, ok := m.(wire.Hello)
	if !ok {
		reject(fmt.Sprintf("expected a hello message, got %T", m))
		return
	}
	if msg := r.mismatch(hello); msg != "" {
		reject(msg)
		return
	}
	t := time.NewTimer(r.cfg.HandshakeTimeout)
	defer t.Stop()
	select {
	case pending <- &pendingConn{k: k, hello: hello, log: log}:
	case <-t.C:
		reject("receiver is busy with another sender")
	case <-ctx.Done():
		reject("receiver is shutting down")
	}
}

// mismatch says how a sender's hello differs from what this receiver runs
// ("" when it does not), naming both sides.
func (r *Receiver) mismatch(hello wire.Hello) string {
	switch own := r.fab.Fabric(); {
	case hello.Fabric != own:
		return fmt.Sprintf("sender uses %v, this receiver uses %v (--transport, --ofi-provider)", hello.Fabric, own)
	case len(hello.QPs) != r.cfg.QPs:
		return fmt.Sprintf("sender asked for %d queue pairs, this receiver uses %d (--qps)", len(hello.QPs), r.cfg.QPs)
	case hello.Mode != r.cfg.Mode:
		return fmt.Sprintf("sender asked for %s mode, this receiver runs %s mode (--mode)", hello.Mode, r.cfg.Mode)
	case uint64(hello.MsgBytes) != r.cfg.MsgBytes:
		return fmt.Sprintf("sender uses %d-byte messages, this receiver %d (--msg-bytes)", hello.MsgBytes, r.cfg.MsgBytes)
	}
	return ""
}

func rejectText(err error) string {
	var ve *wire.VersionError
	switch {
	case errors.As(err, &ve):
		return ve.Error()
	case errors.Is(err, wire.ErrProtocol):
		return "not a ringcap sender: " + err.Error()
	}
	return err.Error()
}
