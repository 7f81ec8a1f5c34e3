//go:build linux

package verbsfabric

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParseMRMode(t *testing.T) {
	for in, want := range map[string]MRMode{"auto": Auto, "Auto": Auto, "wholering": WholeRing, "WholeRing": WholeRing, "perblock": PerBlock, "per-block": PerBlock} {
		got, err := ParseMRMode(in)
		if err != nil || got != want {
			t.Errorf("ParseMRMode(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseMRMode("whole"); err == nil || !strings.Contains(err.Error(), "auto, wholering or perblock") {
		t.Errorf("ParseMRMode(whole) error = %v", err)
	}
}

func TestChooseMode(t *testing.T) {
	const why = "block size 413184 is not a multiple of the page size"
	for _, c := range []struct {
		mode       MRMode
		contiguous bool
		want       MRMode
		reason     string // or the error's text
		err        error
	}{
		{Auto, true, WholeRing, "blocks contiguous", nil},
		{Auto, false, PerBlock, why, nil},
		{WholeRing, true, WholeRing, "blocks contiguous", nil},
		{WholeRing, false, 0, "mode=WholeRing: ring blocks are not mapped contiguously: " + why + " (use mode Auto or PerBlock)", ErrNotContiguous},
		{PerBlock, true, PerBlock, "per-block registration requested", nil},
		{PerBlock, false, PerBlock, "per-block registration requested", nil},
		{MRMode(7), true, 0, "unknown mode MRMode(7)", nil},
	} {
		got, reason, err := chooseMode(c.mode, c.contiguous, why)
		switch {
		case err != nil && (err.Error() != c.reason || (c.err != nil && !errors.Is(err, c.err))):
			t.Errorf("chooseMode(%v, %v): error %v, want %q", c.mode, c.contiguous, err, c.reason)
		case err == nil && (got != c.want || reason != c.reason):
			t.Errorf("chooseMode(%v, %v) = %v, %q; want %v, %q", c.mode, c.contiguous, got, reason, c.want, c.reason)
		case err == nil && c.want == 0:
			t.Errorf("chooseMode(%v, %v) = %v, want an error", c.mode, c.contiguous, got)
		}
	}
}

func TestMemlockCheck(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name string
		st   memlockState
		need uint64
		ok   bool
	}{
		{"capability", memlockState{limit: 8 * mib, ipcLck: true}, 32 * mib, true},
		{"unlimited", memlockState{limit: math.MaxUint64}, 32 * mib, true},
		{"fits", memlockState{limit: 8 * mib}, 8 * mib, true},
		{"too big", memlockState{limit: 8 * mib}, 32 * mib, false},
		{"already pinned", memlockState{limit: 8 * mib, pinned: 6 * mib}, 4 * mib, false},
	}
	for _, c := range cases {
		err := c.st.check(c.need)
		if (err == nil) != c.ok {
			t.Errorf("%s: check(%d) = %v, want ok=%v", c.name, c.need, err, c.ok)
		}
	}
	err := memlockState{limit: 8 * mib}.check(32 * mib)
	if !errors.Is(err, ErrMemlock) {
		t.Fatalf("error %v is not ErrMemlock", err)
	}
	for _, want := range []string{"33554432", "8388608", "CAP_IPC_LOCK", "grant the IPC_LOCK capability", "raise the memlock limit"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not contain %q", err, want)
		}
	}
}

func TestCurrentMemlock(t *testing.T) {
	st, err := currentMemlock()
	if err != nil {
		t.Fatal(err)
	}
	if st.limit == 0 && !st.ipcLck {
		t.Logf("RLIMIT_MEMLOCK is 0 and no CAP_IPC_LOCK: nothing can be registered here")
	}
}

func TestRegisterNil(t *testing.T) {
	if _, err := Register(nil, nil, Auto, RegisterOptions{}); err == nil {
		t.Fatal("Register(nil, nil) succeeded")
	}
}
