package plugin

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ringcap/ringcap/internal/linkmetrics"
)

// A pod's own network namespace shows its RDMA device without counters, so a capture
// cannot read its own link's; the plugin, in the node's namespace, can. It asks the
// kubelet's PodResources API which pods hold its device IDs, takes a baseline of each
// held port's counters when it first sees a pod holding it, and exports the growth since
// as ringcap_capture_link_increase_total, labelled with the pod and its capture.

// DefaultPodResourcesInterval is how often the PodResources API is asked by default.
const DefaultPodResourcesInterval = 5 * time.Second

// allocatedPollDelay: after an Allocate, the API is asked this much later (the kubelet
// records the allocation once Allocate has answered), so the baseline is taken before
// the pod's containers start.
const allocatedPollDelay = time.Second

// podLookupTimeout bounds reading one pod's capture label.
const podLookupTimeout = 5 * time.Second

// captureLinks keeps the per-capture link series current.
type captureLinks struct {
	socket   string
	interval time.Duration
	log      logr.Logger
	pods     kubernetes.Interface // nil: capture labels are ""
	units    func() unitPorts
	coll     *linkmetrics.CaptureCollector
	up       prometheus.Gauge
	errors   prometheus.Counter
	kick     chan struct{}

	captures map[string]string // capture label by pod namespace/name, while the pod holds ports
	failing  bool              // the last List failed (said once in the log)

	mu      sync.Mutex
	renewed map[linkmetrics.Port]bool // ports allocated since their holder was last seen
}

// newCaptureLinks registers the series and the API's health metrics in reg; nil when
// opts.PodResourcesSocket is empty.
func newCaptureLinks(opts Options, reg prometheus.Registerer, units func() unitPorts) (*captureLinks, error) {
	if opts.PodResourcesSocket == "" {
		return nil, nil
	}
	l := &captureLinks{
		socket: opts.PodResourcesSocket, interval: opts.PodResourcesInterval, log: opts.Log.WithName("capture-links"),
		pods: opts.Pods, units: units, coll: linkmetrics.NewCaptureCollector(opts.Roots), kick: make(chan struct{}, 1),
		up: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ringcap_plugin_pod_resources_up",
			Help: "1 when the kubelet's PodResources API answered the last List (which pods hold the plugin's devices, for ringcap_capture_link_increase_total), else 0."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "ringcap_plugin_pod_resources_errors_total",
			Help: "PodResources API List calls that failed (socket missing, refused, timed out)."}),
		captures: map[string]string{}, renewed: map[linkmetrics.Port]bool{},
	}
	if l.interval <= 0 {
		l.interval = DefaultPodResourcesInterval
	}
	for _, c := range []prometheus.Collector{l.coll, l.up, l.errors} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register per-capture link counters: %w", err)
		}
	}
	return l, nil
}

// allocated asks the API again soon: a pod was just given ports. The next holder seen
// on each of them counts from a new baseline with its label read anew, even when it has
// the name of the pod that held the port before (deleted and made again between polls).
func (l *captureLinks) allocated(ports []linkmetrics.Port) {
	if l == nil {
		return
	}
	l.mu.Lock()
	for _, p := range ports {
		l.renewed[p] = true
	}
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// run asks the API now, every interval and soon after an Allocate, until ctx is done.
func (l *captureLinks) run(ctx context.Context) {
	pr, err := dialPodResources(l.socket)
	if err != nil {
		l.log.Error(err, "Per-capture link counters off")
		return
	}
	defer pr.close()
	tick := time.NewTicker(l.interval)
	defer tick.Stop()
	for {
		l.poll(ctx, pr)
		if !l.wait(ctx, tick.C) {
			return
		}
	}
}

// wait waits for the next poll: the tick, or shortly after an Allocate; false once ctx
// is done.
func (l *captureLinks) wait(ctx context.Context, tick <-chan time.Time) bool {
	var soon <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick:
			return true
		case <-soon:
			return true
		case <-l.kick:
			soon = time.After(allocatedPollDelay)
		}
	}
}

// poll lists the pods holding the plugin's devices and sets their holds; a pod no longer
// holding any loses its series. When the API does not answer, the holds stay as they are.
func (l *captureLinks) poll(ctx context.Context, pr *podResources) {
	pods, err := pr.list(ctx)
	if err != nil {
		l.errors.Inc()
		l.up.Set(0)
		if !l.failing && ctx.Err() == nil {
			l.log.Info("The kubelet's PodResources API does not answer: per-capture link counters (ringcap_capture_link_increase_total) are not updated until it does; the plugin works on",
				"socket", l.socket, "error", err.Error())
		}
		l.failing = true
		return
	}
	if l.failing {
		l.log.Info("The kubelet's PodResources API answers again", "socket", l.socket)
	}
	l.failing = false
	l.up.Set(1)
	held := heldPorts(pods, l.units())
	l.renew(held)
	for owner, holds := range held {
		capture := l.capture(ctx, holds[0].Namespace, holds[0].Pod)
		for i := range holds {
			holds[i].Capture = capture
		}
		l.coll.Set(owner, holds)
	}
	for _, owner := range l.coll.Owners() {
		if _, ok := held[owner]; !ok {
			l.coll.Drop(owner)
			delete(l.captures, owner)
		}
	}
}

// renew forgets the baseline and capture label of each pod now holding a port allocated
// since the last poll, so that they are taken anew; a port no pod is seen holding yet
// stays marked.
func (l *captureLinks) renew(held map[string][]linkmetrics.Hold) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for owner, holds := range held {
		for _, h := range holds {
			if l.renewed[h.Port] {
				delete(l.renewed, h.Port)
				l.coll.Drop(owner)
				delete(l.captures, owner)
			}
		}
	}
}

// capture is the pod's LabelCapture, read once while the pod holds ports; "" without
// one, without a client, or while the pod cannot be read (asked again at the next poll).
func (l *captureLinks) capture(ctx context.Context, namespace, name string) string {
	key := namespace + "/" + name
	if c, ok := l.captures[key]; ok {
		return c
	}
	if l.pods == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, podLookupTimeout)
	defer cancel()
	pod, err := l.pods.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		l.captures[key] = ""
	case err != nil:
		l.log.V(1).Info("Cannot read a pod's capture label; asked again at the next poll", "pod", key, "error", err.Error())
	default:
		l.captures[key] = pod.Labels[linkmetrics.LabelCapture]
	}
	return l.captures[key]
}
