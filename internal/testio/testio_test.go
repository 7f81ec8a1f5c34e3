package testio

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestBufferTakesWritesFromManyGoroutines(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = fmt.Fprintf(&b, "line %d\n", i)
		}()
	}
	wg.Wait()
	if got := strings.Count(b.String(), "\n"); got != 8 {
		t.Errorf("%d lines, want 8:\n%s", got, b.String())
	}
}
