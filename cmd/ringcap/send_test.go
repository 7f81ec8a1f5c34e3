package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/sender"
)

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
