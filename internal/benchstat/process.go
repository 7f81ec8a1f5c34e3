package benchstat

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// ProcessCPU is this process's user and system CPU time so far, in nanoseconds.
func ProcessCPU() (int64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), nil
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
