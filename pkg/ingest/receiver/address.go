package receiver

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"

	"github.com/ringcap/ringcap/pkg/capture/endpoint"
	"github.com/ringcap/ringcap/pkg/ingest/udp"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// wildcard is the unspecified address of the groups' IP version.
func wildcard(groups []netip.Addr) netip.Addr {
	if len(groups) > 0 && groups[0].Is6() {
		return netip.IPv6Unspecified()
	}
	return netip.IPv4Unspecified()
}

// bindConfig returns the sockets' configuration with the address to bind
// (and, with groups, the interface to join them on) chosen, and how.
func (c Config) bindConfig(log *slog.Logger) (udp.Config, string, error) {
	u := c.UDP
	addr, reason := u.Address, ""
	if !addr.IsValid() {
		var err error
		if addr, reason, err = c.listenAddress(log); err != nil {
			return udp.Config{}, "", err
		}
	}
	if len(u.Groups) == 0 {
		u.Address = addr
		return u, reason, nil
	}
	u.Address = wildcard(u.Groups)
	switch {
	case u.Interface != "":
		reason = "groups joined on " + u.Interface
	case addr.Is4() && !addr.IsUnspecified():
		u.InterfaceAddr = addr
		reason = fmt.Sprintf("groups joined on the interface of %s", addr)
	default:
		reason = "groups joined on the interface the route to them names"
	}
	return u, reason, nil
}

// listenAddress is the address the receiver's --listen flags choose, without
// an RDMA device: the --listen host or the attachment's address.
func (c Config) listenAddress(log *slog.Logger) (netip.Addr, string, error) {
	l := c.Listen
	if l.Addr == "" {
		return netip.IPv4Unspecified(), "", nil
	}
	if l.On == endpoint.ListenRDMA {
		return netip.Addr{}, "", fmt.Errorf("--listen-on %s needs an RDMA device: a packet receiver binds --udp-address, or --listen-on any or attachment=NAMESPACE/NAME", l.On)
	}
	l.NoDevice, l.Allowed = true, endpoint.AllowAny // the allowlist is the gate's (newGate)
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	ch, err := endpoint.ChooseListen(rdma.Roots{}, l, endpoint.Request{}, getenv, log)
	if err != nil {
		return netip.Addr{}, "", err
	}
	if ch.Host == "" {
		return netip.IPv4Unspecified(), ch.AddressReason, nil
	}
	a, err := netip.ParseAddr(ch.Host)
	if err != nil {
		return netip.Addr{}, "", fmt.Errorf("listen address %q: %w", ch.Host, err)
	}
	return a.Unmap(), ch.AddressReason, nil
}
