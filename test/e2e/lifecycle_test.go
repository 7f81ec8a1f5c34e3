//go:build e2e

package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Issue 51 items 3, 4 and 5: a capture's status through the lifecycles the happy path
// does not plan for.

// drainReader makes the capture's one reader read every observation of ring key to
// /dev/null, waiting up to 10 minutes for the ring and each header (the sample's reader
// reads ring dada once).
func drainReader(u *unstructured.Unstructured, key string) {
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
		"name": "drain", "args": []any{"ring", "read", "-k", key, "--wait", "600s", "-o", "/dev/null"}}}, "spec", "readers")
}

// stepRefusedPod is item 4: a pod the API server refuses (its PriorityClass does not
// exist) leaves a status with the API server's message, and the capture starts by
// itself once the PriorityClass exists.
func stepRefusedPod(t *testing.T) {
	ctx := context.Background()
	const class = "ringcap-e2e-late"
	newCapture(t, "refused", "5ef", func(u *unstructured.Unstructured) {
		drainReader(u, "5ef")
		_ = unstructured.SetNestedField(u.Object, class, "spec", "priorityClassName")
	})
	u := waitCapture(t, "refused", 2*time.Minute, "PodRefused", func(u *unstructured.Unstructured) bool {
		st, reason, _ := condition(u, "Scheduled")
		return st == "False" && reason == "PodRefused"
	})
	if _, _, msg := condition(u, "Scheduled"); !strings.Contains(msg, "no PriorityClass with name "+class) || str(u, "status", "phase") != "Pending" {
		t.Errorf("phase %s, Scheduled message %q: want Pending with the API server's refusal", str(u, "status", "phase"), msg)
	}
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Value: 1000}
	if _, err := s.cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.cs.SchedulingV1().PriorityClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	waitCapture(t, "refused", 3*time.Minute, "started once the PriorityClass exists", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Listening"
	})
}

// stepEditUnstarted is item 5, first part: a capture unschedulable through a
// nodeSelector typo is fixed by editing it; the same edit shrinks the ring, which the
// API allows since the pod never held data.
func stepEditUnstarted(t *testing.T) {
	ctx := context.Background()
	newCapture(t, "typo", "7e0", func(u *unstructured.Unstructured) {
		drainReader(u, "7e0")
		_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"ringcap.io/rocev2": "typo"}, "spec", "nodeSelector")
	})
	waitCapture(t, "typo", 2*time.Minute, "Unschedulable", func(u *unstructured.Unstructured) bool {
		st, reason, _ := condition(u, "Scheduled")
		return st == "False" && reason == "Unschedulable"
	})
	patch := []byte(`{"spec":{"nodeSelector":null,"ring":{"blocks":4}}}`)
	if _, err := s.dyn.Resource(gvrRingCapture).Namespace(testNamespace).Patch(ctx, "typo", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("fix the nodeSelector and shrink the ring of a capture whose pod never ran: %v", err)
	}
	u := waitCapture(t, "typo", 3*time.Minute, "Listening with the edited spec", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Listening" && num(u, "status", "running", "blocks") == 4
	})
	if st, _, msg := condition(u, "ChangePending"); st != "False" {
		t.Errorf("ChangePending %s (%s) after the edit was applied", st, msg)
	}
	if evs, err := captureEvents(ctx, "typo"); err != nil || !slices.Contains(evs, "PodReplaced") {
		t.Errorf("events %v (%v), want PodReplaced", evs, err)
	}
}

// stepStartDeadline is item 5, second part: a receiver image that cannot be pulled is
// named in the status with the pull error, and past spec.startDeadlineSeconds the
// capture fails and its pod is stopped, which releases the RDMA unit.
func stepStartDeadline(t *testing.T) {
	newCapture(t, "nopull", "901", func(u *unstructured.Unstructured) {
		drainReader(u, "901")
		_ = unstructured.SetNestedField(u.Object, "registry.invalid/ringcap:typo", "spec", "images", "receiver")
		_ = unstructured.SetNestedField(u.Object, int64(90), "spec", "startDeadlineSeconds")
	})
	u := waitCapture(t, "nopull", 90*time.Second, "the pull error reported", func(u *unstructured.Unstructured) bool {
		_, reason, _ := condition(u, "Ready")
		return reason == "ContainerWaiting"
	})
	if _, _, msg := condition(u, "Ready"); !strings.Contains(msg, "registry.invalid/ringcap:typo") {
		t.Errorf("Ready message %q does not name the image", msg)
	}
	u = waitCapture(t, "nopull", 3*time.Minute, "Failed", func(u *unstructured.Unstructured) bool { return str(u, "status", "phase") == "Failed" })
	if _, reason, msg := condition(u, "Failed"); reason != "StartDeadlineExceeded" || !strings.Contains(msg, "registry.invalid/ringcap:typo") {
		t.Errorf("Failed %s: %q, want StartDeadlineExceeded naming the image", reason, msg)
	}
	waitPod(t, str(u, "status", "pod"), 2*time.Minute, "the pod stopped (its RDMA unit released)", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed
	})
}

