package assemble

// span is a range [lo, hi) of received bytes inside a block.
type span struct{ lo, hi uint64 }

// spans is a block's received bytes: sorted ranges that neither overlap nor
// touch. Its array is kept from block to block (no allocation once grown).
type spans []span

// search returns the index of the first range that ends after off.
func (s spans) search(off uint64) int {
	lo, hi := 0, len(s)
	if hi > 0 && s[hi-1].hi <= off {
		return hi // at or past the end: the in-order case
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m].hi <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// overlaps reports whether any byte of [lo, hi) is present.
func (s spans) overlaps(lo, hi uint64) bool {
	i := s.search(lo)
	return i < len(s) && s[i].lo < hi
}

// add records [lo, hi), which overlaps no range, merging it with the ranges
// it touches.
func (s *spans) add(lo, hi uint64) {
	r := *s
	i := r.search(lo)
	left := i > 0 && r[i-1].hi == lo
	right := i < len(r) && r[i].lo == hi
	switch {
	case left && right:
		r[i-1].hi = r[i].hi
		r = append(r[:i], r[i+1:]...)
	case left:
		r[i-1].hi = hi
	case right:
		r[i].lo = lo
	default:
		r = append(r, span{})
		copy(r[i+1:], r[i:])
		r[i] = span{lo, hi}
	}
	*s = r
}

// end is the byte after the last one present (0 when none is).
func (s spans) end() uint64 {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1].hi
}

// gaps appends to dst the ranges of [0, n) that are not present.
func (s spans) gaps(dst []Range, n uint64) []Range {
	var at uint64
	for _, r := range s {
		if r.lo >= n {
			break
		}
		if r.lo > at {
			dst = append(dst, Range{Off: at, Len: r.lo - at})
		}
		at = r.hi
	}
	if at < n {
		dst = append(dst, Range{Off: at, Len: n - at})
	}
	return dst
}
