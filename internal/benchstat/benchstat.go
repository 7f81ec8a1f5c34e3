// Package benchstat holds the statistic every benchmark of this repository reports: the
// median of its runs (or rounds) with a distribution-free interval for the median. The
// e2e benchmarks (test/e2e) and the tool that combines their logs (hack/benchdra) share it,
// so that a combined figure uses the very method of a single run.
//
// It also holds what the benchmarks' results become: the figure lines they print
// (ParseResults) and the records of each metric's latest figure (Record) that
// docs/benchmarks.tsv keeps and hack/benchtable turns into docs/benchmarks.md's table.
package benchstat

import (
	"math"
	"slices"
)

// MedianCI returns the median of xs and a distribution-free interval for it: the order
// statistics k and n+1-k with k from Rank (for 20 values the 6th and 15th, 95.9 %); the
// range when there are too few values for 95 %. All three are NaN when xs is empty.
func MedianCI(xs []float64) (med, lo, hi float64) {
	v := slices.Clone(xs)
	slices.Sort(v)
	n := len(v)
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	med = v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	k, _ := Rank(n)
	return med, v[k-1], v[n-k]
}

// Rank returns the largest k (at least 1) whose order statistics k and n+1-k cover the
// median of n values with probability at least 95 %, and that coverage (0 when n is 0).
func Rank(n int) (k int, coverage float64) {
	if n == 0 {
		return 1, 0
	}
	k = 1
	for j := 2; 2*j <= n; j++ {
		if 1-2*binomCDF(n, j-1) < 0.95 {
			break
		}
		k = j
	}
	return k, 1 - 2*binomCDF(n, k-1)
}

// binomCDF is P(X <= k) for X ~ Binomial(n, 1/2); 0 for k < 0.
func binomCDF(n, k int) float64 {
	p, c := 0.0, 1.0
	for i := 0; i <= k; i++ {
		if i > 0 {
			c = c * float64(n-i+1) / float64(i)
		}
		p += c
	}
	return p / math.Pow(2, float64(n))
}
