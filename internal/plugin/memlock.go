package plugin

import (
	"fmt"
	"math"

	"golang.org/x/sys/unix"

	ringcapv1alpha1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// OwnMemlock reads this process's soft RLIMIT_MEMLOCK: what pinning memory without
// CAP_IPC_LOCK may reach.
func OwnMemlock() (*ringcapv1alpha1.MemlockLimit, error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
		return nil, fmt.Errorf("read RLIMIT_MEMLOCK: %w", err)
	}
	return memlockOf(lim.Cur), nil
}

func memlockOf(cur uint64) *ringcapv1alpha1.MemlockLimit {
	if cur == unix.RLIM_INFINITY || cur > math.MaxInt64 {
		return &ringcapv1alpha1.MemlockLimit{Unlimited: true}
	}
	return &ringcapv1alpha1.MemlockLimit{Bytes: int64(cur)}
}
