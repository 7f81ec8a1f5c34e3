package capture

import "syscall"

// osYield gives the CPU to another runnable thread, if any (sched_yield). A
// busy-polling loop that only yields to other goroutines keeps its core from
// the threads it waits for (the ring worker's and the readers' system calls,
// on a core they share); on a core of its own it returns at once.
func osYield() { _, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
