//go:build envtest

package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
	"github.com/ringcap/ringcap/internal/controller"
	"github.com/ringcap/ringcap/internal/testenv"
)

// staleClient is the API client with a cache that has not seen the latest RingCapture
// yet: it returns stale for it, and everything else (writes included) from the API server.
type staleClient struct {
	client.Client
	stale *ringcapv1.RingCapture
}

func (c staleClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if rc, ok := obj.(*ringcapv1.RingCapture); ok && key == client.ObjectKeyFromObject(c.stale) {
		c.stale.DeepCopyInto(rc)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// drainEvents returns the events the fake recorder got so far ("Type Reason note").
func drainEvents(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// One scheduling, one Scheduled event: a reconcile that reads the RingCapture from a
// cache that has not seen the status write of the previous one computes the same
// transition again; its status write conflicts, and it must not announce the
// transition a second time. The reconciles are driven directly (no manager), so the
// stale read happens every time, not only when the timing makes it.
func TestScheduledEventOnceWithStaleCache(t *testing.T) {
	ns := newNamespace(t, "stale")
	newCapture(t, ns, "once", nil)
	rec := &events.FakeRecorder{Events: make(chan string, 100)}
	reconciler := func(c client.Client) *controller.RingCaptureReconciler {
		return &controller.RingCaptureReconciler{
			Client: c, APIReader: env.Client, Scheme: testenv.NewScheme(), Recorder: rec, Pods: controller.DefaultPodOptions(),
			Fetcher: &controller.HTTPStatusFetcher{Client: &http.Client{Timeout: 5 * time.Second}, URL: receivers.URL},
		}
	}
	r := reconciler(env.Client)
	req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "once"}}
	reconcile := func(r *controller.RingCaptureReconciler) ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(context.Background(), req)
		if err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		return res
	}
	reconcile(r) // creates the pod
	pod := waitPod(t, ns, "once")
	bindPod(t, pod, "node-a")
	before := getCapture(t, ns, "once") // what a lagging cache still holds
	reconcile(r)                        // Scheduled: status written, event
	if rc := getCapture(t, ns, "once"); rc.Status.Phase != ringcapv1.PhaseScheduled {
		t.Fatalf("phase %s after the pod was bound, want Scheduled", rc.Status.Phase)
	}
	if res := reconcile(reconciler(staleClient{Client: env.Client, stale: before})); res.RequeueAfter == 0 {
		t.Errorf("a reconcile from a stale RingCapture was not retried (%+v)", res)
	}
	reconcile(r) // fresh again: nothing changed, nothing to announce
	var scheduled []string
	for _, e := range drainEvents(rec) {
		if strings.HasPrefix(e, "Normal "+ringcapv1.ReasonScheduled+" ") {
			scheduled = append(scheduled, e)
		}
	}
	if len(scheduled) != 1 {
		t.Errorf("%d Scheduled events for one scheduling, want 1: %q", len(scheduled), scheduled)
	}
}

