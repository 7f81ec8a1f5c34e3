package wire

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// cSenderDir is the C sender written from the specification alone.
const cSenderDir = "../../../examples/c-sender"

// The C sender of examples/c-sender (gcc and libibverbs-dev, as make setup
// installs them) encodes and decodes the specification's examples as this
// package does, and streams the documented test pattern: the page is enough
// to write a sender. TestVMCSender streams from it over Soft-RoCE.
func TestCSenderSpeaksTheSpecification(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("make", "-s", "-C", cSenderDir, "OUT="+t.TempDir(), "check").CombinedOutput()
	if err != nil {
		t.Fatalf("make -C examples/c-sender check: %v\n%s", err, out)
	}
	var passed []string
	for _, line := range strings.Split(string(out), "\n") {
		if ok, found := strings.CutPrefix(line, "check: ok "); found {
			passed = append(passed, strings.FieldsFunc(ok, func(r rune) bool { return r == ' ' || r == ',' })...)
		}
	}
	for _, name := range []string{"preamble", "settings", "hello", "held", "accept-send", "posted", "end", "done", "pattern-seed-7", "placement"} {
		if !slices.Contains(passed, name) {
			t.Errorf("the C sender's check did not pass %s:\n%s", name, out)
		}
	}
}
