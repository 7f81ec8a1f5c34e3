package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/ringcap/ringcap/internal/benchstat"
)

// rateGoal is issue 53's goal for ringcap's highest loss-free rate against the floor's.
const rateGoal = 0.9

// round is one round's results: each receiver's search and its CPU run.
type round struct {
	floor, ringcap       found
	cpuFloor, cpuRingcap result
}

func (r round) String() string {
	return fmt.Sprintf("loss-free up to ringcap %s, floor %s; CPU-s/GiB at %.0f MiB/s ringcap %.2f, floor %.2f",
		r.ringcap.describe(), r.floor.describe(), r.cpuRingcap.rate/mib, r.cpuRingcap.cpuPerGiB(), r.cpuFloor.cpuPerGiB())
}

func (f found) describe() string {
	s := fmt.Sprintf("%.0f MiB/s (%d runs)", f.Rate/mib, f.Trials)
	switch {
	case f.AtMax:
		s += " at the search's -max"
	case f.SenderBound:
		s += " at the sender's ceiling"
	}
	return s
}

// round runs both searches, in an order alternating with i, then both CPU runs.
func (b *bench) round(i int) (round, error) {
	kinds := []string{kindFloor, kindRingcap}
	if i%2 == 1 {
		kinds = []string{kindRingcap, kindFloor}
	}
	var r round
	for _, k := range kinds {
		f, err := search(b.o.search, func(rate float64) (outcome, error) {
			res, err := b.trial(k, rate, b.o.duration.Seconds())
			return outcome{lossFree: res.lossFree(), achieved: res.sent.rate()}, err
		})
		if err != nil && !errors.Is(err, errNoLossFree) { // none: Rate 0, left out of the ratio
			return r, fmt.Errorf("%s: %w", k, err)
		}
		if k == kindFloor {
			r.floor = f
		} else {
			r.ringcap = f
		}
	}
	for _, k := range kinds {
		res, err := b.trial(k, b.o.cpuRate, b.o.cpuDur.Seconds())
		if err != nil {
			return r, fmt.Errorf("%s at %.0f MiB/s: %w", k, b.o.cpuRate/mib, err)
		}
		if k == kindFloor {
			r.cpuFloor = res
		} else {
			r.cpuRingcap = res
		}
	}
	return r, nil
}

// errNoRounds is returned when no round found a loss-free rate of both receivers.
var errNoRounds = errors.New("no round found a loss-free rate of both receivers: the machine is too busy, or the rates searched too high (-min)")

// summarize prints the two ratio lines: the medians of the rounds' ratios, their
// intervals and what they rest on. A round where a receiver had no loss-free rate is left
// out of the rate ratio, and said so.
func summarize(w io.Writer, rs []round, o *options) error {
	var rate, cpu, rr, fr, rc, fc []float64
	bound, lossy, none := 0, 0, 0
	for _, r := range rs {
		if r.ringcap.Rate > 0 && r.floor.Rate > 0 {
			rate, rr, fr = append(rate, r.ringcap.Rate/r.floor.Rate), append(rr, r.ringcap.Rate/mib), append(fr, r.floor.Rate/mib)
		} else {
			none++
		}
		cpu, rc, fc = append(cpu, r.cpuRingcap.cpuPerGiB()/r.cpuFloor.cpuPerGiB()), append(rc, r.cpuRingcap.cpuPerGiB()), append(fc, r.cpuFloor.cpuPerGiB())
		if r.floor.SenderBound || r.ringcap.SenderBound {
			bound++
		}
		if !r.cpuRingcap.lossFree() || !r.cpuFloor.lossFree() {
			lossy++
		}
	}
	if len(rate) == 0 {
		return errNoRounds
	}
	med, lo, hi := benchstat.MedianCI(rate)
	how := fmt.Sprintf("SPEAD, 8 KiB packets on 127.0.0.1, receivers on CPU %d, sender and ring reader on CPU %d", o.recvCPU, o.sendCPU)
	_, _ = fmt.Fprintf(w, "ratio ringcap/recvmmsg-floor=%.3f [%.3f, %.3f]  goal ≥ %.1f: %s; highest loss-free rate ringcap %.0f MiB/s, floor %.0f MiB/s (medians)%s%s  (%s, %d rounds of a rate search, runs of %s)\n",
		med, lo, hi, rateGoal, verdict(med, lo, rateGoal), median(rr), median(fr), boundNote(bound, len(rs)), noneNote(none, len(rs)), how, len(rate), o.duration)
	med, lo, hi = benchstat.MedianCI(cpu)
	_, _ = fmt.Fprintf(w, "ratio ringcap-cpu/recvmmsg-floor-cpu=%.3f [%.3f, %.3f]  receiver CPU seconds per GiB at %.0f MiB/s: ringcap %.3f, floor %.3f (medians)%s  (%s of %s)\n",
		med, lo, hi, o.cpuRate/mib, median(rc), median(fc), lossyNote(lossy, len(rs)), how+fmt.Sprintf(", %d rounds", len(rs)), o.cpuDur)
	return nil
}

func noneNote(none, rounds int) string {
	if none == 0 {
		return ""
	}
	return fmt.Sprintf("; %d of %d rounds left out: a receiver lost packets at every rate tried", none, rounds)
}

// verdict says whether a ratio with goal "≥ goal" met it, by its median and its interval.
func verdict(med, lo, goal float64) string {
	switch {
	case lo >= goal:
		return "met"
	case med >= goal:
		return "met by the median, not by the interval"
	}
	return "not met"
}

func boundNote(bound, rounds int) string {
	if bound == 0 {
		return ""
	}
	return fmt.Sprintf("; in %d of %d rounds the sender's ceiling (or -max) ended a search: a floor for the receiver's rate, not its limit", bound, rounds)
}

func lossyNote(lossy, rounds int) string {
	if lossy == 0 {
		return ""
	}
	return fmt.Sprintf("; %d of %d rounds lost packets at this rate", lossy, rounds)
}

func median(xs []float64) float64 {
	m, _, _ := benchstat.MedianCI(xs)
	return m
}
