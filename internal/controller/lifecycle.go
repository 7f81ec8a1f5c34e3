package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// A run's life beyond the happy path: a pod that never starts (start deadline), a pod
// that has received nothing and is replaced at once by a spec change, a pod lost
// mid-run (deleted, evicted, its node gone) and a receiver that stopped answering.
//
// The line between "nothing to lose" and "a run to record" is runAccepted: the run has
// accepted data once the receiver reported bytes, an observation or a sender
// (phase Receiving). From then on spec.ring and spec.receiver.mode are immutable (the
// CRD's rules read the same status fields), a spec change waits for the run's end
// (ChangePending), and the loss of the pod interrupts the run.

// runAccepted says whether the (not finished) run st describes has accepted data.
func runAccepted(st ringcapv1.RingCaptureStatus) bool {
	return !isTerminal(st.Phase) && (st.Phase == ringcapv1.PhaseReceiving || st.BytesReceived > 0 || st.Observations > 0)
}

// podLost says whether the run old describes lost its pod: it accepted data and its
// pod is gone, being deleted (by a user, an eviction or the node lifecycle
// controller: the operator deletes only pods whose run ended or never accepted data)
// or ended by a disruption (the kubelet's node-pressure eviction, preemption).
func podLost(old ringcapv1.RingCaptureStatus, pod *corev1.Pod) bool {
	return runAccepted(old) && (pod == nil || pod.DeletionTimestamp != nil || disrupted(pod))
}

// disrupted says whether pod ended because Kubernetes stopped it (an eviction by the
// kubelet, preemption, the taint manager), not because its containers ended.
func disrupted(pod *corev1.Pod) bool {
	if pod == nil || pod.Status.Phase != corev1.PodFailed {
		return false
	}
	c := podCondition(pod, corev1.DisruptionTarget)
	return (c != nil && c.Status == corev1.ConditionTrue) || pod.Status.Reason == "Evicted"
}

// replacing is pod as the status sees it once its run is recorded as interrupted: on
// its way out (a disrupted pod that ended is deleted by the next reconcile), so that
// its end is not judged as the new run's failure.
func replacing(pod *corev1.Pod, now metav1.Time) *corev1.Pod {
	if pod == nil || pod.DeletionTimestamp != nil {
		return pod
	}
	p := pod.DeepCopy()
	p.DeletionTimestamp = &now
	return p
}

// replaceDisrupted says whether pod ended by a disruption and the status holds no run
// of it worth keeping (the interrupted run is recorded, or it never accepted data): the
// pod goes, and a new one starts.
func replaceDisrupted(st ringcapv1.RingCaptureStatus, pod *corev1.Pod) bool {
	return disrupted(pod) && pod.DeletionTimestamp == nil && !isTerminal(st.Phase) && !runAccepted(st)
}

// lossCause says how pod was lost, from what Kubernetes left on it: the
// DisruptionTarget condition (eviction, drain, taint manager, preemption), the pod's
// reason (NodeLost), else a deletion.
func lossCause(name string, pod *corev1.Pod) string {
	if pod == nil {
		return fmt.Sprintf("capture pod %s is gone (deleted)", name)
	}
	if c := podCondition(pod, corev1.DisruptionTarget); c != nil && c.Status == corev1.ConditionTrue {
		return fmt.Sprintf("capture pod %s was evicted (%s%s)", pod.Name, c.Reason, msgSuffix(c.Message))
	}
	if pod.Status.Reason != "" {
		return fmt.Sprintf("capture pod %s was lost (%s%s)", pod.Name, pod.Status.Reason, msgSuffix(pod.Status.Message))
	}
	return fmt.Sprintf("capture pod %s was deleted", pod.Name)
}

// interruption describes a lost run for status and events: why, and what it had done.
func interruption(old ringcapv1.RingCaptureStatus, pod *corev1.Pod) string {
	return fmt.Sprintf("%s while %s, after receiving %s in %d observations", lossCause(old.Pod, pod), old.Phase,
		HumanBytes(lostBytes(old, pod)), old.Observations)
}

// lostBytes is what the lost run received: the last numbers read, or the receiver's
// final summary when it could still write one.
func lostBytes(old ringcapv1.RingCaptureStatus, pod *corev1.Pod) int64 {
	if s := terminationSummary(pod); s != nil && apiInt64(s.BytesReceived) > old.BytesReceived {
		return apiInt64(s.BytesReceived)
	}
	return old.BytesReceived
}

