package plugin

import (
	"net"
	"os"
	"testing"
)

func netListenUnix(path string) (net.Listener, error) { return net.Listen("unix", path) }

// shortTempDir is a temporary directory with a short path (unix socket paths are
// limited to 108 bytes).
func shortTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "rcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// hostOnly skips tests that read the committed testdata trees inside the Soft-RoCE
// VM (make test-vm), where the repository is on 9p under emulation and reading many
// small files takes minutes; they run on the host (make test), and the VM test
// exercises the plugin on the live devices.
func hostOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("RINGCAP_VM") == "1" {
		t.Skip("testdata-tree test: runs on the host (make test); the VM tests the live devices")
	}
}
