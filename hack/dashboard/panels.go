package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// linkCounters are the link counters that mean a lossy link when they rise: retransmissions
// and sequence errors, on rxe (duplicate_request, out_of_seq_request, rcvd_seq_err,
// completer_retry_err) and mlx5 (out_of_sequence, packet_seq_err, rnr_nak_retry_err).
const linkCounters = "duplicate_request|out_of_seq_request|out_of_sequence|packet_seq_err|rcvd_seq_err|completer_retry_err|rnr_nak_retry_err"

func capturePanels() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		graph("Receive rate", "Bytes received into the ring per second, per capture pod.", "Bps").
			WithTarget(query(`sum by (namespace, pod) (rate(ringcap_recv_bytes_total{`+captureSel+`}[1m]))`, "{{namespace}}/{{pod}}")),
		graph("Ring fill", "Blocks in use (filled for the slowest reader, or held open by the receiver) of the ring's blocks: at 100 % the ring is full and the sender held back.", "percentunit").
			Min(0).Max(1).
			WithTarget(query(`(ringcap_ring_filled_blocks{`+captureSel+`} + ringcap_ring_open_blocks{`+captureSel+`}) / ringcap_ring_blocks{`+captureSel+`}`, "{{namespace}}/{{pod}}")),
		stat.NewPanelBuilder().
			Title("Receiver state").
			Description("Each capture's receiver state: Starting, Listening, Receiving, Finished or Failed.").
			Datasource(datasource).Height(8).Span(24).
			TextMode(common.BigValueTextModeName).
			ColorMode(common.BigValueColorModeNone).
			GraphMode(common.BigValueGraphModeNone).
			WithTarget(query(`ringcap_recv_state{`+captureSel+`} == 1`, "{{namespace}}/{{pod}}: {{state}}").Instant()),
	}
}

func observationPanels() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		graph("Observation bytes", "Bytes that landed in the ring for each capture's observation in progress (the last one's between observations).", "bytes").
			Min(0).
			WithTarget(query(`ringcap_observation_bytes{`+captureSel+`}`, "{{namespace}}/{{pod}}")),
		value("Observation", "Number of each capture's observation in progress, or the last one (RINGCAP_OBSERVATION).", "none").
			WithTarget(query(`ringcap_observation_number{`+captureSel+`}`, "{{namespace}}/{{pod}}").Instant()),
		value("UTC_START", "UTC_START of each capture's observation in progress, or the last one, from its header.", "dateTimeAsIso").
			WithTarget(query(`ringcap_observation_start_timestamp_seconds{`+captureSel+`} * 1000`, "{{namespace}}/{{pod}}").Instant()),
	}
}

func readerPanels() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		graph("Reader lag", "Blocks written that each reader slot has not opened yet.", "short").
			Min(0).
			WithTarget(query(`ringcap_ring_reader_lag_blocks{`+captureSel+`}`, "{{namespace}}/{{pod}} slot {{slot}}")),
		graph("Time since a reader advanced", "Seconds since each reader slot last went past a block; a stalled reader's grows.", "s").
			Min(0).
			WithTarget(query(`ringcap_ring_reader_seconds_since_advance{`+captureSel+`}`, "{{namespace}}/{{pod}} slot {{slot}}")),
		graph("Reader slots connected", "Reader slots a reader holds, of the ring's slots; the writer waits for an empty slot.", "short").
			Min(0).
			WithTarget(query(`sum by (namespace, pod) (ringcap_ring_reader_connected{`+captureSel+`})`, "{{namespace}}/{{pod}} connected")).
			WithTarget(query(`count by (namespace, pod) (ringcap_ring_reader_connected{`+captureSel+`})`, "{{namespace}}/{{pod}} slots")),
		graph("Held back", "How long the receiver has had no free ring block for the stream (the readers had not released one); 0 while they keep up.", "s").
			Min(0).
			WithTarget(query(`ringcap_recv_held_back_current_seconds{`+captureSel+`}`, "{{namespace}}/{{pod}}")),
	}
}

