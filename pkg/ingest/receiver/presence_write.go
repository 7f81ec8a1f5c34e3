package receiver

import (
	"context"
	"fmt"

	"github.com/ringcap/ringcap/pkg/ingest/assemble"
	"github.com/ringcap/ringcap/pkg/ingest/presence"
)

// onBlock is the assembler's OnBlock: the block counts in the status, and
// its record goes into the presence ring, if any, before the block is marked
// filled. A presence ring that fails stops the run.
func (s *session) onBlock(rec assemble.Record) {
	s.t.BlockFilled()
	p := s.cfg.presence
	if p == nil || p.err != nil {
		return
	}
	if p.err = p.write(s.pctx, rec); p.err != nil {
		s.log.Error("Presence ring failed: stopping", "err", p.err)
		s.stop()
	}
}

// keepHeader keeps the data ring's header for the presence ring's (nil: no
// presence ring).
func (p *presenceWriter) keepHeader(hdr []byte) {
	if p != nil {
		p.hdr = append(p.hdr[:0], hdr...)
	}
}

// begin writes the presence ring's header, from the data ring's.
func (p *presenceWriter) begin(ctx context.Context) error {
	hdr, err := p.ring.Header(p.hdr)
	if err != nil {
		return err
	}
	if err := p.w.WriteHeaderContext(ctx, hdr); err != nil {
		return fmt.Errorf("presence ring %s: %w", p.h.Key(), err)
	}
	p.begun = true
	return nil
}

// write puts the record of a data block into the next presence block, whole
// (a partial block would end the observation), the last one ending it.
func (p *presenceWriter) write(ctx context.Context, rec assemble.Record) error {
	if !p.begun {
		if err := p.begin(ctx); err != nil {
			return err
		}
	}
	b, err := p.w.OpenBlock(ctx)
	if err != nil {
		return fmt.Errorf("presence ring %s: record of block %d: %w", p.h.Key(), rec.Seq, err)
	}
	n, err := presence.Encode(b.Data, rec, p.ring.Granule)
	if err != nil {
		return err
	}
	clear(b.Data[n:])
	if err := p.w.MarkFilledContext(ctx, len(b.Data), rec.Last); err != nil {
		return fmt.Errorf("presence ring %s: record of block %d: %w", p.h.Key(), rec.Seq, err)
	}
	return nil
}
