//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// upgradeStreamBytes at upgradeRate take about a minute: the stream outlasts the upgrade.
const (
	upgradeStreamBytes = 64 << 20
	upgradeRate        = "0.008" // Gb/s, 1 MB/s
)

// stepHelmUpgradeWhileStreaming is issue 56 item 4: `helm upgrade` that rolls the operator
// and the device plugin while a capture receives. The capture pod is not touched (same UID,
// no restart), the stream goes on, the new operator picks the capture up and the status ends
// Succeeded with every byte verified.
func stepHelmUpgradeWhileStreaming(t *testing.T) {
	ctx := context.Background()
	newCapture(t, "upgrade", "a9a", verifyingReader("a9a"))
	u := waitCapture(t, "upgrade", 3*time.Minute, "Listening", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Listening" && str(u, "status", "endpoint", "address") != ""
	})
	before := capturePods(t, "upgrade")
	sender := startSender(t, "upgrade-sender", u, fmt.Sprintf("--qps 4 --mode send --msg-bytes 65536 --bytes %d --seed 1 --rate-gbps %s", upgradeStreamBytes, upgradeRate))
	waitCapture(t, "upgrade", 2*time.Minute, "Receiving", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Receiving"
	})

	oldOp, oldPlugin := componentPodUIDs(t, "operator"), componentPodUIDs(t, "plugin")
	out, err := s.helmCmd("upgrade", "ringcap", s.chart, "--namespace", s.namespace, "--reuse-values",
		"--set", "operator.logLevel=debug", "--set", "plugin.resources.requests.cpu=11m", "--wait", "--timeout", "5m")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("helm upgrade: %s", firstLine(out))
	if newOp, newPlugin := componentPodUIDs(t, "operator"), componentPodUIDs(t, "plugin"); sameUIDs(oldOp, newOp) || sameUIDs(oldPlugin, newPlugin) {
		t.Errorf("the upgrade did not roll the operator (%v -> %v) and the plugin (%v -> %v)", oldOp, newOp, oldPlugin, newPlugin)
	}
	mid, err := getCapture(ctx, "upgrade")
	if err != nil {
		t.Fatal(err)
	}
	if p := str(mid, "status", "phase"); p != "Receiving" {
		t.Errorf("after the upgrade the capture is %s, want still Receiving (the stream outlasts the upgrade): %s", p, captureSummary(mid))
	}
	end := waitVerified(t, "upgrade", sender)
	if num(end, "status", "bytesReceived") != upgradeStreamBytes {
		t.Errorf("bytesReceived %d, want %d", num(end, "status", "bytesReceived"), upgradeStreamBytes)
	}
	after := capturePods(t, "upgrade")
	if !sameUIDs(podUIDs(before), podUIDs(after)) {
		t.Errorf("capture pods %v before the upgrade, %v after: the upgrade replaced the capture pod", podUIDs(before), podUIDs(after))
	}
	for _, p := range after {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount != 0 {
				t.Errorf("capture container %s restarted %d times", cs.Name, cs.RestartCount)
			}
		}
	}
}

// stepHelmUninstallLeaves is issue 56 item 4: `helm uninstall` removes the operator and the
// device plugin and leaves, as docs/install.md says, the CRDs (keep policy), every RingCapture
// with its running capture pod, the RDMANode and the node labels. Installed again, the
// operator takes the capture back: a sender streams into the same pod and the capture ends
// Succeeded, verified. The suite goes on with the chart installed.
func stepHelmUninstallLeaves(t *testing.T) {
	ctx := context.Background()
	newCapture(t, "orphan", "0fa", verifyingReader("0fa"))
	waitCapture(t, "orphan", 3*time.Minute, "Listening", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Listening"
	})
	before := podUIDs(capturePods(t, "orphan"))
	out, err := s.helmCmd("uninstall", "ringcap", "--namespace", s.namespace, "--wait", "--timeout", "5m")
	reinstalled := false
	t.Cleanup(func() { // the later steps and cleanups need the chart
		if !reinstalled {
			installDevicePlugin(t)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("helm uninstall: %s", firstLine(out))
	waitFor(t, 3*time.Minute, "the operator's and the plugin's pods gone", func(ctx context.Context) (bool, string, error) {
		op, pl := componentPodUIDs(t, "operator"), componentPodUIDs(t, "plugin")
		return len(op)+len(pl) == 0, fmt.Sprintf("operator %v plugin %v", op, pl), nil
	})
	for _, crd := range []string{"ringcaptures.ringcap.io", "rdmanodes.ringcap.io"} {
		if _, err := s.cs.Discovery().RESTClient().Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd).DoRaw(ctx); err != nil {
			t.Errorf("CRD %s after helm uninstall: %v (crds.keep is on by default)", crd, err)
		}
	}
	if _, err := getCapture(ctx, "orphan"); err != nil {
		t.Errorf("RingCapture orphan after helm uninstall: %v", err)
	}
	if after := podUIDs(capturePods(t, "orphan")); !sameUIDs(before, after) {
		t.Errorf("capture pods %v before helm uninstall, %v after", before, after)
	}
	if _, err := s.dyn.Resource(gvrRDMANode).Get(ctx, s.node, metav1.GetOptions{}); err != nil {
		t.Errorf("RDMANode %s after helm uninstall: %v", s.node, err)
	}
	n, err := s.cs.CoreV1().Nodes().Get(ctx, s.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels["ringcap.io/rdma"] != "true" {
		t.Errorf("node labels after helm uninstall: %v, want ringcap.io/rdma=true left (docs/install.md says how to remove it)", n.Labels)
	}

	installDevicePlugin(t)
	reinstalled = true
	u := waitCapture(t, "orphan", 3*time.Minute, "Listening under the new operator", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Listening" && str(u, "status", "endpoint", "address") != ""
	})
	waitVerified(t, "orphan", startSender(t, "orphan-sender", u, "--qps 4 --mode send --msg-bytes 65536 --bytes 8388608 --seed 1"))
	if after := podUIDs(capturePods(t, "orphan")); !sameUIDs(before, after) {
		t.Errorf("capture pods %v before, %v after the operator came back: the new operator replaced the pod", before, after)
	}
}

// verifyingReader gives the sample's reader (verify the seed-1 pattern, print a summary) the
// capture's own ring key.
func verifyingReader(key string) func(u *unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
			"name": "verify", "args": []any{"ring", "read", "-k", key, "--wait", "60s", "--verify", "1", "-s"}}}, "spec", "readers")
	}
}

// componentPodUIDs lists the UIDs of the release's pods of one component (operator, plugin).
func componentPodUIDs(t *testing.T, component string) []string {
	t.Helper()
	l, err := s.cs.CoreV1().Pods(s.namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/component=" + component})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, string(p.UID))
		}
	}
	return out
}

func sameUIDs(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }
