//go:build linux && cgo

package ofifabric

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// Sixteen endpoints a side over tcp;ofi_rxm, each having carried a write, stay
// well under what libfabric's defaults take: ofi_rxm posts 4096 receive buffers
// of 16 KiB on each endpoint's shared receive context and grows its receive and
// transmit pools by 1024 such buffers each, about 77 MiB an endpoint a side here
// (2.4 GiB in all), against about 4 MiB with ofi.EnvDefaults (128 receive
// buffers of 1 KiB). Unless the environment sets the variables EnvDefaults sets.
func TestSixteenEndpointsStaySmall(t *testing.T) {
	for _, e := range ofi.EnvDefaults {
		if v, ok := os.LookupEnv(e.Name); ok && v != e.Value {
			t.Skipf("the environment sets %s=%s: this test is of ringcap's default", e.Name, v)
		}
	}
	const qps, limit = 16, 2 * 16 * 40 << 20 // 40 MiB an endpoint a side
	before := rssBytes(t)
	rep, sep, _, regions, _ := pair(t, qps, 4)
	wait, stop := drive(t, rep, qps)
	defer stop()
	for q := range qps {
		if err := sep.PostSend(q, []fabric.SendWR{write(q, uint64(q), uint32(q), 4096, regions)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := wait(); len(got) != qps {
		t.Fatalf("%d of %d writes arrived", len(got), qps)
	}
	grew := rssBytes(t) - before
	t.Logf("resident memory grew by %.1f MiB for %d endpoints a side", float64(grew)/(1<<20), qps)
	if grew > limit {
		t.Errorf("resident memory grew by %.1f MiB for %d endpoints a side, want at most %d MiB", float64(grew)/(1<<20), qps, limit>>20)
	}
}

// rssBytes is the process's resident memory (VmRSS).
func rssBytes(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
