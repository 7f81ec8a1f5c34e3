// Package udp receives UDP datagrams for packet ingest (SPEAD, VDIF), independent of the
// packet format.
//
// A Receiver listens on one address and one or more ports, with several sockets per port
// (SO_REUSEPORT, one receive goroutine each, optionally locked to an OS thread), and joins
// IPv4 or IPv6 multicast groups on a named interface or by interface address. Each
// goroutine reads batches with recvmmsg into buffers allocated once at Open, so the steady
// state allocates nothing per packet, and hands each datagram to the Handler; the bytes are
// valid until the Handler returns.
//
// The sockets are taken out of Go's network poller: each goroutine sleeps in a blocking
// recvmmsg (MSG_WAITFORONE), so a datagram wakes one thread, where the poller would wake
// its own thread, then hand the goroutine to another. On a stream of small batches that
// halves the thread switches, which on virtual machines are the receiver's largest cost.
// Close shuts the sockets down for reading, which wakes the blocked calls.
//
// Every datagram the socket was sent is accounted for: Counters.Packets were handed to the
// Handler, Counters.Truncated were longer than Config.PacketSize (MSG_TRUNC) and not
// handed on, and Counters.KernelDrops were dropped by the kernel because the socket buffer
// was full (SO_RXQ_OVFL). The kernel reports its drop counter on the next datagram it
// queues, so drops after the last datagram show up only when another one arrives.
//
// The socket receive buffer is requested with SO_RCVBUF and, when net.core.rmem_max caps
// it, with SO_RCVBUFFORCE (CAP_NET_ADMIN); when the size obtained still falls short a
// *BufferError names the size wanted, the size obtained and the sysctl that raises the cap.
//
// With several sockets on one port the kernel spreads unicast datagrams over them by a hash
// of source and destination. For multicast, kernels differ: some hand a copy of each
// datagram to every socket on the port that joined its group (with IP_MULTICAST_ALL on, to
// every socket on the port), others (Linux 6.18, as the tests found) pick one socket of the
// SO_REUSEPORT group by the same hash, whichever joined. So the groups are shared out and
// IP_MULTICAST_ALL is turned off: socket k of a port joins groups k, k+n, k+2n, ... (n
// sockets per port), and either way each datagram reaches exactly one socket. Which socket
// that is depends on the kernel; a Handler must not assume it.
//
// The package is Linux only; elsewhere Open returns ErrNotSupported.
package udp
