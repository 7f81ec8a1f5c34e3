//go:build helm

package charts

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The names the docs give for a release called ringcap (docs/dra.md, docs/glossary.md,
// docs/install.md, config/samples/ringcapture-dra.yaml) are the names the chart renders.
func TestDocumentedNamesForReleaseRingcap(t *testing.T) {
	objs := renderAs(t, "ringcap", "", "plugin.mode=dra")
	for _, key := range []string{
		"DeviceClass/ringcap-rdma", "DeviceClass/ringcap-roce-v2",
		"ClusterRole/ringcap-ringcapture-editor", "ClusterRole/ringcap-ringcapture-viewer",
	} {
		if _, ok := objs[key]; !ok {
			t.Errorf("release ringcap does not render %s, which the docs name; it renders %v", key, objs.keys())
		}
	}
	var sample unstructured.Unstructured
	readSample(t, "../config/samples/ringcapture-dra.yaml", &sample)
	class, _, _ := unstructured.NestedString(sample.Object, "spec", "receiver", "deviceClassName")
	if _, ok := objs["DeviceClass/"+class]; !ok {
		t.Errorf("config/samples/ringcapture-dra.yaml claims DeviceClass %q, which release ringcap does not render", class)
	}
}

// readSample decodes a YAML file strictly into u.
func readSample(t *testing.T, path string, u *unstructured.Unstructured) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &u.Object); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
