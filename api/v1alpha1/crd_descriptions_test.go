package v1alpha1_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// listItem matches a line that starts a list item, where a line break is meant.
var listItem = regexp.MustCompile(`^([-*+]|[0-9]+[.)])\s`)

// midSentenceBreaks returns the line breaks of a description that fall inside a
// paragraph: neither line blank or indented, the second not a list item.
func midSentenceBreaks(desc string) []string {
	var found []string
	lines := strings.Split(desc, "\n")
	for i := 1; i < len(lines); i++ {
		prev, next := lines[i-1], lines[i]
		if strings.TrimSpace(prev) == "" || strings.TrimSpace(next) == "" ||
			strings.HasPrefix(prev, " ") || strings.HasPrefix(next, " ") || listItem.MatchString(next) {
			continue
		}
		found = append(found, fmt.Sprintf("%q / %q", prev, next))
	}
	return found
}

// walkDescriptions calls f with the path and text of every description string.
func walkDescriptions(path string, v any, f func(path, desc string)) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if s, ok := e.(string); ok && k == "description" {
				f(path, s)
				continue
			}
			walkDescriptions(path+"."+k, e, f)
		}
	case []any:
		for i, e := range t {
			walkDescriptions(fmt.Sprintf("%s[%d]", path, i), e, f)
		}
	}
}

// `kubectl explain` prints a description as it is stored: a line break in the middle
// of a sentence (where a Go doc comment wrapped) shows as a broken sentence. The
// generated CRDs, and the chart's copies, have one line per paragraph.
func TestCRDDescriptionsHaveNoMidSentenceBreaks(t *testing.T) {
	t.Parallel()
	var files []string
	for _, dir := range []string{"config/crd/bases", "charts/ringcap/files/crds"} {
		m, err := filepath.Glob(filepath.Join("..", "..", dir, "*.yaml"))
		if err != nil || len(m) == 0 {
			t.Fatalf("no CRDs in %s: %v", dir, err)
		}
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd map[string]any
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		n := 0
		walkDescriptions("", crd, func(path, desc string) {
			n++
			if breaks := midSentenceBreaks(desc); len(breaks) > 0 {
				t.Errorf("%s: description at %s has a line break inside a paragraph, where kubectl explain breaks the sentence (run make generate): %s", f, path, strings.Join(breaks, "; "))
			}
		})
		if n < 10 {
			t.Errorf("%s: only %d descriptions", f, n)
		}
	}
}

func TestMidSentenceBreaks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc string
		want int
	}{
		{"one line.", 0},
		{"wrapped\nsentence.", 1},
		{"paragraph one.\n\nparagraph two.", 0},
		{"Modes:\n- Send\n- Write", 0},
		{"Example:\n  kubectl get rcap", 0},
		{"a\nb\nc", 2},
	} {
		if got := len(midSentenceBreaks(tc.desc)); got != tc.want {
			t.Errorf("midSentenceBreaks(%q): %d, want %d", tc.desc, got, tc.want)
		}
	}
}
