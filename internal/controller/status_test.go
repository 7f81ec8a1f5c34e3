package controller

import (
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

var t0 = metav1.NewTime(time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC))

// testPod is the pod BuildPod makes for defaulted("c") at generation 3, with mod applied.
func testPod(mod func(p *corev1.Pod)) *corev1.Pod {
	return testPodOf(3, nil, mod)
}

// testPodOf is the pod of defaulted("c") at generation gen with spec changed by spec.
func testPodOf(gen int64, spec func(rc *ringcapv1.RingCapture), mod func(p *corev1.Pod)) *corev1.Pod {
	rc := defaulted("c")
	rc.Generation = gen
	if spec != nil {
		spec(rc)
	}
	p := BuildPod(rc, DefaultPodOptions())
	p.UID = "u1"
	p.Status.Phase = corev1.PodPending
	if mod != nil {
		mod(p)
	}
	return p
}

func running(p *corev1.Pod) {
	p.Spec.NodeName = "node-a"
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = "10.88.0.7"
	p.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "receiver", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		{Name: "reader", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
	}
}

func terminated(name string, code int32, msg string) func(p *corev1.Pod) {
	return func(p *corev1.Pod) {
		for i := range p.Status.ContainerStatuses {
			if p.Status.ContainerStatuses[i].Name == name {
				p.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: code, Reason: map[bool]string{true: "Completed", false: "Error"}[code == 0], Message: msg, FinishedAt: t0,
				}}
			}
		}
	}
}

func chain(fs ...func(p *corev1.Pod)) func(p *corev1.Pod) {
	return func(p *corev1.Pod) {
		for _, f := range fs {
			f(p)
		}
	}
}

func recvStatus(state string, bytes int64) *statusdoc.Status {
	rs := &statusdoc.Status{Version: 1, State: state, BytesReceived: uint64(bytes), BlocksFilled: uint64(bytes / 524288), RateBytesPerSecond: 1.25e9}
	rs.Ring.Key, rs.Ring.Ready, rs.Ring.Blocks, rs.Ring.BlockBytes, rs.Ring.Readers = "dada", state != statusdoc.StateStarting, 4, 524288, 1
	rs.Endpoint.Address, rs.Endpoint.Port, rs.Endpoint.Device, rs.Endpoint.IBPort = "10.88.0.7", 18515, "rxe0", 1
	rs.Endpoint.GIDIndex, rs.Endpoint.GID = ptr(1), "::ffff:198.18.0.1"
	rs.MemoryRegistration.Mode, rs.MemoryRegistration.Regions, rs.MemoryRegistration.Reason = "WholeRing", 1, "blocks contiguous"
	rs.StartTime = "2026-11-21T14:59:00Z"
	return rs
}

const summaryOK = `{"version":1,"state":"Finished","ring":{"key":"dada"},"memoryRegistration":{"mode":"PerBlock","regions":4},"bytesReceived":4194304,"blocksFilled":8,"observations":1,"startTime":"2026-11-21T14:59:00Z","completionTime":"2026-11-21T15:00:00Z"}`
const summaryWithObservation = `{"version":1,"state":"Finished","ring":{"key":"dada"},"bytesReceived":4194304,"observations":1,"lastObservation":{"number":0,"bytes":4194304,"seconds":2,"gbps":0.0168,"complete":true},"completionTime":"2026-11-21T15:00:00Z"}`
const summaryFailed = `{"version":1,"state":"Failed","message":"register memory region: cannot allocate memory","bytesReceived":0}`

