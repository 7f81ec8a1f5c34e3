package sender

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The posting policy (ringcap send --pin-cpu, --post-threads) for each kind
// of device, and the flag combinations it refuses.
func TestPostingPolicy(t *testing.T) {
	two := []int{0, 1}
	for _, c := range []struct {
		v       string
		threads int
		driver  string
		allowed []int
		qps     int
		pin     CPUPin
		cpus    []int
		bad     string
	}{
		// auto: on software RDMA, one thread per allowed CPU, up to the queue pairs
		{v: "auto", driver: "rdma_rxe", allowed: two, qps: 4, cpus: two},
		{v: "auto", driver: "siw", allowed: []int{2, 5, 7}, qps: 4, cpus: []int{2, 5, 7}},
		{v: "auto", driver: "rdma_rxe", allowed: []int{2, 5, 7}, qps: 2, cpus: []int{2, 5}},
		{v: "auto", driver: "rdma_rxe", allowed: two, qps: 1, pin: PinCurrent},
		{v: "auto", driver: "rdma_rxe", allowed: []int{3}, qps: 4, pin: PinCurrent},
		{v: "auto", threads: 1, driver: "rdma_rxe", allowed: two, qps: 4, pin: PinCurrent},
		// auto on a hardware NIC: one free thread, unless threads are asked for
		{v: "auto", driver: "mlx5_core", allowed: two, qps: 4, pin: PinNone},
		{v: "auto", threads: 2, driver: "mlx5_core", allowed: two, qps: 4, cpus: two},
		{v: "auto", threads: 3, driver: "rdma_rxe", allowed: two, qps: 4, bad: "may run on 2 CPUs"},
		{v: "none", driver: "rdma_rxe", allowed: two, qps: 4, pin: PinNone},
		{v: "none", threads: 2, driver: "rdma_rxe", allowed: two, qps: 4, bad: "not none"},
		// explicit CPUs: one per thread
		{v: "3", driver: "mlx5_core", allowed: two, qps: 4, pin: PinTo(3)},
		{v: "0", driver: "rdma_rxe", allowed: two, qps: 4, pin: PinTo(0)},
		{v: "1,0", driver: "rdma_rxe", allowed: two, qps: 4, cpus: []int{1, 0}},
		{v: "0,0", threads: 2, driver: "rdma_rxe", allowed: two, qps: 4, cpus: []int{0, 0}},
		{v: "0,1", threads: 3, driver: "rdma_rxe", allowed: two, qps: 4, bad: "2 CPUs for --post-threads 3"},
		{v: "0,1,0", driver: "rdma_rxe", allowed: two, qps: 2, bad: "at most one thread per queue pair"},
		{v: "auto", threads: 5, driver: "rdma_rxe", allowed: two, qps: 4, bad: "more than the 4 queue pairs (--qps); want at most one thread per queue pair"},
		{v: "auto", threads: -1, allowed: two, qps: 4, bad: "--post-threads -1"},
		{v: "-1", allowed: two, qps: 4, bad: "want auto, none or CPU numbers"},
		{v: "0,", allowed: two, qps: 4, bad: "want auto, none or CPU numbers"},
		{v: "first", allowed: two, qps: 4, bad: "want auto, none or CPU numbers"},
	} {
		pin, cpus, err := PostingPolicy{Pin: c.v, Threads: c.threads, Allowed: c.allowed}.Resolve(c.driver, c.qps)
		name := fmt.Sprintf("PostingPolicy{%q, %d, %v}.Resolve(%q, %d)", c.v, c.threads, c.allowed, c.driver, c.qps)
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("%s: error %v, want one containing %q", name, err, c.bad)
			}
			continue
		}
		if err != nil || pin != c.pin || !slices.Equal(cpus, c.cpus) {
			t.Errorf("%s = %v, %v, %v; want %v, %v", name, pin, cpus, err, c.pin, c.cpus)
		}
	}
}

// Check refuses before the device is known what no device could resolve,
// and leaves auto to the device.
func TestPostingPolicyCheck(t *testing.T) {
	two := []int{0, 1}
	for _, c := range []struct {
		p   PostingPolicy
		qps int
		bad string
	}{
		{PostingPolicy{Pin: "auto", Allowed: two}, 0, ""},
		{PostingPolicy{Pin: "auto", Threads: 2, Allowed: two}, 0, ""},
		{PostingPolicy{Pin: "0,1,2", Allowed: two}, 2, "at most one thread per queue pair"},
		{PostingPolicy{Pin: "0,1,2", Allowed: two}, 0, ""},
		{PostingPolicy{Pin: "first", Allowed: two}, 0, "--pin-cpu"},
		{PostingPolicy{Pin: "auto", Threads: -2, Allowed: two}, 0, "--post-threads -2"},
	} {
		err := c.p.Check(c.qps)
		if (c.bad == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("%+v.Check(%d) = %v, want %q", c.p, c.qps, err, c.bad)
		}
	}
}