// captureLink is a capture's link counters, selected by counter: the device plugin's or DRA
// driver's ringcap_capture_link_increase_total (from the node's namespace, every mode), or
// where only a Host-mode receiver exports them, its own ringcap_recv_link_increase_total.
func captureLink(counters string) string {
	sel := captureSel + `, counter=~"` + counters + `"`
	return `sum by (namespace, pod, counter) (rate(ringcap_capture_link_increase_total{` + sel + `}[5m]))` +
		` or sum by (namespace, pod, counter) (rate(ringcap_recv_link_increase_total{` + sel + `}[5m]))`
}

// capturePackets are the port counters of packets sent and received, on rxe (sent_pkts,
// rcvd_pkts) and in the IB counters every driver has (port_xmit_packets, port_rcv_packets).
const capturePackets = "sent_pkts|rcvd_pkts|port_xmit_packets|port_rcv_packets"

func captureLinkPanels() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		graph("Capture link packets", "Packets per second through the RDMA port each capture holds, counted from the capture's start: the stream on the wire.", "pps").
			Min(0).
			WithTarget(query(captureLink(capturePackets), "{{namespace}}/{{pod}} {{counter}}")),
		graph("Capture link retransmissions and sequence errors", "The same port's counters that rise on a lossy link, per capture: what RC recovers at a cost in rate.", "cps").
			Min(0).
			WithTarget(query(captureLink(linkCounters), "{{namespace}}/{{pod}} {{counter}}")),
	}
}

func errorPanels() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		graph("Completion errors", "Failed work completions in 5 minutes, per status (such as IBV_WC_RETRY_EXC_ERR).", "short").
			Min(0).
			WithTarget(query(`sum by (namespace, pod, status) (increase(ringcap_recv_completion_errors_total{`+captureSel+`}[5m]))`, "{{namespace}}/{{pod}} {{status}}")),
		graph("Incomplete observations", "Observations that ended early in the last hour (the sender stopped, failed or was killed).", "short").
			Min(0).
			WithTarget(query(`sum by (namespace, pod) (increase(ringcap_recv_observations_total{`+captureSel+`, outcome="incomplete"}[1h]))`, "{{namespace}}/{{pod}}")),
	}
}

func nodePanels() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		graph("Link retransmissions and sequence errors", "Per node, device and port: the link counters that rise on a lossy link.", "cps").
			Min(0).
			WithTarget(query(`sum by (instance, device, port, counter) (rate(ringcap_link_counter_total{`+nodeSel+`, counter=~"`+linkCounters+`"}[5m]))`, "{{instance}} {{device}}/{{port}} {{counter}}")),
		stat.NewPanelBuilder().
			Title("Device health").
			Description("1 while the device plugin advertises the device healthy (its port is active).").
			Datasource(datasource).Height(8).Span(12).
			TextMode(common.BigValueTextModeValueAndName).
			ColorMode(common.BigValueColorModeBackground).
			GraphMode(common.BigValueGraphModeNone).
			Mappings(healthMappings()).
			Thresholds(dashboard.NewThresholdsConfigBuilder().
				Mode(dashboard.ThresholdsModeAbsolute).
				Steps([]dashboard.Threshold{{Color: "red"}, {Value: cog.ToPtr(1.0), Color: "green"}})).
			WithTarget(query(`ringcap_plugin_device_healthy{`+nodeSel+`}`, "{{instance}} {{device}}").Instant()),
	}
}

// graph is a half-width time series panel on the dashboard's data source.
func graph(title, description, unit string) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource).
		Unit(unit).
		Height(8).
		Span(12)
}

// value is a quarter-width stat panel of each series' last value, named.
func value(title, description, unit string) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource).Height(8).Span(6).
		Unit(unit).
		TextMode(common.BigValueTextModeValueAndName).
		ColorMode(common.BigValueColorModeNone).
		GraphMode(common.BigValueGraphModeNone)
}

// query is a PromQL query with its legend, on the dashboard's data source.
func query(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().
		Datasource(datasource).
		Expr(expr).
		LegendFormat(legend)
}

// healthMappings show the device health gauge as words.
func healthMappings() []dashboard.ValueMapping {
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
		Type: dashboard.MappingTypeValueToText,
		Options: map[string]dashboard.ValueMappingResult{
			"0": {Text: cog.ToPtr("Unhealthy"), Color: cog.ToPtr("red")},
			"1": {Text: cog.ToPtr("Healthy"), Color: cog.ToPtr("green")},
		},
	}}}
}