// restartedRun is the status after an interrupted run (interruptionPolicy Restart):
// the lost run in lastRun, one more restart, nothing of its numbers. The running
// configuration stays: the next pod runs the same spec unless it changed.
func restartedRun(old ringcapv1.RingCaptureStatus, pod *corev1.Pod, now metav1.Time) ringcapv1.RingCaptureStatus {
	msg := interruption(old, pod) + fmt.Sprintf("; a new pod starts (restart %d)", old.Restarts+1)
	st := newRunStatus(old)
	st.Running, st.Restarts = old.Running, old.Restarts+1
	st.LastRun = &ringcapv1.RunSummary{Phase: old.Phase, Reason: ringcapv1.ReasonRunInterrupted, Message: msg,
		BytesReceived: lostBytes(old, pod), Observations: old.Observations,
		StartTime: old.StartTime.DeepCopy(), CompletionTime: &now}
	if old.Running != nil {
		st.LastRun.Generation = old.Running.Generation
	}
	return st
}

// interruptedFailure is the failure of a run that lost its pod (interruptionPolicy Fail).
func interruptedFailure(old ringcapv1.RingCaptureStatus, pod *corev1.Pod) failure {
	return failure{causeInterrupted, interruption(old, pod) + "; spec.interruptionPolicy is Fail: a new pod starts when the spec changes"}
}

func interruptionPolicy(rc *ringcapv1.RingCapture) ringcapv1.InterruptionPolicy {
	if rc.Spec.InterruptionPolicy == "" {
		return ringcapv1.InterruptionRestart
	}
	return rc.Spec.InterruptionPolicy
}

// startDeadline is spec.startDeadlineSeconds as a duration.
func startDeadline(rc *ringcapv1.RingCapture) time.Duration {
	s := int32(ringcapv1.DefaultStartDeadlineSeconds)
	if d := rc.Spec.StartDeadlineSeconds; d != nil && *d > 0 {
		s = *d
	}
	return time.Duration(s) * time.Second
}

// scheduledAt is when pod was bound to its node (its PodScheduled condition), or
// created when it carries no such condition; zero without a node (or either time).
func scheduledAt(pod *corev1.Pod) time.Time {
	if pod == nil || pod.Spec.NodeName == "" {
		return time.Time{}
	}
	if c := podCondition(pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
		return c.LastTransitionTime.Time
	}
	return pod.CreationTimestamp.Time
}

// receiverUp says whether the receiver said it is past its start: listening,
// receiving or finished.
func receiverUp(rs *statusdoc.Status) bool {
	return rs != nil && (rs.State == statusdoc.StateListening || rs.State == statusdoc.StateReceiving || rs.State == statusdoc.StateFinished)
}

// startDeadlineFailure is the failure of a run whose pod is on a node and whose
// receiver has not listened within the start deadline, saying what it still waited
// for (nil when the deadline has not passed or does not apply).
func startDeadlineFailure(rc *ringcapv1.RingCapture, v verdict, rs *statusdoc.Status, in Observed) *failure {
	at := scheduledAt(in.Pod)
	if v.phase != ringcapv1.PhaseScheduled || v.ended || receiverUp(rs) || at.IsZero() {
		return nil
	}
	d := startDeadline(rc)
	if in.Now.Sub(at) < d {
		return nil
	}
	waiting := v.notReadyMsg
	if waiting == "" {
		waiting = receiverUnknown(in)
		if rs != nil {
			waiting = "receiver is " + rs.State + msgSuffix(rs.Message)
		}
	}
	return &failure{causeStartDeadline, fmt.Sprintf("the receiver did not listen within %s (spec.startDeadlineSeconds) of the pod's scheduling on node %s at %s: %s",
		d, in.Pod.Spec.NodeName, at.UTC().Format(time.RFC3339), waiting)}
}

// startDeadlineLeft is how long a scheduled run has left to start (ok false when its
// deadline does not apply: no node yet, or the receiver is up or the run over).
func startDeadlineLeft(rc *ringcapv1.RingCapture, pod *corev1.Pod, st ringcapv1.RingCaptureStatus, now time.Time) (time.Duration, bool) {
	at := scheduledAt(pod)
	if st.Phase != ringcapv1.PhaseScheduled || at.IsZero() || pod.DeletionTimestamp != nil {
		return 0, false
	}
	return max(at.Add(startDeadline(rc)).Sub(now), 0), true
}

