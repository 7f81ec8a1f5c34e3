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

// withReader gives the capture one reader, "rd", with restart policy p.
func withReader(p ringcapv1.ReaderRestartPolicy) func(rc *ringcapv1.RingCapture) {
	return func(rc *ringcapv1.RingCapture) {
		rc.Spec.Readers = []ringcapv1.ReaderContainer{{Name: "rd", Args: []string{"ring", "read", "-s"}, RestartPolicy: p}}
	}
}

// readerState is the pod of a capture with reader "rd" (policy p), scheduled and running,
// the reader's status set by state (and, for a sidecar, its last exit and restarts).
func readerState(p ringcapv1.ReaderRestartPolicy, state corev1.ContainerState, last *corev1.ContainerStateTerminated, restarts int32) *corev1.Pod {
	return testPodOf(3, withReader(p), func(pod *corev1.Pod) {
		pod.Spec.NodeName, pod.Status.Phase, pod.Status.PodIP = "node-a", corev1.PodRunning, "10.88.0.7"
		rd := corev1.ContainerStatus{Name: "rd", State: state, RestartCount: restarts}
		if last != nil {
			rd.LastTerminationState.Terminated = last
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "receiver", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		if p == ringcapv1.ReaderRestart {
			pod.Status.InitContainerStatuses = []corev1.ContainerStatus{rd}
		} else {
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, rd)
		}
	})
}

func exited(code int32, at metav1.Time) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Completed", FinishedAt: at}
}

// A reader that exits while the capture runs leaves its ring slot empty: the status lists
// it (exit code, when) and, by its restart policy, the capture fails (FailCapture) or
// Ready is False until the kubelet has restarted it (Restart). One that exits because the
// capture finished, or only moments ago (the receiver's status may not say yet that it
// finished), or after the last /status that could be read (which said receiving: the
// reads since failed, as they may while the receiver shuts down under load), is not
// listed. Before, such a capture stayed Ready=True/ReceiverReady.
func TestReaderSlotEmpty(t *testing.T) {
	now := metav1.NewTime(t0.Add(time.Minute))
	gone := metav1.NewTime(now.Add(-30 * time.Second))
	justNow := metav1.NewTime(now.Add(-2 * time.Second))
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	crashLoop := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	tests := []struct {
		name     string
		policy   ringcapv1.ReaderRestartPolicy
		pod      *corev1.Pod
		recv     string // receiver state
		phase    ringcapv1.RingCapturePhase
		ready    string // Ready "Status/Reason"
		failed   string // Failed "Status/Reason"
		empty    bool   // rd listed in emptyReaderSlots
		restarts int32
		readAt   time.Time // when the receiver's status was read (zero: now)
	}{
		{name: "FailCapture reader exited 0 while listening", policy: ringcapv1.ReaderFailCapture,
			pod: readerState("", corev1.ContainerState{Terminated: exited(0, gone)}, nil, 0), recv: statusdoc.StateListening,
			phase: ringcapv1.PhaseFailed, ready: "False/Failed", failed: "True/ReaderExited", empty: true},
		{name: "FailCapture reader exited 0 while receiving", policy: ringcapv1.ReaderFailCapture,
			pod: readerState(ringcapv1.ReaderFailCapture, corev1.ContainerState{Terminated: exited(0, gone)}, nil, 0), recv: statusdoc.StateReceiving,
			phase: ringcapv1.PhaseFailed, ready: "False/Failed", failed: "True/ReaderExited", empty: true},
		{name: "FailCapture reader exited 0 a moment ago", policy: ringcapv1.ReaderFailCapture,
			pod: readerState("", corev1.ContainerState{Terminated: exited(0, justNow)}, nil, 0), recv: statusdoc.StateListening,
			phase: ringcapv1.PhaseListening, ready: "True/ReceiverReady", failed: "False/NotFailed"},
		{name: "FailCapture reader exited 0 after the last good read (said receiving)", policy: ringcapv1.ReaderFailCapture,
			pod: readerState("", corev1.ContainerState{Terminated: exited(0, gone)}, nil, 0), recv: statusdoc.StateReceiving, readAt: gone.Add(5 * time.Second),
			phase: ringcapv1.PhaseReceiving, failed: "False/NotFailed"},
		{name: "reader exited as the receiver finished (drain)", policy: ringcapv1.ReaderFailCapture,
			pod: readerState("", corev1.ContainerState{Terminated: exited(0, gone)}, nil, 0), recv: statusdoc.StateFinished,
			phase: ringcapv1.PhaseReceiving, failed: "False/NotFailed"},
		{name: "Restart reader waiting to be restarted", policy: ringcapv1.ReaderRestart,
			pod: readerState(ringcapv1.ReaderRestart, crashLoop, exited(0, gone), 3), recv: statusdoc.StateReceiving,
			phase: ringcapv1.PhaseReceiving, ready: "False/ReaderSlotEmpty", failed: "False/NotFailed", empty: true, restarts: 3},
		{name: "Restart reader killed, waiting to be restarted", policy: ringcapv1.ReaderRestart,
			pod: readerState(ringcapv1.ReaderRestart, crashLoop, &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", FinishedAt: gone}, 1), recv: statusdoc.StateListening,
			phase: ringcapv1.PhaseListening, ready: "False/ReaderSlotEmpty", failed: "False/NotFailed", empty: true, restarts: 1},
		{name: "Restart reader running again", policy: ringcapv1.ReaderRestart,
			pod: readerState(ringcapv1.ReaderRestart, running, exited(0, gone), 1), recv: statusdoc.StateListening,
			phase: ringcapv1.PhaseListening, ready: "True/ReceiverReady", failed: "False/NotFailed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := defaulted("c")
			rc.Generation = 3
			withReader(tc.policy)(rc)
			readAt := now
			if !tc.readAt.IsZero() {
				readAt = metav1.NewTime(tc.readAt)
			}
			st := ComputeStatus(rc, Observed{Pod: tc.pod, Receiver: recvStatus(tc.recv, 1<<20), ReceiverReadAt: readAt, Now: now})
			if st.Phase != tc.phase {
				t.Errorf("phase %s, want %s", st.Phase, tc.phase)
			}
			if tc.ready != "" {
				checkCondition(t, st.Conditions, ringcapv1.ConditionReady, tc.ready)
			}
			c := checkCondition(t, st.Conditions, ringcapv1.ConditionFailed, tc.failed)
			if !tc.empty {
				if len(st.EmptyReaderSlots) != 0 {
					t.Fatalf("emptyReaderSlots = %+v, want none", st.EmptyReaderSlots)
				}
				return
			}
			if len(st.EmptyReaderSlots) != 1 {
				t.Fatalf("emptyReaderSlots = %+v, want rd", st.EmptyReaderSlots)
			}
			s := st.EmptyReaderSlots[0]
			last := lastExit(tc.pod.Status.ContainerStatuses[len(tc.pod.Status.ContainerStatuses)-1])
			if tc.policy == ringcapv1.ReaderRestart {
				last = lastExit(tc.pod.Status.InitContainerStatuses[0])
			}
			if s.Reader != "rd" || s.ExitCode != last.ExitCode || s.FinishedAt == nil || !s.FinishedAt.Equal(&gone) || s.Restarts != tc.restarts {
				t.Errorf("emptyReaderSlots[0] = %+v", s)
			}
			msg := c.Message
			if tc.policy == ringcapv1.ReaderRestart {
				msg = checkCondition(t, st.Conditions, ringcapv1.ConditionReady, tc.ready).Message
			}
			for _, want := range []string{"reader rd", "exited with code", gone.UTC().Format(time.RFC3339)} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %q", msg, want)
				}
			}
		})
	}
}

