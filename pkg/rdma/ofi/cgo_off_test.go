//go:build !linux || !cgo

package ofi

import (
	"errors"
	"testing"
)

func TestTwinReturnsErrNotSupported(t *testing.T) {
	if _, err := Discover(Hints{Provider: "tcp;ofi_rxm"}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Discover: %v", err)
	}
	if _, err := Open(Hints{}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Open: %v", err)
	}
	var d *Domain
	if err := d.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
