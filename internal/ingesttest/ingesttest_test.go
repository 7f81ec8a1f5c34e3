package ingesttest

import (
	"bytes"
	"testing"

	"github.com/ringcap/ringcap/pkg/ingest/spead"
	"github.com/ringcap/ringcap/pkg/ingest/vdif"
)

// The encoders' packets decode to what they were built from.
func TestRoundTrip(t *testing.T) {
	payload := Pattern(100, 64)
	var p spead.Packet
	if err := spead.Decode(SPEADHeap(48, 7, 256, 64, payload, Imm(0x1600, 4096)), &p); err != nil {
		t.Fatal(err)
	}
	if ts, _ := p.Immediate(0x1600); p.HeapCounter != 7 || p.HeapSize != 256 || p.HeapOffset != 64 || ts != 4096 || !bytes.Equal(p.Payload, payload) {
		t.Fatalf("SPEAD packet decoded as %+v", p)
	}
	h := vdif.Header{Seconds: 12, RefEpoch: 52, FrameNumber: 3, Log2Channels: 2, BitsMinus1: 1, ThreadID: 5, StationID: 0x4142}
	var f vdif.Frame
	if err := vdif.Decode(VDIF(h, payload), &f); err != nil {
		t.Fatal(err)
	}
	if f.Seconds != 12 || f.RefEpoch != 52 || f.FrameNumber != 3 || f.ThreadID != 5 || f.StationID != 0x4142 || f.BitsPerSample() != 2 || !bytes.Equal(f.Data, payload) {
		t.Fatalf("VDIF frame decoded as %+v", f.Header)
	}
	for off := range uint64(1000) {
		if PatternByte(off) == 0 {
			t.Fatalf("pattern byte %d is 0", off)
		}
	}
}
