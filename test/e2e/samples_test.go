//go:build e2e

package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// sampleStreamBytes replaces the samples' 4 GiB (sender --bytes, capture stop.bytes), which
// would take minutes on Soft-RoCE under emulation; everything else is the samples' own.
const sampleStreamBytes = 64 << 20

// stepSampleSenderPod is issue 56 item 6: the README's session as written. The capture
// config/samples/ringcapture.yaml and the sender pod config/samples/sender-pod.yaml, with
// CAPTURE_ENDPOINT and IMAGE_TAG put in as the README's sed does (and 64 MiB for 4 GiB),
// stream and verify. The sender pod is created while the namespace enforces Pod Security's
// restricted level, so it is admitted there as it stands; the label is removed afterwards.
func stepSampleSenderPod(t *testing.T) {
	ctx := context.Background()
	capture := sampleCapture(t)
	if _, err := s.dyn.Resource(gvrRingCapture).Namespace(testNamespace).Create(ctx, capture, metav1.CreateOptions{}); err != nil {
		t.Fatalf("apply config/samples/ringcapture.yaml: %v", err)
	}
	t.Cleanup(func() { deleteCaptureAndWait(t, capture.GetName()) })
	u := waitCapture(t, capture.GetName(), 3*time.Minute, "ReceiverReady", func(u *unstructured.Unstructured) bool {
		st, _, _ := condition(u, "ReceiverReady")
		return st == "True" && str(u, "status", "endpoint", "address") != ""
	})
	endpoint := str(u, "status", "endpoint", "address") + ":" + str(u, "status", "endpoint", "port")

	labelNamespace(t, podSecurityEnforce, "restricted")
	t.Cleanup(func() { labelNamespace(t, podSecurityEnforce, "") })
	pod := sampleSenderPod(t, endpoint)
	if _, err := s.cs.CoreV1().Pods(testNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("apply config/samples/sender-pod.yaml in a namespace enforcing restricted: %v", err)
	}
	podName := str(u, "status", "pod")
	t.Cleanup(func() { deletePodAndWait(t, testNamespace, pod.Name) })
	t.Cleanup(func() { logsOnFailure(t, pod.Name, "send", podName, "receiver", podName, "verify") })
	end := waitCapture(t, capture.GetName(), 5*time.Minute, "Succeeded", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Succeeded"
	})
	checkVerifiedRun(t, end, podLogs(t, testNamespace, pod.Name, "send"))
}

// sampleSenderPod is config/samples/sender-pod.yaml with the README's substitutions, on the
// RDMA node, in the test namespace, with the suite's image pull policy.
func sampleSenderPod(t *testing.T, endpoint string) *corev1.Pod {
	t.Helper()
	r := strings.NewReplacer("CAPTURE_ENDPOINT", endpoint, "IMAGE_TAG", s.tag, "--bytes, 4G,", "--bytes, 64M,")
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict([]byte(r.Replace(readFile(t, "../../config/samples/sender-pod.yaml"))), &pod); err != nil {
		t.Fatalf("config/samples/sender-pod.yaml is not a valid Pod: %v", err)
	}
	if len(pod.Spec.Containers) != 1 || !strings.Contains(strings.Join(pod.Spec.Containers[0].Args, " "), "--bytes 64M") {
		t.Fatalf("sender-pod.yaml no longer has one container sending --bytes 4G: update sampleStreamBytes and the replacement (%+v)", pod.Spec.Containers)
	}
	pod.Namespace, pod.Spec.NodeName = testNamespace, s.node
	pod.Labels = map[string]string{"app.kubernetes.io/part-of": "ringcap-e2e"}
	pod.Spec.Containers[0].ImagePullPolicy = s.pull
	return &pod
}

// sampleCapture is config/samples/ringcapture.yaml in the test namespace, stopping after
// sampleStreamBytes.
func sampleCapture(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(readFile(t, "../../config/samples/ringcapture.yaml")), &u.Object); err != nil {
		t.Fatalf("parse config/samples/ringcapture.yaml: %v", err)
	}
	_ = unstructured.SetNestedField(u.Object, int64(sampleStreamBytes), "spec", "receiver", "stop", "bytes")
	u.SetNamespace(testNamespace)
	return u
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
