package sender

import "context"

// waitWithin bounds waits for completions by base and, with posting
// threads, by their first failure (whose work requests would never
// complete); the returned func releases what it set up.
func (s *sendSession) waitWithin(base context.Context) func() {
	s.base, s.ctx = base, base
	if s.lanes == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(base)
	stop := context.AfterFunc(s.lanes.Failed(), cancel)
	s.ctx = ctx
	return func() { stop(); cancel() }
}

// laneFailure reports the first post a posting thread failed, once: it stops
// the threads, takes every work request they did not post out of flight,
// forgets the immediates the failed threads' queue pairs still owe, and from
// then on posts from this thread and waits within the base context alone.
func (s *sendSession) laneFailure() error {
	if s.lanes == nil || s.lanes.Failed().Err() == nil {
		return nil
	}
	s.lanes.Stop()
	var first error
	broken := map[int]bool{}
	for _, f := range s.lanes.TakeFailures() {
		s.unpost(f.QP, f.N)
		broken[f.QP%s.lanes.Threads()] = true
		if first == nil {
			first = f.Err
		}
	}
	for q, t := range s.tail {
		if t.set && broken[q%s.lanes.Threads()] {
			s.unsend(q, t.slice)
		}
	}
	s.lanes, s.ctx, s.poster = nil, s.base, endpointPoster{s.ep}
	return first
}
