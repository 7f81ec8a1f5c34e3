package udp

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// Defaults for the zero values of Config.
const (
	DefaultBatchSize  = 64
	DefaultPacketSize = 9000
	// MaxBatchSize is the kernel's limit on one recvmmsg call (UIO_MAXIOV).
	MaxBatchSize = 1024
)

// ErrNotSupported is returned by Open on platforms without Linux's socket options.
var ErrNotSupported = errors.New("udp ingest needs Linux (recvmmsg, SO_RXQ_OVFL, SO_REUSEPORT)")

// Config says where and how a Receiver listens. The zero value of each optional field takes
// its default.
type Config struct {
	// Address is the local address to bind; the zero value binds the IPv4 wildcard (or the
	// IPv6 one when the groups are IPv6). With multicast groups it must be the wildcard.
	Address netip.Addr
	// Ports are the UDP ports to listen on (0 lets the kernel choose one; see Receiver.Sockets).
	Ports []uint16
	// SocketsPerPort is the number of sockets, each with its own receive goroutine, bound to
	// each port with SO_REUSEPORT (default 1).
	SocketsPerPort int
	// LockOSThread locks each receive goroutine to its own OS thread.
	LockOSThread bool
	// CPUs pins the receive threads: socket i's (in the order of Receiver.Sockets) to
	// CPUs[i mod len(CPUs)], each CPU one this process may run on. Empty leaves the threads
	// to the scheduler.
	CPUs []int
	// Groups are multicast groups to join, shared out among the sockets of each port.
	Groups []netip.Addr
	// Interface names the interface the groups are joined on (e.g. "eth1").
	Interface string
	// InterfaceAddr names that interface by its IPv4 address instead (IPv4 groups only).
	InterfaceAddr netip.Addr
	// RecvBufferBytes is the socket receive buffer to request (0 keeps the kernel's default).
	RecvBufferBytes int
	// RequireRecvBuffer makes Open fail with a *BufferError when the kernel gives less than
	// RecvBufferBytes; otherwise the shortfall is recorded (Receiver.BufferErr).
	RequireRecvBuffer bool
	// BatchSize is the number of datagrams one recvmmsg call may return (default 64).
	BatchSize int
	// PacketSize is the largest datagram payload accepted, in bytes (default 9000); a longer
	// one is counted as truncated.
	PacketSize int
	// Gather is the longest a receive loop sleeps to let datagrams gather in its socket
	// before it reads them, when the stream fills less than a batch between reads (default
	// DefaultGather; negative reads each datagram as it arrives). It trades at most that
	// much latency for a wake-up per batch instead of one per datagram or two.
	Gather time.Duration
}

// withDefaults returns c with the zero values of its optional fields replaced.
func (c Config) withDefaults() Config {
	if c.SocketsPerPort == 0 {
		c.SocketsPerPort = 1
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.PacketSize == 0 {
		c.PacketSize = DefaultPacketSize
	}
	if c.Gather == 0 {
		c.Gather = DefaultGather
	}
	if !c.Address.IsValid() {
		c.Address = netip.IPv4Unspecified()
		if len(c.Groups) > 0 && c.Groups[0].Is6() {
			c.Address = netip.IPv6Unspecified()
		}
	}
	return c
}

// Validate reports the first field that cannot work, after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case len(c.Ports) == 0:
		return errors.New("udp config: no ports")
	case c.SocketsPerPort < 0, c.BatchSize < 0, c.PacketSize < 0, c.RecvBufferBytes < 0:
		return errors.New("udp config: SocketsPerPort, BatchSize, PacketSize and RecvBufferBytes must not be negative")
	case c.Gather > time.Second:
		return fmt.Errorf("udp config: Gather %s: at most 1s (a socket buffer holds milliseconds of a stream)", c.Gather)
	case c.BatchSize > MaxBatchSize:
		return fmt.Errorf("udp config: BatchSize %d exceeds the kernel's %d messages per recvmmsg", c.BatchSize, MaxBatchSize)
	case c.PacketSize > 65535:
		return fmt.Errorf("udp config: PacketSize %d exceeds the largest UDP payload (65535)", c.PacketSize)
	case slices.ContainsFunc(c.CPUs, func(n int) bool { return n < 0 }):
		return fmt.Errorf("udp config: CPUs %v: CPU numbers are not negative", c.CPUs)
	case c.Interface != "" && c.InterfaceAddr.IsValid():
		return errors.New("udp config: give Interface or InterfaceAddr, not both")
	case c.InterfaceAddr.IsValid() && !c.InterfaceAddr.Is4():
		return fmt.Errorf("udp config: InterfaceAddr %s is not IPv4 (name an IPv6 interface by Interface)", c.InterfaceAddr)
	}
	return c.validateGroups()
}

// validateGroups checks the multicast groups against the address and the sockets per port.
func (c Config) validateGroups() error {
	if len(c.Groups) == 0 {
		return nil
	}
	if !c.Address.IsUnspecified() {
		return fmt.Errorf("udp config: with multicast groups bind the wildcard address, not %s (name the interface with Interface or InterfaceAddr)", c.Address)
	}
	for _, g := range c.Groups {
		if !g.IsMulticast() {
			return fmt.Errorf("udp config: group %s is not a multicast address", g)
		}
		if g.Is4() != c.Address.Is4() {
			return fmt.Errorf("udp config: group %s and address %s are of different IP versions", g, c.Address)
		}
	}
	return nil
}

// groupsFor returns the groups socket k of a port joins: k, k+n, k+2n, ...
func (c Config) groupsFor(k int) []netip.Addr {
	var gs []netip.Addr
	for i := k; i < len(c.Groups); i += c.SocketsPerPort {
		gs = append(gs, c.Groups[i])
	}
	return gs
}

// cpuFor is the CPU socket i's receive thread is pinned to, if any.
func (c Config) cpuFor(i int) (cpu int, pinned bool) {
	if len(c.CPUs) == 0 {
		return 0, false
	}
	return c.CPUs[i%len(c.CPUs)], true
}
