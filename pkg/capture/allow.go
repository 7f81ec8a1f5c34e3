package capture

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// SenderFilter is the receiver's sender allowlist: the networks a sender may connect
// from. A nil filter allows every sender.
type SenderFilter struct {
	nets []netip.Prefix
}

// NewSenderFilter returns a filter that allows the given networks (masked to their
// prefix) and nothing else; it refuses an empty list, which would refuse every sender.
func NewSenderFilter(nets []netip.Prefix) (*SenderFilter, error) {
	if len(nets) == 0 {
		return nil, fmt.Errorf("an allowlist of senders needs at least one network")
	}
	f := &SenderFilter{nets: make([]netip.Prefix, len(nets))}
	for i, n := range nets {
		if !n.IsValid() {
			return nil, fmt.Errorf("allowed senders: invalid network %v", n)
		}
		f.nets[i] = n.Masked()
	}
	return f, nil
}

// Allows says whether a sender at addr (a connection's remote address) may connect.
func (f *SenderFilter) Allows(addr net.Addr) bool {
	if f == nil {
		return true
	}
	ip, ok := addrIP(addr)
	if !ok {
		return false
	}
	for _, n := range f.nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// Networks lists the allowed networks ("any" for a nil filter).
func (f *SenderFilter) Networks() []string {
	if f == nil {
		return []string{"any"}
	}
	out := make([]string, len(f.nets))
	for i, n := range f.nets {
		out[i] = n.String()
	}
	return out
}

// String is the allowlist for messages: "198.18.0.0/24, 10.0.0.0/8".
func (f *SenderFilter) String() string { return strings.Join(f.Networks(), ", ") }

// addrIP is the IP of a connection's address, IPv4-mapped IPv6 unmapped (a dual-stack
// listener reports IPv4 senders as ::ffff:a.b.c.d).
func addrIP(addr net.Addr) (netip.Addr, bool) {
	var ip netip.Addr
	switch a := addr.(type) {
	case *net.TCPAddr:
		ip, _ = netip.AddrFromSlice(a.IP)
	default:
		ap, err := netip.ParseAddrPort(addr.String())
		if err != nil {
			return netip.Addr{}, false
		}
		ip = ap.Addr()
	}
	return ip.Unmap(), ip.IsValid()
}

// refuseSender answers a sender outside the allowlist: it reads what the sender sends
// first (its preamble and hello, within the handshake timeout, so that closing the
// connection does not reset it before the sender reads the answer), sends a Reject that
// says why and closes the connection. The refusal is counted and logged; the receiver
// keeps serving.
func (r *Receiver) refuseSender(c net.Conn) {
	peer := c.RemoteAddr().String()
	ip, _ := addrIP(c.RemoteAddr())
	msg := fmt.Sprintf("sender %s is not allowed to send to this receiver: it accepts senders from %s only (ringcap recv --allowed-senders; spec.network.allowedSenders of a RingCapture)",
		ip, r.cfg.Senders)
	r.t.senderRefused()
	r.log.Warn("Refused sender outside the allowlist", "peer", peer, "allowed", r.cfg.Senders.String())
	k := newConn(c)
	_ = c.SetDeadline(time.Now().Add(r.cfg.HandshakeTimeout))
	if ReadPreamble(k.r) == nil {
		_, _ = k.recv()
	}
	_ = k.send(Reject{Message: msg})
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
	t.Update(func(s *Status) { s.RefusedSenders++ })
}
