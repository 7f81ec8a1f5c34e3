package sender

import (
	"fmt"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// unsent reports whether slices below the limit are still to be posted.
func (s *sendSession) unsent() bool { return s.lowest() < s.cur.limit }

// lowest is the lowest slice not yet posted.
func (s *sendSession) lowest() uint64 { return s.plan.lowest(&s.cur) }

// oldest is the lowest slice that has not completed yet.
func (s *sendSession) oldest() uint64 {
	lo := s.plan.untaken(&s.cur)
	for q, n := range s.cur.next {
		lo = min(lo, s.fl.oldest(q, n))
	}
	return lo
}

// landing reports whether a slice below the first one not posted is still in
// flight (every slice in flight, once the whole stream is posted).
func (s *sendSession) landing() bool {
	return s.fl.n > 0 && s.oldest() < s.lowest()
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
	base := s.oldest()
	if s.ordered {
		posted, credit, err = s.postInOrder(base)
	} else {
		posted, credit, err = s.postEach(base)
	}
	if err == nil && s.cfg.Mode == wire.ModeWrite {
		s.cr.release(s.g.SliceBlock(s.lowest()))
	}
	return posted, credit, err
}

// postInOrder posts in strict slice order: the lowest slice not posted goes
// next, on its carrier, one post each.
func (s *sendSession) postInOrder(base uint64) (posted, credit bool, err error) {
	for {
		q := s.plan.carrier(&s.cur, s.fl.free, s.lowest())
		ok, c, err := s.stageNext(q, base)
		credit = credit || c
		if err == nil && ok {
			err = s.flush(q)
		}
		if err != nil || !ok {
			return posted, credit, err
		}
		posted = true
	}
}

// postEach lets every queue pair post what it can, the first one in turn.
func (s *sendSession) postEach(base uint64) (posted, credit bool, err error) {
	nq := len(s.cur.next)
	for i := range nq {
		p, c, err := s.postQP((s.rr+i)%nq, base)
		posted, credit = posted || p, credit || c
		if err != nil {
			return posted, credit, err
		}
	}
	s.rr = (s.rr + 1) % nq
	return posted, credit, nil
}

// postQP stages what queue pair q can take and posts it: at most PostList
// work requests a post, the last post signalled.
func (s *sendSession) postQP(q int, base uint64) (posted, credit bool, err error) {
	for {
		ok, c, err := s.stageNext(q, base)
		credit = credit || c
		if err != nil {
			return posted, credit, err
		}
		if !ok {
			break
		}
		// Over PostList: post all but the newest WR. The newest stays, so
		// the batch that ends the round (flushed below, signalled) is never
		// empty.
		if pl := s.cfg.PostList; pl > 0 && len(s.wrs) > pl {
			n := len(s.wrs) - 1
			if err := s.post(q, s.wrs[:n]); err != nil {
				return posted, credit, err
			}
			s.wrs = append(s.wrs[:0], s.wrs[n])
			posted = true
		}
	}
	if len(s.wrs) == 0 {
		return posted, credit, nil
	}
	if err := s.flush(q); err != nil {
		return posted, credit, err
	}
	return true, credit, nil
}

// stageNext runs queue pair q's next slice through the pipeline: planned,
// admitted, paced, filled and staged into the batch. ok is false when q
// cannot take one now (no slot, beyond the look-ahead or the end, no grant:
// credit) or the source ended before it.
func (s *sendSession) stageNext(q int, base uint64) (ok, credit bool, err error) {
	var sp slicePlan
	if !s.plan.plan(&s.cur, q, base, s.fl.free[q], &sp) {
		return false, false, nil
	}
	to, ok, err := s.admit(&sp)
	if err != nil || !ok {
		return false, err == nil, err
	}
	if s.pace.limited() {
		if err := s.paceBefore(q); err != nil {
			return false, false, err
		}
	}
	n, err := s.fill(&sp)
	if err != nil || n == 0 {
		return false, false, err
	}
	s.stage(&sp, to, n)
	return true, false, nil
}

// target is where an admitted slice goes: a SEND with the slice number as its
// immediate, or (write mode) a WRITE with immediate to its place in the granted
// block. It travels in registers: a work request assembled field by field and
// then copied whole would stall the copy on the fields just stored, once a
// message.
type target struct {
	op           fabric.Op
	remote, rkey uint64
}

// admit is where the slice goes once the receiver has granted it, false while
// it waits for the grant. In write mode the grant is the block's credit, which
// names where it lands. In send mode it is the receive the receiver posted for
// it (wire.Posted): a SEND that found none would be answered with
// receiver-not-ready NAKs and retried, every RNR timer, for as long as the
// ring's readers hold the blocks it is for.
func (s *sendSession) admit(sp *slicePlan) (target, bool, error) {
	if s.cfg.Mode != wire.ModeWrite {
		return target{op: fabric.OpSendImm}, s.rg.allows(sp.q, sp.slice), nil
	}
	cr, ok := s.cr.lookup(sp.seq)
	if !ok {
		return target{}, false, nil
	}
	remote, rkey, err := s.acc.BlockTarget(cr.Index)
	if err != nil {
		return target{}, false, err
	}
	return target{op: fabric.OpWriteImm, remote: remote + sp.off, rkey: rkey}, true, nil
}

// paceBefore holds a rate-limited stream to its rate (RateBytesPerSecond)
// before the next slice: what queue pair q has staged goes out before the
// pause.
func (s *sendSession) paceBefore(q int) error {
	w := s.pace.wait(s.sent)
	if w <= 0 {
		return nil
	}
	if len(s.wrs) > 0 {
		if err := s.flush(q); err != nil {
			return err
		}
	}
	s.pace.sleep(w)
	return nil
}

// fill reads the slice from the source into its send slot; fewer bytes than
// the slice's length (none: 0) end the stream there.
func (s *sendSession) fill(sp *slicePlan) (int, error) {
	n, err := s.cfg.Source.Fill(s.buf[sp.boff:sp.boff+sp.length], sp.offset)
	if err != nil {
		return 0, fmt.Errorf("read source at byte %d: %w", sp.offset, err)
	}
	s.cur.filled(sp, n)
	return n, nil
}

// stage adds the slice's work request, of its n bytes, to the batch and puts
// it in flight.
func (s *sendSession) stage(sp *slicePlan, to target, n int) {
	q := sp.q
	if to.op == fabric.OpWriteImm {
		// Only a queue pair's last slice in a block carries the immediate:
		// RC places its plain writes before it, so that one completion at
		// the receiver accounts for them all (with whole blocks on each
		// queue pair, a completion and a receive WR per block).
		if s.plan.carriesOn(&s.cur, sp.slice) {
			to.op = fabric.OpWrite
			s.tail[q] = tailWrite{slice: sp.slice, addr: to.remote, rkey: to.rkey, set: true}
		} else {
			s.tail[q].set = false
		}
	}
	signal := s.fl.take(q, inFlight{slice: sp.slice, slot: sp.slot, bytes: uint64(n)})
	s.wrs = append(s.wrs, fabric.SendWR{
		ID: uint64(q)<<32 | uint64(sp.slot), Op: to.op, Offset: sp.boff, Length: uint64(n),
		Imm: uint32(sp.slice), Signaled: signal, RemoteAddr: to.remote, RKey: to.rkey,
	})
	s.plan.advance(&s.cur, sp)
	s.sent += uint64(n)
	s.hi = max(s.hi, sp.slice+1)
	s.extent = max(s.extent, sp.offset+uint64(n))
}

// flush posts the staged work requests of queue pair q in one call. The last
// one is signalled, so every posted WR is followed by a signalled one and its
// slot comes back even when nothing more is posted on q.
func (s *sendSession) flush(q int) error {
	s.wrs[len(s.wrs)-1].Signaled = true
	s.fl.signalled(q)
	if err := s.post(q, s.wrs); err != nil {
		return err // still staged: postReady takes them out of flight
	}
	s.wrs = s.wrs[:0]
	return nil
}

// post hands work requests of queue pair q to the device as they are, or to
// q's posting thread.
func (s *sendSession) post(q int, wrs []fabric.SendWR) error { return s.poster.post(q, wrs) }
