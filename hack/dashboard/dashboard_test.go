package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
)

// exported are the metric names ringcap exports: docs/troubleshooting.md's "Every metric"
// tables and the ring watcher's (pkg/capture/ringwatch). TestExportedAreReal checks each.
var exported = []string{
	// receiver
	"ringcap_recv_state", "ringcap_recv_bytes_total", "ringcap_recv_messages_total",
	"ringcap_recv_blocks_filled_total", "ringcap_recv_rate_bytes_per_second",
	"ringcap_recv_held_back_seconds_total", "ringcap_recv_held_back_current_seconds",
	"ringcap_recv_completion_errors_total", "ringcap_recv_observations_total",
	"ringcap_recv_refused_senders_total",
	"ringcap_observation_number", "ringcap_observation_bytes", "ringcap_observation_start_timestamp_seconds",
	// the packet receiver (SPEAD, VDIF)
	"ringcap_packets_total", "ringcap_packet_kernel_drops_total", "ringcap_packet_truncated_total",
	"ringcap_packet_bytes_total", "ringcap_packet_zero_filled_bytes_total",
	// the receiver's ring watcher
	"ringcap_ring_blocks", "ringcap_ring_filled_blocks", "ringcap_ring_open_blocks", "ringcap_ring_written_blocks_total",
	"ringcap_ring_reader_lag_blocks", "ringcap_ring_reader_lag_bytes",
	"ringcap_ring_reader_connected", "ringcap_ring_reader_seconds_since_advance",
	// operator
	"ringcap_operator_reconciles_total", "ringcap_operator_pods_created_total",
	"ringcap_operator_status_updates_total", "ringcap_operator_receiver_status_polls_total",
	"ringcap_operator_phase_transitions_total",
	// device plugin and link counters
	"ringcap_plugin_devices", "ringcap_plugin_units", "ringcap_plugin_device_healthy",
	"ringcap_plugin_allocations_total", "ringcap_plugin_allocation_errors_total",
	"ringcap_plugin_registrations_total", "ringcap_plugin_registration_errors_total",
	"ringcap_plugin_list_and_watch_sends_total", "ringcap_plugin_scan_errors_total",
	"ringcap_plugin_inventory_errors_total", "ringcap_link_counter_total",
	"ringcap_link_counter_read_errors", "ringcap_capture_link_increase_total", "ringcap_recv_link_increase_total",
	// DRA driver
	"ringcap_dra_claims_total", "ringcap_dra_published_devices",
	"ringcap_dra_last_publish_timestamp_seconds", "ringcap_dra_claim_status_write_errors_total",
	"ringcap_dra_registered", "ringcap_dra_background_errors_total",
}

// shown are the metrics the dashboard must query: per capture rate, fill, reader lag and
// slots, held back, errors and state, its link's counters, a packet capture's packets,
// losses and zero-filled bytes; per node the link counters and device health.
var shown = []string{
	"ringcap_recv_bytes_total", "ringcap_ring_filled_blocks", "ringcap_ring_blocks",
	"ringcap_ring_reader_lag_blocks", "ringcap_ring_reader_seconds_since_advance",
	"ringcap_ring_reader_connected", "ringcap_recv_held_back_current_seconds",
	"ringcap_recv_completion_errors_total", "ringcap_recv_observations_total",
	"ringcap_recv_state", "ringcap_link_counter_total", "ringcap_plugin_device_healthy",
	"ringcap_observation_bytes", "ringcap_observation_number", "ringcap_observation_start_timestamp_seconds",
	"ringcap_packets_total", "ringcap_packet_kernel_drops_total", "ringcap_packet_zero_filled_bytes_total",
	"ringcap_capture_link_increase_total", "ringcap_recv_link_increase_total",
}

