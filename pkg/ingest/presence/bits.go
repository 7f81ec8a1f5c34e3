package presence

// fill sets the first n bits of bm and clears the rest.
func fill(bm []byte, n uint64) {
	full := n / 8
	for i := range bm {
		switch {
		case uint64(i) < full:
			bm[i] = 0xff
		case uint64(i) == full:
			bm[i] = byte(1)<<(n%8) - 1
		default:
			bm[i] = 0
		}
	}
}

// clearBits clears bits from up to (not including) to.
func clearBits(bm []byte, from, to uint64) {
	for from < to && from%8 != 0 {
		bm[from/8] &^= 1 << (from % 8)
		from++
	}
	for ; from+8 <= to; from += 8 {
		bm[from/8] = 0
	}
	for ; from < to; from++ {
		bm[from/8] &^= 1 << (from % 8)
	}
}

// Run is a run of granules First..Last (inclusive) all missing or all
// present.
type Run struct{ First, Last uint64 }

// Missing are the runs of granules not wholly received, in order.
func (r Record) Missing() []Run {
	var runs []Run
	for k := uint64(0); k < r.Granules; k++ {
		if r.Present(k) {
			continue
		}
		if n := len(runs); n > 0 && runs[n-1].Last+1 == k {
			runs[n-1].Last = k
		} else {
			runs = append(runs, Run{k, k})
		}
	}
	return runs
}

// MissingGranules is the number of granules not wholly received.
func (r Record) MissingGranules() uint64 {
	var n uint64
	for _, run := range r.Missing() {
		n += run.Last - run.First + 1
	}
	return n
}
