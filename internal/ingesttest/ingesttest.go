// Package ingesttest builds SPEAD packets and VDIF frames for tests, written
// from the formats' public specifications: a test can make a stream of
// packets, then drop, duplicate, reorder or corrupt them.
package ingesttest

import (
	"encoding/binary"

	"github.com/ringcap/ringcap/pkg/ingest/spead"
	"github.com/ringcap/ringcap/pkg/ingest/vdif"
)

// SPEAD builds a SPEAD-64-48 (addrBits 48) or SPEAD-64-40 (40) packet: the
// 8-byte header (magic, version, item identifier bytes, heap address bytes, 2
// reserved bytes, the item count), the big-endian 64-bit item pointers in
// order, then the payload.
func SPEAD(addrBits int, items []spead.Item, payload []byte) []byte {
	b := make([]byte, spead.HeaderSize, spead.HeaderSize+len(items)*spead.PointerSize+len(payload))
	b[0], b[1] = spead.Magic, spead.Version
	b[2], b[3] = byte(8-addrBits/8), byte(addrBits/8)
	binary.BigEndian.PutUint16(b[6:], uint16(len(items)))
	for _, it := range items {
		b = binary.BigEndian.AppendUint64(b, pointer(addrBits, it))
	}
	return append(b, payload...)
}

// pointer encodes one item pointer: mode bit, ID, value.
func pointer(addrBits int, it spead.Item) uint64 {
	v := uint64(it.ID)<<addrBits | it.Value&(1<<addrBits-1)
	if it.Immediate {
		v |= 1 << 63
	}
	return v
}

// Imm is an immediate item.
func Imm(id uint32, v uint64) spead.Item { return spead.Item{ID: id, Immediate: true, Value: v} }

// SPEADHeap is a data packet of heap cnt (heap size size) carrying payload at
// heap offset off: the four standard items, then extra items.
func SPEADHeap(addrBits int, cnt, size, off uint64, payload []byte, extra ...spead.Item) []byte {
	items := []spead.Item{Imm(spead.HeapCounterID, cnt), Imm(spead.HeapSizeID, size),
		Imm(spead.HeapOffsetID, off), Imm(spead.PayloadLengthID, uint64(len(payload)))}
	return SPEAD(addrBits, append(items, extra...), payload)
}

// VDIF builds a frame: h's fields in the header words (16 bytes when
// h.Legacy, else 32), then data. The frame length field is set from the
// header size and len(data) unless h.FrameUnits is non-zero.
func VDIF(h vdif.Header, data []byte) []byte {
	hb := h.HeaderBytes()
	units := h.FrameUnits
	if units == 0 {
		units = uint32((hb + len(data)) / 8)
	}
	b := make([]byte, hb, hb+len(data))
	w0 := h.Seconds & (1<<30 - 1)
	if h.Invalid {
		w0 |= 1 << 31
	}
	if h.Legacy {
		w0 |= 1 << 30
	}
	w1 := uint32(h.RefEpoch&63)<<24 | h.FrameNumber&(1<<24-1)
	w2 := uint32(h.Version&7)<<29 | uint32(h.Log2Channels&31)<<24 | units&(1<<24-1)
	w3 := uint32(h.BitsMinus1&31)<<26 | uint32(h.ThreadID&1023)<<16 | uint32(h.StationID)
	if h.Complex {
		w3 |= 1 << 31
	}
	for i, w := range []uint32{w0, w1, w2, w3} {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	if !h.Legacy {
		for i, w := range h.Extended {
			binary.LittleEndian.PutUint32(b[16+4*i:], w)
		}
	}
	return append(b, data...)
}

// Pattern returns n bytes of a test stream from stream offset off: byte i is
// a hash of off+i, never 0, so a byte out of place or a zero-filled gap shows.
func Pattern(off uint64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = PatternByte(off + uint64(i))
	}
	return b
}

// PatternByte is byte off of Pattern's stream.
func PatternByte(off uint64) byte {
	x := off*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	x ^= x >> 29
	return byte(x%255) + 1
}
