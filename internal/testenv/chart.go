package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// RenderChart renders charts/ringcap with `helm template release --namespace namespace`
// and the given --set values, and returns its objects. helm comes from PATH, else
// $RINGCAP_TOOLS (hack/install-tools.sh).
func RenderChart(release, namespace string, set ...string) ([]*unstructured.Unstructured, error) {
	args := []string{"template", release, filepath.Join(RepoRoot(), "charts", "ringcap"), "--namespace", namespace}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(helmBin(), args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(&out, 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decode the rendered chart: %w", err)
		}
		if m != nil {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

func helmBin() string {
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	dir := os.Getenv("RINGCAP_TOOLS")
	if dir == "" {
		dir = "/var/tmp/ringcap/bin"
	}
	return filepath.Join(dir, "helm")
}
