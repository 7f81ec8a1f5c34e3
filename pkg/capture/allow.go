package capture

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
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
	r.t.senderRefused()
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

// newRefusedCounter is the metric of refused senders.
func newRefusedCounter() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: "ringcap_recv_refused_senders_total",
		Help: "Connections refused because the sender's address is outside the receiver's allowlist (--allowed-senders)."})
}

// senderRefused counts a sender refused by the allowlist.
func (t *Tracker) senderRefused() {
	t.refused.Inc()
	t.Update(func(s *statusdoc.Status) { s.RefusedSenders++ })
}
