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

// receivingStatus is the status of a run that received 8 MiB in 2 observations and
// receives more, in pod testPod(running) at generation 3.
func receivingStatus(t *testing.T) ringcapv1.RingCaptureStatus {
	t.Helper()
	rc := defaulted("c")
	rc.Generation = 3
	rs := recvStatus(statusdoc.StateReceiving, 8<<20)
	rs.Observations = 2
	st := ComputeStatus(rc, Observed{Pod: testPod(running), Receiver: rs, Now: t0})
	if st.Phase != ringcapv1.PhaseReceiving || st.BytesReceived != 8<<20 {
		t.Fatalf("setup: phase %s bytes %d, want Receiving with 8 MiB", st.Phase, st.BytesReceived)
	}
	return st
}

func deleting(p *corev1.Pod) { p.DeletionTimestamp = &t0 }

func evicted(p *corev1.Pod) {
	p.DeletionTimestamp = &t0
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"})
}

func kubeletEvicted(p *corev1.Pod) {
	p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "TerminationByKubelet", Message: "The node was low on resource: memory."})
}

// A run that loses its pod after it accepted data is interrupted: recorded and
// restarted, or failed, as spec.interruptionPolicy says. A pod lost before any data
// is simply replaced.
func TestComputeStatusPodLost(t *testing.T) {
	later := metav1.NewTime(t0.Add(time.Minute))
	for _, tc := range []struct {
		name     string
		policy   ringcapv1.InterruptionPolicy
		old      func(t *testing.T) ringcapv1.RingCaptureStatus
		pod      *corev1.Pod
		recv     *statusdoc.Status // the last /status read the operator kept
		phase    ringcapv1.RingCapturePhase
		conds    map[string]string
		bytes    int64
		restarts int32
		lastRun  string // in lastRun.message; "" for no lastRun
	}{
		{name: "deleted while receiving: restarted", old: receivingStatus, pod: testPod(chain(running, deleting)),
			phase: ringcapv1.PhasePending, conds: map[string]string{"Scheduled": "False/PodDeleting", "Ready": "False/PodDeleting", "Receiving": "False/NotReceiving"},
			restarts: 1, lastRun: "capture pod c-capture was deleted while Receiving, after receiving 8.00 MiB in 2 observations; a new pod starts (restart 1)"},
		{name: "evicted (kubectl drain)", old: receivingStatus, pod: testPod(chain(running, evicted)),
			phase: ringcapv1.PhasePending, restarts: 1, lastRun: "capture pod c-capture was evicted (EvictionByEvictionAPI: Eviction API: evicting) while Receiving"},
		{name: "evicted by the kubelet (node pressure): restarted, not failed", old: receivingStatus, pod: testPod(chain(running, kubeletEvicted)),
			recv:  recvStatus(statusdoc.StateReceiving, 8<<20),
			phase: ringcapv1.PhasePending, conds: map[string]string{"Scheduled": "False/PodDeleting", "Failed": "False/NotFailed"},
			restarts: 1, lastRun: "capture pod c-capture was evicted (TerminationByKubelet: The node was low on resource: memory.) while Receiving"},
		{name: "evicted by the kubelet, policy Fail", policy: ringcapv1.InterruptionFail, old: receivingStatus, pod: testPod(chain(running, kubeletEvicted)),
			phase: ringcapv1.PhaseFailed, bytes: 8 << 20, conds: map[string]string{"Failed": "True/RunInterrupted"}},
		{name: "gone before the operator saw its deletion", old: receivingStatus,
			phase: ringcapv1.PhasePending, conds: map[string]string{"Scheduled": "False/PodNotCreated"},
			restarts: 1, lastRun: "capture pod c-capture is gone (deleted) while Receiving"},
		{name: "the receiver's final summary counts", old: receivingStatus, pod: testPod(chain(running, terminated("receiver", 0, summaryOK), deleting)),
			phase: ringcapv1.PhasePending, restarts: 1, lastRun: "after receiving 8.00 MiB"},
		{name: "policy Fail", policy: ringcapv1.InterruptionFail, old: receivingStatus, pod: testPod(chain(running, deleting)),
			phase: ringcapv1.PhaseFailed, bytes: 8 << 20,
			conds: map[string]string{"Failed": "True/RunInterrupted", "Ready": "False/Failed", "ReceiverReady": "False/CaptureFailed", "Receiving": "False/Failed"}},
		{name: "listening without data: nothing to lose", pod: testPod(chain(running, deleting)),
			old: func(*testing.T) ringcapv1.RingCaptureStatus {
				return ComputeStatus(defaulted("c"), Observed{Pod: testPod(running), Receiver: recvStatus(statusdoc.StateListening, 0), Now: t0})
			},
			phase: ringcapv1.PhasePending, conds: map[string]string{"Scheduled": "False/PodDeleting"}},
		{name: "the pod still deleting after the restart is recorded: counted once", pod: testPod(chain(running, terminated("receiver", 0, summaryOK), deleting)),
			old: func(t *testing.T) ringcapv1.RingCaptureStatus {
				rc := defaulted("c")
				rc.Generation, rc.Status = 3, receivingStatus(t)
				return ComputeStatus(rc, Observed{Pod: testPod(chain(running, deleting)), Now: later})
			},
			phase: ringcapv1.PhasePending, restarts: 1, lastRun: "(restart 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := defaulted("c")
			rc.Generation, rc.Spec.InterruptionPolicy = 3, tc.policy
			rc.Status = tc.old(t)
			st := ComputeStatus(rc, Observed{Pod: tc.pod, Receiver: tc.recv, Now: later})
			if st.Phase != tc.phase {
				t.Errorf("phase %s, want %s", st.Phase, tc.phase)
			}
			for typ, want := range tc.conds {
				checkCondition(t, st.Conditions, typ, want)
			}
			if st.BytesReceived != tc.bytes || st.Restarts != tc.restarts {
				t.Errorf("bytesReceived %d restarts %d, want %d and %d", st.BytesReceived, st.Restarts, tc.bytes, tc.restarts)
			}
			switch {
			case tc.lastRun == "" && st.LastRun != nil:
				t.Errorf("lastRun %+v, want none", st.LastRun)
			case tc.lastRun == "":
			case st.LastRun == nil || !strings.Contains(st.LastRun.Message, tc.lastRun):
				t.Errorf("lastRun %+v, want a message with %q", st.LastRun, tc.lastRun)
			case st.LastRun.Reason != ringcapv1.ReasonRunInterrupted || st.LastRun.Phase != ringcapv1.PhaseReceiving ||
				st.LastRun.BytesReceived != 8<<20 || st.LastRun.Observations != 2 || st.LastRun.Generation != 3 || !st.LastRun.CompletionTime.Equal(&later):
				t.Errorf("lastRun %+v, want the interrupted run of generation 3: Receiving, RunInterrupted, 8 MiB, 2 observations, ended %s", st.LastRun, later)
			}
			if tc.policy == ringcapv1.InterruptionFail {
				if c := findCond(st, ringcapv1.ConditionFailed); !strings.Contains(c.Message, "while Receiving, after receiving 8.00 MiB in 2 observations") {
					t.Errorf("Failed message %q does not say what was lost", c.Message)
				}
			}
		})
	}
}

