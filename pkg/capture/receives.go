package capture

import (
	"fmt"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// receives is a session's RC receive side, per queue pair: the receive work
// requests posted and used, where send mode's posting has got to and what the
// sender was told of it.
type receives struct {
	posted   []int           // receive WRs outstanding per queue pair
	consumed []int           // write mode: scatter-less receive WRs used up since the last repost
	empty    []fabric.RecvWR // reused by postEmpty
	slices   []fabric.RecvWR // reused by postSlices
	cursor   []uint64        // per queue pair, its next slice to post receives for (send mode)
	untold   []int           // per queue pair, receives posted that the sender was not told of (send mode, see queueGrants)
}

// newReceives returns the receive side of nq queue pairs over geometry g.
func newReceives(nq int, g wire.Geometry) receives {
	q := receives{posted: make([]int, nq), consumed: make([]int, nq), cursor: make([]uint64, nq), untold: make([]int, nq)}
	for i := range q.cursor {
		q.cursor[i] = g.FirstOnQP(i)
	}
	return q
}

// repost replaces the scatter-less receive WRs that write-mode completions
// consumed, one post per queue pair.
func (s *session) repost() error {
	for q, n := range s.q.consumed {
		if n > 0 {
			s.q.consumed[q] = 0
			if err := s.postEmpty(q, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// postEmpty posts n receive WRs without scatter entries on queue pair q.
func (s *session) postEmpty(q, n int) error {
	if n <= 0 {
		return nil
	}
	if cap(s.q.empty) < n {
		s.q.empty = make([]fabric.RecvWR, n)
	}
	wrs := s.q.empty[:n]
	for i := range wrs {
		wrs[i] = fabric.RecvWR{ID: uint64(q)}
	}
	if err := s.ep.PostRecv(q, wrs); err != nil {
		return fmt.Errorf("post %d receives on queue pair %d: %w", n, q, err)
	}
	s.q.posted[q] += n
	return nil
}

// postSlices keeps every receive queue as full as the open blocks allow
// (send mode): queue pair q gets slices q, q+N, q+2N, ... in order.
func (s *session) postSlices() error {
	_, endSlice := s.a.Span()
	if end, ok := s.a.End(); ok {
		endSlice = min(endSlice, s.g.Slices(end))
	}
	wrs := s.q.slices[:0]
	defer func() { s.q.slices = wrs[:0] }() // keeps the grown array for the next call
	for q := range s.q.cursor {
		wrs = wrs[:0]
		for s.q.cursor[q] < endSlice && s.q.posted[q]+len(wrs) < s.r.cfg.RxDepth {
			sl := s.q.cursor[q]
			seq, off, length := s.a.Slice(sl)
			idx := s.a.Index(seq)
			wrs = append(wrs, fabric.RecvWR{ID: sl, Block: idx, Offset: off, Length: length})
			s.q.cursor[q] = s.g.NextOnQP(sl)
		}
		if len(wrs) == 0 {
			continue
		}
		if err := s.ep.PostRecv(q, wrs); err != nil {
			return fmt.Errorf("post %d receives on queue pair %d: %w", len(wrs), q, err)
		}
		s.q.posted[q] += len(wrs)
		s.q.untold[q] += len(wrs)
	}
	return nil
}

// queueGrants queues a wire.Posted for each queue pair whose sender is due to
// hear of the receives posted since it was last told (send mode); it reports
// whether it queued any. The sender sends a slice only below what it was
// told, and every slice below that has its receive posted: no SEND finds its
// queue pair without one. News goes out in batches, to keep control traffic
// low, yet without a deadlock: a queue pair's news goes out once it amounts
// to half the receive queue, or as soon as fewer than half a queue of the
// slices the sender was told of are still to arrive (a sender that may run
// dry on it hears at once). A sender of a version before wire.PostedSince
// sends without grants, and hears of none.
func (s *session) queueGrants() (bool, error) {
	if s.k.Version() < wire.PostedSince {
		return false, nil
	}
	half := max(1, s.r.cfg.RxDepth/2)
	queued := false
	for q, n := range s.q.untold {
		if n == 0 || n < half && s.q.posted[q]-n >= half {
			continue
		}
		if err := s.k.QueuePosted(wire.Posted{QP: uint16(q), Upto: s.q.cursor[q]}); err != nil {
			return queued, err
		}
		s.q.untold[q], queued = 0, true
	}
	return queued, nil
}
