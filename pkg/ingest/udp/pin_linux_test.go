//go:build linux

package udp

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ringcap/ringcap/internal/affinity"
)

// Each socket's receive thread runs on the CPU Config.CPUs gives it, cycling through the
// list, and no pinned thread is left to run other goroutines after Close.
func TestReceiveThreadsPinned(t *testing.T) {
	allowed, err := affinity.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	first, last := allowed[0], allowed[len(allowed)-1]
	var mu sync.Mutex
	seen := map[int][]int{} // socket -> the CPU set its handler ran with
	r, err := Open(Config{Address: loopback, Ports: []uint16{0, 0, 0}, CPUs: []int{last, first}})
	if err != nil {
		t.Fatal(err)
	}
	socks := r.Sockets()
	for i, want := range []int{last, first, last} {
		if !socks[i].Pinned || socks[i].CPU != want {
			t.Errorf("socket %d: pinned %t to CPU %d, want pinned to %d", i, socks[i].Pinned, socks[i].CPU, want)
		}
	}
	done := make(chan error, 1)
	go func() {
		done <- r.Run(func(p Packet) {
			set, err := affinity.Allowed() // the handler runs on the receive thread
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			seen[p.Socket] = set
			mu.Unlock()
		})
	}()
	for _, s := range socks {
		send(t, dial(t, s.Local), datagram(make([]byte, 64), 0))
	}
	waitAccounted(t, r, uint64(len(socks)))
	_ = r.Close()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	for i, s := range socks {
		if !slices.Equal(seen[i], []int{s.CPU}) {
			t.Errorf("socket %d's handler ran on CPUs %v, want only %d", i, seen[i], s.CPU)
		}
	}
	assertThreadsUnpinned(t, allowed)
}

// assertThreadsUnpinned runs goroutines on fresh and pooled threads and fails when one
// finds its thread's CPU set narrower than allowed.
func assertThreadsUnpinned(t *testing.T, allowed []int) {
	t.Helper()
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if set, _ := affinity.Allowed(); !slices.Equal(set, allowed) {
				t.Errorf("a thread after Close may run on CPUs %v, want %v", set, allowed)
			}
		})
	}
	wg.Wait()
}

// Open refuses a CPU this process may not run on, naming those it may.
func TestOpenRefusesCPUOutsideAllowed(t *testing.T) {
	t.Parallel()
	r, err := Open(Config{Address: loopback, Ports: []uint16{0}, CPUs: []int{affinity.MaxCPU}})
	if err == nil {
		_ = r.Close()
		t.Fatal("Open with CPU 1023: no error")
	}
	if !strings.Contains(err.Error(), "udp config: CPUs [1023]: this process may not run on CPU 1023 (it may on") {
		t.Errorf("Open: %v; want it to name the CPUs allowed", err)
	}
}

// Without Config.CPUs no socket says it is pinned.
func TestReceiveThreadsUnpinnedByDefault(t *testing.T) {
	t.Parallel()
	r, err := Open(Config{Address: loopback, Ports: []uint16{0, 0}, LockOSThread: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	for i, s := range r.Sockets() {
		if s.Pinned {
			t.Errorf("socket %d pinned to CPU %d without Config.CPUs", i, s.CPU)
		}
	}
}
