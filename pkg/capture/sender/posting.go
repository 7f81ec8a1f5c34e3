package sender

import (
	"context"
	"fmt"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// unsent reports whether slices below the limit are still to be posted.
func (s *sendSession) unsent() bool { return s.lowest() < s.limit }

// untaken is the first slice of the next block no queue pair has taken (with
// whole blocks; wire.NoSlice otherwise).
func (s *sendSession) untaken() uint64 {
	if !s.g.WholeBlocks {
		return wire.NoSlice
	}
	return s.block * s.g.SlicesPerBlock()
}

// lowest is the lowest slice not yet posted.
func (s *sendSession) lowest() uint64 {
	lo := s.untaken()
	for _, n := range s.next {
		lo = min(lo, n)
	}
	return lo
}

// carrier is the queue pair that posts slice sl, the lowest one not posted,
// in strict slice order: the queue pair whose next slice it is, or, for the
// first slice of a block nobody has taken, the queue pair without a block
// that has the most free send slots.
func (s *sendSession) carrier(sl uint64) int {
	if !s.g.WholeBlocks {
		return s.g.QP(sl)
	}
	best := -1
	for q, n := range s.next {
		if n == sl {
			return q
		}
		if n == wire.NoSlice && (best < 0 || len(s.free[q]) > len(s.free[best])) {
			best = q
		}
	}
	return max(best, 0)
}

// oldest is the lowest slice that has not completed yet.
func (s *sendSession) oldest() uint64 {
	lo := s.untaken()
	for q, n := range s.next {
		if f := &s.inq[q]; f.len() > 0 {
			n = f.front()
		}
		lo = min(lo, n)
	}
	return lo
}

// landing reports whether a slice below the first one not posted is still in
// flight (every slice in flight, once the whole stream is posted).
func (s *sendSession) landing() bool {
	return s.inflight > 0 && s.oldest() < s.lowest()
}

// prefix is the number of stream bytes before the first slice not posted.
func (s *sendSession) prefix() uint64 {
	lo := s.lowest()
	if lo >= s.hi {
		return s.extent
	}
	return s.g.StreamOffset(lo)
}

// postReady posts what every queue pair can take: slices with a free send
// slot, inside the look-ahead and granted (write mode: their block; send
// mode: their receive), one PostSend per queue pair. credit reports that a
// slice waited for a grant.
func (s *sendSession) postReady() (posted, credit bool, err error) {
	defer func() {
		if err != nil {
			s.unstage()
		}
	}()
	nq := len(s.next)
	base := s.oldest()
	if s.ordered {
		// Strict slice order: the lowest slice not posted goes next, on its
		// carrier.
		for {
			q := s.carrier(s.lowest())
			ok, c, err := s.stage(q, base)
			credit = credit || c
			if err == nil && ok {
				err = s.flush(q)
			}
			if err != nil {
				return posted, credit, err
			}
			if !ok {
				break
			}
			posted = true
		}
	} else {
		for i := range nq {
			q := (s.rr + i) % nq
			for {
				ok, c, err := s.stage(q, base)
				credit = credit || c
				if err != nil {
					return posted, credit, err
				}
				if !ok {
					break
				}
				// Over PostList: post all but the newest WR. The newest
				// stays, so the batch that ends the round (flushed below,
				// signalled) is never empty.
				if pl := s.cfg.PostList; pl > 0 && len(s.wrs) > pl {
					n := len(s.wrs) - 1
					if err := s.post(q, s.wrs[:n]); err != nil {
						return posted, credit, err
					}
					s.wrs = append(s.wrs[:0], s.wrs[n])
					posted = true
				}
			}
			if len(s.wrs) > 0 {
				if err := s.flush(q); err != nil {
					return posted, credit, err
				}
				posted = true
			}
		}
		s.rr = (s.rr + 1) % nq
	}
	if s.cfg.Mode == wire.ModeWrite {
		s.cr.release(s.g.SliceBlock(s.lowest()))
	}
	return posted, credit, nil
}

// stage fills the next slice of queue pair q (with whole blocks, when q has
// none, the first slice of the next block nobody has taken) into a free send
// slot and adds its work request to the batch; ok is false when q cannot take
// it now (no slot, beyond the look-ahead or the end, no grant: credit) or the
// source ended before it. In send mode a slice goes out only once the
// receiver has posted its receive (wire.Posted): a SEND that found none would
// be answered with receiver-not-ready NAKs and retried, every RNR timer, for
// as long as the ring's readers hold the blocks it is for.
func (s *sendSession) stage(q int, base uint64) (ok, credit bool, err error) {
	cfg := s.cfg
	sl, take := s.next[q], false
	if sl == wire.NoSlice && s.g.WholeBlocks {
		sl, take = s.untaken(), true
	}
	if sl >= s.limit || sl >= base+s.ahead || len(s.free[q]) == 0 {
		return false, false, nil
	}
	if cfg.Mode == wire.ModeSend && !s.rg.allows(q, sl) {
		return false, true, nil
	}
	seq, off, length := s.g.Slice(sl)
	wr := fabric.SendWR{Op: fabric.OpSendImm, Imm: uint32(sl)}
	if cfg.Mode == wire.ModeWrite {
		cr, ok := s.cr.lookup(seq)
		if !ok {
			return false, true, nil
		}
		remote, rkey, err := s.acc.BlockTarget(cr.Index)
		if err != nil {
			return false, false, err
		}
		wr.Op, wr.RemoteAddr, wr.RKey = fabric.OpWriteImm, remote+off, rkey
	}
	offset := s.g.StreamOffset(sl)
	if cfg.Bytes > 0 {
		length = min(length, cfg.Bytes-offset)
	}
	slot := s.free[q][len(s.free[q])-1]
	boff := (uint64(q)*uint64(cfg.TxDepth) + uint64(slot)) * cfg.MsgBytes
	n, err := cfg.Source.Fill(s.buf[boff:boff+length], offset)
	if err != nil {
		return false, false, fmt.Errorf("read source at byte %d: %w", offset, err)
	}
	if n == 0 {
		s.limit = min(s.limit, sl) // the source ended before this slice
		return false, false, nil
	}
	if uint64(n) < length {
		s.limit = min(s.limit, sl+1) // the source ended inside this slice
	}
	if wr.Op == fabric.OpWriteImm {
		// Only a queue pair's last slice in a block carries the immediate:
		// RC places its plain writes before it, so that one completion at
		// the receiver accounts for them all (with whole blocks on each
		// queue pair, a completion and a receive WR per block).
		if s.g.NextOnQP(sl) < s.limit { // wire.NoSlice after the block's last slice
			wr.Op = fabric.OpWrite
			s.tail[q] = tailWrite{slice: sl, addr: wr.RemoteAddr, rkey: wr.RKey, set: true}
		} else {
			s.tail[q].set = false
		}
	}
	if cfg.RateBytesPerSecond > 0 {
		due := s.start.Add(time.Duration(float64(s.sent) / cfg.RateBytesPerSecond * float64(time.Second)))
		if w := time.Until(due); w > 0 {
			if len(s.wrs) > 0 {
				if err := s.flush(q); err != nil { // what is due goes out before the pause
					return false, false, err
				}
			}
			time.Sleep(w)
		}
	}
	wr.ID, wr.Offset, wr.Length = uint64(q)<<32|uint64(slot), boff, uint64(n)
	if s.unsig[q]++; s.unsig[q] >= s.sigEvery {
		wr.Signaled, s.unsig[q] = true, 0
	}
	s.wrs = append(s.wrs, wr)
	s.free[q] = s.free[q][:len(s.free[q])-1]
	s.inq[q].push(inFlight{slice: sl, slot: slot, bytes: uint64(n)})
	s.inflight++
	s.next[q] = s.g.NextOnQP(sl)
	if take {
		s.block++
	}
	s.sent += uint64(n)
	s.hi = max(s.hi, sl+1)
	s.extent = max(s.extent, offset+uint64(n))
	return true, false, nil
}

// flush posts the staged work requests of queue pair q in one call. The last
// one is signalled, so every posted WR is followed by a signalled one and its
// slot comes back even when nothing more is posted on q.
func (s *sendSession) flush(q int) error {
	s.wrs[len(s.wrs)-1].Signaled, s.unsig[q] = true, 0
	if err := s.post(q, s.wrs); err != nil {
		return err // still staged: postReady takes them out of flight
	}
	s.wrs = s.wrs[:0]
	return nil
}

// post hands work requests of queue pair q to the device as they are, or to
// q's posting thread.
func (s *sendSession) post(q int, wrs []fabric.SendWR) error {
	if s.lanes != nil {
		if err := s.lanes.Post(q, wrs); err != nil {
			return fabric.PostError(q, wrs, err)
		}
		return nil
	}
	if err := s.ep.PostSend(q, wrs); err != nil {
		return fabric.PostError(q, wrs, err)
	}
	return nil
}

// unstage takes the work requests staged and not posted (or in a post that
// failed: some may have been posted, but none is waited for) out of flight.
func (s *sendSession) unstage() {
	if len(s.wrs) > 0 {
		s.unpost(int(s.wrs[0].ID>>32), len(s.wrs))
		s.wrs = s.wrs[:0]
	}
}

// unpost takes queue pair q's n newest work requests out of flight: their
// slots are free again and their slices count as not sent.
func (s *sendSession) unpost(q, n int) {
	for f := &s.inq[q]; n > 0 && f.len() > 0; n-- {
		e := f.popBack()
		s.free[q] = append(s.free[q], e.slot)
		s.inflight--
		s.sent -= e.bytes
		s.unsend(q, e.slice)
	}
}

// unsend counts queue pair q's slice sl, and every later one, as not sent.
// In write mode the earlier slices of sl's block too (all q's: whole blocks
// travel on one queue pair): they went out as plain writes that only the
// immediate of the block's last slice lands at the receiver, and that
// immediate is now never posted. Only a stream that is ending unsends (a
// post failed): the gap-free prefix it keeps ends below sl, so blocks q took
// after sl's are not handed out again.
func (s *sendSession) unsend(q int, sl uint64) {
	if s.cfg.Mode == wire.ModeWrite {
		sl = s.g.SliceBlock(sl) * s.g.SlicesPerBlock()
		s.tail[q].set = false
	}
	s.next[q] = min(s.next[q], sl)
}

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
	s.lanes, s.ctx = nil, s.base
	return first
}

