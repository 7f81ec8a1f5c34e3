package testkit

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	err := Eventually(time.Minute, nil, func() (bool, string) { return calls.Add(1) == 3, "not yet" })
	if err != nil || calls.Load() != 3 {
		t.Fatalf("Eventually = %v after %d calls, want nil after 3", err, calls.Load())
	}
}

func TestEventuallySaysWhatItLastSawOnTimeout(t *testing.T) {
	t.Parallel()
	err := Eventually(0, nil, func() (bool, string) { return false, "phase Pending" })
	if err == nil || !strings.Contains(err.Error(), "phase Pending") {
		t.Fatalf("Eventually = %v, want a timeout naming the last state", err)
	}
}

func TestEventuallyGivesUpWhenAborted(t *testing.T) {
	t.Parallel()
	gone := errors.New("operator exited")
	err := Eventually(time.Hour, func() error { return gone }, func() (bool, string) { return false, "waiting" })
	if !errors.Is(err, gone) {
		t.Fatalf("Eventually = %v, want it to wrap the abort's error", err)
	}
}

func TestHostOnlySkipsInTheVM(t *testing.T) {
	t.Setenv("RINGCAP_VM", "1")
	skipped := false
	t.Run("vm", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		HostOnly(t)
	})
	if !skipped {
		t.Fatal("HostOnly did not skip with RINGCAP_VM=1")
	}
	t.Setenv("RINGCAP_VM", "")
	t.Run("host", func(t *testing.T) {
		HostOnly(t)
		if t.Skipped() {
			t.Fatal("HostOnly skipped on the host")
		}
	})
}
