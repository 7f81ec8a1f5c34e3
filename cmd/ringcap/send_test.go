package main

import (
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
