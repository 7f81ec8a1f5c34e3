//go:build !linux

package capture

// osYield does nothing where sched_yield is not available.
func osYield() {}
