//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// State carried from step to step.
var (
	ipcBaseline []string // SysV objects on the node (all IPC namespaces) before any capture
	sample      *unstructured.Unstructured
)

// loadSample reads the chart's sample RingCapture (what NOTES.txt tells users to apply).
func loadSample(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile("../../charts/ringcap/examples/ringcapture.yaml")
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatalf("parse the sample RingCapture: %v", err)
	}
	u.SetNamespace(testNamespace)
	return u
}

func getCapture(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	return s.dyn.Resource(gvrRingCapture).Namespace(testNamespace).Get(ctx, name, metav1.GetOptions{})
}

func str(u *unstructured.Unstructured, path ...string) string {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func num(u *unstructured.Unstructured, path ...string) int64 {
	v, _ := strconv.ParseInt(str(u, path...), 10, 64)
	return v
}

func condition(u *unstructured.Unstructured, typ string) (status, reason, msg string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
		}
	}
	return "", "", ""
}

func captureSummary(u *unstructured.Unstructured) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s pod=%s node=%s endpoint=%s:%s dev=%s gidIndex=%s mr=%s bytes=%s rate=%s",
		str(u, "status", "phase"), str(u, "status", "pod"), str(u, "status", "node"),
		str(u, "status", "endpoint", "address"), str(u, "status", "endpoint", "port"), str(u, "status", "endpoint", "device"),
		str(u, "status", "endpoint", "gidIndex"), str(u, "status", "memoryRegistration", "mode"),
		str(u, "status", "bytesReceived"), str(u, "status", "rateBytesPerSecond"))
	for _, typ := range []string{"RingReady", "ReceiverReady", "Failed"} {
		if st, reason, msg := condition(u, typ); st != "" {
			fmt.Fprintf(&b, " %s=%s(%s: %s)", typ, st, reason, msg)
		}
	}
	return b.String()
}

// waitCapture waits until the RingCapture satisfies ok, failing at once if it reached
// Failed (unless what is "Failed": see waitFailedCapture for other waits on a failed capture).
func waitCapture(t *testing.T, name string, limit time.Duration, what string, ok func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	return waitCaptureState(t, name, limit, what, what == "Failed", ok)
}

// waitFailedCapture waits until a RingCapture that is expected to fail satisfies ok.
func waitFailedCapture(t *testing.T, name string, limit time.Duration, what string, ok func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	return waitCaptureState(t, name, limit, what, true, ok)
}

func waitCaptureState(t *testing.T, name string, limit time.Duration, what string, failedOK bool, ok func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	var last *unstructured.Unstructured
	waitFor(t, limit, "RingCapture "+name+" "+what, func(ctx context.Context) (bool, string, error) {
		u, err := getCapture(ctx, name)
		if err != nil {
			return retry(err)
		}
		last = u
		if str(u, "status", "phase") == "Failed" && !failedOK {
			return false, "", fmt.Errorf("capture failed: %s", captureSummary(u))
		}
		return ok(u), captureSummary(u), nil
	})
	return last
}

