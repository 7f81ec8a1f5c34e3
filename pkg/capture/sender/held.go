package sender

import (
	"sync"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// heldView is what a sender knows of the receiver's holds: the last Held
// message and when it came, read forward to now while a hold goes on.
type heldView struct {
	mu   sync.Mutex
	last wire.Held
	at   time.Time
}

func (v *heldView) note(m wire.Held, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.last, v.at = m, now
}

// heldState is the receiver's held-back time as of one moment.
type heldState struct {
	holding bool
	current time.Duration // how long the hold going on has lasted
	total   time.Duration // every hold, the one going on included
}

// state is the receiver's held-back time as of now.
func (v *heldView) state(now time.Time) heldState {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := heldState{holding: v.last.Holding, total: time.Duration(v.last.Nanos)}
	if s.holding {
		d := max(0, now.Sub(v.at))
		s.current = time.Duration(v.last.HoldNanos) + d
		s.total += d
	}
	return s
}
