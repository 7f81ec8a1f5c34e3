//go:build vm

package capture

// End-to-end tests on real Soft-RoCE (rxe0 <-> rxe1) in the VM, through the CLI:
// ringcap ring create -> ringcap recv -> ringcap send -> ringcap ring read --verify.
// Byte counts are small: TCG runs rxe at 0.1-0.5 Gb/s.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/ipctest"
	"github.com/ringcap/ringcap/internal/testio"
	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
	"github.com/ringcap/ringcap/pkg/capture/wire"
	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/test/vm/vmtest"
)

var (
	vmPortMu   sync.Mutex
	vmNextPort = 18600
)

// vmKeys: the VM runs one test binary at a time in its own IPC namespace: one band.
var vmKeys = ipctest.NewKeys(0x7c00, 1, 0, 0x100)

func vmPort() int {
	vmPortMu.Lock()
	defer vmPortMu.Unlock()
	vmNextPort++
	return vmNextPort
}

func vmKey() string { return dada.Key(vmKeys.Next()).String() }

// proc is a background ringcap process whose output is kept.
type proc struct {
	cmd  *exec.Cmd
	out  testio.Buffer
	done chan error
}

func (p *proc) output() string { return p.out.String() }

func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{done: make(chan error, 1)}
	p.cmd = exec.Command(name, args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s %v: %v", name, args, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case err := <-p.done:
			p.done <- err
		default:
			_ = p.cmd.Process.Kill()
			err := <-p.done
			t.Logf("killed %s %v (%v); output:\n%s", name, args, err, p.output())
		}
	})
	return p
}

// wait returns the process's exit error, failing t after d.
func (p *proc) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(d):
		t.Fatalf("%v did not exit within %s; output:\n%s", p.cmd.Args, d, p.output())
		return nil
	}
}

func run(t *testing.T, d time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %v hung (%s); output:\n%s", name, args, d, out)
	}
	return string(out), err
}

func ringCreate(t *testing.T, bin, key string, nbufs, bufsz int) {
	t.Helper()
	if out, err := run(t, time.Minute, bin, "ring", "create", "-k", key, "-n", strconv.Itoa(nbufs), "-b", strconv.Itoa(bufsz)); err != nil {
		t.Fatalf("ring create: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := run(t, time.Minute, bin, "ring", "destroy", "-k", key); err != nil {
			t.Errorf("ring destroy: %v\n%s", err, out)
		}
	})
}

var (
	readLine = regexp.MustCompile(`read: bytes=(\d+) blocks=(\d+) observations=(\d+) mismatches=(\d+)`)
	sendLine = regexp.MustCompile(`send: bytes=(\d+) .* complete=(true|false)`)
)

type readResult struct{ bytes, blocks, observations, mismatches uint64 }

func parseRead(t *testing.T, out string) readResult {
	t.Helper()
	m := readLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no read summary in:\n%s", out)
	}
	var r readResult
	for i, p := range []*uint64{&r.bytes, &r.blocks, &r.observations, &r.mismatches} {
		*p, _ = strconv.ParseUint(m[i+1], 10, 64)
	}
	return r
}

func readSummary(t *testing.T, path string) statusdoc.Status {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read summary: %v", err)
	}
	var st statusdoc.Status
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("summary %s: %v", b, err)
	}
	return st
}

// verifyObservation runs ring read --verify -s while send runs, and checks
// both ends agree on exactly total bytes; it returns send's output.
func verifyObservation(t *testing.T, bin, key, connect string, total uint64, seed int, sendArgs ...string) string {
	t.Helper()
	reader := start(t, bin, "ring", "read", "-k", key, "--verify", strconv.Itoa(seed), "-s")
	args := append([]string{"send", "--connect", connect, "--bytes", strconv.FormatUint(total, 10), "--seed", strconv.Itoa(seed)}, sendArgs...)
	out, err := run(t, 2*time.Minute, bin, args...)
	if err != nil {
		t.Fatalf("send: %v\n%s", err, out)
	}
	m := sendLine.FindStringSubmatch(out)
	if m == nil || m[1] != strconv.FormatUint(total, 10) || m[2] != "true" {
		t.Fatalf("send summary wrong (want %d bytes complete):\n%s", total, out)
	}
	if err := reader.wait(t, time.Minute); err != nil {
		t.Fatalf("ring read: %v\n%s", err, reader.output())
	}
	r := parseRead(t, reader.output())
	if r.bytes != total || r.mismatches != 0 || r.observations != 1 {
		t.Fatalf("reader %+v, want %d verified bytes in 1 observation\n%s", r, total, reader.output())
	}
	return out
}

