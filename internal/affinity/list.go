package affinity

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxCPU is the highest CPU number a list may name (the kernel's default CPU set size).
const MaxCPU = 1023

// ParseList parses a CPU list in the kernel's cpulist form, numbers and inclusive ranges
// separated by commas ("3", "0,2-3"), keeping its order and repeats.
func ParseList(s string) ([]int, error) {
	var cpus []int
	for f := range strings.SplitSeq(s, ",") {
		lo, hi, err := parseRange(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("CPU list %q: %w", s, err)
		}
		for c := lo; c <= hi; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// parseRange parses "N" or "N-M" (N ≤ M ≤ MaxCPU).
func parseRange(f string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(f, "-")
	if lo, err = cpuNumber(a); err != nil {
		return 0, 0, err
	}
	if !isRange {
		return lo, lo, nil
	}
	if hi, err = cpuNumber(b); err != nil {
		return 0, 0, err
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("range %q runs backwards", f)
	}
	return lo, hi, nil
}

// cpuNumber parses one CPU number.
func cpuNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > MaxCPU || s != strconv.Itoa(n) {
		return 0, fmt.Errorf("%q is not a CPU number (0..%d)", s, MaxCPU)
	}
	return n, nil
}
