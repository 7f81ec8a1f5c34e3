package capture

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests (host and, with -tags vm, the Soft-RoCE
// ones) when any goroutine outlives them: receivers, senders, ring workers,
// control-connection readers and completion-event waiters must all stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
