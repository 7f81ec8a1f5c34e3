package main

import (
	"strings"
	"testing"
)

func TestRatiosPerRound(t *testing.T) {
	t.Parallel()
	log := `== old round 1
headroom send-send-64KiB-qps4@400G=30 [1, 2]  ns/op=43 [1, 2]  cpu-headroom=30 [1, 2]  cpu-ns/op=40 [39, 41]  op/s=1  (median of 7 runs, GOMAXPROCS=1)
== new round 1
headroom send-send-64KiB-qps4@400G=20 [1, 2]  ns/op=65 [1, 2]  cpu-headroom=20 [1, 2]  cpu-ns/op=60 [59, 61]  op/s=1  (median of 7 runs, GOMAXPROCS=1)
noise line
== old round 2
headroom send-send-64KiB-qps4@400G=30 [1, 2]  ns/op=43 [1, 2]  cpu-headroom=30 [1, 2]  cpu-ns/op=50 [49, 51]  op/s=1  (median of 7 runs, GOMAXPROCS=1)
== new round 2
headroom send-send-64KiB-qps4@400G=20 [1, 2]  ns/op=65 [1, 2]  cpu-headroom=20 [1, 2]  cpu-ns/op=50 [49, 51]  op/s=1  (median of 7 runs, GOMAXPROCS=1)
headroom only-new@400G=1 [1, 2]  cpu-ns/op=5 [4, 6]  (GOMAXPROCS=1)
`
	c, err := parse(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	rs := c.ratios()
	got := rs["send-send-64KiB-qps4 1"]
	if len(got) != 2 || len(rs) != 1 {
		t.Fatalf("ratios %v: want two rounds of one figure (only-new has no old)", rs)
	}
	if !(got[0] == 1.5 && got[1] == 1 || got[0] == 1 && got[1] == 1.5) {
		t.Fatalf("ratios %v, want 1.5 and 1", got)
	}
}
