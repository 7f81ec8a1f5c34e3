package sender

import (
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// multicastControl sets the multicast TTL and outgoing interface on the socket before it
// is connected (a connected socket keeps the route chosen then); 0 and "" leave the
// system's.
func multicastControl(ttl int, iface string) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if ttl > 0 {
				if serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MULTICAST_TTL, ttl); serr != nil {
					serr = fmt.Errorf("setting multicast TTL %d: %w", ttl, serr)
					return
				}
			}
			if iface != "" {
				serr = setMulticastInterface(int(fd), iface)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}
}

// setMulticastInterface sets IP_MULTICAST_IF: multicast leaves by iface (and, with the
// default IP_MULTICAST_LOOP, is delivered to this host's members on iface).
func setMulticastInterface(fd int, iface string) error {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return fmt.Errorf("multicast interface %q: %w", iface, err)
	}
	if err := unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF, &unix.IPMreqn{Ifindex: int32(ifi.Index)}); err != nil {
		return fmt.Errorf("sending multicast by %s: %w", iface, err)
	}
	return nil
}
