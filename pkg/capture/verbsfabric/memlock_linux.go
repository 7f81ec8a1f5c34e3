package verbsfabric

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// currentMemlock reads the memlock limit, what this process has pinned and
// whether it holds CAP_IPC_LOCK.
func currentMemlock() (memlockState, error) {
	var st memlockState
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
		return st, fmt.Errorf("read RLIMIT_MEMLOCK: %w", err)
	}
	st.limit = lim.Cur
	if lim.Cur == unix.RLIM_INFINITY {
		st.limit = math.MaxUint64
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return st, fmt.Errorf("read capabilities: %w", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "CapEff":
			caps, err := strconv.ParseUint(v, 16, 64)
			if err != nil {
				return st, fmt.Errorf("parse CapEff %q: %w", v, err)
			}
			st.ipcLck = caps&(1<<unix.CAP_IPC_LOCK) != 0
		case "VmPin":
			kb, err := strconv.ParseUint(strings.TrimSuffix(v, " kB"), 10, 64)
			if err == nil {
				st.pinned = kb << 10
			}
		}
	}
	return st, nil
}
