package main

import (
	"bytes"
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
	"sync"
	"syscall"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

// The two receivers of the comparison.
const (
	kindRingcap = "ringcap"
	kindFloor   = "recvmmsg-floor"
)

// receiver is one receiver process running for a trial.
type receiver interface {
	pid() int
	// settle waits until the receiver has handled what was sent (or a short while).
	settle(s sent)
	// counts are the receiver's counts so far; false when it keeps none to ask for.
	counts() (received, bool)
	// stop ends the receiver and returns its counts.
	stop() (received, error)
	// kill ends whatever still runs (after stop: nothing).
	kill()
}

// pinned is cmd run by taskset on cpu (none when cpu is negative); taskset execs the
// command, so the process keeps its PID.
func pinned(cpu int, name string, args ...string) *exec.Cmd {
	if cpu < 0 {
		return exec.Command(name, args...)
	}
	return exec.Command("taskset", append([]string{"-c", strconv.Itoa(cpu), name}, args...)...)
}

// freePort returns a port free now on 127.0.0.1 (TCP or UDP).
func freePort(network string) (int, error) {
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free UDP port: %w", err)
		}
		defer func() { _ = c.Close() }()
		return c.LocalAddr().(*net.UDPAddr).Port, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free TCP port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// terminate sends SIGTERM to cmd and waits up to d for it to end, then kills it.
func terminate(cmd *exec.Cmd, done <-chan error, d time.Duration) error {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		return fmt.Errorf("%s did not end within %s of SIGTERM (killed: %w)", filepath.Base(cmd.Path), d, <-done)
	}
}

// start starts cmd and returns a channel that gets its Wait's result.
func start(cmd *exec.Cmd) (<-chan error, error) {
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", strings.Join(cmd.Args, " "), err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return done, nil
}

// floorProc is hack/ingest/recvmmsg-floor.c running.
type floorProc struct {
	port   int
	cmd    *exec.Cmd
	done   <-chan error
	out    *syncBuffer // its stdout
	ended  bool
	killed error // how it ended when killed
}

// syncBuffer is a process's output, read while it is written.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startFloor(o *options, port int) (receiver, error) {
	cmd := pinned(o.recvCPU, o.floor, "127.0.0.1", strconv.Itoa(port), strconv.Itoa(o.buffer), "64", o.floorWait)
	p := &floorProc{port: port, cmd: cmd, out: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = p.out, os.Stderr
	var err error
	if p.done, err = start(cmd); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.HasPrefix(p.out.String(), "ready ") {
		select {
		case err := <-p.done:
			p.ended = true
			return nil, fmt.Errorf("the floor ended before it was ready: %w", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, errors.New("the floor did not say it was ready within 10 s")
		}
	}
	return p, nil
}

func (p *floorProc) pid() int { return p.cmd.Process.Pid }

// settle waits until the floor's socket holds nothing more to read (/proc/net/udp), or 2 s:
// the floor keeps no counts to ask for.
func (p *floorProc) settle(sent) {
	time.Sleep(50 * time.Millisecond)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if q, ok := udpQueueOf(p.port); !ok || q.rxQueue == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *floorProc) counts() (received, bool) { return received{}, false }

func (p *floorProc) stop() (received, error) {
	p.ended = true
	if err := terminate(p.cmd, p.done, 5*time.Second); err != nil {
		return received{}, fmt.Errorf("floor: %w", err)
	}
	return parseFloor(p.out.String())
}

func (p *floorProc) kill() {
	if !p.ended {
		p.ended = true
		_ = p.cmd.Process.Kill()
		p.killed = <-p.done
	}
}

// ringcapProc is `ringcap recv --protocol spead` into a ring it creates, and a
// `ringcap ring read` discarding each block at once.
type ringcapProc struct {
	recv, reader         *exec.Cmd
	recvDone, readerDone <-chan error
	metrics, summary     string
	ended                bool
}

func startRingcap(o *options, port int, key string) (receiver, error) {
	mport, err := freePort("tcp")
	if err != nil {
		return nil, err
	}
	p := &ringcapProc{metrics: "127.0.0.1:" + strconv.Itoa(mport), summary: filepath.Join(o.tmp, key+".json")}
	args := append([]string{"recv", "-k", key, "--create", "-b", strconv.Itoa(o.blockBytes), "-n", strconv.Itoa(o.blocks)}, speadRule...)
	args = append(args, "--udp-ports", strconv.Itoa(port), "--udp-address", "127.0.0.1", "--udp-buffer", strconv.Itoa(o.buffer),
		"--metrics-addr", p.metrics, "--summary-file", p.summary)
	p.recv = pinned(o.recvCPU, o.ringcap, args...)
	p.recv.Stderr = o.log
	if p.recvDone, err = start(p.recv); err != nil {
		return nil, err
	}
	p.reader = pinned(o.sendCPU, o.ringcap, "ring", "read", "-k", key, "--wait", "10s", "-s")
	p.reader.Stdout, p.reader.Stderr = io.Discard, o.log
	if p.readerDone, err = start(p.reader); err != nil {
		p.kill()
		return nil, err
	}
	if err := p.waitReady(); err != nil {
		p.kill()
		return nil, err
	}
	return p, nil
}

// status reads recv's /status (nil while it does not answer).
func (p *ringcapProc) status() *statusdoc.Status {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.metrics+"/status", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil
	}
	st, err := statusdoc.Parse(b)
	if err != nil {
		return nil
	}
	return st
}

