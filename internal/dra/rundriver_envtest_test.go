//go:build envtest

package dra

import (
	"context"
	"testing"
)

// runUntilCleanup runs d until the end of the test, and fails the test if Run then returns an error.
func runUntilCleanup(t *testing.T, d *Driver) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
