//go:build linux

package affinity

import (
	"fmt"
	"slices"

	"golang.org/x/sys/unix"
)

// Allowed lists the CPUs the calling thread may run on (a process's threads share its
// set unless one was pinned), in increasing order.
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read the CPUs this process may run on: %w", err)
	}
	var cpus []int
	for i := range len(set) * 64 {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

// CheckAllowed refuses a CPU of cpus the calling thread may not run on, naming those it may.
func CheckAllowed(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	allowed, err := Allowed()
	if err != nil {
		return err
	}
	for _, c := range cpus {
		if !slices.Contains(allowed, c) {
			return fmt.Errorf("this process may not run on CPU %d (it may on %v)", c, allowed)
		}
	}
	return nil
}

// Pin pins the calling OS thread to cpu; the caller has locked its goroutine to the
// thread (runtime.LockOSThread). restore gives the thread its former set back, for a
// thread that goes back to the Go scheduler; a goroutine that exits still locked needs
// none (the runtime ends its thread). Its errors start with the CPU ("CPU 5: ..."), for
// the caller to say which thread: "pin the receive thread to %w".
func Pin(cpu int) (restore func(), err error) {
	if cpu < 0 || cpu >= len(unix.CPUSet{})*64 {
		return nil, fmt.Errorf("CPU %d: no such CPU number", cpu)
	}
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, fmt.Errorf("read the thread's CPU set: %w", err)
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("CPU %d: %w", cpu, err)
	}
	return func() { _ = unix.SchedSetaffinity(0, &old) }, nil
}
