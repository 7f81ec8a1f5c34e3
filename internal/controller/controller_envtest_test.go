//go:build envtest

package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/internal/controller"
)

// The pod the operator creates, as stored by the API server (which validated it).
func TestPodSpec(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "podspec")
	newCapture(t, ns, "pulsar", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Ring = ringcapv1.RingSpec{Key: "0xeada", BlockBytes: 4 << 20, Blocks: 8, Readers: 2, HeaderBlockBytes: 4096,
			HugePages: true, Header: &ringcapv1.RingHeaderSpec{Template: "TELESCOPE Parkes\n", Values: map[string]ringcapv1.HeaderValue{"SOURCE": "J0437-4715"}}}
		rc.Spec.Receiver = ringcapv1.ReceiverSpec{Mode: ringcapv1.TransferModeWrite, QueuePairs: 8,
			Stop: ringcapv1.StopSpec{After: ringcapv1.StopBytes, Bytes: ptr(int64(1 << 30))}}
		rc.Spec.Readers = []ringcapv1.ReaderContainer{
			{Name: "verify", Args: []string{"ring", "read", "-k", "eada", "--wait", "60s", "--verify", "7", "-s"}},
			{Name: "dbdisk", Image: "psrdada:1", Command: []string{"dada_dbdisk"}, Args: []string{"-k", "eada", "-D", "/data", "-s"}},
		}
		rc.Spec.NodeSelector = map[string]string{"ringcap.io/roce-v2": "true"}
	})
	pod := waitPod(t, ns, "pulsar")
	rc := getCapture(t, ns, "pulsar")

	if !metav1.IsControlledBy(pod, rc) {
		t.Errorf("pod owner references %+v, want a controller reference to the RingCapture", pod.OwnerReferences)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("controller reference %+v should block owner deletion", ref)
	}
	names := []string{}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"receiver", "verify", "dbdisk"}) {
		t.Fatalf("containers %v, want receiver, verify, dbdisk", names)
	}
	recv := pod.Spec.Containers[0]
	if !slices.Equal(recv.Args, controller.ReceiverArgs(rc)) {
		t.Errorf("receiver args %q, want %q", recv.Args, controller.ReceiverArgs(rc))
	}
	for _, want := range []string{"recv -k eada --create -b 4194304 -n 8 -a 4096 -r 2 --hugepages", "--mode write", "--qps 8",
		"--stop-bytes 1073741824", "--header-file /etc/ringcap/header/header", "--header SOURCE=J0437-4715", "--metrics-addr :9100"} {
		if !strings.Contains(strings.Join(recv.Args, " "), want) {
			t.Errorf("receiver args %q lack %q", recv.Args, want)
		}
	}
	if recv.Image != "ringcap/ringcap:test" {
		t.Errorf("receiver image %s", recv.Image)
	}
	sc := recv.SecurityContext
	if sc == nil || sc.Privileged == nil || *sc.Privileged || !slices.Contains(sc.Capabilities.Add, "IPC_LOCK") {
		t.Errorf("receiver security context %+v: want unprivileged with IPC_LOCK", sc)
	}
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Error("capture pod mounts a service account token")
	}
	huge := recv.Resources.Limits["hugepages-2Mi"]
	if want := resource.MustParse("32Mi"); huge.Cmp(want) != 0 { // 8 x 4 MiB (the header blocks are in ordinary memory)
		t.Errorf("hugepages-2Mi limit %s, want %s", huge.String(), want.String())
	}
	if q := recv.Resources.Requests["ringcap.io/rdma"]; q.Value() != 1 {
		t.Errorf("ringcap.io/rdma request %s, want 1", q.String())
	}
	if q := recv.Resources.Limits[corev1.ResourceMemory]; q.Cmp(resource.MustParse("262176Ki")) != 0 {
		t.Errorf("memory limit %s, want 256Mi and the 8 header blocks of 4 KiB (the data blocks are in huge pages)", q.String())
	}
	if pod.Annotations[controller.AnnotationHeaderTemplate] != "TELESCOPE Parkes\n" || len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].DownwardAPI == nil {
		t.Errorf("header template not passed through a downward API volume: %v %+v", pod.Annotations, pod.Spec.Volumes)
	}
	verify := pod.Spec.Containers[1]
	if verify.Image != "ringcap/ringcap:test" || verify.Env[0].Name != controller.EnvRingKey || verify.Env[0].Value != "eada" {
		t.Errorf("reader verify: image %s env %+v", verify.Image, verify.Env)
	}
	if pod.Spec.Containers[2].Image != "psrdada:1" || !slices.Equal(pod.Spec.Containers[2].Command, []string{"dada_dbdisk"}) {
		t.Errorf("reader dbdisk %+v", pod.Spec.Containers[2])
	}
	if pod.Spec.NodeSelector["ringcap.io/roce-v2"] != "true" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("nodeSelector %v restartPolicy %s", pod.Spec.NodeSelector, pod.Spec.RestartPolicy)
	}

	rc = waitCapture(t, ns, "pulsar", "Pending with the pod recorded", func(rc *ringcapv1.RingCapture) bool {
		return rc.Status.Phase == ringcapv1.PhasePending && rc.Status.Pod == pod.Name &&
			conditionIs(rc, ringcapv1.ConditionScheduled, metav1.ConditionFalse, ringcapv1.ReasonPodPending)
	})
	if rc.Status.ObservedGeneration != rc.Generation {
		t.Errorf("observedGeneration %d, generation %d", rc.Status.ObservedGeneration, rc.Generation)
	}
	ev := waitEvent(t, ns, "pulsar", ringcapv1.ReasonPodCreated, corev1.EventTypeNormal)
	if !strings.Contains(ev.Note, "hugepages-2Mi") {
		t.Errorf("PodCreated event %q does not say what the pod requests", ev.Note)
	}
}