// stepCapture is step 2: the sample RingCapture's pod runs on the RDMA node with the plugin's
// environment; the status shows the ring ready, the endpoint and the memory-registration mode.
func stepCapture(t *testing.T) {
	ctx := context.Background()
	ipcBaseline = nodeIPCObjects(t)
	t.Logf("SysV IPC objects on the node before any capture: %v", ipcBaseline)

	sample = loadSample(t)
	if _, err := s.dyn.Resource(gvrRingCapture).Namespace(testNamespace).Create(ctx, sample, metav1.CreateOptions{}); err != nil {
		t.Fatalf("apply the sample RingCapture: %v", err)
	}
	u := waitCapture(t, sample.GetName(), 3*time.Minute, "ready for senders", func(u *unstructured.Unstructured) bool {
		rr, _, _ := condition(u, "RingReady")
		rd, _, _ := condition(u, "ReceiverReady")
		return rr == "True" && rd == "True" && str(u, "status", "endpoint", "address") != "" && str(u, "status", "memoryRegistration", "mode") != ""
	})
	if got := str(u, "status", "node"); got != s.node {
		t.Errorf("status.node %q, want the RDMA node %q", got, s.node)
	}
	if p := str(u, "status", "endpoint", "port"); p != "18515" {
		t.Errorf("status.endpoint.port %q, want 18515 (the sample's receiver.port)", p)
	}
	if str(u, "status", "endpoint", "gidIndex") == "" {
		t.Errorf("status.endpoint.gidIndex missing: %s", captureSummary(u))
	}
	if m := str(u, "status", "memoryRegistration", "mode"); m != "WholeRing" && m != "PerBlock" {
		t.Errorf("status.memoryRegistration.mode %q, want what Auto resolved to (WholeRing or PerBlock)", m)
	}
	podName := str(u, "status", "pod")
	pod, err := s.cs.CoreV1().Pods(testNamespace).Get(ctx, podName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("capture pod %q: %v", podName, err)
	}
	if pod.Spec.NodeName != s.node || pod.Status.PodIP != str(u, "status", "endpoint", "address") {
		t.Errorf("capture pod on %s with IP %s; status says %s", pod.Spec.NodeName, pod.Status.PodIP, captureSummary(u))
	}
	// the plugin's Allocate environment is in the receiver container, and matches the status
	out, err := execIn(t, testNamespace, podName, "receiver", "/bin/sh", "-c", "env | grep ^RINGCAP_ | sort")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("receiver environment:\n%s", out)
	if !strings.Contains(out, "RINGCAP_RDMA_DEVICE="+str(u, "status", "endpoint", "device")+"\n") ||
		!strings.Contains(out, "RINGCAP_GID_INDEX="+str(u, "status", "endpoint", "gidIndex")+"\n") {
		t.Errorf("receiver env does not match status endpoint (%s)", captureSummary(u))
	}
	// the ring exists, in the pod's IPC namespace on the node
	during := nodeIPCObjects(t)
	if !slices.Contains(during, "shm:"+strconv.Itoa(0xdada)) {
		t.Errorf("no shared memory with the sample's key 0xdada (%d) on the node: %v", 0xdada, during)
	}
}

// stepStream is step 3: a sender pod streams a seeded pattern to the endpoint; the status shows
// bytes and rate while it runs and Succeeded at the end, and the reader verified every byte.
func stepStream(t *testing.T) {
	ctx := context.Background()
	u, err := getCapture(ctx, sample.GetName())
	if err != nil {
		t.Fatal(err)
	}
	addr := str(u, "status", "endpoint", "address") + ":" + str(u, "status", "endpoint", "port")
	// long enough (rate-limited) that the operator reports the capture while data flows
	sender := shellPod("sender", fmt.Sprintf("exec ringcap send --connect %s --qps 4 --mode send --msg-bytes 65536 --duration %ds --rate-gbps 0.1 --seed 1 --header SOURCE=J0437-4715",
		addr, envInt("RINGCAP_E2E_SEND_SECONDS", 30)))
	sender.Spec.Containers[0].Resources.Limits = corev1.ResourceList{rdmaResource: resource.MustParse("1")}
	restricted(&sender.Spec.Containers[0])
	if _, err := s.cs.CoreV1().Pods(testNamespace).Create(ctx, sender, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create sender pod: %v", err)
	}
	t.Cleanup(func() { deletePodAndWait(t, testNamespace, sender.Name) })
	// The status is watched while the sender runs: from when its container started (under
	// emulation a pod's start can take minutes).
	waitPod(t, sender.Name, 5*time.Minute, "sender pod started", runningOrEnded)
	// ... with the SOURCE the sender put in the observation's header
	mid := waitCapture(t, sample.GetName(), 2*time.Minute, "reports data and the sender's SOURCE while the sender runs", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Receiving" && num(u, "status", "bytesReceived") > 0 && num(u, "status", "rateBytesPerSecond") > 0 &&
			str(u, "status", "observation", "source") == "J0437-4715" && str(u, "status", "observation", "utcStartSource") == "first-byte"
	})
	waitPod(t, sender.Name, 3*time.Minute, "sender pod finished", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	slog := podLogs(t, testNamespace, sender.Name, "main")
	t.Logf("sender: %s", strings.TrimSpace(slog))
	end := waitCapture(t, sample.GetName(), 3*time.Minute, "Succeeded", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Succeeded"
	})
	total := num(end, "status", "bytesReceived")
	if total <= num(mid, "status", "bytesReceived") {
		t.Errorf("bytesReceived did not grow after the first report: %d then %d", num(mid, "status", "bytesReceived"), total)
	}
	if end.Object["status"].(map[string]any)["completionTime"] == nil {
		t.Errorf("final status %s has no completionTime", captureSummary(end))
	}
	// one observation; the reader container checked every byte of the pattern and exited 0
	checkVerifiedRun(t, end, slog)
	t.Logf("%d bytes over RoCE, verified by the reader; rate while running %s B/s", total, str(mid, "status", "rateBytesPerSecond"))
}

