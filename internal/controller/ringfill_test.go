package controller

import (
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

func TestRingFill(t *testing.T) {
	t.Parallel()
	if RingFill(nil) != nil {
		t.Fatal("no ring reported: want no status.ring")
	}
	st := RingFill(&statusdoc.RingFill{FilledBlocks: 3, OpenBlocks: 2, Blocks: 8, Readers: []statusdoc.ReaderSlot{
		{Slot: 0, Connected: true, State: "READING", LagBlocks: 3, LagBytes: 3 << 20, LastAdvance: "2026-11-28T12:00:01.5Z"},
		{Slot: 1, LagBlocks: 3, LagBytes: 3 << 20, LastAdvance: "not a time"},
	}})
	if st.Fill != "5/8" || st.FilledBlocks != 3 || st.OpenBlocks != 2 || st.Blocks != 8 || len(st.Readers) != 2 {
		t.Fatalf("status.ring %+v", st)
	}
	r0, r1 := st.Readers[0], st.Readers[1]
	if !r0.Connected || r0.State != "READING" || r0.LagBlocks != 3 || r0.LagBytes != 3<<20 ||
		r0.LastAdvanceTime == nil || !r0.LastAdvanceTime.Time.Equal(time.Date(2026, 11, 28, 12, 0, 1, 5e8, time.UTC)) {
		t.Errorf("slot 0 %+v", r0)
	}
	if r1.Connected || r1.LastAdvanceTime != nil {
		t.Errorf("slot 1 %+v: want empty, without a last advance it could not read", r1)
	}
}