// Status follows the pod (scheduler, kubelet) and the receiver's /status.
func TestStatusTransitions(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "transitions")
	newCapture(t, ns, "obs1", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Readers = []ringcapv1.ReaderContainer{{Name: "reader", Args: []string{"ring", "read", "-k", "dada", "-s"}}}
	})
	pod := waitPod(t, ns, "obs1")

	// No node has the RDMA resource: the scheduler marks the pod unschedulable.
	updatePodStatus(t, pod, func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient ringcap.io/rdma.",
			LastTransitionTime: metav1.Now()}}
	})
	rc := waitCapture(t, ns, "obs1", "Unschedulable", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionScheduled, metav1.ConditionFalse, ringcapv1.ReasonUnschedulable) &&
			conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionFalse, ringcapv1.ReasonUnschedulable)
	})
	if msg := condition(rc, ringcapv1.ConditionScheduled).Message; !strings.Contains(msg, "Insufficient ringcap.io/rdma") {
		t.Errorf("Scheduled condition message %q does not say why", msg)
	}
	if rc.Status.Phase != ringcapv1.PhasePending {
		t.Errorf("phase %s, want Pending", rc.Status.Phase)
	}
	waitEvent(t, ns, "obs1", ringcapv1.ReasonUnschedulable, corev1.EventTypeWarning)

	// A node with the resource appears; the scheduler binds the pod.
	bindPod(t, pod, "node-a")
	waitCapture(t, ns, "obs1", "Scheduled on node-a", func(rc *ringcapv1.RingCapture) bool {
		return rc.Status.Phase == ringcapv1.PhaseScheduled && rc.Status.Node == "node-a" &&
			conditionIs(rc, ringcapv1.ConditionScheduled, metav1.ConditionTrue, ringcapv1.ReasonScheduled)
	})

	// The kubelet starts the containers; the receiver creates the ring and listens.
	receivers.Set(ns, pod.Name, receiverStatus("Starting", 0))
	pod = runPod(t, pod, "10.88.0.5")
	waitCapture(t, ns, "obs1", "receiver starting", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionReceiverReady, metav1.ConditionFalse, ringcapv1.ReasonReceiverNotReady) &&
			conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionFalse, ringcapv1.ReasonReceiverNotReady)
	})
	receivers.Set(ns, pod.Name, receiverStatus("Listening", 0))
	rc = waitCapture(t, ns, "obs1", "Ready", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionTrue, ringcapv1.ReasonReceiverReady)
	})
	if rc.Status.Phase != ringcapv1.PhaseListening {
		t.Errorf("phase %s while the receiver listens, want Listening", rc.Status.Phase)
	}
	if !conditionIs(rc, ringcapv1.ConditionRingReady, metav1.ConditionTrue, ringcapv1.ReasonRingCreated) ||
		!conditionIs(rc, ringcapv1.ConditionReceiverReady, metav1.ConditionTrue, "Listening") {
		t.Errorf("conditions %+v", rc.Status.Conditions)
	}
	ep := rc.Status.Endpoint
	if ep == nil || ep.Address != "10.88.0.5" || ep.Port != 18515 || ep.Device != "rxe0" || ep.GIDIndex == nil || *ep.GIDIndex != 1 || ep.GID != "::ffff:198.18.0.1" {
		t.Errorf("endpoint %+v", ep)
	}
	if mr := rc.Status.MemoryRegistration; mr == nil || mr.Mode != "WholeRing" || mr.Regions != 1 {
		t.Errorf("memoryRegistration %+v", mr)
	}
	waitEvent(t, ns, "obs1", ringcapv1.ReasonReceiverReady, corev1.EventTypeNormal)

	// Data arrives: no pod event happens, the operator's polling picks it up.
	receivers.Set(ns, pod.Name, receiverStatus("Receiving", 1<<30))
	rc = waitCapture(t, ns, "obs1", "Receiving 1 GiB", func(rc *ringcapv1.RingCapture) bool {
		return rc.Status.Phase == ringcapv1.PhaseReceiving && rc.Status.BytesReceived == 1<<30
	})
	if rc.Status.Received != "1.00 GiB" || rc.Status.Rate != "10.00 Gbit/s" || rc.Status.BlocksFilled != 2048 {
		t.Errorf("received %q rate %q blocks %d", rc.Status.Received, rc.Status.Rate, rc.Status.BlocksFilled)
	}
	if !conditionIs(rc, ringcapv1.ConditionReceiving, metav1.ConditionTrue, ringcapv1.ReasonReceiving) {
		t.Errorf("Receiving condition %+v", condition(rc, ringcapv1.ConditionReceiving))
	}
	waitEvent(t, ns, "obs1", ringcapv1.ReasonReceiving, corev1.EventTypeNormal)
	receivers.Set(ns, pod.Name, receiverStatus("Receiving", 3<<30))
	waitCapture(t, ns, "obs1", "Receiving 3 GiB", func(rc *ringcapv1.RingCapture) bool { return rc.Status.BytesReceived == 3<<30 })

	// The reader falls behind: the receiver waits for a free block and says since when.
	held := receiverStatus("Receiving", 3<<30)
	held.HeldBackSince = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)
	held.HeldBackSeconds = 61.5
	receivers.Set(ns, pod.Name, held)
	rc = waitCapture(t, ns, "obs1", "ReadersBehind", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionReadersBehind, metav1.ConditionTrue, ringcapv1.ReasonReadersBehind)
	})
	if msg := condition(rc, ringcapv1.ConditionReadersBehind).Message; !strings.Contains(msg, "ring dada") || rc.Status.HeldBackSeconds != 61 {
		t.Errorf("ReadersBehind %q heldBackSeconds %d, want the ring named and 61 s", msg, rc.Status.HeldBackSeconds)
	}
	waitEvent(t, ns, "obs1", ringcapv1.ReasonReadersBehind, corev1.EventTypeWarning)
	held.HeldBackSince = ""
	receivers.Set(ns, pod.Name, held)
	waitCapture(t, ns, "obs1", "readers caught up", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionReadersBehind, metav1.ConditionFalse, ringcapv1.ReasonReadersKeepingUp)
	})

	// The receiver meets its stop condition and exits with its summary; the reader
	// drains the ring and exits; the pod succeeds.
	summary := receiverStatus("Finished", 4<<30)
	summary.Observations, summary.CompletionTime = 1, "2026-11-21T15:10:00Z"
	b, _ := json.Marshal(summary)
	terminateContainers(t, pod, corev1.PodRunning, map[string]int32{"receiver": 0}, map[string]string{"receiver": string(b)})
	waitCapture(t, ns, "obs1", "readers draining", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionFalse, ringcapv1.ReasonReadersDraining) &&
			rc.Status.BytesReceived == 4<<30
	})
	terminateContainers(t, pod, corev1.PodSucceeded, map[string]int32{"reader": 0}, nil)
	rc = waitCapture(t, ns, "obs1", "Succeeded", func(rc *ringcapv1.RingCapture) bool {
		return rc.Status.Phase == ringcapv1.PhaseSucceeded
	})
	if rc.Status.BytesReceived != 4<<30 || rc.Status.Observations != 1 || rc.Status.CompletionTime == nil ||
		rc.Status.CompletionTime.UTC().Format("15:04:05") != "15:10:00" || rc.Status.RateBytesPerSecond != 0 {
		t.Errorf("final status %+v", rc.Status)
	}
	if !conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionFalse, ringcapv1.ReasonSucceeded) ||
		!conditionIs(rc, ringcapv1.ConditionFailed, metav1.ConditionFalse, ringcapv1.ReasonNotFailed) {
		t.Errorf("conditions after success %+v", rc.Status.Conditions)
	}
	waitEvent(t, ns, "obs1", ringcapv1.ReasonSucceeded, corev1.EventTypeNormal)

	// A finished capture is not run again, even when its pod is deleted.
	if err := env.Client.Delete(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(waitTimeout, func() (bool, string) {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), &corev1.Pod{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	}); err != nil {
		t.Fatal(err)
	}
	// Touch the RingCapture so the operator reconciles it again, then check.
	touch(t, rc)
	waitCapture(t, ns, "obs1", "reconciled after touch", func(rc *ringcapv1.RingCapture) bool {
		return rc.Status.Phase == ringcapv1.PhaseSucceeded && rc.Status.Pod == ""
	})
	if n := len(ownedPods(t, rc)); n != 0 {
		t.Errorf("%d pods after the finished capture's pod was deleted, want 0", n)
	}
}

