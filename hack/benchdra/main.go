// Command benchdra combines the logs of several `make bench-dra` runs into one figure, so
// that the 20 rounds issue 37 asks for can be taken in parts that each fit in one sitting:
//
//	go run ./hack/benchdra RUN1.log RUN2.log ...   (make bench-dra-combine BENCH_DRA_LOGS=...)
//
// It reads every run's "round N: dra D deviceplugin D" lines and its portwatch "down"
// lines, pools them, and prints the figures TestBenchDRA prints (test/e2e/bench_dra_test.go)
// computed the same way over the pooled values, with the same statistic
// (internal/benchstat): the median of the per-round ratios dra/deviceplugin with its
// distribution-free interval, and the ratio of the port-down medians with its interval
// from the two medians' intervals. Round times are read back as the log prints them
// (rounded to the millisecond).
//
// It takes a log only when its run passed and its round and portwatch lines add up to the
// counts of the run's own summary lines, and refuses two logs that hold the same round
// number: give each part BENCH_DRA_FIRST_ROUND after the last round of the one before, so
// that the parts alternate the order of the pair as one long run would.
package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/ringcap/ringcap/internal/benchstat"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchdra RUN.log...  (logs of `make bench-dra`)")
		os.Exit(2)
	}
	var runs []Run
	for _, path := range os.Args[1:] {
		b, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchdra: read log:", err)
			os.Exit(1)
		}
		r, err := ParseLog(string(b))
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchdra: %s: %v\n", path, err)
			os.Exit(1)
		}
		runs = append(runs, r)
	}
	lines, err := Combine(runs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchdra:", err)
		os.Exit(1)
	}
	for _, l := range lines {
		fmt.Println(l)
	}
}

// Round is one pod-start pair of a run, in seconds.
type Round struct {
	N                 int // as the log numbers it, from 1
	DRA, DevicePlugin float64
}

// PortRun is one port-down measurement of portwatch, in milliseconds.
type PortRun struct {
	Slice, ListAndWatch float64
}

// Run is what one passed `make bench-dra` log holds.
type Run struct {
	Rounds []Round
	Ports  []PortRun
}

var (
	rePass     = regexp.MustCompile(`(?m)^--- PASS: TestBenchDRA `)
	reRound    = regexp.MustCompile(`(?m)\bround (\d+): dra (\S+) deviceplugin (\S+)\s*$`)
	reRoundSum = regexp.MustCompile(`(?m)^bench-dra: ratio dra/deviceplugin=.*, (\d+) rounds, `)
	rePort     = regexp.MustCompile(`portwatch run=\d+ down slice_ms=([0-9.]+) listandwatch_ms=([0-9.]+)`)
	rePortSum  = regexp.MustCompile(`(?m)^bench-dra: port down -> .*\((\d+) runs, `)
)

// ParseLog reads the rounds and port-down runs of one `make bench-dra` log. It refuses a
// log whose run did not pass or whose lines do not match the run's own summary counts.
func ParseLog(log string) (Run, error) {
	var r Run
	if !rePass.MatchString(log) {
		return r, fmt.Errorf("no \"--- PASS: TestBenchDRA\": only runs that passed are combined")
	}
	for _, m := range reRound.FindAllStringSubmatch(log, -1) {
		rd, err := parseRound(m[1:])
		if err != nil {
			return r, err
		}
		r.Rounds = append(r.Rounds, rd)
	}
	for _, m := range rePort.FindAllStringSubmatch(log, -1) {
		s, err1 := strconv.ParseFloat(m[1], 64)
		l, err2 := strconv.ParseFloat(m[2], 64)
		if err1 != nil || err2 != nil {
			return r, fmt.Errorf("parse portwatch line %q", m[0])
		}
		r.Ports = append(r.Ports, PortRun{Slice: s, ListAndWatch: l})
	}
	if err := checkCount(log, reRoundSum, "round", len(r.Rounds)); err != nil {
		return r, err
	}
	return r, checkCount(log, rePortSum, "portwatch down", len(r.Ports))
}

