package status

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// observationMetrics are the current observation's metrics, a line "NAME VALUE" each.
func observationMetrics(t *testing.T, tr *Tracker) string {
	t.Helper()
	var b strings.Builder
	mfs, err := tr.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "ringcap_observation_") {
			for _, m := range mf.GetMetric() {
				b.WriteString(mf.GetName() + " " + strconv.FormatFloat(m.GetGauge().GetValue(), 'f', -1, 64) + "\n")
			}
		}
	}
	return b.String()
}

// land counts n bytes landed on queue pair 0.
func land(tr *Tracker, n uint64) {
	qpc := tr.QueuePairs(1)
	qpc[0].Add(n)
	tr.Landed(qpc)
}

// The current observation's number, the bytes landed in it and its UTC_START are in
// /status while it goes on and in the metrics from the first observation on (the last
// one's between observations); UTC_START once its header is in the ring.
func TestCurrentObservation(t *testing.T) {
	tr := NewTracker()
	if got := observationMetrics(t, tr); got != "" {
		t.Errorf("before any observation: %q, want no ringcap_observation_* series", got)
	}
	land(tr, 100) // an earlier stream's bytes are not this observation's
	tr.ObservationBegan(4)
	land(tr, 4000)
	if got, want := tr.Snapshot().CurrentObservation, (&statusdoc.CurrentObservation{Number: 4, Bytes: 4000}); !reflect.DeepEqual(got, want) {
		t.Errorf("before its header: currentObservation %+v, want %+v", got, want)
	}
	if got, want := observationMetrics(t, tr), "ringcap_observation_bytes 4000\nringcap_observation_number 4\n"; got != want {
		t.Errorf("before its header:\n%s\nwant (no start):\n%s", got, want)
	}
	tr.HeaderWritten(map[string]string{"UTC_START": "2026-01-02-03:04:05", "SOURCE": "J0437-4715"})
	land(tr, 96)
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Unix()
	st := tr.Snapshot()
	if want := (&statusdoc.CurrentObservation{Number: 4, Bytes: 4096, UTCStart: "2026-01-02-03:04:05"}); !reflect.DeepEqual(st.CurrentObservation, want) || st.Header["SOURCE"] != "J0437-4715" {
		t.Errorf("with its header: currentObservation %+v, header %v; want %+v", st.CurrentObservation, st.Header, want)
	}
	want := "ringcap_observation_bytes 4096\nringcap_observation_number 4\nringcap_observation_start_timestamp_seconds " + strconv.FormatInt(start, 10) + "\n"
	if got := observationMetrics(t, tr); got != want {
		t.Errorf("with its header:\n%s\nwant:\n%s", got, want)
	}
	tr.ObservationDone(statusdoc.Observation{Number: 4, Bytes: 4096, Complete: true})
	land(tr, 1000) // after its end: not its bytes
	if st := tr.Snapshot(); st.CurrentObservation != nil {
		t.Errorf("between observations: currentObservation %+v, want none", st.CurrentObservation)
	}
	if got := observationMetrics(t, tr); got != want {
		t.Errorf("between observations:\n%s\nwant the last one's:\n%s", got, want)
	}
	tr.ObservationBegan(5)
	if got, want := observationMetrics(t, tr), "ringcap_observation_bytes 0\nringcap_observation_number 5\n"; got != want {
		t.Errorf("the next observation, before its header:\n%s\nwant (no start of the last one):\n%s", got, want)
	}
}