// postTails posts, on every queue pair whose last slice went out as a plain
// RDMA WRITE and that has a free send slot, a zero-length
// RDMA_WRITE_WITH_IMM naming that slice (its completion at the receiver lands
// it and the plain writes before it). A failed post forgets every tail: the
// stream is then incomplete.
func (s *sendSession) postTails() error {
	for q := range s.tail {
		t := &s.tail[q]
		if !t.set || len(s.free[q]) == 0 {
			continue
		}
		t.set = false
		slot := s.free[q][len(s.free[q])-1]
		wr := fabric.SendWR{ID: uint64(q)<<32 | uint64(slot), Op: fabric.OpWriteImm, Imm: uint32(t.slice), RemoteAddr: t.addr, RKey: t.rkey, Signaled: true}
		if err := s.post(q, []fabric.SendWR{wr}); err != nil {
			s.unsend(q, t.slice) // and every other immediate still owed
			for k, o := range s.tail {
				if o.set {
					s.unsend(k, o.slice)
				}
			}
			return fmt.Errorf("post the end of the stream: %w", err)
		}
		s.free[q] = s.free[q][:len(s.free[q])-1]
		s.inq[q].push(inFlight{slice: t.slice, slot: slot})
		s.inflight++
		s.unsig[q] = 0
	}
	return nil
}

// reap takes the send completions that are already there.
func (s *sendSession) reap(wcs []fabric.Completion) (bool, error) {
	before := s.inflight
	if err := s.poll(wcs, false); err != nil {
		return false, err
	}
	return s.inflight != before, nil
}
