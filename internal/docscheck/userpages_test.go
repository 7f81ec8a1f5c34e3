package docscheck

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxLine is the longest line a page may have, in characters.
const maxLine = 400

// developerPages are the pages written for those who work on ringcap: they may list tests
// and measured runs. Every other page of docs/ is a user page.
var developerPages = []string{"development.md", "benchmarks.md", "architecture.md"}

// testsHeading matches a heading of a test inventory ("## Tests", "### Tests and checks").
var testsHeading = regexp.MustCompile(`^#+\s+Tests?\b`)

// docPages lists README.md and every page of docs/, relative to the root.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages in %s/docs: %v", root, err)
	}
	for i, p := range pages {
		pages[i], _ = filepath.Rel(root, p)
	}
	return append([]string{"README.md"}, pages...)
}

// pageLines returns the lines of a page (relative to the root).
func pageLines(t *testing.T, page string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, page))
	if err != nil {
		t.Fatalf("open %s: %v", page, err)
	}
	defer func() { _ = f.Close() }()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", page, err)
	}
	return lines
}

// Every page keeps its lines to maxLine characters and names no path of the machine it was
// written on.
func TestPageLines(t *testing.T) {
	t.Parallel()
	for _, page := range docPages(t) {
		for i, line := range pageLines(t, page) {
			if n := len([]rune(line)); n > maxLine {
				t.Errorf("%s:%d: line of %d characters, more than %d: break it", page, i+1, n, maxLine)
			}
			if strings.Contains(line, "/work/") {
				t.Errorf("%s:%d: names a path under /work, which exists only on a development machine", page, i+1)
			}
		}
	}
}

// A user page says what a user does and why; the tests behind it are listed in
// docs/development.md ("What each page's feature is tested by"), not in a section of its own.
func TestUserPagesHaveNoTestInventory(t *testing.T) {
	t.Parallel()
	for _, page := range docPages(t) {
		if slices.Contains(developerPages, filepath.Base(page)) {
			continue
		}
		fence := false
		for i, line := range pageLines(t, page) {
			if strings.HasPrefix(line, "```") {
				fence = !fence
			}
			if !fence && testsHeading.MatchString(line) {
				t.Errorf("%s:%d: %q: move the test inventory to docs/development.md and link it from the page's last line", page, i+1, line)
			}
		}
	}
}