// touch changes the RingCapture's metadata (not its spec, so the generation stays): the
// operator gets an event and reconciles. It is a merge patch without a resourceVersion
// precondition, so a status write by the operator in between cannot make it conflict.
func touch(t *testing.T, rc *ringcapv1.RingCapture) {
	t.Helper()
	cur := getCapture(t, rc.Namespace, rc.Name)
	base := cur.DeepCopy()
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	cur.Annotations["test/touch"] = fmt.Sprint(time.Now().UnixNano())
	if err := env.Client.Patch(context.Background(), cur, client.MergeFrom(base)); err != nil {
		t.Fatalf("touch %s: %v", rc.Name, err)
	}
}

func TestReceiverFailure(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "failure")
	newCapture(t, ns, "bad", nil)
	pod := waitPod(t, ns, "bad")
	bindPod(t, pod, "node-a")
	pod = runPod(t, pod, "10.88.0.9")
	summary := `{"version":1,"state":"Failed","message":"register memory region: cannot allocate memory (RLIMIT_MEMLOCK 8 MiB < ring 2 MiB)"}`
	terminateContainers(t, pod, corev1.PodFailed, map[string]int32{"receiver": 1}, map[string]string{"receiver": summary})
	rc := waitCapture(t, ns, "bad", "Failed", func(rc *ringcapv1.RingCapture) bool {
		return rc.Status.Phase == ringcapv1.PhaseFailed &&
			conditionIs(rc, ringcapv1.ConditionFailed, metav1.ConditionTrue, ringcapv1.ReasonReceiverFailed)
	})
	if msg := condition(rc, ringcapv1.ConditionFailed).Message; !strings.Contains(msg, "exited with code 1") || !strings.Contains(msg, "register memory region") {
		t.Errorf("Failed condition message %q", msg)
	}
	if !conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionFalse, ringcapv1.ReasonFailed) {
		t.Errorf("Ready %+v", condition(rc, ringcapv1.ConditionReady))
	}
	ev := waitEvent(t, ns, "bad", ringcapv1.ReasonFailed, corev1.EventTypeWarning)
	if !strings.Contains(ev.Note, "register memory region") {
		t.Errorf("Failed event %q", ev.Note)
	}
}

