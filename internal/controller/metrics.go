package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The operator's own Prometheus metrics, served with controller-runtime's (reconcile
// durations, work queues, client requests) on the manager's metrics endpoint.
var (
	reconcilesTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ringcap_operator_reconciles_total",
		Help: "RingCapture reconciles started.",
	})
	podsCreatedTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ringcap_operator_pods_created_total",
		Help: "Capture pods created.",
	})
	statusUpdatesTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ringcap_operator_status_updates_total",
		Help: "RingCapture status writes (unchanged statuses are not written).",
	})
	statusPollsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ringcap_operator_receiver_status_polls_total",
		Help: "Reads of receivers' /status, by result (ok, error).",
	}, []string{"result"})
	phaseTransitionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ringcap_operator_phase_transitions_total",
		Help: "RingCapture phase changes, by the phase entered.",
	}, []string{"phase"})
)

func init() {
	metrics.Registry.MustRegister(reconcilesTotal, podsCreatedTotal, statusUpdatesTotal, statusPollsTotal, phaseTransitionsTotal)
}

// ReconcilesTotal returns the number of reconciles started in this process (for the
// benchmark).
func ReconcilesTotal() float64 {
	return counterValue(reconcilesTotal)
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
