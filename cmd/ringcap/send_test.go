package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/sender"
)

func TestResolvePosting(t *testing.T) {
	two := []int{0, 1}
	for _, c := range []struct {
		v       string
		threads int
		driver  string
		allowed []int
		qps     int
		pin     sender.CPUPin
		cpus    []int
		bad     string
	}{
		// auto: on software RDMA, one thread per allowed CPU, up to the queue pairs
		{v: "auto", driver: "rdma_rxe", allowed: two, qps: 4, cpus: two},
		{v: "auto", driver: "siw", allowed: []int{2, 5, 7}, qps: 4, cpus: []int{2, 5, 7}},
		{v: "auto", driver: "rdma_rxe", allowed: []int{2, 5, 7}, qps: 2, cpus: []int{2, 5}},
		{v: "auto", driver: "rdma_rxe", allowed: two, qps: 1, pin: sender.PinCurrent},
		{v: "auto", driver: "rdma_rxe", allowed: []int{3}, qps: 4, pin: sender.PinCurrent},
		{v: "auto", threads: 1, driver: "rdma_rxe", allowed: two, qps: 4, pin: sender.PinCurrent},
		// auto on a hardware NIC: one free thread, unless threads are asked for
		{v: "auto", driver: "mlx5_core", allowed: two, qps: 4, pin: sender.PinNone},
		{v: "auto", threads: 2, driver: "mlx5_core", allowed: two, qps: 4, cpus: two},
		{v: "auto", threads: 3, driver: "rdma_rxe", allowed: two, qps: 4, bad: "may run on 2 CPUs"},
		{v: "none", driver: "rdma_rxe", allowed: two, qps: 4, pin: sender.PinNone},
		{v: "none", threads: 2, driver: "rdma_rxe", allowed: two, qps: 4, bad: "not none"},
		// explicit CPUs: one per thread
		{v: "3", driver: "mlx5_core", allowed: two, qps: 4, pin: sender.PinTo(3)},
		{v: "0", driver: "rdma_rxe", allowed: two, qps: 4, pin: sender.PinTo(0)},
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
		pin, cpus, err := resolvePosting(c.v, c.threads, c.driver, c.allowed, c.qps)
		name := fmt.Sprintf("resolvePosting(%q, %d, %q, %v, %d)", c.v, c.threads, c.driver, c.allowed, c.qps)
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

// Bad send flags fail before any connection is attempted, naming the flag.
func TestSendRejectsBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--bytes", "1M", "--ack-timeout", "0"}, "--ack-timeout 0"},
		{[]string{"--bytes", "1M", "--ack-timeout", "31"}, "ACK timeout exponent 31"},
		{[]string{"--bytes", "1M", "--duration", "1s"}, "not both"},
		{[]string{"--bytes", "1M", "--pin-cpu", "first"}, "--pin-cpu"},
		{[]string{"--bytes", "1M", "--post-threads", "-2"}, "--post-threads -2"},
		{[]string{"--bytes", "1M", "--qps", "2", "--pin-cpu", "0,1,2"}, "at most one thread per queue pair"},
	} {
		// Port 1 on loopback: nothing listens, so a flag check that let this through would
		// fail with a connection error instead of the expected message.
		args := append([]string{"send", "--connect", "127.0.0.1:1"}, c.args...)
		_, _, err := ringcap(context.Background(), args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ringcap %s: got %v, want an error containing %q", strings.Join(args, " "), err, c.want)
		}
	}
}

// Progress lines say when the receiver is held back by its ring's readers,
// and for how long, also when nothing moves.
func TestPrintProgressSaysHeldBack(t *testing.T) {
	p := sender.Progress{Bytes: 1 << 20, Acked: 1 << 20, Elapsed: 10 * time.Second, HeldBack: 7 * time.Second}
	cases := []struct {
		name    string
		tty     bool
		holding bool
		want    []string
		not     []string
	}{
		{"log, moving", false, false, []string{"send: progress bytes=1048576 acked=1048576 seconds=10.000", "held_back_seconds=7.000"}, []string{"held back by"}},
		{"log, held back", false, true, []string{"held_back_seconds=7.000", "(held back by the receiver's ring readers for 4.0 s)"}, nil},
		{"terminal, moving", true, false, []string{"1.00 MiB"}, []string{"held back"}},
		{"terminal, held back", true, true, []string{"1.00 MiB", "held back by the receiver's ring readers for 4.0 s"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := p
			if c.holding {
				q.Holding, q.HoldFor = true, 4*time.Second
			}
			var b strings.Builder
			printProgress(&b, c.tty, q)
			for _, w := range c.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("%q lacks %q", b.String(), w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(b.String(), w) {
					t.Errorf("%q has %q", b.String(), w)
				}
			}
		})
	}
}
