//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// newCapture creates a copy of the sample RingCapture named name with the ring key key,
// changed by mod (the unstructured object), and deletes it (waiting for its pods to go)
// when the test ends.
func newCapture(t *testing.T, name, key string, mod func(u *unstructured.Unstructured)) {
	t.Helper()
	u := loadSample(t)
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, key, "spec", "ring", "key")
	if mod != nil {
		mod(u)
	}
	if _, err := s.dyn.Resource(gvrRingCapture).Namespace(testNamespace).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create RingCapture %s: %v", name, err)
	}
	t.Cleanup(func() { deleteCaptureAndWait(t, name) })
}

func deleteCaptureAndWait(t *testing.T, name string) {
	t.Helper()
	err := s.dyn.Resource(gvrRingCapture).Namespace(testNamespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete RingCapture %s: %v", name, err)
		return
	}
	waitFor(t, 3*time.Minute, "RingCapture "+name+" and its pods gone", func(ctx context.Context) (bool, string, error) {
		_, err := getCapture(ctx, name)
		if err != nil && !apierrors.IsNotFound(err) {
			return retry(err)
		}
		pods, perr := s.cs.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{})
		if perr != nil {
			return retry(perr)
		}
		var left []string
		for _, p := range pods.Items {
			for _, o := range p.OwnerReferences {
				if o.Kind == "RingCapture" && o.Name == name {
					left = append(left, p.Name)
				}
			}
		}
		return apierrors.IsNotFound(err) && len(left) == 0, fmt.Sprintf("pods %v", left), nil
	})
}

// captureEvents returns the reasons of the events about a RingCapture.
func captureEvents(ctx context.Context, name string) ([]string, error) {
	l, err := s.cs.CoreV1().Events(testNamespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=RingCapture,involvedObject.name=" + name})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range l.Items {
		out = append(out, e.Reason)
	}
	return out, nil
}

// senderPod streams a seeded pattern to the capture's endpoint.
// startSender creates a sender pod (senderPod) streaming into the capture u, deleted at the
// end of the test; on failure the test logs the sender's, the receiver's and reader verify's
// output. It returns the sender pod's name.
func startSender(t *testing.T, name string, u *unstructured.Unstructured, args string) string {
	t.Helper()
	sender := senderPod(name, u, args)
	if _, err := s.cs.CoreV1().Pods(testNamespace).Create(context.Background(), sender, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podName := str(u, "status", "pod")
	t.Cleanup(func() { deletePodAndWait(t, testNamespace, sender.Name) })
	t.Cleanup(func() { logsOnFailure(t, sender.Name, "main", podName, "receiver", podName, "verify") })
	return sender.Name
}

// waitVerified waits until the capture has Succeeded and checks its run: one observation,
// every container exited 0, and the reader verified what the sender sent.
func waitVerified(t *testing.T, capture, sender string) *unstructured.Unstructured {
	t.Helper()
	end := waitCapture(t, capture, 3*time.Minute, "Succeeded", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Succeeded"
	})
	checkVerifiedRun(t, end, podLogs(t, testNamespace, sender, "main"))
	return end
}

func senderPod(name string, u *unstructured.Unstructured, args string) *corev1.Pod {
	addr := str(u, "status", "endpoint", "address") + ":" + str(u, "status", "endpoint", "port")
	p := shellPod(name, "exec ringcap send --connect "+addr+" "+args)
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{rdmaResource: resource.MustParse("1")}
	restricted(&p.Spec.Containers[0])
	return p
}

