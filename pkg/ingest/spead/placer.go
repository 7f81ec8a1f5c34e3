package spead

import "math/bits"

// Placement is where a packet's payload goes in the stream.
type Placement struct {
	Offset uint64 // stream byte of the payload's first byte
	Length uint64 // payload bytes
	Heap   uint64 // the heap's slot: heap index * groups + group
}

// Placer places the packets of one stream by a Rule. The first timestamp is
// set by Start or taken from the first packet placed. It keeps no per-packet
// state, allocates nothing and is not safe for concurrent use.
type Placer struct {
	rule     Rule
	groups   uint64
	heapSize uint64
	first    uint64
	started  bool
}

// NewPlacer returns a placer for rule r.
func NewPlacer(r Rule) (*Placer, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &Placer{rule: r, groups: r.Groups(), heapSize: r.HeapSize}, nil
}

// Start sets the timestamp of heap index 0 (an observation that starts at a
// given timestamp); packets before it are out of range.
func (pl *Placer) Start(timestamp uint64) { pl.first, pl.started = timestamp, true }

// First returns the timestamp of heap index 0, once known.
func (pl *Placer) First() (uint64, bool) { return pl.first, pl.started }

// HeapSize returns the heap size in use, once known.
func (pl *Placer) HeapSize() uint64 { return pl.heapSize }

// Place returns where p's payload goes.
func (pl *Placer) Place(p *Packet) (Placement, error) {
	ts, ok := p.Immediate(pl.rule.TimestampID)
	if !ok {
		return Placement{}, errNoTimestamp
	}
	group, err := pl.group(p)
	if err != nil {
		return Placement{}, err
	}
	heap, err := pl.heapSizeOf(p)
	if err != nil {
		return Placement{}, err
	}
	if !pl.started {
		pl.Start(ts)
	}
	if ts < pl.first {
		return Placement{}, errBeforeFirst
	}
	index, rem := bits.Div64(0, ts-pl.first, pl.rule.TimestampStep)
	if rem != 0 {
		return Placement{}, errOffGrid
	}
	return pl.offset(index, group, p, heap)
}

// heapSizeOf checks p's heap against the rule's heap size (learning it from
// the first packet that has one when the rule gives none).
func (pl *Placer) heapSizeOf(p *Packet) (uint64, error) {
	switch {
	case p.HasHeapSize && pl.heapSize == 0:
		pl.heapSize = p.HeapSize
	case p.HasHeapSize && p.HeapSize != pl.heapSize:
		return 0, errHeapSize
	case !p.HasHeapSize && pl.heapSize == 0:
		return 0, errNoHeapSize
	}
	if p.HeapOffset > pl.heapSize || p.PayloadLength > pl.heapSize-p.HeapOffset {
		return 0, errPastHeap
	}
	return pl.heapSize, nil
}

// group returns the channel group of p.
func (pl *Placer) group(p *Packet) (uint64, error) {
	if pl.rule.ChannelID == 0 {
		return 0, nil
	}
	c, ok := p.Immediate(pl.rule.ChannelID)
	if !ok {
		return 0, errNoChannel
	}
	r := pl.rule.Channels
	if c < r.First {
		return 0, errChannel
	}
	if r.Count == 1 {
		if c != r.First {
			return 0, errChannel
		}
		return 0, nil
	}
	g, rem := bits.Div64(0, c-r.First, r.Step)
	if rem != 0 || g >= r.Count {
		return 0, errChannel
	}
	return g, nil
}

// offset is (index*groups + group)*heapSize + heapOffset, checked for
// overflow.
func (pl *Placer) offset(index, group uint64, p *Packet, heap uint64) (Placement, error) {
	hi, slot := bits.Mul64(index, pl.groups)
	slot, carry := bits.Add64(slot, group, 0)
	if hi != 0 || carry != 0 {
		return Placement{}, errOverflow
	}
	hi, start := bits.Mul64(slot, heap)
	start, carry = bits.Add64(start, p.HeapOffset, 0)
	_, c2 := bits.Add64(start, p.PayloadLength, 0)
	if hi != 0 || carry != 0 || c2 != 0 {
		return Placement{}, errOverflow
	}
	return Placement{Offset: start, Length: p.PayloadLength, Heap: slot}, nil
}
