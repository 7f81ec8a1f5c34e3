package cpost

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The core under ThreadSanitizer: testdata/stress.c (built by testdata/Makefile with gcc
// -fsanitize=thread, as make setup installs it) runs producers, posting threads sleeping on
// the futex and on an eventfd, and checkers, stopping lanes while busy and failing posts.
// Any TSan report, lost, duplicated or reordered item, wrong failure record or missed
// wake-up fails it.
func TestCoreUnderThreadSanitizer(t *testing.T) {
	out, err := exec.Command("make", "-s", "-C", "testdata", "OUT="+t.TempDir(), "check").CombinedOutput()
	if err != nil {
		t.Fatalf("make -C testdata check: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "ThreadSanitizer") {
		t.Fatalf("ThreadSanitizer reported:\n%s", out)
	}
	lanes := strings.Count(string(out), "cpost-stress: ok lane ")
	if lanes != 12 || !strings.Contains(string(out), "cpost-stress: ok\n") {
		t.Fatalf("want 12 lanes ok and the run ok, got %d lanes:\n%s", lanes, out)
	}
}

// Header is what the bindings include.
func TestHeaderIsTheFile(t *testing.T) {
	b, err := os.ReadFile("cpost.h")
	if err != nil {
		t.Fatal(err)
	}
	if Header != string(b) {
		t.Fatal("Header is not cpost.h")
	}
}
