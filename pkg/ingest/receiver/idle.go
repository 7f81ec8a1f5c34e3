package receiver

import (
	"context"
	"time"
)

// idleTick is the idle watch's period for a timeout d: a quarter of it,
// between 10 ms and 1 s.
func idleTick(d time.Duration) time.Duration {
	return min(max(d/4, 10*time.Millisecond), time.Second)
}

// watchIdle ends the run once the observation has begun and no packet has
// arrived for d. It watches the pipeline's packet count, so the receive path
// pays nothing for it.
func (s *session) watchIdle(ctx context.Context, d time.Duration) {
	tick := time.NewTicker(idleTick(d))
	defer tick.Stop()
	var last uint64
	var since time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			p := s.pipe.Load()
			if p == nil {
				continue
			}
			if n := p.Packets(); n != last || since.IsZero() {
				last, since = n, now
				continue
			}
			if now.Sub(since) >= d {
				s.reached("no packet for the idle timeout", "timeout", d.String())
				return
			}
		}
	}
}