// waitReady waits until recv listens and the reader holds its slot of the ring.
func (p *ringcapProc) waitReady() error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if st := p.status(); st != nil && st.State == "Listening" && readerConnected(st) {
			return nil
		}
		select {
		case err := <-p.recvDone:
			p.ended = true
			return fmt.Errorf("ringcap recv ended before it listened: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return errors.New("ringcap recv did not listen with its reader connected within 15 s")
}

func readerConnected(st *statusdoc.Status) bool {
	if st.RingFill == nil {
		return false
	}
	for _, r := range st.RingFill.Readers {
		if r.Connected {
			return true
		}
	}
	return false
}

func (p *ringcapProc) pid() int { return p.recv.Process.Pid }

// settle waits until recv has accounted for every packet sent, or 2 s.
func (p *ringcapProc) settle(s sent) {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if st := p.status(); st != nil && st.Packets != nil && float64(st.Packets.Packets+st.Packets.KernelDrops) >= s.packets {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *ringcapProc) counts() (received, bool) {
	st := p.status()
	if st == nil || st.Packets == nil {
		return received{}, false
	}
	return receivedOf(st.Packets), true
}

func receivedOf(c *statusdoc.Packets) received {
	return received{packets: float64(c.Packets), written: float64(c.ReceivedPackets), drops: float64(c.KernelDrops + c.Truncated)}
}

func (p *ringcapProc) stop() (received, error) {
	p.ended = true
	errRecv := terminate(p.recv, p.recvDone, 30*time.Second)
	// The reader only keeps the ring free: recv removes the ring it made at once on
	// SIGTERM, and a reader still in it then fails, which says nothing of the receiver.
	_ = terminate(p.reader, p.readerDone, 10*time.Second)
	if errRecv != nil {
		return received{}, fmt.Errorf("ringcap recv: %w", errRecv)
	}
	b, err := os.ReadFile(p.summary)
	if err != nil {
		return received{}, fmt.Errorf("ringcap recv's summary: %w", err)
	}
	st, err := statusdoc.Parse(b)
	if err != nil {
		return received{}, fmt.Errorf("ringcap recv's summary: %w", err)
	}
	if st.Packets == nil {
		return received{}, errors.New("ringcap recv's summary has no packets section")
	}
	return receivedOf(st.Packets), nil
}

func (p *ringcapProc) kill() {
	if p.ended {
		return
	}
	p.ended = true
	for _, c := range []struct {
		cmd  *exec.Cmd
		done <-chan error
	}{{p.recv, p.recvDone}, {p.reader, p.readerDone}} {
		if c.done != nil {
			_ = terminate(c.cmd, c.done, 10*time.Second) // SIGTERM first: recv removes the ring it made
		}
	}
}
