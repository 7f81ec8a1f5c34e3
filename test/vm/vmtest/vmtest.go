//go:build linux

package vmtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The Soft-RoCE setup every VM boot provides (hack/vm/guest-init.sh).
const (
	Device0  = "rxe0"       // on Netdev0
	Device1  = "rxe1"       // on Netdev1
	Netdev0  = "veth0"      // peer of Netdev1
	Netdev1  = "veth1"      // peer of Netdev0
	IP0      = "198.18.0.1" // address of Netdev0
	IP1      = "198.18.0.2" // address of Netdev1
	Port     = 1            // the rxe devices have one port
	NobodyID = 65534        // uid and gid of unprivileged steps
)

// Env names shared with test/vm/run-tests.sh and the guest.
const (
	envVM     = "RINGCAP_VM"             // "1" inside the VM
	envBinDir = "RINGCAP_VM_BIN"         // directory with binaries built for the guest (ringcap)
	envChild  = "RINGCAP_VMTEST_CHILD"   // name of the test a re-executed child runs
	envLock   = "RINGCAP_VMTEST_MEMLOCK" // RLIMIT_MEMLOCK the child sets for itself
)

// InVM reports whether the process runs inside the Soft-RoCE VM.
func InVM() bool { return os.Getenv(envVM) == "1" }

// Require fails t unless it runs inside the Soft-RoCE VM: vm tests run with make test-vm.
func Require(t testing.TB) {
	t.Helper()
	if !InVM() {
		t.Fatal("this test needs the Soft-RoCE VM (RINGCAP_VM=1): run it with make test-vm")
	}
}

// Binary returns the path of a binary test/vm/run-tests.sh built for the guest (e.g.
// "ringcap"), failing t when it is not there.
func Binary(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv(envBinDir)
	if dir == "" {
		t.Fatalf("%s is not set: binaries for the guest are built by make test-vm", envBinDir)
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("binary %s for the guest: %v", name, err)
	}
	return p
}

// Unprivileged says how RunUnprivileged runs its part of the test.
type Unprivileged struct {
	// MemlockBytes is the RLIMIT_MEMLOCK (soft and hard) of the unprivileged process.
	MemlockBytes uint64
	// Env is added to the child's environment (e.g. the key of a ring the parent created).
	Env []string
}

// IsUnprivilegedChild reports whether this process is the child RunUnprivileged started for
// t: setup that must happen once (as root), such as creating a ring, is skipped there.
func IsUnprivilegedChild(t *testing.T) bool { return os.Getenv(envChild) == t.Name() }

// RunUnprivileged runs fn as uid/gid 65534 without capabilities (so without CAP_IPC_LOCK)
// and with RLIMIT_MEMLOCK = u.MemlockBytes. The test binary re-executes itself for the
// current test only (-test.run), and in that child RunUnprivileged calls fn directly, so
// everything the test does before RunUnprivileged must be repeatable or skipped in the child
// (IsUnprivilegedChild); pass what the child needs in u.Env. The child's output is
// logged; its failure fails t. Call it at most once per test, from the test goroutine.
func RunUnprivileged(t *testing.T, u Unprivileged, fn func(t *testing.T)) {
	t.Helper()
	if os.Getenv(envChild) == t.Name() {
		n, err := strconv.ParseUint(os.Getenv(envLock), 10, 64)
		if err != nil {
			t.Fatalf("bad %s: %v", envLock, err)
		}
		if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			t.Fatalf("set RLIMIT_MEMLOCK to %d: %v", n, err)
		}
		if os.Geteuid() != NobodyID {
			t.Fatalf("unprivileged child runs as uid %d, want %d", os.Geteuid(), NobodyID)
		}
		fn(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Fatalf("RunUnprivileged needs root to switch users (uid %d)", os.Geteuid())
	}
	var pattern []string
	for _, part := range strings.Split(t.Name(), "/") {
		pattern = append(pattern, "^"+regexp.QuoteMeta(part)+"$")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("find the test binary: %v", err)
	}
	cmd := exec.Command(exe, "-test.run", strings.Join(pattern, "/"), "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), envChild+"="+t.Name(), fmt.Sprintf("%s=%d", envLock, u.MemlockBytes))
	cmd.Env = append(cmd.Env, u.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: NobodyID, Gid: NobodyID, Groups: []uint32{}}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("unprivileged child (uid %d, memlock %d bytes):\n%s", NobodyID, u.MemlockBytes, out.String())
	if err != nil {
		t.Fatalf("unprivileged part of %s failed: %v", t.Name(), err)
	}
	if !strings.Contains(out.String(), "--- PASS: "+t.Name()) {
		t.Fatalf("unprivileged child did not run %s (no PASS line)", t.Name())
	}
}
