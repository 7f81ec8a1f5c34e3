package linkmetrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringcap/ringcap/pkg/rdma"
)

var deltaDesc = prometheus.NewDesc("ringcap_recv_link_increase_total",
	"A counter of the RDMA port this receiver uses, counted from when the capture started (sysfs counters or hw_counters; the device plugin exports the node's totals).",
	[]string{"device", "port", "source", "counter"}, nil)

// DeltaCollector exports one port's counters as they grew since it was made: what a
// capture's link did while it ran, beside the node's totals the device plugin exports.
type DeltaCollector struct {
	roots rdma.Roots
	port  Port
	base  map[string]uint64 // by source/name
}

// NewDeltaCollector reads port's counters now, as the base the deltas count from.
func NewDeltaCollector(roots rdma.Roots, port Port) (*DeltaCollector, error) {
	cs, _, err := rdma.PortCounters(roots, port.Device, port.Port)
	if err != nil {
		return nil, err
	}
	base := map[string]uint64{}
	for _, c := range cs {
		base[c.Source+"/"+c.Name] = c.Value
	}
	return &DeltaCollector{roots: roots, port: port, base: base}, nil
}

// Len is the number of counters the base holds.
func (d *DeltaCollector) Len() int { return len(d.base) }

// Describe sends the delta descriptor.
func (d *DeltaCollector) Describe(ch chan<- *prometheus.Desc) { ch <- deltaDesc }

// Collect reads the port's counters now and sends each one's growth since the base; a
// counter that went down (a driver reset) counts from zero, one that appeared from zero.
func (d *DeltaCollector) Collect(ch chan<- prometheus.Metric) {
	cs, _, err := rdma.PortCounters(d.roots, d.port.Device, d.port.Port)
	if err != nil {
		return
	}
	port := strconv.Itoa(d.port.Port)
	for _, c := range cs {
		if notCounters[c.Name] {
			continue
		}
		v := c.Value
		if b := d.base[c.Source+"/"+c.Name]; b <= v {
			v -= b
		}
		ch <- prometheus.MustNewConstMetric(deltaDesc, prometheus.CounterValue, float64(v), d.port.Device, port, c.Source, c.Name)
	}
}
