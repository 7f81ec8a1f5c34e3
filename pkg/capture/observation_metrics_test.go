package capture

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ringcap/ringcap/pkg/capture/sender"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
)

// Over a real ring, after two observations the observation metrics show the last one:
// its number, the bytes that landed in it (not the receiver's total) and its header's
// UTC_START as Unix time; /status has no observation in progress.
func TestObservationMetricsOverRealRing(t *testing.T) {
	const nbufs, bufsz, msg = 4, 8192, 2048
	totals := []uint64{5*bufsz + 3, 2*bufsz + 100}
	began := time.Now().Truncate(time.Second)
	h := testRing(t, nbufs, bufsz)
	hs := startReceiver(t, h, ReceiverConfig{Mode: wire.ModeSend, QPs: 1, MsgBytes: msg, RxDepth: 4, StopObservations: len(totals)}, wire.MRWholeRing)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reads := readObservations(t, ctx, h, len(totals), 7, 0)
	for i, total := range totals {
		res, err := hs.send(ctx, sender.Config{Mode: wire.ModeSend, QPs: 1, MsgBytes: msg, Bytes: total, Source: sender.PatternSource{Seed: 7}, TxDepth: 4})
		if err != nil || !res.Complete {
			t.Fatalf("observation %d: send %+v: %v", i, res, err)
		}
	}
	waitObservations(t, hs, reads, totals...)
	tr := hs.rx.Tracker()
	st := tr.Snapshot()
	if st.CurrentObservation != nil {
		t.Errorf("currentObservation %+v after the last observation ended, want none", st.CurrentObservation)
	}
	utc, err := time.Parse(dada.UTCStartLayout, st.Header["UTC_START"])
	if err != nil || utc.Before(began) || utc.After(time.Now()) {
		t.Fatalf("status header UTC_START %q (%v): want a time during the test", st.Header["UTC_START"], err)
	}
	for name, want := range map[string]float64{
		"ringcap_observation_number":                  float64(len(totals) - 1),
		"ringcap_observation_bytes":                   float64(totals[len(totals)-1]),
		"ringcap_observation_start_timestamp_seconds": float64(utc.Unix()),
	} {
		if got := gaugeValue(t, tr, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if n, err := testutil.GatherAndCount(tr.Gatherer(), "ringcap_observation_number"); err != nil || n != 1 {
		t.Errorf("ringcap_observation_number: %d series (%v), want 1", n, err)
	}
}

// gaugeValue is the value of the unlabelled gauge name (-1 when absent).
func gaugeValue(t *testing.T, tr *Tracker, name string) float64 {
	t.Helper()
	mfs, err := tr.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}