// Changing the spec of a finished capture runs it again in a new pod.
func TestSpecChangeAfterFinishRunsAgain(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "rerun")
	newCapture(t, ns, "again", nil)
	pod := waitPod(t, ns, "again")
	bindPod(t, pod, "node-a")
	pod = runPod(t, pod, "10.88.0.10")
	terminateContainers(t, pod, corev1.PodSucceeded, map[string]int32{"receiver": 0}, nil)
	waitCapture(t, ns, "again", "Succeeded", func(rc *ringcapv1.RingCapture) bool { return rc.Status.Phase == ringcapv1.PhaseSucceeded })

	rc := getCapture(t, ns, "again")
	base := rc.DeepCopy()
	rc.Spec.Ring.Blocks = 16
	if err := env.Client.Patch(context.Background(), rc, client.MergeFrom(base)); err != nil {
		t.Fatalf("change the finished capture's ring: %v", err)
	}
	var next corev1.Pod
	if err := waitFor(waitTimeout, func() (bool, string) {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), &next)
		return err == nil && next.UID != pod.UID, fmt.Sprint(err)
	}); err != nil {
		t.Fatalf("no new pod: %v", err)
	}
	if !strings.Contains(strings.Join(next.Spec.Containers[0].Args, " "), "-n 16") {
		t.Errorf("new pod args %q, want -n 16", next.Spec.Containers[0].Args)
	}
	rc = waitCapture(t, ns, "again", "Pending again", func(rc *ringcapv1.RingCapture) bool {
		return rc.Status.Phase == ringcapv1.PhasePending && rc.Status.ObservedGeneration == rc.Generation
	})
	if lr := rc.Status.LastRun; lr == nil || lr.Phase != ringcapv1.PhaseSucceeded || lr.Generation != rc.Generation-1 {
		t.Errorf("lastRun %+v, want the first run (generation %d) Succeeded", lr, rc.Generation-1)
	}
	waitEvent(t, ns, "again", ringcapv1.ReasonPodReplaced, corev1.EventTypeNormal)
}

