package rdma

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/rdma/rdmatest"
)

// BenchmarkDiscover measures Discover on synthetic trees of 1, 8 and 64 Soft-RoCE-like
// devices (one port, a 256-entry GID table with 2 populated entries, like mlx5/rxe).
// Anchor, measured in the same run on the same tree: reading every file discovery
// needs with plain os.ReadFile (x-raw-read = Discover time / that). RSS: a child
// process runs Discover 50 times and reports its peak RSS beside the peak RSS of the
// same child doing nothing (rss-MiB, baseline-rss-MiB).
func BenchmarkDiscover(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			sys, dev, err := rdmatest.Synthetic(dir, n, 256)
			if err != nil {
				b.Fatal(err)
			}
			r := Roots{Sys: sys, Dev: dev}
			files := filesDiscoveryReads(b, r, n)
			raw := timeIt(20, func() {
				for _, f := range files {
					if _, err := os.ReadFile(f); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				devs, _, err := Discover(r)
				if err != nil || len(devs) != n {
					b.Fatalf("%d devices, %v", len(devs), err)
				}
			}
			b.StopTimer()
			per := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(per)/float64(raw), "x-raw-read")
			b.ReportMetric(float64(len(files)), "files")
			rss, base := childRSS(b, r, 50), childRSS(b, r, 0)
			b.ReportMetric(rss, "rss-MiB")
			b.ReportMetric(base, "baseline-rss-MiB")
		})
	}
}

// filesDiscoveryReads lists the files Discover reads in a synthetic tree.
func filesDiscoveryReads(b *testing.B, r Roots, n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		d := filepath.Join(r.Sys, "class/infiniband", fmt.Sprintf("synth%d", i))
		for _, a := range []string{"node_guid", "node_type", "fw_ver", "parent", "ports/1/state", "ports/1/phys_state", "ports/1/link_layer", "ports/1/rate"} {
			out = append(out, filepath.Join(d, a))
		}
		gids, err := filepath.Glob(filepath.Join(d, "ports/1/gids/*"))
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, gids...)
		for _, g := range []string{"0", "1"} {
			out = append(out, filepath.Join(d, "ports/1/gid_attrs/types", g), filepath.Join(d, "ports/1/gid_attrs/ndevs", g))
		}
		out = append(out, filepath.Join(r.Sys, "class/net", fmt.Sprintf("veth%d", i), "mtu"),
			filepath.Join(r.Sys, "class/infiniband_verbs", fmt.Sprintf("uverbs%d", i), "ibdev"))
	}
	return out
}

func timeIt(reps int, f func()) time.Duration {
	start := time.Now()
	for i := 0; i < reps; i++ {
		f()
	}
	return time.Since(start) / time.Duration(reps)
}

// childRSS runs this test binary as a child that calls Discover reps times and
// returns the child's peak RSS in MiB.
func childRSS(b *testing.B, r Roots, reps int) float64 {
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiscoverChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RINGCAP_DISCOVER_CHILD="+r.Sys+"|"+r.Dev+"|"+strconv.Itoa(reps))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("child: %v\n%s", err, out)
	}
	// The child prints its own VmHWM (peak RSS of its address space; rusage's
	// maxrss would include the parent's, inherited across fork/exec).
	_, v, ok := strings.Cut(string(out), "VmHWM:")
	if !ok {
		b.Fatalf("child printed no VmHWM:\n%s", out)
	}
	kib, err := strconv.Atoi(strings.Fields(v)[0])
	if err != nil {
		b.Fatalf("child VmHWM: %v\n%s", err, out)
	}
	return float64(kib) / 1024
}

// TestDiscoverChild is the child of BenchmarkDiscover's RSS measurement; it does
// nothing unless RINGCAP_DISCOVER_CHILD is set.
func TestDiscoverChild(t *testing.T) {
	t.Parallel()
	v := os.Getenv("RINGCAP_DISCOVER_CHILD")
	if v == "" {
		return
	}
	parts := strings.Split(v, "|")
	reps, _ := strconv.Atoi(parts[2])
	for i := 0; i < reps; i++ {
		if _, _, err := Discover(Roots{Sys: parts[0], Dev: parts[1]}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			fmt.Println(l)
		}
	}
}
