package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ringcap/ringcap/internal/testkit"
)

// The plugin's /metrics carries the link counters of every port of the node's devices,
// read from sysfs at each scrape (here one hw counter written into the test tree).
func TestMetricsCarryLinkCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := startHarness(t, nil, func(o *Options) { o.Registry = reg })
	hw := filepath.Join(h.roots.Sys, "class/infiniband/mlx5_0/ports/1/hw_counters")
	if err := os.MkdirAll(hw, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hw, "out_of_sequence"), []byte("42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP ringcap_link_counter_total A counter of an RDMA port, as sysfs gives it: source counters (InfiniBand port counters) or hw_counters (the driver's: retransmissions, out-of-sequence, RNR NAKs, duplicate requests, ...).
# TYPE ringcap_link_counter_total counter
ringcap_link_counter_total{counter="out_of_sequence",device="mlx5_0",port="1",source="hw_counters"} 42
`
	testkit.WaitFor(t, time.Minute, "mlx5_0's out_of_sequence in the plugin's metrics", func() (bool, string) {
		err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ringcap_link_counter_total")
		return err == nil, strings.TrimSpace(strings.ReplaceAll(errString(err), "\n", " "))
	})
}

// With the DRA driver on the node too (plugin.mode both: its config given), the plugin
// still exports the link counters of every port, those of the devices the driver's
// config selects included: the driver exports none then, so each port's series appear
// once per node.
func TestBothModeExportsEveryPortsLinkCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := mustParse(t, "version: v1\npools: [{name: rdma, selector: {devices: [mlx5_0]}}]")
	dra := mustParse(t, "version: v1\npools: [{name: soft, selector: {devices: [mlx5_1]}}]")
	h := startHarness(t, cfg, func(o *Options) { o.Registry, o.OtherConfig = reg, dra })
	for dev, v := range map[string]string{"mlx5_0": "3", "mlx5_1": "5"} {
		hw := filepath.Join(h.roots.Sys, "class/infiniband", dev, "ports/1/hw_counters")
		if err := os.MkdirAll(hw, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(hw, "out_of_sequence"), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP ringcap_link_counter_total A counter of an RDMA port, as sysfs gives it: source counters (InfiniBand port counters) or hw_counters (the driver's: retransmissions, out-of-sequence, RNR NAKs, duplicate requests, ...).
# TYPE ringcap_link_counter_total counter
ringcap_link_counter_total{counter="out_of_sequence",device="mlx5_0",port="1",source="hw_counters"} 3
ringcap_link_counter_total{counter="out_of_sequence",device="mlx5_1",port="1",source="hw_counters"} 5
`
	testkit.WaitFor(t, time.Minute, "both devices' out_of_sequence in the plugin's metrics", func() (bool, string) {
		err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ringcap_link_counter_total")
		return err == nil, strings.TrimSpace(strings.ReplaceAll(errString(err), "\n", " "))
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
