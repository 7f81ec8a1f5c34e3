//go:build envtest

package controller_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// A capture over libfabric on an EFA pool: the receiver gets --transport ofi and the
// provider, the pod requests the EFA pool's resource, and status.running shows the
// transport, first from the pod's arguments (with that said), then from the receiver's
// own report.
func TestTransportOFI(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "transport-ofi")
	newCapture(t, ns, "efa", func(rc *ringcapv1.RingCapture) {
		rc.Spec.Receiver = ringcapv1.ReceiverSpec{Transport: ringcapv1.TransportOFI, OFIProvider: "efa",
			Mode: ringcapv1.TransferModeWrite, ResourceName: "ringcap.io/efa"}
	})
	pod := waitPod(t, ns, "efa")
	args := strings.Join(pod.Spec.Containers[0].Args, " ")
	if !strings.Contains(args, "--mode write --mr auto --transport ofi --ofi-provider efa --listen") || strings.Contains(args, "--gid-index") {
		t.Errorf("receiver args %q: want --transport ofi --ofi-provider efa and no GID index", args)
	}
	if q := pod.Spec.Containers[0].Resources.Limits["ringcap.io/efa"]; q.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("ringcap.io/efa limit %s, want 1", q.String())
	}

	bindPod(t, pod, "node-efa")
	rc := waitCapture(t, ns, "efa", "running transport from the arguments", func(rc *ringcapv1.RingCapture) bool {
		return rc.Status.Running != nil && rc.Status.Running.Transport == "OFI"
	})
	if r := rc.Status.Running; r.OFIProvider != "efa" || !strings.HasPrefix(r.TransportSource, "from the receiver's arguments") {
		t.Errorf("running %+v: want provider efa from the receiver's arguments", r)
	}

	// The receiver reports what it runs.
	st := receiverStatus("Listening", 0)
	st.Transport, st.Provider = "ofi", "efa"
	receivers.Set(ns, pod.Name, st)
	runPod(t, pod, "10.88.0.9")
	rc = waitCapture(t, ns, "efa", "running transport reported by the receiver", func(rc *ringcapv1.RingCapture) bool {
		return rc.Status.Running != nil && rc.Status.Running.TransportSource == "reported by the receiver"
	})
	if r := rc.Status.Running; r.Transport != "OFI" || r.OFIProvider != "efa" {
		t.Errorf("running %+v: want OFI efa", r)
	}
}

// The default transport is Verbs, passed explicitly, so that a device plugin's
// RINGCAP_TRANSPORT cannot change what the spec says.
func TestTransportDefaultVerbs(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "transport-verbs")
	newCapture(t, ns, "roce", nil)
	pod := waitPod(t, ns, "roce")
	args := pod.Spec.Containers[0].Args
	if i := slices.Index(args, "--transport"); i < 0 || i+1 >= len(args) || args[i+1] != "verbs" || slices.Contains(args, "--ofi-provider") {
		t.Errorf("receiver args %q: want --transport verbs and no --ofi-provider", args)
	}
	if rc := getCapture(t, ns, "roce"); rc.Spec.Receiver.Transport != ringcapv1.TransportVerbs {
		t.Errorf("stored transport %q, want the default Verbs", rc.Spec.Receiver.Transport)
	}
}
