package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testPage = "# Benchmarks\n\nmethod\n\n" + beginMark + "\nstale\n" + endMark + "\n\nafter\n"

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// record upserts a run's figures and regenerates the table: the metric re-measured is
// replaced (its goal kept), a new one added, the rest of the page untouched.
func TestRecordRegeneratesTheTable(t *testing.T) {
	dir := t.TempDir()
	records, page, log := filepath.Join(dir, "b.tsv"), filepath.Join(dir, "b.md"), filepath.Join(dir, "run.log")
	writeFile(t, records, "metric\tfigure\tlow\thigh\tanchor\tgoal\tdate\tcommit\tmachine\tcommand\tnote\n"+
		"ratio a/b\t0.5\t0.4\t0.6\tb\t≥ 0.9\t2026-01-01\told\thost\tmake bench-x\tnot met\n")
	writeFile(t, page, testPage)
	writeFile(t, log, "ratio a/b=0.95 [0.91, 0.99] (5 runs)\nratio c/b=1.10 [1.00, 1.20]\n")
	err := run([]string{"record", "-records", records, "-page", page, "-command", "make bench-x",
		"-machine", "host, idle", "-date", "2026-11-28", "-commit", "abc1234", log})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	want := "# Benchmarks\n\nmethod\n\n" + beginMark + "\n" +
		"| metric | figure | interval | goal | date | commit | machine | command | note |\n" +
		"|---|---|---|---|---|---|---|---|---|\n" +
		"| `ratio a/b` | 0.95 | 0.91–0.99 | ≥ 0.9 | 2026-11-28 | abc1234 | host, idle | `make bench-x` | (5 runs) |\n" +
		"| `ratio c/b` | 1.10 | 1.00–1.20 | none | 2026-11-28 | abc1234 | same | same |  |\n" +
		endMark + "\n\nafter\n"
	if string(got) != want {
		t.Errorf("page:\n%s\nwant:\n%s", got, want)
	}
}

func TestGenerateNeedsTheMarks(t *testing.T) {
	dir := t.TempDir()
	records, page := filepath.Join(dir, "b.tsv"), filepath.Join(dir, "b.md")
	writeFile(t, records, "metric\tfigure\tlow\thigh\tanchor\tgoal\tdate\tcommit\tmachine\tcommand\tnote\n")
	writeFile(t, page, "# no marks\n")
	err := run([]string{"-records", records, "-page", page})
	if err == nil || !strings.Contains(err.Error(), "BEGIN generated") {
		t.Fatalf("generate into a page without marks: %v", err)
	}
}

// The committed page is what the committed records generate (make verify-gen checks it too).
func TestCommittedTableIsCurrent(t *testing.T) {
	rs, err := readRecords("../../docs/benchmarks.tsv")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := splice(string(page), render(rs))
	if err != nil {
		t.Fatal(err)
	}
	if want != string(page) {
		t.Errorf("docs/benchmarks.md's table differs from docs/benchmarks.tsv: run make generate")
	}
}