type panelJSON struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr       string `json:"expr"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
}

type dashboardJSON struct {
	UID        string      `json:"uid"`
	Panels     []panelJSON `json:"panels"`
	Templating struct {
		List []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

func generated(t *testing.T) dashboardJSON {
	t.Helper()
	b, err := render()
	if err != nil {
		t.Fatal(err)
	}
	var d dashboardJSON
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}
	return d
}

// The chart's copy is what the generator writes (make generate; make verify-gen also diffs it).
func TestChartFileUpToDate(t *testing.T) {
	want, err := render()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../" + defaultOut)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the generator's output: run make generate", defaultOut)
	}
}

// The chart's file reads back strictly into the SDK's dashboard model, which validates it.
func TestFileIsAValidDashboard(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	b, err := os.ReadFile("../../" + defaultOut)
	if err != nil {
		t.Fatal(err)
	}
	var d classic
	if err := sdkErr(d.UnmarshalJSONStrict(b)); err != nil {
		t.Fatalf("%s does not read back as a dashboard: %v", defaultOut, err)
	}
	if err := sdkErr(d.Validate()); err != nil {
		t.Errorf("%s is not a valid dashboard: %v", defaultOut, err)
	}
}

// sdkErr is err, or nil for the SDK's empty cog.BuildErrors (a nil slice in a non-nil error).
func sdkErr(err error) error {
	var errs cog.BuildErrors
	if errors.As(err, &errs) && len(errs) == 0 {
		return nil
	}
	return err
}

// Every panel but the rows has a query, and panels and queries use ${datasource}.
func TestPanelsHaveQueries(t *testing.T) {
	d := generated(t)
	if d.UID != uid {
		t.Errorf("uid %q, want %q", d.UID, uid)
	}
	n := 0
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		n++
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || p.Datasource.Type != "prometheus" {
			t.Errorf("panel %q: data source %+v, want prometheus ${datasource}", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" || q.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: query %q on data source %q", p.Title, q.Expr, q.Datasource.UID)
			}
		}
	}
	if n == 0 {
		t.Fatal("the dashboard has no panels")
	}
}

// The data source is a variable of type prometheus; namespace, pod and instance query it.
func TestVariables(t *testing.T) {
	vars := map[string]string{}
	for _, v := range generated(t).Templating.List {
		vars[v.Name] = v.Type
		if v.Name == "datasource" && v.Query != "prometheus" {
			t.Errorf("datasource variable query %v, want prometheus", v.Query)
		}
	}
	want := map[string]string{"datasource": "datasource", "namespace": "query", "pod": "query", "instance": "query"}
	for name, typ := range want {
		if vars[name] != typ {
			t.Errorf("variable %s: type %q, want %q (variables %v)", name, vars[name], typ, vars)
		}
	}
}

// Every metric a query or a variable names is one ringcap exports, and the dashboard shows
// each metric of shown.
func TestQueriesNameExportedMetrics(t *testing.T) {
	d := generated(t)
	used := map[string]bool{}
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			for _, m := range metricNames(q.Expr) {
				used[m] = true
				if !slices.Contains(exported, m) {
					t.Errorf("panel %q queries %s, which ringcap does not export", p.Title, m)
				}
			}
		}
	}
	for _, v := range d.Templating.List {
		q, _ := v.Query.(string)
		if m := labelValuesMetric.FindStringSubmatch(q); m != nil && !slices.Contains(exported, m[1]) {
			t.Errorf("variable %s queries %s, which ringcap does not export", v.Name, m[1])
		}
	}
	for _, m := range shown {
		if !used[m] {
			t.Errorf("no panel queries %s", m)
		}
	}
}

var labelValuesMetric = regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)`)

func TestMetricNames(t *testing.T) {
	got := metricNames(`sum by (namespace, pod) (rate(a_total{x=~"b|c", y="d"}[5m])) / on (pod) group_left b_gauge > bool 0.5`)
	if !slices.Equal(got, []string{"a_total", "b_gauge"}) {
		t.Errorf("metricNames: %v", got)
	}
}

// Each name in exported is in docs/troubleshooting.md's "Every metric" tables or is one of
// the ring watcher's descriptors.
func TestExportedAreReal(t *testing.T) {
	known := map[string]bool{}
	for _, m := range documented(t) {
		known[m] = true
	}
	src, err := os.ReadFile("../../pkg/capture/ringwatch/watcher.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`NewDesc\("(ringcap_\w+)"`).FindAllSubmatch(src, -1) {
		known[string(m[1])] = true
	}
	for _, m := range exported {
		if !known[m] {
			t.Errorf("%s is neither in docs/troubleshooting.md's metric tables nor a ring watcher metric", m)
		}
	}
}

// documented are the metric names of docs/troubleshooting.md's "Every metric" tables.
func documented(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/troubleshooting.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Every metric\n")
	if !ok {
		t.Fatal(`docs/troubleshooting.md has no "## Every metric" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	var names []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(ringcap_\\w+)").FindAllStringSubmatch(sec, -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatal("docs/troubleshooting.md's metric tables name no ringcap metric")
	}
	return names
}

// The panels of the packet row query only the packet receiver's metrics, and no other panel
// does: an RDMA capture leaves exactly that row empty (the e2e suite skips it by its title).
func TestPacketRowHoldsThePacketPanels(t *testing.T) {
	row, n := "", 0
	for _, p := range generated(t).Panels {
		if p.Type == "row" {
			row = p.Title
			continue
		}
		for _, q := range p.Targets {
			for _, m := range metricNames(q.Expr) {
				if packet := strings.HasPrefix(m, "ringcap_packet"); packet != (row == packetRow) {
					t.Errorf("panel %q in row %q queries %s", p.Title, row, m)
				}
			}
		}
		if row == packetRow {
			n++
		}
	}
	if n == 0 {
		t.Errorf("no panel in row %q", packetRow)
	}
}
