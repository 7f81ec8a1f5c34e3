package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// testdata/run-6rounds.log is the test output of a real `make bench-dra` run (6 rounds,
// 10 port-down runs); combining it alone must give back that run's own figures.
func TestCombineOneRunGivesItsOwnFigures(t *testing.T) {
	b, err := os.ReadFile("testdata/run-6rounds.log")
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseLog(string(b))
	if err != nil {
		t.Fatalf("ParseLog: %v", err)
	}
	if len(r.Rounds) != 6 || len(r.Ports) != 10 {
		t.Fatalf("parsed %d rounds, %d port runs; want 6, 10", len(r.Rounds), len(r.Ports))
	}
	lines, err := Combine([]Run{r})
	if err != nil {
		t.Fatalf("Combine: %v", err)
	}
	for i, want := range []string{
		"bench-dra: ratio dra/deviceplugin=1.056 [0.367, 1.607] (claim -> pod Running: dra median 18.61 s, deviceplugin median 21.57 s, 6 rounds,",
		"bench-dra: port down -> device leaves the slice 2622 ms [772, 5675], ListAndWatch unhealthy 2783 ms [1079, 6301] (10 runs,",
		"bench-dra: ratio slice/listandwatch=0.94 [0.12, 5.26] (ratio of the medians;",
	} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d:\n got %s\nwant %s...", i, lines[i], want)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("the run's log has no line starting %q", want)
		}
	}
}

// partLog writes the lines of a passed run holding rounds first..first+n-1 with the
// given times, and one port-down run per round.
func partLog(first int, times [][2]string) string {
	var sb strings.Builder
	sb.WriteString("=== RUN   TestBenchDRA\n")
	for i, tm := range times {
		fmt.Fprintf(&sb, "    bench_dra_test.go:81: round %d: dra %s deviceplugin %s\n", first+i, tm[0], tm[1])
	}
	fmt.Fprintf(&sb, "bench-dra: ratio dra/deviceplugin=1 [1, 1] (claim -> pod Running: dra median 1 s, deviceplugin median 1 s, %d rounds, goal <= 1.2)\n", len(times))
	for i := range times {
		fmt.Fprintf(&sb, "        portwatch run=%d down slice_ms=%d.5 listandwatch_ms=1000.0 up slice_ms=1.0 listandwatch_ms=1.0\n", i+1, 1000*(i+1))
	}
	fmt.Fprintf(&sb, "bench-dra: port down -> device leaves the slice 1 ms [1, 1], ListAndWatch unhealthy 1 ms [1, 1] (%d runs, rescan interval 1 s)\n", len(times))
	sb.WriteString("--- PASS: TestBenchDRA (1.00s)\nPASS\n")
	return sb.String()
}

func TestCombinePools(t *testing.T) {
	a, err := ParseLog(partLog(1, [][2]string{{"10s", "20s"}, {"1m0.5s", "30s"}}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseLog(partLog(3, [][2]string{{"30s", "30s"}}))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := Combine([]Run{a, b})
	if err != nil {
		t.Fatal(err)
	}
	// ratios 0.5, 2.0167, 1 -> median 1, range; dra 10, 60.5, 30; dp 20, 30, 30;
	// slice 1000.5, 2000.5, 1000.5 -> 1000.5 [1000.5, 2000.5]; law 1000 each.
	for i, want := range []string{
		"bench-dra: ratio dra/deviceplugin=1.000 [0.500, 2.017] (claim -> pod Running: dra median 30.00 s, deviceplugin median 30.00 s, 3 rounds, goal <= 1.2; 2 parts combined, dra first in 2 rounds, interval coverage 75.0 %)",
		"bench-dra: port down -> device leaves the slice 1000 ms [1000, 2000], ListAndWatch unhealthy 1000 ms [1000, 1000] (3 runs, rescan interval 1 s; 2 parts combined, interval coverage 75.0 %)",
		"bench-dra: ratio slice/listandwatch=1.00 [1.00, 2.00] (ratio of the medians; interval from the two medians' intervals)",
	} {
		if lines[i] != want {
			t.Errorf("line %d:\n got %s\nwant %s", i, lines[i], want)
		}
	}
}

func TestRefused(t *testing.T) {
	good := partLog(1, [][2]string{{"10s", "20s"}})
	for name, log := range map[string]string{
		"run failed":         strings.Replace(good, "--- PASS", "--- FAIL", 1),
		"round line missing": strings.Replace(good, "round 1:", "rnd 1:", 1),
		"port line missing":  strings.Replace(good, "portwatch run=1 down", "portwatch run=1 dn", 1),
		"no summary":         strings.Replace(good, "bench-dra: ratio", "ratio", 1),
		"bad duration":       strings.Replace(good, "dra 10s", "dra 10", 1),
		"zero time":          strings.Replace(good, "deviceplugin 20s", "deviceplugin 0s", 1),
	} {
		if _, err := ParseLog(log); err == nil {
			t.Errorf("%s: ParseLog took it", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	r, err := ParseLog(good)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Combine([]Run{r, r}); err == nil || !strings.Contains(err.Error(), "round 1 is in two logs") {
		t.Errorf("Combine of a log with itself: err %v, want round 1 in two logs", err)
	}
	if _, err := Combine(nil); err == nil {
		t.Errorf("Combine of nothing: no error")
	}
}
