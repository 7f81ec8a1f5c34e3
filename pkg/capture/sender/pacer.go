package sender

import "time"

// pacer holds the stream to its rate: the bytes after the first sent are due
// sent/rate after the start. It only tells how long to wait; the session
// waits outside staging, after posting what is staged.
type pacer struct {
	rate  float64 // bytes per second (0: unlimited)
	start time.Time
	now   func() time.Time
	sleep func(time.Duration)
}

// newPacer paces at rate bytes per second (0: unlimited) from start, on the
// wall clock.
func newPacer(rate float64, start time.Time) pacer {
	return pacer{rate: rate, start: start, now: time.Now, sleep: time.Sleep}
}

// limited reports whether there is a rate to hold (checked before wait, so an
// unlimited stream pays no call a message).
func (p *pacer) limited() bool { return p.rate > 0 }

// wait is how long until the bytes after sent are due (0 or less: now).
func (p pacer) wait(sent uint64) time.Duration {
	if p.rate <= 0 {
		return 0
	}
	due := p.start.Add(time.Duration(float64(sent) / p.rate * float64(time.Second)))
	return due.Sub(p.now())
}
