package v1alpha1_test

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// crdJSONBudget is the most a CRD may take as JSON: half of the 256 KiB that all of an
// object's annotations may hold, which a client-side `kubectl apply` of the CRD fills with
// the CRD's JSON (kubectl.kubernetes.io/last-applied-configuration). Embedding a core type
// such as corev1.Volume (spec.volumes was one: 166 KB) brings in every field of it, and
// staying under this budget keeps room for the API to grow.
const crdJSONBudget = 128 << 10

func TestCRDsWithinApplyBudget(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(j) > crdJSONBudget {
			t.Errorf("%s is %d bytes as JSON, more than the budget of %d (half the 256 KiB of a client-side apply's annotation)", filepath.Base(f), len(j), crdJSONBudget)
		}
	}
}
