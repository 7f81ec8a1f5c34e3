//go:build vm

package vmtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSoftRoCEReady checks what every VM boot promises: two ACTIVE rxe devices on the veth pair.
func TestSoftRoCEReady(t *testing.T) {
	Require(t)
	for dev, netdev := range map[string]string{Device0: Netdev0, Device1: Netdev1} {
		base := "/sys/class/infiniband/" + dev + "/ports/1/"
		state, err := os.ReadFile(base + "state")
		if err != nil {
			t.Fatalf("%s: %v", dev, err)
		}
		if !strings.Contains(string(state), "ACTIVE") {
			t.Errorf("%s port 1 state %q, want ACTIVE", dev, strings.TrimSpace(string(state)))
		}
		nd, err := os.ReadFile(base + "gid_attrs/ndevs/1")
		if err != nil {
			t.Fatalf("%s gid 1 netdev: %v", dev, err)
		}
		if got := strings.TrimSpace(string(nd)); got != netdev {
			t.Errorf("%s gid 1 netdev %q, want %q", dev, got, netdev)
		}
	}
}

// TestRunUnprivileged checks the harness's unprivileged mode: uid, capabilities and memlock.
func TestRunUnprivileged(t *testing.T) {
	Require(t)
	RunUnprivileged(t, Unprivileged{MemlockBytes: 8 << 20}, func(t *testing.T) {
		if uid := os.Getuid(); uid != NobodyID {
			t.Errorf("uid %d, want %d", uid, NobodyID)
		}
		var lim unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
			t.Fatal(err)
		}
		if lim.Cur != 8<<20 || lim.Max != 8<<20 {
			t.Errorf("memlock %d/%d, want %d", lim.Cur, lim.Max, 8<<20)
		}
		status, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(status), "CapEff:\t0000000000000000") {
			t.Errorf("unprivileged child has capabilities:\n%s", status)
		}
	})
}

// TestUnprivilegedShellHelper checks the guest's ringcap-vm-unprivileged command.
func TestUnprivilegedShellHelper(t *testing.T) {
	Require(t)
	out, err := exec.Command("ringcap-vm-unprivileged", "8388608", "sh", "-c",
		"id -u; id -g; ulimit -l; grep CapEff /proc/self/status").CombinedOutput()
	if err != nil {
		t.Fatalf("ringcap-vm-unprivileged: %v\n%s", err, out)
	}
	want := "65534\n65534\n8192\nCapEff:\t0000000000000000\n"
	if string(out) != want {
		t.Errorf("output %q, want %q", out, want)
	}
	if err := exec.Command("ringcap-vm-unprivileged", "8388608", "false").Run(); err == nil {
		t.Error("the exit status of the command is lost")
	}
}
