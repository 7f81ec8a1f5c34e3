//go:build !linux || !cgo

package devices

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// TestNoLibfabric: built without libfabric, the report lists the verbs devices and says
// libfabric is not available, in both outputs, instead of failing.
func TestNoLibfabric(t *testing.T) {
	r, err := Collect(roots("pci"), ofi.Discover)
	if err != nil {
		t.Fatal(err)
	}
	if r.OFI.Available || !strings.Contains(r.OFI.Error, "libfabric is not available") || len(r.Verbs) != 3 {
		t.Fatalf("report %+v", r)
	}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "libfabric: libfabric is not available") || !strings.Contains(b.String(), "mlx5_0") {
		t.Errorf("text:\n%s", b.String())
	}
}
