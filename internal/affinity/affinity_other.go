//go:build !linux

package affinity

import "errors"

// Allowed knows no CPU affinity outside Linux: none to choose from.
func Allowed() ([]int, error) { return nil, nil }

// Pin can pin nothing outside Linux: asking to fails.
func Pin(int) (restore func(), err error) {
	return nil, errors.New("pinning a thread needs Linux (sched_setaffinity)")
}

// CheckAllowed refuses any CPU outside Linux, where none can be pinned to.
func CheckAllowed(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	return errors.New("pinning a thread needs Linux (sched_setaffinity)")
}
