package spead_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ringcap/ringcap/internal/ingesttest"
	"github.com/ringcap/ringcap/pkg/ingest/spead"
)

func TestDecodeFlavours(t *testing.T) {
	t.Parallel()
	payload := []byte("0123456789abcdef")
	for _, bitsN := range []int{48, 40} {
		ts := uint64(1)<<bitsN - 1 // the largest immediate value
		b := ingesttest.SPEADHeap(bitsN, 7, 64, 16, payload,
			ingesttest.Imm(0x1600, ts), spead.Item{ID: 0x4103, Value: 8}, ingesttest.Imm(1<<(63-bitsN)-1, 5))
		var p spead.Packet
		if err := spead.Decode(b, &p); err != nil {
			t.Fatalf("%d bits: %v", bitsN, err)
		}
		if p.HeapAddressBits != bitsN || p.HeapCounter != 7 || p.HeapSize != 64 || !p.HasHeapSize ||
			p.HeapOffset != 16 || p.PayloadLength != 16 || !bytes.Equal(p.Payload, payload) {
			t.Errorf("%d bits: decoded %+v", bitsN, p)
		}
		if got := len(p.Items()); got != 7 {
			t.Errorf("%d bits: %d items, want 7", bitsN, got)
		}
		if v, ok := p.Immediate(0x1600); !ok || v != ts {
			t.Errorf("%d bits: timestamp %d, %v; want %d", bitsN, v, ok, ts)
		}
		if it, ok := p.Lookup(0x4103); !ok || it.Immediate || it.Value != 8 {
			t.Errorf("%d bits: addressed item %+v, %v", bitsN, it, ok)
		}
		if _, ok := p.Immediate(0x4103); ok {
			t.Errorf("%d bits: an addressed item reads as immediate", bitsN)
		}
		if v, ok := p.Immediate(1<<(63-bitsN) - 1); !ok || v != 5 {
			t.Errorf("%d bits: the largest item ID reads %d, %v", bitsN, v, ok)
		}
		if _, ok := p.Lookup(0x9999); ok {
			t.Errorf("%d bits: found an item the packet lacks", bitsN)
		}
	}
}

// A packet without a heap size item decodes; its heap size is unknown.
func TestDecodeWithoutHeapSize(t *testing.T) {
	t.Parallel()
	b := ingesttest.SPEAD(48, []spead.Item{ingesttest.Imm(spead.HeapCounterID, 1), ingesttest.Imm(spead.HeapOffsetID, 1<<40), ingesttest.Imm(spead.PayloadLengthID, 4)}, []byte("abcd"))
	var p spead.Packet
	if err := spead.Decode(b, &p); err != nil {
		t.Fatal(err)
	}
	if p.HasHeapSize || p.HeapSize != 0 || p.HeapOffset != 1<<40 {
		t.Errorf("decoded %+v", p)
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	good := ingesttest.SPEADHeap(48, 1, 8, 0, []byte("abcdefgh"))
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, spead.ReasonShort},
		{"7 bytes", good[:7], spead.ReasonShort},
		{"magic", mod(func(b []byte) []byte { b[0] = 0x54; return b }), spead.ReasonMagic},
		{"version 3", mod(func(b []byte) []byte { b[1] = 3; return b }), spead.ReasonVersion},
		{"widths 8-6", mod(func(b []byte) []byte { b[2] = 8; return b }), spead.ReasonWidths},
		{"widths 4-4", mod(func(b []byte) []byte { b[2], b[3] = 4, 4; return b }), spead.ReasonWidths},
		{"item count past the packet", mod(func(b []byte) []byte { binary.BigEndian.PutUint16(b[6:], 6); return b }), spead.ReasonItemsPast},
		{"item count 0xffff", mod(func(b []byte) []byte { binary.BigEndian.PutUint16(b[6:], 0xffff); return b }), spead.ReasonItemsPast},
		{"too many items", ingesttest.SPEAD(48, make([]spead.Item, spead.MaxItems+1), nil), spead.ReasonTooMany},
		{"truncated payload", good[:len(good)-1], spead.ReasonTruncated},
		{"payload longer than its item", append(bytes.Clone(good), 0), spead.ReasonLengthLong},
		{"past the heap", ingesttest.SPEADHeap(48, 1, 8, 1, []byte("abcdefgh")), spead.ReasonPastHeap},
		{"offset past the heap", ingesttest.SPEADHeap(48, 1, 8, 9, nil), spead.ReasonPastHeap},
		{"addressed heap counter", ingesttest.SPEAD(48, []spead.Item{{ID: spead.HeapCounterID}, ingesttest.Imm(spead.HeapOffsetID, 0), ingesttest.Imm(spead.PayloadLengthID, 0)}, nil), spead.ReasonNotImm},
		{"repeated offset", ingesttest.SPEAD(48, []spead.Item{ingesttest.Imm(spead.HeapCounterID, 1), ingesttest.Imm(spead.HeapOffsetID, 0), ingesttest.Imm(spead.HeapOffsetID, 0), ingesttest.Imm(spead.PayloadLengthID, 0)}, nil), spead.ReasonRepeated},
		{"no counter", ingesttest.SPEAD(48, []spead.Item{ingesttest.Imm(spead.HeapOffsetID, 0), ingesttest.Imm(spead.PayloadLengthID, 0)}, nil), spead.ReasonNoCounter},
		{"no offset", ingesttest.SPEAD(48, []spead.Item{ingesttest.Imm(spead.HeapCounterID, 1), ingesttest.Imm(spead.PayloadLengthID, 0)}, nil), spead.ReasonNoOffset},
		{"no length", ingesttest.SPEAD(48, []spead.Item{ingesttest.Imm(spead.HeapCounterID, 1), ingesttest.Imm(spead.HeapOffsetID, 0)}, nil), spead.ReasonNoLength},
	} {
		var p spead.Packet
		err := spead.Decode(c.b, &p)
		if !errors.Is(err, c.want) || !errors.Is(err, spead.ErrMalformed) || errors.Is(err, spead.ErrOutOfRange) {
			t.Errorf("%s: %v, want %v (malformed)", c.name, err, c.want)
		}
		if len(p.Items()) != 0 || p.Payload != nil {
			t.Errorf("%s: %d items left after an error", c.name, len(p.Items()))
		}
	}
}