func findCond(st ringcapv1.RingCaptureStatus, typ string) metav1.Condition {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// scheduledFor is a pod bound to node-a d before t0, its receiver container waiting
// for its image.
func scheduledFor(d time.Duration, mod func(p *corev1.Pod)) *corev1.Pod {
	return testPod(func(p *corev1.Pod) {
		p.Spec.NodeName = "node-a"
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-d))}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "receiver", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "ringcap/ringcap:typo"`}}}}
		if mod != nil {
			mod(p)
		}
	})
}

// A pod on a node whose receiver does not listen within spec.startDeadlineSeconds
// fails the capture (its pod is then stopped and its RDMA unit released), saying what
// it waited for; waiting for a node does not count.
func TestStartDeadline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline *int32
		pod      *corev1.Pod
		recv     *statusdoc.Status
		phase    ringcapv1.RingCapturePhase
		ready    string
		msg      []string
	}{
		{name: "image pull failing, within the default 10 minutes", pod: scheduledFor(9*time.Minute, nil),
			phase: ringcapv1.PhaseScheduled, ready: "False/ContainerWaiting", msg: []string{"image ringcap/ringcap:latest", "ImagePullBackOff"}},
		{name: "image pull failing past the default 10 minutes", pod: scheduledFor(11*time.Minute, nil),
			phase: ringcapv1.PhaseFailed, ready: "False/Failed",
			msg: []string{"did not listen within 10m0s (spec.startDeadlineSeconds) of the pod's scheduling on node node-a", "receiver container (image ringcap/ringcap:latest): ImagePullBackOff"}},
		{name: "a shorter deadline", deadline: ptr(int32(30)), pod: scheduledFor(31*time.Second, nil), phase: ringcapv1.PhaseFailed, ready: "False/Failed"},
		{name: "receiver still starting", deadline: ptr(int32(30)), pod: scheduledFor(time.Minute, running), recv: recvStatus(statusdoc.StateStarting, 0),
			phase: ringcapv1.PhaseFailed, ready: "False/Failed", msg: []string{"receiver is Starting"}},
		{name: "receiver listening: the deadline is met", deadline: ptr(int32(30)), pod: scheduledFor(time.Hour, running), recv: recvStatus(statusdoc.StateListening, 0),
			phase: ringcapv1.PhaseListening, ready: "True/ReceiverReady"},
		{name: "waiting for a node does not count", deadline: ptr(int32(30)), pod: testPod(func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour)) }),
			phase: ringcapv1.PhasePending, ready: "False/PodPending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := defaulted("c")
			rc.Generation, rc.Spec.StartDeadlineSeconds = 3, tc.deadline
			st := ComputeStatus(rc, Observed{Pod: tc.pod, Receiver: tc.recv, Now: t0})
			if st.Phase != tc.phase {
				t.Errorf("phase %s, want %s", st.Phase, tc.phase)
			}
			checkCondition(t, st.Conditions, ringcapv1.ConditionReady, tc.ready)
			if tc.phase == ringcapv1.PhaseFailed {
				checkCondition(t, st.Conditions, ringcapv1.ConditionFailed, "True/StartDeadlineExceeded")
			}
			for _, m := range tc.msg {
				if got := findCond(st, ringcapv1.ConditionReady).Message; !strings.Contains(got, m) {
					t.Errorf("Ready message %q does not contain %q", got, m)
				}
			}
		})
	}
}

func TestStartDeadlineLeft(t *testing.T) {
	rc := defaulted("c")
	rc.Spec.StartDeadlineSeconds = ptr(int32(60))
	scheduled := ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhaseScheduled}
	if left, ok := startDeadlineLeft(rc, scheduledFor(20*time.Second, nil), scheduled, t0.Time); !ok || left != 40*time.Second {
		t.Errorf("20 s into a 60 s deadline: %v, %v; want 40s, true", left, ok)
	}
	if left, ok := startDeadlineLeft(rc, scheduledFor(2*time.Minute, nil), scheduled, t0.Time); !ok || left != 0 {
		t.Errorf("past the deadline: %v, %v; want 0, true", left, ok)
	}
	if _, ok := startDeadlineLeft(rc, scheduledFor(0, nil), ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhaseListening}, t0.Time); ok {
		t.Error("a listening capture has a start deadline")
	}
	if _, ok := startDeadlineLeft(rc, testPod(nil), ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhasePending}, t0.Time); ok {
		t.Error("an unscheduled pod has a start deadline")
	}
}

// Which pods a spec change replaces at once: those of an older generation that have
// accepted no data.
func TestUnstartedPod(t *testing.T) {
	unsched := testPodOf(1, nil, func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	})
	pending := ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhasePending, Running: &ringcapv1.RunningStatus{Generation: 1}}
	for _, tc := range []struct {
		name string
		gen  int64
		st   ringcapv1.RingCaptureStatus
		pod  *corev1.Pod
		want bool
	}{
		{"unschedulable, spec changed", 2, pending, unsched, true},
		{"unschedulable, spec unchanged", 1, pending, unsched, false},
		{"listening without data", 2, ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhaseListening, Running: &ringcapv1.RunningStatus{Generation: 1}}, testPodOf(1, nil, running), true},
		{"listening between observations", 2, ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhaseListening, BytesReceived: 1, Running: &ringcapv1.RunningStatus{Generation: 1}}, testPodOf(1, nil, running), false},
		{"receiving", 2, ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhaseReceiving, Running: &ringcapv1.RunningStatus{Generation: 1}}, testPodOf(1, nil, running), false},
		{"failed", 2, ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhaseFailed, Running: &ringcapv1.RunningStatus{Generation: 1}}, testPodOf(1, nil, running), false},
		{"the status is not about this pod yet", 3, ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhasePending, Running: &ringcapv1.RunningStatus{Generation: 1}}, testPodOf(2, nil, running), false},
		{"being deleted", 2, pending, testPodOf(1, nil, deleting), false},
		{"receiver exited", 2, pending, testPodOf(1, nil, chain(running, terminated("receiver", 0, summaryOK))), false},
	} {
		rc := defaulted("c")
		rc.Generation, rc.Status = tc.gen, tc.st
		if got := unstartedPod(rc, tc.pod); got != tc.want {
			t.Errorf("%s: unstartedPod = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A node that stopped reporting, or a receiver whose /status stopped answering, makes
// the capture not Ready, whatever the last good read said.
func TestReachability(t *testing.T) {
	nodeGone := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: t0},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
		}
	}
	containersNotReady := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}, {Type: corev1.ContainersReady, Status: corev1.ConditionFalse}}
	}
	lastRead := metav1.NewTime(t0.Add(-10 * time.Second))
	for _, tc := range []struct {
		name            string
		pod             *corev1.Pod
		err             string
		readAt          metav1.Time
		ready, receiver string
	}{
		{"node stopped reporting", testPod(chain(running, nodeGone)), "", t0, "False/NodeNotReady", "True/Receiving"},
		{"containers not ready (the kubelet says so): the receiver's word counts", testPod(chain(running, containersNotReady)), "", t0, "True/ReceiverReady", "True/Receiving"},
		{"/status failing for 10 s, stale after 3 s", testPod(running), "connection refused", lastRead, "False/ReceiverUnreachable", "Unknown/ReceiverUnreachable"},
		{"/status failed once, within 3 s", testPod(running), "connection refused", metav1.NewTime(t0.Add(-time.Second)), "True/ReceiverReady", "True/Receiving"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := defaulted("c")
			rc.Generation = 3
			st := ComputeStatus(rc, Observed{Pod: tc.pod, Receiver: recvStatus(statusdoc.StateReceiving, 1<<20), ReceiverError: tc.err,
				ReceiverReadAt: tc.readAt, StaleAfter: 3 * time.Second, Now: t0})
			checkCondition(t, st.Conditions, ringcapv1.ConditionReady, tc.ready)
			checkCondition(t, st.Conditions, ringcapv1.ConditionReceiverReady, tc.receiver)
		})
	}
}

// Which pods that ended by a disruption the operator deletes to start another: those
// whose run the status no longer holds (recorded as interrupted, or without data).
func TestReplaceDisrupted(t *testing.T) {
	pending := ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhasePending, Restarts: 1}
	for _, tc := range []struct {
		name string
		st   ringcapv1.RingCaptureStatus
		pod  *corev1.Pod
		want bool
	}{
		{"evicted, its run recorded", pending, testPod(chain(running, kubeletEvicted)), true},
		{"evicted before any data", ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhaseListening}, testPod(chain(running, kubeletEvicted)), true},
		{"evicted, its run not recorded yet", ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhaseReceiving, BytesReceived: 1}, testPod(chain(running, kubeletEvicted)), false},
		{"evicted, the capture failed (policy Fail): kept for its logs", ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhaseFailed}, testPod(chain(running, kubeletEvicted)), false},
		{"failed by its own containers", pending, testPod(chain(running, terminated("receiver", 1, ""), func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })), false},
		{"running", pending, testPod(running), false},
	} {
		if got := replaceDisrupted(tc.st, tc.pod); got != tc.want {
			t.Errorf("%s: replaceDisrupted = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// status.restarts counts the capture's restarts: a new run (a spec change) keeps it.
func TestRestartsSurviveANewRun(t *testing.T) {
	rc := defaulted("c")
	rc.Generation = 4
	rc.Status = ringcapv1.RingCaptureStatus{Phase: ringcapv1.PhaseSucceeded, Restarts: 2, Running: &ringcapv1.RunningStatus{Generation: 3}}
	st := ComputeStatus(rc, Observed{Pod: testPodOf(4, nil, nil), Now: t0})
	if st.Restarts != 2 || st.LastRun == nil || st.LastRun.Phase != ringcapv1.PhaseSucceeded {
		t.Errorf("new run: restarts %d lastRun %+v; want 2 and the finished run", st.Restarts, st.LastRun)
	}
}
