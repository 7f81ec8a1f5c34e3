package controller

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// RingFill is the running ring's fill and reader slots as the receiver reported them
// (nil when it did not: no ring yet, or closed).
func RingFill(f *statusdoc.RingFill) *ringcapv1.RingFillStatus {
	if f == nil {
		return nil
	}
	st := &ringcapv1.RingFillStatus{
		FilledBlocks: apiInt32(f.FilledBlocks), OpenBlocks: apiInt32(f.OpenBlocks), Blocks: apiInt32(f.Blocks),
		Fill: fmt.Sprintf("%d/%d", min(f.FilledBlocks+f.OpenBlocks, f.Blocks), f.Blocks),
	}
	for _, r := range f.Readers {
		rs := ringcapv1.ReaderSlotStatus{
			Slot: apiInt32(r.Slot), Connected: r.Connected, State: r.State,
			LagBlocks: apiInt32(r.LagBlocks), LagBytes: apiInt64(r.LagBytes),
		}
		if t, err := time.Parse(time.RFC3339Nano, r.LastAdvance); err == nil {
			mt := metav1.NewTime(t)
			rs.LastAdvanceTime = &mt
		}
		st.Readers = append(st.Readers, rs)
	}
	return st
}
