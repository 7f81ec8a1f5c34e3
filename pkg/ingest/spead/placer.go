package spead

import "math/bits"

// Placement is where a packet's payload goes in the stream.
type Placement struct {
	Offset uint64 // stream byte of the payload's first placed byte
	Length uint64 // payload bytes placed
	Heap   uint64 // the heap's slot: heap index * groups + group
	// Skip is how many bytes at the payload's start are not placed: the
	// descriptors ahead of the data in a heap that carries both.
	Skip uint64
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
	leads    [leadSlots]lead
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
	heap, lead, err := pl.heapSizeOf(p)
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
	return pl.offset(index, group, p, heap, lead)
}

// heapSizeOf checks p's heap against the rule's heap size (learning it from
// the first packet that has one when the rule gives none) and returns it with
// the bytes of descriptors that lead the data in a heap larger by as many
// (leading).
func (pl *Placer) heapSizeOf(p *Packet) (size, lead uint64, err error) {
	whole := pl.heapSize
	switch {
	case p.HasHeapSize && pl.heapSize == 0:
		pl.heapSize, whole = p.HeapSize, p.HeapSize
	case p.HasHeapSize && p.HeapSize > pl.heapSize && pl.leading(p, p.HeapSize-pl.heapSize):
		whole, lead = p.HeapSize, p.HeapSize-pl.heapSize
	case p.HasHeapSize && p.HeapSize != pl.heapSize:
		return 0, 0, errHeapSize
	case !p.HasHeapSize && pl.heapSize == 0:
		return 0, 0, errNoHeapSize
	}
	if p.HeapOffset > whole || p.PayloadLength > whole-p.HeapOffset {
		return 0, 0, errPastHeap
	}
	if lead > 0 && p.HeapOffset+p.PayloadLength <= lead {
		return 0, 0, errDescriptorsOnly
	}
	return pl.heapSize, lead, nil
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
// overflow; the heap offset counts from the data's start in a heap led by
// descriptors.
func (pl *Placer) offset(index, group uint64, p *Packet, heap, lead uint64) (Placement, error) {
	heapOffset, skip, _ := trimLead(p, lead)
	hi, slot := bits.Mul64(index, pl.groups)
	slot, carry := bits.Add64(slot, group, 0)
	if hi != 0 || carry != 0 {
		return Placement{}, errOverflow
	}
	hi, start := bits.Mul64(slot, heap)
	start, carry = bits.Add64(start, heapOffset, 0)
	_, c2 := bits.Add64(start, p.PayloadLength-skip, 0)
	if hi != 0 || carry != 0 || c2 != 0 {
		return Placement{}, errOverflow
	}
	return Placement{Offset: start, Length: p.PayloadLength - skip, Heap: slot, Skip: skip}, nil
}