// A reader that exits non-zero fails the capture with its own message (its log's end,
// through terminationMessagePolicy FallbackToLogsOnError), and the operator stops the
// pod (its ring and RDMA unit are released) while keeping the pod object and the
// failure.
func TestReaderFailureStopsPod(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "readerfail")
	newCapture(t, ns, "wrongkey", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Readers = []ringcapv1.ReaderContainer{{Name: "verify", Args: []string{"ring", "read", "-k", "beef", "--wait", "5s"}}}
	})
	pod := waitPod(t, ns, "wrongkey")
	for _, c := range pod.Spec.Containers {
		if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
			t.Errorf("container %s terminationMessagePolicy %q, want FallbackToLogsOnError", c.Name, c.TerminationMessagePolicy)
		}
	}
	bindPod(t, pod, "node-a")
	receivers.Set(ns, pod.Name, receiverStatus("Listening", 0))
	pod = runPod(t, pod, "10.88.0.20")
	waitCapture(t, ns, "wrongkey", "Listening", func(rc *ringcapv1.RingCapture) bool { return rc.Status.Phase == ringcapv1.PhaseListening })

	logTail := "ring read: waiting for ring beef\nring read: open ring beef: no such ring (key 0xbeef): is the key right?\n"
	terminateContainers(t, pod, corev1.PodRunning, map[string]int32{"verify": 1}, map[string]string{"verify": logTail})
	rc := waitCapture(t, ns, "wrongkey", "Failed", func(rc *ringcapv1.RingCapture) bool { return rc.Status.Phase == ringcapv1.PhaseFailed })
	if msg := condition(rc, ringcapv1.ConditionFailed).Message; !strings.Contains(msg, "open ring beef: no such ring (key 0xbeef)") || !strings.Contains(msg, "exited with code 1") {
		t.Errorf("Failed condition %q does not carry the reader's message", msg)
	}
	for _, typ := range []string{ringcapv1.ConditionReady, ringcapv1.ConditionReceiverReady, ringcapv1.ConditionRingReady, ringcapv1.ConditionReceiving} {
		if c := condition(rc, typ); c.Status != metav1.ConditionFalse {
			t.Errorf("condition %s %s (%s: %s) on a failed capture", typ, c.Status, c.Reason, c.Message)
		}
	}
	// The pod is stopped through its active deadline: the kubelet kills the containers.
	stopped := &corev1.Pod{}
	if err := waitFor(waitTimeout, func() (bool, string) {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), stopped); err != nil {
			return false, err.Error()
		}
		return stopped.Spec.ActiveDeadlineSeconds != nil, fmt.Sprintf("activeDeadlineSeconds %v", stopped.Spec.ActiveDeadlineSeconds)
	}); err != nil {
		t.Fatalf("the failed capture's pod is not stopped: %v", err)
	}
	if stopped.UID != pod.UID || stopped.DeletionTimestamp != nil {
		t.Errorf("the failed capture's pod was replaced or deleted (uid %s, deletion %v): its logs are gone", stopped.UID, stopped.DeletionTimestamp)
	}
	waitEvent(t, ns, "wrongkey", ringcapv1.ReasonPodStopped, corev1.EventTypeNormal)
	ev := waitEvent(t, ns, "wrongkey", ringcapv1.ReasonFailed, corev1.EventTypeWarning)
	if !strings.Contains(ev.Note, "no such ring") {
		t.Errorf("Failed event %q does not say why", ev.Note)
	}

	// The kubelet kills the containers (the receiver on SIGTERM) and fails the pod; the
	// status keeps the reader's failure.
	terminateContainers(t, pod, corev1.PodFailed, map[string]int32{"receiver": 143}, nil)
	updatePodStatus(t, pod, func(p *corev1.Pod) {
		p.Status.Reason, p.Status.Message = "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
	})
	touch(t, rc)
	rc = waitCapture(t, ns, "wrongkey", "reconciled after the pod stopped", func(rc *ringcapv1.RingCapture) bool {
		return rc.Annotations["test/touch"] != "" && rc.Status.ObservedGeneration == rc.Generation
	})
	touch(t, rc)
	rc = waitCapture(t, ns, "wrongkey", "still failed by the reader", func(rc *ringcapv1.RingCapture) bool {
		return rc.Status.Phase == ringcapv1.PhaseFailed
	})
	if c := condition(rc, ringcapv1.ConditionFailed); c.Reason != ringcapv1.ReasonReaderFailed || !strings.Contains(c.Message, "no such ring") {
		t.Errorf("after the pod stopped, Failed is %s: %s; want the reader's failure kept", c.Reason, c.Message)
	}
	if n := len(ownedPods(t, rc)); n != 1 {
		t.Errorf("%d pods, want the stopped one kept", n)
	}
}

