//go:build linux

package udp

import (
	"encoding/binary"
	"net/netip"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// oobSize is the control buffer per datagram: room for SO_RXQ_OVFL's uint32 and more.
var oobSize = unix.CmsgSpace(4) * 4

// batch is one socket's preallocated recvmmsg state: message headers, their iovecs, source
// address and control buffers, and the datagram slots, all allocated once.
type batch struct {
	msgs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6 // large enough for a sockaddr_in too
	oob   []byte
	slots []byte
	slot  int // bytes per datagram slot

	n         int           // datagrams the last call returned
	errno     syscall.Errno // the last call's error
	lastDrops uint32        // the kernel's drop counter as last seen
}

// newBatch allocates size slots of packetSize bytes and points the headers at them.
func newBatch(size, packetSize int) *batch {
	b := &batch{
		msgs:  make([]unix.Mmsghdr, size),
		iovs:  make([]unix.Iovec, size),
		names: make([]unix.RawSockaddrInet6, size),
		oob:   make([]byte, size*oobSize),
		slots: make([]byte, size*packetSize),
		slot:  packetSize,
	}
	for i := range b.msgs {
		b.iovs[i].Base = &b.slots[i*packetSize]
		b.iovs[i].SetLen(packetSize)
		h := &b.msgs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&b.names[i]))
		h.Iov = &b.iovs[i]
		h.SetIovlen(1)
		h.Control = &b.oob[i*oobSize]
		b.reset(i)
	}
	return b
}

// recv is one recvmmsg on the blocking descriptor fd with flags: with MSG_WAITFORONE it
// sleeps until a datagram arrives and returns it with those already queued behind it, up
// to the batch; with MSG_DONTWAIT it returns what is queued (EAGAIN when nothing is).
func (b *batch) recv(fd, flags int) {
	for i := range b.n { // the kernel rewrote only the headers it filled
		b.reset(i)
	}
	n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.msgs[0])), uintptr(len(b.msgs)), uintptr(flags), 0, 0)
	runtime.KeepAlive(b)
	b.n, b.errno = int(n), e
	if e != 0 {
		b.n = 0
		for i := range b.msgs {
			b.reset(i)
		}
	}
}

// reset restores the lengths the kernel overwrites in message i.
func (b *batch) reset(i int) {
	h := &b.msgs[i].Hdr
	h.Namelen = unix.SizeofSockaddrInet6
	h.SetControllen(oobSize)
	h.Flags = 0
}

// deliver hands the last call's datagrams to h and returns the batch's counts.
func (b *batch) deliver(h Handler, socket int) batchCounts {
	var c batchCounts
	for i := range b.n {
		m := &b.msgs[i]
		if drops, ok := dropCounter(b.oob[i*oobSize : i*oobSize+int(m.Hdr.Controllen)]); ok {
			c.drops += uint64(drops - b.lastDrops) // the kernel's counter wraps at 2^32
			b.lastDrops = drops
		}
		if m.Hdr.Flags&unix.MSG_TRUNC != 0 {
			c.truncated++
			continue
		}
		c.packets++
		c.bytes += uint64(m.Len)
		h(Packet{Data: b.slots[i*b.slot : i*b.slot+int(m.Len)], Source: sourceOf(&b.names[i]), Socket: socket})
	}
	return c
}

// dropCounter finds SO_RXQ_OVFL's counter in one datagram's control messages.
func dropCounter(oob []byte) (uint32, bool) {
	hdrLen := unix.CmsgLen(0)
	for len(oob) >= hdrLen {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdrLen || l > len(oob) {
			return 0, false
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SO_RXQ_OVFL && l >= hdrLen+4 {
			return binary.NativeEndian.Uint32(oob[hdrLen:]), true
		}
		next := unix.CmsgSpace(l - hdrLen)
		if next > len(oob) {
			return 0, false
		}
		oob = oob[next:]
	}
	return 0, false
}

// sourceOf converts a sockaddr_in or sockaddr_in6 without allocating.
func sourceOf(sa *unix.RawSockaddrInet6) netip.AddrPort {
	port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
	if sa.Family == unix.AF_INET {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), port)
	}
	return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), port)
}

// batchCounts accumulates one batch's counts in the receive goroutine before one atomic add
// per field.
type batchCounts struct{ packets, bytes, drops, truncated uint64 }

// add publishes one batch.
func (c *Counters) add(b batchCounts) {
	c.Batches.Add(1)
	if b.packets > 0 {
		c.Packets.Add(b.packets)
		c.Bytes.Add(b.bytes)
	}
	if b.drops > 0 {
		c.KernelDrops.Add(b.drops)
	}
	if b.truncated > 0 {
		c.Truncated.Add(b.truncated)
	}
}
