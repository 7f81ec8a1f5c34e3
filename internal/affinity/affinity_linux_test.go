//go:build linux

package affinity

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestPinAndRestore pins a locked thread to each CPU the process may use in turn and
// gives it its set back.
func TestPinAndRestore(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := Allowed()
	if err != nil || len(before) == 0 {
		t.Fatalf("Allowed() = %v, %v", before, err)
	}
	for _, cpu := range before {
		restore, err := Pin(cpu)
		if err != nil {
			t.Fatalf("Pin(%d): %v", cpu, err)
		}
		if got, _ := Allowed(); !slices.Equal(got, []int{cpu}) {
			t.Errorf("after Pin(%d) the thread may run on %v", cpu, got)
		}
		restore()
		if got, _ := Allowed(); !slices.Equal(got, before) {
			t.Fatalf("after restore the thread may run on %v, before %v", got, before)
		}
	}
}

// TestPinRefusesMissingCPU refuses CPU numbers out of range and one past the machine's
// possible CPUs (which the kernel refuses).
func TestPinRefusesMissingCPU(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	allowed, _ := Allowed()
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		t.Fatal(err)
	}
	possible, err := ParseList(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	missing := []int{-1, MaxCPU + 1}
	if last := slices.Max(possible); last < MaxCPU {
		missing = append(missing, last+1)
	}
	for _, cpu := range missing {
		if restore, err := Pin(cpu); err == nil {
			restore()
			t.Errorf("Pin(%d) outside %v: no error", cpu, allowed)
		}
	}
	if got, _ := Allowed(); !slices.Equal(got, allowed) {
		t.Errorf("a refused Pin changed the set: %v, before %v", got, allowed)
	}
}

// CheckAllowed passes the CPUs the process may use and names one it may not.
func TestCheckAllowed(t *testing.T) {
	allowed, _ := Allowed()
	if err := CheckAllowed(allowed); err != nil {
		t.Errorf("CheckAllowed(%v): %v", allowed, err)
	}
	if err := CheckAllowed(nil); err != nil {
		t.Errorf("CheckAllowed(nil): %v", err)
	}
	err := CheckAllowed([]int{allowed[0], MaxCPU})
	if err == nil || !strings.Contains(err.Error(), "may not run on CPU 1023") {
		t.Errorf("CheckAllowed with CPU 1023: %v", err)
	}
}
