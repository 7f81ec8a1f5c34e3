package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestUnwrap(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"one line", "key is the ring's key.", "key is the ring's key."},
		{"wrapped sentence", "readers are containers that read\nthe ring beside the receiver.", "readers are containers that read the ring beside the receiver."},
		{"trailing space before the break", "one \ntwo", "one two"},
		{"paragraphs stay", "first\nparagraph.\n\nsecond\nparagraph.", "first paragraph.\n\nsecond paragraph."},
		{"list items stay", "Modes:\n- Send is two-sided\n  and posted.\n- Write is one-sided.", "Modes:\n- Send is two-sided\n  and posted.\n- Write is one-sided."},
		{"numbered items stay", "Steps:\n1. create\n2) destroy", "Steps:\n1. create\n2) destroy"},
		{"indented block stays", "Example:\n  kubectl get rcap\n  kubectl describe rcap", "Example:\n  kubectl get rcap\n  kubectl describe rcap"},
		{"enum values (k8s style)", "Policy.\n\nPossible enum values:\n - `\"Always\"` means\nalways.", "Policy.\n\nPossible enum values:\n - `\"Always\"` means\nalways."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unwrap(tc.in); got != tc.want {
				t.Errorf("Unwrap(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// Rewrite changes the descriptions and nothing else, and a second run changes nothing.
func TestRewriteChangesOnlyDescriptions(t *testing.T) {
	doc := []byte(`---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  versions:
  - additionalPrinterColumns:
    - description: |-
        Bytes per
        block
      jsonPath: .spec.blockBytes
      name: Block bytes
      priority: 1
      type: integer
    name: v1
    schema:
      openAPIV3Schema:
        description: |-
          Thing is a
          thing.
        properties:
          description:
            description: |-
              description is a field
              named description.
            maxLength: 4294967296
            type: string
        type: object
`)
	out, err := Rewrite(doc)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(out[len("---\n"):], &got); err != nil {
		t.Fatalf("rewritten YAML: %v\n%s", err, out)
	}
	schema := got["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)
	col := schema["additionalPrinterColumns"].([]any)[0].(map[string]any)
	root := schema["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
	field := root["properties"].(map[string]any)["description"].(map[string]any)
	for _, c := range []struct{ got, want any }{
		{col["description"], "Bytes per block"},
		{root["description"], "Thing is a thing."},
		{field["description"], "description is a field named description."},
		{field["maxLength"], float64(4294967296)},
	} {
		if c.got != c.want {
			t.Errorf("got %v, want %v\n%s", c.got, c.want, out)
		}
	}
	again, err := Rewrite(out)
	if err != nil || string(again) != string(out) {
		t.Errorf("second Rewrite changed the output (err %v):\n%s\n---\n%s", err, out, again)
	}
}

// On the project's CRDs the rewrite keeps everything but the descriptions' line breaks.
func TestRewriteKeepsProjectCRDs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	for _, f := range files {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Rewrite(in)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var a, b map[string]any
		if err := yaml.Unmarshal(in, &a); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(out, &b); err != nil {
			t.Fatal(err)
		}
		unwrapDescriptions(a)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: the rewrite changed more than the descriptions", f)
		}
	}
}