// A spec change while the pod holds data (here: listening after a first observation)
// is held: the pod keeps running what it was built with, the status says so, and when
// the run ends it is recorded (Succeeded, event) before a new pod applies the change;
// the finished run moves to status.lastRun. (A pod without data is replaced at once:
// TestEditReplacesUnstartedPod.)
func TestSpecChangeWhileRunningIsPending(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "pending")
	newCapture(t, ns, "edit", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Readers = []ringcapv1.ReaderContainer{{Name: "verify", Args: []string{"ring", "read", "-k", "dada", "-s"}}}
	})
	pod := waitPod(t, ns, "edit")
	bindPod(t, pod, "node-a")
	between := receiverStatus("Listening", 1<<20)
	between.Observations = 1
	receivers.Set(ns, pod.Name, between)
	pod = runPod(t, pod, "10.88.0.21")
	rc := waitCapture(t, ns, "edit", "Listening after an observation", func(rc *ringcapv1.RingCapture) bool {
		return rc.Status.Phase == ringcapv1.PhaseListening && rc.Status.Running != nil && rc.Status.BytesReceived == 1<<20
	})
	if rc.Status.Running.QueuePairs != 4 || rc.Status.Running.Generation != rc.Generation {
		t.Errorf("running %+v, want 4 queue pairs of generation %d", rc.Status.Running, rc.Generation)
	}

	base := rc.DeepCopy()
	rc.Spec.Receiver.QueuePairs = 8
	if err := env.Client.Patch(context.Background(), rc, client.MergeFrom(base)); err != nil {
		t.Fatalf("patch queuePairs: %v", err)
	}
	rc = waitCapture(t, ns, "edit", "change pending", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionChangePending, metav1.ConditionTrue, ringcapv1.ReasonSpecChangePending)
	})
	if msg := condition(rc, ringcapv1.ConditionChangePending).Message; !strings.Contains(msg, "queuePairs 4 -> 8") {
		t.Errorf("ChangePending message %q does not say what changes", msg)
	}
	if rc.Status.Running == nil || rc.Status.Running.QueuePairs != 4 || rc.Status.Phase != ringcapv1.PhaseListening {
		t.Errorf("after the patch: phase %s running %+v, want still Listening with the pod's 4 queue pairs", rc.Status.Phase, rc.Status.Running)
	}
	waitEvent(t, ns, "edit", ringcapv1.ReasonSpecChangePending, corev1.EventTypeNormal)
	if cur := ownedPods(t, rc); len(cur) != 1 || cur[0].UID != pod.UID {
		t.Fatalf("the running pod was touched by the spec change: %d pods", len(cur))
	}

	// The observation arrives and the run ends as its stop condition says.
	summary := receiverStatus("Finished", 8<<20)
	summary.Observations, summary.CompletionTime = 1, "2026-11-21T15:10:00Z"
	b, _ := json.Marshal(summary)
	terminateContainers(t, pod, corev1.PodSucceeded, map[string]int32{"receiver": 0, "verify": 0}, map[string]string{"receiver": string(b)})
	waitEvent(t, ns, "edit", ringcapv1.ReasonSucceeded, corev1.EventTypeNormal)
	waitEvent(t, ns, "edit", ringcapv1.ReasonPodReplaced, corev1.EventTypeNormal)
	var next corev1.Pod
	if err := waitFor(waitTimeout, func() (bool, string) {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), &next)
		return err == nil && next.UID != pod.UID, fmt.Sprint(err)
	}); err != nil {
		t.Fatalf("no new pod for the pending change: %v", err)
	}
	if args := strings.Join(next.Spec.Containers[0].Args, " "); !strings.Contains(args, "--qps 8") {
		t.Errorf("new pod args %q, want --qps 8", args)
	}
	rc = waitCapture(t, ns, "edit", "a new run, the last one recorded", func(rc *ringcapv1.RingCapture) bool {
		return rc.Status.LastRun != nil && rc.Status.Running != nil && rc.Status.Running.Generation == rc.Generation
	})
	lr := rc.Status.LastRun
	if lr.Phase != ringcapv1.PhaseSucceeded || lr.BytesReceived != 8<<20 || lr.Observations != 1 || lr.Generation != rc.Generation-1 {
		t.Errorf("lastRun %+v, want the first run: Succeeded, 8 MiB, 1 observation, generation %d", lr, rc.Generation-1)
	}
	if rc.Status.Phase != ringcapv1.PhasePending || rc.Status.BytesReceived != 0 || rc.Status.Running.QueuePairs != 8 {
		t.Errorf("new run: phase %s bytes %d running %+v", rc.Status.Phase, rc.Status.BytesReceived, rc.Status.Running)
	}
	if !conditionIs(rc, ringcapv1.ConditionChangePending, metav1.ConditionFalse, ringcapv1.ReasonNoChangePending) {
		t.Errorf("ChangePending %+v after the change was applied", condition(rc, ringcapv1.ConditionChangePending))
	}
	if slices.ContainsFunc(ownedPods(t, rc), func(p corev1.Pod) bool { return p.UID == pod.UID }) {
		t.Error("the finished pod is still there next to the new one")
	}
}