// stepInvalid is step 4: the API server rejects invalid RingCaptures, naming the field.
func stepInvalid(t *testing.T) {
	for _, tc := range []struct {
		name  string
		patch string // YAML merged into the sample's spec
		field string
	}{
		{"key-zero", `{ring: {key: "0"}}`, "spec.ring.key"},
		{"key-not-hex", `{ring: {key: "zz"}}`, "spec.ring.key"},
		{"too-few-blocks", `{ring: {blocks: 1}}`, "spec.ring.blocks"},
		{"message-does-not-divide-block", `{receiver: {messageBytes: 3000}}`, "spec.receiver.messageBytes"},
		{"unknown-mode", `{receiver: {mode: Teleport}}`, "spec.receiver.mode"},
		{"stop-bytes-missing", `{receiver: {stop: {after: Bytes, observations: null}}}`, "spec.receiver.stop.bytes"},
		{"reader-named-receiver", `{readers: [{name: receiver}]}`, "spec.readers[0].name"},
		{"reader-slot-nothing-can-take", `{ring: {readers: 2}}`, "spec.ring.readers"},
		{"key-unquoted", `{ring: {key: 0xdada}}`, "spec.ring.key"},
		{"port-is-metrics-port", `{receiver: {port: 9100}}`, "spec.receiver.metricsPort"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := loadSample(t)
			u.SetName("invalid-" + tc.name)
			var patch map[string]any
			if err := yaml.Unmarshal([]byte(tc.patch), &patch); err != nil {
				t.Fatal(err)
			}
			spec, _ := u.Object["spec"].(map[string]any)
			mergeInto(spec, patch)
			_, err := s.dyn.Resource(gvrRingCapture).Namespace(testNamespace).Create(context.Background(), u,
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create with %s: got %v, want 422 Invalid", tc.patch, err)
			}
			var fields []string
			if st, ok := err.(apierrors.APIStatus); ok && st.Status().Details != nil {
				for _, c := range st.Status().Details.Causes {
					fields = append(fields, c.Field)
				}
			}
			if !slices.Contains(fields, tc.field) {
				t.Errorf("rejected, but the causes name fields %v, want %s: %v", fields, tc.field, err)
			}
		})
	}
}

func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		sm, sok := v.(map[string]any)
		dm, dok := dst[k].(map[string]any)
		if sok && dok {
			mergeInto(dm, sm)
			continue
		}
		dst[k] = v
	}
}

