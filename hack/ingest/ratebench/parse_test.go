package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/benchstat"
)

func TestParseSent(t *testing.T) {
	t.Parallel()
	out := "some log line\nsend: bytes=536870912 packets=65536 payload_bytes=536870912 dropped_packets=0 dropped_bytes=0 seconds=2.563 gbps=1.676 protocol=spead complete=true\n"
	s, err := parseSent(out)
	if err != nil {
		t.Fatal(err)
	}
	if s.packets != 65536 || s.payloadBytes != 536870912 || s.seconds != 2.563 {
		t.Errorf("parsed %+v", s)
	}
	if r := s.rate() / mib; r < 199.7 || r > 199.8 {
		t.Errorf("rate %.2f MiB/s, want 199.77", r)
	}
	for _, bad := range []string{
		"",
		"send: bytes=1 packets=1 payload_bytes=1 seconds=1 complete=false",
		"send: bytes=1 payload_bytes=1 complete=true",
	} {
		if _, err := parseSent(bad); err == nil {
			t.Errorf("parseSent(%q): no error", bad)
		}
	}
}

func TestParseFloorAndLoss(t *testing.T) {
	t.Parallel()
	r, err := parseFloor("ready port=1 rcvbuf=4194304\npackets=114072 bytes=939953280 drops=17000 batches=12906 cpu_ns=549664000\n")
	if err != nil {
		t.Fatal(err)
	}
	if r.packets != 114072 || r.written != 114072 || r.drops != 17000 {
		t.Errorf("parsed %+v", r)
	}
	if r.lossFree(sent{packets: 114072}) {
		t.Error("kernel drops counted loss-free")
	}
	r.drops = 0
	if !r.lossFree(sent{packets: 114072}) || r.lossFree(sent{packets: 114073}) {
		t.Error("loss-free is: no drop and every packet sent written")
	}
	if _, err := parseFloor("ready port=1 rcvbuf=2\n"); err == nil {
		t.Error("a floor output without counts parsed")
	}
}

func TestParseSchedstat(t *testing.T) {
	t.Parallel()
	n, err := parseSchedstat("3993627 18853693 2\n")
	if err != nil || n != 3993627 {
		t.Errorf("parseSchedstat = %d, %v; want 3993627", n, err)
	}
	for _, bad := range []string{"", "x 1 2"} {
		if _, err := parseSchedstat(bad); err == nil {
			t.Errorf("parseSchedstat(%q): no error", bad)
		}
	}
}

// The summary's lines are figure lines hack/benchtable records: two ratios, the first with
// its goal, neither with stray further figures.
func TestSummaryLinesAreRecords(t *testing.T) {
	t.Parallel()
	var rs []round
	for i := range 5 {
		f := float64(i)
		rs = append(rs, round{
			floor:      found{Rate: (500 + f) * mib},
			ringcap:    found{Rate: (450 + f) * mib, SenderBound: i == 0},
			cpuFloor:   result{rate: 128 * mib, cpu: 0.1, sent: sent{packets: 10, payloadBytes: 1 << 30}, got: received{written: 10}},
			cpuRingcap: result{rate: 128 * mib, cpu: 0.2 + f/100, sent: sent{packets: 10, payloadBytes: 1 << 30}, got: received{written: 10}},
		})
	}
	var out bytes.Buffer
	summarize(&out, rs, &options{recvCPU: 1, cpuRate: 128 * mib, duration: 2 * time.Second, cpuDur: 3 * time.Second})
	recs, err := benchstat.ParseResults(strings.NewReader(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records from\n%s", len(recs), out.String())
	}
	r := recs[0]
	if r.Metric != "ratio ringcap/recvmmsg-floor" || r.Figure != "0.900" || r.Low != "0.900" || r.High != "0.901" || r.Goal != "≥ 0.9" || r.Anchor != "recvmmsg-floor" {
		t.Errorf("first record %+v", r)
	}
	if !strings.Contains(r.Note, "met") || !strings.Contains(r.Note, "1 of 5 rounds the sender's ceiling") {
		t.Errorf("first record's note %q: want the verdict and the sender's ceiling", r.Note)
	}
	r = recs[1]
	if r.Metric != "ratio ringcap-cpu/recvmmsg-floor-cpu" || r.Figure != "2.200" || r.Low != "2.000" || r.High != "2.400" || r.Goal != "" {
		t.Errorf("second record %+v", r)
	}
}
