package capture

import (
	"errors"
	"fmt"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

func (s *session) openBlock(idx int) uint64 {
	return s.a.openBlock(idx)
}

// repost replaces the scatter-less receive WRs that write-mode completions
// consumed, one post per queue pair.
func (s *session) repost() error {
	for q, n := range s.consumed {
		if n > 0 {
			s.consumed[q] = 0
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
	if cap(s.empty) < n {
		s.empty = make([]fabric.RecvWR, n)
	}
	wrs := s.empty[:n]
	for i := range wrs {
		wrs[i] = fabric.RecvWR{ID: uint64(q)}
	}
	if err := s.ep.PostRecv(q, wrs); err != nil {
		return fmt.Errorf("post %d receives on queue pair %d: %w", n, q, err)
	}
	s.posted[q] += n
	return nil
}

// postSlices keeps every receive queue as full as the open blocks allow
// (send mode): queue pair q gets slices q, q+N, q+2N, ... in order.
func (s *session) postSlices() error {
	_, endSlice := s.a.window()
	if s.a.hasEnd {
		endSlice = min(endSlice, s.g.Slices(s.a.end))
	}
	wrs := s.slices[:0]
	defer func() { s.slices = wrs[:0] }() // keeps the grown array for the next call
	for q := range s.cursor {
		wrs = wrs[:0]
		for s.cursor[q] < endSlice && s.posted[q]+len(wrs) < s.r.cfg.RxDepth {
			sl := s.cursor[q]
			seq, off, length := s.a.slice(sl)
			idx := s.a.open[seq-s.a.open[0].seq].index
			wrs = append(wrs, fabric.RecvWR{ID: sl, Block: idx, Offset: off, Length: length})
			s.cursor[q] = s.g.NextOnQP(sl)
		}
		if len(wrs) == 0 {
			continue
		}
		if err := s.ep.PostRecv(q, wrs); err != nil {
			return fmt.Errorf("post %d receives on queue pair %d: %w", len(wrs), q, err)
		}
		s.posted[q] += len(wrs)
		s.untold[q] += len(wrs)
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
	for q, n := range s.untold {
		if n == 0 || n < half && s.posted[q]-n >= half {
			continue
		}
		if err := s.k.QueuePosted(wire.Posted{QP: uint16(q), Upto: s.cursor[q]}); err != nil {
			return queued, err
		}
		s.untold[q], queued = 0, true
	}
	return queued, nil
}

// complete handles one work completion.
func (s *session) complete(wc fabric.Completion) error {
	if wc.Err != nil {
		var we *fabric.WCError
		if errors.As(wc.Err, &we) {
			return we
		}
		return &fabric.WCError{QP: wc.QP, Status: wc.Err.Error(), Recv: wc.Recv}
	}
	if !wc.Recv {
		return nil
	}
	s.posted[wc.QP]--
	var sl uint64
	if s.r.cfg.Mode == wire.ModeSend {
		sl = wc.ID
		if wc.Imm != uint32(sl) {
			return fmt.Errorf("%w: queue pair %d delivered slice %d into the slot of slice %d", wire.ErrProtocol, wc.QP, wc.Imm, sl)
		}
	} else {
		var err error
		if sl, err = s.a.resolve(wc.Imm); err != nil {
			return err
		}
		s.consumed[wc.QP]++ // reposted after the batch, one call per queue pair
	}
	if s.r.cfg.Mode == wire.ModeWrite {
		return s.landWritten(wc.QP, sl, uint64(wc.Bytes))
	}
	if s.g.QP(sl) != wc.QP {
		return fmt.Errorf("%w: slice %d arrived on queue pair %d, expected %d", wire.ErrProtocol, sl, wc.QP, s.g.QP(sl))
	}
	if err := s.a.land(sl, uint64(wc.Bytes)); err != nil {
		return err
	}
	s.qpc[wc.QP].add(uint64(wc.Bytes))
	return nil
}

// landWritten lands what an immediate on queue pair q accounts for (write
// mode): the whole block travels on the queue pair that took it, and RC
// placed that queue pair's plain RDMA WRITEs into the block, whole slices
// from the first one not landed yet, before the immediate naming slice sl,
// which wrote n bytes of it, or none (n = 0) when sl itself went out plain
// and this ends the stream.
func (s *session) landWritten(q int, sl, n uint64) error {
	seq := s.g.SliceBlock(sl)
	done, err := s.a.landedIn(seq)
	if err != nil {
		return err
	}
	from := seq*s.g.SlicesPerBlock() + done
	if sl < from {
		return fmt.Errorf("%w: queue pair %d named slice %d, which had already landed", wire.ErrProtocol, q, sl)
	}
	for x := from; x <= sl; x++ {
		k := n
		if x < sl || n == 0 {
			_, _, k = s.g.Slice(x)
		}
		if err := s.a.land(x, k); err != nil {
			return err
		}
		s.qpc[q].add(k)
	}
	return nil
}
