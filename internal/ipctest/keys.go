package ipctest

import (
	"fmt"
	"os"
	"sync"
)

// Keys hands out the ring keys of one test binary and remembers them for its leak check
// (CheckLeaks). A key's high 16 bits are base + (pid mod spread) * stride, so concurrent
// test binaries, including other packages', use different bands; the low 16 bits count up
// from low in steps of 2, so key+1 (the header ring) never meets the next ring.
type Keys struct {
	mu   sync.Mutex
	next uint32
	used []uint32
}

// NewKeys returns the allocator of the band base + (pid mod spread) * stride.
func NewKeys(base, spread, stride, low uint32) *Keys {
	high := base + uint32(os.Getpid())%spread*stride
	return &Keys{next: high<<16 | low}
}

// Next returns the next key and records it.
func (k *Keys) Next() uint32 {
	k.mu.Lock()
	defer k.mu.Unlock()
	key := k.next
	k.next += 2
	k.used = append(k.used, key)
	return key
}

// Free returns the next key at which no object of a ring of up to maxBlocks blocks (or
// its header ring) exists, skipping keys another process holds.
func (k *Keys) Free(maxBlocks int) (uint32, error) {
	for range 100 {
		if key := k.Next(); !InUse(key, maxBlocks) {
			return key, nil
		}
	}
	return 0, fmt.Errorf("no free ring key after 100 tries from %#x", k.next)
}

// Forget takes key back out of the keys to check for leaks: another process's ring
// was found there and left alone.
func (k *Keys) Forget(key uint32) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, u := range k.used {
		if u == key {
			k.used = append(k.used[:i], k.used[i+1:]...)
			return
		}
	}
}

// Used returns every key handed out so far.
func (k *Keys) Used() []uint32 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]uint32(nil), k.used...)
}