// parseRound reads the number and the two durations of one round line.
func parseRound(f []string) (Round, error) {
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return Round{}, fmt.Errorf("parse round number %q: %w", f[0], err)
	}
	a, err := time.ParseDuration(f[1])
	if err != nil {
		return Round{}, fmt.Errorf("parse round %d dra time: %w", n, err)
	}
	b, err := time.ParseDuration(f[2])
	if err != nil {
		return Round{}, fmt.Errorf("parse round %d deviceplugin time: %w", n, err)
	}
	if a <= 0 || b <= 0 {
		return Round{}, fmt.Errorf("round %d: times must be positive (dra %v, deviceplugin %v)", n, a, b)
	}
	return Round{N: n, DRA: a.Seconds(), DevicePlugin: b.Seconds()}, nil
}

// checkCount compares got with the count in the run's summary line matched by re.
func checkCount(log string, re *regexp.Regexp, what string, got int) error {
	m := re.FindStringSubmatch(log)
	if m == nil {
		return fmt.Errorf("no summary line for the %s lines", what)
	}
	if want, _ := strconv.Atoi(m[1]); want != got {
		return fmt.Errorf("%s: %d lines, but the run's summary counts %d", what, got, want)
	}
	return nil
}

// Combine pools the runs and returns the figure lines, in TestBenchDRA's format.
func Combine(runs []Run) ([]string, error) {
	var dra, dp, ratios, slice, law []float64
	seen := map[int]bool{}
	draFirst := 0
	for _, r := range runs {
		for _, rd := range r.Rounds {
			if seen[rd.N] {
				return nil, fmt.Errorf("round %d is in two logs: give each part its own BENCH_DRA_FIRST_ROUND", rd.N)
			}
			seen[rd.N] = true
			if rd.N%2 == 1 { // alternateRounds: 0-based even rounds run dra first
				draFirst++
			}
			dra, dp = append(dra, rd.DRA), append(dp, rd.DevicePlugin)
			ratios = append(ratios, rd.DRA/rd.DevicePlugin)
		}
		for _, p := range r.Ports {
			slice, law = append(slice, p.Slice), append(law, p.ListAndWatch)
		}
	}
	if len(ratios) == 0 || len(slice) == 0 {
		return nil, fmt.Errorf("nothing to combine: %d rounds, %d port-down runs", len(ratios), len(slice))
	}
	r, lo, hi := benchstat.MedianCI(ratios)
	_, rc := benchstat.Rank(len(ratios))
	dm, _, _ := benchstat.MedianCI(dra)
	pm, _, _ := benchstat.MedianCI(dp)
	sm, slo, shi := benchstat.MedianCI(slice)
	lm, llo, lhi := benchstat.MedianCI(law)
	_, pc := benchstat.Rank(len(slice))
	return []string{
		fmt.Sprintf("bench-dra: ratio dra/deviceplugin=%.3f [%.3f, %.3f] (claim -> pod Running: dra median %.2f s, deviceplugin median %.2f s, %d rounds, goal <= 1.2; %d parts combined, dra first in %d rounds, interval coverage %.1f %%)",
			r, lo, hi, dm, pm, len(ratios), len(runs), draFirst, 100*rc),
		fmt.Sprintf("bench-dra: port down -> device leaves the slice %.0f ms [%.0f, %.0f], ListAndWatch unhealthy %.0f ms [%.0f, %.0f] (%d runs, rescan interval 1 s; %d parts combined, interval coverage %.1f %%)",
			sm, slo, shi, lm, llo, lhi, len(slice), len(runs), 100*pc),
		fmt.Sprintf("bench-dra: ratio slice/listandwatch=%.2f [%.2f, %.2f] (ratio of the medians; interval from the two medians' intervals)",
			sm/lm, slo/lhi, shi/llo),
	}, nil
}
