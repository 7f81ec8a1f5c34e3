package vdif_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/ingesttest"
	"github.com/ringcap/ringcap/pkg/ingest/vdif"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte{0xa5, 0x5a}, 4000)
	want := vdif.Header{
		Seconds: 1<<30 - 1, RefEpoch: 51, FrameNumber: 1<<24 - 1, Version: 7, Log2Channels: 31,
		Complex: true, BitsMinus1: 31, ThreadID: 1023, StationID: 0x4566,
		Extended: [4]uint32{0x02abcdef, 1, 2, 0xffffffff},
	}
	var f vdif.Frame
	if err := vdif.Decode(ingesttest.VDIF(want, data), &f); err != nil {
		t.Fatal(err)
	}
	want.FrameUnits = (32 + 8000) / 8
	if f.Header != want || !bytes.Equal(f.Data, data) {
		t.Errorf("decoded %+v, want %+v", f.Header, want)
	}
	if f.HeaderBytes() != 32 || f.FrameBytes() != 8032 || f.Channels() != 1<<31 || f.BitsPerSample() != 32 || f.EDV() != 2 {
		t.Errorf("header %d, frame %d, channels %d, bits %d, EDV %d", f.HeaderBytes(), f.FrameBytes(), f.Channels(), f.BitsPerSample(), f.EDV())
	}
}

func TestDecodeLegacy(t *testing.T) {
	t.Parallel()
	h := vdif.Header{Legacy: true, Invalid: true, Seconds: 7, ThreadID: 3, StationID: 'A'<<8 | 'B', Extended: [4]uint32{9, 9, 9, 9}}
	var f vdif.Frame
	if err := vdif.Decode(ingesttest.VDIF(h, make([]byte, 16)), &f); err != nil {
		t.Fatal(err)
	}
	if !f.Legacy || !f.Invalid || f.HeaderBytes() != 16 || len(f.Data) != 16 || f.Extended != [4]uint32{} || f.ThreadID != 3 || f.StationID != 0x4142 {
		t.Errorf("decoded %+v with %d data bytes", f.Header, len(f.Data))
	}
}

// The reference epoch counts half-years from 2000; Time adds the seconds.
func TestTime(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		epoch   uint8
		seconds uint32
		want    time.Time
	}{
		{0, 0, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{1, 0, time.Date(2000, 7, 1, 0, 0, 0, 0, time.UTC)},
		{50, 86400 + 3661, time.Date(2025, 1, 2, 1, 1, 1, 0, time.UTC)},
		{53, 0, time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)},
		{63, 0, time.Date(2031, 7, 1, 0, 0, 0, 0, time.UTC)},
	} {
		h := vdif.Header{RefEpoch: c.epoch, Seconds: c.seconds}
		if got := h.Time(); !got.Equal(c.want) || got.Location() != time.UTC {
			t.Errorf("epoch %d + %d s: %v, want %v", c.epoch, c.seconds, got, c.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	good := ingesttest.VDIF(vdif.Header{}, make([]byte, 64))
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, vdif.ReasonShort},
		{"15 bytes", good[:15], vdif.ReasonShort},
		{"a standard header cut at 16 bytes", good[:16], vdif.ReasonShort},
		{"a standard header cut at 31 bytes", good[:31], vdif.ReasonShort},
		{"shorter than its length", good[:len(good)-8], vdif.ReasonFrameLength},
		{"longer than its length", append(bytes.Clone(good), make([]byte, 8)...), vdif.ReasonFrameLength},
		{"length smaller than the header", ingesttest.VDIF(vdif.Header{FrameUnits: 3}, make([]byte, 8)), vdif.ReasonHeaderLong},
		{"legacy length smaller than the header", ingesttest.VDIF(vdif.Header{Legacy: true, FrameUnits: 1}, nil), vdif.ReasonHeaderLong},
	} {
		var f vdif.Frame
		err := vdif.Decode(c.b, &f)
		if !errors.Is(err, c.want) || !errors.Is(err, vdif.ErrMalformed) || f.Data != nil {
			t.Errorf("%s: %v, want %v (malformed)", c.name, err, c.want)
		}
	}
}

// Encoding then decoding any header gives it back.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	x := uint64(0x9e3779b97f4a7c15)
	next := func() uint64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x }
	for range 1000 {
		h := vdif.Header{
			Invalid: next()%2 == 0, Legacy: next()%2 == 0, Seconds: uint32(next() % (1 << 30)),
			RefEpoch: uint8(next() % 64), FrameNumber: uint32(next() % (1 << 24)), Version: uint8(next() % 8),
			Log2Channels: uint8(next() % 32), Complex: next()%2 == 0, BitsMinus1: uint8(next() % 32),
			ThreadID: uint16(next() % 1024), StationID: uint16(next()),
		}
		if !h.Legacy {
			h.Extended = [4]uint32{uint32(next()), uint32(next()), uint32(next()), uint32(next())}
		}
		data := make([]byte, 8*(next()%100))
		b := ingesttest.VDIF(h, data)
		h.FrameUnits = uint32(len(b) / 8)
		var f vdif.Frame
		if err := vdif.Decode(b, &f); err != nil || f.Header != h || len(f.Data) != len(data) {
			t.Fatalf("%+v decoded as %+v, %v", h, f.Header, err)
		}
	}
}

func TestDecodeAllocatesNothing(t *testing.T) {
	good := ingesttest.VDIF(vdif.Header{ThreadID: 2}, make([]byte, 8000))
	var f vdif.Frame
	var err error
	if n := testing.AllocsPerRun(100, func() { err = vdif.Decode(good, &f) }); n != 0 || err != nil {
		t.Errorf("Decode: %v allocations, %v", n, err)
	}
	if n := testing.AllocsPerRun(100, func() { err = vdif.Decode(good[:100], &f) }); n != 0 || err == nil {
		t.Errorf("Decode of a bad frame: %v allocations, %v", n, err)
	}
}
