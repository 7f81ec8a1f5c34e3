package capture

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// refuseSender answers a sender outside the allowlist: it reads what the sender sends
// first (its preamble, and the hello a sender of another protocol version sends at
// once, within the handshake timeout, so that closing the connection does not reset
// it before the sender reads the answer), sends a Reject that
// says why and closes the connection. The refusal is counted and logged; the receiver
// keeps serving.
func (r *Receiver) refuseSender(c net.Conn) {
	peer := c.RemoteAddr().String()
	ip, _ := endpoint.AddrIP(c.RemoteAddr())
	msg := fmt.Sprintf("sender %s is not allowed to send to this receiver: it accepts senders from %s only (ringcap recv --allowed-senders; spec.network.allowedSenders of a RingCapture)",
		ip, r.cfg.Senders)
	r.t.SenderRefused()
	r.log.Warn("Refused sender outside the allowlist", "peer", peer, "allowed", r.cfg.Senders.String())
	k := wire.NewConn(c)
	_ = c.SetDeadline(time.Now().Add(r.cfg.HandshakeTimeout))
	var verr *wire.VersionError
	if _, err := k.ReadPreamble(); errors.As(err, &verr) {
		_, _ = k.Recv() // a sender of another version sends its hello at once
	}
	_ = k.Send(wire.Reject{Message: msg})
	_ = c.Close()
}
