package sender

import (
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
)

// fakeClock is a pacer's clock that moves only when it sleeps.
type fakeClock struct {
	now   time.Time
	slept []time.Duration
}

func (c *fakeClock) pacer(rate float64) pacer {
	return pacer{rate: rate, start: c.now, now: func() time.Time { return c.now }, sleep: func(d time.Duration) {
		c.slept = append(c.slept, d)
		c.now = c.now.Add(d)
	}}
}

// The bytes after the first sent are due sent/rate after the start; without
// a rate everything is due at once.
func TestPacerWait(t *testing.T) {
	c := &fakeClock{now: time.Unix(1000, 0)}
	p := c.pacer(100) // bytes per second
	c.now = c.now.Add(time.Second)
	for _, x := range []struct {
		sent uint64
		want time.Duration
	}{
		{0, -time.Second},
		{50, -500 * time.Millisecond},
		{100, 0},
		{250, 1500 * time.Millisecond},
	} {
		if got := p.wait(x.sent); got != x.want {
			t.Errorf("after %d bytes: wait %v, want %v", x.sent, got, x.want)
		}
	}
	if got := c.pacer(0).wait(1 << 40); got > 0 {
		t.Errorf("unlimited: wait %v", got)
	}
}

// recordPoster records the batches it is handed.
type recordPoster struct{ posts [][]fabric.SendWR }

func (r *recordPoster) post(_ int, wrs []fabric.SendWR) error {
	r.posts = append(r.posts, append([]fabric.SendWR(nil), wrs...))
	return nil
}

// Before a pause the work requests staged go out (the last signalled), so
// that the pause does not hold back what was due; without a pause nothing is
// posted.
func TestPaceBeforeFlushesFirst(t *testing.T) {
	c := &fakeClock{now: time.Unix(1000, 0)}
	rp := &recordPoster{}
	s := &sendSession{poster: rp, pace: c.pacer(1000), fl: newFlight(1, 4), sent: 500}
	s.wrs = []fabric.SendWR{{ID: 1}, {ID: 2}}
	c.now = c.now.Add(time.Second)
	if err := s.paceBefore(0); err != nil || len(rp.posts) != 0 || len(c.slept) != 0 {
		t.Fatalf("due already: err %v, posts %v, slept %v", err, rp.posts, c.slept)
	}
	s.sent = 1500
	if err := s.paceBefore(0); err != nil {
		t.Fatal(err)
	}
	if len(rp.posts) != 1 || len(rp.posts[0]) != 2 || !rp.posts[0][1].Signaled || len(s.wrs) != 0 {
		t.Errorf("posts %+v, staged %v: want the two staged, the last signalled", rp.posts, s.wrs)
	}
	if len(c.slept) != 1 || c.slept[0] != 500*time.Millisecond {
		t.Errorf("slept %v, want 500ms", c.slept)
	}
}
