package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/ingesttest"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/ingest/vdif"
)

// freeUDPPort returns a UDP port free now on 127.0.0.1.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// packetRun is a `ringcap recv` of a packet protocol running in this process
// into ring key, with its status on metrics and its summary in summary.
type packetRun struct {
	key, metrics, summary string
	udpPorts              []int
	cancel                context.CancelFunc
	done                  chan error
}

// packetSetup is how a test runs recv: it makes the ring (--create) or
// finds one made for it (8 blocks of 4096 bytes), and on how many ports it
// listens.
type packetSetup struct {
	create bool
	ports  int
}

// startPacketRecv runs recv with args (the protocol's flags) into a ring of
// 8 blocks of 4096 bytes.
func startPacketRecv(t *testing.T, setup packetSetup, args ...string) *packetRun {
	t.Helper()
	r := &packetRun{metrics: "127.0.0.1:" + strconv.Itoa(freePort(t)), summary: filepath.Join(t.TempDir(), "summary.json"), done: make(chan error, 1)}
	geometry := []string{"-b", "4096", "-n", "8", "-a", "4096"}
	if setup.create {
		r.key = testKey(t).String()
		args = append(append(args, "--create"), geometry...)
	} else {
		r.key = createRing(t, geometry...)
	}
	var ports []string
	for range max(setup.ports, 1) {
		r.udpPorts = append(r.udpPorts, freeUDPPort(t))
		ports = append(ports, strconv.Itoa(r.udpPorts[len(r.udpPorts)-1]))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	r.cancel = cancel
	all := append([]string{"recv", "-k", r.key, "--udp-ports", strings.Join(ports, ","), "--udp-address", "127.0.0.1", "--udp-buffer", "4M",
		"--metrics-addr", r.metrics, "--summary-file", r.summary}, args...)
	go func() {
		_, errs, err := ringcap(ctx, all...)
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, errs)
		}
		r.done <- err
	}()
	t.Cleanup(cancel)
	return r
}

