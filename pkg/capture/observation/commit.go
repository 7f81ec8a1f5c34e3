package observation

import (
	"fmt"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/obsheader"
	"github.com/ringcap/ringcap/pkg/capture/placement"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// CommitFilled marks the blocks that are complete filled, oldest first, and
// once the stream's length is known limits the blocks the ring worker opens
// to it.
func (o *Observation) CommitFilled() error {
	for _, f := range o.win.TakeFilled() {
		if err := o.commit(f); err != nil {
			return err
		}
	}
	if err := o.FlushFull(); err != nil {
		return err
	}
	if _, ok := o.win.End(); ok {
		o.ring.Limit(o.win.EndBlocks())
	}
	return nil
}

// commit hands block f to the ring worker to be marked filled. Full blocks
// inside the observation wait in fullPending until FlushFull (or a block that
// is not full) sends them as one command.
func (o *Observation) commit(f placement.Filled) error {
	if err := o.writeHeader(); err != nil {
		return err
	}
	if f.Bytes == o.cfg.Geometry.BlockBytes && !f.Last {
		o.fullPending++
	} else {
		if err := o.FlushFull(); err != nil {
			return err
		}
		if f.Last {
			o.ending(o.bytes + f.Bytes)
		}
		if err := o.ring.Fill(int(f.Bytes), 1, f.Last); err != nil {
			return err
		}
	}
	o.bytes += f.Bytes
	o.blocks++
	o.cfg.Tracker.BlockFilled()
	return nil
}

// FlushFull sends the full blocks committed since the last flush to the ring
// worker, to be marked filled in one step (one wake-up of each reader).
func (o *Observation) FlushFull() error {
	k := o.fullPending
	if k == 0 {
		return nil
	}
	o.fullPending = 0
	return o.ring.Fill(int(o.cfg.Geometry.BlockBytes), k, false)
}

// ending is called before the end of data reaches the readers: when this
// observation meets the stop condition, the status says Finished from now on, so a
// reader that exits at the end of data (ring read -s) exits because the capture is
// done, while the session and the fabric still close.
func (o *Observation) ending(bytes uint64) {
	if o.cfg.Last(bytes) {
		o.cfg.Tracker.SetState(statusdoc.StateFinished, fmt.Sprintf("stop condition reached with observation %d; closing", o.cfg.Number))
	}
}

// writeHeader writes the observation's header into the ring once, before its
// first block is committed: UTC_START, unless the sender or the template set
// it, is when the first byte landed (or, for a stream without data, now). It
// shows the header's main keywords in the status.
func (o *Observation) writeHeader() error {
	if o.headerDone {
		return nil
	}
	start := o.firstByte
	if start.IsZero() {
		start = time.Now()
	}
	hd, err := o.cfg.Header(start)
	if err != nil {
		return fmt.Errorf("build header for observation %d: %w", o.cfg.Number, err)
	}
	blk, err := hd.Bytes(o.cfg.HeaderSize)
	if err != nil {
		return fmt.Errorf("build header for observation %d: %w", o.cfg.Number, err)
	}
	if err := o.cfg.Writer.WriteHeader(blk); err != nil {
		return fmt.Errorf("write header of observation %d: %w", o.cfg.Number, err)
	}
	o.headerDone = true
	o.cfg.Tracker.HeaderWritten(obsheader.StatusFields(hd))
	return nil
}