// BuildPod runs Restart readers as restartable init containers (native sidecars, which
// the kubelet restarts whatever their exit code and stops once the receiver has exited)
// and FailCapture readers as containers beside the receiver.
func TestBuildPodReaderRestartPolicy(t *testing.T) {
	rc := defaulted("c")
	rc.Spec.Readers = []ringcapv1.ReaderContainer{
		{Name: "keep", RestartPolicy: ringcapv1.ReaderRestart},
		{Name: "once"},
		{Name: "fail", RestartPolicy: ringcapv1.ReaderFailCapture},
	}
	p := BuildPod(rc, DefaultPodOptions())
	if len(p.Spec.InitContainers) != 1 || p.Spec.InitContainers[0].Name != "keep" ||
		p.Spec.InitContainers[0].RestartPolicy == nil || *p.Spec.InitContainers[0].RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Fatalf("init containers %+v, want the Restart reader as a sidecar", p.Spec.InitContainers)
	}
	var names []string
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
		if c.RestartPolicy != nil {
			t.Errorf("container %s has restartPolicy %s", c.Name, *c.RestartPolicy)
		}
	}
	if len(names) != 3 || names[0] != "receiver" || names[1] != "once" || names[2] != "fail" {
		t.Fatalf("containers %v, want receiver once fail", names)
	}
	if env := p.Spec.InitContainers[0].Env; len(env) == 0 || env[0].Name != EnvRingKey {
		t.Errorf("sidecar reader env %+v, want %s", env, EnvRingKey)
	}
	rc.Spec.Ring.HostIPC, rc.Spec.Ring.Readers = true, 5
	if n := externalReaderSlots(BuildPod(rc, DefaultPodOptions()), 5); n != 2 {
		t.Errorf("external reader slots = %d, want 2 (three readers, one of them a sidecar)", n)
	}
}
