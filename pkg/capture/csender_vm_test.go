//go:build vm

package capture

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/test/vm/vmtest"
)

var cSenderDone = regexp.MustCompile(`c-sender: done bytes=(\d+) blocks=(\d+) ok=(\d) message=(.*)`)

// TestVMCSender streams from examples/c-sender, a sender written in C from
// docs/wire-protocol.md alone, over rxe0 into `ringcap recv` on rxe1, while
// `ring read --verify` checks every byte of the seeded pattern: the page is
// enough to implement a sender. The second case has slices that do not divide
// the ring block and a small receive queue, so the sender must follow many
// Posted grants.
func TestVMCSender(t *testing.T) {
	vmtest.Require(t)
	bin, cSender := vmtest.Binary(t, "ringcap"), vmtest.Binary(t, "c-sender")
	const bufsz = 256 << 10
	cases := []struct {
		name               string
		qps                int
		total              uint64
		recvArgs, sendArgs []string
	}{
		{name: "qps=1", qps: 1, total: 3*bufsz + 12345},
		{name: "qps=4/uneven-slices", qps: 4, total: 5*bufsz + 777,
			recvArgs: []string{"--msg-bytes", "100000", "--rx-depth", "8"}, sendArgs: []string{"--tx-depth", "4"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seed := strconv.Itoa(51 + i)
			key, connect := vmKey(), net.JoinHostPort(vmtest.IP1, strconv.Itoa(vmPort()))
			dir := t.TempDir()
			summary, hdrFile := filepath.Join(dir, "summary.json"), filepath.Join(dir, "header")
			ringCreate(t, bin, key, 4, bufsz)
			recv := start(t, bin, append([]string{"recv", "-k", key, "--mode", "send", "--qps", strconv.Itoa(c.qps),
				"--listen", connect, "--metrics-addr", "", "--stop-observations", "1", "--summary-file", summary}, c.recvArgs...)...)
			waitListening(t, connect, recv)
			reader := start(t, bin, "ring", "read", "-k", key, "--verify", seed, "-s", "--header-out", hdrFile)

			out, err := run(t, 2*time.Minute, cSender, append([]string{connect, "--bytes", strconv.FormatUint(c.total, 10),
				"--seed", seed, "--qps", strconv.Itoa(c.qps), "--dev", vmtest.Device0, "--gid-index", "1",
				"--header", "SOURCE=c_sender_" + seed}, c.sendArgs...)...)
			m := cSenderDone.FindStringSubmatch(out)
			if err != nil || m == nil || m[1] != strconv.FormatUint(c.total, 10) || m[3] != "1" {
				t.Fatalf("c-sender (want Done with %d bytes, ok=1): %v\n%s\nrecv output:\n%s", c.total, err, out, recv.output())
			}
			t.Logf("c-sender:\n%s", out)

			if err := reader.wait(t, time.Minute); err != nil {
				t.Fatalf("ring read: %v\n%s", err, reader.output())
			}
			if r := parseRead(t, reader.output()); r.bytes != c.total || r.mismatches != 0 || r.observations != 1 {
				t.Fatalf("reader %+v, want %d verified bytes in 1 observation\n%s", r, c.total, reader.output())
			}
			hdr, err := os.ReadFile(hdrFile)
			if err != nil {
				t.Fatalf("read the observation's header: %v", err)
			}
			if !regexp.MustCompile(`(?m)^SOURCE +c_sender_` + seed + `$`).Match(hdr) {
				t.Errorf("the observation's header lacks the sender's SOURCE:\n%s", hdr)
			}

			if err := recv.wait(t, time.Minute); err != nil {
				t.Fatalf("recv: %v\n%s", err, recv.output())
			}
			st := readSummary(t, summary)
			if st.State != statusdoc.StateFinished || st.Observations != 1 || st.IncompleteObs != 0 ||
				st.BytesReceived != c.total || st.QueuePairs != c.qps || st.TransferMode != "send" ||
				st.LastObservation == nil || !st.LastObservation.Complete || st.LastObservation.Bytes != c.total {
				t.Fatalf("summary %+v\nrecv output:\n%s", st, recv.output())
			}
		})
	}
}
