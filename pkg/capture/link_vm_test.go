//go:build vm

package capture

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringcap/ringcap/test/vm/vmtest"
)

// A receiver exports the counters of the rxe port it uses, counted from its start
// (ringcap_recv_link_increase_total, issue 54): after a stream over rxe its received
// packets have grown, by at least the stream's messages. The receiver runs as a pod's
// does: not root, no capabilities.
func TestVMLinkCounters(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	metrics := net.JoinHostPort("127.0.0.1", strconv.Itoa(vmPort()))
	o := oneObservation{key: vmKey(), connect: net.JoinHostPort(vmtest.IP1, strconv.Itoa(vmPort()))}
	o.recv = start(t, "ringcap-vm-unprivileged", strconv.Itoa(64<<20), bin, "recv", "-k", o.key, "--create", "-n", "8", "-b", strconv.Itoa(256<<10),
		"--mode", "send", "--qps", "4", "--listen", o.connect, "--metrics-addr", metrics, "--stop-observations", "2")
	waitListening(t, o.connect, o.recv)
	reader := start(t, bin, "ring", "read", "-k", o.key, "--verify", "41", "-s")
	const total, msg = 4 << 20, 65536
	out, err := run(t, 3*time.Minute, bin, "send", "--connect", o.connect, "--mode", "send", "--qps", "4", "--msg-bytes", strconv.Itoa(msg),
		"--bytes", strconv.Itoa(total), "--seed", "41")
	if err != nil || !strings.Contains(out, "complete=true") {
		t.Fatalf("send: %v\n%s", err, out)
	}
	if err := reader.wait(t, time.Minute); err != nil {
		t.Fatalf("ring read: %v\n%s", err, reader.output())
	}
	body := scrape(t, metrics)
	m := regexp.MustCompile(`(?m)^ringcap_recv_link_increase_total\{counter="rcvd_pkts",device="` + vmtest.Device1 + `",port="1",source="hw_counters"\} (\d+)$`).FindStringSubmatch(body)
	if m == nil {
		var lines []string
		for _, l := range strings.Split(body, "\n") {
			if strings.Contains(l, "link") {
				lines = append(lines, l)
			}
		}
		t.Fatalf("no rcvd_pkts increase of %s in /metrics; link lines:\n%s\nrecv:\n%s", vmtest.Device1, strings.Join(lines, "\n"), o.recv.output())
	}
	if n, _ := strconv.Atoi(m[1]); n < total/msg {
		t.Errorf("rcvd_pkts grew by %d, want at least the %d messages", n, total/msg)
	}
	_ = o.recv.cmd.Process.Signal(syscall.SIGTERM)
	_ = o.recv.wait(t, time.Minute)
}

// scrape reads /metrics at addr.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
