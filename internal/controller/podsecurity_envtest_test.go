//go:build envtest

package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// Captures under the API server's own Pod Security admission: with every candidate node
// reporting a memlock limit that covers the ring, the receiver gets no IPC_LOCK and the
// pod is admitted in a namespace enforcing baseline (and, with its reader running as a
// non-root user, restricted); a node whose limit is too low makes the operator add
// IPC_LOCK, which baseline refuses, and the status says why it was added and what to do.
func TestCapturesUnderPodSecurity(t *testing.T) {
	startOperator(t)
	memlockNode(t, "psa-roomy", &ringcapv1.MemlockLimit{Unlimited: true})
	memlockNode(t, "psa-tight", &ringcapv1.MemlockLimit{Bytes: 8 << 20})
	uid := int64(1000)
	reader := func(rc *ringcapv1.RingCapture) {
		rc.Spec.Readers = []ringcapv1.ReaderContainer{{Name: "verify", Args: []string{"ring", "read", "-k", "dada", "-s"}, RunAsUser: &uid}}
	}
	on := func(node string) func(rc *ringcapv1.RingCapture) {
		return func(rc *ringcapv1.RingCapture) {
			reader(rc)
			rc.Spec.NodeSelector = map[string]string{"ringcap.io/psa-test": node}
		}
	}

	for _, level := range []string{"baseline", "restricted"} {
		ns := enforcingNamespace(t, "psa-"+level, level)
		newCapture(t, ns, "roomy", on("psa-roomy"))
		pod := waitPod(t, ns, "roomy")
		if add := pod.Spec.Containers[0].SecurityContext.Capabilities.Add; len(add) != 0 {
			t.Errorf("%s: receiver capabilities added %v, want none (the node's memlock covers the ring)", level, add)
		}
		rc := waitCapture(t, ns, "roomy", "status.running.ipcLock", func(rc *ringcapv1.RingCapture) bool {
			return rc.Status.Running != nil && rc.Status.Running.IPCLock != nil
		})
		if l := rc.Status.Running.IPCLock; l.Granted || !strings.Contains(l.Reason, "not needed") || !strings.Contains(l.Reason, "(psa-roomy)") {
			t.Errorf("%s: running.ipcLock %+v, want not granted, not needed on psa-roomy", level, l)
		}
	}

	ns := enforcingNamespace(t, "psa-tight", "baseline")
	newCapture(t, ns, "tight", on("psa-tight"))
	rc := waitCapture(t, ns, "tight", "the refusal in the status", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionScheduled, metav1.ConditionFalse, ringcapv1.ReasonPodRefused)
	})
	msg := condition(rc, ringcapv1.ConditionScheduled).Message
	for _, want := range []string{"PodSecurity", "IPC_LOCK was added because node psa-tight lets containers lock 8.00 MiB", "receiver.ipcLock Never"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Scheduled message %q lacks %q", msg, want)
		}
	}

	// receiver.ipcLock Never: admitted in baseline whatever the node says.
	newCapture(t, ns, "never", func(rc *ringcapv1.RingCapture) {
		on("psa-tight")(rc)
		rc.Spec.Receiver.IPCLock = ringcapv1.IPCLockNever
	})
	if add := waitPod(t, ns, "never").Spec.Containers[0].SecurityContext.Capabilities.Add; slices.Contains(add, "IPC_LOCK") {
		t.Errorf("receiver.ipcLock Never: capabilities added %v", add)
	}
}

// enforcingNamespace creates a namespace whose Pod Security admission enforces level.
func enforcingNamespace(tb testing.TB, name, level string) string {
	tb.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pod-security.kubernetes.io/enforce": level}}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		tb.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// memlockNode creates a Node labelled ringcap.io/psa-test=name and its RDMANode
// reporting limit as the memlock limit containers get there.
func memlockNode(tb testing.TB, name string, limit *ringcapv1.MemlockLimit) {
	tb.Helper()
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"ringcap.io/psa-test": name}}}
	if err := env.Client.Create(ctx, node); err != nil {
		tb.Fatalf("create node %s: %v", name, err)
	}
	rn := &ringcapv1.RDMANode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(ctx, rn); err != nil {
		tb.Fatalf("create RDMANode %s: %v", name, err)
	}
	rn.Status.ContainerMemlock = limit
	if err := env.Client.Status().Update(ctx, rn); err != nil {
		tb.Fatalf("write RDMANode %s status: %v", name, err)
	}
	tb.Cleanup(func() {
		_ = env.Client.Delete(ctx, rn)
		_ = env.Client.Delete(ctx, node)
	})
}