func TestComputeStatus(t *testing.T) {
	type conds map[string]string // type -> "Status/Reason"
	tests := []struct {
		name       string
		old        ringcapv1.RingCaptureStatus
		pod        *corev1.Pod
		recv       *statusdoc.Status
		recvErr    string
		podProblem string
		phase      ringcapv1.RingCapturePhase
		conds      conds
		bytes      int64
		mrMode     string
		endpoint   string
		completed  bool
		rate       string // checked when set
	}{
		{name: "no pod yet", phase: ringcapv1.PhasePending,
			conds: conds{"Scheduled": "False/PodNotCreated", "Ready": "False/PodNotCreated", "Failed": "False/NotFailed"}},
		{name: "pod name taken by another owner", podProblem: "pod obs/c-capture for RingCapture c: pod name taken by another owner",
			phase: ringcapv1.PhasePending, conds: conds{"Scheduled": "False/PodNameConflict", "Ready": "False/PodNameConflict"}},
		{name: "pod waiting for the scheduler", pod: testPod(nil), phase: ringcapv1.PhasePending,
			conds: conds{"Scheduled": "False/PodPending", "RingReady": "False/NoReceiverStatus"}},
		{name: "unschedulable: no node has the RDMA resource", pod: testPod(func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient ringcap.io/rdma."}}
		}), phase: ringcapv1.PhasePending,
			conds: conds{"Scheduled": "False/Unschedulable", "Ready": "False/Unschedulable"}},
		{name: "scheduled, containers creating", pod: testPod(func(p *corev1.Pod) { p.Spec.NodeName = "node-a" }),
			phase: ringcapv1.PhaseScheduled,
			conds: conds{"Scheduled": "True/Scheduled", "ReceiverReady": "False/NoReceiverStatus", "Ready": "False/ReceiverNotReady"}},
		{name: "image pull failing", pod: testPod(func(p *corev1.Pod) {
			p.Spec.NodeName = "node-a"
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "receiver", State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}}}
		}), phase: ringcapv1.PhaseScheduled, conds: conds{"Ready": "False/ContainerWaiting"}},
		{name: "running, status unreachable", pod: testPod(running), recvErr: "connection refused",
			phase: ringcapv1.PhaseScheduled, endpoint: "10.88.0.7:18515",
			conds: conds{"RingReady": "False/NoReceiverStatus", "ReceiverReady": "False/NoReceiverStatus"}},
		{name: "receiver starting", pod: testPod(running), recv: recvStatus(statusdoc.StateStarting, 0),
			phase: ringcapv1.PhaseScheduled,
			conds: conds{"RingReady": "False/RingNotReady", "ReceiverReady": "False/ReceiverNotReady", "Ready": "False/ReceiverNotReady"}},
		{name: "receiver listening", pod: testPod(running), recv: recvStatus(statusdoc.StateListening, 0),
			phase: ringcapv1.PhaseListening, mrMode: "WholeRing", endpoint: "10.88.0.7:18515",
			conds: conds{"RingReady": "True/RingCreated", "ReceiverReady": "True/Listening", "Receiving": "False/NotReceiving", "Ready": "True/ReceiverReady"}},
		{name: "listening again between observations", pod: testPod(running), recv: recvStatus(statusdoc.StateListening, 1<<20),
			phase: ringcapv1.PhaseListening, bytes: 1 << 20, conds: conds{"ReceiverReady": "True/Listening", "Ready": "True/ReceiverReady"}},
		{name: "receiving", pod: testPod(running), recv: recvStatus(statusdoc.StateReceiving, 1<<30),
			phase: ringcapv1.PhaseReceiving, bytes: 1 << 30, mrMode: "WholeRing",
			conds: conds{"Receiving": "True/Receiving", "Ready": "True/ReceiverReady"}},
		{name: "receiver finished, readers draining", pod: testPod(chain(running, terminated("receiver", 0, summaryOK))),
			phase: ringcapv1.PhaseReceiving, bytes: 4194304, mrMode: "PerBlock", completed: true,
			conds: conds{"RingReady": "False/CaptureEnded", "Receiving": "False/ReceiverFinished", "Ready": "False/ReadersDraining"}},
		{name: "pod succeeded: the rate is the last observation's average", pod: testPod(chain(running, terminated("receiver", 0, summaryWithObservation), terminated("reader", 0, ""),
			func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })),
			phase: ringcapv1.PhaseSucceeded, bytes: 4194304, completed: true, rate: "16.78 Mbit/s",
			conds: conds{"Ready": "False/Succeeded", "Receiving": "False/ReceiverFinished"}},
		{name: "pod succeeded", pod: testPod(chain(running, terminated("receiver", 0, summaryOK), terminated("reader", 0, ""),
			func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })),
			recv:  mustParse(summaryOK),
			phase: ringcapv1.PhaseSucceeded, bytes: 4194304, mrMode: "PerBlock", completed: true,
			conds: conds{"Ready": "False/Succeeded", "Failed": "False/NotFailed", "Receiving": "False/ReceiverFinished"}},
		{name: "receiver exited non-zero with its summary", pod: testPod(chain(running, terminated("receiver", 1, summaryFailed))),
			phase: ringcapv1.PhaseFailed, completed: true,
			conds: conds{"Failed": "True/ReceiverFailed", "Ready": "False/Failed", "Receiving": "False/Failed"}},
		{name: "receiver reports Failed before exiting", pod: testPod(running), recv: recvStatus(statusdoc.StateFailed, 0),
			phase: ringcapv1.PhaseFailed, completed: true,
			conds: conds{"Failed": "True/ReceiverFailed", "ReceiverReady": "False/CaptureFailed", "RingReady": "False/CaptureFailed"}},
		{name: "reader failed while the receiver listens: no condition says the capture is ready", pod: testPod(chain(running, terminated("reader", 2, "checksum mismatch"))),
			recv: recvStatus(statusdoc.StateListening, 10), phase: ringcapv1.PhaseFailed, bytes: 10, completed: true,
			conds: conds{"Failed": "True/ReaderFailed", "Ready": "False/Failed", "ReceiverReady": "False/CaptureFailed",
				"RingReady": "False/CaptureFailed", "Receiving": "False/Failed", "ReadersBehind": "False/ReadersKeepingUp"}},
		{name: "reader failed while data arrives", pod: testPod(chain(running, terminated("reader", 2, "checksum mismatch"))), recv: recvStatus(statusdoc.StateReceiving, 10),
			phase: ringcapv1.PhaseFailed, bytes: 10, completed: true,
			conds: conds{"Failed": "True/ReaderFailed", "Ready": "False/Failed", "Receiving": "False/Failed"}},
		{name: "pod failed (evicted)", pod: testPod(chain(running, func(p *corev1.Pod) {
			p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "node low on memory"
		})), phase: ringcapv1.PhaseFailed, completed: true, conds: conds{"Failed": "True/PodFailed"}},
		{name: "finished capture whose pod was deleted keeps its status",
			old:   ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhaseSucceeded, BytesReceived: 42, Pod: "c-capture"},
			phase: ringcapv1.PhaseSucceeded, bytes: 42},
		{name: "finished capture whose pod is being deleted keeps its status",
			old:   ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhaseFailed, BytesReceived: 7, Pod: "c-capture"},
			pod:   testPod(chain(running, func(p *corev1.Pod) { p.DeletionTimestamp = &t0 })),
			phase: ringcapv1.PhaseFailed, bytes: 7},
		{name: "old pod being deleted for a re-run", pod: testPod(chain(running, func(p *corev1.Pod) { p.DeletionTimestamp = &t0 })),
			phase: ringcapv1.PhasePending, conds: conds{"Scheduled": "False/PodDeleting"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := defaulted("c")
			rc.Generation = 3
			rc.Status = tc.old
			st := ComputeStatus(rc, Observed{Pod: tc.pod, Receiver: tc.recv, ReceiverError: tc.recvErr, PodProblem: tc.podProblem, Now: t0})
			if st.Phase != tc.phase {
				t.Errorf("phase %s, want %s", st.Phase, tc.phase)
			}
			if st.ObservedGeneration != 3 {
				t.Errorf("observedGeneration %d, want 3", st.ObservedGeneration)
			}
			for typ, want := range tc.conds {
				c := checkCondition(t, st.Conditions, typ, want)
				if c == nil {
					continue
				}
				if c.ObservedGeneration != 3 && tc.old.Phase == "" {
					t.Errorf("condition %s observedGeneration %d, want 3", typ, c.ObservedGeneration)
				}
			}
			if st.BytesReceived != tc.bytes {
				t.Errorf("bytesReceived %d, want %d", st.BytesReceived, tc.bytes)
			}
			if tc.rate != "" && st.Rate != tc.rate {
				t.Errorf("rate %q (%d B/s), want %q", st.Rate, st.RateBytesPerSecond, tc.rate)
			}
			if tc.mrMode != "" && (st.MemoryRegistration == nil || st.MemoryRegistration.Mode != tc.mrMode) {
				t.Errorf("memoryRegistration %+v, want mode %s", st.MemoryRegistration, tc.mrMode)
			}
			if tc.endpoint != "" {
				if st.Endpoint == nil {
					t.Errorf("no endpoint, want %s", tc.endpoint)
				} else if got := st.Endpoint.Address + ":" + itoa(st.Endpoint.Port); got != tc.endpoint {
					t.Errorf("endpoint %s, want %s", got, tc.endpoint)
				}
			}
			if (st.CompletionTime != nil) != tc.completed {
				t.Errorf("completionTime %v, want set=%v", st.CompletionTime, tc.completed)
			}
		})
	}
}

