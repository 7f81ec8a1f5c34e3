package capture

import (
	"os"
	"testing"

	"github.com/ringcap/ringcap/internal/ipctest"
)

// TestMain fails the package's tests (host and, with -tags vm, the Soft-RoCE
// ones) when any goroutine outlives them: receivers, senders, ring workers,
// control-connection readers and completion-event waiters must all stop. It
// also fails them when a ring a host test created (testRing) left a shared
// memory segment or semaphore set behind; the binary runs in a SysV IPC
// namespace of its own (ipctest.Isolate), so other processes' rings are not.
func TestMain(m *testing.M) { os.Exit(ipctest.Main(m, testKeys, 256)) }
