//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ringcap/ringcap/internal/benchstat"
)

// Settings of `make bench-capture-start` (environment): the number of capture/pod pairs and
// the number of the first. A round takes about 90 s on the TCG node, so the default part of 5
// rounds keeps the target, the cluster's bring-up included, within 14 minutes. Issue 38's 10
// rounds are taken in parts, each part's BENCH_START_FIRST_ROUND following the last round of
// the one before (so the parts alternate as one run would, and no round number or capture
// name repeats), and their logs combined with `make bench-capture-start-combine`
// (hack/benchdra).
var (
	benchStartRounds     = envInt("BENCH_START_ROUNDS", 5)
	benchStartFirstRound = envInt("BENCH_START_FIRST_ROUND", 1)
)

// TestBenchCaptureStart is `make bench-capture-start` (RINGCAP_BENCH_START=1; `make e2e`
// leaves it out), issue 38's capture start on the e2e cluster with the chart's device
// plugin: from the RingCapture's creation (what `kubectl apply` does) to its status first
// showing the receiver Listening with its endpoint (address and port), beside a plain pod
// of the same image asking for the same ringcap.io/rdma reaching Running (podStartDevicePlugin,
// bench-dra's anchor), in alternating order, each deleted before the next: ratio
// capture-start/pod-start, the median of the per-round ratios with its distribution-free
// 95 % interval. The capture's status is polled from the host every 100 ms, the pod's
// phase comes from an informer (as in bench-dra).
func TestBenchCaptureStart(t *testing.T) {
	if os.Getenv("RINGCAP_BENCH_START") == "" {
		t.Skip("a benchmark: `make bench-capture-start` runs it (RINGCAP_BENCH_START=1)")
	}
	stepInstall(t)
	waitAllocatable(t)
	ensureNamespace(t, testNamespace)
	pods := startPodPhases(t)
	capt, pod, ratios := alternateRounds(t, benchStartFirstRound-1, benchStartRounds, "capture", "pod",
		func(i int) time.Duration { return captureStart(t, i) },
		func(i int) time.Duration { return podStartDevicePlugin(t, pods, i) })
	r, lo, hi := benchstat.MedianCI(ratios)
	cm, clo, chi := benchstat.MedianCI(capt)
	pm, plo, phi := benchstat.MedianCI(pod)
	report(t, "bench-capture-start: ratio capture-start/pod-start=%.2f [%.2f, %.2f] (apply -> Listening with endpoint: median %.2f s [%.2f, %.2f]; plain pod -> Running: median %.2f s [%.2f, %.2f]; %d rounds)",
		r, lo, hi, cm, clo, chi, pm, plo, phi, len(ratios))
}

// captureStart creates a copy of the sample capture (its own ring key) and returns the
// time from the create call to the first poll that sees it Listening with an endpoint;
// it deletes the capture (and waits until its pod is gone) before returning.
func captureStart(t *testing.T, i int) time.Duration {
	t.Helper()
	name := fmt.Sprintf("bench-start-%d", i)
	start := time.Now()
	newCapture(t, name, fmt.Sprintf("b%03x", i), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	last := "not read"
	for ctx.Err() == nil {
		u, err := getCapture(ctx, name)
		switch {
		case err != nil:
			last = err.Error()
		case listeningWithEndpoint(u):
			d := time.Since(start)
			deleteCaptureAndWait(t, name)
			return d
		case str(u, "status", "phase") == "Failed":
			t.Fatalf("capture %s failed: %s", name, captureSummary(u))
		default:
			last = captureSummary(u)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("capture %s did not listen within 3m: %s", name, last)
	return 0
}

// listeningWithEndpoint: the receiver listens and the status says where to connect.
func listeningWithEndpoint(u *unstructured.Unstructured) bool {
	return str(u, "status", "phase") == "Listening" && str(u, "status", "endpoint", "address") != "" && num(u, "status", "endpoint", "port") > 0
}