// stepRestarts is step 5: after a kubelet restart the plugin re-registers and allocations keep
// working; after an operator restart a running capture keeps its one pod.
func stepRestarts(t *testing.T) {
	ctx := context.Background()
	events := func(ctx context.Context) ([]corev1.Event, error) {
		l, err := s.cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + s.node + ",reason=Starting"})
		if err != nil {
			return nil, err
		}
		var out []corev1.Event
		for _, e := range l.Items {
			if e.Source.Component == "kubelet" {
				out = append(out, e)
			}
		}
		return out, nil
	}
	before, err := events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// a privileged hostPID pod stops the kubelet; its supervisor (systemd, or the VM's loop)
	// starts it again, and the kubelet then deletes every device-plugin socket
	killer := shellPod("kubelet-restart", `pids=$(pidof kubelet) && kill $pids && echo "stopped kubelet $pids"`)
	killer.Spec.HostPID = true
	killer.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	if _, err := s.cs.CoreV1().Pods(testNamespace).Create(ctx, killer, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePodAndWait(t, testNamespace, killer.Name) })
	var started time.Time
	waitFor(t, 3*time.Minute, "kubelet restarted (a new Starting event)", func(ctx context.Context) (bool, string, error) {
		ev, err := events(ctx)
		if err != nil {
			return retry(err)
		}
		for _, e := range ev {
			if !slices.ContainsFunc(before, func(b corev1.Event) bool { return b.UID == e.UID && b.Count == e.Count }) {
				started = e.LastTimestamp.Time
				if started.IsZero() {
					started = e.EventTime.Time
				}
				return true, "kubelet started at " + started.String(), nil
			}
		}
		return false, fmt.Sprintf("%d Starting events", len(ev)), nil
	})
	// A restarted kubelet reports the resource with zero capacity until the plugin registers
	// again: wait for a node status written after the restart that has it back.
	waitFor(t, 3*time.Minute, "node reports "+string(rdmaResource)+" again after the restart", func(ctx context.Context) (bool, string, error) {
		n, err := s.cs.CoreV1().Nodes().Get(ctx, s.node, metav1.GetOptions{})
		if err != nil {
			return retry(err)
		}
		var hb time.Time
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				hb = c.LastHeartbeatTime.Time
			}
		}
		a := n.Status.Allocatable[rdmaResource]
		return !hb.Before(started) && a.Value() >= int64(len(s.devices)), fmt.Sprintf("heartbeat %v allocatable %s", hb, a.String()), nil
	})
	pod := shellPod("rdma-unit-after-restart", `env | grep ^RINGCAP_ | sort; echo "DEV $(ls /dev/infiniband | tr '\n' ' ')";
for d in /sys/class/infiniband_verbs/uverbs*; do echo "MAP $(basename $d) $(cat $d/ibdev)"; done; echo "ID $(id -u)"; ibv_devinfo -l`)
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{rdmaResource: resource.MustParse("1")}
	restricted(&pod.Spec.Containers[0])
	phase, logs := runPod(t, pod, 3*time.Minute)
	if phase != corev1.PodSucceeded {
		t.Fatalf("pod after the kubelet restart: %s\n%s", phase, logs)
	}
	checkUnit(t, logs, rdmaInventory(t))

	// operator restart: a running capture keeps exactly its pod
	steady := loadSample(t)
	steady.SetName("steady")
	// One reader that drains the ring until the pod goes: the API refuses a reader slot
	// that no container (and no reader on the node, without ring.hostIPC) can take.
	_ = unstructured.SetNestedSlice(steady.Object, []any{map[string]any{"name": "drain", "args": []any{"ring", "read", "-k", "beef", "--wait", "60s"}}}, "spec", "readers")
	_ = unstructured.SetNestedField(steady.Object, "beef", "spec", "ring", "key")
	_ = unstructured.SetNestedMap(steady.Object, map[string]any{"after": "Never"}, "spec", "receiver", "stop")
	if _, err := s.dyn.Resource(gvrRingCapture).Namespace(testNamespace).Create(ctx, steady, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	u := waitCapture(t, "steady", 3*time.Minute, "ready", func(u *unstructured.Unstructured) bool {
		rd, _, _ := condition(u, "ReceiverReady")
		return rd == "True"
	})
	first := capturePods(t, "steady")
	if len(first) != 1 || first[0].Name != str(u, "status", "pod") {
		t.Fatalf("capture steady has pods %v, status.pod %q", podNames(first), str(u, "status", "pod"))
	}
	opSel := "app.kubernetes.io/component=operator,app.kubernetes.io/instance=ringcap"
	ops, err := s.cs.CoreV1().Pods(s.namespace).List(ctx, metav1.ListOptions{LabelSelector: opSel})
	if err != nil || len(ops.Items) == 0 {
		t.Fatalf("operator pods (%s): %v %v", opSel, podNames(ops.Items), err)
	}
	for _, p := range ops.Items {
		if err := s.cs.CoreV1().Pods(s.namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 3*time.Minute, "a new operator pod is ready", func(ctx context.Context) (bool, string, error) {
		l, err := s.cs.CoreV1().Pods(s.namespace).List(ctx, metav1.ListOptions{LabelSelector: opSel})
		if err != nil {
			return retry(err)
		}
		for _, p := range l.Items {
			if slices.ContainsFunc(ops.Items, func(o corev1.Pod) bool { return o.UID == p.UID }) || p.DeletionTimestamp != nil {
				continue
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					return true, p.Name, nil
				}
			}
		}
		return false, fmt.Sprintf("pods %v", podNames(l.Items)), nil
	})
	// A causal barrier instead of a sleep: the new operator has reconciled a capture created
	// after its start, so it has also been through the existing one.
	probe := loadSample(t)
	probe.SetName("after-restart")
	// One reader that drains the ring until the pod goes: the API refuses a reader slot
	// that no container (and no reader on the node, without ring.hostIPC) can take.
	_ = unstructured.SetNestedSlice(probe.Object, []any{map[string]any{"name": "drain", "args": []any{"ring", "read", "-k", "cafe", "--wait", "60s"}}}, "spec", "readers")
	_ = unstructured.SetNestedField(probe.Object, "cafe", "spec", "ring", "key")
	_ = unstructured.SetNestedMap(probe.Object, map[string]any{"after": "Never"}, "spec", "receiver", "stop")
	if _, err := s.dyn.Resource(gvrRingCapture).Namespace(testNamespace).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCapture(t, "after-restart", 3*time.Minute, "has a pod", func(u *unstructured.Unstructured) bool { return str(u, "status", "pod") != "" })
	after := capturePods(t, "steady")
	if len(after) != 1 || after[0].UID != first[0].UID {
		t.Errorf("after the operator restart capture steady has pods %v (uids %v), want only %s (%s)",
			podNames(after), podUIDs(after), first[0].Name, first[0].UID)
	}
}

