package plugin

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

type metrics struct {
	devices            *prometheus.GaugeVec
	units              *prometheus.GaugeVec
	deviceHealthy      *prometheus.GaugeVec
	allocations        *prometheus.CounterVec
	allocationErrors   *prometheus.CounterVec
	registrations      *prometheus.CounterVec
	registrationErrors *prometheus.CounterVec
	listAndWatchSends  *prometheus.CounterVec
	scanSeconds        prometheus.Histogram
	scanErrors         prometheus.Counter
	inventoryErrors    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		devices: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ringcap_plugin_devices",
			Help: "RDMA devices in the pool."}, []string{"resource"}),
		units: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ringcap_plugin_units",
			Help: "Advertised units (device IDs) of the pool, by health."}, []string{"resource", "health"}),
		deviceHealthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ringcap_plugin_device_healthy",
			Help: "1 when the device is advertised healthy, else 0."}, []string{"resource", "device"}),
		allocations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringcap_plugin_allocations_total",
			Help: "Container allocations answered."}, []string{"resource"}),
		allocationErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringcap_plugin_allocation_errors_total",
			Help: "Allocate requests refused."}, []string{"resource"}),
		registrations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringcap_plugin_registrations_total",
			Help: "Successful registrations with the kubelet."}, []string{"resource"}),
		registrationErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringcap_plugin_registration_errors_total",
			Help: "Failed registration attempts."}, []string{"resource"}),
		listAndWatchSends: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringcap_plugin_list_and_watch_sends_total",
			Help: "Device lists sent on ListAndWatch streams."}, []string{"resource"}),
		scanSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ringcap_plugin_scan_seconds",
			Help: "Duration of sysfs scans.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 8)}),
		scanErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "ringcap_plugin_scan_errors_total",
			Help: "Scans that failed (unreadable sysfs, config conflicts)."}),
		inventoryErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "ringcap_plugin_inventory_errors_total",
			Help: "Failed inventory (RDMANode, node labels) updates."}),
	}
	for _, c := range []prometheus.Collector{m.devices, m.units, m.deviceHealthy, m.allocations, m.allocationErrors,
		m.registrations, m.registrationErrors, m.listAndWatchSends, m.scanSeconds, m.scanErrors, m.inventoryErrors} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) observePool(resource string, ps *poolState) {
	m.devices.WithLabelValues(resource).Set(float64(len(ps.devs)))
	healthy, unhealthy := 0, 0
	for _, d := range ps.list {
		if d.Health == pluginapi.Healthy {
			healthy++
		} else {
			unhealthy++
		}
	}
	m.units.WithLabelValues(resource, pluginapi.Healthy).Set(float64(healthy))
	m.units.WithLabelValues(resource, pluginapi.Unhealthy).Set(float64(unhealthy))
	m.deviceHealthy.DeletePartialMatch(prometheus.Labels{"resource": resource})
	for name, d := range ps.devs {
		v := 0.0
		if d.healthy {
			v = 1
		}
		m.deviceHealthy.WithLabelValues(resource, name).Set(v)
	}
}
