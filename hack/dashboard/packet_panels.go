package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// packetRow is the title of the row of SPEAD and VDIF captures' panels: an RDMA capture
// exports none of their series, so they are empty for it (the e2e suite finds the row by
// this title).
const packetRow = "Packet captures"

// lostOutcomes are the outcomes of ringcap_packets_total that lose a packet's data (the
// status's loss but the kernel's drops, which have their own counter).
const lostOutcomes = "late|out_of_window|duplicate|malformed|invalid|out_of_range"

func packetPanels() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{
		graph("Packets received", "Packets per second a SPEAD or VDIF receiver wrote into the ring, per capture pod.", "pps").
			Min(0).
			WithTarget(query(`sum by (namespace, pod) (rate(ringcap_packets_total{`+captureSel+`, outcome="received"}[1m]))`, "{{namespace}}/{{pod}}")),
		graph("Packets lost by outcome", "Packets per second a packet receiver did not write, by why: late (behind the reorder window), out of window, duplicate, malformed, invalid, out of range.", "pps").
			Min(0).
			Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal)).
			FillOpacity(30).
			WithTarget(query(`sum by (namespace, pod, outcome) (rate(ringcap_packets_total{`+captureSel+`, outcome=~"`+lostOutcomes+`"}[5m]))`, "{{namespace}}/{{pod}} {{outcome}}")),
		graph("Kernel drops", "Packets per second the kernel dropped before a packet receiver's sockets, their receive buffers full.", "pps").
			Min(0).
			WithTarget(query(`sum by (namespace, pod) (rate(ringcap_packet_kernel_drops_total{`+captureSel+`}[5m]))`, "{{namespace}}/{{pod}}")),
		graph("Zero-filled bytes", "Bytes per second of blocks handed to the readers that no packet carried (zero in the ring): every loss, the network's before the node included.", "Bps").
			Min(0).
			WithTarget(query(`sum by (namespace, pod) (rate(ringcap_packet_zero_filled_bytes_total{`+captureSel+`}[5m]))`, "{{namespace}}/{{pod}}")),
	}
}
