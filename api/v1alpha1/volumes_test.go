package v1alpha1_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The CRD's rule on spec.volumes names every volume source Kubernetes has: the four it
// allows, and every other one as refused, so a source added to corev1.VolumeSource in a
// Kubernetes release is not let through by a rule that does not know it.
func TestVolumesRuleNamesEverySource(t *testing.T) {
	b, err := os.ReadFile("../../config/crd/bases/ringcap.io_ringcaptures.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Properties map[string]struct {
								Rules []struct {
									Rule string `json:"rule"`
								} `json:"x-kubernetes-validations"`
							} `json:"properties"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	var rules string
	for _, r := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["volumes"].Rules {
		rules += r.Rule + "\n"
	}
	allowed := map[string]bool{"persistentVolumeClaim": true, "hostPath": true, "nfs": true, "emptyDir": true}
	src := reflect.TypeFor[corev1.VolumeSource]()
	for i := range src.NumField() {
		name, _, _ := strings.Cut(src.Field(i).Tag.Get("json"), ",")
		want := "!has(v." + name + ")"
		if allowed[name] {
			want = "(has(v." + name + ") ? 1 : 0)"
		}
		if !strings.Contains(rules, want) {
			t.Errorf("the spec.volumes rule does not have %s", want)
		}
	}
}
