package capture

import (
	"context"

	"github.com/ringcap/ringcap/pkg/capture/rc"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// begin holds the first block (and, in send mode, posts its receives) before
// it accepts; then it accepts and grants the first block (write mode) or
// the receives posted (send mode).
func (s *session) begin(ctx context.Context) *ending {
	r := s.r
	s.q = rc.New(rc.Config{Mode: r.cfg.Mode, RxDepth: r.cfg.RxDepth, Geometry: s.g}, s.ep, s.a, s.qpc)
	first, end := s.firstBlock(ctx)
	if end != nil {
		return end
	}
	s.a.Open(first)
	if err := s.q.PostFirst(); err != nil {
		return endWith("receive post failed", err)
	}
	mode, regions, _ := r.fab.Registration()
	acc := wire.Accept{Mode: r.cfg.Mode, MsgBytes: uint32(r.cfg.MsgBytes), NBufs: uint32(r.ring.NBufs), BufSize: uint64(r.ring.BufSize),
		MRMode: mode, Fabric: r.fab.Fabric(), QPs: s.ep.Local()}
	if r.cfg.Mode == wire.ModeWrite {
		acc.Regions = regions
	}
	if err := s.k.Send(acc); err != nil {
		return endWith("sender went away during the handshake", nil)
	}
	var err error
	if r.cfg.Mode == wire.ModeWrite {
		err = s.k.Send(wire.Credit{Seq: 0, Index: uint32(first)})
	} else if _, err = s.q.QueueGrants(s.k); err == nil {
		err = s.k.Flush()
	}
	if err != nil {
		return endWith("sender went away", nil)
	}
	return nil
}

// firstBlock is the first block of the stream, waiting (held back) while the
// readers hold every block.
func (s *session) firstBlock(ctx context.Context) (int, *ending) {
	select {
	case first := <-s.rw.Opened():
		return first, nil
	default:
	}
	s.o.HoldBegan() // every block is still with the readers
	first, msg, err := s.awaitFirstBlock(ctx)
	if first < 0 {
		return first, endWith(msg, err)
	}
	s.o.HoldEnded()
	return first, nil
}
