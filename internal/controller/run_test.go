package controller

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

func TestRunningConfig(t *testing.T) {
	rc := defaulted("c")
	rc.Generation = 7
	rc.Spec.Ring.Key, rc.Spec.Ring.Blocks, rc.Spec.Ring.Readers = "0xEADA", 16, 2
	rc.Spec.Receiver.QueuePairs, rc.Spec.Receiver.Mode, rc.Spec.Receiver.Port = 8, ringcapv1.TransferModeWrite, 20000
	rc.Spec.Receiver.Stop = ringcapv1.StopSpec{After: ringcapv1.StopObservations, Observations: ptr(int32(2))}
	pod := BuildPod(rc, DefaultPodOptions())
	want := ringcapv1.RunningStatus{Generation: 7, RingKey: "eada", BlockBytes: 524288, Blocks: 16, Readers: 2,
		QueuePairs: 8, Mode: "Write", MessageBytes: 65536, Port: 20000, Stop: "after 2 observations", Network: "Pod", AllowedSenders: "any",
		Transport: "Verbs", TransportSource: transportFromArgs, IPCLock: &ringcapv1.IPCLockStatus{Granted: true}}
	if got := RunningConfig(pod, nil); !reflect.DeepEqual(*got, want) {
		t.Errorf("RunningConfig(pod) = %+v, want %+v", *got, want)
	}
	// The receiver's own report wins over the arguments.
	rs := recvStatus(statusdoc.StateListening, 0)
	rs.QueuePairs, rs.TransferMode = 6, "send"
	got := RunningConfig(pod, rs)
	if got.QueuePairs != 6 || got.Mode != "Send" {
		t.Errorf("RunningConfig with the receiver's report: queuePairs %d mode %s, want 6 Send", got.QueuePairs, got.Mode)
	}
	// The spec does not enter: a later spec change leaves the running config alone.
	rc.Spec.Receiver.QueuePairs = 2
	if got := RunningConfig(pod, nil); got.QueuePairs != 8 {
		t.Errorf("queuePairs %d after a spec change, want the pod's 8", got.QueuePairs)
	}
	if RunningConfig(nil, nil) != nil {
		t.Error("RunningConfig(nil) is not nil")
	}
}

func TestRunningTransport(t *testing.T) {
	reported := func(transport, provider string) *statusdoc.Status {
		rs := recvStatus(statusdoc.StateListening, 0)
		rs.Transport, rs.Provider = transport, provider
		return rs
	}
	for _, tc := range []struct {
		name                      string
		argT, argProvider         string
		rs                        *statusdoc.Status
		transport, provider, from string
	}{
		{"verbs from the arguments", "Verbs", "", nil, "Verbs", "", transportFromArgs},
		{"OFI with a provider from the arguments", "OFI", "efa", nil, "OFI", "efa", transportFromArgs},
		{"OFI without a provider: says who chooses", "OFI", "", nil, "OFI", "",
			transportFromArgs + "; no provider was given: the device plugin's (RINGCAP_OFI_PROVIDER) or libfabric's first"},
		{"a receiver that does not report its transport", "OFI", "efa", recvStatus(statusdoc.StateListening, 0), "OFI", "efa", transportFromArgs},
		{"the receiver's report wins", "OFI", "", reported("ofi", "tcp;ofi_rxm"), "OFI", "tcp;ofi_rxm", transportFromReceiver},
		{"the receiver runs verbs whatever the arguments", "OFI", "efa", reported("verbs", ""), "Verbs", "", transportFromReceiver},
	} {
		tr, p, from := runningTransport(tc.argT, tc.argProvider, tc.rs)
		if tr != tc.transport || p != tc.provider || from != tc.from {
			t.Errorf("%s: runningTransport = %q, %q, %q; want %q, %q, %q", tc.name, tr, p, from, tc.transport, tc.provider, tc.from)
		}
	}
	for in, want := range map[string]string{"": "Verbs", "verbs": "Verbs", "ofi": "OFI", "OFI": "OFI"} {
		if got := transportName(in); got != want {
			t.Errorf("transportName(%q) = %q, want %q", in, got, want)
		}
	}
	// From a pod: the pod's arguments, then the receiver's report.
	rc := defaulted("c")
	rc.Spec.Receiver.Transport, rc.Spec.Receiver.OFIProvider = ringcapv1.TransportOFI, "efa"
	pod := BuildPod(rc, DefaultPodOptions())
	if got := RunningConfig(pod, nil); got.Transport != "OFI" || got.OFIProvider != "efa" || got.TransportSource != transportFromArgs {
		t.Errorf("RunningConfig(OFI pod) = %+v", got)
	}
	if got := RunningConfig(pod, reported("ofi", "efa")); got.Transport != "OFI" || got.TransportSource != transportFromReceiver {
		t.Errorf("RunningConfig(OFI pod, report) = %+v", got)
	}
}

