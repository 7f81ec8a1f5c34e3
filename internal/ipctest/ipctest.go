//go:build linux

// Package ipctest lists and removes SysV IPC objects for the leak checks and
// stale-ring cleanup of tests that create PSRDADA rings (pkg/dada, pkg/capture,
// cmd/ringcap). It reads /proc/sysvipc and does not import pkg/dada, so that
// package's own tests can use it.
//
// A ring's objects span many keys (key + n*0x10000), so the key bands of two
// test processes overlap and a leak check by key alone would report another
// process's rings as leaks. TestMain therefore first calls Isolate, which runs
// the test binary in a SysV IPC namespace of its own: its leak check sees only
// the objects that binary and the processes it starts created. To inspect its
// rings from outside, use nsenter -t PID -i ipcs (PID: the test binary's
// re-executed process) or set RINGCAP_IPCTEST_NS=shared.
package ipctest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Kinds of SysV IPC objects a ring is made of.
const (
	Shm = "shm"
	Sem = "sem"
)

// keyIncrement is the step between a ring's object keys (psrdada-contract.md:
// the sync segment and semaphore sets, then each block, at key + n*0x10000).
// pkg/dada's TestCreateMatchesDadaDB checks it against a real ring.
const keyIncrement = 0x10000

// ringObjects is how many keys a ring uses before its blocks' (key + 10*0x10000
// on): the sync segment, the connection semaphore set and one data semaphore
// set per reader slot.
const ringObjects = 10

// Object is one SysV shared memory segment or semaphore set.
type Object struct {
	Kind string // Shm or Sem
	Key  uint32
	ID   int
	// CreatorPID and Attached are known for shared memory segments only.
	CreatorPID, Attached int
}

func (o Object) String() string { return fmt.Sprintf("%s key %#x id %d", o.Kind, o.Key, o.ID) }

// List returns every SysV shared memory segment and semaphore set visible in
// this IPC namespace.
func List() ([]Object, error) {
	var out []Object
	for _, kind := range []string{Shm, Sem} {
		objs, err := list(kind)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

func list(kind string) ([]Object, error) {
	path := "/proc/sysvipc/" + kind
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("list SysV %s objects: %w", kind, err)
	}
	defer func() { _ = f.Close() }()
	var out []Object
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
			return nil, fmt.Errorf("parse %s line %q", path, sc.Text())
		}
		o := Object{Kind: kind, Key: uint32(k), ID: id}
		if kind == Shm && len(fs) >= 7 { // key shmid perms size cpid lpid nattch ...
			cpid, err1 := strconv.Atoi(fs[4])
			nattch, err2 := strconv.Atoi(fs[6])
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("parse %s line %q", path, sc.Text())
			}
			o.CreatorPID, o.Attached = cpid, nattch
		}
		out = append(out, o)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

// RingKeys returns every key the ring at key k and its header ring (k+1) can
// place an object at, with up to maxBlocks blocks each.
func RingKeys(k uint32, maxBlocks int) map[uint32]bool {
	m := map[uint32]bool{}
	for _, r := range []uint32{k, k + 1} {
		for n := range ringObjects + maxBlocks {
			m[r+uint32(n)*keyIncrement] = true
		}
	}
	return m
}

// Leaked returns the objects at any key of the given rings (see RingKeys).
// K is any 32-bit key type, such as dada.Key (key_t).
func Leaked[K ~uint32 | ~int32](rings []K, maxBlocks int) ([]Object, error) {
	objs, err := List()
	if err != nil {
		return nil, err
	}
	keys := map[uint32]bool{}
	for _, r := range rings {
		for k := range RingKeys(uint32(r), maxBlocks) {
			keys[k] = true
		}
	}
	var out []Object
	for _, o := range objs {
		if keys[o.Key] {
			out = append(out, o)
		}
	}
	return out, nil
}

// InUse reports whether any object exists at a key of ring k (see RingKeys),
// or whether the objects could not be listed.
func InUse(k uint32, maxBlocks int) bool {
	objs, err := Leaked([]uint32{k}, maxBlocks)
	return err != nil || len(objs) > 0
}

// Remove removes the object.
func Remove(o Object) error {
	var err error
	switch o.Kind {
	case Shm:
		_, err = unix.SysvShmCtl(o.ID, unix.IPC_RMID, nil)
	case Sem:
		if _, _, e := unix.Syscall(unix.SYS_SEMCTL, uintptr(o.ID), 0, unix.IPC_RMID); e != 0 {
			err = e
		}
	default:
		err = fmt.Errorf("unknown kind %q", o.Kind)
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", o, err)
	}
	return nil
}

// CheckLeaks removes every object left at a key of the given rings, printing
// a LEAK line for each, and reports whether there were none (false also when
// the objects could not be listed). Test mains call it after m.Run.
func CheckLeaks[K ~uint32 | ~int32](rings []K, maxBlocks int) bool {
	leaked, err := Leaked(rings, maxBlocks)
	if err != nil {
		fmt.Fprintln(os.Stderr, "leak check:", err)
		return false
	}
	for _, o := range leaked {
		fmt.Fprintf(os.Stderr, "LEAK: %s left behind by a test\n", o)
		if err := Remove(o); err != nil {
			fmt.Fprintln(os.Stderr, "leak check:", err)
		}
	}
	if len(leaked) > 0 && !isolated {
		fmt.Fprintln(os.Stderr, "leak check: not in an IPC namespace of this binary's own (see Isolate): these objects may be another process's")
	}
	return len(leaked) == 0
}

// StaleSyncSegments returns the keys of shared memory segments for which
// match is true, that nothing has attached and whose creator process is gone:
// rings a killed earlier test run left behind (a ring's key is that of its
// sync segment).
func StaleSyncSegments(match func(key uint32) bool) []uint32 {
	objs, err := list(Shm)
	if err != nil {
		return nil
	}
	var out []uint32
	for _, o := range objs {
		if o.Attached != 0 || !match(o.Key) {
			continue
		}
		if err := syscall.Kill(o.CreatorPID, 0); err == nil || errors.Is(err, syscall.EPERM) {
			continue // creator alive
		}
		out = append(out, o.Key)
	}
	return out
}
