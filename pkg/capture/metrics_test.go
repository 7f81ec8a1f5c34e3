package capture

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ringcap/ringcap/pkg/capture/sender"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// The per-queue-pair counters (ringcap_recv_bytes_total and
// ringcap_recv_messages_total, label qp) count every landed slice on the
// queue pair that carried it, over every observation of the receiver. In
// send mode slice n travels on queue pair n mod QPs, so each queue pair's
// figures are known exactly; in write mode a block goes to whichever queue
// pair has room, so only the sums over queue pairs are.
func TestPerQueuePairMetrics(t *testing.T) {
	const nbufs, bufsz, msg, qps = 4, 8192, 2048, 3
	totals := []uint64{12*bufsz + 3, 2*bufsz + 100}
	for _, mode := range []wire.Mode{wire.ModeSend, wire.ModeWrite} {
		t.Run(mode.String(), func(t *testing.T) {
			h := testRing(t, nbufs, bufsz)
			hs := startReceiver(t, h, ReceiverConfig{Mode: mode, QPs: qps, MsgBytes: msg, RxDepth: 4, StopObservations: len(totals)}, wire.MRWholeRing)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			reads := readObservations(t, ctx, h, len(totals), 7, 0)
			for i, total := range totals {
				res, err := hs.send(ctx, sender.Config{Mode: mode, QPs: qps, MsgBytes: msg, Bytes: total, Source: sender.PatternSource{Seed: 7}, TxDepth: 4})
				if err != nil || !res.Complete {
					t.Fatalf("observation %d: send %+v: %v", i, res, err)
				}
			}
			waitObservations(t, hs, reads, totals...)
			g := wire.Geometry{BlockBytes: bufsz, MsgBytes: msg, QPs: qps, NBufs: nbufs, WholeBlocks: mode.WholeBlocks()}
			wantBytes, wantMsgs := perQPExpected(g, totals)
			tr := hs.rx.Tracker()
			if n, err := testutil.GatherAndCount(tr.Gatherer(), "ringcap_recv_bytes_total"); err != nil || n != qps {
				t.Errorf("%d queue pairs have a bytes counter, want %d", n, qps)
			}
			var sumB, sumM, wantSumB, wantSumM float64
			for q := range qps {
				b := qpMetric(t, tr, "ringcap_recv_bytes_total", q)
				m := qpMetric(t, tr, "ringcap_recv_messages_total", q)
				sumB, sumM, wantSumB, wantSumM = sumB+b, sumM+m, wantSumB+float64(wantBytes[q]), wantSumM+float64(wantMsgs[q])
				if mode == wire.ModeSend && (b != float64(wantBytes[q]) || m != float64(wantMsgs[q])) {
					t.Errorf("queue pair %d: %v bytes in %v messages, want %d in %d", q, b, m, wantBytes[q], wantMsgs[q])
				}
			}
			if sumB != wantSumB || sumM != wantSumM {
				t.Errorf("all queue pairs: %v bytes in %v messages, want %v in %v", sumB, sumM, wantSumB, wantSumM)
			}
		})
	}
}

// perQPExpected is the bytes and slices each queue pair carries when slices
// are striped over the queue pairs, summed over streams of the given totals.
func perQPExpected(g wire.Geometry, totals []uint64) (bytes, msgs []uint64) {
	bytes, msgs = make([]uint64, g.QPs), make([]uint64, g.QPs)
	for _, total := range totals {
		for sl := range g.Slices(total) {
			_, _, n := g.Slice(sl)
			q := g.QP(sl)
			bytes[q] += min(n, total-g.StreamOffset(sl))
			msgs[q]++
		}
	}
	return bytes, msgs
}

// qpMetric is the value of queue pair q's counter name.
func qpMetric(t *testing.T, tr *Tracker, name string, q int) float64 {
	t.Helper()
	mfs, err := tr.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "qp" && l.GetValue() == strconv.Itoa(q) {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0 // a counter not yet created reads 0, as WithLabelValues would make it
}