// status reads /status (nil while the server does not answer).
func (r *packetRun) status() *statusdoc.Status {
	resp, err := http.Get("http://" + r.metrics + "/status")
	if err != nil {
		return nil
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	st, err := statusdoc.Parse(b)
	if err != nil {
		return nil
	}
	return st
}

// waitStatus polls /status until ok(status) holds.
func (r *packetRun) waitStatus(t *testing.T, what string, ok func(*statusdoc.Status) bool) *statusdoc.Status {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if st := r.status(); st != nil && ok(st) {
			return st
		}
		select {
		case err := <-r.done:
			t.Fatalf("recv ended waiting for %s: %v", what, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	st := r.status()
	t.Fatalf("no %s in time: %+v (packets %+v)", what, st, st.Packets)
	return nil
}

// wait waits for recv to return, then reads its summary.
func (r *packetRun) wait(t *testing.T) *statusdoc.Status {
	t.Helper()
	if err := <-r.done; err != nil {
		t.Fatalf("recv: %v", err)
	}
	b, err := os.ReadFile(r.summary)
	if err != nil {
		t.Fatal(err)
	}
	st, err := statusdoc.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// send writes the packets to the receiver's ports on loopback, packet i to
// port i modulo the ports, from a socket per port.
func (r *packetRun) send(t *testing.T, packets [][]byte) {
	t.Helper()
	var conns []net.Conn
	for _, port := range r.udpPorts {
		c, err := net.Dial("udp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		conns = append(conns, c)
	}
	for i, p := range packets {
		if _, err := conns[i%len(conns)].Write(p); err != nil {
			t.Fatal(err)
		}
	}
}

// readRing reads one observation of ring key with a pkg/dada reader.
func readPacketRing(ctx context.Context, key string) (*dada.Header, []byte, error) {
	h, err := dada.ConnectWait(ctx, mustKey(key), dada.ConnectOptions{}, 10*time.Second)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = h.Close() }()
	rd, err := h.LockRead(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = rd.Close() }()
	hb, err := rd.ReadHeader(ctx)
	if err != nil {
		return nil, nil, err
	}
	hd, err := dada.ParseHeader(hb)
	if err != nil {
		return nil, nil, err
	}
	var data []byte
	for {
		b, err := rd.NextBlock(ctx)
		if errors.Is(err, io.EOF) {
			return hd, data, nil
		}
		if err != nil {
			return hd, data, err
		}
		data = append(data, b.Data...)
		if err := rd.MarkCleared(); err != nil || b.EOD {
			return hd, data, err
		}
	}
}

// ringRead is what a reader read of the ring, delivered on a channel.
type ringRead struct {
	hdr  *dada.Header
	data []byte
	err  error
}

func startReader(key string) chan ringRead {
	ch := make(chan ringRead, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		hd, data, err := readPacketRing(ctx, key)
		ch <- ringRead{hd, data, err}
	}()
	return ch
}

// checkPattern checks data against the test pattern, zero in [gap0, gap1).
func checkPattern(t *testing.T, data []byte, total, gap0, gap1 int) {
	t.Helper()
	if len(data) != total {
		t.Fatalf("read %d bytes, want %d", len(data), total)
	}
	for i, b := range data {
		want := ingesttest.PatternByte(uint64(i))
		if i >= gap0 && i < gap1 {
			want = 0
		}
		if b != want {
			t.Fatalf("byte %d = %d, want %d (gap [%d, %d))", i, b, want, gap0, gap1)
		}
	}
}

// checkPackets checks the packets section against want and its invariant.
func checkPackets(t *testing.T, got *statusdoc.Packets, want statusdoc.Packets) {
	t.Helper()
	if got == nil || *got != want {
		t.Fatalf("packets %+v, want %+v", got, want)
	}
	if got.Outcomes() != got.Packets {
		t.Fatalf("packets %+v: outcomes %d, not %d", got, got.Outcomes(), got.Packets)
	}
}

const (
	speadHeap = 1024  // bytes per heap, one packet each
	speadStep = 2048  // timestamp units per heap
	speadRate = 8192  // timestamp units per second: 4 heaps a second
	speadSync = 1.7e9 // Unix seconds of timestamp 0
	speadT0   = 10 * speadRate
)

// speadHeap is heap i of the test stream: stream bytes i*speadHeap on.
func speadHeapPacket(i int) []byte {
	return ingesttest.SPEADHeap(48, uint64(i+1), speadHeap, 0, ingesttest.Pattern(uint64(i*speadHeap), speadHeap),
		ingesttest.Imm(0x1600, speadT0+uint64(i)*speadStep))
}

// speadPackets are 24 heaps in order (6 blocks of 4096 bytes) but heap 5,
// heap 7 twice, and a malformed packet after heap 12.
func speadPackets() [][]byte {
	var out [][]byte
	for i := range 24 {
		p := speadHeapPacket(i)
		switch i {
		case 5:
			continue
		case 7:
			out = append(out, p)
		case 12:
			out = append(out, []byte("not a SPEAD packet"))
		}
		out = append(out, p)
	}
	return out
}

// `ringcap recv --protocol spead` on loopback: a real ring read back with a
// pkg/dada reader (header keys, every byte, the dropped heap zero-filled),
// /status's packets exact while running, /metrics, and the end on a stop.
func TestRecvSPEADLoopback(t *testing.T) {
	r := startPacketRecv(t, packetSetup{}, "--protocol", "spead", "--spead-timestamp-id", "0x1600", "--spead-timestamp-step", strconv.Itoa(speadStep),
		"--spead-sync-time", strconv.Itoa(speadSync), "--spead-sample-rate", strconv.Itoa(speadRate), "--header", "SOURCE=J0437-4715")
	read := startReader(r.key)
	r.waitStatus(t, "state Listening", func(s *statusdoc.Status) bool { return s.State == statusdoc.StateListening })
	r.send(t, speadPackets())
	want := statusdoc.Packets{Protocol: "spead", Packets: 25, ReceivedPackets: 23, ReceivedBytes: 23 * speadHeap, Duplicate: 1, Malformed: 1, Blocks: 2, ZeroFilledBytes: 1024}
	st := r.waitStatus(t, "every packet counted", func(s *statusdoc.Status) bool { return s.Packets != nil && s.Packets.Packets == 25 })
	if st.State != statusdoc.StateReceiving || st.Header["UTC_START"] != "2023-11-14-22:13:30" || st.RingFill == nil || st.CurrentObservation == nil {
		t.Errorf("state %s, header %v, ring fill %+v, observation %+v", st.State, st.Header, st.RingFill, st.CurrentObservation)
	}
	checkPackets(t, st.Packets, want) // 6 blocks, a window of 4: 2 handed over
	checkMetrics(t, r.metrics, `ringcap_packets_total{outcome="received"} 23`, `ringcap_packets_total{outcome="duplicate"} 1`,
		`ringcap_packets_total{outcome="malformed"} 1`, `ringcap_packet_bytes_total 23552`, `ringcap_packet_zero_filled_bytes_total 1024`)
	r.cancel() // SIGTERM: the open blocks are handed over, the data end
	final := r.wait(t)
	want.Blocks = 6
	checkPackets(t, final.Packets, want)
	if final.State != statusdoc.StateFinished || final.Observations != 1 || final.BytesReceived != 23*speadHeap {
		t.Errorf("final status %+v", final)
	}
	got := <-read
	if got.err != nil {
		t.Fatal(got.err)
	}
	checkPattern(t, got.data, 24*speadHeap, 5*speadHeap, 6*speadHeap)
	checkHeader(t, got.hdr, map[string]string{"UTC_START": "2023-11-14-22:13:30", "RINGCAP_PROTOCOL": "spead", "OBS_OFFSET": "0",
		"SOURCE": "J0437-4715", "RINGCAP_SPEAD_TIMESTAMP": strconv.Itoa(speadT0), "HDR_SIZE": "4096"})
}

// checkMetrics checks that /metrics has each line.
func checkMetrics(t *testing.T, addr string, lines ...string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range lines {
		if !strings.Contains(string(b), l+"\n") {
			t.Errorf("/metrics lacks %q", l)
		}
	}
}

// checkHeader checks header keys.
func checkHeader(t *testing.T, hd *dada.Header, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := hd.Get(k); !ok || got != v {
			t.Errorf("header %s = %q, want %q\n%s", k, got, v, hd)
		}
	}
}

// vdifPackets are 24 frames of threads 0 and 1 (12 frame numbers of 2 x 512
// bytes from second 100 of the 2025 epoch, 8 a second: 3 blocks of 4096)
// but frame 7, frame 9 twice, and a malformed packet after frame 12.
func vdifPackets() [][]byte {
	var out [][]byte
	for i := range 24 {
		fn := i / 2
		h := vdif.Header{Seconds: uint32(100 + fn/8), RefEpoch: 50, FrameNumber: uint32(fn % 8), BitsMinus1: 1, ThreadID: uint16(i % 2), StationID: 'E'<<8 | 'f'}
		p := ingesttest.VDIF(h, ingesttest.Pattern(uint64(i*512), 512))
		switch i {
		case 7:
			continue
		case 9:
			out = append(out, p)
		case 12:
			out = append(out, []byte("short"))
		}
		out = append(out, p)
	}
	return out
}

// `ringcap recv --protocol vdif` on loopback, ended by --stop-bytes at the
// last frame: every byte read back, the dropped frame zero-filled, the
// summary's packets exact.
func TestRecvVDIFLoopback(t *testing.T) {
	r := startPacketRecv(t, packetSetup{create: true}, "--protocol", "vdif", "--vdif-frames-per-second", "8", "--vdif-threads", "0,1", "--stop-bytes", strconv.Itoa(23*512))
	read := startReader(r.key)
	r.waitStatus(t, "state Listening", func(s *statusdoc.Status) bool { return s.State == statusdoc.StateListening })
	r.send(t, vdifPackets())
	final := r.wait(t)
	checkPackets(t, final.Packets, statusdoc.Packets{Protocol: "vdif", Packets: 25, ReceivedPackets: 23, ReceivedBytes: 23 * 512,
		Duplicate: 1, Malformed: 1, Blocks: 3, ZeroFilledBytes: 512})
	if final.State != statusdoc.StateFinished || final.Message != "stop condition reached" {
		t.Errorf("final state %s: %s", final.State, final.Message)
	}
	got := <-read
	if got.err != nil {
		t.Fatal(got.err)
	}
	checkPattern(t, got.data, 24*512, 7*512, 8*512)
	checkHeader(t, got.hdr, map[string]string{"UTC_START": "2025-01-01-00:01:40", "RINGCAP_PROTOCOL": "vdif", "NBIT": "2",
		"RINGCAP_VDIF_STATION": "Ef", "RINGCAP_VDIF_THREADS": "2", "BYTES_PER_SECOND": "8192"})
}

// Bad packet-receiver flags fail before any ring or socket is touched,
// naming what is wrong.
func TestRecvPacketFlagsRejected(t *testing.T) {
	spead := []string{"--protocol", "spead", "--udp-ports", "7148", "--spead-timestamp-id", "0x1600", "--spead-timestamp-step", "2048",
		"--spead-sync-time", "1700000000", "--spead-sample-rate", "8192"}
	vdifArgs := []string{"--protocol", "vdif", "--udp-ports", "7148", "--vdif-frames-per-second", "8"}
	with := func(base []string, more ...string) []string { return append(append([]string(nil), base...), more...) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--protocol", "tcp"}, `--protocol "tcp": want rdma, spead or vdif`},
		{[]string{"--protocol", "spead"}, "--protocol spead needs --udp-ports"},
		{[]string{"--protocol", "vdif", "--vdif-frames-per-second", "8"}, "--protocol vdif needs --udp-ports"},
		{[]string{"--udp-ports", "7148"}, "--udp-ports: not for --protocol rdma"},
		{with(spead, "--vdif-threads", "0"), "--vdif-threads: not for --protocol spead"},
		{with(vdifArgs, "--spead-channels", "0:1:2"), "--spead-channels: not for --protocol vdif"},
		{with(spead, "--stop-observations", "1"), "--stop-observations: a spead capture is one observation"},
		{with(spead, "--udp-ports", "7148,x"), `"x" is not a port number`},
		{with(spead, "--udp-ports", "70000"), `"70000" is not a port number`},
		{with(spead, "--udp-sockets", "0"), "--udp-sockets 0"},
		{with(spead, "--udp-buffer", "2G"), "--udp-buffer 2147483648"},
		{with(spead, "--udp-gather", "2s"), "--udp-gather 2s: want 0 (off) to 1s"},
		{with(spead, "--udp-cpus", "0,x"), `--udp-cpus: want auto or a CPU list "0,x": "x" is not a CPU number`},
		{with(spead, "--udp-cpus", "1023"), "--udp-cpus 1023: this process may not run on CPU 1023 (it may on"},
		{with(spead, "--udp-address", "localhost"), `--udp-address "localhost"`},
		{with(spead, "--multicast", "10.0.0.1"), `"10.0.0.1" is not an IPv4 multicast address`},
		{with(spead, "--multicast-interface", "eth1"), "--multicast-interface eth1: no --multicast groups"},
		{with(spead, "--reorder-blocks", "0"), "reorder window of 0 blocks"},
		{with(vdifArgs, "--spead-stop-heaps", "2"), "--spead-stop-heaps: not for --protocol vdif"},
		{[]string{"--udp-idle-timeout", "1s"}, "--udp-idle-timeout: not for --protocol rdma"},
		{with(spead, "--udp-idle-timeout", "-1s"), "an idle timeout of -1s and 1 stop heaps: want neither negative"},
		{with(spead, "--spead-channel-id", "0x4103", "--spead-channels", "0:256"), `--spead-channels "0:256": want FIRST:STEP:COUNT`},
		{with(spead, "--spead-channel-id", "0x4103", "--spead-channels", "0:x:4"), `--spead-channels "0:x:4": want FIRST:STEP:COUNT`},
		{with(spead, "--spead-channel-id", "0x4103", "--spead-channels", "0:256:0"), "COUNT is 0"},
		{with(spead, "--spead-channel-id", "0x4103"), "needs --spead-channels"},
		{with(spead, "--spead-channels", "0:256:4"), "needs --spead-channel-id"},
		{with(spead, "--spead-channel-id", "0x4103", "--spead-channels", "0:0:4"), "a step of 0"},
		{with(spead, "--spead-timestamp-id", "0xzz"), `--spead-timestamp-id "0xzz"`},
		{with(spead, "--spead-sync-time-id", "0x1027"), "--spead-sync-time or --spead-sync-time-id, not both"},
		{[]string{"--protocol", "spead", "--udp-ports", "7148", "--spead-timestamp-id", "0x1600", "--spead-timestamp-step", "2048", "--spead-sample-rate", "8192"},
			"give --spead-sync-time or --spead-sync-time-id"},
		{[]string{"--protocol", "spead", "--udp-ports", "7148", "--spead-sync-time", "1", "--spead-sample-rate", "8192"}, "give --spead-timestamp-id and --spead-timestamp-step"},
		{with(spead, "--spead-timestamp-id", "0x3"), "standard item"},
		{[]string{"--protocol", "vdif", "--udp-ports", "7148"}, "needs --vdif-frames-per-second"},
		{with(vdifArgs, "--vdif-threads", "0,1,0"), "thread 0 given twice"},
		{with(vdifArgs, "--vdif-threads", "0,1024"), `"1024" is not a thread ID`},
		{with(vdifArgs, "--vdif-payload-bytes", "1001"), "not a multiple of 8"},
		{with(vdifArgs, "--vdif-start", "yesterday"), `--vdif-start "yesterday": want RFC 3339`},
		{with(vdifArgs, "--header", "OBS_OFFSET=5"), "--header"},
	} {
		// Key 1 does not exist and is not waited for: a check that let this through
		// would fail on the ring instead.
		args := append([]string{"recv", "-k", "1", "--metrics-addr", ""}, c.args...)
		_, _, err := ringcap(context.Background(), args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ringcap %s: got %v, want an error containing %q", strings.Join(args, " "), err, c.want)
		}
	}
}

// Two ports of two sockets each, the heaps dealt out over them (so they
// arrive out of order): the one pipeline takes them in turn, and with the
// start given and a window as large as the ring every heap lands in place.
func TestRecvSPEADPortsAndSockets(t *testing.T) {
	r := startPacketRecv(t, packetSetup{ports: 2}, "--protocol", "spead", "--udp-sockets", "2", "--udp-cpus", "auto", "--reorder-blocks", "8", "--spead-start-timestamp", strconv.Itoa(speadT0),
		"--spead-timestamp-id", "0x1600", "--spead-timestamp-step", strconv.Itoa(speadStep),
		"--spead-sync-time", strconv.Itoa(speadSync), "--spead-sample-rate", strconv.Itoa(speadRate))
	read := startReader(r.key)
	st := r.waitStatus(t, "state Listening", func(s *statusdoc.Status) bool { return s.State == statusdoc.StateListening })
	if !strings.Contains(st.Message, fmt.Sprintf("127.0.0.1:%d", r.udpPorts[1])) || st.Endpoint.Port != r.udpPorts[0] {
		t.Errorf("listening: %q, endpoint %+v", st.Message, st.Endpoint)
	}
	r.send(t, speadPackets())
	r.waitStatus(t, "every packet counted", func(s *statusdoc.Status) bool { return s.Packets != nil && s.Packets.Packets == 25 })
	r.cancel()
	final := r.wait(t)
	checkPackets(t, final.Packets, statusdoc.Packets{Protocol: "spead", Packets: 25, ReceivedPackets: 23, ReceivedBytes: 23 * speadHeap,
		Duplicate: 1, Malformed: 1, Blocks: 6, ZeroFilledBytes: 1024})
	got := <-read
	if got.err != nil {
		t.Fatal(got.err)
	}
	checkPattern(t, got.data, 24*speadHeap, 5*speadHeap, 6*speadHeap)
}

// A run that gets no packet before --stop-duration ends Finished without an
// observation: the ring holds no header.
func TestRecvPacketsStopDurationWithoutPackets(t *testing.T) {
	r := startPacketRecv(t, packetSetup{}, "--protocol", "vdif", "--vdif-frames-per-second", "8", "--stop-duration", "300ms")
	final := r.wait(t)
	if final.State != statusdoc.StateFinished || final.Observations != 0 || final.Packets == nil || final.Packets.Packets != 0 {
		t.Fatalf("final status %+v, packets %+v", final, final.Packets)
	}
	h, err := dada.Connect(mustKey(r.key), dada.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Close() }()
	snap, err := h.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if snap.Header.WBufCurr != 0 || snap.Data.WBufCurr != 0 {
		t.Errorf("ring written: header %+v, data %+v", snap.Header, snap.Data)
	}
}

// A packet receiver in a process of its own ends on SIGTERM as an RDMA one
// does: the open blocks handed over and the data ended (a reader gets every
// byte), exit status 0, the summary Finished "stopped by signal".
func TestRecvPacketsSIGTERM(t *testing.T) {
	key, port := createRing(t, "-b", "4096", "-n", "8", "-a", "4096"), freeUDPPort(t)
	metrics, summary := "127.0.0.1:"+strconv.Itoa(freePort(t)), filepath.Join(t.TempDir(), "summary.json")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "recv", "-k", key, "--protocol", "vdif",
		"--udp-ports", strconv.Itoa(port), "--udp-address", "127.0.0.1", "--vdif-frames-per-second", "8", "--vdif-threads", "0,1",
		"--metrics-addr", metrics, "--summary-file", summary)
	cmd.Env = append(os.Environ(), runCLIEnv+"=1")
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill() }()
	r := &packetRun{key: key, metrics: metrics, udpPorts: []int{port}, done: done}
	read := startReader(key)
	r.waitStatus(t, "state Listening", func(s *statusdoc.Status) bool { return s.State == statusdoc.StateListening })
	r.send(t, vdifPackets())
	r.waitStatus(t, "every frame counted", func(s *statusdoc.Status) bool { return s.Packets != nil && s.Packets.Packets == 25 })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("recv: %v\n%s", err, errb.String())
	}
	got := <-read
	if got.err != nil {
		t.Fatal(got.err)
	}
	checkPattern(t, got.data, 24*512, 7*512, 8*512)
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	st, err := statusdoc.Parse(b)
	if err != nil || st.State != statusdoc.StateFinished || st.Message != "stopped by signal" || st.Packets == nil || st.Packets.Blocks != 3 {
		t.Fatalf("summary %+v, %v", st, err)
	}
}

