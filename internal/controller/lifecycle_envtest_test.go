//go:build envtest

package controller_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/internal/controller"
)

// A pod the API server refuses (here: its PriorityClass does not exist) leaves a
// status that says so, with the API server's message, and the capture recovers by
// itself once the cause is fixed: nothing the operator watches changes then, so it
// must have kept trying.
func TestPodRefusedThenRecovers(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "refused")
	const class = "ringcap-test-refused"
	newCapture(t, ns, "prio", func(rc *ringcapv1.RingCapture) { rc.Spec.PriorityClassName = class })
	rc := waitCapture(t, ns, "prio", "the refusal in the status", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionScheduled, metav1.ConditionFalse, ringcapv1.ReasonPodRefused)
	})
	if rc.Status.Phase != ringcapv1.PhasePending {
		t.Errorf("phase %q, want Pending", rc.Status.Phase)
	}
	if msg := condition(rc, ringcapv1.ConditionScheduled).Message; !strings.Contains(msg, "no PriorityClass with name "+class) {
		t.Errorf("Scheduled message %q does not carry the API server's refusal", msg)
	}
	if c := condition(rc, ringcapv1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != ringcapv1.ReasonPodRefused {
		t.Errorf("Ready %s/%s, want False/PodRefused", c.Status, c.Reason)
	}
	waitEvent(t, ns, "prio", ringcapv1.ReasonPodCreateFailed, corev1.EventTypeWarning)

	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Value: 1000}
	if err := env.Client.Create(context.Background(), pc); err != nil {
		t.Fatalf("create PriorityClass %s: %v", class, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pc) })
	pod := waitPod(t, ns, "prio")
	if pod.Spec.PriorityClassName != class {
		t.Errorf("pod priorityClassName %q, want %q", pod.Spec.PriorityClassName, class)
	}
	waitCapture(t, ns, "prio", "the pod waiting for the scheduler", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionScheduled, metav1.ConditionFalse, ringcapv1.ReasonPodPending)
	})
}

// A capture whose pod never ran is fixed by editing it: the edit replaces the pod at
// once (it has accepted no data), including a smaller ring, which the API refuses only
// once a pod holds data.
func TestEditReplacesUnstartedPod(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "unstarted")
	newCapture(t, ns, "typo", func(rc *ringcapv1.RingCapture) { rc.Spec.NodeSelector = map[string]string{"ringcap.io/rocev2": "true"} })
	pod := waitPod(t, ns, "typo")
	updatePodStatus(t, pod, func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}}
	})
	waitCapture(t, ns, "typo", "Unschedulable", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionScheduled, metav1.ConditionFalse, ringcapv1.ReasonUnschedulable)
	})

	rc := getCapture(t, ns, "typo")
	rc.Spec.NodeSelector, rc.Spec.Ring.Blocks = nil, 2
	if err := env.Client.Update(context.Background(), rc); err != nil {
		t.Fatalf("fix the nodeSelector and shrink the ring of a capture whose pod never ran: %v", err)
	}
	var fresh corev1.Pod
	if err := waitFor(waitTimeout, func() (bool, string) {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), &fresh)
		if err != nil {
			return false, err.Error()
		}
		gen := fresh.Annotations[controller.AnnotationGeneration]
		return gen == strconv.FormatInt(rc.Generation, 10), "pod of generation " + gen
	}); err != nil {
		t.Fatalf("waiting for the pod of generation %d: %v", rc.Generation, err)
	}
	if fresh.Spec.NodeSelector["ringcap.io/rocev2"] != "" || !slicesContain(fresh.Spec.Containers[0].Args, "-n", "2") {
		t.Errorf("new pod: nodeSelector %v, receiver args %q; want no typo and -n 2", fresh.Spec.NodeSelector, fresh.Spec.Containers[0].Args)
	}
	waitCapture(t, ns, "typo", "no change pending", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionChangePending, metav1.ConditionFalse, ringcapv1.ReasonNoChangePending) &&
			rc.Status.Running != nil && rc.Status.Running.Blocks == 2
	})
	waitEvent(t, ns, "typo", ringcapv1.ReasonPodReplaced, corev1.EventTypeNormal)
}

