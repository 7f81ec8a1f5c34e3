package spead

import "encoding/binary"

// Header constants of SPEAD version 4.
const (
	Magic       = 0x53 // the first byte of every packet ('S')
	Version     = 4    // the second byte
	HeaderSize  = 8    // bytes before the item pointers
	PointerSize = 8    // bytes per item pointer (64-bit flavours only)
	// MaxItems is the number of item pointers a Packet holds; a packet with
	// more is rejected (data packets carry a handful).
	MaxItems = 64
)

// The standard item IDs.
const (
	HeapCounterID   = 0x1
	HeapSizeID      = 0x2
	HeapOffsetID    = 0x3
	PayloadLengthID = 0x4
)

// Item is one item pointer. An immediate item's Value is the item's value;
// an addressed item's Value is the offset of its data in the heap's payload.
type Item struct {
	ID        uint32
	Immediate bool
	Value     uint64
}

// Packet is one decoded SPEAD packet. Decode fills it in place; Payload is a
// sub-slice of the decoded bytes, valid as long as they are.
type Packet struct {
	// HeapAddressBits is 48 (SPEAD-64-48) or 40 (SPEAD-64-40).
	HeapAddressBits int
	HeapCounter     uint64
	HeapSize        uint64 // valid when HasHeapSize
	HasHeapSize     bool
	HeapOffset      uint64 // where Payload starts in the heap
	PayloadLength   uint64
	Payload         []byte
	n               int
	items           [MaxItems]Item
}

// Items returns the packet's item pointers in order, standard items included.
// The slice shares the Packet's storage.
func (p *Packet) Items() []Item { return p.items[:p.n] }

// Lookup returns the first item with the given ID.
func (p *Packet) Lookup(id uint32) (Item, bool) {
	for i := range p.n {
		if p.items[i].ID == id {
			return p.items[i], true
		}
	}
	return Item{}, false
}

// Immediate returns the value of the first item with the given ID if it is
// immediate.
func (p *Packet) Immediate(id uint32) (uint64, bool) {
	it, ok := p.Lookup(id)
	if !ok || !it.Immediate {
		return 0, false
	}
	return it.Value, true
}

// Decode decodes one SPEAD packet b into p. On error p holds no valid packet.
func Decode(b []byte, p *Packet) error {
	n, err := decodeHeader(b, p)
	if err != nil {
		return err
	}
	var seen uint8
	for i := range n {
		it := p.decodePointer(binary.BigEndian.Uint64(b[HeaderSize+i*PointerSize:]))
		p.items[i] = it
		if err := p.standard(it, &seen); err != nil {
			return err
		}
	}
	if err := p.checkPayload(b[HeaderSize+n*PointerSize:], seen); err != nil {
		return err
	}
	p.n = n
	return nil
}

// decodeHeader checks the 8-byte header and returns the number of item
// pointers, which fit in b and in p.
func decodeHeader(b []byte, p *Packet) (int, error) {
	p.n, p.Payload = 0, nil
	if len(b) < HeaderSize {
		return 0, errShort
	}
	switch {
	case b[0] != Magic:
		return 0, errMagic
	case b[1] != Version:
		return 0, errVersion
	case b[2] == 2 && b[3] == 6:
		p.HeapAddressBits = 48
	case b[2] == 3 && b[3] == 5:
		p.HeapAddressBits = 40
	default:
		return 0, errWidths
	}
	n := int(binary.BigEndian.Uint16(b[6:8]))
	if HeaderSize+n*PointerSize > len(b) {
		return 0, errItemsPast
	}
	if n > MaxItems {
		return 0, errTooMany
	}
	return n, nil
}

// decodePointer splits a 64-bit item pointer: the mode bit, the ID and the
// heap-address bits.
func (p *Packet) decodePointer(v uint64) Item {
	mask := uint64(1)<<p.HeapAddressBits - 1
	return Item{
		ID:        uint32((v &^ (1 << 63)) >> p.HeapAddressBits),
		Immediate: v>>63 == 1,
		Value:     v & mask,
	}
}

// standard records it if it is one of the standard items; seen has bit id
// set for each one met.
func (p *Packet) standard(it Item, seen *uint8) error {
	if it.ID < HeapCounterID || it.ID > PayloadLengthID {
		return nil
	}
	if !it.Immediate {
		return errNotImm
	}
	if *seen&(1<<it.ID) != 0 {
		return errRepeated
	}
	*seen |= 1 << it.ID
	switch it.ID {
	case HeapCounterID:
		p.HeapCounter = it.Value
	case HeapSizeID:
		p.HeapSize = it.Value
	case HeapOffsetID:
		p.HeapOffset = it.Value
	case PayloadLengthID:
		p.PayloadLength = it.Value
	}
	return nil
}

// checkPayload checks that the mandatory items were there and that the
// payload is as long as they say and fits in the heap.
func (p *Packet) checkPayload(payload []byte, seen uint8) error {
	switch {
	case seen&(1<<HeapCounterID) == 0:
		return errNoCounter
	case seen&(1<<HeapOffsetID) == 0:
		return errNoOffset
	case seen&(1<<PayloadLengthID) == 0:
		return errNoLength
	case uint64(len(payload)) < p.PayloadLength:
		return errTruncated
	case uint64(len(payload)) > p.PayloadLength:
		return errLengthLong
	}
	p.HasHeapSize = seen&(1<<HeapSizeID) != 0
	if !p.HasHeapSize {
		p.HeapSize = 0
	} else if p.HeapOffset > p.HeapSize || p.PayloadLength > p.HeapSize-p.HeapOffset {
		return errPastHeap
	}
	p.Payload = payload
	return nil
}
