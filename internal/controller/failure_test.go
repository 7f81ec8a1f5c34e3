package controller

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// allCauses lists every failCause, in priority order.
var allCauses = []failCause{causeInterrupted, causeReceiverExited, causeReaderFailed, causePodFailed,
	causeReceiverReported, causeStartDeadline, causeReaderExited}

func TestFailReasonsCoverEveryCause(t *testing.T) {
	if len(failReasons) != len(allCauses) {
		t.Fatalf("failReasons has %d rows, want one per cause (%d)", len(failReasons), len(allCauses))
	}
	for i, c := range allCauses {
		if int(c) != i || failReasons[c] == "" {
			t.Errorf("cause %d at %d: reason %q", c, i, failReasons[c])
		}
	}
}

// For each pair of causes that hold at once, the higher-priority one is the verdict,
// whichever order they were found in.
func TestDecideFailurePairs(t *testing.T) {
	for i, hi := range allCauses {
		for _, lo := range allCauses[i+1:] {
			a, b := failure{hi, fmt.Sprintf("cause %d", hi)}, failure{lo, fmt.Sprintf("cause %d", lo)}
			for _, fails := range [][]failure{{a, b}, {b, a}} {
				got, ok := decideFailure(fails)
				if !ok || got != a {
					t.Errorf("%v: verdict %+v (ok %v), want %+v", fails, got, ok, a)
				}
				var v verdict
				applyFailure(&v, fails)
				if !v.failed || v.failReason != failReasons[hi] || v.failMsg != a.msg || v.phase != ringcapv1.PhaseFailed {
					t.Errorf("%v: applied %+v, want reason %s", fails, v, failReasons[hi])
				}
			}
		}
	}
}

func TestDecideFailureNoneAndTies(t *testing.T) {
	if f, ok := decideFailure(nil); ok {
		t.Errorf("no candidates: verdict %+v", f)
	}
	v := verdict{phase: ringcapv1.PhaseScheduled}
	applyFailure(&v, nil)
	if v.failed || v.phase != ringcapv1.PhaseScheduled {
		t.Errorf("no candidates: applied %+v", v)
	}
	// Two of the same cause (two readers): the first found.
	first, second := failure{causeReaderFailed, "reader a"}, failure{causeReaderFailed, "reader b"}
	if f, _ := decideFailure([]failure{first, second, {causeReaderExited, "slot"}}); f != first {
		t.Errorf("tie: verdict %+v, want %+v", f, first)
	}
}

// Through ComputeStatus: a pod that shows several failures at once is failed by the
// highest-priority one.
func TestComputeStatusFailurePriority(t *testing.T) {
	podFailed := func(p *corev1.Pod) { p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted" }
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		recv   *statusdoc.Status
		reason string
		msg    string
	}{
		{"receiver exit over reader, pod and receiver status",
			testPod(chain(running, terminated("reader", 2, "checksum mismatch"), terminated("receiver", 1, summaryFailed), podFailed)),
			recvStatus(statusdoc.StateFailed, 0), ringcapv1.ReasonReceiverFailed, "receiver exited with code 1"},
		{"reader exit over pod and receiver status",
			testPod(chain(running, terminated("reader", 2, "checksum mismatch"), podFailed)),
			recvStatus(statusdoc.StateFailed, 0), ringcapv1.ReasonReaderFailed, "reader reader exited with code 2"},
		{"pod Failed over receiver status",
			testPod(chain(running, podFailed)),
			recvStatus(statusdoc.StateFailed, 0), ringcapv1.ReasonPodFailed, "the capture pod failed: Evicted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := defaulted("c")
			rc.Generation = 3
			st := ComputeStatus(rc, Observed{Pod: tc.pod, Receiver: tc.recv, Now: t0})
			c := apimeta.FindStatusCondition(st.Conditions, ringcapv1.ConditionFailed)
			if st.Phase != ringcapv1.PhaseFailed || c == nil || c.Reason != tc.reason || !strings.HasPrefix(c.Message, tc.msg) {
				t.Errorf("phase %s, Failed condition %+v, want reason %s message %q...", st.Phase, c, tc.reason, tc.msg)
			}
		})
	}
}