// Encoding then decoding gives back every item, for both flavours and
// every mix of immediate and addressed items.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, bitsN := range []int{48, 40} {
		for seed := range uint64(200) {
			x := seed*0x9e3779b97f4a7c15 + 1
			next := func() uint64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x }
			n := int(next() % 20)
			payload := make([]byte, next()%100)
			size := uint64(len(payload)) + next()%50
			off := next() % (size - uint64(len(payload)) + 1)
			var extra []spead.Item
			for range n {
				id := uint32(next()%(1<<(63-bitsN)-5)) + 5
				extra = append(extra, spead.Item{ID: id, Immediate: next()%2 == 0, Value: next() & (1<<bitsN - 1)})
			}
			b := ingesttest.SPEADHeap(bitsN, next()&(1<<bitsN-1), size, off, payload, extra...)
			var p spead.Packet
			if err := spead.Decode(b, &p); err != nil {
				t.Fatalf("%d bits, seed %d: %v", bitsN, seed, err)
			}
			got := p.Items()[4:]
			for i := range extra {
				if got[i] != extra[i] {
					t.Fatalf("%d bits, seed %d: item %d is %+v, want %+v", bitsN, seed, i, got[i], extra[i])
				}
			}
			if !bytes.Equal(b[len(b)-len(payload):], p.Payload) || p.HeapOffset != off || p.HeapSize != size {
				t.Fatalf("%d bits, seed %d: decoded %+v", bitsN, seed, p)
			}
		}
	}
}

// Decoding allocates nothing, on good packets and bad ones.
func TestDecodeAllocatesNothing(t *testing.T) {
	good := ingesttest.SPEADHeap(48, 1, 8192, 0, make([]byte, 8192), ingesttest.Imm(0x1600, 1<<20), ingesttest.Imm(0x4103, 3))
	bad := good[:100]
	var p spead.Packet
	var err error
	if n := testing.AllocsPerRun(100, func() { err = spead.Decode(good, &p) }); n != 0 || err != nil {
		t.Errorf("Decode of a good packet: %v allocations, %v", n, err)
	}
	if n := testing.AllocsPerRun(100, func() { err = spead.Decode(bad, &p) }); n != 0 || err == nil {
		t.Errorf("Decode of a bad packet: %v allocations, %v", n, err)
	}
}
