package controller

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// Verdicts the condition tables start from.
var (
	vScheduled = verdict{phase: ringcapv1.PhaseScheduled, scheduled: metav1.ConditionTrue, scheduledReason: ringcapv1.ReasonScheduled, schedMsg: "on node node-a"}
	vPending   = verdict{phase: ringcapv1.PhasePending, scheduled: metav1.ConditionFalse, scheduledReason: ringcapv1.ReasonPodPending, schedMsg: "waiting for the scheduler"}
	vEnded     = verdict{phase: ringcapv1.PhaseScheduled, scheduled: metav1.ConditionTrue, scheduledReason: ringcapv1.ReasonScheduled, ended: true}
	vSucceeded = verdict{phase: ringcapv1.PhaseSucceeded, scheduled: metav1.ConditionTrue, scheduledReason: ringcapv1.ReasonScheduled, ended: true}
	vFailed    = verdict{phase: ringcapv1.PhaseFailed, scheduled: metav1.ConditionTrue, scheduledReason: ringcapv1.ReasonScheduled,
		failed: true, failReason: ringcapv1.ReasonReaderFailed, failMsg: "reader r exited with code 2 (Error)"}
	vWaiting = verdict{phase: ringcapv1.PhaseScheduled, scheduled: metav1.ConditionTrue, scheduledReason: ringcapv1.ReasonScheduled,
		notReadyReason: ringcapv1.ReasonContainerWaiting, notReadyMsg: "receiver container: ErrImagePull: not found"}
)

// condCase is one row of a condition table: the condition computed, its type, and the
// "Status/Reason" and a part of the message it must have.
type condCase struct {
	name      string
	got       metav1.Condition
	typ, want string
	msg       string
}

func checkConds(t *testing.T, cases []condCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.got
			if c.Type != tc.typ {
				t.Errorf("type %s, want %s", c.Type, tc.typ)
			}
			if got := string(c.Status) + "/" + c.Reason; got != tc.want {
				t.Errorf("%s = %s (%q), want %s", tc.typ, got, c.Message, tc.want)
			}
			if !strings.Contains(c.Message, tc.msg) {
				t.Errorf("%s message %q does not contain %q", tc.typ, c.Message, tc.msg)
			}
		})
	}
}

func TestScheduledCondition(t *testing.T) {
	const typ = ringcapv1.ConditionScheduled
	unschedulable := testPod(func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available"}}
	})
	deleting := testPod(chain(running, func(p *corev1.Pod) { p.DeletionTimestamp = &t0 }))
	sched := func(in Observed) metav1.Condition { v, _, _ := judgeRun(in); return scheduledCondition(v) }
	checkConds(t, []condCase{
		{"no pod", sched(Observed{}), typ, "False/PodNotCreated", "does not exist yet"},
		{"pod name taken", sched(Observed{PodProblem: "pod name taken by another owner"}), typ, "False/PodNameConflict", "taken by another owner"},
		{"old pod deleting", sched(Observed{Pod: deleting}), typ, "False/PodDeleting", "being deleted"},
		{"waiting for the scheduler", sched(Observed{Pod: testPod(nil)}), typ, "False/PodPending", "scheduler"},
		{"unschedulable", sched(Observed{Pod: unschedulable}), typ, "False/Unschedulable", "0/3 nodes are available"},
		{"on a node", sched(Observed{Pod: testPod(running)}), typ, "True/Scheduled", "on node node-a"},
	})
}

func TestRingReadyCondition(t *testing.T) {
	const typ = ringcapv1.ConditionRingReady
	listening := recvStatus(statusdoc.StateListening, 0)
	checkConds(t, []condCase{
		{"ring created", ringReadyCondition(vScheduled, listening, Observed{Pod: testPod(running)}), typ, "True/RingCreated", "ring dada: 4 blocks of 524288 bytes, 1 readers"},
		{"receiver starting", ringReadyCondition(vScheduled, recvStatus(statusdoc.StateStarting, 0), Observed{}), typ, "False/RingNotReady", "receiver is Starting"},
		{"no status yet", ringReadyCondition(vScheduled, nil, Observed{}), typ, "False/NoReceiverStatus", "has not reported yet"},
		{"status unreachable", ringReadyCondition(vScheduled, nil, Observed{ReceiverError: "connection refused"}), typ, "False/NoReceiverStatus", "connection refused"},
		{"receiver exited", ringReadyCondition(vEnded, listening, Observed{}), typ, "False/CaptureEnded", "ring went with it"},
		{"capture failed", ringReadyCondition(vFailed, listening, Observed{}), typ, "False/CaptureFailed", "ring released"},
	})
}