// A condition keeps its lastTransitionTime while its status stays the same.
func TestComputeStatusKeepsTransitionTimes(t *testing.T) {
	rc := defaulted("c")
	first := ComputeStatus(rc, Observed{Pod: testPod(running), Receiver: recvStatus(statusdoc.StateListening, 0), Now: t0})
	rc.Status = first
	later := metav1.NewTime(t0.Add(time.Minute))
	second := ComputeStatus(rc, Observed{Pod: testPod(running), Receiver: recvStatus(statusdoc.StateReceiving, 100), Now: later})
	ready := apimeta.FindStatusCondition(second.Conditions, ringcapv1.ConditionReady)
	if !ready.LastTransitionTime.Equal(&t0) {
		t.Errorf("Ready lastTransitionTime %v, want unchanged %v", ready.LastTransitionTime, t0)
	}
	recv := apimeta.FindStatusCondition(second.Conditions, ringcapv1.ConditionReceiving)
	if !recv.LastTransitionTime.Equal(&later) {
		t.Errorf("Receiving lastTransitionTime %v, want %v", recv.LastTransitionTime, later)
	}
	// Same input twice: same status (reconcile is idempotent).
	rc.Status = second
	third := ComputeStatus(rc, Observed{Pod: testPod(running), Receiver: recvStatus(statusdoc.StateReceiving, 100), Now: metav1.NewTime(t0.Add(time.Hour))})
	if !apimeta.IsStatusConditionTrue(third.Conditions, ringcapv1.ConditionReceiving) || third.BytesReceived != 100 {
		t.Fatalf("third status %+v", third)
	}
	for i := range third.Conditions {
		if !third.Conditions[i].LastTransitionTime.Equal(&second.Conditions[i].LastTransitionTime) {
			t.Errorf("condition %s changed its transition time with unchanged input", third.Conditions[i].Type)
		}
	}
}

