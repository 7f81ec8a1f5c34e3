package spead

import "encoding/binary"

// The tests' encoder, written from the specification: an 8-byte header
// (magic, version, item identifier bytes, heap address bytes, 2 reserved
// bytes, the item count), big-endian 64-bit item pointers (mode bit, ID,
// value), then the payload.

// encode builds a packet of the flavour with addrBits heap address bits.
func encode(addrBits int, items []Item, payload []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(items)*PointerSize+len(payload))
	b[0], b[1] = Magic, Version
	b[2], b[3] = byte(8-addrBits/8), byte(addrBits/8)
	binary.BigEndian.PutUint16(b[6:], uint16(len(items)))
	for _, it := range items {
		b = binary.BigEndian.AppendUint64(b, pointer(addrBits, it))
	}
	return append(b, payload...)
}

// pointer encodes one item pointer.
func pointer(addrBits int, it Item) uint64 {
	v := uint64(it.ID)<<addrBits | it.Value&(1<<addrBits-1)
	if it.Immediate {
		v |= 1 << 63
	}
	return v
}

// imm is an immediate item.
func imm(id uint32, v uint64) Item { return Item{ID: id, Immediate: true, Value: v} }

// heapPacket is a data packet: the four standard items, then extra items.
func heapPacket(addrBits int, cnt, size, off uint64, payload []byte, extra ...Item) []byte {
	items := []Item{imm(HeapCounterID, cnt), imm(HeapSizeID, size), imm(HeapOffsetID, off), imm(PayloadLengthID, uint64(len(payload)))}
	return encode(addrBits, append(items, extra...), payload)
}
