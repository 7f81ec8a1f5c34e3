package ipctest

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Main runs a test binary's tests in a SysV IPC namespace of its own (Isolate) and
// returns the exit code for os.Exit: failed when a goroutine outlives the tests or a
// ring of keys (with up to maxBlocks blocks) left shared memory or semaphores behind.
func Main(m *testing.M, keys *Keys, maxBlocks int) int {
	Isolate()
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "LEAK:", err)
			code = 1
		}
	}
	if !CheckLeaks(keys.Used(), maxBlocks) {
		code = 1
	}
	return code
}
