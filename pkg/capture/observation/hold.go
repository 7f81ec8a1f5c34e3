package observation

import (
	"time"

	"github.com/ringcap/ringcap/pkg/capture/status"
)

// HoldBegan starts a hold (no ring block free for the stream), in the
// observation's account and the receiver's status, unless one is going on.
func (o *Observation) HoldBegan() {
	if !o.held.Holding() {
		now := time.Now()
		o.held.Begin(now)
		o.cfg.Tracker.HoldBegan(now)
	}
}

// HoldEnded ends the hold going on, if any (a block came free).
func (o *Observation) HoldEnded() {
	if o.held.Holding() {
		now := time.Now()
		o.held.End(now)
		o.cfg.Tracker.HoldEnded(now)
	}
}

// Holds is the observation's account of holds.
func (o *Observation) Holds() *status.HoldClock { return &o.held }
