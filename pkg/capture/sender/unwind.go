package sender

import (
	"fmt"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

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
	for ; n > 0; n-- {
		e, ok := s.fl.drop(q)
		if !ok {
			return
		}
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
	s.cur.next[q] = min(s.cur.next[q], sl)
}

// postTails posts, on every queue pair whose last slice went out as a plain
// RDMA WRITE and that has a free send slot, a zero-length
// RDMA_WRITE_WITH_IMM naming that slice (its completion at the receiver lands
// it and the plain writes before it). A failed post forgets every tail: the
// stream is then incomplete.
func (s *sendSession) postTails() error {
	for q := range s.tail {
		t := &s.tail[q]
		slot, free := s.fl.lastFree(q)
		if !t.set || !free {
			continue
		}
		t.set = false
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
		s.fl.take(q, inFlight{slice: t.slice, slot: slot})
		s.fl.signalled(q)
	}
	return nil
}
