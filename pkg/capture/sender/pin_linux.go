package sender

import (
	"fmt"
	"log/slog"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pinThread pins the calling (locked) OS thread as p says; unpin restores
// its former CPU set before the thread goes back to the Go scheduler.
func pinThread(p CPUPin, log *slog.Logger) (unpin func(), err error) {
	if p == PinNone {
		return func() {}, nil
	}
	cpu := int(p) - 1
	if p == PinCurrent {
		var c uint32
		if _, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&c)), 0, 0); e != 0 {
			return nil, fmt.Errorf("find the current CPU to pin the posting thread to: %w", e)
		}
		cpu = int(c)
	}
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, fmt.Errorf("read the posting thread's CPU set: %w", err)
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("pin the posting thread to CPU %d: %w", cpu, err)
	}
	log.Info("Pinned the posting thread", "cpu", cpu)
	return func() { _ = unix.SchedSetaffinity(0, &old) }, nil
}

// AllowedCPUs lists the CPUs this process may run on.
func AllowedCPUs() ([]int, error) {
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
