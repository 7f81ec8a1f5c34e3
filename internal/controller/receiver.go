package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// statusPollInterval is how often the operator reads a running receiver's /status.
//
// Why polling /status over the pod IP: it needs no API permission at all (the pod gets
// no service account token and the operator no extra RBAC), unlike a receiver that
// patches its RingCapture (a token in every capture pod, write access to
// ringcaptures/status) or an exec/port-forward (pods/exec is close to root on the
// node). The receiver refreshes /status at least every second, so polling every 4 s
// keeps status.bytesReceived at most 5 s stale, while 200 captures cost the operator
// 50 small HTTP GETs a second. The final numbers do not depend on a poll landing in
// time: the receiver writes its summary to the termination log, which reaches the
// operator through the pod's status.
const statusPollInterval = 4 * time.Second

// startupPollInterval is how often the operator reads the /status of a receiver that
// has not said it listens yet, for the first startupPollFor of its pod: the capture's
// endpoint reaches its status within half a second of the receiver listening, not up to
// statusPollInterval later (capture start is measured against a plain pod's start).
const (
	startupPollInterval = 500 * time.Millisecond
	startupPollFor      = 2 * time.Minute
)

// statusFetchTimeout bounds one /status request so that an unreachable pod cannot hold
// a reconcile worker.
const statusFetchTimeout = 2 * time.Second

// apiInt64 converts a count of the status document to the API's int64,
// saturating (a count beyond it cannot happen in practice).
func apiInt64(v uint64) int64 {
	return int64(min(v, math.MaxInt64))
}

// apiInt32 converts a small integer of the status document (a port, a number
// of queue pairs or regions) to the API's int32, saturating.
func apiInt32(v int) int32 {
	return int32(max(min(v, math.MaxInt32), math.MinInt32))
}

// StatusURLFunc returns the URL of a pod's receiver /status.
type StatusURLFunc func(pod *corev1.Pod, metricsPort int32) (string, error)

// PodIPStatusURL is the production StatusURLFunc: http://<pod IP>:<metrics port>/status.
func PodIPStatusURL(pod *corev1.Pod, metricsPort int32) (string, error) {
	if pod.Status.PodIP == "" {
		return "", errors.New("pod has no IP yet")
	}
	return "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(metricsPort))) + "/status", nil
}

// HTTPStatusFetcher reads a receiver's /status over HTTP.
type HTTPStatusFetcher struct {
	Client *http.Client
	// URL resolves where a pod's /status is; PodIPStatusURL in production, a local
	// test server in envtest (where pod IPs are not reachable).
	URL StatusURLFunc
}

// Fetch reads and decodes one /status.
func (f *HTTPStatusFetcher) Fetch(ctx context.Context, pod *corev1.Pod, metricsPort int32) (*statusdoc.Status, error) {
	url, err := f.URL(pod, metricsPort)
	if err != nil {
		return nil, fmt.Errorf("resolve receiver status URL: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, statusFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("build request for %s: %w", url, err)
	}
	resp, err := f.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("get %s: HTTP %d", url, resp.StatusCode)
	}
	st, err := statusdoc.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return st, nil
}

// terminationSummary returns the receiver's summary from its terminated container
// state (the receiver writes it to the termination log), or nil.
func terminationSummary(pod *corev1.Pod) *statusdoc.Status {
	t := receiverTerminated(pod)
	if t == nil || t.Message == "" {
		return nil
	}
	st, err := statusdoc.Parse([]byte(t.Message))
	if err != nil {
		return nil
	}
	return st
}
