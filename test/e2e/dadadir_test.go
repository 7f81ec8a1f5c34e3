//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ringcap/ringcap/pkg/dada"
)

const (
	// dadaDirOnNode is the hostPath the capture's reader writes its files to (in the guest).
	dadaDirOnNode   = "/var/tmp/ringcap-e2e-dada"
	dadaStreamBytes = 8 << 20
	dadaFileSize    = 3000000 // 8 MiB in files of 3000000, 3000000 and 2388608 bytes
)

// stepReaderWritesDadaFiles is issue 56 item 2: a capture with a hostPath volume whose reader
// (`ring read --dada-dir`) writes the observation as PSRDADA files. After the capture ends the
// files are on the node, read through the guest shell: named by their headers
// (UTC_START_OBS_OFFSET.000000.dada), split at the sender's FILE_SIZE, no part file left, and
// each file written back into a ring (`ring write -f`, header from the file) verifies
// byte-exact against the pattern at its OBS_OFFSET.
func stepReaderWritesDadaFiles(t *testing.T) {
	if out, rc, err := guestRun("dada-dir-make", "rm -rf "+dadaDirOnNode+" && mkdir -m 0777 "+dadaDirOnNode, time.Minute); err != nil || rc != 0 {
		t.Fatalf("make %s on the node: rc %d %v: %s", dadaDirOnNode, rc, err, out)
	}
	t.Cleanup(func() {
		if out, rc, err := guestRun("dada-dir-remove", "rm -rf "+dadaDirOnNode, time.Minute); err != nil || rc != 0 {
			t.Errorf("remove %s from the node: rc %d %v: %s", dadaDirOnNode, rc, err, out)
		}
	})
	newCapture(t, "diskwriter", "d15", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
			"name": "data", "hostPath": map[string]any{"path": dadaDirOnNode, "type": "Directory"}}}, "spec", "volumes")
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
			"name": "verify", "args": []any{"ring", "read", "-k", "d15", "--wait", "60s", "--verify", "1", "-s", "--dada-dir", "/data"},
			"volumeMounts": []any{map[string]any{"name": "data", "mountPath": "/data"}}}}, "spec", "readers")
	})
	u := waitCapture(t, "diskwriter", 3*time.Minute, "Listening", func(u *unstructured.Unstructured) bool {
		return str(u, "status", "phase") == "Listening" && str(u, "status", "endpoint", "address") != ""
	})
	sender := startSender(t, "diskwriter-sender", u, fmt.Sprintf("--qps 4 --mode send --msg-bytes 65536 --bytes %d --seed 1 --header FILE_SIZE=%d", dadaStreamBytes, dadaFileSize))
	waitVerified(t, "diskwriter", sender)
	out, rc, err := guestRun("dada-dir-check", dadaCheckScript, 2*time.Minute)
	t.Logf("files on the node, written back and verified:\n%s", out)
	if err != nil || rc != 0 {
		t.Fatalf("read the files on the node: rc %d %v", rc, err)
	}
	checkDadaFilesOnNode(t, out)
}

// dadaCheckScript lists the files in the guest with their sizes and headers, then writes
// each into a ring of its own (`ring write -f`, the header taken from the file) and verifies
// it (`ring read --verify 1`, the pattern at the header's OBS_OFFSET).
const dadaCheckScript = `set -euo pipefail
R=/mnt/host/bin/ringcap k=2d1500
cd ` + dadaDirOnNode + `
for f in *; do echo "== $f $(stat -c %s "$f")"; head -c 4096 "$f" | tr -d '\000'; echo; done
$R ring create -k $k -b 65536 -n 4
trap '$R ring destroy -k $k' EXIT
for f in *.dada; do
  $R ring read -k $k -s --verify 1 2>&1 | sed "s|^|verify $f: |" & r=$!
  $R ring write -k $k -f "$f" --wait 10s
  wait $r
done
`

// checkDadaFilesOnNode checks dadaCheckScript's output: three files named by their headers
// at OBS_OFFSET 0, 3000000 and 6000000, of FILE_SIZE data bytes each after HDR_SIZE bytes
// of header, and each verified without a mismatch.
func checkDadaFilesOnNode(t *testing.T, out string) {
	t.Helper()
	sections := regexp.MustCompile(`(?m)^== (\S+) (\d+)\n`).FindAllStringSubmatchIndex(out, -1)
	if len(sections) != 3 {
		t.Fatalf("%d files on the node, want 3 (8 MiB in files of %d bytes)", len(sections), dadaFileSize)
	}
	for i, sec := range sections {
		name, size := out[sec[2]:sec[3]], out[sec[4]:sec[5]]
		end := len(out)
		if i+1 < len(sections) {
			end = sections[i+1][0]
		}
		h, err := dada.ParseHeader([]byte(out[sec[1]:end]))
		if err != nil {
			t.Fatalf("%s: header: %v", name, err)
		}
		utc, _ := h.Get("UTC_START")
		off, _ := h.OBSOffset()
		fileSize, _ := h.FileSize()
		hdrSize, _ := h.HDRSize()
		want := min(dadaFileSize, dadaStreamBytes-i*dadaFileSize)
		if name != fmt.Sprintf("%s_%016d.000000.dada", utc, off) || off != uint64(i*dadaFileSize) || fileSize != uint64(want) ||
			size != strconv.Itoa(hdrSize+want) {
			t.Errorf("file %d: %s of %s bytes with UTC_START %s OBS_OFFSET %d FILE_SIZE %d HDR_SIZE %d; want it named by them, at offset %d with %d data bytes",
				i, name, size, utc, off, fileSize, hdrSize, i*dadaFileSize, want)
		}
		if !strings.Contains(out, fmt.Sprintf("verify %s: read: bytes=%d ", name, want)) {
			t.Errorf("%s: not verified with %d bytes", name, want)
		}
	}
	if n := strings.Count(out, " mismatches=0"); n != 3 {
		t.Errorf("%d files verified without a mismatch, want 3", n)
	}
}
