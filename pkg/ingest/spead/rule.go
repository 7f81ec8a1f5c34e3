package spead

import (
	"errors"
	"fmt"
)

// Range is a channel (or frequency) item's values: First, First+Step, ...,
// Count of them. Each value is one channel group.
type Range struct {
	First uint64
	Step  uint64
	Count uint64
}

// Rule says where a stream's heaps go. Heaps of one channel group follow each
// other every TimestampStep; the channel groups of one timestamp are
// interleaved in the order of the range: the heap of timestamp t and channel
// value c lands at heap slot ((t-first)/TimestampStep)*groups + group(c), and
// each slot is HeapSize bytes.
type Rule struct {
	// TimestampID is the immediate item whose value orders the heaps, e.g.
	// an ADC sample count; HeapCounterID places by heap counter.
	TimestampID uint32
	// TimestampStep is the timestamp increment between consecutive heaps of
	// one channel group.
	TimestampStep uint64
	// ChannelID is the immediate item that names a heap's channel group; 0
	// when the stream has one group.
	ChannelID uint32
	// Channels is ChannelID's range; unused when ChannelID is 0.
	Channels Range
	// HeapSize is every heap's size in bytes; 0 takes it from the first
	// packet's heap size item.
	HeapSize uint64
}

// Validate checks that the rule can place packets.
func (r Rule) Validate() error {
	switch {
	case r.TimestampID == 0:
		return errors.New("the rule names no timestamp item")
	case r.TimestampStep == 0:
		return errors.New("the timestamp step per heap is 0")
	case r.ChannelID != 0 && r.Channels.Count == 0:
		return fmt.Errorf("channel item 0x%x has an empty range", r.ChannelID)
	case r.ChannelID != 0 && r.Channels.Count > 1 && r.Channels.Step == 0:
		return fmt.Errorf("channel item 0x%x has %d values but a step of 0", r.ChannelID, r.Channels.Count)
	case r.ChannelID != 0 && r.ChannelID == r.TimestampID:
		return fmt.Errorf("item 0x%x is both the timestamp and the channel", r.ChannelID)
	case r.ChannelID >= HeapCounterID && r.ChannelID <= PayloadLengthID:
		return fmt.Errorf("channel item 0x%x is a standard item", r.ChannelID)
	case r.TimestampID >= HeapSizeID && r.TimestampID <= PayloadLengthID:
		return fmt.Errorf("timestamp item 0x%x is a standard item other than the heap counter", r.TimestampID)
	}
	return nil
}

// Groups is the number of channel groups per timestamp.
func (r Rule) Groups() uint64 {
	if r.ChannelID == 0 {
		return 1
	}
	return r.Channels.Count
}
