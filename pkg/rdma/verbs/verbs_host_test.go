package verbs

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// On the host there is no RDMA device (real devices are tested in the VM: *_vm_test.go).
func TestOpenUnknownDevice(t *testing.T) {
	before := Live()
	c, err := Open("no-such-rdma-device")
	if err == nil {
		_ = c.Close()
		t.Fatal("Open of a missing device succeeded")
	}
	if !errors.Is(err, ErrNotSupported) && !strings.Contains(err.Error(), "no-such-rdma-device") {
		t.Errorf("error %q does not name the device", err)
	}
	if runtime.GOOS == "linux" && errors.Is(err, ErrNotSupported) && cgoEnabled {
		t.Errorf("cgo build returned ErrNotSupported: %v", err)
	}
	if Live() != before {
		t.Errorf("live objects changed: %+v -> %+v", before, Live())
	}
}
