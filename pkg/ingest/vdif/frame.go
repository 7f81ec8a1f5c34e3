package vdif

import (
	"encoding/binary"
	"time"
)

// Header sizes.
const (
	HeaderSize       = 32 // a standard header
	LegacyHeaderSize = 16 // a legacy header (words 0 to 3)
)

// Header is a decoded VDIF header.
type Header struct {
	Invalid      bool
	Legacy       bool
	Seconds      uint32 // seconds from the reference epoch (30 bits)
	RefEpoch     uint8  // half-years since 2000-01-01 (6 bits)
	FrameNumber  uint32 // frame number within the second (24 bits)
	Version      uint8  // VDIF version (3 bits)
	Log2Channels uint8  // log2 of the number of channels (5 bits)
	FrameUnits   uint32 // frame length in 8-byte units, header included (24 bits)
	Complex      bool
	BitsMinus1   uint8  // bits per sample - 1 (5 bits)
	ThreadID     uint16 // 10 bits
	StationID    uint16
	// Extended holds words 4 to 7 (zero for a legacy header); the extended
	// data version is Extended[0]>>24.
	Extended [4]uint32
}

// Frame is one decoded VDIF frame; Data is a sub-slice of the decoded bytes.
type Frame struct {
	Header
	Data []byte
}

// HeaderBytes is 16 for a legacy header, 32 otherwise.
func (h *Header) HeaderBytes() int {
	if h.Legacy {
		return LegacyHeaderSize
	}
	return HeaderSize
}

// FrameBytes is the frame's length in bytes, header included.
func (h *Header) FrameBytes() int { return int(h.FrameUnits) * 8 }

// Channels is the number of channels in the data array.
func (h *Header) Channels() int { return 1 << h.Log2Channels }

// BitsPerSample is the bits per sample (of each part of a complex sample).
func (h *Header) BitsPerSample() int { return int(h.BitsMinus1) + 1 }

// EDV is the extended data version (0 for a legacy header).
func (h *Header) EDV() uint8 { return uint8(h.Extended[0] >> 24) }

// Time is the UTC time of the start of the frame's second: its reference
// epoch plus its seconds.
func (h *Header) Time() time.Time {
	return time.Unix(EpochUnix(h.RefEpoch)+int64(h.Seconds), 0).UTC()
}

// EpochUnix is the Unix time of reference epoch e: 1 January (e even) or
// 1 July (e odd) of year 2000 + e/2, UTC.
func EpochUnix(e uint8) int64 { return epochs[e&63] }

// epochs holds the 64 reference epochs' Unix times.
var epochs = func() (t [64]int64) {
	for e := range t {
		t[e] = time.Date(2000+e/2, time.Month(1+6*(e%2)), 1, 0, 0, 0, 0, time.UTC).Unix()
	}
	return t
}()

// Decode decodes the VDIF frame b (one packet holds one frame) into f. On
// error f holds no valid frame.
func Decode(b []byte, f *Frame) error {
	f.Data = nil
	if len(b) < LegacyHeaderSize {
		return errShort
	}
	h := &f.Header
	w0, w1 := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
	w2, w3 := binary.LittleEndian.Uint32(b[8:]), binary.LittleEndian.Uint32(b[12:])
	h.Invalid, h.Legacy, h.Seconds = w0>>31 == 1, w0>>30&1 == 1, w0&(1<<30-1)
	h.RefEpoch, h.FrameNumber = uint8(w1>>24&63), w1&(1<<24-1)
	h.Version, h.Log2Channels, h.FrameUnits = uint8(w2>>29), uint8(w2>>24&31), w2&(1<<24-1)
	h.Complex, h.BitsMinus1 = w3>>31 == 1, uint8(w3>>26&31)
	h.ThreadID, h.StationID = uint16(w3>>16&1023), uint16(w3)
	h.Extended = [4]uint32{}
	hb := h.HeaderBytes()
	if len(b) < hb {
		return errShort
	}
	if !h.Legacy {
		for i := range h.Extended {
			h.Extended[i] = binary.LittleEndian.Uint32(b[16+4*i:])
		}
	}
	switch {
	case h.FrameBytes() < hb:
		return errHeaderLong
	case h.FrameBytes() != len(b):
		return errFrameLength
	}
	f.Data = b[hb:]
	return nil
}
