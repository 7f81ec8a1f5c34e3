//go:build helm

package charts

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The notes' sender pod streams into the chart's sample as a pod must: it is a valid Pod in
// the installed data-plane image (registry and tag), with an RDMA unit of its own, connecting
// to the sample's endpoint with the seed the sample's reader verifies, and admitted under the
// restricted Pod Security level (non-root, no privilege escalation, every capability dropped,
// RuntimeDefault seccomp).
func TestNotesSenderPod(t *testing.T) {
	notes := renderNotes(t, "image.registry=reg.example.org:5000,image.tag=abc1234")
	var sample unstructured.Unstructured
	b, err := os.ReadFile(filepath.Join(chartDir, "examples/ringcapture.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &sample.Object); err != nil {
		t.Fatalf("sample RingCapture: %v", err)
	}
	if want := "kubectl get rcap " + sample.GetName() + " -o jsonpath="; !strings.Contains(notes, want) {
		t.Errorf("NOTES do not read the endpoint of the sample %q (want %q):\n%s", sample.GetName(), want, notes)
	}
	pod := notesSenderPod(t, notes)
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("sender pod has %d containers, want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if c.Image != "reg.example.org:5000/ringcap/ringcap:abc1234" {
		t.Errorf("sender image %q, want the installed data-plane image reg.example.org:5000/ringcap/ringcap:abc1234", c.Image)
	}
	if q := c.Resources.Limits["ringcap.io/rdma"]; q.String() != "1" {
		t.Errorf("sender limits %v, want one ringcap.io/rdma", c.Resources.Limits)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("sender restartPolicy %q, want Never (a finished stream is not started again)", pod.Spec.RestartPolicy)
	}
	checkSenderArgs(t, c.Args, sampleSeed(t, &sample))
	sc := c.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("sender securityContext %+v, want non-root, no privilege escalation, every capability dropped, RuntimeDefault seccomp", sc)
	}
}

// notesSenderPod parses the notes' second heredoc (the first is the sample), with the
// endpoint the shell would put in place of $EP.
func notesSenderPod(t *testing.T, notes string) corev1.Pod {
	t.Helper()
	_, body, ok := strings.Cut(notes, "kubectl apply -f - <<EOF\n")
	if !ok {
		t.Fatalf("NOTES have no sender pod heredoc:\n%s", notes)
	}
	body, _, _ = strings.Cut(body, "\n     EOF")
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "     ")
	}
	manifest := strings.ReplaceAll(strings.Join(lines, "\n"), "$EP", "10.88.0.24:18515")
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict([]byte(manifest), &pod); err != nil {
		t.Fatalf("sender pod in NOTES: %v\n%s", err, manifest)
	}
	if pod.Kind != "Pod" || pod.APIVersion != "v1" || pod.Name == "" {
		t.Errorf("sender pod is %s %s %q", pod.APIVersion, pod.Kind, pod.Name)
	}
	return pod
}

// sampleSeed is the seed the sample's reader verifies (ring read --verify SEED).
func sampleSeed(t *testing.T, sample *unstructured.Unstructured) string {
	t.Helper()
	readers, _, _ := unstructured.NestedSlice(sample.Object, "spec", "readers")
	for _, r := range readers {
		args, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "args")
		if i := slices.Index(args, "--verify"); i >= 0 && i+1 < len(args) {
			return args[i+1]
		}
	}
	t.Fatalf("the sample has no reader with --verify SEED: %v", readers)
	return ""
}

// checkSenderArgs wants `send --connect <the endpoint> ... --seed <seed>`.
func checkSenderArgs(t *testing.T, args []string, seed string) {
	t.Helper()
	connect, s := slices.Index(args, "--connect"), slices.Index(args, "--seed")
	if len(args) == 0 || args[0] != "send" || connect < 0 || connect+1 >= len(args) || args[connect+1] != "10.88.0.24:18515" {
		t.Errorf("sender args %q, want send --connect $EP", args)
	}
	if s < 0 || s+1 >= len(args) || args[s+1] != seed {
		t.Errorf("sender args %q, want --seed %s (what the sample's reader verifies)", args, seed)
	}
}
