package udp

import (
	"testing"
	"time"
)

// A gatherer fed reads of a steady stream: n datagrams of 1472 bytes per read, reads every
// interval, from a socket with a receive buffer of 4 MiB.
func steadyGatherer(maxSleep time.Duration, batch, n int, interval time.Duration) *gatherer {
	return steadyGathererBuffer(maxSleep, batch, n, interval, 4<<20)
}

func steadyGathererBuffer(maxSleep time.Duration, batch, n int, interval time.Duration, buffer int) *gatherer {
	t0 := time.Unix(1000, 0)
	g := newGatherer(maxSleep, batch, buffer, t0)
	for i := 1; time.Duration(i)*interval <= 2*rateWindow; i++ {
		g.observe(t0.Add(time.Duration(i)*interval), n, uint64(n)*1472)
	}
	return g
}

func TestGatherSleep(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	cases := []struct {
		name     string
		g        *gatherer
		min, max time.Duration
	}{
		// 2 datagrams every 50 µs = 40,000/s: a batch of 64 arrives in 1.6 ms.
		{"two per wake-up", steadyGatherer(2*ms, 64, 2, 50*time.Microsecond), 1590 * time.Microsecond, 1610 * time.Microsecond},
		{"capped at max", steadyGatherer(200*time.Microsecond, 64, 2, 50*time.Microsecond), 200 * time.Microsecond, 200 * time.Microsecond},
		{"full batches read at once", steadyGatherer(ms, 64, 64, 100*time.Microsecond), 0, 0},
		// 1 datagram per ms: fewer than minGathered arrive in max.
		{"too slow to gather", steadyGatherer(ms, 64, 1, ms), 0, 0},
		// 63 per 20 µs: a batch comes sooner than a timer can wake.
		{"too fast to sleep", steadyGatherer(ms, 64, 63, 20*time.Microsecond), 0, 0},
		{"off", steadyGatherer(-1, 64, 2, 50*time.Microsecond), 0, 0},
		{"no rate yet", newGatherer(ms, 64, 4<<20, time.Unix(1000, 0)), 0, 0},
		// A 212,992-byte buffer (a common net.core.rmem_default): a quarter of it takes 13
		// datagrams of 1472 bytes at 2*1472+1024 each, 325 µs of this stream.
		{"small socket buffer", steadyGathererBuffer(2*ms, 64, 2, 50*time.Microsecond, 212992), 320 * time.Microsecond, 330 * time.Microsecond},
		// 32 KiB: fewer than minGathered datagrams fit in a quarter.
		{"tiny socket buffer", steadyGathererBuffer(2*ms, 64, 2, 50*time.Microsecond, 32<<10), 0, 0},
		{"buffer unknown", steadyGathererBuffer(2*ms, 64, 2, 50*time.Microsecond, 0), 1590 * time.Microsecond, 1610 * time.Microsecond},
	}
	for _, c := range cases {
		if d := c.g.sleep(); d < c.min || d > c.max {
			t.Errorf("%s: sleep %v, want %v..%v", c.name, d, c.min, c.max)
		}
	}
}

// The rate follows a stream that slows down: after a pause the sleeps stop within a few
// reads instead of sleeping for datagrams that no longer come.
func TestGatherFollowsASlowingStream(t *testing.T) {
	t.Parallel()
	g := steadyGatherer(time.Millisecond, 64, 2, 50*time.Microsecond)
	now := g.since
	reads := 0
	for g.sleep() > 0 {
		now = now.Add(100 * time.Millisecond) // one datagram per 100 ms
		g.observe(now, 1, 1472)
		if reads++; reads > 10 {
			t.Fatalf("still sleeping %v after %d reads of a 10/s stream (rate %.0f/s)", g.sleep(), reads, g.rate)
		}
	}
}
