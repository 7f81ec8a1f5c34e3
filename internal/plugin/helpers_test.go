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