func TestHumanUnits(t *testing.T) {
	for _, tc := range []struct {
		n          int64
		bytes, bit string
	}{
		{0, "0 B", "0 bit/s"},
		{1023, "1023 B", "8.18 kbit/s"},
		{1536, "1.50 KiB", "12.29 kbit/s"},
		{1 << 30, "1.00 GiB", "8.59 Gbit/s"},
		{1_250_000_000, "1.16 GiB", "10.00 Gbit/s"},
	} {
		if got := HumanBytes(tc.n); got != tc.bytes {
			t.Errorf("HumanBytes(%d) = %q, want %q", tc.n, got, tc.bytes)
		}
		if got := HumanRate(tc.n); got != tc.bit {
			t.Errorf("HumanRate(%d) = %q, want %q", tc.n, got, tc.bit)
		}
	}
}

func TestParseReceiverStatus(t *testing.T) {
	if _, err := statusdoc.Parse([]byte(summaryOK)); err != nil {
		t.Errorf("valid summary: %v", err)
	}
	for _, bad := range []string{`{`, `{"version":2,"state":"Finished"}`, `{"version":1,"state":"Sleeping"}`} {
		if _, err := statusdoc.Parse([]byte(bad)); err == nil {
			t.Errorf("statusdoc.Parse(%s) accepted", bad)
		}
	}
}

func mustParse(s string) *statusdoc.Status {
	st, err := statusdoc.Parse([]byte(s))
	if err != nil {
		panic(err)
	}
	return st
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func TestObservationHeader(t *testing.T) {
	if got := ObservationHeader(nil); got != nil {
		t.Errorf("no keywords: %+v, want nil", got)
	}
	got := ObservationHeader(map[string]string{"SOURCE": "J1939+2134", "UTC_START": "2026-11-25-01:02:03",
		"RINGCAP_UTC_START_SOURCE": "sender", "FREQ": "1400", "BW": "-400", "TELESCOPE": "Effelsberg", "RINGCAP_OBSERVATION": "2"})
	want := ringcapv1.ObservationHeaderStatus{Number: ptr(int64(2)), Source: "J1939+2134", UTCStart: "2026-11-25-01:02:03",
		UTCStartSource: "sender", Telescope: "Effelsberg", Freq: "1400", BW: "-400"}
	if got == nil || !equality.Semantic.DeepEqual(*got, want) {
		t.Errorf("ObservationHeader = %+v, want %+v", got, want)
	}
	// A receiving capture shows the current observation's header in status.
	rs := recvStatus(statusdoc.StateReceiving, 1<<20)
	rs.Header = map[string]string{"SOURCE": "J0437-4715", "RINGCAP_OBSERVATION": "0"}
	st := ComputeStatus(&ringcapv1.RingCapture{}, Observed{Pod: testPod(running), Receiver: rs, Now: metav1.Now()})
	if st.Observation == nil || st.Observation.Source != "J0437-4715" || st.Observation.Number == nil || *st.Observation.Number != 0 {
		t.Errorf("status.observation = %+v", st.Observation)
	}
}

// checkCondition fails t unless condition typ is there with "Status/Reason" want, and
// returns it (nil when it is missing).
func checkCondition(t *testing.T, conds []metav1.Condition, typ, want string) *metav1.Condition {
	t.Helper()
	c := apimeta.FindStatusCondition(conds, typ)
	if c == nil {
		t.Errorf("no %s condition", typ)
		return nil
	}
	if got := string(c.Status) + "/" + c.Reason; got != want {
		t.Errorf("condition %s = %s (%q), want %s", typ, got, c.Message, want)
	}
	return c
}
