// Package testkit holds the helpers every test package shares: waiting on a condition
// instead of sleeping, and marking tests that run on the host only. It imports only the
// standard library, so any test can use it.
package testkit

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// Interval is how often Eventually and WaitFor look at their condition.
const Interval = 50 * time.Millisecond

// Eventually polls cond until it returns true or timeout passes; the timeout only
// bounds a failing test (nothing here measures speed). It gives up at once when
// abort (if not nil) returns an error, e.g. because the process that would make
// cond true has exited. The error says what cond last reported.
func Eventually(timeout time.Duration, abort func() error, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return nil
		}
		if abort != nil {
			if err := abort(); err != nil {
				return fmt.Errorf("gave up waiting (%s): %w", why, err)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("condition not met after %s: %s", timeout, why)
		}
		time.Sleep(Interval)
	}
}

// WaitFor is Eventually without an abort that fails the test, naming what it waited for.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	if err := Eventually(timeout, nil, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// HostOnly skips a test that reads committed testdata trees when it runs inside the
// Soft-RoCE VM (make test-vm, RINGCAP_VM=1): there the repository is on 9p under
// emulation, where reading thousands of small files takes minutes. Such tests run on the
// host (make test); in the VM the TestVM* tests exercise the live devices.
func HostOnly(t testing.TB) {
	t.Helper()
	if os.Getenv("RINGCAP_VM") == "1" {
		t.Skip("testdata-tree test: runs on the host (make test); the VM tests the live devices")
	}
}