func TestVMEndToEnd(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	const nbufs, bufsz = 4, 256 << 10
	for _, mode := range []string{"send", "write"} {
		for _, mr := range []string{"wholering", "perblock"} {
			for _, qps := range []int{1, 4, 16} {
				t.Run(fmt.Sprintf("%s/%s/qps=%d", mode, mr, qps), func(t *testing.T) {
					c := vmCell{mode: mode, mr: mr, qps: qps, nbufs: nbufs, bufsz: bufsz, off: 2*bufsz + 12345, seed: 11}
					switch qps {
					case 4:
						c.recvArgs = []string{"--cq-per-qp"} // one completion queue per queue pair
					case 16:
						c.recvArgs = []string{"--busy-poll"} // both ends poll instead of sleeping on completion events
						c.sendArgs = c.recvArgs
					}
					st, out := runVMCell(t, bin, &c)
					if st.BusyPoll != (qps == 16) || st.Endpoint.Device != vmtest.Device1 || st.Endpoint.GIDIndex == nil || *st.Endpoint.GIDIndex != 1 {
						t.Fatalf("summary %+v\nrecv output:\n%s", st, out)
					}
					if !strings.Contains(out, "Registered ring key="+c.key+" mode="+st.MemoryRegistration.Mode) {
						t.Fatalf("no registration log line:\n%s", out)
					}
					if want := fmt.Sprintf("busyPoll=%v", qps == 16); !strings.Contains(out, want) {
						t.Fatalf("no %s in the observation log line:\n%s", want, out)
					}
				})
			}
		}
	}
}

// vmCell is one cell of a VM matrix (TestVMEndToEnd, TestVMOFIMatrix): recv
// in mode with mr registration and qps queue pairs (plus recvArgs) into a
// fresh nbufs x bufsz ring serves two observations sent with sendArgs, one
// ending on a block boundary and one of off bytes, seeded seed and seed+1.
type vmCell struct {
	mode, mr           string
	qps                int
	nbufs, bufsz       uint64
	off                uint64
	seed               int
	recvArgs, sendArgs []string
	sendLog            string // a line each send's output must hold (none: no check)
	key                string // set by runVMCell
}

// runVMCell runs cell c: each observation verified byte for byte by ring
// read, recv stopped by itself after the two, and its summary agreeing on
// state, observations, bytes, registration, queue pairs and mode. It returns
// the summary and recv's output for the checks of the cell's transport.
func runVMCell(t *testing.T, bin string, c *vmCell) (statusdoc.Status, string) {
	t.Helper()
	c.key = vmKey()
	ringCreate(t, bin, c.key, int(c.nbufs), int(c.bufsz))
	connect := net.JoinHostPort(vmtest.IP1, strconv.Itoa(vmPort()))
	summary := filepath.Join(t.TempDir(), "summary.json")
	q := strconv.Itoa(c.qps)
	recv := start(t, bin, append([]string{"recv", "-k", c.key, "--mode", c.mode, "--mr", c.mr, "--qps", q, "--listen", connect,
		"--metrics-addr", "", "--stop-observations", "2", "--summary-file", summary}, c.recvArgs...)...)
	waitListening(t, connect, recv)
	sendArgs := append([]string{"--mode", c.mode, "--qps", q}, c.sendArgs...)
	onBoundary := 3 * c.nbufs * c.bufsz
	for i, n := range []uint64{onBoundary, c.off} {
		if out := verifyObservation(t, bin, c.key, connect, n, c.seed+i, sendArgs...); !strings.Contains(out, c.sendLog) {
			t.Fatalf("send's output does not hold %q:\n%s", c.sendLog, out)
		}
	}
	if err := recv.wait(t, time.Minute); err != nil {
		t.Fatalf("recv: %v\n%s", err, recv.output())
	}
	st := readSummary(t, summary)
	wantMR := map[string]string{"wholering": "WholeRing", "perblock": "PerBlock"}[c.mr]
	if st.State != statusdoc.StateFinished || st.Observations != 2 || st.IncompleteObs != 0 ||
		st.BytesReceived != onBoundary+c.off || st.MemoryRegistration.Mode != wantMR ||
		st.QueuePairs != c.qps || st.TransferMode != c.mode {
		t.Fatalf("summary %+v\nrecv output:\n%s", st, recv.output())
	}
	return st, recv.output()
}

// waitListening waits until recv accepts TCP connections on addr.
func waitListening(t *testing.T, addr string, recv *proc) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if strings.Contains(recv.output(), "Listening for senders") {
			return
		}
		select {
		case err := <-recv.done:
			recv.done <- err
			t.Fatalf("recv exited: %v\n%s", err, recv.output())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("recv not listening on %s:\n%s", addr, recv.output())
}

// oneObservation is a fresh ring and a listening `ringcap recv` that serves one
// observation into it, with 4 queue pairs and a JSON summary.
type oneObservation struct {
	key, connect, summary string
	recv                  *proc
}

// startOneObservation creates an nbufs x bufsz ring and starts recv on it in
// mode; args add or override recv flags (the last --metrics-addr wins).
func startOneObservation(t *testing.T, bin, mode string, nbufs, bufsz int, args ...string) oneObservation {
	t.Helper()
	o := oneObservation{key: vmKey(), connect: net.JoinHostPort(vmtest.IP1, strconv.Itoa(vmPort())),
		summary: filepath.Join(t.TempDir(), "summary.json")}
	ringCreate(t, bin, o.key, nbufs, bufsz)
	o.recv = start(t, bin, append([]string{"recv", "-k", o.key, "--mode", mode, "--qps", "4", "--listen", o.connect,
		"--metrics-addr", "", "--stop-observations", "1", "--summary-file", o.summary}, args...)...)
	waitListening(t, o.connect, o.recv)
	return o
}

func TestVMSlowReaderBackPressure(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	for _, mode := range []string{"send", "write"} {
		t.Run(mode, func(t *testing.T) {
			o := startOneObservation(t, bin, mode, 4, 128<<10, "--msg-bytes", "32768")
			key, connect, summary, recv := o.key, o.connect, o.summary, o.recv
			// A reader that sleeps on every block: the ring (4 blocks) fills and the
			// sender must be held back without losing a byte.
			h := connectRing(t, key)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			// 250 ms per block is far slower than rxe under TCG (~1 MB per 100 ms).
			reads := readObservations(t, ctx, h, 1, 21, 250*time.Millisecond)
			const total = 16 * 128 << 10
			out, err := run(t, 3*time.Minute, bin, "send", "--connect", connect, "--mode", mode, "--qps", "4", "--msg-bytes", "32768",
				"--bytes", strconv.Itoa(total), "--seed", "21")
			if err != nil || !strings.Contains(out, "complete=true") {
				t.Fatalf("send: %v\n%s", err, out)
			}
			obs := <-reads
			if len(obs) != 1 || obs[0].err != nil || obs[0].bytes != total || obs[0].mismatches != 0 {
				t.Fatalf("reader %+v", obs)
			}
			if err := recv.wait(t, time.Minute); err != nil {
				t.Fatalf("recv: %v\n%s", err, recv.output())
			}
			st := readSummary(t, summary)
			if st.HeldBackSeconds <= 0 || st.BytesReceived != total {
				t.Fatalf("a slow reader must hold the sender back: %+v", st)
			}
			t.Logf("held back %.3f s of %.3f s", st.HeldBackSeconds, st.Seconds)
		})
	}
}

