package capture

import (
	"time"
)

// Completion coalescing: a receive loop that sleeps on a completion event per
// message pays a wake-up, an arming and an event read for each; at moderate
// rates (the loop idles between messages) that is most of its CPU. A reader
// sees data only a block at a time, so while messages arrive at a steady rate
// the loop instead sleeps on a timer for a fraction of a block's time and
// takes the completions that came meanwhile in one pass: what interrupt
// moderation does in a NIC. The sleep is bounded by the receives the sender
// can still use, so it never holds the sender back.

const (
	// maxCoalesce bounds a coalescing sleep: data waits at most this long
	// before it is landed and its block committed.
	maxCoalesce = 20 * time.Millisecond
	// rateGap is a pause after which the measured rate no longer holds.
	rateGap = time.Second
	// rateWeight is the weight of the newest sample in the rate's moving average.
	rateWeight = 0.25
)

// rateMeter measures the rate of completions: the loop adds what each pass
// reaps and takes a sample at the start of each idle spell.
type rateMeter struct {
	last  time.Time // the last sample
	count int       // completions since then
	rate  float64   // completions per second; 0 while unknown
}

// add counts n completions reaped.
func (m *rateMeter) add(n int) { m.count += n }

// sample updates the rate with the completions counted since the last sample.
func (m *rateMeter) sample(now time.Time) {
	dt := now.Sub(m.last)
	switch {
	case m.last.IsZero() || dt > rateGap:
		m.rate = 0
	case dt <= 0:
		return // the same instant: the count goes into the next sample
	case m.rate == 0:
		m.rate = float64(m.count) / dt.Seconds()
	default:
		m.rate += rateWeight * (float64(m.count)/dt.Seconds() - m.rate)
	}
	m.last, m.count = now, 0
}

// coalescePeriod is how long an idle receive loop may sleep before it polls,
// given the completion rate (per second), the messages a block holds and the
// receives every queue pair has posted that the sender may use (the fewest of
// any queue pair, times the queue pairs): a quarter of a block's time and half
// of the time those receives last, at most maxCoalesce. It is 0 (sleep on the
// next completion instead) when the rate is unknown or the sleep would not
// take at least two completions.
func coalescePeriod(rate float64, perBlock, usable int) time.Duration {
	if rate <= 0 || perBlock <= 0 || usable <= 0 {
		return 0
	}
	secs := min(float64(perBlock)/rate/4, float64(usable)/rate/2, maxCoalesce.Seconds())
	if secs*rate < 2 {
		return 0
	}
	return time.Duration(secs * float64(time.Second))
}
