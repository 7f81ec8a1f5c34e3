package assemble

import "sync/atomic"

// Counters are an assembler's cumulative counts. Every packet given to Put or
// reported with Malformed is counted in Packets and under exactly one of
// Received, Late, OutOfWindow, Duplicate and Malformed.
type Counters struct {
	Packets       uint64 // packets put or reported malformed
	Received      uint64 // packets written into the ring
	ReceivedBytes uint64 // payload bytes written into the ring
	Late          uint64 // for a block already handed over: not written
	OutOfWindow   uint64 // too far ahead of the window (or longer than it): dropped
	Duplicate     uint64 // overlapping bytes already present: not written
	Malformed     uint64 // rejected by the caller's decoder or placement rule, or past the byte space
	ZeroFilled    uint64 // bytes of handed-over blocks that no packet carried
	Blocks        uint64 // blocks handed to the ring
}

// counters are the live counts, written by the receive goroutine and read by
// Snapshot from any goroutine.
type counters struct {
	packets, received, receivedBytes, late, outOfWindow atomic.Uint64
	duplicate, malformed, zeroFilled, blocks            atomic.Uint64
}

// Snapshot returns the counts now. Each is read atomically; a packet being
// put at the same time may show in Packets before its outcome does.
func (a *Assembler) Snapshot() Counters {
	c := &a.c
	return Counters{
		Packets: c.packets.Load(), Received: c.received.Load(), ReceivedBytes: c.receivedBytes.Load(),
		Late: c.late.Load(), OutOfWindow: c.outOfWindow.Load(), Duplicate: c.duplicate.Load(),
		Malformed: c.malformed.Load(), ZeroFilled: c.zeroFilled.Load(), Blocks: c.blocks.Load(),
	}
}

// Malformed counts a packet the caller's decoder or placement rule rejected.
func (a *Assembler) Malformed() {
	a.c.packets.Add(1)
	a.c.malformed.Add(1)
}
