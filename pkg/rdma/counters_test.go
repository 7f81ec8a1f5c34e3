package rdma

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeCounters writes files (name → content) under dev's port 1 directory dir.
func writeCounters(t *testing.T, sys, dev, dir string, files map[string]string) {
	t.Helper()
	base := filepath.Join(sys, "class/infiniband", dev, "ports/1", dir)
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(base, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPortCountersReadsBothDirectoriesByName(t *testing.T) {
	t.Parallel()
	sys := t.TempDir()
	writeCounters(t, sys, "mlx5_0", CounterSourcePort, map[string]string{"port_xmit_data": "1024\n", "port_rcv_errors": "0\n"})
	writeCounters(t, sys, "mlx5_0", CounterSourceHW, map[string]string{
		"out_of_sequence": "7\n", "duplicate_request": "3\n", "lifespan": "10\n", "broken": "N/A\n",
	})
	cs, skipped, err := PortCounters(Roots{Sys: sys}, "mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []Counter{
		{"port_rcv_errors", CounterSourcePort, 0}, {"port_xmit_data", CounterSourcePort, 1024},
		{"duplicate_request", CounterSourceHW, 3}, {"lifespan", CounterSourceHW, 10}, {"out_of_sequence", CounterSourceHW, 7},
	}
	if !reflect.DeepEqual(cs, want) {
		t.Errorf("PortCounters = %+v\nwant %+v", cs, want)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "hw_counters/broken") {
		t.Errorf("skipped = %q, want the unreadable hw_counters/broken named", skipped)
	}
}

// rxe has hardware counters only.
func TestPortCountersWithoutPortCounters(t *testing.T) {
	t.Parallel()
	sys := t.TempDir()
	writeCounters(t, sys, "rxe0", CounterSourceHW, map[string]string{"rcvd_seq_err": "2\n"})
	cs, _, err := PortCounters(Roots{Sys: sys}, "rxe0", 1)
	if err != nil || len(cs) != 1 || cs[0] != (Counter{"rcvd_seq_err", CounterSourceHW, 2}) {
		t.Fatalf("PortCounters = %+v, %v: want rcvd_seq_err=2 alone", cs, err)
	}
}

func TestPortCountersOfAMissingPortIsAnError(t *testing.T) {
	t.Parallel()
	_, _, err := PortCounters(Roots{Sys: t.TempDir()}, "mlx5_9", 2)
	if err == nil || !strings.Contains(err.Error(), "mlx5_9 port 2") {
		t.Fatalf("PortCounters of a missing device = %v, want an error naming it", err)
	}
}
