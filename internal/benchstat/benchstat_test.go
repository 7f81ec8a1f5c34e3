package benchstat

import (
	"math"
	"testing"
)

func TestRank(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n, k  int
		cover float64
	}{
		{1, 1, 0},
		{2, 1, 0.5},
		{6, 1, 0.96875},
		{7, 1, 0.984375},
		{8, 1, 0.9921875},
		{9, 2, 0.9609375},
		{20, 6, 0.9586105},
		{21, 6, 0.9733963},
	} {
		k, c := Rank(tc.n)
		if k != tc.k || math.Abs(c-tc.cover) > 1e-6 {
			t.Errorf("Rank(%d) = %d, %.7f; want %d, %.7f", tc.n, k, c, tc.k, tc.cover)
		}
	}
}

func TestMedianCI(t *testing.T) {
	t.Parallel()
	xs := make([]float64, 20)
	for i := range xs {
		xs[i] = float64(20 - i) // 20 .. 1, unsorted on purpose
	}
	med, lo, hi := MedianCI(xs)
	if med != 10.5 || lo != 6 || hi != 15 {
		t.Errorf("MedianCI(1..20) = %v [%v, %v], want 10.5 [6, 15]", med, lo, hi)
	}
	if xs[0] != 20 {
		t.Errorf("MedianCI sorted its argument in place")
	}
	med, lo, hi = MedianCI([]float64{3, 1, 2})
	if med != 2 || lo != 1 || hi != 3 {
		t.Errorf("MedianCI(3,1,2) = %v [%v, %v], want 2 [1, 3]", med, lo, hi)
	}
	if med, _, _ := MedianCI(nil); !math.IsNaN(med) {
		t.Errorf("MedianCI(nil) median = %v, want NaN", med)
	}
}
