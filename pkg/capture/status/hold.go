package status

import "time"

// A receiver is held back while no ring block is free for the stream: its
// ring's slowest reader still holds the block the stream needs next. The
// time counts live, the hold going on now included, in the receiver's status
// and metrics, and the receiver tells its sender, whose progress lines and
// summary say so.

// HoldClock measures held-back time: holds that ended and the one going on.
type HoldClock struct {
	since time.Time     // when the hold going on began (zero: none)
	done  time.Duration // holds that ended
}

// HoldState is a HoldClock read at one moment.
type HoldState struct {
	Holding bool
	Since   time.Time     // when the hold going on began
	Current time.Duration // how long the hold going on has lasted
	Total   time.Duration // every hold, the one going on included
}

// Begin starts a hold at now unless one is going on.
func (c *HoldClock) Begin(now time.Time) {
	if c.since.IsZero() {
		c.since = now
	}
}

// End ends the hold going on, if any, at now.
func (c *HoldClock) End(now time.Time) {
	if !c.since.IsZero() {
		c.done += max(0, now.Sub(c.since))
		c.since = time.Time{}
	}
}

// Holding reports whether a hold is going on.
func (c *HoldClock) Holding() bool { return !c.since.IsZero() }

// Ended is the time of the holds that ended.
func (c *HoldClock) Ended() time.Duration { return c.done }

// At reads the clock at now.
func (c *HoldClock) At(now time.Time) HoldState {
	s := HoldState{Total: c.done}
	if !c.since.IsZero() {
		s.Holding, s.Since = true, c.since
		s.Current = max(0, now.Sub(c.since))
		s.Total += s.Current
	}
	return s
}
