//go:build linux && cgo

package devices

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// TestCollectRealLibfabric asks this host's libfabric (Debian's 1.17): tcp;ofi_rxm on the
// loopback and shm are offered, each able to run both modes, shm on this host only.
func TestCollectRealLibfabric(t *testing.T) {
	r, err := Collect(roots("pci"), ofi.Discover)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OFI.Available {
		t.Fatalf("libfabric not available: %s", r.OFI.Error)
	}
	found := map[string]OFIProvider{}
	for _, p := range r.OFI.Providers {
		found[p.Provider+" "+p.Domain] = p
	}
	tcp, ok := found["tcp;ofi_rxm lo"]
	if !ok || !tcp.RMA || !tcp.Msg || !tcp.RemoteCQData || tcp.LocalOnly || strings.Join(tcp.Modes, ",") != "write,send" {
		t.Errorf("tcp;ofi_rxm on lo: %+v (found %v)", tcp, keys(found))
	}
	shm, ok := found["shm shm"]
	if !ok || !shm.RMA || !shm.LocalOnly || strings.Join(shm.Modes, ",") != "write,send" {
		t.Errorf("shm: %+v (found %v)", shm, keys(found))
	}
}

func keys(m map[string]OFIProvider) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestWithoutCgo runs this package's tests built without cgo (the pure-Go libfabric
// twin), where the report says libfabric is not available instead of failing.
func TestWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package again without cgo")
	}
	cmd := exec.Command("go", "test", "-count=1", "-v", "-run", "^TestNoLibfabric$", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestNoLibfabric") {
		t.Fatalf("CGO_ENABLED=0 go test -run TestNoLibfabric: %v\n%s", err, out)
	}
}
