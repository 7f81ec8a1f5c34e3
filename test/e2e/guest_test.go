//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// guestRuns numbers guestRun's scripts.
var guestRuns atomic.Int64

// guestRun runs script with bash in the e2e VM's own namespaces — not in a pod, the way a
// digitiser host sits on the data network beside the node — and returns its output and
// exit status (an error when it could not be run). The script goes through the 9p share (/mnt/host/cmd/NAME-N.sh in the guest, N counting the runs)
// and is started by the debug shell on the VM's second serial port (guest-boot.sh), which
// prints its output lines with a prefix and then its exit status. Only one client can use
// that shell at a time: run concurrent work inside one script. It may run in a goroutine
// of its own.
func guestRun(name, script string, limit time.Duration) (string, int, error) {
	sock, share := os.Getenv("RINGCAP_E2E_GUEST_SHELL"), os.Getenv("RINGCAP_E2E_GUEST_SHARE")
	if sock == "" || share == "" {
		return "", -1, fmt.Errorf("RINGCAP_E2E_GUEST_SHELL and RINGCAP_E2E_GUEST_SHARE are not set: senders outside the cluster need the VM harness (make e2e), which sets them in e2e.env")
	}
	// A file of its own for every run: the guest mounts the share with cache=loose, so a
	// script rewritten under a name it has read before may run with its old content.
	name = fmt.Sprintf("%s-%d", name, guestRuns.Add(1))
	file := filepath.Join(share, "cmd", name+".sh")
	if err := os.WriteFile(file, []byte(script), 0o755); err != nil {
		return "", -1, fmt.Errorf("write guest script: %w", err)
	}
	defer func() { _ = os.Remove(file) }()
	c, err := net.Dial("unix", sock)
	if err != nil {
		return "", -1, fmt.Errorf("connect to the guest shell %s: %w", sock, err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(limit))
	// The markers are spelled so that the shell's echo of this line never matches them.
	// The status line starts on a line of its own even when the script's output does not end
	// in a newline (curl's JSON): printf ends that line first (an empty line is ignored).
	cmd := fmt.Sprintf("PS1=; PS2=; stty -echo; bash /mnt/host/cmd/%s.sh 2>&1 | sed -u \"s/^/$(printf 'O%%sT|' U)/\"; rc=${PIPESTATUS[0]}; printf '\\n'; echo \"R\"\"C|$rc|%s\"\n", name, name)
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", -1, fmt.Errorf("write to the guest shell: %w", err)
	}
	done := regexp.MustCompile(`RC\|(\d+)\|` + regexp.QuoteMeta(name) + `$`)
	var out strings.Builder
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if i := strings.Index(line, "OUT|"); i >= 0 {
			out.WriteString(line[i+4:] + "\n")
			continue
		}
		if m := done.FindStringSubmatch(line); m != nil {
			rc, _ := strconv.Atoi(m[1])
			return out.String(), rc, nil
		}
	}
	err = sc.Err()
	if err == nil {
		err = io.EOF // the shell closed the connection
	}
	return out.String(), -1, fmt.Errorf("guest script %s did not finish within %s: %w", name, limit, err)
}
