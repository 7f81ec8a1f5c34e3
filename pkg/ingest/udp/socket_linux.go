//go:build linux

package udp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// rmemMaxPath is where the cap on SO_RCVBUF is read for BufferError.
const rmemMaxPath = "/proc/sys/net/core/rmem_max"

// bufferSize is what sizeRecvBuffer obtained for one socket.
type bufferSize struct {
	obtained int
	err      error // a *BufferError when obtained falls short
}

// openSocket binds one socket for port with the receive options set before bind, then joins
// its groups. A buffer shortfall is returned in bufferSize, or as the error when
// cfg.RequireRecvBuffer.
func openSocket(cfg Config, port uint16, groups []netip.Addr, ifindex int) (*net.UDPConn, bufferSize, error) {
	network := "udp4"
	if cfg.Address.Is6() {
		network = "udp6"
	}
	var buf bufferSize
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		return controlErr(c, func(fd int) error {
			if err := setReceiveOptions(fd, cfg.Address.Is6()); err != nil {
				return err
			}
			buf.obtained, buf.err = sizeRecvBuffer(fd, cfg.RecvBufferBytes)
			var be *BufferError
			if buf.err != nil && (cfg.RequireRecvBuffer || !errors.As(buf.err, &be)) {
				return buf.err
			}
			return nil
		})
	}}
	addr := netip.AddrPortFrom(cfg.Address, port).String()
	pc, err := lc.ListenPacket(context.Background(), network, addr)
	if err != nil {
		return nil, buf, err // net's error names the listen and the address
	}
	conn := pc.(*net.UDPConn)
	if err := joinGroups(conn, groups, ifindex, cfg.InterfaceAddr); err != nil {
		_ = conn.Close()
		return nil, buf, fmt.Errorf("udp %s: %w", addr, err)
	}
	return conn, buf, nil
}

// detach takes a bound socket out of Go's network poller: it returns a blocking duplicate of
// the socket's descriptor, owned by the caller, and closes conn. The socket (its binding and
// group memberships) lives on in the duplicate. On error conn is closed and nothing is left.
func detach(conn *net.UDPConn) (int, error) {
	defer func() { _ = conn.Close() }()
	rc, err := conn.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("raw connection of the socket: %w", err)
	}
	fd := -1
	err = controlErr(rc, func(orig int) error {
		var derr error
		fd, derr = unix.FcntlInt(uintptr(orig), unix.F_DUPFD_CLOEXEC, 0)
		return derr
	})
	if err != nil {
		return -1, fmt.Errorf("duplicate the socket's descriptor: %w", err)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("make the socket blocking: %w", err)
	}
	return fd, nil
}

// controlErr runs f on the socket's descriptor and returns the first error of either.
func controlErr(c syscall.RawConn, f func(fd int) error) error {
	var ferr error
	if err := c.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// setReceiveOptions sets SO_REUSEPORT, SO_RXQ_OVFL and turns IP_MULTICAST_ALL off.
func setReceiveOptions(fd int, v6 bool) error {
	opts := []struct {
		level, opt int
		name       string
	}{
		{unix.SOL_SOCKET, unix.SO_REUSEPORT, "SO_REUSEPORT"},
		{unix.SOL_SOCKET, unix.SO_RXQ_OVFL, "SO_RXQ_OVFL"},
	}
	for _, o := range opts {
		if err := unix.SetsockoptInt(fd, o.level, o.opt, 1); err != nil {
			return fmt.Errorf("set %s: %w", o.name, err)
		}
	}
	level, opt, name := unix.IPPROTO_IP, unix.IP_MULTICAST_ALL, "IP_MULTICAST_ALL"
	if v6 {
		level, opt, name = unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_ALL, "IPV6_MULTICAST_ALL"
	}
	if err := unix.SetsockoptInt(fd, level, opt, 0); err != nil {
		return fmt.Errorf("turn off %s: %w", name, err)
	}
	return nil
}

// sizeRecvBuffer requests want bytes of receive buffer, forcing past net.core.rmem_max when
// allowed, and returns the size obtained (half the kernel's doubled figure) and a
// *BufferError when it falls short. want 0 leaves the kernel's default.
func sizeRecvBuffer(fd, want int) (int, error) {
	if want > 0 {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, want)
	}
	got, err := recvBuffer(fd)
	if err != nil || want == 0 || got >= want {
		return got, err
	}
	forceErr := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, want)
	if got, err = recvBuffer(fd); err != nil || got >= want {
		return got, err
	}
	if forceErr != nil {
		forceErr = fmt.Errorf("set SO_RCVBUFFORCE: %w", forceErr)
	}
	return got, &BufferError{Wanted: want, Obtained: got, RmemMax: readRmemMax(), Force: forceErr}
}

// recvBuffer reads back SO_RCVBUF, halved: Linux reports twice the usable size.
func recvBuffer(fd int) (int, error) {
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	if err != nil {
		return 0, fmt.Errorf("read back SO_RCVBUF: %w", err)
	}
	return v / 2, nil
}

// readRmemMax returns net.core.rmem_max, or 0 when it cannot be read.
func readRmemMax() int {
	b, err := os.ReadFile(rmemMaxPath)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// interfaceIndex resolves Config.Interface (0 when unnamed: the kernel picks by route or
// by InterfaceAddr).
func interfaceIndex(name string) (int, error) {
	if name == "" {
		return 0, nil
	}
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return 0, fmt.Errorf("find interface %q for multicast: %w", name, err)
	}
	if ifi.Flags&net.FlagMulticast == 0 {
		return 0, fmt.Errorf("interface %q has no MULTICAST flag", name)
	}
	return ifi.Index, nil
}

// joinGroups joins each group on the interface given by index or (IPv4) address.
func joinGroups(conn *net.UDPConn, groups []netip.Addr, ifindex int, ifaddr netip.Addr) error {
	if len(groups) == 0 {
		return nil
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		return fmt.Errorf("join multicast groups: %w", err)
	}
	return controlErr(rc, func(fd int) error {
		for _, g := range groups {
			if err := joinGroup(fd, g, ifindex, ifaddr); err != nil {
				return fmt.Errorf("join multicast group %s: %w", g, err)
			}
		}
		return nil
	})
}

// joinGroup adds one membership.
func joinGroup(fd int, g netip.Addr, ifindex int, ifaddr netip.Addr) error {
	if g.Is6() {
		mreq := &unix.IPv6Mreq{Multiaddr: g.As16(), Interface: uint32(ifindex)}
		return unix.SetsockoptIPv6Mreq(fd, unix.IPPROTO_IPV6, unix.IPV6_JOIN_GROUP, mreq)
	}
	mreq := &unix.IPMreqn{Multiaddr: g.As4(), Ifindex: int32(ifindex)}
	if ifaddr.IsValid() {
		mreq.Address = ifaddr.As4()
	}
	err := unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, mreq)
	if errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("%w (no interface named, and no route to the group: give Interface)", err)
	}
	return err
}
