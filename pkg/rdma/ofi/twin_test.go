package ofi

import (
	"testing"

	"github.com/ringcap/ringcap/internal/twintest"
)

// TestTwinExportsWhatTheBindingExports fails when an exported identifier exists in the cgo
// binding (linux, cgo) and not in the pure-Go twin (CGO_ENABLED=0, or another GOOS), or the
// other way round.
func TestTwinExportsWhatTheBindingExports(t *testing.T) {
	twintest.CompareTwins(t, ".", "Open", "Discover", "Endpoint.WriteData", "CQ.ReadWait")
}
