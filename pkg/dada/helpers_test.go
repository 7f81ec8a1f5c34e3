package dada

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Test keys: the high 16 bits derive from the pid (so concurrent test binaries, including
// other packages' tests, do not collide), the low 16 bits count up in steps of 2 (so K+1,
// the header ring, never meets the next ring). 0xdada is never used.
var (
	keyMu   sync.Mutex
	keyNext = uint32(0xa000)
	keyHigh = uint32(0x3000 + (os.Getpid()%64)*0x100)
	// usedKeys records every key a test created a ring at, for the leak check.
	usedKeys []Key
)

func nextKey() Key {
	keyMu.Lock()
	defer keyMu.Unlock()
	if v := os.Getenv("RINGCAP_TEST_KEY"); v != "" { // a child process of a test
		k, _ := ParseKey(v)
		return k
	}
	k := Key(keyHigh<<16 | keyNext)
	keyNext += 2
	usedKeys = append(usedKeys, k)
	return k
}

// testKey returns a key at which no object of a ring (data or header) exists.
func testKey(t testing.TB) Key {
	t.Helper()
	for i := 0; i < 100; i++ {
		k := nextKey()
		if !ringKeysInUse(k, 64) {
			return k
		}
	}
	t.Fatal("no free test key")
	return 0
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

type ipcObject struct {
	kind string
	key  int32
	id   int
}

// listIPC lists every SysV shared memory segment and semaphore set on the host.
func listIPC() ([]ipcObject, error) {
	var out []ipcObject
	for _, kind := range []string{"shm", "sem"} {
		f, err := os.Open("/proc/sysvipc/" + kind)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 2 {
				continue
			}
			k, err1 := strconv.ParseInt(fs[0], 10, 64)
			id, err2 := strconv.Atoi(fs[1])
			if err1 != nil || err2 != nil {
				_ = f.Close()
				return nil, fmt.Errorf("parse /proc/sysvipc/%s line %q", kind, sc.Text())
			}
			out = append(out, ipcObject{kind: kind, key: int32(k), id: id})
		}
		_ = f.Close()
	}
	return out, nil
}

// ringKeySet is every key ring k (and its header ring) can use with up to nbufs blocks.
func ringKeySet(k Key, nbufs int) map[int32]bool {
	m := map[int32]bool{}
	for _, r := range []Key{k, k + 1} {
		for n := 0; n < 10+nbufs; n++ {
			m[r.plus(uint64(n))] = true
		}
	}
	return m
}

func ringKeysInUse(k Key, nbufs int) bool {
	objs, err := listIPC()
	if err != nil {
		return true
	}
	set := ringKeySet(k, nbufs)
	for _, o := range objs {
		if set[o.key] {
			return true
		}
	}
	return false
}

// leakedIPC returns the IPC objects left at any key a test of this process used.
func leakedIPC() ([]ipcObject, error) {
	objs, err := listIPC()
	if err != nil {
		return nil, err
	}
	keyMu.Lock()
	keys := append([]Key(nil), usedKeys...)
	keyMu.Unlock()
	var leaked []ipcObject
	for _, k := range keys {
		set := ringKeySet(k, 256)
		for _, o := range objs {
			if set[o.key] {
				leaked = append(leaked, o)
			}
		}
	}
	return leaked, nil
}

func TestMain(m *testing.M) {
	if role := os.Getenv("RINGCAP_TEST_ROLE"); role != "" {
		os.Exit(runChildRole(role))
	}
	removeStaleTestRings(0xa000)
	code := m.Run()
	printRatios()
	leaked, err := leakedIPC()
	if err != nil {
		fmt.Fprintln(os.Stderr, "leak check:", err)
		code = 1
	}
	for _, o := range leaked {
		fmt.Fprintf(os.Stderr, "LEAK: %s key %#x id %d left behind by a test\n", o.kind, uint32(o.key), o.id)
		if o.kind == "shm" {
			_ = shmRemove(o.id)
		} else {
			_ = semRemove(o.id)
		}
		code = 1
	}
	os.Exit(code)
}

var errUnknownRole = errors.New("unknown child role")

// removeStaleTestRings destroys rings that an earlier, killed run of these tests left
// behind: sync segments at test keys (low 16 bits lo..lo+0xff, high 16 bits
// 0x3000+m*0x100) whose creator process is gone and that nobody has attached.
func removeStaleTestRings(lo int) {
	b, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 7 {
			continue
		}
		key, err1 := strconv.ParseInt(f[0], 10, 64)
		cpid, err2 := strconv.Atoi(f[4])
		nattch, err3 := strconv.Atoi(f[6])
		if err1 != nil || err2 != nil || err3 != nil || nattch != 0 {
			continue
		}
		low, high := int(key&0xffff), int(key>>16)
		if low < lo || low > lo+0xff || high < 0x3000 || high >= 0x7000 || high%0x100 != 0 {
			continue
		}
		if err := syscall.Kill(cpid, 0); err == nil || errors.Is(err, syscall.EPERM) {
			continue // creator alive
		}
		if err := destroyRing(Key(key)); err == nil {
			fmt.Fprintf(os.Stderr, "removed stale test ring %s left by dead process %d\n", Key(key), cpid)
		}
	}
}
