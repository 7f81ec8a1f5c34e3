package assemble

import (
	"errors"
	"fmt"
)

// Range is a byte range inside a block.
type Range struct {
	Off, Len uint64
}

// Record is the loss record of one block handed to the ring.
type Record struct {
	Seq      uint64  // block number within the observation (stream byte Seq*BlockBytes on)
	Index    int     // ring index of the block
	Expected uint64  // bytes the block holds in the ring (BlockBytes but for the last block)
	Received uint64  // bytes that packets carried into it
	Missing  []Range // the bytes no packet carried, zero in the block; valid during OnBlock only
	Last     bool    // the block ends the observation
}

// handOver hands the oldest block of the window to the ring (opening it
// first when no packet reached it): its missing bytes zero-filled and
// recorded, then marked filled with bytes (the whole block unless last).
func (a *Assembler) handOver(last bool) error {
	if a.base == a.next {
		if err := a.open(); err != nil {
			return err
		}
	}
	s := a.slot(a.base)
	n := a.bsize
	if last {
		n = s.present.end()
	}
	a.gaps = s.present.gaps(a.gaps[:0], n)
	var zero uint64
	for _, g := range a.gaps {
		clear(s.data[g.Off : g.Off+g.Len])
		zero += g.Len
	}
	if err := a.writeHeader(); err != nil {
		return err
	}
	if a.cfg.OnBlock != nil {
		a.cfg.OnBlock(Record{Seq: a.base, Index: s.index, Expected: n, Received: s.received, Missing: a.gaps, Last: last})
	}
	if err := a.w.Fill(int(n), 1, last); err != nil {
		return fmt.Errorf("assemble: hand over block %d: %w", a.base, err)
	}
	a.c.zeroFilled.Add(zero)
	a.c.blocks.Add(1)
	a.base++
	return nil
}

// writeHeader writes the observation's header once.
func (a *Assembler) writeHeader() error {
	if a.header || a.cfg.Header == nil {
		return nil
	}
	hdr, err := a.cfg.Header()
	if err != nil {
		return fmt.Errorf("assemble: build header: %w", err)
	}
	if err := a.cfg.Writer.WriteHeader(hdr); err != nil {
		return fmt.Errorf("assemble: write header: %w", err)
	}
	a.header = true
	return nil
}

// Close ends the observation: the blocks still open up to the last one a
// packet reached are handed over, that one partial (up to its last byte
// received) and ending the observation; then the ring worker ends the data
// and stops. Close is idempotent; Put after it returns ErrClosed.
func (a *Assembler) Close() error {
	if a.closed {
		return a.cerr
	}
	a.closed = true
	var err error
	if a.err == nil { // else the ring failed: the writer's Close ends the data
		err = a.flush()
		if eerr := a.w.EndOfData(); eerr != nil {
			err = errors.Join(err, eerr)
		}
	}
	a.w.Stop()
	if a.err == nil {
		a.err = ErrClosed
	}
	a.cerr = err
	return err
}

// flush hands over the open blocks up to the last one holding data, that one
// last; blocks opened after it are released by the end of data.
func (a *Assembler) flush() error {
	end := a.base
	for seq := a.base; seq < a.next; seq++ {
		if a.slot(seq).received > 0 {
			end = seq + 1
		}
	}
	for a.base < end {
		if err := a.handOver(a.base+1 == end); err != nil {
			return err
		}
	}
	return a.writeHeader()
}
