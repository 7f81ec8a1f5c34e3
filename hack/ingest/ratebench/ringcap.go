package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ringcap/ringcap/pkg/capture/statusdoc"
)

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
	// --spead-stop-heaps 0: the warm-up's stream-stop heap must not end the capture.
	args = append(args, "--spead-stop-heaps", "0", "--udp-ports", strconv.Itoa(port), "--udp-address", "127.0.0.1", "--udp-buffer", strconv.Itoa(o.buffer),
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
