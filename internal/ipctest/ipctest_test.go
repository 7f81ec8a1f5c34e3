//go:build linux

package ipctest

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// Keys in a band of their own (0x7800.., pid-derived), away from the rings of
// pkg/dada (0x3000..), cmd/ringcap and pkg/capture (0x7000..0x77ff).
var base = uint32(0x7800+(os.Getpid()%0x80)*0x10)<<16 | 0x200

const childEnv = "IPCTEST_CREATE_SHM_KEY"

func TestMain(m *testing.M) {
	if v := os.Getenv(childEnv); v != "" { // a child: create a segment and exit
		k, _ := strconv.ParseUint(v, 10, 32)
		if _, err := unix.SysvShmGet(int(k), 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600); err != nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	Isolate()
	if role := os.Getenv(roleEnv); role != "" { // a child of TestIsolatedLeakCheckSeesOnlyItsOwnRings
		os.Exit(runRingRole(role))
	}
	os.Exit(m.Run())
}

func shmAt(t *testing.T, key uint32) Object {
	t.Helper()
	id, err := unix.SysvShmGet(int(key), 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
	if err != nil {
		t.Fatalf("create segment at %#x: %v", key, err)
	}
	t.Cleanup(func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
	return Object{Kind: Shm, Key: key, ID: id}
}

func semAt(t *testing.T, key uint32) Object {
	t.Helper()
	id, _, e := unix.Syscall(unix.SYS_SEMGET, uintptr(key), 1, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
	if e != 0 {
		t.Fatalf("create semaphore set at %#x: %v", key, e)
	}
	t.Cleanup(func() { _, _, _ = unix.Syscall(unix.SYS_SEMCTL, id, 0, unix.IPC_RMID) })
	return Object{Kind: Sem, Key: key, ID: int(id)}
}

func ids(objs []Object) []int {
	var out []int
	for _, o := range objs {
		out = append(out, o.ID)
	}
	slices.Sort(out)
	return out
}

// A ring's leftovers at its own keys, its header ring's and its blocks' are
// found, reported and removed; objects at other keys are not touched.
func TestCheckLeaksFindsAndRemoves(t *testing.T) {
	k := base
	sync := shmAt(t, k)
	conn := semAt(t, k+1*keyIncrement)
	hdrBlock := shmAt(t, k+1+10*keyIncrement)
	dataBlock := shmAt(t, k+12*keyIncrement) // block 2
	other := shmAt(t, k+4)                   // a different ring (k+4: not k or k+1)
	beyond := shmAt(t, k+14*keyIncrement)    // past 4 blocks

	if !InUse(k, 4) || InUse(k+2, 4) {
		t.Fatalf("InUse(k) = %v, InUse(k+2) = %v; want true, false", InUse(k, 4), InUse(k+2, 4))
	}
	leaked, err := Leaked([]uint32{k}, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := ids([]Object{sync, conn, hdrBlock, dataBlock})
	if got := ids(leaked); !slices.Equal(got, want) {
		t.Fatalf("Leaked = %v (ids %v), want ids %v", leaked, got, want)
	}
	if CheckLeaks([]uint32{k}, 4) {
		t.Fatal("CheckLeaks reported no leak")
	}
	if left, _ := Leaked([]uint32{k}, 4); len(left) != 0 {
		t.Fatalf("CheckLeaks left %v", left)
	}
	if !CheckLeaks([]uint32{k}, 4) {
		t.Fatal("CheckLeaks reported a leak after removing it")
	}
	all, err := List()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Object{other, beyond} {
		if !slices.ContainsFunc(all, func(a Object) bool { return a.ID == o.ID && a.Kind == o.Kind }) {
			t.Errorf("%s was removed, but it is not the ring's", o)
		}
	}
}

// Only segments whose creator has exited and that nobody has attached are stale.
func TestStaleSyncSegments(t *testing.T) {
	dead, attached, alive := base+0x10, base+0x12, base+0x14
	for _, k := range []uint32{dead, attached} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+strconv.FormatUint(uint64(k), 10))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child creating a segment at %#x: %v %s", k, err, out)
		}
		t.Cleanup(func() {
			if objs, _ := Leaked([]uint32{k}, 0); len(objs) > 0 {
				_ = Remove(objs[0])
			}
		})
	}
	id, err := unix.SysvShmGet(int(attached), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.SysvShmDetach(mem) }()
	shmAt(t, alive)
	match := func(key uint32) bool { return key == dead || key == attached || key == alive }
	if got := StaleSyncSegments(match); !slices.Equal(got, []uint32{dead}) {
		t.Fatalf("StaleSyncSegments = %#x, want [%#x] (not the attached one, not this process's)", got, dead)
	}
	if got := StaleSyncSegments(func(uint32) bool { return false }); len(got) != 0 {
		t.Fatalf("StaleSyncSegments with no match = %#x", got)
	}
}
