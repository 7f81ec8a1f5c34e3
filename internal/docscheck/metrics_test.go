package docscheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	metricLiteral = regexp.MustCompile(`"(ringcap_[a-z0-9_]+)"`)
	metricRow     = regexp.MustCompile("(?m)^\\| `(ringcap_[a-z0-9_]+)[{`]")
)

// Every metric name the product's code spells out (a "ringcap_..." string literal outside
// tests, in cmd/, internal/ and pkg/) has a row in docs/troubleshooting.md's "Every metric"
// tables, so a user reading the page sees every series a component exports.
func TestEveryMetricDocumented(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(root, "docs/troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Every metric\n")
	if !ok {
		t.Fatal(`docs/troubleshooting.md has no "## Every metric" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	var documented []string
	for _, m := range metricRow.FindAllStringSubmatch(sec, -1) {
		documented = append(documented, m[1])
	}
	names := codeMetricNames(t)
	if len(names) < 10 {
		t.Fatalf("found only %d metric names in the code: %v", len(names), names)
	}
	for name, file := range names {
		if !slices.Contains(documented, name) {
			t.Errorf("%s (%s) has no row in docs/troubleshooting.md's \"Every metric\" tables", name, file)
		}
	}
}

// codeMetricNames maps each "ringcap_..." literal of the non-test Go files under cmd/,
// internal/ and pkg/ to a file that spells it.
func codeMetricNames(t *testing.T) map[string]string {
	t.Helper()
	names := map[string]string{}
	for _, dir := range []string{"cmd", "internal", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			for _, m := range metricLiteral.FindAllSubmatch(src, -1) {
				names[string(m[1])] = rel
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walk %s: %v", dir, err)
		}
	}
	return names
}
