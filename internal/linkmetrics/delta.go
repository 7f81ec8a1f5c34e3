package linkmetrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringcap/ringcap/pkg/rdma"
)

var deltaDesc = prometheus.NewDesc("ringcap_recv_link_increase_total",
	"A counter of the RDMA port this receiver uses, counted from when the capture started (sysfs counters or hw_counters; the device plugin exports the node's totals).",
	[]string{"device", "port", "source", "counter"}, nil)

// Baseline is a port's counters at one moment: the zero its deltas count from.
type Baseline struct {
	port Port
	base map[string]uint64 // by source/name
}

// NewBaseline reads port's counters now.
func NewBaseline(roots rdma.Roots, port Port) (*Baseline, error) {
	cs, _, err := rdma.PortCounters(roots, port.Device, port.Port)
	if err != nil {
		return nil, err
	}
	base := map[string]uint64{}
	for _, c := range cs {
		base[c.Source+"/"+c.Name] = c.Value
	}
	return &Baseline{port: port, base: base}, nil
}

// Len is the number of counters the baseline holds.
func (b *Baseline) Len() int { return len(b.base) }

// Deltas reads the port's counters now and returns each one's growth since the
// baseline as its Value; a counter that went down (a driver reset) counts from zero, one
// that appeared from zero. Settings (hw_counters/lifespan) are left out.
func (b *Baseline) Deltas(roots rdma.Roots) ([]rdma.Counter, error) {
	cs, _, err := rdma.PortCounters(roots, b.port.Device, b.port.Port)
	if err != nil {
		return nil, err
	}
	out := cs[:0]
	for _, c := range cs {
		if notCounters[c.Name] {
			continue
		}
		if base := b.base[c.Source+"/"+c.Name]; base <= c.Value {
			c.Value -= base
		}
		out = append(out, c)
	}
	return out, nil
}

// DeltaCollector exports one port's counters as they grew since it was made: what a
// capture's link did while it ran, beside the node's totals the device plugin exports.
type DeltaCollector struct {
	roots rdma.Roots
	base  *Baseline
}

// NewDeltaCollector reads port's counters now, as the base the deltas count from.
func NewDeltaCollector(roots rdma.Roots, port Port) (*DeltaCollector, error) {
	b, err := NewBaseline(roots, port)
	if err != nil {
		return nil, err
	}
	return &DeltaCollector{roots: roots, base: b}, nil
}

// Len is the number of counters the base holds.
func (d *DeltaCollector) Len() int { return d.base.Len() }

// Describe sends the delta descriptor.
func (d *DeltaCollector) Describe(ch chan<- *prometheus.Desc) { ch <- deltaDesc }

// Collect reads the port's counters now and sends each one's growth since the base.
func (d *DeltaCollector) Collect(ch chan<- prometheus.Metric) {
	cs, err := d.base.Deltas(d.roots)
	if err != nil {
		return
	}
	port := strconv.Itoa(d.base.port.Port)
	for _, c := range cs {
		ch <- prometheus.MustNewConstMetric(deltaDesc, prometheus.CounterValue, float64(c.Value), d.base.port.Device, port, c.Source, c.Name)
	}
}
