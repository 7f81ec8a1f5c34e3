package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// statusFetchTimeout bounds one /status request so that an unreachable pod cannot hold
// a reconcile worker.
const statusFetchTimeout = 2 * time.Second

// ReceiverStatus is the JSON the receiver (`ringcap recv`) serves on /status and
// writes as its summary file.
type ReceiverStatus struct {
	Version int    `json:"version"`
	State   string `json:"state"` // Starting | Listening | Receiving | Finished | Failed
	Message string `json:"message"`
	Ring    struct {
		Key        string `json:"key"`
		Ready      bool   `json:"ready"`
		Blocks     int64  `json:"blocks"`
		BlockBytes int64  `json:"blockBytes"`
		Readers    int32  `json:"readers"`
	} `json:"ring"`
	Endpoint struct {
		Address   string `json:"address"`
		Port      int32  `json:"port"`
		Device    string `json:"device"`
		IBPort    int32  `json:"ibPort"`
		GIDIndex  *int32 `json:"gidIndex"`
		GID       string `json:"gid"`
		Netdev    string `json:"netdev"`
		GIDReason string `json:"gidReason"`
	} `json:"endpoint"`
	MemoryRegistration struct {
		Mode    string `json:"mode"`
		Regions int32  `json:"regions"`
		Bytes   int64  `json:"bytes"`
		Reason  string `json:"reason"`
	} `json:"memoryRegistration"`
	QueuePairs         int32   `json:"queuePairs"`
	TransferMode       string  `json:"transferMode"`
	BytesReceived      int64   `json:"bytesReceived"`
	BlocksFilled       int64   `json:"blocksFilled"`
	Observations       int64   `json:"observations"`
	RateBytesPerSecond float64 `json:"rateBytesPerSecond"`
	// HeldBackSeconds is the receiver's total time held back by the readers (waiting
	// for a free block), including a hold still going on.
	HeldBackSeconds float64 `json:"heldBackSeconds"`
	// HeldBackSince is when the current hold began (RFC 3339 with nanoseconds), ""
	// while the receiver is not held back.
	HeldBackSince    string `json:"heldBackSince,omitempty"`
	CompletionErrors int64  `json:"completionErrors"`
	StartTime        string `json:"startTime"`
	CompletionTime   string `json:"completionTime"`
	// Header holds the main keywords of the current (or last) observation's header.
	Header map[string]string `json:"header,omitempty"`
	// LastObservation is the most recent observation that ended.
	LastObservation *struct {
		Bytes   int64   `json:"bytes"`
		Seconds float64 `json:"seconds"`
	} `json:"lastObservation"`
}

// Receiver states of /status.
const (
	ReceiverStarting  = "Starting"
	ReceiverListening = "Listening"
	ReceiverReceiving = "Receiving"
	ReceiverFinished  = "Finished"
	ReceiverFailed    = "Failed"
)

// ParseReceiverStatus decodes the receiver's /status or summary JSON.
func ParseReceiverStatus(b []byte) (*ReceiverStatus, error) {
	var st ReceiverStatus
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("decode receiver status: %w", err)
	}
	if st.Version != 1 {
		return nil, fmt.Errorf("decode receiver status: unsupported version %d (want 1)", st.Version)
	}
	switch st.State {
	case ReceiverStarting, ReceiverListening, ReceiverReceiving, ReceiverFinished, ReceiverFailed:
	default:
		return nil, fmt.Errorf("decode receiver status: unknown state %q", st.State)
	}
	return &st, nil
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
func (f *HTTPStatusFetcher) Fetch(ctx context.Context, pod *corev1.Pod, metricsPort int32) (*ReceiverStatus, error) {
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
	st, err := ParseReceiverStatus(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return st, nil
}

// terminationSummary returns the receiver's summary from its terminated container
// state (the receiver writes it to the termination log), or nil.
func terminationSummary(pod *corev1.Pod) *ReceiverStatus {
	t := receiverTerminated(pod)
	if t == nil || t.Message == "" {
		return nil
	}
	st, err := ParseReceiverStatus([]byte(t.Message))
	if err != nil {
		return nil
	}
	return st
}