// slicesContain says whether args has name followed by value.
func slicesContain(args []string, name, value string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name && args[i+1] == value {
			return true
		}
	}
	return false
}

// A receiver image that cannot be pulled: the status names the image and the pull
// error, and past spec.startDeadlineSeconds (counted from the pod's scheduling) the
// capture fails and its pod is stopped, which releases its RDMA unit. The deadline is
// met by a reconcile the operator schedules itself: nothing else changes meanwhile.
func TestStartDeadlineFailsCapture(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "deadline")
	const deadline = 30
	newCapture(t, ns, "pull", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Images.Receiver, rc.Spec.StartDeadlineSeconds = "registry.invalid/ringcap:typo", ptr(int32(deadline))
	})
	pod := waitPod(t, ns, "pull")
	bindPod(t, pod, "node-a")
	// Scheduled deadline-3 s ago, as the scheduler would have stamped it; the kubelet
	// started the pod and fails to pull the image.
	updatePodStatus(t, pod, func(p *corev1.Pod) {
		at := metav1.NewTime(time.Now().Add(-(deadline - 3) * time.Second))
		p.Status.StartTime = &at
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "receiver", Image: "registry.invalid/ringcap:typo", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "registry.invalid/ringcap:typo": not found`}}}}
	})
	rc := waitCapture(t, ns, "pull", "the pull error in the status", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionFalse, ringcapv1.ReasonContainerWaiting) ||
			rc.Status.Phase == ringcapv1.PhaseFailed
	})
	if msg := condition(rc, ringcapv1.ConditionReady).Message; !strings.Contains(msg, "image registry.invalid/ringcap:typo") || !strings.Contains(msg, "ImagePullBackOff") {
		t.Errorf("Ready message %q does not name the image and the pull error", msg)
	}
	rc = waitCapture(t, ns, "pull", "Failed at the start deadline", func(rc *ringcapv1.RingCapture) bool { return rc.Status.Phase == ringcapv1.PhaseFailed })
	c := condition(rc, ringcapv1.ConditionFailed)
	if c.Reason != ringcapv1.ReasonStartDeadlineExceeded || !strings.Contains(c.Message, "did not listen within 30s") || !strings.Contains(c.Message, "ImagePullBackOff") {
		t.Errorf("Failed condition %s: %q, want StartDeadlineExceeded naming the deadline and the pull error", c.Reason, c.Message)
	}
	stopped := &corev1.Pod{}
	if err := waitFor(waitTimeout, func() (bool, string) {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), stopped); err != nil {
			return false, err.Error()
		}
		return stopped.Spec.ActiveDeadlineSeconds != nil, "activeDeadlineSeconds not set"
	}); err != nil {
		t.Fatalf("the pod of a capture past its start deadline is not stopped (its RDMA unit stays allocated): %v", err)
	}
}

// receivingPod makes the capture's pod bound, running and its receiver receiving, and
// waits for the status to say so.
func receivingPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	pod := waitPod(t, ns, name)
	bindPod(t, pod, "node-a")
	rs := receiverStatus("Receiving", 8<<20)
	rs.Observations = 2
	receivers.Set(ns, pod.Name, rs)
	pod = runPod(t, pod, "10.88.0.30")
	waitCapture(t, ns, name, "Receiving", func(rc *ringcapv1.RingCapture) bool {
		return rc.Status.Phase == ringcapv1.PhaseReceiving && rc.Status.BytesReceived == 8<<20
	})
	return pod
}

// forceDelete finishes a pod's deletion as the kubelet would once its containers are
// gone, and waits until it is gone.
func forceDelete(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	err := env.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("delete pod %s: %v", pod.Name, err)
	}
	if err := waitFor(waitTimeout, func() (bool, string) {
		cur := &corev1.Pod{}
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), cur)
		return apierrors.IsNotFound(err) || (err == nil && cur.UID != pod.UID), fmt.Sprint(err)
	}); err != nil {
		t.Fatalf("pod %s not gone: %v", pod.Name, err)
	}
}

// kubectl delete pod on a receiving capture: the interrupted run is recorded (bytes,
// observations, why, when) in status.lastRun with a Warning event, the restart is
// counted, and a new pod of the same spec starts with its own numbers.
func TestPodDeletedMidRunRestarts(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "deleted")
	newCapture(t, ns, "obs", nil)
	pod := receivingPod(t, ns, "obs")

	if err := env.Client.Delete(context.Background(), pod); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	rc := waitCapture(t, ns, "obs", "the interrupted run recorded", func(rc *ringcapv1.RingCapture) bool { return rc.Status.Restarts == 1 })
	lr := rc.Status.LastRun
	if lr == nil || lr.Reason != ringcapv1.ReasonRunInterrupted || lr.BytesReceived != 8<<20 || lr.Observations != 2 ||
		lr.Phase != ringcapv1.PhaseReceiving || lr.CompletionTime == nil || !strings.Contains(lr.Message, "was deleted while Receiving") {
		t.Errorf("lastRun %+v, want the interrupted run: RunInterrupted, 8 MiB, 2 observations, when and why", lr)
	}
	if rc.Status.BytesReceived != 0 || rc.Status.Phase != ringcapv1.PhasePending {
		t.Errorf("status after the interruption: phase %s, %d bytes; want Pending with the new run's 0", rc.Status.Phase, rc.Status.BytesReceived)
	}
	if e := waitEvent(t, ns, "obs", ringcapv1.ReasonRunInterrupted, corev1.EventTypeWarning); !strings.Contains(e.Note, "8.00 MiB in 2 observations") {
		t.Errorf("RunInterrupted event %q does not say what was lost", e.Note)
	}

	receivers.Set(ns, pod.Name, receiverStatus("Listening", 0))
	forceDelete(t, pod) // the kubelet's part
	next := waitPod(t, ns, "obs")
	if next.UID == pod.UID {
		next = waitNewPod(t, pod)
	}
	bindPod(t, next, "node-a")
	runPod(t, next, "10.88.0.31")
	rc = waitCapture(t, ns, "obs", "the new pod listening", func(rc *ringcapv1.RingCapture) bool { return rc.Status.Phase == ringcapv1.PhaseListening })
	if rc.Status.Restarts != 1 || rc.Status.LastRun == nil || rc.Status.LastRun.BytesReceived != 8<<20 {
		t.Errorf("after the restart: restarts %d, lastRun %+v; want 1 and the interrupted run", rc.Status.Restarts, rc.Status.LastRun)
	}
}

// The kubelet's node-pressure eviction ends the pod (Failed, reason Evicted, a
// DisruptionTarget condition) rather than deleting it: with interruptionPolicy Restart
// the run is recorded as interrupted, not failed, and the operator deletes the evicted
// pod to start another.
func TestKubeletEvictionRestarts(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "pressure")
	newCapture(t, ns, "obs", nil)
	pod := receivingPod(t, ns, "obs")
	updatePodStatus(t, pod, func(p *corev1.Pod) {
		p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "TerminationByKubelet", Message: "The node was low on resource: memory."})
	})
	next := waitNewPod(t, pod)
	rc := getCapture(t, ns, "obs")
	if rc.Status.Phase == ringcapv1.PhaseFailed || rc.Status.Restarts != 1 || rc.Status.LastRun == nil ||
		!strings.Contains(rc.Status.LastRun.Message, "evicted (TerminationByKubelet") {
		t.Errorf("after the eviction: phase %s restarts %d lastRun %+v; want a restart with the interrupted run", rc.Status.Phase, rc.Status.Restarts, rc.Status.LastRun)
	}
	if next.Annotations[controller.AnnotationGeneration] != pod.Annotations[controller.AnnotationGeneration] {
		t.Errorf("the new pod runs generation %s, want the same spec's %s", next.Annotations[controller.AnnotationGeneration], pod.Annotations[controller.AnnotationGeneration])
	}
}

// waitNewPod waits for the capture pod that replaces old.
func waitNewPod(t *testing.T, old *corev1.Pod) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	if err := waitFor(waitTimeout, func() (bool, string) {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(old), pod)
		return err == nil && pod.UID != old.UID, fmt.Sprint(err)
	}); err != nil {
		t.Fatalf("no pod replaced %s: %v", old.Name, err)
	}
	return pod
}

// kubectl drain (the Eviction API) on a receiving capture with interruptionPolicy
// Fail: the capture fails with reason RunInterrupted, saying it was evicted, and no
// new pod starts.
func TestPodEvictedMidRunFails(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "evicted")
	newCapture(t, ns, "obs", func(rc *ringcapv1.RingCapture) { rc.Spec.InterruptionPolicy = ringcapv1.InterruptionFail })
	pod := receivingPod(t, ns, "obs")

	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}}
	if err := env.Client.SubResource("eviction").Create(context.Background(), pod, ev); err != nil {
		t.Fatalf("evict pod: %v", err)
	}
	rc := waitCapture(t, ns, "obs", "Failed", func(rc *ringcapv1.RingCapture) bool { return rc.Status.Phase == ringcapv1.PhaseFailed })
	c := condition(rc, ringcapv1.ConditionFailed)
	if c.Reason != ringcapv1.ReasonRunInterrupted || !strings.Contains(c.Message, "evicted") || !strings.Contains(c.Message, "8.00 MiB in 2 observations") {
		t.Errorf("Failed condition %s: %q, want RunInterrupted saying the pod was evicted and what was lost", c.Reason, c.Message)
	}
	if rc.Status.BytesReceived != 8<<20 || rc.Status.Restarts != 0 {
		t.Errorf("bytesReceived %d restarts %d, want the run's 8 MiB and no restart", rc.Status.BytesReceived, rc.Status.Restarts)
	}
	waitEvent(t, ns, "obs", ringcapv1.ReasonRunInterrupted, corev1.EventTypeWarning)

	forceDelete(t, pod)
	waitCapture(t, ns, "obs", "the pod's end seen", func(rc *ringcapv1.RingCapture) bool { return rc.Status.Pod == "" })
	if pods := ownedPods(t, rc); len(pods) != 0 {
		t.Errorf("%d pods after a failed interruption, want none until the spec changes", len(pods))
	}
}

// A node that stops reporting (the node lifecycle controller marks its pods not
// ready) and a receiver whose /status stops answering: Ready goes False instead of
// keeping the last good read.
func TestNodeNotReadyAndStaleStatus(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "nodelost")
	newCapture(t, ns, "obs", nil)
	pod := receivingPod(t, ns, "obs")
	waitCapture(t, ns, "obs", "Ready", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionTrue, ringcapv1.ReasonReceiverReady)
	})
	setPodReady := func(ready corev1.ConditionStatus) {
		updatePodStatus(t, pod, func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.Now()},
			}
		})
	}
	setPodReady(corev1.ConditionFalse) // what MarkPodsNotReady does when the node goes NotReady
	rc := waitCapture(t, ns, "obs", "not Ready on a node that stopped reporting", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionFalse, ringcapv1.ReasonNodeNotReady)
	})
	if msg := condition(rc, ringcapv1.ConditionReady).Message; !strings.Contains(msg, "node node-a stopped reporting") {
		t.Errorf("Ready message %q does not name the node", msg)
	}
	setPodReady(corev1.ConditionTrue)
	waitCapture(t, ns, "obs", "Ready again", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionTrue, ringcapv1.ReasonReceiverReady)
	})

	receivers.Remove(ns, pod.Name) // /status stops answering
	rc = waitCapture(t, ns, "obs", "receiver unreachable", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionReceiverReady, metav1.ConditionUnknown, ringcapv1.ReasonReceiverUnreachable)
	})
	if !conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionFalse, ringcapv1.ReasonReceiverUnreachable) {
		t.Errorf("Ready %+v with a receiver that stopped answering", condition(rc, ringcapv1.ConditionReady))
	}
}

// Remove makes a receiver's /status fail.
func (f *fakeReceivers) Remove(ns, pod string) {
	f.mu.Lock()
	delete(f.st, ns+"/"+pod)
	f.mu.Unlock()
}
