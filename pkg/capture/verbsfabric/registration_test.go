//go:build linux

package verbsfabric

import (
	"errors"
	"math"
	"strings"
	"testing"
)

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
