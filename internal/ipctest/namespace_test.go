//go:build linux

package ipctest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const (
	roleEnv = "IPCTEST_RING_ROLE" // "clean" or "leak"
	keyEnv  = "IPCTEST_RING_KEY"
)

// makeRing creates the objects of a ring at key k and of its header ring at
// k+1 the way PSRDADA lays them out (psrdada-contract.md): the sync segment,
// the connection semaphore set, a data semaphore set (one reader) and nbufs
// blocks from key + 10*0x10000 on. On failure it removes what it created.
func makeRing(k uint32, nbufs int) ([]Object, error) {
	kinds := map[int]string{0: Shm, 1: Sem, 2: Sem} // by n, the key's offset in 0x10000s
	for b := range nbufs {
		kinds[ringObjects+b] = Shm
	}
	var objs []Object
	for _, r := range []uint32{k, k + 1} {
		for n, kind := range kinds {
			o, err := create(kind, r+uint32(n)*keyIncrement)
			if err != nil {
				for _, c := range objs {
					_ = Remove(c)
				}
				return nil, err
			}
			objs = append(objs, o)
		}
	}
	return objs, nil
}

func create(kind string, key uint32) (Object, error) {
	if kind == Shm {
		id, err := unix.SysvShmGet(int(key), 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
		if err != nil {
			return Object{}, fmt.Errorf("create segment at %#x: %w", key, err)
		}
		return Object{Kind: Shm, Key: key, ID: id}, nil
	}
	id, _, e := unix.Syscall(unix.SYS_SEMGET, uintptr(key), 2, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
	if e != 0 {
		return Object{}, fmt.Errorf("create semaphore set at %#x: %w", key, e)
	}
	return Object{Kind: Sem, Key: key, ID: int(id)}, nil
}

// runRingRole is a child of TestIsolatedLeakCheckSeesOnlyItsOwnRings, after
// TestMain's Isolate: it creates a ring with 4 blocks at the key in keyEnv,
// destroys it unless role is "leak", and exits with its leak check's verdict,
// as pkg/capture's TestMain does: 0 no leak, 1 a leak, 3 the ring could not be
// made or destroyed.
func runRingRole(role string) int {
	k, err := strconv.ParseUint(os.Getenv(keyEnv), 0, 32)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ring key:", err)
		return 3
	}
	objs, err := makeRing(uint32(k), 4)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	if role != "leak" {
		for _, o := range objs {
			if err := Remove(o); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 3
			}
		}
	}
	if !CheckLeaks([]uint32{uint32(k)}, 256) {
		return 1
	}
	return 0
}

// runChild runs this test binary as a child in role at key k with NamespaceEnv
// set to ns (unset when ns is ""), and returns its exit code and output.
func runChild(t *testing.T, role string, k uint32, ns string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, NamespaceEnv+"=") })
	cmd.Env = append(cmd.Env, roleEnv+"="+role, keyEnv+"="+strconv.FormatUint(uint64(k), 10))
	if ns != "" {
		cmd.Env = append(cmd.Env, NamespaceEnv+"="+ns)
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run child %s: %v", role, err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// The false leak of two concurrent test runs: another process's ring (here
// this test's, at the key pkg/capture's next pid band would use: 0x10<<16
// above) has objects at keys a test binary checks for its ring at k. A binary
// that called Isolate neither reports nor removes them, and still reports the
// ring it did not destroy; one in the caller's namespace (NamespaceEnv=shared)
// reports them, which is what Isolate prevents.
func TestIsolatedLeakCheckSeesOnlyItsOwnRings(t *testing.T) {
	k := base + 0x20
	neighbour, err := makeRing(k+0x10*keyIncrement, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, o := range neighbour {
			_ = Remove(o)
		}
	})
	leaked, err := Leaked([]uint32{k}, 256)
	if err != nil || len(leaked) != len(neighbour) {
		t.Fatalf("Leaked(k) = %v, %v; want the neighbour's %d objects (the test's premise)", leaked, err, len(neighbour))
	}

	if code, out := runChild(t, "clean", k, ""); code != 0 || strings.Contains(out, "LEAK") {
		t.Errorf("isolated child that destroyed its ring: exit %d, want 0 and no LEAK:\n%s", code, out)
	}
	code, out := runChild(t, "leak", k, "")
	if want := fmt.Sprintf("LEAK: shm key %#x", k); code != 1 || !strings.Contains(out, want) {
		t.Errorf("isolated child that left its ring: exit %d, want 1 and %q:\n%s", code, want, out)
	}
	if n := strings.Count(out, "LEAK:"); n != len(neighbour) { // as many objects as the neighbour's ring
		t.Errorf("isolated child that left its ring reported %d objects, want %d:\n%s", n, len(neighbour), out)
	}
	if other := fmt.Sprintf("key %#x", k+0x10*keyIncrement); strings.Contains(out, other) {
		t.Errorf("isolated child reported the neighbour's %s:\n%s", other, out)
	}
	if left, _ := Leaked([]uint32{k}, 256); len(left) != len(neighbour) {
		t.Fatalf("after the isolated children, %d of the neighbour's %d objects are left: %v", len(left), len(neighbour), left)
	}

	code, out = runChild(t, "clean", k, nsShared)
	if code != 1 || !strings.Contains(out, fmt.Sprintf("LEAK: shm key %#x", k+0x10*keyIncrement)) ||
		!strings.Contains(out, "may be another process's") {
		t.Errorf("child in the caller's namespace: exit %d, want 1, the neighbour's objects reported and a note:\n%s", code, out)
	}
}
