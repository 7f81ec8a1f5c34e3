package main

import (
	"errors"
	"fmt"

	"github.com/ringcap/ringcap/internal/benchstat"
)

// pool is the rounds and port-down runs of all parts of one benchmark, in the parts' order.
type pool struct {
	parts        int
	a, b, ratios []float64 // seconds; ratios a/b per round
	aFirst       int       // rounds in which a went first
	slice, law   []float64 // port-down milliseconds (bench-dra)
}

// Combine pools the runs, all of one benchmark, and returns the figure lines in its test's
// format.
func Combine(runs []Run) ([]string, error) {
	if len(runs) == 0 {
		return nil, errors.New("nothing to combine: no logs")
	}
	b := benchByTest(runs[0].Test)
	if b == nil {
		return nil, fmt.Errorf("part 1: not a log of %s", testNames())
	}
	for i, r := range runs[1:] {
		if r.Test != b.test {
			return nil, fmt.Errorf("part %d is a %s log, part 1 a %s one: combine the parts of one benchmark", i+2, r.Test, b.test)
		}
	}
	p, err := poolRuns(b, runs)
	if err != nil {
		return nil, err
	}
	return b.figures(p)
}

// poolRuns gathers the runs' values, refusing a round number that two runs hold.
func poolRuns(b *bench, runs []Run) (*pool, error) {
	p := &pool{parts: len(runs)}
	seen := map[int]bool{}
	for _, r := range runs {
		for _, rd := range r.Rounds {
			if seen[rd.N] {
				return nil, fmt.Errorf("round %d is in two logs: give each part its own %s", rd.N, b.firstEnv)
			}
			seen[rd.N] = true
			if rd.N%2 == 1 { // alternateRounds: 0-based even rounds run a first
				p.aFirst++
			}
			p.a, p.b = append(p.a, rd.A), append(p.b, rd.B)
			p.ratios = append(p.ratios, rd.A/rd.B)
		}
		for _, pr := range r.Ports {
			p.slice, p.law = append(p.slice, pr.Slice), append(p.law, pr.ListAndWatch)
		}
	}
	return p, nil
}

// draFigures are TestBenchDRA's three figure lines over the pool.
func draFigures(p *pool) ([]string, error) {
	if len(p.ratios) == 0 || len(p.slice) == 0 {
		return nil, fmt.Errorf("nothing to combine: %d rounds, %d port-down runs", len(p.ratios), len(p.slice))
	}
	r, lo, hi := benchstat.MedianCI(p.ratios)
	_, rc := benchstat.Rank(len(p.ratios))
	dm, _, _ := benchstat.MedianCI(p.a)
	pm, _, _ := benchstat.MedianCI(p.b)
	sm, slo, shi := benchstat.MedianCI(p.slice)
	lm, llo, lhi := benchstat.MedianCI(p.law)
	_, pc := benchstat.Rank(len(p.slice))
	return []string{
		fmt.Sprintf("bench-dra: ratio dra/deviceplugin=%.3f [%.3f, %.3f] (claim -> pod Running: dra median %.2f s, deviceplugin median %.2f s, %d rounds, goal <= 1.2; %d parts combined, dra first in %d rounds, interval coverage %.1f %%)",
			r, lo, hi, dm, pm, len(p.ratios), p.parts, p.aFirst, 100*rc),
		fmt.Sprintf("bench-dra: port down -> device leaves the slice %.0f ms [%.0f, %.0f], ListAndWatch unhealthy %.0f ms [%.0f, %.0f] (%d runs, rescan interval 1 s; %d parts combined, interval coverage %.1f %%)",
			sm, slo, shi, lm, llo, lhi, len(p.slice), p.parts, 100*pc),
		fmt.Sprintf("bench-dra: ratio slice/listandwatch=%.2f [%.2f, %.2f] (ratio of the medians; interval from the two medians' intervals)",
			sm/lm, slo/lhi, shi/llo),
	}, nil
}

// captureStartFigures is TestBenchCaptureStart's figure line over the pool.
func captureStartFigures(p *pool) ([]string, error) {
	if len(p.ratios) == 0 {
		return nil, errors.New("nothing to combine: 0 rounds")
	}
	r, lo, hi := benchstat.MedianCI(p.ratios)
	_, rc := benchstat.Rank(len(p.ratios))
	cm, clo, chi := benchstat.MedianCI(p.a)
	pm, plo, phi := benchstat.MedianCI(p.b)
	return []string{
		fmt.Sprintf("bench-capture-start: ratio capture-start/pod-start=%.2f [%.2f, %.2f] (apply -> Listening with endpoint: median %.2f s [%.2f, %.2f]; plain pod -> Running: median %.2f s [%.2f, %.2f]; %d rounds; %d parts combined, capture first in %d rounds, interval coverage %.1f %%)",
			r, lo, hi, cm, clo, chi, pm, plo, phi, len(p.ratios), p.parts, p.aFirst, 100*rc),
	}, nil
}