func TestReceiverReadyCondition(t *testing.T) {
	const typ = ringcapv1.ConditionReceiverReady
	ep := &ringcapv1.EndpointStatus{Address: "10.88.0.7", Port: 18515, Device: "rxe0", IBPort: 1}
	checkConds(t, []condCase{
		{"listening", receiverReadyCondition(vScheduled, recvStatus(statusdoc.StateListening, 0), Observed{}, ep, true), typ, "True/Listening", "senders connect to 10.88.0.7:18515 (device rxe0 port 1)"},
		{"receiving", receiverReadyCondition(vScheduled, recvStatus(statusdoc.StateReceiving, 1), Observed{}, ep, true), typ, "True/Receiving", "10.88.0.7:18515"},
		{"receiving, latest read failed", receiverReadyCondition(vScheduled, recvStatus(statusdoc.StateReceiving, 1), Observed{ReceiverError: "context deadline exceeded"}, ep, true), typ, "True/Receiving",
			"10.88.0.7:18515 (device rxe0 port 1); the numbers are from the last good status read, the latest failed: context deadline exceeded"},
		{"listening, no endpoint known", receiverReadyCondition(vScheduled, recvStatus(statusdoc.StateListening, 0), Observed{}, nil, true), typ, "True/Listening", "listening"},
		{"starting", receiverReadyCondition(vScheduled, &statusdoc.Status{State: statusdoc.StateStarting, Message: "opening rxe0"}, Observed{}, ep, false), typ, "False/ReceiverNotReady", "receiver is Starting: opening rxe0"},
		{"no status", receiverReadyCondition(vScheduled, nil, Observed{ReceiverError: "timeout"}, ep, false), typ, "False/NoReceiverStatus", "timeout"},
		{"receiver exited", receiverReadyCondition(vEnded, recvStatus(statusdoc.StateFinished, 1), Observed{}, ep, false), typ, "False/CaptureEnded", "exited"},
		{"capture failed", receiverReadyCondition(vFailed, recvStatus(statusdoc.StateListening, 1), Observed{}, ep, false), typ, "False/CaptureFailed", "pod is stopped"},
	})
}

func TestReceivingCondition(t *testing.T) {
	const typ = ringcapv1.ConditionReceiving
	st := ringcapv1.RingCaptureStatus{BytesReceived: 3 << 30, RateBytesPerSecond: 1.25e9}
	checkConds(t, []condCase{
		{"data arriving", receivingCondition(vScheduled, recvStatus(statusdoc.StateReceiving, 1), st), typ, "True/Receiving", "receiving at 10.00 Gbit/s"},
		{"listening", receivingCondition(vScheduled, recvStatus(statusdoc.StateListening, 0), st), typ, "False/NotReceiving", "no data is arriving"},
		{"no status", receivingCondition(vScheduled, nil, st), typ, "False/NotReceiving", "no data"},
		{"stop condition met", receivingCondition(vScheduled, recvStatus(statusdoc.StateFinished, 1), st), typ, "False/ReceiverFinished", "stop condition"},
		{"receiver exited", receivingCondition(vEnded, recvStatus(statusdoc.StateReceiving, 1), st), typ, "False/ReceiverFinished", "received 3.00 GiB"},
		{"capture failed", receivingCondition(vFailed, recvStatus(statusdoc.StateReceiving, 1), st), typ, "False/Failed", "the capture failed"},
	})
}

