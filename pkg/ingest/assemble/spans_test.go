package assemble

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Random ranges added in random order keep the list sorted, merged and equal
// to a byte-by-byte record; overlaps and gaps agree with it.
func TestSpansAgainstBytes(t *testing.T) {
	const n = 512
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		var s spans
		have := make([]bool, n)
		for range 100 {
			lo := rng.Uint64N(n)
			hi := lo + 1 + rng.Uint64N(min(n-lo, 40))
			want := false
			for i := lo; i < hi; i++ {
				want = want || have[i]
			}
			if got := s.overlaps(lo, hi); got != want {
				t.Fatalf("round %d: overlaps(%d, %d) = %v, want %v (%v)", round, lo, hi, got, want, s)
			}
			if want {
				continue
			}
			s.add(lo, hi)
			for i := lo; i < hi; i++ {
				have[i] = true
			}
			checkSpans(t, s, have)
		}
	}
}

// checkSpans checks that s is sorted, neither overlapping nor touching, and
// that its gaps are exactly the bytes not in have.
func checkSpans(t *testing.T, s spans, have []bool) {
	t.Helper()
	for i := range s {
		if s[i].lo >= s[i].hi || (i > 0 && s[i-1].hi >= s[i].lo) {
			t.Fatalf("spans not sorted and merged: %v", s)
		}
	}
	var want []Range
	for i, h := range have {
		if h {
			continue
		}
		if k := len(want); k > 0 && want[k-1].Off+want[k-1].Len == uint64(i) {
			want[k-1].Len++
		} else {
			want = append(want, Range{Off: uint64(i), Len: 1})
		}
	}
	if got := s.gaps(nil, uint64(len(have))); !slices.Equal(got, want) {
		t.Fatalf("gaps %v, want %v (spans %v)", got, want, s)
	}
}

func TestSpansEnd(t *testing.T) {
	var s spans
	if s.end() != 0 || len(s.gaps(nil, 0)) != 0 {
		t.Fatal("empty spans")
	}
	s.add(10, 20)
	s.add(0, 5)
	if s.end() != 20 {
		t.Fatalf("end %d", s.end())
	}
	if g := s.gaps(nil, 8); !slices.Equal(g, []Range{{5, 3}}) {
		t.Fatalf("gaps up to 8: %v", g)
	}
}