// An operator restart adopts the existing pod instead of creating a second one.
func TestOperatorRestart(t *testing.T) {
	op := startOperator(t)
	ns := newNamespace(t, "restart")
	newCapture(t, ns, "survivor", nil)
	pod := waitPod(t, ns, "survivor")
	waitCapture(t, ns, "survivor", "pod recorded", func(rc *ringcapv1.RingCapture) bool { return rc.Status.Pod == pod.Name })
	op.Stop(t)

	// While the operator is down the pod gets scheduled and starts.
	bindPod(t, pod, "node-b")
	receivers.Set(ns, pod.Name, receiverStatus("Listening", 0))
	runPod(t, pod, "10.88.0.11")

	startOperator(t)
	rc := waitCapture(t, ns, "survivor", "Ready after the restart", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionReady, metav1.ConditionTrue, ringcapv1.ReasonReceiverReady) && rc.Status.Node == "node-b"
	})
	touch(t, rc) // one more reconcile by the new operator
	waitCapture(t, ns, "survivor", "reconciled", func(rc *ringcapv1.RingCapture) bool { return rc.Status.ObservedGeneration == rc.Generation })
	pods := ownedPods(t, rc)
	if len(pods) != 1 || pods[0].UID != pod.UID {
		t.Fatalf("after the restart: %d pods, want the original one (%s)", len(pods), pod.UID)
	}
}

// Deleting a RingCapture deletes its pod (through the controller reference and the
// garbage collector, as in a cluster).
func TestDeletionRemovesPod(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "deletion")
	rc := newCapture(t, ns, "short", nil)
	pod := waitPod(t, ns, "short")
	if err := env.Client.Delete(context.Background(), rc); err != nil {
		t.Fatal(err)
	}
	err := waitFor(waitTimeout, func() (bool, string) {
		p := &corev1.Pod{}
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), p)
		if apierrors.IsNotFound(err) || (err == nil && p.UID != pod.UID) {
			return true, ""
		}
		return false, fmt.Sprintf("pod still there (err %v)", err)
	})
	if err != nil {
		t.Fatalf("pod of the deleted RingCapture: %v\ngarbage collector log:\n%s", err, env.GarbageCollectorLog())
	}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("a pod came back after the RingCapture was deleted: %v", err)
	}
}

// A pod with the capture pod's name that the RingCapture does not own is left alone,
// and the conflict shows in the status and in an event.
func TestPodNameConflict(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "conflict")
	squatter := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: controller.PodName("taken")},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example/app:1"}}},
	}
	if err := env.Client.Create(context.Background(), squatter); err != nil {
		t.Fatal(err)
	}
	newCapture(t, ns, "taken", nil)
	rc := waitCapture(t, ns, "taken", "PodNameConflict", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionScheduled, metav1.ConditionFalse, ringcapv1.ReasonPodNameConflict)
	})
	if rc.Status.Phase != ringcapv1.PhasePending || rc.Status.Pod != "" {
		t.Errorf("status %+v", rc.Status)
	}
	waitEvent(t, ns, "taken", ringcapv1.ReasonPodNameConflict, corev1.EventTypeWarning)
	cur := &corev1.Pod{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(squatter), cur); err != nil || len(cur.OwnerReferences) != 0 {
		t.Errorf("the other pod was touched: %v %+v", err, cur.OwnerReferences)
	}
}
