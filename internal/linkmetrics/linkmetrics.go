// Package linkmetrics exports the link counters of RDMA ports (rdma.PortCounters: the
// InfiniBand port counters and the driver's hw_counters, on rxe and mlx5 alike) as
// Prometheus metrics, read from sysfs at each scrape: nothing runs between scrapes and
// nothing is on a data path.
package linkmetrics

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringcap/ringcap/pkg/rdma"
)

// Port is a port whose counters are exported.
type Port struct {
	Device string
	Port   int
}

// Ports lists the devices' ports.
func Ports(devs []rdma.Device) []Port {
	var out []Port
	for _, d := range devs {
		for _, p := range d.Ports {
			out = append(out, Port{Device: d.Name, Port: p.Num})
		}
	}
	return out
}

// SysfsPorts lists every port under roots' class/infiniband by reading directory names
// only (no discovery of GID tables): for a collector with no scan of its own to lean on.
func SysfsPorts(roots rdma.Roots) func() []Port {
	return func() []Port {
		devs, _ := os.ReadDir(filepath.Join(roots.Sys, "class/infiniband"))
		var out []Port
		for _, d := range devs {
			ports, _ := os.ReadDir(filepath.Join(roots.Sys, "class/infiniband", d.Name(), "ports"))
			for _, p := range ports {
				if n, err := strconv.Atoi(p.Name()); err == nil {
					out = append(out, Port{Device: d.Name(), Port: n})
				}
			}
		}
		return out
	}
}

// notCounters are hw_counters files that hold a setting, not a count.
var notCounters = map[string]bool{"lifespan": true}

var (
	counterDesc = prometheus.NewDesc("ringcap_link_counter_total",
		"A counter of an RDMA port, as sysfs gives it: source counters (InfiniBand port counters) or hw_counters (the driver's: retransmissions, out-of-sequence, RNR NAKs, duplicate requests, ...).",
		[]string{"device", "port", "source", "counter"}, nil)
	errorsDesc = prometheus.NewDesc("ringcap_link_counter_read_errors",
		"Counter files of the port that could not be read at this scrape, or 1 when the port's counters could not be listed.",
		[]string{"device", "port"}, nil)
)

// Collector reads the counters of the ports its function lists at each scrape.
type Collector struct {
	roots rdma.Roots
	ports func() []Port
}

// NewCollector exports the counters under roots of the ports that ports returns.
func NewCollector(roots rdma.Roots, ports func() []Port) *Collector {
	return &Collector{roots: roots, ports: ports}
}

// Describe sends the two descriptors.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- counterDesc
	ch <- errorsDesc
}

// Collect reads every listed port's counters now.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.ports() {
		port := strconv.Itoa(p.Port)
		cs, skipped, err := rdma.PortCounters(c.roots, p.Device, p.Port)
		if err != nil {
			ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.GaugeValue, 1, p.Device, port)
			continue
		}
		for _, ct := range cs {
			if notCounters[ct.Name] {
				continue
			}
			ch <- prometheus.MustNewConstMetric(counterDesc, prometheus.CounterValue, float64(ct.Value), p.Device, port, ct.Source, ct.Name)
		}
		ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.GaugeValue, float64(len(skipped)), p.Device, port)
	}
}
