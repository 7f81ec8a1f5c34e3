package vdif

import "encoding/binary"

// The tests' encoder, written from the specification's word layout.

// encode builds a frame: h's fields in the header words, then data. The
// frame length field is set from the header size and len(data) unless
// h.FrameUnits is non-zero.
func encode(h Header, data []byte) []byte {
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