func TestReadersBehindCondition(t *testing.T) {
	const typ = ringcapv1.ConditionReadersBehind
	held := func(since string) *statusdoc.Status {
		rs := recvStatus(statusdoc.StateReceiving, 1)
		rs.HeldBackSince, rs.HeldBackSeconds = since, 95
		return rs
	}
	ago := t0.Add(-90 * time.Second).Format(time.RFC3339Nano)
	checkConds(t, []condCase{
		{"held back", readersBehindCondition(vScheduled, held(ago), t0), typ, "True/ReadersBehind",
			"ring dada: no free block for the receiver for 1m30s (since 2026-11-21T14:58:30Z): the readers have not released the ring's blocks; held back 1m35s in total"},
		{"hold begins after now (clock skew)", readersBehindCondition(vScheduled, held(t0.Add(time.Minute).Format(time.RFC3339Nano)), t0), typ, "True/ReadersBehind", "for 0s"},
		{"not held back", readersBehindCondition(vScheduled, held(""), t0), typ, "False/ReadersKeepingUp", "not waiting"},
		{"unparsable time", readersBehindCondition(vScheduled, held("yesterday"), t0), typ, "False/ReadersKeepingUp", ""},
		{"no status", readersBehindCondition(vScheduled, nil, t0), typ, "False/ReadersKeepingUp", ""},
		{"receiver exited", readersBehindCondition(vEnded, held(ago), t0), typ, "False/ReadersKeepingUp", ""},
		{"capture failed", readersBehindCondition(vFailed, held(ago), t0), typ, "False/ReadersKeepingUp", ""},
	})
}

func TestFailedCondition(t *testing.T) {
	const typ = ringcapv1.ConditionFailed
	checkConds(t, []condCase{
		{"running", failedCondition(vScheduled), typ, "False/NotFailed", ""},
		{"succeeded", failedCondition(vSucceeded), typ, "False/NotFailed", ""},
		{"reader failed", failedCondition(vFailed), typ, "True/ReaderFailed", "reader r exited with code 2"},
	})
}

func TestReadyCondition(t *testing.T) {
	const typ = ringcapv1.ConditionReady
	ep := &ringcapv1.EndpointStatus{Address: "10.88.0.7", Port: 18515}
	checkConds(t, []condCase{
		{"ring and receiver ready", readyCondition(vScheduled, true, ep), typ, "True/ReceiverReady", "senders connect to 10.88.0.7:18515"},
		{"receiver not listening yet", readyCondition(vScheduled, false, ep), typ, "False/ReceiverNotReady", "not listening yet"},
		{"not scheduled", readyCondition(vPending, false, nil), typ, "False/PodPending", "waiting for the scheduler"},
		{"a container waits", readyCondition(vWaiting, true, ep), typ, "False/ContainerWaiting", "ErrImagePull"},
		{"receiver finished, readers draining", readyCondition(vEnded, false, ep), typ, "False/ReadersDraining", "waiting for the readers"},
		{"succeeded", readyCondition(vSucceeded, false, ep), typ, "False/Succeeded", "the capture finished"},
		{"failed, even while the receiver listens", readyCondition(vFailed, true, ep), typ, "False/Failed", "reader r exited"},
	})
}

func TestChangePendingCondition(t *testing.T) {
	const typ = ringcapv1.ConditionChangePending
	rc := defaulted("c")
	rc.Generation = 4
	current := RunningConfig(testPodOf(4, nil, running), nil)
	older := RunningConfig(testPodOf(3, func(rc *ringcapv1.RingCapture) { rc.Spec.Ring.Blocks++ }, running), nil)
	byClaim := rc.DeepCopy()
	byClaim.Generation = 5
	byClaim.Spec.Receiver.DeviceClassName = "ringcap-rdma"
	checkConds(t, []condCase{
		{"no pod has run", changePendingCondition(rc, ringcapv1.RingCaptureStatus{}), typ, "False/NoChangePending", "no capture pod has run yet"},
		{"runs the current spec", changePendingCondition(rc, ringcapv1.RingCaptureStatus{Running: current}), typ, "False/NoChangePending", "runs the current spec"},
		{"runs an older spec", changePendingCondition(rc, ringcapv1.RingCaptureStatus{Running: older}), typ, "True/SpecChangePending", "blocks"},
		{"device through a claim now", changePendingCondition(byClaim, ringcapv1.RingCaptureStatus{Running: current}), typ, "True/SpecChangePending",
			"receiver device the device plugin's extended resource -> a claim from ResourceClaimTemplate c-rdma"},
		{"older run ended", changePendingCondition(rc, ringcapv1.RingCaptureStatus{Running: older, Phase: ringcapv1.PhaseSucceeded}), typ, "True/SpecChangePending",
			"spec generation 4 is applied in a new pod (the run of generation 3 ended)"},
	})
}
