package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/benchstat"
)

// e2eFormats are the strings TestBenchCaptureStart prints its lines with, read from the e2e
// sources, so that the logs written here are the test's own format and a change there fails
// here: the round line of alternateRounds, the pair's names and the summary line.
type e2eFormats struct {
	round, a, b, summary string
}

func readE2EFormats(t *testing.T) e2eFormats {
	t.Helper()
	var f e2eFormats
	for _, file := range []string{"bench_dra_test.go", "bench_start_test.go"} {
		inspectCalls(t, filepath.Join("..", "..", "test", "e2e", file), func(name string, args []ast.Expr) {
			switch {
			case name == "Logf" && strings.HasPrefix(literal(args, 0), "round "):
				f.round = literal(args, 0)
			case name == "alternateRounds" && file == "bench_start_test.go":
				f.a, f.b = literal(args, 3), literal(args, 4)
			case name == "report" && strings.HasPrefix(literal(args, 1), "bench-capture-start: "):
				f.summary = literal(args, 1)
			}
		})
	}
	if f.round == "" || f.a == "" || f.b == "" || f.summary == "" {
		t.Fatalf("test/e2e: round line, pair names or summary line not found: %+v", f)
	}
	return f
}

// inspectCalls calls fn with the name and arguments of every call in the Go file at path.
func inspectCalls(t *testing.T, path string, fn func(name string, args []ast.Expr)) {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	ast.Inspect(file, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			switch f := c.Fun.(type) {
			case *ast.Ident:
				fn(f.Name, c.Args)
			case *ast.SelectorExpr:
				fn(f.Sel.Name, c.Args)
			}
		}
		return true
	})
}

// literal is the value of args[i] when it is a string literal, "" otherwise.
func literal(args []ast.Expr, i int) string {
	if i >= len(args) {
		return ""
	}
	l, ok := args[i].(*ast.BasicLit)
	if !ok || l.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(l.Value)
	if err != nil {
		return ""
	}
	return s
}

// captureLog writes the output of a passed TestBenchCaptureStart run of the rounds from first
// with the times given (whole milliseconds), as the test prints it, and returns it with
// its summary line.
func captureLog(f e2eFormats, first int, times [][2]time.Duration) (log, summary string) {
	var sb strings.Builder
	sb.WriteString("=== RUN   TestBenchCaptureStart\n    bench_start_test.go:31: node allocatable ringcap.io/rdma: 2\n")
	var capt, pod, ratios []float64
	for i, tm := range times {
		fmt.Fprintf(&sb, "    bench_start_test.go:45: RingCapture bench-start-%d and its pods gone: pods []\n", first+i-1)
		fmt.Fprintf(&sb, "    bench_start_test.go:49: "+f.round+"\n", first+i, f.a, tm[0], f.b, tm[1])
		capt, pod = append(capt, tm[0].Seconds()), append(pod, tm[1].Seconds())
		ratios = append(ratios, tm[0].Seconds()/tm[1].Seconds())
	}
	r, lo, hi := benchstat.MedianCI(ratios)
	cm, clo, chi := benchstat.MedianCI(capt)
	pm, plo, phi := benchstat.MedianCI(pod)
	summary = fmt.Sprintf(f.summary, r, lo, hi, cm, clo, chi, pm, plo, phi, len(ratios))
	fmt.Fprintf(&sb, "%s\n    bench_start_test.go:51: %s\n", summary, summary)
	sb.WriteString("--- PASS: TestBenchCaptureStart (612.34s)\nPASS\n")
	return sb.String(), summary
}

func ms(v ...int) [][2]time.Duration {
	var out [][2]time.Duration
	for i := 0; i+1 < len(v); i += 2 {
		out = append(out, [2]time.Duration{time.Duration(v[i]) * time.Millisecond, time.Duration(v[i+1]) * time.Millisecond})
	}
	return out
}

// tenRounds are the nine rounds of testdata/capture-start-timeout-9rounds.log and a tenth.
var tenRounds = ms(62179, 21701, 23565, 25818, 19276, 8406, 40743, 25476, 15874, 24656,
	17594, 16554, 15122, 10017, 15119, 12183, 34502, 26256, 20000, 15000)

