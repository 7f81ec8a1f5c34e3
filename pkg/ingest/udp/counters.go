package udp

import "sync/atomic"

// Counters are one socket's counts, updated once per batch by its receive goroutine and
// read atomically by anyone (e.g. a metrics exporter).
type Counters struct {
	// Packets were handed to the Handler; Bytes are their payload bytes.
	Packets, Bytes atomic.Uint64
	// Batches are recvmmsg calls that returned at least one datagram.
	Batches atomic.Uint64
	// KernelDrops are datagrams the kernel dropped because the socket buffer was full
	// (SO_RXQ_OVFL), as of the last datagram received.
	KernelDrops atomic.Uint64
	// Truncated datagrams were longer than Config.PacketSize and not handed on.
	Truncated atomic.Uint64
	// Errors are failed receive calls (other than the socket being closed).
	Errors atomic.Uint64
	_      [16]byte // keep two sockets' counters off one cache line
}

// Stats is a snapshot of Counters, or their sum over sockets.
type Stats struct {
	Packets, Bytes, Batches, KernelDrops, Truncated, Errors uint64
}

// Load returns a snapshot of c.
func (c *Counters) Load() Stats {
	return Stats{
		Packets: c.Packets.Load(), Bytes: c.Bytes.Load(), Batches: c.Batches.Load(),
		KernelDrops: c.KernelDrops.Load(), Truncated: c.Truncated.Load(), Errors: c.Errors.Load(),
	}
}

// Add returns the field-wise sum of s and o.
func (s Stats) Add(o Stats) Stats {
	return Stats{
		Packets: s.Packets + o.Packets, Bytes: s.Bytes + o.Bytes, Batches: s.Batches + o.Batches,
		KernelDrops: s.KernelDrops + o.KernelDrops, Truncated: s.Truncated + o.Truncated, Errors: s.Errors + o.Errors,
	}
}

// Accounted is every datagram the sockets were sent that is known of: handed on, truncated
// or dropped by the kernel.
func (s Stats) Accounted() uint64 { return s.Packets + s.Truncated + s.KernelDrops }
