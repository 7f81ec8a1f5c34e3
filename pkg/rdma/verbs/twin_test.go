package verbs

import (
	"testing"

	"github.com/ringcap/ringcap/internal/twintest"
)

// TestTwinExportsWhatTheBindingExports fails when an exported identifier exists in the cgo
// binding (linux, cgo) and not in the pure-Go twin (CGO_ENABLED=0, or another GOOS), or the
// other way round: code that builds against one must build against the other.
func TestTwinExportsWhatTheBindingExports(t *testing.T) {
	twintest.CompareTwins(t, ".", "Open", "QP.PostSend", "PostThread.Post")
}
