package dada

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/ringcap/ringcap/internal/ipctest"
)

// testKeys: the high 16 bits derive from the pid (so concurrent test binaries, including
// other packages' tests, do not collide), the low 16 bits count up from 0xa000 in steps of 2
// (so K+1, the header ring, never meets the next ring). 0xdada is never used.
var testKeys = ipctest.NewKeys(0x3000, 64, 0x100, 0xa000)

// testKey returns a key at which no object of a ring (data or header) exists; a child
// process of a test takes its parent's from RINGCAP_TEST_KEY.
func testKey(t testing.TB) Key {
	t.Helper()
	if v := os.Getenv("RINGCAP_TEST_KEY"); v != "" {
		k, err := ParseKey(v)
		if err != nil {
			t.Fatalf("RINGCAP_TEST_KEY %q: %v", v, err)
		}
		return k
	}
	k, err := testKeys.Free(64)
	if err != nil {
		t.Fatal(err)
	}
	return Key(k)
}

// createTestRing creates a HDU at a fresh key and destroys it when the test ends.
func createTestRing(t testing.TB, cfg Config) *HDU {
	t.Helper()
	cfg.Key = testKey(t)
	if cfg.HeaderBufSize == 0 {
		cfg.HeaderBufSize = MinHeaderBufSize
	}
	if cfg.Readers == 0 {
		cfg.Readers = 1
	}
	h, err := Create(cfg)
	if err != nil {
		t.Fatalf("Create(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := h.Destroy(); err != nil {
			t.Errorf("destroy ring %s: %v", cfg.Key, err)
		}
	})
	return h
}

// ringKeysInUse reports whether an object exists at a key ring k (or its header ring)
// can use with up to nbufs blocks.
func ringKeysInUse(k Key, nbufs int) bool { return ipctest.InUse(uint32(k), nbufs) }

// listIPC lists every SysV shared memory segment and semaphore set in the test binary's
// IPC namespace (see TestMain).
func listIPC() ([]ipctest.Object, error) { return ipctest.List() }

// TestMain runs the tests in a SysV IPC namespace of their own (ipctest.Isolate;
// the child processes of child_test.go share it) and fails them when a ring is
// left behind.
func TestMain(m *testing.M) {
	ipctest.Isolate()
	if role := os.Getenv("RINGCAP_TEST_ROLE"); role != "" {
		os.Exit(runChildRole(role))
	}
	removeStaleTestRings(0xa000)
	code := m.Run()
	printRatios()
	if !ipctest.CheckLeaks(testKeys.Used(), 256) {
		code = 1
	}
	os.Exit(code)
}

var errUnknownRole = errors.New("unknown child role")

// removeStaleTestRings destroys rings that an earlier, killed run of these tests left
// behind: sync segments at test keys (low 16 bits lo..lo+0xff, high 16 bits
// 0x3000+m*0x100) whose creator process is gone and that nobody has attached.
func removeStaleTestRings(lo uint32) {
	stale := ipctest.StaleSyncSegments(func(key uint32) bool {
		low, high := key&0xffff, key>>16
		return low >= lo && low <= lo+0xff && high >= 0x3000 && high < 0x7000 && high%0x100 == 0
	})
	for _, k := range stale {
		if err := destroyRing(Key(k)); err == nil {
			fmt.Fprintf(os.Stderr, "removed stale test ring %s left by a dead process\n", Key(k))
		}
	}
}
