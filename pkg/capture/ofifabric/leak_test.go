package ofifabric

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them (the
// receiver's waiter, the tests' posting goroutines).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
