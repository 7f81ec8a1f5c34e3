package controller

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

func TestHTTPStatusFetcher(t *testing.T) {
	body, code := summaryOK, http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/status" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	f := &HTTPStatusFetcher{Client: srv.Client(), URL: func(*corev1.Pod, int32) (string, error) { return srv.URL + "/status", nil }}
	pod := testPod(running)

	st, err := f.Fetch(context.Background(), pod, 9100)
	if err != nil || st.State != statusdoc.StateFinished || st.BytesReceived != 4194304 {
		t.Fatalf("Fetch = %+v, %v", st, err)
	}
	for _, tc := range []struct {
		body string
		code int
		want string
	}{
		{summaryOK, http.StatusInternalServerError, "HTTP 500"},
		{`not json`, http.StatusOK, "decode receiver status"},
		{`{"version":7,"state":"Listening"}`, http.StatusOK, "unsupported version 7"},
	} {
		body, code = tc.body, tc.code
		if _, err := f.Fetch(context.Background(), pod, 9100); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("body %q code %d: error %v, want one mentioning %q", tc.body, tc.code, err, tc.want)
		}
	}
}

func TestPodIPStatusURL(t *testing.T) {
	if u, err := PodIPStatusURL(testPod(running), 9100); err != nil || u != "http://10.88.0.7:9100/status" {
		t.Errorf("PodIPStatusURL = %q, %v", u, err)
	}
	p := testPod(running)
	p.Status.PodIP = "fd00::7"
	if u, _ := PodIPStatusURL(p, 9100); u != "http://[fd00::7]:9100/status" {
		t.Errorf("IPv6 URL %q", u)
	}
	if _, err := PodIPStatusURL(testPod(nil), 9100); err == nil {
		t.Error("a pod without an IP got a URL")
	}
}

type countingFetcher struct {
	calls int
	err   error
}

func (c *countingFetcher) Fetch(context.Context, *corev1.Pod, int32) (*statusdoc.Status, error) {
	c.calls++
	if c.err != nil {
		return nil, c.err
	}
	return recvStatus(statusdoc.StateReceiving, int64(c.calls)), nil
}

// /status is read at most once per poll interval per capture, whatever the number of
// reconciles; a failed read keeps the last good numbers.
func TestReceiverStatusPollsAtMostEveryInterval(t *testing.T) {
	now := time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC)
	f := &countingFetcher{}
	r := &RingCaptureReconciler{Fetcher: f, Now: func() time.Time { return now }}
	rc := defaulted("c")
	pod := testPod(running)
	key := types.NamespacedName{Namespace: "obs", Name: "c"}

	for i := 0; i < 10; i++ { // a burst of reconciles within one interval
		st, _ := r.receiverStatus(context.Background(), key, rc, pod)
		if st == nil || st.BytesReceived != 1 {
			t.Fatalf("reconcile %d: status %+v, want the first read", i, st)
		}
		now = now.Add(statusPollInterval / 20)
	}
	if f.calls != 1 {
		t.Fatalf("%d reads within one interval, want 1", f.calls)
	}
	now = now.Add(statusPollInterval)
	if st, _ := r.receiverStatus(context.Background(), key, rc, pod); st.BytesReceived != 2 || f.calls != 2 {
		t.Fatalf("after the interval: %d reads, bytes %d", f.calls, st.BytesReceived)
	}
	f.err = errors.New("connection refused")
	now = now.Add(statusPollInterval)
	st, msg := r.receiverStatus(context.Background(), key, rc, pod)
	if st == nil || st.BytesReceived != 2 || !strings.Contains(msg, "connection refused") {
		t.Fatalf("failed read: status %+v, message %q; want the last good numbers and the error", st, msg)
	}
	if statusPollInterval+time.Second > 5*time.Second {
		t.Errorf("poll interval %s + the receiver's 1 s refresh exceeds 5 s of staleness", statusPollInterval)
	}
	// A pod that is not running is not polled.
	before := f.calls
	if st, _ := r.receiverStatus(context.Background(), key, rc, testPod(nil)); st != nil || f.calls != before {
		t.Errorf("pending pod polled: %+v", st)
	}
	r.forget(key)
}

// stateFetcher answers /status with its state and counts the reads.
type stateFetcher struct {
	calls int
	state string
}

func (f *stateFetcher) Fetch(context.Context, *corev1.Pod, int32) (*statusdoc.Status, error) {
	f.calls++
	return recvStatus(f.state, 0), nil
}

// While a receiver is starting, its /status is read every startupPollInterval (for
// startupPollFor of its pod), so that its endpoint reaches the status soon after it
// listens; once it listens, every statusPollInterval.
func TestReceiverStatusPolledFastWhileStarting(t *testing.T) {
	now := time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC)
	f := &stateFetcher{state: statusdoc.StateStarting}
	r := &RingCaptureReconciler{Fetcher: f, Now: func() time.Time { return now }}
	rc := defaulted("c")
	pod := testPod(running)
	pod.Status.StartTime = &metav1.Time{Time: now}
	key := types.NamespacedName{Namespace: "obs", Name: "c"}
	read := func() { r.receiverStatus(context.Background(), key, rc, pod) }

	read()
	now = now.Add(startupPollInterval + time.Millisecond)
	read()
	if f.calls != 2 {
		t.Fatalf("a starting receiver was read %d times in %v, want 2", f.calls, startupPollInterval)
	}
	f.state = statusdoc.StateListening
	now = now.Add(startupPollInterval + time.Millisecond)
	read() // says it listens
	now = now.Add(startupPollInterval + time.Millisecond)
	read()
	if f.calls != 3 {
		t.Fatalf("a listening receiver was read again after %v (%d reads), want every %v", startupPollInterval, f.calls, statusPollInterval)
	}
	listening := ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhaseListening}
	if d := r.requeueAfter(rc, pod, listening); d != statusPollInterval {
		t.Errorf("requeue of a listening capture after %v, want %v", d, statusPollInterval)
	}
	scheduled := ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhaseScheduled}
	if d := r.requeueAfter(rc, pod, scheduled); d != startupPollInterval {
		t.Errorf("requeue of a capture whose receiver is starting after %v, want %v", d, startupPollInterval)
	}
	now = now.Add(startupPollFor) // a receiver that never starts is not read fast forever
	if d := r.requeueAfter(rc, pod, scheduled); d != statusPollInterval {
		t.Errorf("requeue %v after the pod started, want %v", startupPollFor, statusPollInterval)
	}
}
