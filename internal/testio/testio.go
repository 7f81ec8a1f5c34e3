// Package testio holds small I/O helpers for tests.
package testio

import (
	"bytes"
	"sync"
)

// Buffer collects output written from any goroutine (a child process's
// stdout and stderr, a logger) while the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
