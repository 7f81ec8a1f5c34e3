// Package affinity reads the CPUs a process may run on and pins OS threads to one of
// them (sched_getaffinity, sched_setaffinity), and parses CPU lists in the kernel's
// cpulist form ("0,2-3").
package affinity
