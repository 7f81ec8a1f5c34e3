package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

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