func fetchStatus(addr string) (statusdoc.Status, error) {
	var st statusdoc.Status
	resp, err := http.Get("http://" + addr + "/status")
	if err != nil {
		return st, err
	}
	defer func() { _ = resp.Body.Close() }()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

func TestVMSenderKilled(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	for _, mode := range []string{"send", "write"} {
		t.Run(mode, func(t *testing.T) {
			metrics := net.JoinHostPort("127.0.0.1", strconv.Itoa(vmPort()))
			o := startOneObservation(t, bin, mode, 8, 256<<10, "--metrics-addr", metrics)
			key, connect, summary, recv := o.key, o.connect, o.summary, o.recv
			reader := start(t, bin, "ring", "read", "-k", key, "--verify", "31", "-s")
			sender := start(t, bin, "send", "--connect", connect, "--mode", mode, "--qps", "4", "--duration", "10m", "--seed", "31")
			// Kill the sender once blocks have been committed to the ring. (Bytes
			// received alone are not enough: while one queue pair waits out a
			// retransmission, the others' later slices land past a gap, and a
			// kill then rightly commits nothing.)
			deadline := time.Now().Add(time.Minute)
			for {
				st, err := fetchStatus(metrics)
				if err == nil && st.BlocksFilled >= 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no data arrived: %+v %v\nrecv:\n%s\nsend:\n%s", st, err, recv.output(), sender.output())
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err := sender.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = sender.wait(t, time.Minute)
			if err := recv.wait(t, time.Minute); err != nil {
				t.Fatalf("recv: %v\n%s", err, recv.output())
			}
			if err := reader.wait(t, time.Minute); err != nil {
				t.Fatalf("ring read: %v\n%s", err, reader.output())
			}
			st := readSummary(t, summary)
			r := parseRead(t, reader.output())
			if st.LastObservation == nil || st.LastObservation.Complete || st.IncompleteObs != 1 ||
				!strings.Contains(st.LastObservation.Message, "sender disconnected") {
				t.Fatalf("observation not marked incomplete: %+v %+v", st, st.LastObservation)
			}
			if r.mismatches != 0 || r.bytes != st.LastObservation.Bytes || r.bytes == 0 {
				t.Fatalf("reader %+v, receiver committed %d bytes (%s)\nrecv:\n%s", r, st.LastObservation.Bytes, st.LastObservation.Message, recv.output())
			}
		})
	}
}

// Streams whose end the sender learns only as it comes: a --duration cutoff
// and an interrupted sender (SIGINT). With 16 slices per block, in write mode
// each queue pair's last slices went out as plain RDMA WRITEs expecting more,
// and zero-length RDMA_WRITE_WITH_IMMs must land them on real rxe: the reader
// verifies exactly the bytes the sender reports. By default (on rxe, in a VM
// of two CPUs) the sender posts from two threads, one pinned to each CPU;
// one-thread posts from a single one.
// sentProgress is a progress report of a sender that has sent bytes.
var sentProgress = regexp.MustCompile(`send: progress bytes=[1-9]`)

// waitSent waits (a minute at most) until the sender reports bytes sent.
func waitSent(t *testing.T, sender *proc) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !sentProgress.MatchString(sender.output()) {
		if time.Now().After(deadline) {
			t.Fatalf("the sender reported no bytes sent within a minute:\n%s", sender.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestVMStreamsEndedByTheSender(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	for _, mode := range []string{"send", "write"} {
		// post-list: a --duration stream posted one work request at a time
		for _, end := range []string{"duration", "interrupt", "post-list", "one-thread"} {
			t.Run(mode+"/"+end, func(t *testing.T) {
				o := startOneObservation(t, bin, mode, 8, 256<<10, "--msg-bytes", "16384")
				key, connect, summary, recv := o.key, o.connect, o.summary, o.recv
				reader := start(t, bin, "ring", "read", "-k", key, "--verify", "41", "-s")
				args := []string{"send", "--connect", connect, "--mode", mode, "--qps", "4", "--msg-bytes", "16384", "--seed", "41", "--duration", "2s"}
				switch end {
				case "interrupt":
					args[len(args)-1] = "10m"
					args = append(args, "--progress", "100ms")
				case "post-list":
					args = append(args, "--post-list", "1")
				case "one-thread":
					args = append(args, "--post-threads", "1")
				}
				sender := start(t, bin, args...)
				if end == "interrupt" {
					// Interrupt a stream under way: after its first progress report
					// with bytes sent (a fixed wait raced the handshake under TCG).
					waitSent(t, sender)
					if err := sender.cmd.Process.Signal(syscall.SIGINT); err != nil {
						t.Fatal(err)
					}
				}
				_ = sender.wait(t, 2*time.Minute) // an interrupted send exits non-zero
				m := sendLine.FindStringSubmatch(sender.output())
				complete := end != "interrupt"
				if m == nil || m[2] != strconv.FormatBool(complete) || m[1] == "0" {
					t.Fatalf("send summary (want complete=%v):\n%s", complete, sender.output())
				}
				if err := recv.wait(t, time.Minute); err != nil {
					t.Fatalf("recv: %v\n%s", err, recv.output())
				}
				if err := reader.wait(t, time.Minute); err != nil {
					t.Fatalf("ring read: %v\n%s", err, reader.output())
				}
				r := parseRead(t, reader.output())
				if strconv.FormatUint(r.bytes, 10) != m[1] || r.mismatches != 0 || r.observations != 1 {
					t.Fatalf("reader %+v, sender sent %s bytes\nsend:\n%s\nrecv:\n%s", r, m[1], sender.output(), recv.output())
				}
				if st := readSummary(t, summary); st.LastObservation == nil || st.LastObservation.Complete != complete {
					t.Fatalf("summary %+v", st)
				}
				// The threads start together: their lines come in any order.
				threads := regexp.MustCompile(`Pinned the posting thread"( thread=\d+)? cpu=\d+`).FindAllString(sender.output(), -1)
				slices.Sort(threads)
				want := []string{`Pinned the posting thread" thread=0 cpu=0`, `Pinned the posting thread" thread=1 cpu=1`}
				if end == "one-thread" && len(threads) == 1 && !strings.Contains(threads[0], "thread=") {
					want = threads // one thread, pinned where it started
				}
				if !slices.Equal(threads, want) {
					t.Fatalf("posting threads %q, want %q\n%s", threads, want, sender.output())
				}
			})
		}
	}
}

func TestVMWrongGIDIndex(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	key := vmKey()
	ringCreate(t, bin, key, 4, 256<<10)

	// An index with no GID behind it: a clear error at start.
	out, err := run(t, time.Minute, bin, "recv", "-k", key, "--gid-index", "9", "--device", vmtest.Device1,
		"--listen", net.JoinHostPort(vmtest.IP1, strconv.Itoa(vmPort())), "--metrics-addr", "")
	if err == nil || !strings.Contains(out, "GID index 9") {
		t.Fatalf("recv with an empty GID index: %v\n%s", err, out)
	}

	// A valid index of the wrong family (IPv6 link-local while the sender uses IPv4):
	// the kernel refuses to connect the queue pairs; the sender gets the reason, the
	// receiver keeps serving and reports it, nothing hangs.
	port := vmPort()
	summary := filepath.Join(t.TempDir(), "summary.json")
	recv := start(t, bin, "recv", "-k", key, "--gid-index", "0", "--device", vmtest.Device1, "--qps", "2",
		"--listen", net.JoinHostPort(vmtest.IP1, strconv.Itoa(port)), "--metrics-addr", "", "--stop-observations", "1", "--summary-file", summary)
	connect := net.JoinHostPort(vmtest.IP1, strconv.Itoa(port))
	waitListening(t, connect, recv)
	out, err = run(t, 3*time.Minute, bin, "send", "--connect", connect, "--qps", "2", "--bytes", "1048576", "--seed", "1")
	if err == nil || !strings.Contains(out, "receiver could not connect its queue pairs") || !strings.Contains(out, "GID index 0") {
		t.Fatalf("send over mismatched GIDs: %v\n%s", err, out)
	}
	t.Logf("sender: %s", strings.TrimSpace(out))
	if err := recv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := recv.wait(t, time.Minute); err != nil {
		t.Fatalf("recv after SIGTERM: %v\n%s", err, recv.output())
	}
	if st := readSummary(t, summary); st.State != statusdoc.StateFinished || st.Observations != 0 || st.Endpoint.GIDIndex == nil || *st.Endpoint.GIDIndex != 0 {
		t.Fatalf("summary %+v", st)
	}
}

func TestVMHandshakeMismatchAndGarbage(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	key := vmKey()
	ringCreate(t, bin, key, 4, 256<<10)
	port := vmPort()
	connect := net.JoinHostPort(vmtest.IP1, strconv.Itoa(port))
	recv := start(t, bin, "recv", "-k", key, "--qps", "4", "--mode", "write",
		"--listen", connect, "--metrics-addr", "", "--stop-observations", "1")
	waitListening(t, connect, recv)

	out, err := run(t, time.Minute, bin, "send", "--connect", connect, "--qps", "2", "--mode", "write", "--bytes", "1000")
	if err == nil || !strings.Contains(out, "the receiver uses 4 queue pairs, this sender asked for 2") {
		t.Fatalf("QP mismatch: %v\n%s", err, out)
	}
	out, err = run(t, time.Minute, bin, "send", "--connect", connect, "--qps", "4", "--mode", "send", "--bytes", "1000")
	if err == nil || !strings.Contains(out, "the receiver runs write mode, this sender asked for send mode") {
		t.Fatalf("mode mismatch: %v\n%s", err, out)
	}
	for _, junk := range []string{"GET / HTTP/1.1\r\n\r\n", "RCAP\x00\x09", string(wire.Preamble()) + "\x01\xff\xff\xff\xff"} {
		c, err := net.DialTimeout("tcp", connect, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		_, _ = c.Write([]byte(junk))
		m, err := wire.ReadMessage(c)
		if _, ok := m.(wire.Settings); ok { // a good preamble: the garbage after it is refused
			m, err = wire.ReadMessage(c)
		}
		_ = c.Close()
		if rej, ok := m.(wire.Reject); err != nil || !ok || rej.Message == "" {
			t.Fatalf("garbage %q: answer %+v %v", junk, m, err)
		}
	}
	// Still serving: a good sender gets through and every byte verifies. Told
	// nothing of the link, it takes the receiver's write mode and 4 queue pairs.
	verifyObservation(t, bin, key, connect, 700001, 5)
	if err := recv.wait(t, time.Minute); err != nil {
		t.Fatalf("recv: %v\n%s", err, recv.output())
	}
}

func TestVMUnprivilegedMemlock(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	key := vmKey()
	// 32 MiB ring, 8 MiB memlock, no CAP_IPC_LOCK: registration must fail with the clear message.
	out, err := run(t, time.Minute, "ringcap-vm-unprivileged", "8388608", bin, "recv", "-k", key, "--create", "-n", "8", "-b", "4194304",
		"--listen", net.JoinHostPort(vmtest.IP1, strconv.Itoa(vmPort())), "--metrics-addr", "")
	if err == nil || !strings.Contains(strings.ToLower(out), "memlock") || !strings.Contains(out, "IPC_LOCK") {
		t.Fatalf("unprivileged recv over a 32 MiB ring with 8 MiB memlock: %v\n%s", err, out)
	}
	// --create destroyed the ring again on the way out.
	if _, err := dada.Connect(mustKey(t, key), dada.ConnectOptions{}); err == nil {
		t.Fatal("the ring created by the failed recv is still there")
	}
}

// connectRing connects to the ring at key for the test, closed when it ends.
func connectRing(t *testing.T, key string) *dada.HDU {
	t.Helper()
	h, err := dada.Connect(mustKey(t, key), dada.ConnectOptions{})
	if err != nil {
		t.Fatalf("connect ring %s: %v", key, err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func mustKey(t *testing.T, s string) dada.Key {
	k, err := dada.ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Each sender stream is an observation with its own header, over real rxe and
// through the CLI, in both header styles: three streams whose senders set
// SOURCE, each read by a fresh `ring read -s` (as dada_dbdisk -s), while a
// persistent reader on the second slot reads all three; every reader gets the
// header of the observation whose data it reads.
func TestVMObservationHeaders(t *testing.T) {
	vmtest.Require(t)
	bin := vmtest.Binary(t, "ringcap")
	for _, style := range [][]string{nil, {"--new-style-header"}} {
		t.Run(fmt.Sprintf("style=%v", style), func(t *testing.T) {
			key, connect := vmKey(), net.JoinHostPort(vmtest.IP1, strconv.Itoa(vmPort()))
			if out, err := run(t, time.Minute, bin, "ring", "create", "-k", key, "-n", "4", "-b", "262144", "-r", "2"); err != nil {
				t.Fatalf("ring create: %v\n%s", err, out)
			}
			t.Cleanup(func() { _, _ = run(t, time.Minute, bin, "ring", "destroy", "-k", key) })
			recv := start(t, bin, append([]string{"recv", "-k", key, "--mode", "write", "--qps", "2", "--listen", connect,
				"--metrics-addr", "", "--stop-observations", "3", "--header", "SOURCE=template_src"}, style...)...)
			waitListening(t, connect, recv)
			h, err := dada.Connect(mustKey(t, key), dada.ConnectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = h.Close() }()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			persistent := readObservations(t, ctx, h, 3, 31, 0)
			waitReaders(t, h, 1)
			const total = 3<<18 + 99
			dir := t.TempDir()
			for i := range 3 {
				hdrFile := filepath.Join(dir, fmt.Sprintf("h%d", i))
				fresh := start(t, bin, "ring", "read", "-k", key, "-s", "--verify", "31", "--header-out", hdrFile)
				waitReaders(t, h, 2)
				out, err := run(t, 2*time.Minute, bin, "send", "--connect", connect, "--mode", "write", "--qps", "2",
					"--bytes", strconv.Itoa(total), "--seed", "31", "--header", fmt.Sprintf("SOURCE=PSR_%d", i))
				if err != nil || !strings.Contains(out, "complete=true") {
					t.Fatalf("observation %d: send: %v\n%s", i, err, out)
				}
				if err := fresh.wait(t, time.Minute); err != nil {
					t.Fatalf("observation %d: ring read: %v\n%s", i, err, fresh.output())
				}
				if r := parseRead(t, fresh.output()); r.bytes != total || r.mismatches != 0 {
					t.Fatalf("observation %d: fresh reader %+v", i, r)
				}
				hdr, err := os.ReadFile(hdrFile)
				if err != nil {
					t.Fatal(err)
				}
				if !regexp.MustCompile(fmt.Sprintf(`(?m)^SOURCE +PSR_%d$`, i)).Match(hdr) ||
					!regexp.MustCompile(fmt.Sprintf(`(?m)^RINGCAP_OBSERVATION +%d$`, i)).Match(hdr) {
					t.Errorf("observation %d: the fresh reader got\n%s", i, hdr)
				}
			}
			obs := <-persistent
			if len(obs) != 3 {
				t.Fatalf("persistent reader: %+v", obs)
			}
			for i, o := range obs {
				if o.err != nil || o.bytes != total || o.mismatches != 0 ||
					!regexp.MustCompile(fmt.Sprintf(`(?m)^SOURCE +PSR_%d$`, i)).MatchString(o.header) {
					t.Errorf("persistent reader, observation %d: %+v", i, o)
				}
			}
			if err := recv.wait(t, time.Minute); err != nil {
				t.Fatalf("recv: %v\n%s", err, recv.output())
			}
		})
	}
}

// waitReaders waits until n reader slots of the data ring are taken.
func waitReaders(t *testing.T, h *dada.HDU, n int) {
	t.Helper()
	for range 3000 {
		s, err := h.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Data.Readers)-s.Data.SemRead == n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%d readers did not connect", n)
}