// stepFailedReader is issue 32 item 3: a reader that exits non-zero (wrong ring key) fails
// the capture with the reader's own error text in the Failed condition, no condition says the
// capture is ready, and the operator stops the pod: the ring and the RDMA unit are released,
// while the pod object and the reader's log stay for the user.
func stepFailedReader(t *testing.T) {
	ctx := context.Background()
	newCapture(t, "badreader", "b0d", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
			"name": "verify", "args": []any{"ring", "read", "-k", "beef", "--wait", "5s", "--verify", "1", "-s"}}}, "spec", "readers")
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"after": "Never"}, "spec", "receiver", "stop")
	})
	u := waitCapture(t, "badreader", 3*time.Minute, "Failed", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Failed"
	})
	podName := str(u, "status", "pod")
	st, reason, msg := condition(u, "Failed")
	t.Logf("Failed=%s (%s): %s", st, reason, msg)
	if st != "True" || reason != "ReaderFailed" {
		t.Errorf("Failed condition %s/%s, want True/ReaderFailed", st, reason)
	}
	for _, typ := range []string{"Ready", "ReceiverReady", "RingReady", "Receiving"} {
		if cst, creason, cmsg := condition(u, typ); cst != "False" {
			t.Errorf("condition %s=%s (%s: %s) on a failed capture", typ, cst, creason, cmsg)
		}
	}
	// The operator stops the pod; the kubelet kills its containers and fails it.
	waitPod(t, podName, 3*time.Minute, "the failed capture's pod stopped", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed
	})
	// The pod object and the reader's log are kept; the condition carries the log's last line.
	rlog := strings.TrimSpace(podLogs(t, testNamespace, podName, "verify"))
	t.Logf("reader log: %s", rlog)
	if rlog == "" || !strings.Contains(msg, lastLine(rlog)) {
		t.Errorf("the Failed condition %q does not carry the reader's error %q", msg, lastLine(rlog))
	}
	// The ring went with the pod's containers and IPC namespace.
	if objs := nodeIPCObjects(t); slices.Contains(objs, "shm:"+strconv.Itoa(0xb0d)) {
		t.Errorf("the failed capture's ring (key 0xb0d) is still on the node: %v", objs)
	}
	// Every RDMA unit of the node can be taken again: one holder pod per allocatable unit runs.
	n, err := s.cs.CoreV1().Nodes().Get(ctx, s.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	units := n.Status.Allocatable[rdmaResource]
	var holders []string
	for i := range int(units.Value()) {
		p := shellPod(fmt.Sprintf("unit-holder-%d", i), "echo holding; exec sleep 3600")
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{rdmaResource: resource.MustParse("1")}
		restricted(&p.Spec.Containers[0])
		if _, err := s.cs.CoreV1().Pods(testNamespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		holders = append(holders, p.Name)
		t.Cleanup(func() { deletePodAndWait(t, testNamespace, p.Name) })
	}
	waitFor(t, 3*time.Minute, fmt.Sprintf("all %d RDMA units held by new pods", len(holders)), func(ctx context.Context) (bool, string, error) {
		var seen []string
		running := 0
		for _, h := range holders {
			p, err := s.cs.CoreV1().Pods(testNamespace).Get(ctx, h, metav1.GetOptions{})
			if err != nil {
				return retry(err)
			}
			if p.Status.Phase == corev1.PodFailed {
				return false, "", fmt.Errorf("holder pod %s failed: %s", h, podSummary(p))
			}
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
			seen = append(seen, h+": "+podSummary(p))
		}
		return running == len(holders), strings.Join(seen, "; "), nil
	})
	if _, err := s.cs.CoreV1().Pods(testNamespace).Get(ctx, podName, metav1.GetOptions{}); err != nil {
		t.Errorf("the failed capture's pod is gone (its logs with it): %v", err)
	}
	evs, err := captureEvents(ctx, "badreader")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(evs, "PodStopped") || !slices.Contains(evs, "Failed") {
		t.Errorf("events %v, want Failed and PodStopped", evs)
	}
}

// stepEditRunning is issue 32 item 4: patching a capture while data arrives holds the
// change (the running pod and status.running keep the running configuration,
// ChangePending says what waits), the run in progress finishes and is recorded
// (Succeeded event, status.lastRun) before a new pod applies the change. (A pod that has
// received nothing is replaced at once instead: stepEditUnstarted.)
func stepEditRunning(t *testing.T) {
	ctx := context.Background()
	newCapture(t, "edit", "ed1", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
			"name": "verify", "args": []any{"ring", "read", "-k", "ed1", "--wait", "60s", "--verify", "1", "-s"}}}, "spec", "readers")
	})
	u := waitCapture(t, "edit", 3*time.Minute, "Listening", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Listening" && str(u, "status", "endpoint", "address") != ""
	})
	if q := num(u, "status", "running", "queuePairs"); q != 4 {
		t.Errorf("status.running.queuePairs %d, want the receiver's 4", q)
	}
	first, err := s.cs.CoreV1().Pods(testNamespace).Get(ctx, str(u, "status", "pod"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// A sender that believes status.running connects with 4 queue pairs and streams,
	// slowly, for a while: the run holds data when the patch comes.
	sender := senderPod("edit-sender", u, "--qps 4 --mode send --msg-bytes 65536 --duration 30s --rate-gbps 0.05 --seed 1")
	if _, err := s.cs.CoreV1().Pods(testNamespace).Create(ctx, sender, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePodAndWait(t, testNamespace, sender.Name) })
	waitCapture(t, "edit", 2*time.Minute, "Receiving", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Receiving" && num(u, "status", "bytesReceived") > 0
	})

	patch := []byte(`{"spec":{"receiver":{"queuePairs":8}}}`)
	if _, err := s.dyn.Resource(gvrRingCapture).Namespace(testNamespace).Patch(ctx, "edit", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch queuePairs of a running capture: %v", err)
	}
	u = waitCapture(t, "edit", 2*time.Minute, "change pending", func(u *unstructured.Unstructured) bool {
		st, _, _ := condition(u, "ChangePending")
		return st == "True"
	})
	_, _, msg := condition(u, "ChangePending")
	if !strings.Contains(msg, "queuePairs 4 -> 8") {
		t.Errorf("ChangePending message %q does not say what changes", msg)
	}
	if q := num(u, "status", "running", "queuePairs"); q != 4 {
		t.Errorf("after the patch: running.queuePairs %d, want 4 (what runs)", q)
	}
	cur, err := s.cs.CoreV1().Pods(testNamespace).Get(ctx, first.Name, metav1.GetOptions{})
	if err != nil || cur.UID != first.UID {
		t.Fatalf("the running pod was replaced by the patch: %v", err)
	}

	// The sender ends its observation, and the run ends.
	var phase corev1.PodPhase
	waitPod(t, sender.Name, 3*time.Minute, "the sender finished", func(p *corev1.Pod) bool {
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed
	})
	slog := podLogs(t, testNamespace, sender.Name, "main")
	t.Logf("sender (%s): %s", phase, strings.TrimSpace(slog))
	sm := regexp.MustCompile(`send: bytes=(\d+) .*complete=true`).FindStringSubmatch(slog)
	if phase != corev1.PodSucceeded || sm == nil {
		t.Fatalf("sender with the running configuration failed: %s\n%s", phase, slog)
	}
	u = waitCapture(t, "edit", 3*time.Minute, "the finished run recorded and the change applied", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "lastRun", "phase") == "Succeeded" && num(u, "status", "running", "queuePairs") == 8
	})
	if got := str(u, "status", "lastRun", "bytesReceived"); got != sm[1] {
		t.Errorf("lastRun.bytesReceived %s, want the %s bytes sent", got, sm[1])
	}
	if st, _, _ := condition(u, "ChangePending"); st != "False" {
		t.Errorf("ChangePending %s after the change was applied", st)
	}
	next, err := s.cs.CoreV1().Pods(testNamespace).Get(ctx, str(u, "status", "pod"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if next.UID == first.UID || !strings.Contains(strings.Join(next.Spec.Containers[0].Args, " "), "--qps 8") {
		t.Errorf("pod after the run: uid %s (first %s) args %q, want a new pod with --qps 8", next.UID, first.UID, next.Spec.Containers[0].Args)
	}
	evs, err := captureEvents(ctx, "edit")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(evs, "SpecChangePending") || !slices.Contains(evs, "Succeeded") || !slices.Contains(evs, "PodReplaced") {
		t.Errorf("events %v, want SpecChangePending, Succeeded and PodReplaced", evs)
	}
}

// stepReadersBehind is issue 32 item 2 (status): a reader that stops reading holds the
// receiver back once the ring is full; the capture says so while it happens (ReadersBehind
// naming the ring) and status.heldBackSeconds grows while the hold lasts. A real Prometheus
// in the node VM (issue 54) scrapes the capture and the device plugin with the chart's
// rules: the stall's alerts fire, the dashboard's panels have data, and once the reader
// continues the alerts resolve; `kubectl ringcap top` in a terminal shows the capture.
func stepReadersBehind(t *testing.T) {
	ctx := context.Background()
	newCapture(t, "behind", "be4", func(u *unstructured.Unstructured) {
		// A real reader that is stopped (SIGSTOP) a few seconds after it started.
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
			"name": "stopped", "command": []any{"/bin/sh", "-c"},
			"args": []any{`ringcap ring read -k be4 --wait 60s -s -o /dev/null & p=$!; sleep 5; kill -STOP $p; echo "reader $p stopped"; wait $p`}}}, "spec", "readers")
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"after": "Never"}, "spec", "receiver", "stop")
	})
	u := waitCapture(t, "behind", 3*time.Minute, "Listening", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Listening" && str(u, "status", "endpoint", "address") != ""
	})
	prom := startPrometheus(t, captureTargets(t, str(u, "status", "pod")))
	sender := senderPod("behind-sender", u, "--qps 4 --mode send --msg-bytes 65536 --bytes 64M --seed 1")
	if _, err := s.cs.CoreV1().Pods(testNamespace).Create(ctx, sender, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePodAndWait(t, testNamespace, sender.Name) })
	t.Cleanup(func() {
		logsOnFailure(t, sender.Name, "main", str(u, "status", "pod"), "receiver", str(u, "status", "pod"), "stopped")
	})
	u = waitCapture(t, "behind", 3*time.Minute, "ReadersBehind", func(u *unstructured.Unstructured) bool {
		st, _, _ := condition(u, "ReadersBehind")
		return st == "True" && num(u, "status", "heldBackSeconds") > 0
	})
	_, reason, msg := condition(u, "ReadersBehind")
	if reason != "ReadersBehind" || !strings.Contains(msg, "ring be4") {
		t.Errorf("ReadersBehind %s: %q, want the ring be4 named", reason, msg)
	}
	held := num(u, "status", "heldBackSeconds")
	waitCapture(t, "behind", 2*time.Minute, "heldBackSeconds growing during the hold", func(u *unstructured.Unstructured) bool {
		st, _, _ := condition(u, "ReadersBehind")
		return st == "True" && num(u, "status", "heldBackSeconds") > held
	})
	// status.ring says where: every block in use, the stopped reader's slot held and behind.
	waitCapture(t, "behind", 2*time.Minute, "status.ring showing a full ring and the stopped reader behind", func(u *unstructured.Unstructured) bool {
		blocks := num(u, "status", "ring", "blocks")
		readers, _, _ := unstructured.NestedSlice(u.Object, "status", "ring", "readers")
		if blocks == 0 || str(u, "status", "ring", "fill") != fmt.Sprintf("%d/%d", blocks, blocks) || len(readers) != 1 {
			return false
		}
		r, _ := readers[0].(map[string]any)
		connected, _, _ := unstructured.NestedBool(r, "connected")
		lag, _, _ := unstructured.NestedInt64(r, "lagBlocks")
		return connected && lag > 0
	})
	topThroughTerminal(t, "behind")
	checkPrometheusSeesTheStall(t, prom, str(u, "status", "pod"), "stopped")
}

