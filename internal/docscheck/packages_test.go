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

// root is the module's root, from this package's directory.
const root = "../.."

// The pages whose tables must name every package, and the table on each.
var pages = []struct{ path, table string }{
	{"README.md", "## Packages"},
	{"docs/architecture.md", "## Components"},
}

// unlisted are the trees whose packages the tables need not name one by one: hack/ holds the
// build's and the benchmarks' own tools, test/ the VM and e2e tiers and their helpers. Nothing
// of the product imports either; both pages name them as directories.
var unlisted = []string{"hack/", "test/"}

var backticked = regexp.MustCompile("`([^`]+)`")

// Every Go package of the module (as `go list ./...` finds them: directories holding .go
// files, without testdata and dot or underscore directories) is named in each page's table.
func TestPackageTablesNameEveryPackage(t *testing.T) {
	t.Parallel()
	pkgs := modulePackages(t)
	if !slices.Contains(pkgs, "pkg/capture/wire") {
		t.Fatalf("found no package pkg/capture/wire under %s: found %v", root, pkgs)
	}
	for _, p := range pages {
		names := tableNames(t, p.path, p.table)
		for _, pkg := range pkgs {
			if !listed(pkg, names) {
				t.Errorf("package %s is missing from the table under %q in %s: add a row naming `%s`", pkg, p.table, p.path, pkg)
			}
		}
	}
}

// modulePackages returns the module's package directories relative to its root, less the
// unlisted trees.
func modulePackages(t *testing.T) []string {
	t.Helper()
	var pkgs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !slices.Contains(pkgs, rel) && !underAny(rel, unlisted) {
			pkgs = append(pkgs, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list the module's packages: %v", err)
	}
	return pkgs
}

// tableNames returns what the rows of the table under heading name in backticks.
func tableNames(t *testing.T, page, heading string) []string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatalf("read %s: %v", page, err)
	}
	_, section, ok := strings.Cut(string(text), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no %q section", page, heading)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var names []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(line, -1) {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		t.Fatalf("the %q section of %s has no table naming packages in backticks", heading, page)
	}
	return names
}

// listed says whether names name pkg: exactly, or as a directory ("charts/") it is in.
func listed(pkg string, names []string) bool {
	for _, n := range names {
		if n == pkg || (strings.HasSuffix(n, "/") && (pkg+"/" == n || strings.HasPrefix(pkg, n))) {
			return true
		}
	}
	return false
}

func underAny(pkg string, trees []string) bool {
	for _, tree := range trees {
		if strings.HasPrefix(pkg+"/", tree) {
			return true
		}
	}
	return false
}