func parseCapture(t *testing.T, log string) Run {
	t.Helper()
	r, err := ParseLog(log)
	if err != nil {
		t.Fatalf("ParseLog: %v", err)
	}
	if r.Test != "TestBenchCaptureStart" || len(r.Ports) != 0 {
		t.Fatalf("parsed a %q run with %d port-down runs", r.Test, len(r.Ports))
	}
	return r
}

// Combining one run alone gives back the run's own figure, with the parts' note appended.
func TestCaptureStartOneRunGivesItsOwnFigure(t *testing.T) {
	f := readE2EFormats(t)
	log, summary := captureLog(f, 1, tenRounds[:5])
	r := parseCapture(t, log)
	if len(r.Rounds) != 5 || r.Rounds[0] != (Round{N: 1, A: 62.179, B: 21.701}) {
		t.Fatalf("parsed rounds %+v", r.Rounds)
	}
	lines, err := Combine([]Run{r})
	if err != nil {
		t.Fatalf("Combine: %v", err)
	}
	want := strings.TrimSuffix(summary, ")") + "; 1 parts combined, capture first in 3 rounds, interval coverage 93.8 %)"
	if len(lines) != 1 || lines[0] != want {
		t.Errorf("got  %q\nwant %q", lines, want)
	}
}

// Two parts of five rounds give the figure of benchstat.MedianCI over the ten pooled rounds,
// in either order of the logs.
func TestCaptureStartPoolsParts(t *testing.T) {
	f := readE2EFormats(t)
	log1, _ := captureLog(f, 1, tenRounds[:5])
	log2, _ := captureLog(f, 6, tenRounds[5:])
	a, b := parseCapture(t, log1), parseCapture(t, log2)
	var capt, pod, ratios []float64
	for _, tm := range tenRounds {
		capt, pod = append(capt, tm[0].Seconds()), append(pod, tm[1].Seconds())
		ratios = append(ratios, tm[0].Seconds()/tm[1].Seconds())
	}
	r, lo, hi := benchstat.MedianCI(ratios)
	cm, clo, chi := benchstat.MedianCI(capt)
	pm, plo, phi := benchstat.MedianCI(pod)
	_, cov := benchstat.Rank(10)
	want := strings.TrimSuffix(fmt.Sprintf(f.summary, r, lo, hi, cm, clo, chi, pm, plo, phi, 10), ")") +
		fmt.Sprintf("; 2 parts combined, capture first in 5 rounds, interval coverage %.1f %%)", 100*cov)
	for _, runs := range [][]Run{{a, b}, {b, a}} {
		lines, err := Combine(runs)
		if err != nil {
			t.Fatalf("Combine: %v", err)
		}
		if len(lines) != 1 || lines[0] != want {
			t.Errorf("got  %q\nwant %q", lines, want)
		}
	}
}

// The figure worked out by hand: ratios 0.5, 2.0167, 1; capture 10, 60.5, 30 s; pod 20, 30,
// 30 s; three values give the range at 75 % coverage.
func TestCaptureStartByHand(t *testing.T) {
	f := readE2EFormats(t)
	log1, _ := captureLog(f, 1, ms(10000, 20000, 60500, 30000))
	log2, _ := captureLog(f, 3, ms(30000, 30000))
	lines, err := Combine([]Run{parseCapture(t, log1), parseCapture(t, log2)})
	if err != nil {
		t.Fatal(err)
	}
	want := "bench-capture-start: ratio capture-start/pod-start=1.00 [0.50, 2.02] (apply -> Listening with endpoint: median 30.00 s [10.00, 60.50]; plain pod -> Running: median 30.00 s [20.00, 30.00]; 3 rounds; 2 parts combined, capture first in 2 rounds, interval coverage 75.0 %)"
	if len(lines) != 1 || lines[0] != want {
		t.Errorf("got  %q\nwant %q", lines, want)
	}
}

