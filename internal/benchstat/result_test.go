package benchstat

import (
	"strings"
	"testing"
)

// The figure lines the bench targets print today, each to the records it makes.
func TestParseResults(t *testing.T) {
	t.Parallel()
	out := strings.Join([]string{
		"goos: linux",
		"ratio write-file/dd-read=0.80 write-file/ring-floor=0.90  ring write -f 4.30 GB/s  dd bs=1048576 5.40 GB/s  floor 4.80 GB/s  (256 MiB tmpfs file, 8 x 1048576 B ring, 5 runs)",
		"headroom recv-send-64KiB-qps4@400G=4.11 [3.75, 6.18]  ns/op=319 [212, 350]  cpu-headroom=6.19 [5.86, 7.64]  cpu-ns/op=212 [172, 224]  op/s=3130000  (median of 7 runs, GOMAXPROCS=1)",
		"ratio recv-write-1MiB-qps4/ring-floor-1MiB=1.45 [1.39, 1.61]  (CPU time per op, median of 7 rounds, GOMAXPROCS=2)",
		"ratio register/raw-reg-mr[largest] wholering=0.93 perblock=1.63",
		"crossings recv-write-64KiB-qps4 per message=12.50 per block=4223.0 (polls 10, of them empty 9, posts 3, completions 4; busy poll, rxe)",
		"ratio ofi-tcp/iperf3=0.578 (min 0.530 max 0.897 of 5 runs; 64 KiB messages, 4 endpoints, write mode)",
		"ratio send/ib_send_bw=1.397",
		"bench-rdma: interval send/ib_send_bw [1.317, 1.492] (95.1 % coverage, 27 runs) goal >=0.95 (3 boots x 9 runs)",
		"    bench_dra_test.go:82: bench-dra: ratio dra/deviceplugin=1.193 [0.950, 1.397] (claim -> pod Running: dra median 11.24 s, deviceplugin median 10.25 s, 6 rounds, goal <= 1.2)",
		"ratio BenchmarkRingThroughput/readers=1/block=16MiB      ring    3.20 GB/s  plain copy 6.1 GB/s  ring/copy 0.52  (100 blocks)",
	}, "\n")
	got, err := ParseResults(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{Metric: "ratio write-file/dd-read", Figure: "0.80", Anchor: "dd-read"},
		{Metric: "ratio write-file/ring-floor", Figure: "0.90", Anchor: "ring-floor"},
		{Metric: "headroom recv-send-64KiB-qps4@400G G1", Figure: "4.11", Low: "3.75", High: "6.18", Anchor: "400 Gb/s link"},
		{Metric: "ratio recv-write-1MiB-qps4/ring-floor-1MiB G2", Figure: "1.45", Low: "1.39", High: "1.61", Anchor: "ring-floor-1MiB"},
		{Metric: "ratio register/raw-reg-mr[largest] wholering", Figure: "0.93", Anchor: "raw-reg-mr[largest]"},
		{Metric: "ratio register/raw-reg-mr[largest] perblock", Figure: "1.63", Anchor: "raw-reg-mr[largest]"},
		{Metric: "crossings recv-write-64KiB-qps4 per message", Figure: "12.50", Anchor: "benchfabric's model"},
		{Metric: "crossings recv-write-64KiB-qps4 per block", Figure: "4223.0", Anchor: "benchfabric's model"},
		{Metric: "ratio ofi-tcp/iperf3", Figure: "0.578", Low: "0.530", High: "0.897", Anchor: "iperf3"},
		{Metric: "ratio send/ib_send_bw", Figure: "1.397", Low: "1.317", High: "1.492", Anchor: "ib_send_bw"},
		{Metric: "ratio dra/deviceplugin", Figure: "1.193", Low: "0.950", High: "1.397", Anchor: "deviceplugin", Goal: "≤ 1.2"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		g.Note = ""
		if g != w {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	if n := got[len(got)-1].Note; !strings.HasPrefix(n, "(claim -> pod Running") {
		t.Errorf("a figure's note is the rest of its line; got %q", n)
	}
}
