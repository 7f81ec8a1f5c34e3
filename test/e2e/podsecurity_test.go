//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

const podSecurityEnforce = "pod-security.kubernetes.io/enforce"

// stepRestrictedNamespace is issue 56 item 3: with the test namespace enforcing Pod
// Security's restricted level (which includes baseline), a Pod-mode capture whose reader runs
// as a non-root user is admitted and streams: the node's RDMANode reports the memlock limit
// containers get (unlimited: the harness starts containerd with ulimit -l unlimited), so the
// operator leaves IPC_LOCK out, says so in status.running.ipcLock, and the receiver registers
// the ring as user 65532 without it. The label is removed afterwards, on failure too.
func stepRestrictedNamespace(t *testing.T) {
	ctx := context.Background()
	rn, err := s.dyn.Resource(gvrRDMANode).Get(ctx, s.node, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get RDMANode %s: %v", s.node, err)
	}
	if m, _, _ := unstructured.NestedMap(rn.Object, "status", "containerMemlock"); m["unlimited"] != true {
		t.Fatalf("RDMANode %s status.containerMemlock %v, want unlimited (the harness's containerd runs with ulimit -l unlimited)", s.node, m)
	}
	labelNamespace(t, podSecurityEnforce, "restricted")
	t.Cleanup(func() { labelNamespace(t, podSecurityEnforce, "") })

	newCapture(t, "restricted", "5ec", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
			"name": "verify", "args": []any{"ring", "read", "-k", "5ec", "--wait", "60s", "--verify", "1", "-s"}, "runAsUser": int64(65532)}}, "spec", "readers")
	})
	u := waitCapture(t, "restricted", 3*time.Minute, "Listening", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Listening" && str(u, "status", "endpoint", "address") != ""
	})
	podName := str(u, "status", "pod")
	if str(u, "status", "running", "ipcLock", "granted") != "false" {
		t.Errorf("status.running.ipcLock %q, want granted false", str(u, "status", "running", "ipcLock"))
	}
	t.Logf("ipcLock: %s", str(u, "status", "running", "ipcLock", "reason"))
	pod, err := s.cs.CoreV1().Pods(testNamespace).Get(ctx, podName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc := pod.Spec.Containers[0].SecurityContext; slices.Contains(sc.Capabilities.Add, "IPC_LOCK") || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("receiver security context %+v, want no IPC_LOCK and a non-root user", sc)
	}
	sender := startSender(t, "restricted-sender", u, "--qps 4 --mode send --msg-bytes 65536 --bytes 8388608 --seed 1")
	waitVerified(t, "restricted", sender)
}

// labelNamespace sets (value "": removes) a label on the test namespace.
func labelNamespace(t *testing.T, key, value string) {
	t.Helper()
	var v any = value
	if value == "" {
		v = nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}})
	if _, err := s.cs.CoreV1().Namespaces().Patch(context.Background(), testNamespace, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Errorf("label namespace %s %s=%q: %v", testNamespace, key, value, err)
	}
}
