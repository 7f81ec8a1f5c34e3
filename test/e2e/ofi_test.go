//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// stepOFICapture is issue 35 on the cluster: a Host-mode RingCapture with
// spec.receiver.transport OFI over verbs;ofi_rxm (rxe1, the address of its RoCE v2 GID), in
// write mode, where 4 bytes of remote CQ data make every immediate travel in a length
// message; a sender outside the cluster streams over rxe0 with --transport ofi, ending off a
// block boundary, and the reader verifies every byte.
func stepOFICapture(t *testing.T) {
	const name, key, provider = "ofi-verbs", "0f1", "verbs;ofi_rxm"
	const total = 48<<20 + 12345
	newCapture(t, name, key, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "Host", "spec", "network", "mode")
		_ = unstructured.SetNestedField(u.Object, int64(22515), "spec", "receiver", "port")
		_ = unstructured.SetNestedField(u.Object, int64(22100), "spec", "receiver", "metricsPort")
		_ = unstructured.SetNestedField(u.Object, "OFI", "spec", "receiver", "transport")
		_ = unstructured.SetNestedField(u.Object, provider, "spec", "receiver", "ofiProvider")
		_ = unstructured.SetNestedField(u.Object, "Write", "spec", "receiver", "mode")
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"after": "Bytes", "bytes": int64(total)}, "spec", "receiver", "stop")
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
			"name": "verify", "args": []any{"ring", "read", "-k", key, "--wait", "60s", "--verify", "5", "-s"}}}, "spec", "readers")
	})
	if nodeIsContainer() {
		hostModeFailsInContainerNode(t, name)
		return
	}
	u := waitDataNetworkEndpoint(t, name)
	script := fmt.Sprintf("exec /mnt/host/bin/ringcap send --connect %s --transport ofi --qps 4 --mode write --msg-bytes 65536 --bytes %d --seed 5\n",
		endpointOf(u), total)
	out, rc, err := guestRun("ofi-sender", script, 5*time.Minute)
	t.Logf("sender outside the cluster (exit %d):\n%s", rc, out)
	if err != nil {
		t.Fatal(err)
	}
	if rc != 0 || !strings.Contains(out, "transport=ofi provider="+provider) {
		t.Fatalf("the ofi sender failed or did not name the provider %s (exit %d)", provider, rc)
	}
	end := waitCapture(t, name, 3*time.Minute, "Succeeded", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Succeeded"
	})
	if tr, p := str(end, "status", "running", "transport"), str(end, "status", "running", "ofiProvider"); tr != "OFI" || p != provider {
		t.Errorf("status.running transport %q provider %q, want OFI %s", tr, p, provider)
	}
	checkVerifiedRun(t, end, out)
}
