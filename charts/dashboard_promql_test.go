//go:build helm

package charts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// dashboardSeries are synthetic series of one RDMA capture pod (namespace obs), one packet
// capture pod and one node's device plugin, for every metric the dashboard queries, one
// sample a minute.
var dashboardSeries = map[string]string{
	`ringcap_recv_state{namespace="obs",pod="c1-capture",state="Receiving"}`:                                                       "1x10",
	`ringcap_recv_state{namespace="obs",pod="c1-capture",state="Failed"}`:                                                          "0x10",
	`ringcap_recv_bytes_total{namespace="obs",pod="c1-capture",qp="0"}`:                                                            "0+6000000000x10",
	`ringcap_ring_blocks{namespace="obs",pod="c1-capture"}`:                                                                        "8x10",
	`ringcap_ring_filled_blocks{namespace="obs",pod="c1-capture"}`:                                                                 "0 1 2 3 4 5 6 6 6 6 6",
	`ringcap_ring_open_blocks{namespace="obs",pod="c1-capture"}`:                                                                   "0 0 0 0 0 1 1 2 2 2 2",
	`ringcap_ring_reader_lag_blocks{namespace="obs",pod="c1-capture",slot="0"}`:                                                    "0+1x10",
	`ringcap_ring_reader_seconds_since_advance{namespace="obs",pod="c1-capture",slot="0"}`:                                         "0+60x10",
	`ringcap_ring_reader_connected{namespace="obs",pod="c1-capture",slot="0"}`:                                                     "1x10",
	`ringcap_ring_reader_connected{namespace="obs",pod="c1-capture",slot="1"}`:                                                     "0x10",
	`ringcap_recv_held_back_current_seconds{namespace="obs",pod="c1-capture"}`:                                                     "0 0 0 0 0 0 0 0 60 120 180",
	`ringcap_recv_completion_errors_total{namespace="obs",pod="c1-capture",qp="0",status="IBV_WC_RETRY_EXC_ERR"}`:                  "0 0 0 0 0 0 0 0 0 1 1",
	`ringcap_recv_observations_total{namespace="obs",pod="c1-capture",outcome="incomplete"}`:                                       "0 0 0 0 0 0 0 0 0 1 1",
	`ringcap_observation_number{namespace="obs",pod="c1-capture"}`:                                                                 "3x10",
	`ringcap_observation_bytes{namespace="obs",pod="c1-capture"}`:                                                                  "0+6000000000x10",
	`ringcap_observation_start_timestamp_seconds{namespace="obs",pod="c1-capture"}`:                                                "1795000000x10",
	`ringcap_packets_total{namespace="obs",pod="c2-capture",outcome="received"}`:                                                   "0+60000x10",
	`ringcap_packets_total{namespace="obs",pod="c2-capture",outcome="late"}`:                                                       "0+30x10",
	`ringcap_packet_kernel_drops_total{namespace="obs",pod="c2-capture"}`:                                                          "0 0 0 0 0 0 0 0 0 120 240",
	`ringcap_packet_zero_filled_bytes_total{namespace="obs",pod="c2-capture"}`:                                                     "0+8192x10",
	`ringcap_link_counter_total{instance="10.0.0.1:9101",device="rxe0",port="1",source="hw_counters",counter="duplicate_request"}`: "0+3x10",
	`ringcap_link_counter_total{instance="10.0.0.1:9101",device="rxe0",port="1",source="counters",counter="port_xmit_data"}`:       "0+100x10",
	`ringcap_plugin_device_healthy{instance="10.0.0.1:9101",resource="ringcap.io/rdma",device="rxe0"}`:                             "1x10",
	// c1's link from the device plugin; c3, a Host-mode capture, from its own receiver only
	`ringcap_capture_link_increase_total{namespace="obs",pod="c1-capture",capture="c1",device="rxe0",port="1",source="hw_counters",counter="rcvd_pkts"}`:         "0+60000x10",
	`ringcap_capture_link_increase_total{namespace="obs",pod="c1-capture",capture="c1",device="rxe0",port="1",source="hw_counters",counter="duplicate_request"}`: "0+3x10",
	`ringcap_recv_link_increase_total{namespace="obs",pod="c3-capture",device="rxe1",port="1",source="hw_counters",counter="rcvd_pkts"}`:                         "0+6000x10",
}

// Every panel's query parses and returns data from a real PromQL engine (promtool's) over
// the synthetic series, with each variable at All.
func TestDashboardQueriesReturnData(t *testing.T) {
	var cm corev1.ConfigMap
	render(t, "", "monitoring.dashboard.enabled=true").get(t, "ConfigMap/rc-ringcap-dashboard", &cm)
	all := strings.NewReplacer("$namespace", ".+", "$pod", ".+", "$instance", ".+")
	type sample struct {
		Labels string  `json:"labels"`
		Value  float64 `json:"value"`
	}
	type exprTest struct {
		Expr       string   `json:"expr"`
		EvalTime   string   `json:"eval_time"`
		ExpSamples []sample `json:"exp_samples"`
	}
	var tests []exprTest
	for _, e := range dashboardExprs(t, cm.Data["ringcap.json"]) {
		// 1 when the query returns a series at least, nothing when it returns none.
		tests = append(tests, exprTest{"count(" + all.Replace(e) + ") > bool 0", "10m", []sample{{"{}", 1}}})
	}
	var input []map[string]string
	for s, v := range dashboardSeries {
		input = append(input, map[string]string{"series": s, "values": v})
	}
	file := map[string]any{
		"evaluation_interval": "1m",
		"tests":               []any{map[string]any{"interval": "1m", "input_series": input, "promql_expr_test": tests}},
	}
	b, err := yaml.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-test.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool(t), "test", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules (every dashboard query over synthetic series): %v\n%s", err, out)
	}
}
