package endpoint

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
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
	ip, ok := AddrIP(addr)
	return ok && f.AllowsAddr(ip)
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

// AddrIP is the IP of a connection's address, IPv4-mapped IPv6 unmapped (a dual-stack
// listener reports IPv4 senders as ::ffff:a.b.c.d).
func AddrIP(addr net.Addr) (netip.Addr, bool) {
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
