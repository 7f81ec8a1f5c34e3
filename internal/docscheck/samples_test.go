package docscheck

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

// readYAML decodes a file under the root strictly into v.
func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// argAfter returns the argument after flag in args, or "".
func argAfter(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// The sender pod the README and docs/network.md apply (config/samples/sender-pod.yaml) fits the
// sample capture it names (config/samples/ringcapture.yaml): it sends the pattern seed the
// capture's reader verifies and exactly the bytes after which the capture stops, to the
// endpoint put in place of CAPTURE_ENDPOINT, from an RDMA unit of its own, admitted under the
// restricted Pod Security level.
func TestSenderPodFitsSampleCapture(t *testing.T) {
	t.Parallel()
	var rc ringcapv1.RingCapture
	readYAML(t, "config/samples/ringcapture.yaml", &rc)
	var pod corev1.Pod
	readYAML(t, "config/samples/sender-pod.yaml", &pod)
	if len(pod.Spec.Containers) != 1 || len(rc.Spec.Readers) != 1 {
		t.Fatalf("sender pod has %d containers, the capture %d readers: want 1 and 1", len(pod.Spec.Containers), len(rc.Spec.Readers))
	}
	c := pod.Spec.Containers[0]
	if c.Image != "ringcap/ringcap:IMAGE_TAG" || len(c.Args) == 0 || c.Args[0] != "send" || argAfter(c.Args, "--connect") != "CAPTURE_ENDPOINT" {
		t.Errorf("sender image %q args %q, want ringcap/ringcap:IMAGE_TAG running send --connect CAPTURE_ENDPOINT", c.Image, c.Args)
	}
	if sc := c.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("sender securityContext %+v, want Pod Security's restricted level: non-root, no privilege escalation, every capability dropped, RuntimeDefault seccomp", sc)
	}
	if q := c.Resources.Limits["ringcap.io/rdma"]; q.String() != "1" {
		t.Errorf("sender limits %v, want one ringcap.io/rdma", c.Resources.Limits)
	}
	if seed, verify := argAfter(c.Args, "--seed"), argAfter(rc.Spec.Readers[0].Args, "--verify"); seed == "" || seed != verify {
		t.Errorf("sender --seed %q, reader --verify %q: want the same seed", seed, verify)
	}
	stop := rc.Spec.Receiver.Stop
	if stop.Bytes == nil || sizeArg(t, argAfter(c.Args, "--bytes")) != *stop.Bytes {
		t.Errorf("sender --bytes %q, capture stop %+v: want the capture to stop after exactly what is sent", argAfter(c.Args, "--bytes"), stop)
	}
	b, err := os.ReadFile(filepath.Join(root, "config/samples/sender-pod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "kubectl get rcap " + rc.Name + " -o jsonpath="; !strings.Contains(string(b), want) {
		t.Errorf("sender-pod.yaml does not read the endpoint of RingCapture %s (%q)", rc.Name, want)
	}
}

// sizeArg parses a byte count with an optional K, M or G (binary) suffix, as --bytes takes it.
func sizeArg(t *testing.T, s string) int64 {
	t.Helper()
	shift := map[byte]uint{'K': 10, 'M': 20, 'G': 30}
	var sh uint
	if n := len(s); n > 0 {
		if v, ok := shift[s[n-1]]; ok {
			sh, s = v, s[:n-1]
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("--bytes %q: %v", s, err)
	}
	return v << sh
}