// unstartedPod says whether pod has accepted no data and may be replaced at once by a
// spec change: it runs an older generation, is not finished or deleting, its receiver
// has not exited, and the status (which describes this pod's run) has seen no data.
// (The receiver may still have to confirm: see RingCaptureReconciler.receiverIdle.)
func unstartedPod(rc *ringcapv1.RingCapture, pod *corev1.Pod) bool {
	st := rc.Status
	return podGeneration(pod) != rc.Generation && pod.DeletionTimestamp == nil && !podFinished(pod) &&
		receiverTerminated(pod) == nil && !isTerminal(st.Phase) && !runAccepted(st) &&
		(st.Running == nil || st.Running.Generation == podGeneration(pod))
}

// receiverRunning says whether the receiver container runs (it may then have data).
func receiverRunning(pod *corev1.Pod) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == ringcapv1.ReceiverContainerName {
			return cs.State.Running != nil
		}
	}
	return false
}

// idle says whether a receiver's /status shows no data accepted.
func idle(rs *statusdoc.Status) bool {
	return rs.BytesReceived == 0 && rs.Observations == 0 && rs.State != statusdoc.StateReceiving && rs.State != statusdoc.StateFinished
}

// nodeNotReady says whether the pod's node stopped reporting: the node lifecycle
// controller sets the pod's Ready condition False (and leaves ContainersReady True,
// which only the kubelet sets) when the node goes NotReady or unreachable.
func nodeNotReady(pod *corev1.Pod) (string, bool) {
	if pod == nil || pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil {
		return "", false
	}
	ready, containers := podCondition(pod, corev1.PodReady), podCondition(pod, corev1.ContainersReady)
	if ready == nil || ready.Status != corev1.ConditionFalse || containers == nil || containers.Status != corev1.ConditionTrue {
		return "", false
	}
	return fmt.Sprintf("node %s stopped reporting (the pod is marked not ready since %s, its containers were ready): the receiver's numbers may be stale and the pod is evicted if the node stays away",
		pod.Spec.NodeName, ready.LastTransitionTime.UTC().Format(time.RFC3339)), true
}

// receiverStale says whether the receiver's /status has not answered for longer than
// in.StaleAfter: its last numbers are then no evidence that it still listens.
func receiverStale(in Observed) bool {
	return in.ReceiverError != "" && in.StaleAfter > 0 && !in.ReceiverReadAt.IsZero() && in.Now.Sub(in.ReceiverReadAt.Time) > in.StaleAfter
}

// judgeReachability notes a node that stopped reporting and a receiver that stopped
// answering: the capture is then not Ready, whatever the last good read said.
func judgeReachability(v *verdict, in Observed) {
	if v.failed || v.ended {
		return
	}
	if msg, ok := nodeNotReady(in.Pod); ok {
		v.notReadyReason, v.notReadyMsg = ringcapv1.ReasonNodeNotReady, msg
		return
	}
	if receiverStale(in) {
		v.notReadyReason, v.notReadyMsg = ringcapv1.ReasonReceiverUnreachable, staleMessage(in)
	}
}

func staleMessage(in Observed) string {
	return fmt.Sprintf("the receiver's /status has not answered since %s (%s ago): %s; the numbers are from then",
		in.ReceiverReadAt.UTC().Format(time.RFC3339), in.Now.Sub(in.ReceiverReadAt.Time).Round(time.Second), in.ReceiverError)
}

// interrupted returns the message of an interruption next records over prev: a new
// restart, or a run failed by one ("" when neither).
func interrupted(prev, next ringcapv1.RingCaptureStatus) string {
	if next.Restarts > prev.Restarts && next.LastRun != nil {
		return next.LastRun.Message
	}
	n := apimeta.FindStatusCondition(next.Conditions, ringcapv1.ConditionFailed)
	o := apimeta.FindStatusCondition(prev.Conditions, ringcapv1.ConditionFailed)
	if n != nil && n.Reason == ringcapv1.ReasonRunInterrupted && (o == nil || o.Reason != n.Reason) {
		return n.Message
	}
	return ""
}
