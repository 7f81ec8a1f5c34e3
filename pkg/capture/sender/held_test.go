package sender

import (
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/wire"
)

func TestHeldViewReadsForward(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var v heldView
	v.note(wire.Held{Holding: true, Nanos: uint64(5 * time.Second), HoldNanos: uint64(2 * time.Second)}, t0)
	if s := v.state(t0.Add(time.Second)); !s.holding || s.current != 3*time.Second || s.total != 6*time.Second {
		t.Fatalf("during a hold: %+v", s)
	}
	v.note(wire.Held{Nanos: uint64(7 * time.Second)}, t0.Add(2*time.Second))
	if s := v.state(t0.Add(time.Hour)); s.holding || s.total != 7*time.Second {
		t.Fatalf("after the hold: %+v", s)
	}
}
