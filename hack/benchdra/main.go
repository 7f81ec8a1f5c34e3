// Command benchdra combines the logs of several runs of one e2e benchmark into one figure,
// so that the rounds an issue asks for can be taken in parts that each fit in one sitting:
//
//	go run ./hack/benchdra [-test NAME] RUN1.log RUN2.log ...
//	make bench-dra-combine BENCH_DRA_LOGS='RUN1.log RUN2.log ...'             (issue 37: 20 rounds)
//	make bench-capture-start-combine BENCH_START_LOGS='RUN1.log RUN2.log ...' (issue 38: 10 rounds)
//
// It tells the benchmark of a log by its "--- PASS:" line: TestBenchDRA (`make bench-dra`,
// test/e2e/bench_dra_test.go) or TestBenchCaptureStart (`make bench-capture-start`,
// test/e2e/bench_start_test.go). It reads every run's round lines ("round N: dra D
// deviceplugin D", "round N: capture D pod D") and, for bench-dra, its portwatch "down"
// lines, pools them, and prints the figure lines the test prints, computed the same way over
// the pooled values with the same statistic (internal/benchstat), each followed inside its
// parentheses by the number of parts combined, the rounds in which the first of the pair
// went first and the interval's coverage:
//   - bench-dra: the median of the per-round ratios dra/deviceplugin with its
//     distribution-free interval, and the ratio of the port-down medians with its interval
//     from the two medians' intervals;
//   - bench-capture-start: the median of the per-round ratios capture-start/pod-start with
//     its interval, and the median of each side's times with theirs.
//
// Round times are read back as the log prints them (rounded to the millisecond).
//
// It takes a log only when its run passed (a "--- FAIL:" or "panic:" line refuses it, and so
// does a log without the PASS line, such as one of a run that hit the test timeout) and its
// round and portwatch lines add up to the counts of the run's own summary lines. It refuses
// to mix the logs of two benchmarks (-test names the one expected: the make targets set it),
// and two logs that hold the same round number: give each part BENCH_DRA_FIRST_ROUND
// (BENCH_START_FIRST_ROUND) after the last round of the one before, so that the parts
// alternate the order of the pair as one long run would.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	want := flag.String("test", "", "the benchmark every log must be from ("+testNames()+"); empty: the first log's")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: benchdra [-test NAME] RUN.log...  (logs of `make bench-dra` or `make bench-capture-start`)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 1 {
		flag.Usage()
		os.Exit(2)
	}
	lines, err := combineFiles(*want, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchdra:", err)
		os.Exit(1)
	}
	for _, l := range lines {
		fmt.Println(l)
	}
}

// combineFiles reads and parses the logs at paths and combines them, refusing a log of
// another benchmark than want (when set).
func combineFiles(want string, paths []string) ([]string, error) {
	if want != "" && benchByTest(want) == nil {
		return nil, fmt.Errorf("-test %s: not a benchmark this tool reads (%s)", want, testNames())
	}
	var runs []Run
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read log: %w", err)
		}
		r, err := ParseLog(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if want != "" && r.Test != want {
			return nil, fmt.Errorf("%s: a %s log, but %s logs are combined here", path, r.Test, want)
		}
		runs = append(runs, r)
	}
	return Combine(runs)
}
