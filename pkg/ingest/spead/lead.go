package spead

// DescriptorID is the item of an item descriptor, the metadata a sender puts in
// heaps of their own or ahead of the data in a heap (as spead2's senders do in
// their first heap).
const DescriptorID = 0x5

// leadSlots is how many recent heaps the placer remembers as carrying
// descriptors ahead of their data.
const leadSlots = 4

// lead is a heap whose payload starts with descriptors: its data, of the
// rule's heap size, begins at byte bytes of the heap's payload.
type lead struct {
	counter, bytes uint64
	valid          bool
}

// leading returns how many bytes lead the data of p's heap, which is larger
// than the rule's heap size by extra: the heap was seen (now or in an earlier
// packet) to put descriptors and nothing else before one item at byte extra
// that runs to the heap's end. Other larger heaps are not placed.
func (pl *Placer) leading(p *Packet, extra uint64) bool {
	s := &pl.leads[p.HeapCounter%leadSlots]
	if s.valid && s.counter == p.HeapCounter {
		return s.bytes == extra
	}
	if !descriptorsLead(p, extra) {
		return false
	}
	*s = lead{counter: p.HeapCounter, bytes: extra, valid: true}
	return true
}

// descriptorsLead reports whether p's item pointers lay its heap out as
// descriptors before byte extra and one addressed item from there on.
func descriptorsLead(p *Packet, extra uint64) bool {
	var desc, data bool
	for _, it := range p.Items() {
		switch {
		case it.Immediate:
		case it.Value == extra && !data && it.ID != DescriptorID:
			data = true
		case it.Value < extra && it.ID == DescriptorID:
			desc = true
		default:
			return false
		}
	}
	return desc && data
}

// trimLead cuts the descriptor bytes off the front of a packet of a heap
// whose data starts at byte lead: it returns the heap offset of the packet's
// first data byte (counted from the data's start) and how many payload bytes
// to skip; ok is false when the packet carries descriptors only.
func trimLead(p *Packet, lead uint64) (offset, skip uint64, ok bool) {
	if p.HeapOffset+p.PayloadLength <= lead {
		return 0, 0, false
	}
	if p.HeapOffset >= lead {
		return p.HeapOffset - lead, 0, true
	}
	return 0, lead - p.HeapOffset, true
}
