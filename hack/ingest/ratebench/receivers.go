package main

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
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
