package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/benchstat"
)

var summaryOptions = &options{recvCPU: 1, cpuRate: 128 * mib, duration: 2 * time.Second, cpuDur: 3 * time.Second}

// fakeRounds are n rounds: the floor at 500+i MiB/s, ringcap at 450+i (its search ended
// by the sender in the first), CPU 0.1 and 0.2+i/100 s per GiB.
func fakeRounds(n int) []round {
	var rs []round
	for i := range n {
		f := float64(i)
		rs = append(rs, round{
			floor:      found{Rate: (500 + f) * mib},
			ringcap:    found{Rate: (450 + f) * mib, SenderBound: i == 0},
			cpuFloor:   result{rate: 128 * mib, cpu: 0.1, sent: sent{packets: 10, payloadBytes: 1 << 30}, got: received{written: 10}},
			cpuRingcap: result{rate: 128 * mib, cpu: 0.2 + f/100, sent: sent{packets: 10, payloadBytes: 1 << 30}, got: received{written: 10}},
		})
	}
	return rs
}

// summaryRecords summarizes rs and parses its lines as hack/benchtable does.
func summaryRecords(t *testing.T, rs []round) ([]benchstat.Record, string) {
	t.Helper()
	var out bytes.Buffer
	if err := summarize(&out, rs, summaryOptions); err != nil {
		t.Fatal(err)
	}
	recs, err := benchstat.ParseResults(strings.NewReader(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	return recs, out.String()
}

// The summary's lines are figure lines hack/benchtable records: two ratios, the first with
// its goal, neither with stray further figures.
func TestSummaryLinesAreRecords(t *testing.T) {
	t.Parallel()
	recs, out := summaryRecords(t, fakeRounds(5))
	if len(recs) != 2 {
		t.Fatalf("%d records from\n%s", len(recs), out)
	}
	r := recs[0]
	if r.Metric != "ratio ringcap/recvmmsg-floor" || r.Figure != "0.900" || r.Low != "0.900" || r.High != "0.901" || r.Goal != "≥ 0.9" || r.Anchor != "recvmmsg-floor" {
		t.Errorf("first record %+v", r)
	}
	if !strings.Contains(r.Note, "met") || !strings.Contains(r.Note, "1 of 5 rounds the sender's ceiling (or -max)") {
		t.Errorf("first record's note %q: want the verdict and the sender's ceiling", r.Note)
	}
	r = recs[1]
	if r.Metric != "ratio ringcap-cpu/recvmmsg-floor-cpu" || r.Figure != "2.200" || r.Low != "2.000" || r.High != "2.400" || r.Goal != "" {
		t.Errorf("second record %+v", r)
	}
}

// A round where a receiver found no loss-free rate is left out of the rate ratio, and said
// so; with none left there is no figure.
func TestSummaryLeavesOutRoundsWithoutALossFreeRate(t *testing.T) {
	t.Parallel()
	rs := fakeRounds(3)
	rs[1].floor.Rate = 0
	recs, _ := summaryRecords(t, rs)
	if r := recs[0]; r.Figure != "0.900" || !strings.Contains(r.Note, "1 of 3 rounds left out") || !strings.Contains(r.Note, "2 rounds of a rate search") {
		t.Errorf("rate record %+v: want the median of 2 rounds and the round left out", r)
	}
	for i := range rs {
		rs[i].ringcap.Rate = 0
	}
	if err := summarize(&bytes.Buffer{}, rs, summaryOptions); !errors.Is(err, errNoRounds) {
		t.Errorf("summarize with no round: %v, want errNoRounds", err)
	}
}
