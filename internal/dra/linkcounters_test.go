package dra

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ringcap/ringcap/internal/plugin"
	"github.com/ringcap/ringcap/internal/testenv"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// In DRA mode the driver's /metrics carries every port's link counters too, read from
// sysfs at each scrape.
func TestMetricsCarryLinkCounters(t *testing.T) {
	reg := newDriverWithHWCounter(t, nil)
	want := `
# HELP ringcap_link_counter_total A counter of an RDMA port, as sysfs gives it: source counters (InfiniBand port counters) or hw_counters (the driver's: retransmissions, out-of-sequence, RNR NAKs, duplicate requests, ...).
# TYPE ringcap_link_counter_total counter
ringcap_link_counter_total{counter="rcvd_seq_err",device="rxe0",port="1",source="hw_counters"} 9
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ringcap_link_counter_total"); err != nil {
		t.Fatal(err)
	}
}

// With the device plugin on the node too (plugin.mode both: the device plugin's config
// given), the driver exports no link counters: the device plugin exports every port's,
// so each port's series appear once per node. The driver's own metrics stay.
func TestBothModeLeavesLinkCountersToPlugin(t *testing.T) {
	other, err := plugin.ParseConfig([]byte("version: v1\npools: [{name: hard, selector: {drivers: [mlx5_core]}}]"))
	if err != nil {
		t.Fatal(err)
	}
	reg := newDriverWithHWCounter(t, other)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fams {
		names = append(names, f.GetName())
		if strings.HasPrefix(f.GetName(), "ringcap_link_counter") {
			t.Errorf("driver exports %s in both mode", f.GetName())
		}
	}
	if n, err := testutil.GatherAndCount(reg, "ringcap_dra_registered"); err != nil || n != 1 {
		t.Errorf("ringcap_dra_registered: %d series, %v (families %v)", n, err, names)
	}
}

// newDriverWithHWCounter makes a driver over a sysfs tree with one rxe port whose
// hw_counters hold rcvd_seq_err 9, with other as the device plugin's config; it
// returns the registry the driver's metrics went to.
func newDriverWithHWCounter(t *testing.T, other *plugin.Config) *prometheus.Registry {
	t.Helper()
	sys, dir := t.TempDir(), t.TempDir()
	hw := filepath.Join(sys, "class/infiniband/rxe0/ports/1/hw_counters")
	if err := os.MkdirAll(hw, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hw, "rcvd_seq_err"), []byte("9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	_, err := New(Options{Config: defaultConfigFast(), Roots: rdma.Roots{Sys: sys, Dev: t.TempDir()}, NodeName: node,
		CDIDir: filepath.Join(dir, "cdi"), Client: fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}),
		Log: testenv.Logger(t), PluginDir: filepath.Join(dir, "p"), RegistryDir: filepath.Join(dir, "r"), Registry: reg, OtherConfig: other})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}
