package main

import (
	"context"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture"
)

func TestParsePin(t *testing.T) {
	for _, c := range []struct {
		v, driver string
		want      capture.CPUPin
		bad       bool
	}{
		{"auto", "rdma_rxe", capture.PinCurrent, false},
		{"auto", "siw", capture.PinCurrent, false},
		{"auto", "mlx5_core", capture.PinNone, false},
		{"none", "rdma_rxe", capture.PinNone, false},
		{"3", "mlx5_core", capture.PinTo(3), false},
		{"0", "", capture.PinTo(0), false},
		{"-1", "", 0, true},
		{"first", "", 0, true},
	} {
		got, err := parsePin(c.v, c.driver)
		if (err != nil) != c.bad || (!c.bad && got != c.want) {
			t.Errorf("parsePin(%q, %q) = %v, %v", c.v, c.driver, got, err)
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
