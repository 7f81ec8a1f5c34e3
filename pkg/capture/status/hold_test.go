package status

import (
	"testing"
	"time"
)

func TestHoldClock(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var c HoldClock
	if s := c.At(t0); s.Holding || s.Total != 0 {
		t.Fatalf("new clock: %+v", s)
	}
	c.Begin(t0)
	c.Begin(t0.Add(time.Second)) // a hold going on goes on
	if s := c.At(t0.Add(3 * time.Second)); !s.Holding || s.Current != 3*time.Second || s.Total != 3*time.Second || !s.Since.Equal(t0) {
		t.Fatalf("during the first hold: %+v", s)
	}
	c.End(t0.Add(4 * time.Second))
	c.End(t0.Add(5 * time.Second)) // no hold: nothing to end
	c.Begin(t0.Add(10 * time.Second))
	if s := c.At(t0.Add(12 * time.Second)); !s.Holding || s.Current != 2*time.Second || s.Total != 6*time.Second {
		t.Fatalf("during the second hold: %+v", s)
	}
	c.End(t0.Add(13 * time.Second))
	if s := c.At(t0.Add(20 * time.Second)); s.Holding || s.Current != 0 || s.Total != 7*time.Second {
		t.Fatalf("after both holds: %+v", s)
	}
}
