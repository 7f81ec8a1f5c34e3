package dra

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/ringcap/ringcap/internal/linkmetrics"
)

// Operations and results, the label values of the claim metrics.
const (
	opPrepare   = "prepare"
	opUnprepare = "unprepare"
	resultOK    = "ok"
	resultError = "error"
)

// metrics are the driver's Prometheus metrics.
type metrics struct {
	claims           *prometheus.CounterVec
	seconds          *prometheus.HistogramVec
	devices          prometheus.Gauge
	lastPublish      prometheus.Gauge
	statusNotWritten prometheus.Counter
	registered       prometheus.Gauge
	errors           *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringcap_dra_claims_total",
			Help: "Claims prepared or unprepared, by result."}, []string{"operation", "result"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ringcap_dra_request_seconds",
			Help:    "Duration of the kubelet's NodePrepareResources and NodeUnprepareResources calls in the driver.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 8)}, []string{"operation"}),
		devices: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ringcap_dra_published_devices",
			Help: "Devices in the node's ResourceSlices as last published."}),
		lastPublish: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ringcap_dra_last_publish_timestamp_seconds",
			Help: "When the driver last handed its ResourceSlices to the publisher (unix seconds)."}),
		statusNotWritten: prometheus.NewCounter(prometheus.CounterOpts{Name: "ringcap_dra_claim_status_write_errors_total",
			Help: "Prepared claims whose status.devices the API server did not take."}),
		registered: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ringcap_dra_registered",
			Help: "1 once the kubelet reported the driver registered, 0 before or after a refusal."}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ringcap_dra_background_errors_total",
			Help: "Errors the kubeletplugin helper reported in the background (publishing slices, gRPC servers)."}, []string{"fatal"}),
	}
	for _, c := range []prometheus.Collector{m.claims, m.seconds, m.devices, m.lastPublish, m.statusNotWritten, m.registered, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}

// claim counts one claim's outcome.
func (m *metrics) claim(op string, err error) {
	r := resultOK
	if err != nil {
		r = resultError
	}
	m.claims.WithLabelValues(op, r).Inc()
}

// since observes the duration of an operation that began at start.
func (m *metrics) since(op string, start time.Time) {
	m.seconds.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

func (m *metrics) published(devices int, at time.Time) {
	m.devices.Set(float64(devices))
	m.lastPublish.Set(float64(at.UnixNano()) / 1e9)
}

// registerLinkCounters exports every port's link counters unless the device plugin runs
// on the node too (Options.OtherConfig set): then the plugin exports them, so that each port's
// counters appear once per node whichever side hands the port out.
func registerLinkCounters(opts Options) error {
	if opts.OtherConfig != nil {
		return nil
	}
	if err := opts.Registry.Register(linkmetrics.NewCollector(opts.Roots, linkmetrics.SysfsPorts(opts.Roots))); err != nil {
		return fmt.Errorf("register link counters: %w", err)
	}
	return nil
}
