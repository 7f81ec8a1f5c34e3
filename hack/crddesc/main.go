// Command crddesc rewrites CustomResourceDefinition YAML files so that every description
// keeps one line per paragraph: controller-gen copies a field's Go doc comment with its
// line breaks, and `kubectl explain` then breaks sentences where the source file
// wrapped them. Blank lines between paragraphs, list items and indented lines stay as
// they are.
//
//	go run ./hack/crddesc config/crd/bases/*.yaml
//
// It is part of `make generate` (after controller-gen), so `make verify-gen` checks
// its output too.
package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crddesc CRD.yaml...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := rewriteFile(path); err != nil {
			fmt.Fprintln(os.Stderr, "crddesc:", err)
			os.Exit(1)
		}
	}
}

// rewriteFile unwraps the descriptions of the CRD in path, in place.
func rewriteFile(path string) error {
	in, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read CRD: %w", err)
	}
	out, err := Rewrite(in)
	if err != nil {
		return fmt.Errorf("rewrite %s: %w", path, err)
	}
	if bytes.Equal(in, out) {
		return nil
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("write CRD: %w", err)
	}
	return nil
}

// Rewrite returns one CRD YAML document (as controller-gen writes it, with a leading
// "---") with the description strings unwrapped by Unwrap.
func Rewrite(doc []byte) ([]byte, error) {
	const sep = "---\n"
	body, hadSep := bytes.CutPrefix(doc, []byte(sep))
	var obj map[string]any
	if err := yaml.Unmarshal(body, &obj); err != nil {
		return nil, fmt.Errorf("parse YAML: %w", err)
	}
	unwrapDescriptions(obj)
	out, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("write YAML: %w", err)
	}
	if hadSep {
		out = append([]byte(sep), out...)
	}
	return out, nil
}

// unwrapDescriptions unwraps every string under a "description" key, at any depth (a
// property that is itself named description is a schema, not a string, and is walked).
func unwrapDescriptions(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if s, ok := e.(string); ok && k == "description" {
				t[k] = Unwrap(s)
				continue
			}
			unwrapDescriptions(e)
		}
	case []any:
		for _, e := range t {
			unwrapDescriptions(e)
		}
	}
}

// listItem matches a line that starts a list item: "- ", "* ", "+ ", "1. " or "1) ".
var listItem = regexp.MustCompile(`^([-*+]|[0-9]+[.)])\s`)

// KeepsLine reports whether the line break between prev and next is meant: it ends a
// paragraph (a blank line on either side), starts a list item or belongs to indented
// text (a code block or an indented list). Any other break is where the source comment
// happened to wrap, in the middle of a sentence.
func KeepsLine(prev, next string) bool {
	blank := func(s string) bool { return strings.TrimSpace(s) == "" }
	indented := func(s string) bool { return s != "" && (s[0] == ' ' || s[0] == '\t') }
	return blank(prev) || blank(next) || indented(prev) || indented(next) || listItem.MatchString(next)
}

// Unwrap joins the lines of each paragraph of a description with single spaces; the
// breaks KeepsLine keeps stay.
func Unwrap(s string) string {
	lines := strings.Split(s, "\n")
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			if KeepsLine(lines[i-1], l) {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		}
		if i+1 < len(lines) && !KeepsLine(l, lines[i+1]) {
			l = strings.TrimRight(l, " \t")
		}
		b.WriteString(l)
	}
	return b.String()
}