func TestContainerMessage(t *testing.T) {
	long := strings.Repeat("ring read: waiting for ring beef\n", 60) + "ring read: open ring beef: no such ring (key 0xbeef)\n"
	for _, tc := range []struct{ name, in, want string }{
		{"short message kept", "open ring: no such ring\n", "open ring: no such ring"},
		{"long log: its end is kept, from a line start", long, "ring read: open ring beef: no such ring (key 0xbeef)"},
	} {
		got := containerMessage(tc.in)
		if !strings.HasSuffix(got, tc.want) || len(got) > 803 {
			t.Errorf("%s: containerMessage = %q (%d bytes), want it to end with %q within 803 bytes", tc.name, got, len(got), tc.want)
		}
		if strings.Contains(got, "\nring read: waiting") && !strings.HasPrefix(got, "...ring read: waiting") && tc.in == long {
			t.Errorf("%s: cut mid-line: %q", tc.name, got[:40])
		}
	}
}

// Status across runs, holds and pending changes.
func TestComputeStatusRuns(t *testing.T) {
	type conds map[string]string // type -> "Status/Reason"
	heldBack := func(since time.Duration, total float64) *statusdoc.Status {
		rs := recvStatus(statusdoc.StateReceiving, 3<<20)
		rs.HeldBackSince = t0.Add(-since).Format(time.RFC3339Nano)
		rs.HeldBackSeconds = total
		return rs
	}
	qps8 := func(rc *ringcapv1.RingCapture) { rc.Spec.Receiver.QueuePairs = 8 }
	failedStatus := ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhaseFailed, BytesReceived: 10, Pod: "c-capture",
		Running: &ringcapv1.RunningStatus{Generation: 3, QueuePairs: 4},
		Conditions: []metav1.Condition{{Type: ringcapv1.ConditionFailed, Status: metav1.ConditionTrue, Reason: ringcapv1.ReasonReaderFailed,
			Message: "reader verify exited with code 1 (Error): open ring beef: no such ring"}}}
	succeededGen2 := ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhaseSucceeded, BytesReceived: 42, Observations: 1, Pod: "c-capture",
		Running: &ringcapv1.RunningStatus{Generation: 2, QueuePairs: 4}, StartTime: &t0, CompletionTime: &t0}
	tests := []struct {
		name     string
		spec     func(rc *ringcapv1.RingCapture) // applied to the RingCapture (generation 3)
		old      ringcapv1.RingCaptureStatus
		pod      *corev1.Pod
		recv     *statusdoc.Status
		phase    ringcapv1.RingCapturePhase
		conds    conds
		messages map[string]string // condition type -> substring of its message
		check    func(t *testing.T, st ringcapv1.RingCaptureStatus)
	}{
		{name: "held back by the readers right now", pod: testPod(running), recv: heldBack(90*time.Second, 95.7),
			phase: ringcapv1.PhaseReceiving, conds: conds{"ReadersBehind": "True/ReadersBehind", "Ready": "True/ReceiverReady"},
			messages: map[string]string{"ReadersBehind": "ring dada: no free block for the receiver for 1m30s"},
			check: func(t *testing.T, st ringcapv1.RingCaptureStatus) {
				if st.HeldBackSeconds != 95 {
					t.Errorf("heldBackSeconds %d, want 95", st.HeldBackSeconds)
				}
			}},
		{name: "held back before, not now", pod: testPod(running), recv: withoutHold(heldBack(0, 12)),
			phase: ringcapv1.PhaseReceiving, conds: conds{"ReadersBehind": "False/ReadersKeepingUp"},
			check: func(t *testing.T, st ringcapv1.RingCaptureStatus) {
				if st.HeldBackSeconds != 12 {
					t.Errorf("heldBackSeconds %d, want 12", st.HeldBackSeconds)
				}
			}},
		{name: "spec changed while the pod listens: the running config, and the change pending", spec: qps8,
			pod: testPodOf(2, nil, running), recv: withQPs(recvStatus(statusdoc.StateListening, 0), 4),
			phase: ringcapv1.PhaseListening, conds: conds{"ChangePending": "True/SpecChangePending", "Ready": "True/ReceiverReady"},
			messages: map[string]string{"ChangePending": "receiver queuePairs 4 -> 8"},
			check: func(t *testing.T, st ringcapv1.RingCaptureStatus) {
				if st.Running == nil || st.Running.QueuePairs != 4 || st.Running.Generation != 2 {
					t.Errorf("running %+v, want generation 2 with 4 queue pairs", st.Running)
				}
			}},
		{name: "pod of the current generation: nothing pending", pod: testPod(running), recv: recvStatus(statusdoc.StateListening, 0),
			phase: ringcapv1.PhaseListening, conds: conds{"ChangePending": "False/NoChangePending"}},
		{name: "a failed run keeps its verdict while its pod is stopped", old: failedStatus,
			pod: testPod(chain(running, terminated("receiver", 143, ""), terminated("reader", 1, "open ring beef: no such ring"), func(p *corev1.Pod) {
				p.Status.Phase, p.Status.Reason = corev1.PodFailed, "DeadlineExceeded"
			})),
			phase: ringcapv1.PhaseFailed, conds: conds{"Failed": "True/ReaderFailed"},
			messages: map[string]string{"Failed": "open ring beef: no such ring"}},
		{name: "a pod of a new generation starts a new run, the finished one is recorded", old: succeededGen2,
			pod: testPod(running), recv: recvStatus(statusdoc.StateListening, 0),
			phase: ringcapv1.PhaseListening, conds: conds{"Ready": "True/ReceiverReady", "ChangePending": "False/NoChangePending"},
			check: func(t *testing.T, st ringcapv1.RingCaptureStatus) {
				lr := st.LastRun
				if lr == nil || lr.Phase != ringcapv1.PhaseSucceeded || lr.Generation != 2 || lr.BytesReceived != 42 || lr.Observations != 1 || lr.CompletionTime == nil {
					t.Errorf("lastRun %+v, want generation 2 Succeeded with 42 bytes in 1 observation", lr)
				}
				if st.BytesReceived != 0 || st.CompletionTime != nil || st.Running.Generation != 3 {
					t.Errorf("the new run carries the old one's numbers: bytes %d completion %v running %+v", st.BytesReceived, st.CompletionTime, st.Running)
				}
			}},
		{name: "finished run whose pod is replaced: still Succeeded, change pending", spec: qps8, old: succeededGen2,
			pod:   testPodOf(2, nil, chain(running, func(p *corev1.Pod) { p.DeletionTimestamp = &t0 })),
			phase: ringcapv1.PhaseSucceeded, conds: conds{"ChangePending": "True/SpecChangePending"},
			check: func(t *testing.T, st ringcapv1.RingCaptureStatus) {
				if st.Pod != "" || st.LastRun != nil {
					t.Errorf("pod %q lastRun %+v, want no pod and no lastRun yet", st.Pod, st.LastRun)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := defaulted("c")
			rc.Generation = 3
			if tc.spec != nil {
				tc.spec(rc)
			}
			rc.Status = tc.old
			st := ComputeStatus(rc, Observed{Pod: tc.pod, Receiver: tc.recv, Now: t0})
			if st.Phase != tc.phase {
				t.Errorf("phase %s, want %s", st.Phase, tc.phase)
			}
			for typ, want := range tc.conds {
				checkCondition(t, st.Conditions, typ, want)
			}
			for typ, want := range tc.messages {
				if c := apimeta.FindStatusCondition(st.Conditions, typ); c == nil || !strings.Contains(c.Message, want) {
					t.Errorf("condition %s %+v, want its message to contain %q", typ, c, want)
				}
			}
			if tc.check != nil {
				tc.check(t, st)
			}
		})
	}
}

func withoutHold(rs *statusdoc.Status) *statusdoc.Status {
	rs.HeldBackSince = ""
	return rs
}

func withQPs(rs *statusdoc.Status, n int) *statusdoc.Status {
	rs.QueuePairs = n
	return rs
}

func TestPendingChangeTransport(t *testing.T) {
	rc := defaulted("c")
	rc.Generation = 1
	pod := BuildPod(rc, DefaultPodOptions())
	rc.Generation = 2
	rc.Spec.Receiver.Transport, rc.Spec.Receiver.OFIProvider = ringcapv1.TransportOFI, "efa"
	msg := pendingChange(rc, RunningConfig(pod, nil))
	for _, w := range []string{"receiver transport Verbs -> OFI", "receiver ofiProvider  -> efa"} {
		if !strings.Contains(msg, w) {
			t.Errorf("pending change %q does not say %q", msg, w)
		}
	}
}
