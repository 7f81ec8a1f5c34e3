package stream

import (
	"sync/atomic"

	"github.com/ringcap/ringcap/pkg/ingest/assemble"
)

// Counters are a pipeline's cumulative counts, ready for a status endpoint
// and metrics. Every packet handed to the pipeline is counted in Packets and
// under exactly one outcome:
//
//	Packets = Received + Late + OutOfWindow + Duplicate + Malformed + Invalid + OutOfRange + BeforeStart + Control
//
// Received, Late, OutOfWindow and Duplicate are the assembler's; Malformed
// is the assembler's too (the pipeline reports the packets its decoder or
// placer found malformed there, so that one count holds them all).
type Counters struct {
	Packets     uint64 // packets handed to the pipeline
	PlacedBytes uint64 // payload bytes written into the ring (Assemble.ReceivedBytes)
	Received    uint64 // packets written into the ring
	Late        uint64 // for a block already handed over
	OutOfWindow uint64 // too far ahead of the reorder window
	Duplicate   uint64 // overlapping bytes already present
	Malformed   uint64 // not well-formed, or breaking the rule's assumptions
	Invalid     uint64 // VDIF frames their sender flagged invalid
	OutOfRange  uint64 // well-formed but not placed by the rule (a channel or thread it does not name)
	BeforeStart uint64 // before the observation's first timestamp or second
	Control     uint64 // SPEAD heaps of descriptors or stream control without the timestamp item: not data
	// Stops are the SPEAD stream-stop packets (stream control item 0x6 = 2),
	// counted among Control too.
	Stops uint64
	// Newest is the stream's newest placed time: the SPEAD timestamp item's
	// value, or the VDIF frame's Unix second; 0 before the first packet.
	Newest uint64
	// Assemble are the assembler's own counts (ZeroFilled, Blocks, ...).
	Assemble assemble.Counters
}

// Outcomes is the sum of the outcomes; it equals Packets once no packet is
// being handled.
func (c Counters) Outcomes() uint64 {
	return c.Received + c.Late + c.OutOfWindow + c.Duplicate + c.Malformed + c.Invalid + c.OutOfRange + c.BeforeStart + c.Control
}

// counters are the pipeline's own live counts.
type counters struct {
	packets, invalid, outOfRange, beforeStart, control, stops, newest atomic.Uint64
}

// Snapshot returns the counts now; it may be called from any goroutine. Each
// count is read atomically, not all at once: while a packet is being handled,
// Packets and Outcomes may differ by it.
func (p *Pipeline) Snapshot() Counters {
	packets := p.c.packets.Load()
	a := p.asm.Snapshot()
	return Counters{
		Packets: packets, PlacedBytes: a.ReceivedBytes, Received: a.Received, Late: a.Late,
		OutOfWindow: a.OutOfWindow, Duplicate: a.Duplicate, Malformed: a.Malformed,
		Invalid: p.c.invalid.Load(), OutOfRange: p.c.outOfRange.Load(), BeforeStart: p.c.beforeStart.Load(),
		Control: p.c.control.Load(), Stops: p.c.stops.Load(), Newest: p.c.newest.Load(),
		Assemble: a,
	}
}

// Stops is the number of SPEAD stream-stop packets so far (Counters.Stops),
// cheaper than a Snapshot; any goroutine.
func (p *Pipeline) Stops() uint64 { return p.c.stops.Load() }

// Packets is the number of packets handed to the pipeline so far; any
// goroutine.
func (p *Pipeline) Packets() uint64 { return p.c.packets.Load() }