func TestCaptureStartRefused(t *testing.T) {
	f := readE2EFormats(t)
	good, _ := captureLog(f, 1, tenRounds[:5])
	timedOut, err := os.ReadFile("testdata/capture-start-timeout-9rounds.log")
	if err != nil {
		t.Fatal(err)
	}
	cut, _, _ := strings.Cut(string(timedOut), "panic: ")
	dra := partLog(1, [][2]string{{"10s", "20s"}})
	for name, c := range map[string]struct{ log, err string }{
		// an excerpt of a real run of an older commit that hit the 14 min test timeout after 9 rounds
		"timed out":          {string(timedOut), `the run failed ("panic: test timed out after 14m0s")`},
		"cut before the end": {cut, `no "--- PASS:" line`},
		"run failed":         {strings.Replace(good, "--- PASS", "--- FAIL", 1), "the run failed"},
		"round line missing": {strings.Replace(good, "round 2:", "rnd 2:", 1), "round: 4 lines, but the run's summary counts 5"},
		"count mismatch":     {strings.Replace(good, "; 5 rounds)", "; 6 rounds)", 1), "round: 5 lines, but the run's summary counts 6"},
		"no summary":         {strings.Replace(good, "\nbench-capture-start: ratio", "\nratio", 1), "no summary line"},
		"bad duration":       {strings.Replace(good, "capture 1m2.179s", "capture 1m2.179", 1), "parse round 1 capture time"},
		"zero time":          {strings.Replace(good, "pod 21.701s", "pod 0s", 1), "times must be positive"},
		"two benchmarks":     {good + dra, "passes of both TestBenchDRA and TestBenchCaptureStart"},
	} {
		if _, err := ParseLog(c.log); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: ParseLog: err %v, want one saying %q", name, err, c.err)
		}
	}
	overlap, _ := captureLog(f, 5, tenRounds[5:])
	if _, err := Combine([]Run{parseCapture(t, good), parseCapture(t, overlap)}); err == nil ||
		!strings.Contains(err.Error(), "round 5 is in two logs: give each part its own BENCH_START_FIRST_ROUND") {
		t.Errorf("Combine of overlapping parts: err %v", err)
	}
	draRun, err := ParseLog(dra)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Combine([]Run{parseCapture(t, good), draRun}); err == nil ||
		!strings.Contains(err.Error(), "part 2 is a TestBenchDRA log, part 1 a TestBenchCaptureStart one") {
		t.Errorf("Combine of a capture-start and a bench-dra log: err %v", err)
	}
}

// combineFiles (what the make targets run) refuses a log of the other benchmark and an
// unknown -test, and combines the logs of the one named.
func TestCombineFilesWantsOneBenchmark(t *testing.T) {
	f := readE2EFormats(t)
	dir := t.TempDir()
	write := func(name, log string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(log), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	log1, _ := captureLog(f, 1, tenRounds[:5])
	log2, _ := captureLog(f, 6, tenRounds[5:])
	p1, p2 := write("p1.log", log1), write("p2.log", log2)
	dra := write("dra.log", partLog(1, [][2]string{{"10s", "20s"}}))
	lines, err := combineFiles("TestBenchCaptureStart", []string{p1, p2})
	if err != nil || len(lines) != 1 || !strings.Contains(lines[0], "; 10 rounds; 2 parts combined,") {
		t.Errorf("combineFiles of two capture-start parts: %q, %v", lines, err)
	}
	for _, c := range []struct {
		want  string
		paths []string
		err   string
	}{
		{"TestBenchCaptureStart", []string{p1, dra}, "a TestBenchDRA log, but TestBenchCaptureStart logs are combined here"},
		{"TestBenchDRA", []string{p1}, "a TestBenchCaptureStart log, but TestBenchDRA logs are combined here"},
		{"TestBenchStart", []string{p1}, "-test TestBenchStart: not a benchmark"},
		{"", []string{p1, filepath.Join(dir, "missing.log")}, "read log"},
	} {
		if _, err := combineFiles(c.want, c.paths); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("combineFiles(%q, %v): err %v, want one saying %q", c.want, c.paths, err, c.err)
		}
	}
}
