//go:build helm

package charts

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const dashboardFile = "ringcap/files/dashboard.json"

// dashboardMetrics are the metrics the dashboard's panels must query (hack/dashboard).
var dashboardMetrics = []string{
	"ringcap_recv_bytes_total", "ringcap_ring_filled_blocks", "ringcap_ring_blocks",
	"ringcap_ring_reader_lag_blocks", "ringcap_ring_reader_seconds_since_advance",
	"ringcap_ring_reader_connected", "ringcap_recv_held_back_current_seconds",
	"ringcap_recv_completion_errors_total", "ringcap_recv_observations_total",
	"ringcap_recv_state", "ringcap_link_counter_total", "ringcap_plugin_device_healthy",
}

// By default no dashboard: Grafana and its sidecar are the user's to install.
func TestDashboardOffByDefault(t *testing.T) {
	for key := range render(t, "") {
		if strings.HasPrefix(key, "ConfigMap/") && strings.HasSuffix(key, "-dashboard") {
			t.Errorf("default values render %s", key)
		}
	}
}

// On: a ConfigMap with the sidecar's label (and the user's labels and annotations) holding
// files/dashboard.json unchanged as ringcap.json, valid JSON whose panels query the
// metrics of dashboardMetrics.
func TestDashboardConfigMap(t *testing.T) {
	objs := render(t, "", "monitoring.dashboard.enabled=true", "monitoring.dashboard.labels.team=radio",
		"monitoring.dashboard.annotations.grafana_folder=RDMA")
	var cm corev1.ConfigMap
	objs.get(t, "ConfigMap/rc-ringcap-dashboard", &cm)
	if cm.Labels["grafana_dashboard"] != "1" || cm.Labels["team"] != "radio" || cm.Annotations["grafana_folder"] != "RDMA" {
		t.Errorf("dashboard ConfigMap labels %v, annotations %v: want grafana_dashboard=1, team=radio, grafana_folder=RDMA", cm.Labels, cm.Annotations)
	}
	data := cm.Data["ringcap.json"]
	file, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if data != strings.TrimSuffix(string(file), "\n") {
		t.Error("the ConfigMap's ringcap.json differs from files/dashboard.json")
	}
	exprs := strings.Join(dashboardExprs(t, data), "\n")
	for _, m := range dashboardMetrics {
		if !regexp.MustCompile(`\b` + m + `\b`).MatchString(exprs) {
			t.Errorf("no panel of the dashboard queries %s", m)
		}
	}
}

// dashboardExprs are the PromQL expressions of the dashboard's panels; every panel but a
// row has one at least.
func dashboardExprs(t *testing.T, data string) []string {
	t.Helper()
	var d struct {
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		t.Fatalf("the dashboard ConfigMap's ringcap.json is not valid JSON: %v", err)
	}
	var exprs []string
	for _, p := range d.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			exprs = append(exprs, q.Expr)
		}
	}
	return exprs
}
