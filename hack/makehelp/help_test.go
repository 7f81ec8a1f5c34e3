// Package makehelp checks the Makefile's self-documentation: `make help` lists every
// target of Makefile and hack/make/*.mk with its one-line description (the
// `## target: description` comment above it), and `make` with no target builds.
package makehelp

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const root = "../.."

// ruleHead matches the targets of a rule line ("a b: prereqs"), not a variable
// assignment (":=", "::=") and not a recipe line (those start with a tab).
var ruleHead = regexp.MustCompile(`^([A-Za-z0-9_./ -]+?)\s*:(?:[^=:]|$)`)

// makefileTargets returns the targets the makefiles define or declare .PHONY,
// special targets (".PHONY", ".SECONDEXPANSION") left out.
func makefileTargets(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "hack/make/*.mk"))
	if err != nil || len(files) == 0 {
		t.Fatalf("list hack/make/*.mk: %v (%d files)", err, len(files))
	}
	targets := map[string]bool{}
	for _, f := range append([]string{filepath.Join(root, "Makefile")}, files...) {
		for _, name := range targetsIn(t, f) {
			targets[name] = true
		}
	}
	return targets
}

func targetsIn(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read makefile: %v", err)
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, ".PHONY:"); ok {
			names = append(names, strings.Fields(rest)...)
			continue
		}
		if m := ruleHead.FindStringSubmatch(line); m != nil && !strings.HasPrefix(line, ".") {
			names = append(names, strings.Fields(m[1])...)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return names
}

// runMake runs make in the repository root, on its own: not as a sub-make of a
// `make test` that runs this test (whose MAKEFLAGS would carry its jobserver).
// It returns make's standard output.
func runMake(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory", "-C", root}, args...)...)
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEFILES", "MAKE_TERMOUT", "MAKE_TERMERR":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// helpEntries runs `make help` and returns target -> description.
func helpEntries(t *testing.T) map[string]string {
	t.Helper()
	out := runMake(t, "-s", "help")
	entries := map[string]string{}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		name, desc, _ := strings.Cut(strings.TrimSpace(line), " ")
		if _, dup := entries[name]; dup {
			t.Errorf("make help lists %q twice", name)
		}
		entries[name] = strings.TrimSpace(desc)
	}
	return entries
}

func TestHelpDescribesEveryTarget(t *testing.T) {
	targets := makefileTargets(t)
	if len(targets) < 10 || !targets["build"] || !targets["e2e-down"] {
		t.Fatalf("found only %d targets in the makefiles: %v", len(targets), targets)
	}
	entries := helpEntries(t)
	for name := range targets {
		if entries[name] == "" {
			t.Errorf("target %q has no description in `make help`: add a `## %s: <what it does>` line above it", name, name)
		}
	}
	for name := range entries {
		if !targets[name] {
			t.Errorf("`make help` lists %q, which no makefile defines", name)
		}
	}
}

// `make` with no target builds (the included hack/make/*.mk define targets before
// `all`, so the default goal has to be set).
func TestDefaultGoalBuilds(t *testing.T) {
	out := runMake(t, "-n", "GO=go")
	if got := strings.TrimSpace(out); got != "go build -o bin/ ./cmd/..." {
		t.Errorf("make with no target would run:\n%s\nwant only: go build -o bin/ ./cmd/...", got)
	}
}
