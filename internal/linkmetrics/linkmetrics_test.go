package linkmetrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ringcap/ringcap/pkg/rdma"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Each scrape reads sysfs anew: a counter that moved between scrapes shows its new
// value; settings (lifespan) are left out; an unreadable file and a gone port are counted.
func TestCollectorReadsSysfsAtEachScrape(t *testing.T) {
	t.Parallel()
	sys := t.TempDir()
	hw := filepath.Join(sys, "class/infiniband/rxe0/ports/1/hw_counters")
	write(t, filepath.Join(hw, "duplicate_request"), "3\n")
	write(t, filepath.Join(hw, "lifespan"), "10\n")
	write(t, filepath.Join(hw, "broken"), "N/A\n")
	ports := []Port{{"rxe0", 1}, {"rxe9", 1}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(rdma.Roots{Sys: sys}, func() []Port { return ports }))

	want := func(dup string) string {
		return `
# HELP ringcap_link_counter_read_errors Counter files of the port that could not be read at this scrape, or 1 when the port's counters could not be listed.
# TYPE ringcap_link_counter_read_errors gauge
ringcap_link_counter_read_errors{device="rxe0",port="1"} 1
ringcap_link_counter_read_errors{device="rxe9",port="1"} 1
# HELP ringcap_link_counter_total A counter of an RDMA port, as sysfs gives it: source counters (InfiniBand port counters) or hw_counters (the driver's: retransmissions, out-of-sequence, RNR NAKs, duplicate requests, ...).
# TYPE ringcap_link_counter_total counter
ringcap_link_counter_total{counter="duplicate_request",device="rxe0",port="1",source="hw_counters"} ` + dup + "\n"
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want("3"))); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(hw, "duplicate_request"), "5\n")
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want("5"))); err != nil {
		t.Fatalf("after the counter moved: %v", err)
	}
}

func TestPortsListsEveryPort(t *testing.T) {
	t.Parallel()
	got := Ports([]rdma.Device{{Name: "mlx4_0", Ports: []rdma.Port{{Num: 1}, {Num: 2}}}, {Name: "rxe0", Ports: []rdma.Port{{Num: 1}}}})
	if len(got) != 3 || got[1] != (Port{"mlx4_0", 2}) || got[2] != (Port{"rxe0", 1}) {
		t.Fatalf("Ports = %+v", got)
	}
}

func TestSysfsPortsListsPortDirectories(t *testing.T) {
	t.Parallel()
	sys := t.TempDir()
	write(t, filepath.Join(sys, "class/infiniband/mlx4_0/ports/1/state"), "4: ACTIVE\n")
	write(t, filepath.Join(sys, "class/infiniband/mlx4_0/ports/2/state"), "1: DOWN\n")
	write(t, filepath.Join(sys, "class/infiniband/rxe0/ports/1/state"), "4: ACTIVE\n")
	got := SysfsPorts(rdma.Roots{Sys: sys})()
	want := []Port{{"mlx4_0", 1}, {"mlx4_0", 2}, {"rxe0", 1}}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("SysfsPorts = %+v, want %+v", got, want)
	}
	if got := SysfsPorts(rdma.Roots{Sys: t.TempDir()})(); len(got) != 0 {
		t.Fatalf("SysfsPorts of a node without RDMA = %+v", got)
	}
}

// A capture's deltas count from when it started; a counter that went down counts from zero.
func TestDeltaCollectorCountsFromItsStart(t *testing.T) {
	t.Parallel()
	sys := t.TempDir()
	hw := filepath.Join(sys, "class/infiniband/rxe0/ports/1/hw_counters")
	write(t, filepath.Join(hw, "duplicate_request"), "100\n")
	write(t, filepath.Join(hw, "rcvd_seq_err"), "50\n")
	d, err := NewDeltaCollector(rdma.Roots{Sys: sys}, Port{"rxe0", 1})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(hw, "duplicate_request"), "107\n")
	write(t, filepath.Join(hw, "rcvd_seq_err"), "4\n") // the driver reset it
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(d)
	want := `
# HELP ringcap_recv_link_increase_total A counter of the RDMA port this receiver uses, counted from when the capture started (sysfs counters or hw_counters; the device plugin exports the node's totals).
# TYPE ringcap_recv_link_increase_total counter
ringcap_recv_link_increase_total{counter="duplicate_request",device="rxe0",port="1",source="hw_counters"} 7
ringcap_recv_link_increase_total{counter="rcvd_seq_err",device="rxe0",port="1",source="hw_counters"} 4
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if _, err := NewDeltaCollector(rdma.Roots{Sys: sys}, Port{"rxe9", 1}); err == nil {
		t.Fatal("a port that does not exist: want an error")
	}
}
