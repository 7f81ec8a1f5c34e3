package sender

import (
	"net"

	"golang.org/x/sys/unix"
)

// setMulticastTTL sets IP_MULTICAST_TTL on conn's socket.
func setMulticastTTL(conn *net.UDPConn, ttl int) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MULTICAST_TTL, ttl)
	}); err != nil {
		return err
	}
	return serr
}
