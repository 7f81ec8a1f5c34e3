package udp

import "net/netip"

// Packet is one datagram as its receive goroutine hands it on.
type Packet struct {
	// Data is the payload; it is valid only until the Handler returns (the slot is reused).
	Data []byte
	// Source is the sender's address and port.
	Source netip.AddrPort
	// Socket is the index of the receiving socket in Receiver.Sockets.
	Socket int
}

// Handler is called for each datagram, from the receiving socket's goroutine: handlers for
// different sockets run concurrently, those for one socket in arrival order. A Handler must
// not call Receiver.Close (Close waits for the handlers to return).
type Handler func(Packet)

// SocketInfo describes one open socket.
type SocketInfo struct {
	// Local is the bound address and port (the port the kernel chose for port 0).
	Local netip.AddrPort
	// Groups are the multicast groups this socket joined.
	Groups []netip.Addr
	// RecvBuffer is the receive buffer the kernel gave, in bytes.
	RecvBuffer int
	// BufferErr is a *BufferError when RecvBuffer fell short of Config.RecvBufferBytes.
	BufferErr error
	// Pinned says whether its receive thread is pinned (Config.CPUs), to CPU.
	Pinned bool
	// CPU is the CPU its receive thread is pinned to, when Pinned.
	CPU int
}