// streamingCapture creates a capture that runs until deleted with a reader that reads
// every observation, starts a long sender and waits until data arrives; it returns the
// capture pod's name.
func streamingCapture(t *testing.T, name, key, policy string) string {
	t.Helper()
	newCapture(t, name, key, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"after": "Never"}, "spec", "receiver", "stop")
		_ = unstructured.SetNestedField(u.Object, policy, "spec", "interruptionPolicy")
		drainReader(u, key)
	})
	u := waitCapture(t, name, 3*time.Minute, "Listening", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Listening" && str(u, "status", "endpoint", "address") != ""
	})
	sender := senderPod(name+"-sender", u, "--qps 4 --mode send --msg-bytes 65536 --duration 10m --rate-gbps 0.2 --seed 1")
	if _, err := s.cs.CoreV1().Pods(testNamespace).Create(context.Background(), sender, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePodAndWait(t, testNamespace, sender.Name) })
	u = waitCapture(t, name, 3*time.Minute, "Receiving", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Receiving" && num(u, "status", "bytesReceived") > 0
	})
	return str(u, "status", "pod")
}

// stepPodDeleted is item 3 (kubectl delete pod, interruptionPolicy Restart): the run is
// recorded as interrupted with what it had received, a Warning event says so, the
// restart is counted and a new pod listens.
func stepPodDeleted(t *testing.T) {
	ctx := context.Background()
	podName := streamingCapture(t, "lost", "105", "Restart")
	first, err := s.cs.CoreV1().Pods(testNamespace).Get(ctx, podName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cs.CoreV1().Pods(testNamespace).Delete(ctx, podName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	u := waitCapture(t, "lost", 3*time.Minute, "the interrupted run recorded and a new pod listening", func(u *unstructured.Unstructured) bool {
		return num(u, "status", "restarts") == 1 && str(u, "status", "phase") == "Listening"
	})
	if str(u, "status", "lastRun", "reason") != "RunInterrupted" || num(u, "status", "lastRun", "bytesReceived") == 0 ||
		!strings.Contains(str(u, "status", "lastRun", "message"), "was deleted while Receiving") {
		t.Errorf("lastRun %v, want the interrupted run with its bytes", u.Object["status"].(map[string]any)["lastRun"])
	}
	if next, err := s.cs.CoreV1().Pods(testNamespace).Get(ctx, str(u, "status", "pod"), metav1.GetOptions{}); err != nil || next.UID == first.UID {
		t.Errorf("no new capture pod after the deletion (%v)", err)
	}
	if evs, err := captureEvents(ctx, "lost"); err != nil || !slices.Contains(evs, "RunInterrupted") {
		t.Errorf("events %v (%v), want RunInterrupted", evs, err)
	}
}

// stepPodEvicted is item 3 (kubectl drain's eviction, interruptionPolicy Fail): the
// capture fails with RunInterrupted saying the pod was evicted, and no new pod starts.
func stepPodEvicted(t *testing.T) {
	ctx := context.Background()
	podName := streamingCapture(t, "evicted", "e71", "Fail")
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: testNamespace}}
	if err := s.cs.PolicyV1().Evictions(testNamespace).Evict(ctx, ev); err != nil {
		t.Fatalf("evict %s: %v", podName, err)
	}
	u := waitCapture(t, "evicted", 3*time.Minute, "Failed", func(u *unstructured.Unstructured) bool { return str(u, "status", "phase") == "Failed" })
	if _, reason, msg := condition(u, "Failed"); reason != "RunInterrupted" || !strings.Contains(msg, "evicted") {
		t.Errorf("Failed %s: %q, want RunInterrupted saying the pod was evicted", reason, msg)
	}
	waitFailedCapture(t, "evicted", 2*time.Minute, "the evicted pod gone", func(u *unstructured.Unstructured) bool { return str(u, "status", "pod") == "" })
	if pods := capturePods(t, "evicted"); len(pods) != 0 {
		t.Errorf("pods %v after a failed interruption, want none", podNames(pods))
	}
}

// stepNodeNotReady is item 3's node: the kubelet stopped (SIGSTOP, so that its
// supervisor does not start another) until the node lifecycle controller marks the
// node's pods not ready; the capture's Ready goes False (NodeNotReady) instead of
// keeping the last good /status read. The kubelet is continued before the pod
// eviction timeout (5 min), and Ready comes back.
func stepNodeNotReady(t *testing.T) {
	ctx := context.Background()
	newCapture(t, "nodegone", "a0d", func(u *unstructured.Unstructured) {
		drainReader(u, "a0d")
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"after": "Never"}, "spec", "receiver", "stop")
	})
	waitCapture(t, "nodegone", 3*time.Minute, "Ready", func(u *unstructured.Unstructured) bool {
		st, _, _ := condition(u, "Ready")
		return st == "True"
	})
	pauser := shellPod("kubelet-pause", `p=$(pidof kubelet) || exit 1; trap 'kill -CONT $p' EXIT TERM INT; kill -STOP $p; echo "stopped kubelet $p"; sleep 100; echo continued`)
	pauser.Spec.HostPID = true
	pauser.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	if _, err := s.cs.CoreV1().Pods(testNamespace).Create(ctx, pauser, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePodAndWait(t, testNamespace, pauser.Name) })
	waitCapture(t, "nodegone", 3*time.Minute, "not Ready on a node that stopped reporting", func(u *unstructured.Unstructured) bool {
		st, reason, _ := condition(u, "Ready")
		return st == "False" && reason == "NodeNotReady"
	})
	waitCapture(t, "nodegone", 4*time.Minute, "Ready again once the kubelet continues", func(u *unstructured.Unstructured) bool {
		st, _, _ := condition(u, "Ready")
		return st == "True"
	})
}
