package placement

import "math/bits"

// checkEnd checks n bytes of slice sl, starting at stream byte start, of
// full length full, against the end of the stream; a short slice sets it.
func (a *Window) checkEnd(sl, start, n, full uint64) error {
	if a.hasEnd && start+n > a.end {
		return errorf("slice %d ends at byte %d, after the announced end %d", sl, start+n, a.end)
	}
	if a.hasSh && start >= a.short {
		return errorf("slice %d arrived after the stream ended at byte %d", sl, a.short)
	}
	if n < full {
		if a.hasSh {
			return errorf("second short slice %d (the stream already ended at byte %d)", sl, a.short)
		}
		a.hasSh, a.short = true, start+n
		if a.hasEnd && a.short != a.end {
			return errorf("short slice ends the stream at byte %d, the sender announced %d", a.short, a.end)
		}
	}
	return nil
}

// SetEnd records the stream's length (a sender's announcement).
func (a *Window) SetEnd(total uint64) error {
	if a.hasEnd {
		if a.end != total {
			return errorf("the sender announced %d bytes, then %d", a.end, total)
		}
		return nil
	}
	if a.hasSh && a.short != total {
		return errorf("the sender announced %d bytes but a short slice ended the stream at byte %d", total, a.short)
	}
	if total < a.filled*a.g.BlockBytes {
		return errorf("the sender announced %d bytes but %d blocks were already filled", total, a.filled)
	}
	if total < a.landedEnd() {
		return errorf("the sender announced %d bytes but data up to byte %d has landed", total, a.landedEnd())
	}
	a.hasEnd, a.end = true, total
	return nil
}

// End returns the stream's length, once known.
func (a *Window) End() (uint64, bool) { return a.end, a.hasEnd }

// landedEnd is the stream byte just after the furthest slice that landed.
func (a *Window) landedEnd() uint64 {
	var end uint64
	for _, b := range a.open {
		for w := len(b.present) - 1; w >= 0; w-- {
			if b.present[w] == 0 {
				continue
			}
			k := uint64(w*64 + 63 - bits.LeadingZeros64(b.present[w]))
			sl := b.seq*a.s + k
			_, _, full := a.g.Slice(sl)
			e := a.g.StreamOffset(sl) + full
			if a.hasSh && e > a.short {
				e = a.short
			}
			end = max(end, e)
			break
		}
	}
	return end
}

// EndBlocks is the number of blocks of the announced stream (valid after SetEnd).
func (a *Window) EndBlocks() uint64 { return a.g.Blocks(a.end) }

// expected is the number of bytes block seq will hold.
func (a *Window) expected(seq uint64) uint64 {
	if !a.hasEnd {
		return a.g.BlockBytes
	}
	start := seq * a.g.BlockBytes
	if a.end <= start {
		return 0
	}
	return min(a.g.BlockBytes, a.end-start)
}

// TakeFilled pops the complete blocks at the front of the window, oldest
// first. A block is complete when all its bytes have landed: a full block, or
// the last block of an announced stream. The result is valid until the next
// call.
func (a *Window) TakeFilled() []Filled {
	out, n := a.out[:0], 0
	for ; n < len(a.open); n++ {
		b := a.open[n]
		want := a.expected(b.seq)
		if want == 0 || b.bytes != want {
			break
		}
		if a.Hold && !a.hasEnd && (len(a.open) < n+2 || a.open[n+1].count == 0) {
			break
		}
		last := a.hasEnd && b.seq+1 == a.EndBlocks()
		out = append(out, Filled{Seq: b.seq, Index: b.index, Bytes: b.bytes, Last: last})
		a.filled++
	}
	a.dropFront(n)
	a.out = out
	return out
}

// Complete reports whether every byte of the announced stream has been handed
// out by TakeFilled.
func (a *Window) Complete() bool {
	return a.hasEnd && a.filled >= a.EndBlocks()
}

// Truncate ends an observation that stopped early (the sender died or
// failed). It returns the blocks to mark filled: every complete block at the
// front of the window, then the longest prefix of landed slices of the next
// one — the exact byte count a reader can trust. The final entry is marked
// Last; fill is empty when nothing landed. lost counts landed bytes beyond
// the prefix, which cannot be trusted and are not committed.
func (a *Window) Truncate() (fill []Filled, lost uint64) {
	a.Hold = false
	fill = a.TakeFilled()
	var landedAfter uint64
	if len(a.open) > 0 {
		b := a.open[0]
		prefix := a.prefix(b)
		if prefix > 0 {
			fill = append(fill, Filled{Seq: b.seq, Index: b.index, Bytes: prefix, Last: true})
			a.filled++
		}
		for _, o := range a.open {
			landedAfter += o.bytes
		}
		landedAfter -= prefix
	}
	a.open = nil
	if n := len(fill); n > 0 {
		fill[n-1].Last = true
	}
	return fill, landedAfter
}

// prefix is the number of bytes of block b that landed without a gap from
// its start.
func (a *Window) prefix(b *block) uint64 {
	var prefix uint64
	for k := uint64(0); k < a.s; k++ {
		if b.present[k/64]&(1<<(k%64)) == 0 {
			break
		}
		_, off, full := a.g.Slice(b.seq*a.s + k)
		prefix = off + full
		if a.hasSh && b.seq*a.g.BlockBytes+prefix > a.short {
			return a.short - b.seq*a.g.BlockBytes
		}
	}
	return prefix
}