// stepDelete is step 6: deleting the RingCaptures removes their pods, and no shared memory or
// semaphore is left in any IPC namespace of the node.
func stepDelete(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{loadSample(t).GetName(), "steady", "after-restart"} {
		err := s.dyn.Resource(gvrRingCapture).Namespace(testNamespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete RingCapture %s: %v", name, err)
		}
	}
	waitFor(t, 3*time.Minute, "RingCaptures and their pods gone", func(ctx context.Context) (bool, string, error) {
		l, err := s.dyn.Resource(gvrRingCapture).Namespace(testNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return retry(err)
		}
		pods, err := s.cs.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return retry(err)
		}
		var owned []string
		for _, p := range pods.Items {
			for _, o := range p.OwnerReferences {
				if o.Kind == "RingCapture" {
					owned = append(owned, p.Name)
				}
			}
		}
		return len(l.Items) == 0 && len(owned) == 0, fmt.Sprintf("%d RingCaptures, capture pods %v", len(l.Items), owned), nil
	})
	left := nodeIPCObjects(t)
	var leaked []string
	for _, o := range left {
		if !slices.Contains(ipcBaseline, o) {
			leaked = append(leaked, o)
		}
	}
	if len(leaked) > 0 {
		t.Errorf("SysV IPC objects left on the node after the captures were deleted: %v (baseline %v)", leaked, ipcBaseline)
	}
}

func capturePods(t *testing.T, capture string) []corev1.Pod {
	t.Helper()
	l, err := s.cs.CoreV1().Pods(testNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		for _, o := range p.OwnerReferences {
			if o.Kind == "RingCapture" && o.Name == capture && p.DeletionTimestamp == nil {
				out = append(out, p)
			}
		}
	}
	return out
}

func podNames(ps []corev1.Pod) []string {
	var n []string
	for _, p := range ps {
		n = append(n, p.Name)
	}
	return n
}

func podUIDs(ps []corev1.Pod) []string {
	var n []string
	for _, p := range ps {
		n = append(n, string(p.UID))
	}
	return n
}

var ipcProbeN int

// nodeIPCObjects lists the SysV shared memory segments and semaphore sets of every IPC namespace
// on the RDMA node ("shm:<key>", "sem:<key>", keys in decimal), from a privileged hostPID pod
// that enters one process of each namespace.
func nodeIPCObjects(t *testing.T) []string {
	t.Helper()
	ipcProbeN++
	pod := shellPod(fmt.Sprintf("ipc-probe-%d", ipcProbeN), `for p in /proc/[0-9]*; do
  n=$(readlink $p/ns/ipc 2>/dev/null) && echo "$n ${p#/proc/}"
done | sort -u -k1,1 | while read ns pid; do
  nsenter -t "$pid" -i cat /proc/sysvipc/shm /proc/sysvipc/sem 2>/dev/null | awk -v ns="$ns" '
    $1 == "key" { kind = (kind == "" ? "shm" : "sem"); next }
    { print "OBJ", ns, kind ":" $1 }'
  echo "NS $ns"
done`)
	pod.Spec.HostPID = true
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	phase, logs := runPod(t, pod, 3*time.Minute)
	deletePodAndWait(t, pod.Namespace, pod.Name)
	if phase != corev1.PodSucceeded || !strings.Contains(logs, "NS ipc:") {
		t.Fatalf("IPC probe pod %s:\n%s", phase, logs)
	}
	var objs []string
	for _, l := range strings.Split(logs, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "OBJ" {
			objs = append(objs, f[2])
		}
	}
	slices.Sort(objs)
	return objs
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