// With no reader the ring fills and the receiver is held back (status
// heldBackSince, counted in heldBackSeconds) while the packets wait in the
// socket buffer; once a reader reads, every heap lands, none lost.
func TestRecvPacketsHeldBackByReaders(t *testing.T) {
	r := startPacketRecv(t, packetSetup{}, "--protocol", "spead", "--spead-timestamp-id", "0x1600", "--spead-timestamp-step", strconv.Itoa(speadStep),
		"--spead-sync-time", strconv.Itoa(speadSync), "--spead-sample-rate", strconv.Itoa(speadRate))
	r.waitStatus(t, "state Listening", func(s *statusdoc.Status) bool { return s.State == statusdoc.StateListening })
	var heaps [][]byte
	for i := range 48 { // 12 blocks, the ring holds 8
		heaps = append(heaps, speadHeapPacket(i))
	}
	r.send(t, heaps)
	r.waitStatus(t, "a hold", func(s *statusdoc.Status) bool { return s.HeldBackSince != "" })
	read := startReader(r.key)
	r.waitStatus(t, "every heap received", func(s *statusdoc.Status) bool {
		return s.Packets != nil && s.Packets.ReceivedPackets == 48 && s.HeldBackSince == ""
	})
	r.cancel()
	final := r.wait(t)
	checkPackets(t, final.Packets, statusdoc.Packets{Protocol: "spead", Packets: 48, ReceivedPackets: 48, ReceivedBytes: 48 * speadHeap, Blocks: 12})
	if final.HeldBackSeconds <= 0 {
		t.Errorf("held back %v s", final.HeldBackSeconds)
	}
	got := <-read
	if got.err != nil {
		t.Fatal(got.err)
	}
	checkPattern(t, got.data, 48*speadHeap, 0, 0)
}

// A stop while the readers hold every block (the receiver waiting for one)
// ends the run cleanly after the grace, Finished by signal, not Failed.
func TestRecvPacketsStopWhileHeldBack(t *testing.T) {
	r := startPacketRecv(t, packetSetup{}, "--protocol", "spead", "--spead-timestamp-id", "0x1600", "--spead-timestamp-step", strconv.Itoa(speadStep),
		"--spead-sync-time", strconv.Itoa(speadSync), "--spead-sample-rate", strconv.Itoa(speadRate))
	r.waitStatus(t, "state Listening", func(s *statusdoc.Status) bool { return s.State == statusdoc.StateListening })
	var heaps [][]byte
	for i := range 48 {
		heaps = append(heaps, speadHeapPacket(i))
	}
	r.send(t, heaps)
	r.waitStatus(t, "a hold", func(s *statusdoc.Status) bool { return s.HeldBackSince != "" })
	r.cancel()
	final := r.wait(t)
	if final.State != statusdoc.StateFinished || final.Message != "stopped by signal" || final.Packets.Packets == 0 {
		t.Fatalf("final state %s: %s (packets %+v)", final.State, final.Message, final.Packets)
	}
}
