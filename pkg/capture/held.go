package capture

import (
	"time"

	"github.com/ringcap/ringcap/pkg/capture/status"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// The receiver tells its sender of holds (status.HoldClock) with Held
// messages, whose progress lines and summary say so.

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
func (r *holdReporter) due(now time.Time, s status.HoldState) bool {
	switch {
	case r.holding && !s.Holding:
		return true
	case !s.Holding && s.Total == r.total:
		return false
	}
	return now.Sub(r.last) >= heldReportEvery
}

// message records that s goes out at now and returns its Held message.
func (r *holdReporter) message(now time.Time, s status.HoldState) wire.Held {
	r.last, r.holding, r.total = now, s.Holding, s.Total
	return wire.Held{Holding: s.Holding, Nanos: uint64(s.Total), HoldNanos: uint64(s.Current)}
}
