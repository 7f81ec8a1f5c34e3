package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// bench is one benchmark whose logs the tool reads.
type bench struct {
	test     string         // the test's name, as its "--- PASS:" line gives it
	firstEnv string         // the environment variable numbering a part's first round
	a, b     string         // the pair's names in the round lines, a first in odd rounds
	roundSum *regexp.Regexp // the run's summary line of its rounds; group 1 counts them
	ports    bool           // the run also reports portwatch's port-down runs
	figures  func(p *pool) ([]string, error)
	pass     *regexp.Regexp
	round    *regexp.Regexp
}

// benches are the benchmarks the tool reads: the round lines are alternateRounds' in
// test/e2e/bench_dra_test.go, the summary lines the tests' report calls.
var benches = []*bench{
	newBench("TestBenchDRA", "BENCH_DRA_FIRST_ROUND", "dra", "deviceplugin",
		`(?m)^bench-dra: ratio dra/deviceplugin=.*, (\d+) rounds, `, true, draFigures),
	newBench("TestBenchCaptureStart", "BENCH_START_FIRST_ROUND", "capture", "pod",
		`(?m)^bench-capture-start: ratio capture-start/pod-start=.*; (\d+) rounds\)`, false, captureStartFigures),
}

func newBench(test, firstEnv, a, b, roundSum string, ports bool, figures func(*pool) ([]string, error)) *bench {
	return &bench{
		test: test, firstEnv: firstEnv, a: a, b: b,
		roundSum: regexp.MustCompile(roundSum), ports: ports, figures: figures,
		pass:  regexp.MustCompile(`(?m)^--- PASS: ` + test + ` `),
		round: regexp.MustCompile(`(?m)\bround (\d+): ` + a + ` (\S+) ` + b + ` (\S+)\s*$`),
	}
}

// benchByTest returns the benchmark of the test named, nil when there is none.
func benchByTest(test string) *bench {
	for _, b := range benches {
		if b.test == test {
			return b
		}
	}
	return nil
}

// testNames lists the tests of benches, for messages.
func testNames() string {
	var names []string
	for _, b := range benches {
		names = append(names, b.test)
	}
	return strings.Join(names, ", ")
}

// Round is one pair of a run, in seconds: A is the first of the pair in the round line
// (dra, capture), B the second (deviceplugin, pod).
type Round struct {
	N    int // as the log numbers it, from 1
	A, B float64
}

// PortRun is one port-down measurement of portwatch, in milliseconds.
type PortRun struct {
	Slice, ListAndWatch float64
}

// Run is what one passed log holds.
type Run struct {
	Test   string // the benchmark's test: TestBenchDRA or TestBenchCaptureStart
	Rounds []Round
	Ports  []PortRun // bench-dra only
}

var (
	reFailed  = regexp.MustCompile(`(?m)^\s*--- FAIL: \S+|^panic: .*$`)
	rePort    = regexp.MustCompile(`portwatch run=\d+ down slice_ms=([0-9.]+) listandwatch_ms=([0-9.]+)`)
	rePortSum = regexp.MustCompile(`(?m)^bench-dra: port down -> .*\((\d+) runs, `)
)

// ParseLog reads the rounds (and, for bench-dra, the port-down runs) of one benchmark log.
// It refuses a log whose run did not pass, that holds the passes of two benchmarks, or whose
// lines do not match the run's own summary counts.
func ParseLog(log string) (Run, error) {
	if m := reFailed.FindString(log); m != "" {
		return Run{}, fmt.Errorf("the run failed (%q): only runs that passed are combined", strings.TrimSpace(m))
	}
	b, err := benchOf(log)
	if err != nil {
		return Run{}, err
	}
	r := Run{Test: b.test}
	for _, m := range b.round.FindAllStringSubmatch(log, -1) {
		rd, err := parseRound(b, m[1:])
		if err != nil {
			return r, err
		}
		r.Rounds = append(r.Rounds, rd)
	}
	if err := checkCount(log, b.roundSum, "round", len(r.Rounds)); err != nil {
		return r, err
	}
	if !b.ports {
		return r, nil
	}
	for _, m := range rePort.FindAllStringSubmatch(log, -1) {
		s, err1 := strconv.ParseFloat(m[1], 64)
		l, err2 := strconv.ParseFloat(m[2], 64)
		if err1 != nil || err2 != nil {
			return r, fmt.Errorf("parse portwatch line %q", m[0])
		}
		r.Ports = append(r.Ports, PortRun{Slice: s, ListAndWatch: l})
	}
	return r, checkCount(log, rePortSum, "portwatch down", len(r.Ports))
}

// benchOf returns the one benchmark whose test passed in log.
func benchOf(log string) (*bench, error) {
	var found []*bench
	for _, b := range benches {
		if b.pass.MatchString(log) {
			found = append(found, b)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no \"--- PASS:\" line of %s: only runs that passed are combined", testNames())
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("passes of both %s and %s in one log: give each run its own log", found[0].test, found[1].test)
}

// parseRound reads the number and the two durations of one round line of b.
func parseRound(b *bench, f []string) (Round, error) {
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return Round{}, fmt.Errorf("parse round number %q: %w", f[0], err)
	}
	da, err := time.ParseDuration(f[1])
	if err != nil {
		return Round{}, fmt.Errorf("parse round %d %s time: %w", n, b.a, err)
	}
	db, err := time.ParseDuration(f[2])
	if err != nil {
		return Round{}, fmt.Errorf("parse round %d %s time: %w", n, b.b, err)
	}
	if da <= 0 || db <= 0 {
		return Round{}, fmt.Errorf("round %d: times must be positive (%s %v, %s %v)", n, b.a, da, b.b, db)
	}
	return Round{N: n, A: da.Seconds(), B: db.Seconds()}, nil
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
