//go:build envtest

package controller_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// readerGone sets container name's status (a container, or an init container when
// sidecar) as the kubelet does when it exited with code a minute ago: terminated, or
// waiting to be restarted with that as its last state.
func readerGone(name string, code int32, sidecar bool) func(p *corev1.Pod) {
	return func(p *corev1.Pod) {
		at := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
		end := &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Completed", StartedAt: at, FinishedAt: at, ContainerID: "containerd://" + name}
		cs := corev1.ContainerStatus{Name: name, Image: "ringcap", ImageID: "sha256:0", Started: ptr(false)}
		statuses := &p.Status.ContainerStatuses
		if sidecar {
			statuses = &p.Status.InitContainerStatuses
			cs.RestartCount = 1
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
			cs.LastTerminationState.Terminated = end
		} else {
			cs.State.Terminated = end
		}
		*statuses = append(dropStatus(*statuses, name), cs)
	}
}

// readerRunning sets sidecar name's status to running (after restarts).
func readerRunning(name string, restarts int32) func(p *corev1.Pod) {
	return func(p *corev1.Pod) {
		cs := corev1.ContainerStatus{Name: name, Image: "ringcap", ImageID: "sha256:0", Ready: true, Started: ptr(true), RestartCount: restarts,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}
		p.Status.InitContainerStatuses = append(dropStatus(p.Status.InitContainerStatuses, name), cs)
	}
}

func dropStatus(ss []corev1.ContainerStatus, name string) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, s := range ss {
		if s.Name != name {
			out = append(out, s)
		}
	}
	return out
}

// A reader that exits 0 while the capture runs (stop Never) leaves its ring slot empty:
// with the default restartPolicy (FailCapture, set by the API server) the capture fails
// with ReaderExited naming the reader, its exit code and when, and status.emptyReaderSlots
// lists it. Before, the capture stayed Ready=True/ReceiverReady.
func TestReaderExitZeroFailsCapture(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "readerexit")
	rc := newCapture(t, ns, "oncereader", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Readers = []ringcapv1.ReaderContainer{{Name: "verify", Args: []string{"ring", "read", "-s"}}}
	})
	if p := getCapture(t, ns, rc.Name).Spec.Readers[0].RestartPolicy; p != ringcapv1.ReaderFailCapture {
		t.Errorf("readers[0].restartPolicy defaulted to %q, want FailCapture", p)
	}
	pod := waitPod(t, ns, "oncereader")
	if len(pod.Spec.InitContainers) != 0 || len(pod.Spec.Containers) != 2 {
		t.Fatalf("pod has %d init containers and %d containers, want the reader beside the receiver", len(pod.Spec.InitContainers), len(pod.Spec.Containers))
	}
	bindPod(t, pod, "node-a")
	receivers.Set(ns, pod.Name, receiverStatus("Listening", 0))
	pod = runPod(t, pod, "10.88.0.21")
	waitCapture(t, ns, "oncereader", "Ready", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionTrue, ringcapv1.ReasonReceiverReady)
	})
	updatePodStatus(t, pod, readerGone("verify", 0, false))
	rc = waitCapture(t, ns, "oncereader", "Failed", func(rc *ringcapv1.RingCapture) bool { return rc.Status.Phase == ringcapv1.PhaseFailed })
	c := condition(rc, ringcapv1.ConditionFailed)
	if c.Reason != ringcapv1.ReasonReaderExited || !strings.Contains(c.Message, "reader verify exited with code 0 at ") {
		t.Errorf("Failed %s: %q, want ReaderExited naming reader verify, code 0 and when", c.Reason, c.Message)
	}
	if r := condition(rc, ringcapv1.ConditionReady); r.Status != metav1.ConditionFalse {
		t.Errorf("Ready %s (%s) with an empty reader slot", r.Status, r.Reason)
	}
	if s := rc.Status.EmptyReaderSlots; len(s) != 1 || s[0].Reader != "verify" || s[0].ExitCode != 0 || s[0].FinishedAt == nil {
		t.Errorf("status.emptyReaderSlots = %+v, want verify with exit code 0 and when", s)
	}
}

// A reader with restartPolicy Restart runs as a native sidecar; while it waits to be
// restarted the capture says its slot is empty (Ready False, ReaderSlotEmpty) without
// failing, and once it runs again Ready is True and no slot is listed.
func TestRestartReaderSlotEmptyUntilRestarted(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "readerrestart")
	newCapture(t, ns, "keepreading", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Readers = []ringcapv1.ReaderContainer{{Name: "verify", Args: []string{"ring", "read"}, RestartPolicy: ringcapv1.ReaderRestart}}
	})
	pod := waitPod(t, ns, "keepreading")
	if len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].Name != "verify" || pod.Spec.InitContainers[0].RestartPolicy == nil ||
		*pod.Spec.InitContainers[0].RestartPolicy != corev1.ContainerRestartPolicyAlways || len(pod.Spec.Containers) != 1 {
		t.Fatalf("pod init containers %+v, containers %d: want the reader as a restartable init container", pod.Spec.InitContainers, len(pod.Spec.Containers))
	}
	bindPod(t, pod, "node-a")
	receivers.Set(ns, pod.Name, receiverStatus("Receiving", 1<<20))
	pod = runPod(t, pod, "10.88.0.22")
	pod = updatePodStatus(t, pod, readerRunning("verify", 0))
	waitCapture(t, ns, "keepreading", "Ready", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionTrue, ringcapv1.ReasonReceiverReady)
	})
	pod = updatePodStatus(t, pod, readerGone("verify", 137, true))
	rc := waitCapture(t, ns, "keepreading", "ReaderSlotEmpty", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionFalse, ringcapv1.ReasonReaderSlotEmpty)
	})
	if msg := condition(rc, ringcapv1.ConditionReady).Message; !strings.Contains(msg, "reader verify exited with code 137") || !strings.Contains(msg, "1 restarts") {
		t.Errorf("Ready message %q, want the reader, its exit code and restarts", msg)
	}
	if rc.Status.Phase == ringcapv1.PhaseFailed || len(rc.Status.EmptyReaderSlots) != 1 || rc.Status.EmptyReaderSlots[0].Restarts != 1 {
		t.Errorf("phase %s, emptyReaderSlots %+v; want not failed and verify listed", rc.Status.Phase, rc.Status.EmptyReaderSlots)
	}
	updatePodStatus(t, pod, readerRunning("verify", 1))
	waitCapture(t, ns, "keepreading", "Ready again", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionTrue, ringcapv1.ReasonReceiverReady) && len(rc.Status.EmptyReaderSlots) == 0
	})
}
