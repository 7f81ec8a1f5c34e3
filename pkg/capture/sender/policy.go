package sender

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/ringcap/ringcap/internal/affinity"
	"github.com/ringcap/ringcap/pkg/capture/wire"
)

// PostingPolicy is how a stream chooses its posting threads (Config.Pin and
// Config.PostCPUs) once the device's kernel driver and the number of queue
// pairs are known: software RDMA (rxe, siw) runs each queue pair's data path
// on the CPU that rings its doorbells, so it wants other posting than a NIC.
// Its fields are `ringcap send --pin-cpu` and `--post-threads`.
type PostingPolicy struct {
	// Pin is auto, none, or CPU numbers, one per posting thread (e.g. 0,1).
	Pin string
	// Threads is the number of posting threads (0: auto).
	Threads int
	// Allowed are the CPUs the process may run on (nil: AllowedCPUs).
	Allowed []int
}

// AllowedCPUs lists the CPUs this process may run on (none outside Linux).
func AllowedCPUs() ([]int, error) { return affinity.Allowed() }

// SoftwareRDMA reports whether a device driven by driver is a software RDMA
// device (rxe, siw), whose posting CPU carries the queue pairs' data path.
func SoftwareRDMA(driver string) bool { return driver == "rdma_rxe" || driver == "siw" }

// Check refuses a policy that no device could resolve, before the device and
// the receiver's queue pairs are known (qps: the ones asked for, 0: any).
func (p PostingPolicy) Check(qps int) error {
	_, _, err := p.Resolve("", cmp.Or(qps, wire.MaxQPs))
	return err
}

// Resolve chooses the posting for a device driven by driver and qps queue
// pairs: either one posting thread (pinned as pin says) or one per CPU in
// cpus. auto spreads the posting over the allowed CPUs on software RDMA
// devices.
func (p PostingPolicy) Resolve(driver string, qps int) (pin CPUPin, cpus []int, err error) {
	if p.Threads < 0 {
		return 0, nil, fmt.Errorf("--post-threads %d: want 1 or more (0: auto)", p.Threads)
	}
	if p.Threads > qps {
		return 0, nil, fmt.Errorf("--post-threads %d: more than the %d queue pairs (--qps); want at most one thread per queue pair", p.Threads, qps)
	}
	switch p.Pin {
	case "none":
		if p.Threads > 1 {
			return 0, nil, fmt.Errorf("--post-threads %d posts from pinned threads: give --pin-cpu auto or one CPU per thread, not none", p.Threads)
		}
		return PinNone, nil, nil
	case "auto":
		return p.auto(SoftwareRDMA(driver), qps)
	}
	return p.listed(qps)
}

// auto chooses the posting threads: on software RDMA one per allowed CPU, up
// to the queue pairs, the one thread pinned where it starts; on a NIC one
// free thread, unless threads are asked for.
func (p PostingPolicy) auto(soft bool, qps int) (CPUPin, []int, error) {
	n := p.Threads
	if n == 0 {
		n = 1
		if soft {
			n = max(1, min(len(p.Allowed), qps))
		}
	}
	if n == 1 {
		if soft {
			return PinCurrent, nil, nil
		}
		return PinNone, nil, nil
	}
	if n > len(p.Allowed) {
		return 0, nil, fmt.Errorf("--post-threads %d: this process may run on %d CPUs (%v); give --pin-cpu a CPU per thread to share them", n, len(p.Allowed), p.Allowed)
	}
	return PinNone, p.Allowed[:n], nil
}

// listed reads CPU numbers: one pinned thread per CPU listed.
func (p PostingPolicy) listed(qps int) (CPUPin, []int, error) {
	var cpus []int
	for f := range strings.SplitSeq(p.Pin, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return 0, nil, fmt.Errorf("--pin-cpu %q: want auto, none or CPU numbers (e.g. 3 or 0,1)", p.Pin)
		}
		cpus = append(cpus, n)
	}
	if p.Threads != 0 && p.Threads != len(cpus) {
		return 0, nil, fmt.Errorf("--pin-cpu %s lists %d CPUs for --post-threads %d: want one per thread", p.Pin, len(cpus), p.Threads)
	}
	if len(cpus) > qps { // with --post-threads 0: a thread per CPU listed
		return 0, nil, fmt.Errorf("--pin-cpu %s: %d posting threads, more than the %d queue pairs (--qps); want at most one thread per queue pair", p.Pin, len(cpus), qps)
	}
	if len(cpus) == 1 {
		return PinTo(cpus[0]), nil, nil
	}
	return PinNone, cpus, nil
}
