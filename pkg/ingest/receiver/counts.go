package receiver

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/ingest/stream"
	"github.com/ringcap/ringcap/pkg/ingest/udp"
)

// packetsDoc is the /status packets section from the pipeline's counts and
// the sockets'.
func packetsDoc(proto stream.Protocol, c stream.Counters, u udp.Stats) statusdoc.Packets {
	return statusdoc.Packets{
		Protocol: string(proto), Packets: c.Packets, ReceivedPackets: c.Received, ReceivedBytes: c.PlacedBytes,
		Late: c.Late, OutOfWindow: c.OutOfWindow, Duplicate: c.Duplicate, Malformed: c.Malformed, Invalid: c.Invalid,
		OutOfRange: c.OutOfRange, BeforeStart: c.BeforeStart, Control: c.Control,
		KernelDrops: u.KernelDrops, Truncated: u.Truncated, ZeroFilledBytes: c.Assemble.ZeroFilled, Blocks: c.Assemble.Blocks,
	}
}

var (
	packetsDesc = prometheus.NewDesc("ringcap_packets_total",
		"Packets handed to the packet pipeline, by outcome (received: written into the ring; the others: not written, and why).", []string{"outcome"}, nil)
	kernelDropsDesc = prometheus.NewDesc("ringcap_packet_kernel_drops_total",
		"Packets the kernel dropped before the socket, its receive buffer full (SO_RXQ_OVFL; known at the next packet received).", nil, nil)
	truncatedDesc = prometheus.NewDesc("ringcap_packet_truncated_total",
		"Packets longer than the largest packet accepted, not handed to the pipeline.", nil, nil)
	refusedDesc = prometheus.NewDesc("ringcap_packet_refused_total",
		"Packets from senders outside the allowlist (--allowed-senders), not handed to the pipeline.", nil, nil)
	packetBytesDesc = prometheus.NewDesc("ringcap_packet_bytes_total", "Payload bytes of received packets written into the ring.", nil, nil)
	zeroFilledDesc  = prometheus.NewDesc("ringcap_packet_zero_filled_bytes_total",
		"Bytes of ring blocks handed to the readers that no packet carried (zero in the block).", nil, nil)
)

// collector exports the packet counts, read when scraped.
type collector struct{ counts func() statusdoc.Packets }

// Describe sends the descriptors.
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{packetsDesc, kernelDropsDesc, truncatedDesc, refusedDesc, packetBytesDesc, zeroFilledDesc} {
		ch <- d
	}
}

// Collect sends the counts now.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	p := c.counts()
	for _, o := range []struct {
		name string
		n    uint64
	}{{"received", p.ReceivedPackets}, {"late", p.Late}, {"out_of_window", p.OutOfWindow}, {"duplicate", p.Duplicate},
		{"malformed", p.Malformed}, {"invalid", p.Invalid}, {"out_of_range", p.OutOfRange}, {"before_start", p.BeforeStart},
		{"control", p.Control}} {
		ch <- prometheus.MustNewConstMetric(packetsDesc, prometheus.CounterValue, float64(o.n), o.name)
	}
	for _, m := range []struct {
		d *prometheus.Desc
		n uint64
	}{{kernelDropsDesc, p.KernelDrops}, {truncatedDesc, p.Truncated}, {refusedDesc, p.Refused}, {packetBytesDesc, p.ReceivedBytes}, {zeroFilledDesc, p.ZeroFilledBytes}} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.CounterValue, float64(m.n))
	}
}
