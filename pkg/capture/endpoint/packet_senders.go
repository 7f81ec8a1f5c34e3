package endpoint

import (
	"fmt"
	"net"
	"net/netip"
)

// PacketSenders is the allowlist of --allowed-senders for a packet receiver, whose sockets
// are bound to bound (or the wildcard, with multicast groups joined on iface): any, CIDRs,
// or listen-subnet, the subnet of bound on its interface, else of iface's address. A
// wildcard bound address without an interface has no one subnet: listen-subnet is refused
// then, as for an RDMA receiver listening on every address.
func PacketSenders(spec string, bound netip.Addr, iface string) (*SenderFilter, error) {
	if spec != AllowListenSubnet {
		return senderFilter(spec, listenResult{})
	}
	var res listenResult
	switch {
	case bound.IsValid() && !bound.IsUnspecified():
		res.ip = net.IP(bound.AsSlice())
		if _, subnet, ok := addressOwner(res.ip); ok {
			res.subnet = subnet
		}
	case iface != "":
		ip, subnet, err := interfaceAddress(iface, systemAddrs)
		if err != nil {
			return nil, fmt.Errorf("--allowed-senders listen-subnet: %w", err)
		}
		res.ip, res.subnet = ip, subnet
	default:
		res.ip = net.IPv4zero
	}
	return senderFilter(spec, res)
}

// AllowsAddr says whether a sender at ip may send; ip is unmapped first. It allocates
// nothing, for a check per packet.
func (f *SenderFilter) AllowsAddr(ip netip.Addr) bool {
	if f == nil {
		return true
	}
	ip = ip.Unmap()
	for _, n := range f.nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}
