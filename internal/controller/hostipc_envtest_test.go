//go:build envtest

package controller_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// A ring whose reader slots are partly left to readers on the node (ring.hostIPC): the
// pod shares the node's IPC namespace, and the status says how many slots wait for
// readers outside the pod.
func TestHostIPCLeavesReaderSlots(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "hostipc")
	newCapture(t, ns, "shared", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Ring.Readers, rc.Spec.Ring.HostIPC = 3, true
		rc.Spec.Readers = []ringcapv1.ReaderContainer{{Name: "verify", Args: []string{"ring", "read", "-k", "dada", "-s"}}}
	})
	pod := waitPod(t, ns, "shared")
	if !pod.Spec.HostIPC {
		t.Errorf("pod of a capture with ring.hostIPC has its own IPC namespace")
	}
	bindPod(t, pod, "node-a")
	st := receiverStatus("Listening", 0)
	st.Ring.Readers = 3
	receivers.Set(ns, pod.Name, st)
	runPod(t, pod, "10.88.0.5")
	rc := waitCapture(t, ns, "shared", "RingReady", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionRingReady, metav1.ConditionTrue, ringcapv1.ReasonRingCreated)
	})
	want := "3 readers; 2 reader slots are left for readers outside the pod (hostIPC: the ring is in the node's IPC namespace)"
	if msg := condition(rc, ringcapv1.ConditionRingReady).Message; !strings.HasSuffix(msg, want) {
		t.Errorf("RingReady message %q, want it to end with %q", msg, want)
	}

	// Without hostIPC every slot has its container and the status says nothing more.
	newCapture(t, ns, "private", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Readers = []ringcapv1.ReaderContainer{{Name: "verify", Args: []string{"ring", "read", "-k", "dada", "-s"}}}
	})
	pod = waitPod(t, ns, "private")
	if pod.Spec.HostIPC {
		t.Errorf("pod of a capture without ring.hostIPC shares the node's IPC namespace")
	}
	bindPod(t, pod, "node-a")
	receivers.Set(ns, pod.Name, receiverStatus("Listening", 0))
	runPod(t, pod, "10.88.0.6")
	rc = waitCapture(t, ns, "private", "RingReady", func(rc *ringcapv1.RingCapture) bool {
		return conditionIs(rc, ringcapv1.ConditionRingReady, metav1.ConditionTrue, ringcapv1.ReasonRingCreated)
	})
	if msg := condition(rc, ringcapv1.ConditionRingReady).Message; strings.Contains(msg, "outside the pod") {
		t.Errorf("RingReady message %q speaks of readers outside the pod", msg)
	}
}
