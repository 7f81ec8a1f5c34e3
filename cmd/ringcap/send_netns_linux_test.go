//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/nettest"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/pattern"
)

// inNetns is a command running this test binary's ringcap command line in network
// namespace ns (`ip netns exec`; the IPC namespace, and so the rings, stay the test's).
func inNetns(ctx context.Context, t *testing.T, ns string, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, self}, args...)...)
	cmd.Env = append(os.Environ(), runCLIEnv+"=1")
	return cmd
}

// startListening starts cmd and returns once it logs that it listens; its stderr so far
// and the rest are kept in errb.
func startListening(t *testing.T, cmd *exec.Cmd, errb *strings.Builder) chan error {
	t.Helper()
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); _ = pw.Close() }()
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			errb.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "Listening for packets") {
				close(listening)
			}
		}
	}()
	select {
	case <-listening:
	case err := <-done:
		t.Fatalf("recv ended before listening: %v\n%s", err, errb)
	case <-time.After(30 * time.Second):
		t.Fatalf("recv not listening in 30 s:\n%s", errb)
	}
	return done
}

// vethCase is one stream over the veth pair: its target, recv's and send's own flags, the
// placement rule both take, and whether the stream ends with a stop heap (SPEAD) or by
// the receiver's idle timeout (VDIF).
type vethCase struct {
	name, target     string
	recv, send, rule []string
	stopHeap         bool
}

// A sender in one network namespace streams 8 KiB packets over a veth pair (MTU 9000)
// into a receiver in another: SPEAD unicast and to a multicast group the receiver joins on
// its interface, VDIF unicast; one packet in 50 is dropped by the sender. The receiver
// allows the subnet of its address (or of the interface it joined the group on) only.
// The reader finds every byte sent in place and the dropped ones zero; the counts are
// exact, and the stream ends at the sender's stop heap (VDIF: the idle timeout).
func TestSendRecvOverVeth(t *testing.T) {
	spead := []string{"--protocol", "spead", "--spead-timestamp-id", "0x1600", "--spead-timestamp-step", "4096", "--spead-heap-bytes", "32K",
		"--spead-sync-time", "1700000000", "--spead-sample-rate", "1712000000"}
	vdif := []string{"--protocol", "vdif", "--vdif-frames-per-second", "1000", "--vdif-payload-bytes", "8192"}
	unicast := []string{"--udp-address", nettest.RxAddr.String(), "--allowed-senders", "listen-subnet"}
	for _, c := range []vethCase{
		{"spead-unicast", nettest.RxAddr.String(), unicast, []string{"--packet-bytes", "8K"}, spead, true},
		{"spead-multicast", "239.2.1.150", []string{"--multicast", "239.2.1.150", "--multicast-interface", nettest.RxDev, "--allowed-senders", "listen-subnet"},
			[]string{"--packet-bytes", "8K", "--multicast-interface", nettest.TxDev, "--multicast-ttl", "2"}, spead, true},
		{"vdif-unicast", nettest.RxAddr.String(), append(unicast, "--udp-idle-timeout", "1s"), nil, vdif, false},
	} {
		t.Run(c.name, func(t *testing.T) { sendOverVeth(t, c) })
	}
}

func sendOverVeth(t *testing.T, c vethCase) {
	tx, rx := nettest.VethPair(t)
	const total, pkt, every = 4 << 20, 8192, 50
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	key, port := testKey(t).String(), 7148
	summary := filepath.Join(t.TempDir(), "summary.json")
	target, rule := c.target, c.rule
	recv := inNetns(ctx, t, rx, append(append([]string{"recv", "-k", key, "--create", "-b", "262144", "-n", "8", "--udp-ports", strconv.Itoa(port),
		"--udp-buffer", "4M", "--metrics-addr", "127.0.0.1:0", "--summary-file", summary}, rule...), c.recv...)...)
	var errb strings.Builder
	done := startListening(t, recv, &errb)
	read := startReader(key)
	send := inNetns(ctx, t, tx, append(append([]string{"send", "--connect", target + ":" + strconv.Itoa(port), "--seed", "7", "--bytes", strconv.Itoa(total),
		"--drop-every", strconv.Itoa(every), "--rate", "32M"}, rule...), c.send...)...)
	out, err := send.CombinedOutput()
	if err != nil {
		t.Fatalf("send: %v\n%s", err, out)
	}
	if err := <-done; err != nil {
		t.Fatalf("recv: %v\n%s", err, errb.String())
	}
	st := readSummary(t, summary)
	if mc := strings.HasPrefix(target, "239."); mc && (len(st.Endpoint.MulticastGroups) != 1 || st.Endpoint.MulticastGroups[0] != target ||
		st.Endpoint.AddressReason != "groups joined on "+nettest.RxDev) || !mc && (st.Endpoint.Address != target || st.Endpoint.MulticastGroups != nil) {
		t.Errorf("endpoint %+v for a stream to %s", st.Endpoint, target)
	}
	sent := total/pkt - total/pkt/every
	want := statusdoc.Packets{Protocol: c.rule[1], Packets: uint64(sent), ReceivedPackets: uint64(sent), ReceivedBytes: uint64(sent * pkt),
		ZeroFilledBytes: uint64(total - sent*pkt), Blocks: total / 262144}
	if c.stopHeap {
		want.Packets, want.Control = want.Packets+1, 1
	}
	checkPackets(t, st.Packets, want)
	got := <-read
	if got.err != nil || len(got.data) != total {
		t.Fatalf("read %d bytes (%v), want %d; send: %s", len(got.data), got.err, total, out)
	}
	for i := range total / pkt {
		b := got.data[i*pkt : (i+1)*pkt]
		if (i+1)%every == 0 {
			if strings.Trim(string(b), "\x00") != "" {
				t.Fatalf("dropped packet %d not zero-filled", i)
			}
		} else if at, ok := pattern.Verify(b, 7, uint64(i*pkt)); !ok {
			t.Fatalf("packet %d: wrong at byte %d", i, at)
		}
	}
	t.Logf("%s: %s", target, strings.TrimSpace(string(out)))
}

// readSummary parses a receiver's summary file.
func readSummary(t *testing.T, path string) *statusdoc.Status {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := statusdoc.Parse(b)
	if err != nil {
		t.Fatal(fmt.Errorf("summary %s: %w", path, err))
	}
	return st
}
