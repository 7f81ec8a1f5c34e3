package capture

import (
	"time"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// A receiver is held back while no ring block is free for the stream: its
// ring's slowest reader still holds the block the stream needs next. The
// time counts live, the hold going on now included, in the receiver's status
// and metrics, and the receiver tells its sender (Held messages), whose
// progress lines and summary say so.

// holdClock measures held-back time: holds that ended and the one going on.
type holdClock struct {
	since time.Time     // when the hold going on began (zero: none)
	done  time.Duration // holds that ended
}

// holdState is a holdClock read at one moment.
type holdState struct {
	holding bool
	since   time.Time     // when the hold going on began
	current time.Duration // how long the hold going on has lasted
	total   time.Duration // every hold, the one going on included
}

// begin starts a hold at now unless one is going on.
func (c *holdClock) begin(now time.Time) {
	if c.since.IsZero() {
		c.since = now
	}
}

// end ends the hold going on, if any, at now.
func (c *holdClock) end(now time.Time) {
	if !c.since.IsZero() {
		c.done += max(0, now.Sub(c.since))
		c.since = time.Time{}
	}
}

func (c *holdClock) at(now time.Time) holdState {
	s := holdState{total: c.done}
	if !c.since.IsZero() {
		s.holding, s.since = true, c.since
		s.current = max(0, now.Sub(c.since))
		s.total += s.current
	}
	return s
}

// heldReportEvery is how often at most a receiver tells its sender about
// holds: often enough for a progress line, rarely enough that a stream paced
// by its reader (a short hold before every block) does not send a message per
// block.
const heldReportEvery = 200 * time.Millisecond

// holdReporter decides when a receiver sends its sender a Held message.
type holdReporter struct {
	last    time.Time // when the last Held message went out
	holding bool      // what it said
	total   time.Duration
}

// due reports whether the state s is news worth a Held message at now: the
// end of a hold the sender was told of at once, anything else new at most
// every heldReportEvery.
func (r *holdReporter) due(now time.Time, s holdState) bool {
	switch {
	case r.holding && !s.holding:
		return true
	case !s.holding && s.total == r.total:
		return false
	}
	return now.Sub(r.last) >= heldReportEvery
}

// message records that s goes out at now and returns its Held message.
func (r *holdReporter) message(now time.Time, s holdState) wire.Held {
	r.last, r.holding, r.total = now, s.holding, s.total
	return wire.Held{Holding: s.holding, Nanos: uint64(s.total), HoldNanos: uint64(s.current)}
}