// logsOnFailure logs, when t failed, the sender's and the receiver's output (pod,
// container pairs): whether the stream had started, and what the receiver saw, tell a
// late or stalled stream from a status that stopped being read.
func logsOnFailure(t *testing.T, podContainers ...string) {
	t.Helper()
	if !t.Failed() {
		return
	}
	for i := 0; i+1 < len(podContainers); i += 2 {
		name, c := podContainers[i], podContainers[i+1]
		b, err := s.cs.CoreV1().Pods(testNamespace).GetLogs(name, &corev1.PodLogOptions{Container: c}).DoRaw(context.Background())
		t.Logf("logs of %s[%s] (%v):\n%s", name, c, err, b)
	}
}

// checkVerifiedRun checks a finished capture against its sender's log: one observation, every
// container exited 0, and the reader verified as many bytes as the sender sent and the status
// counted, without a mismatch.
func checkVerifiedRun(t *testing.T, end *unstructured.Unstructured, senderLog string) {
	t.Helper()
	total := num(end, "status", "bytesReceived")
	if num(end, "status", "observations") != 1 {
		t.Errorf("final status %s observations=%d, want 1", captureSummary(end), num(end, "status", "observations"))
	}
	pod, err := s.cs.CoreV1().Pods(testNamespace).Get(context.Background(), str(end, "status", "pod"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			t.Errorf("capture pod container %s did not exit 0: %+v", cs.Name, cs.State)
		}
	}
	rlog := podLogs(t, testNamespace, pod.Name, "verify")
	t.Logf("reader: %s", lastLine(rlog))
	m := regexp.MustCompile(`read: bytes=(\d+) blocks=(\d+) observations=(\d+) mismatches=(\d+)`).FindStringSubmatch(rlog)
	if m == nil {
		t.Fatalf("reader printed no summary line:\n%s", rlog)
	}
	sm := regexp.MustCompile(`send: bytes=(\d+) .*complete=true`).FindStringSubmatch(senderLog)
	if sm == nil {
		t.Fatalf("sender did not report a complete transfer:\n%s", senderLog)
	}
	if m[4] != "0" || m[3] != "1" || m[1] != sm[1] || strconv.FormatInt(total, 10) != sm[1] {
		t.Errorf("sender sent %s bytes; reader: bytes=%s observations=%s mismatches=%s; final status bytesReceived=%d", sm[1], m[1], m[3], m[4], total)
	}
	t.Logf("%d bytes sent, received and verified by the reader", total)
}
