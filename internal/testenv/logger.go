package testenv

import (
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// Logger logs to t.Log until the test ends; goroutines that outlive it (gRPC
// handlers, say) log nothing afterwards instead of panicking the test binary.
func Logger(t testing.TB) logr.Logger {
	var mu sync.Mutex
	done := false
	t.Cleanup(func() { mu.Lock(); done = true; mu.Unlock() })
	return funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Log(prefix, args)
		}
	}, funcr.Options{Verbosity: 1})
}
