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

	"github.com/ringcap/ringcap/internal/testenv"
	"github.com/ringcap/ringcap/pkg/rdma"
)

// In DRA mode the driver's /metrics carries every port's link counters too, read from
// sysfs at each scrape.
func TestMetricsCarryLinkCounters(t *testing.T) {
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
		Log: testenv.Logger(t), PluginDir: filepath.Join(dir, "p"), RegistryDir: filepath.Join(dir, "r"), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	want := `
# HELP ringcap_link_counter_total A counter of an RDMA port, as sysfs gives it: source counters (InfiniBand port counters) or hw_counters (the driver's: retransmissions, out-of-sequence, RNR NAKs, duplicate requests, ...).
# TYPE ringcap_link_counter_total counter
ringcap_link_counter_total{counter="rcvd_seq_err",device="rxe0",port="1",source="hw_counters"} 9
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ringcap_link_counter_total"); err != nil {
		t.Fatal(err)
	}
}
