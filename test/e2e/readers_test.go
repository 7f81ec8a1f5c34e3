//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// stepReaderExitZero is issue 51 item 2: a reader that exits 0 after one observation
// (`ring read -s`) while the capture runs on (stop Never) leaves its ring slot empty. With
// the default restartPolicy FailCapture the capture fails with ReaderExited, and
// status.emptyReaderSlots names the reader and its exit code (before: Ready=True for ever,
// the next sender held back).
func stepReaderExitZero(t *testing.T) {
	ctx := context.Background()
	newCapture(t, "oncereader", "0c1", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
			"name": "verify", "args": []any{"ring", "read", "-k", "0c1", "--wait", "60s", "--verify", "1", "-s"}}}, "spec", "readers")
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"after": "Never"}, "spec", "receiver", "stop")
	})
	u := waitCapture(t, "oncereader", 3*time.Minute, "Listening", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Listening" && str(u, "status", "endpoint", "address") != ""
	})
	sender := senderPod("oncereader-sender", u, "--qps 4 --mode send --msg-bytes 65536 --bytes 8M --seed 1")
	if _, err := s.cs.CoreV1().Pods(testNamespace).Create(ctx, sender, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePodAndWait(t, testNamespace, sender.Name) })
	u = waitFailedCapture(t, "oncereader", 3*time.Minute, "Failed with ReaderExited", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Failed"
	})
	st, reason, msg := condition(u, "Failed")
	t.Logf("Failed=%s (%s): %s", st, reason, msg)
	if st != "True" || reason != "ReaderExited" || !strings.Contains(msg, "reader verify exited with code 0") {
		t.Errorf("Failed condition %s/%s %q, want True/ReaderExited naming reader verify and code 0", st, reason, msg)
	}
	if rst, _, _ := condition(u, "Ready"); rst != "False" {
		t.Errorf("Ready=%s on a capture whose reader slot is empty", rst)
	}
	slots, _, _ := unstructured.NestedSlice(u.Object, "status", "emptyReaderSlots")
	if len(slots) != 1 || str(&unstructured.Unstructured{Object: slots[0].(map[string]any)}, "reader") != "verify" ||
		num(&unstructured.Unstructured{Object: slots[0].(map[string]any)}, "exitCode") != 0 {
		t.Errorf("status.emptyReaderSlots = %v, want reader verify with exit code 0", slots)
	}
}

// stepReaderRestartResumes is issue 51 items 2 and 7: a reader with restartPolicy Restart
// (a native sidecar) killed in the middle of an observation is restarted by the kubelet,
// and the restarted `ring read` resumes the observation where the killed one left it:
// it says so, verifies the rest of the pattern from the resume byte without a mismatch,
// and the sender is not held back for good (it completes).
func stepReaderRestartResumes(t *testing.T) {
	ctx := context.Background()
	newCapture(t, "resumer", "0c3", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
			"name": "verify", "restartPolicy": "Restart", "command": []any{"/bin/sh", "-c"},
			"args": []any{`ringcap ring read -k 0c3 --wait 60s --verify 1 & p=$!; echo $p >/tmp/reader.pid; trap 'kill $p' TERM; wait $p`}}}, "spec", "readers")
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"after": "Never"}, "spec", "receiver", "stop")
	})
	u := waitCapture(t, "resumer", 3*time.Minute, "Listening", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Listening" && str(u, "status", "endpoint", "address") != ""
	})
	podName := str(u, "status", "pod")
	sender := senderPod("resumer-sender", u, "--qps 4 --mode send --msg-bytes 65536 --duration 30s --rate-gbps 0.1 --seed 1")
	if _, err := s.cs.CoreV1().Pods(testNamespace).Create(ctx, sender, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePodAndWait(t, testNamespace, sender.Name) })
	t.Cleanup(func() { logsOnFailure(t, sender.Name, "main", podName, "receiver", podName, "verify") })
	waitCapture(t, "resumer", 3*time.Minute, "Receiving", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Receiving" && num(u, "status", "blocksFilled") > 0
	})
	if out, err := execIn(t, testNamespace, podName, "verify", "/bin/sh", "-c", `kill -9 "$(cat /tmp/reader.pid)"`); err != nil {
		t.Fatalf("kill the reader mid-observation: %v: %s", err, out)
	}
	waitPod(t, podName, 3*time.Minute, "reader verify restarted and running", func(p *corev1.Pod) bool {
		for _, cs := range p.Status.InitContainerStatuses {
			if cs.Name == "verify" {
				return cs.RestartCount >= 1 && cs.State.Running != nil
			}
		}
		return false
	})
	waitPod(t, sender.Name, 3*time.Minute, "sender finished", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	slog := podLogs(t, testNamespace, sender.Name, "main")
	if !strings.Contains(slog, "complete=true") {
		t.Errorf("the sender did not complete after the reader was killed (held back?):\n%s", slog)
	}
	rlog := podLogs(t, testNamespace, podName, "verify")
	t.Logf("restarted reader: %s", strings.TrimSpace(rlog))
	if !strings.Contains(rlog, "resuming the observation in progress at byte") || !strings.Contains(rlog, "was killed") {
		prev, err := s.cs.CoreV1().Pods(testNamespace).GetLogs(podName, &corev1.PodLogOptions{Container: "verify", Previous: true}).DoRaw(ctx)
		p, _ := s.cs.CoreV1().Pods(testNamespace).Get(ctx, podName, metav1.GetOptions{})
		t.Errorf("the restarted reader did not resume the observation of the killed one:\n%s\nthe container before it (%v):\n%s\npod: %s", rlog, err, prev, podSummary(p))
	}
	if strings.Contains(rlog, "read: mismatch in") {
		t.Errorf("the resumed reader found bytes that do not match the pattern:\n%s", rlog)
	}
	u = waitCapture(t, "resumer", 2*time.Minute, "Ready again, no empty reader slot", func(u *unstructured.Unstructured) bool {
		st, _, _ := condition(u, "Ready")
		slots, _, _ := unstructured.NestedSlice(u.Object, "status", "emptyReaderSlots")
		return st == "True" && len(slots) == 0
	})
	if f, reason, _ := condition(u, "Failed"); f != "False" {
		t.Errorf("Failed=%s (%s) after a restarted reader", f, reason)
	}
}
