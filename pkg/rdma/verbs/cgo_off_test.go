//go:build !linux || !cgo

package verbs

import (
	"errors"
	"testing"
)

const cgoEnabled = false

func TestTwinReturnsErrNotSupported(t *testing.T) {
	if _, err := DeviceNames(); !errors.Is(err, ErrNotSupported) {
		t.Errorf("DeviceNames: %v", err)
	}
	if _, err := Open("rxe0"); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Open: %v", err)
	}
	var c *Context
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
