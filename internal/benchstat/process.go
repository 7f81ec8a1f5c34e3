package benchstat

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// ProcessCPU is this process's user and system CPU time so far (every thread), in
// nanoseconds.
func ProcessCPU() (int64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), nil
}

// Cost is what a piece of work took: the process's CPU time (ProcessCPU's difference) and
// the wall time, in nanoseconds. On a core shared with other work the CPU time counts only
// what this process spent, which disturbs it far less than wall time.
type Cost struct{ CPU, Wall float64 }

// Per is c shared among n operations.
func (c Cost) Per(n int) Cost {
	return Cost{CPU: c.CPU / float64(n), Wall: c.Wall / float64(n)}
}

// Measure runs fn and returns what it took; fn's error is returned as it is.
func Measure(fn func() error) (Cost, error) {
	c0, err := ProcessCPU()
	if err != nil {
		return Cost{}, err
	}
	start := time.Now()
	if err := fn(); err != nil {
		return Cost{}, err
	}
	wall := time.Since(start)
	c1, err := ProcessCPU()
	if err != nil {
		return Cost{}, err
	}
	return Cost{CPU: float64(c1 - c0), Wall: float64(wall.Nanoseconds())}, nil
}

// EnvRounds is the number of rounds in RINGCAP_BENCH_ROUNDS (a make target's ROUNDS=),
// else def.
func EnvRounds(def int) (int, error) {
	s := os.Getenv("RINGCAP_BENCH_ROUNDS")
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("RINGCAP_BENCH_ROUNDS=%q: want a number of rounds, at least 1", s)
	}
	return n, nil
}
