//go:build linux

package udp

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// onThread runs fn on a goroutine locked to a thread that is thrown away afterwards (the
// goroutine exits locked), so whatever fn changes about its thread does not outlive it.
func onThread(fn func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		defer close(done)
		fn()
	}()
	<-done
}

// capabilities returns this thread's capability sets.
func capabilities() (unix.CapUserHeader, [2]unix.CapUserData, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	err := unix.Capget(&hdr, &data[0])
	return hdr, data, err
}

// dropNetAdmin removes CAP_NET_ADMIN from the calling thread's effective set.
func dropNetAdmin() error {
	hdr, data, err := capabilities()
	if err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	data[0].Effective &^= 1 << unix.CAP_NET_ADMIN
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// Without CAP_NET_ADMIN a buffer larger than net.core.rmem_max falls short, and the error
// names the sizes and the sysctl that raises the cap. No sysctl is changed.
func TestBufferBeyondRmemMaxSaysWhichSysctl(t *testing.T) {
	t.Parallel()
	rmemMax := readRmemMax()
	if rmemMax == 0 {
		t.Skipf("cannot read %s", rmemMaxPath)
	}
	want := 2 * rmemMax
	cfg := Config{Address: loopback, Ports: []uint16{0}, RecvBufferBytes: want}
	var r *Receiver
	var openErr, strictErr, dropErr error
	onThread(func() {
		if dropErr = dropNetAdmin(); dropErr != nil {
			return
		}
		r, openErr = Open(cfg)
		strict := cfg
		strict.RequireRecvBuffer = true
		_, strictErr = Open(strict)
	})
	if dropErr != nil {
		t.Fatalf("drop CAP_NET_ADMIN on a test thread: %v", dropErr)
	}
	if openErr != nil {
		t.Fatalf("Open without RequireRecvBuffer = %v, want the socket with the shortfall recorded", openErr)
	}
	defer func() { _ = r.Close() }()
	var be *BufferError
	if !errors.As(r.BufferErr(), &be) || be.Wanted != want || be.Obtained != rmemMax || be.RmemMax != rmemMax || !errors.Is(be.Force, unix.EPERM) {
		t.Fatalf("BufferErr = %#v, want wanted %d, obtained %d, rmem_max %d, force refused", r.BufferErr(), want, rmemMax, rmemMax)
	}
	if got := r.Sockets()[0].RecvBuffer; got != rmemMax {
		t.Errorf("RecvBuffer = %d, want %d", got, rmemMax)
	}
	msg := be.Error()
	for _, s := range []string{fmt.Sprintf("wanted %d bytes", want), fmt.Sprintf("obtained %d", rmemMax), fmt.Sprintf("sysctl -w net.core.rmem_max=%d", want)} {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q does not say %q", msg, s)
		}
	}
	if !errors.As(strictErr, &be) || be.Wanted != want {
		t.Errorf("Open with RequireRecvBuffer = %v, want a *BufferError", strictErr)
	}
	t.Logf("message: %s", strictErr)
}

// With CAP_NET_ADMIN, SO_RCVBUFFORCE gets a buffer past net.core.rmem_max.
func TestBufferForcedPastRmemMax(t *testing.T) {
	t.Parallel()
	_, data, err := capabilities()
	if err != nil || data[0].Effective&(1<<unix.CAP_NET_ADMIN) == 0 {
		t.Skipf("needs CAP_NET_ADMIN (capget: %v)", err)
	}
	want := 2 * readRmemMax()
	r, err := Open(Config{Address: loopback, Ports: []uint16{0}, RecvBufferBytes: want, RequireRecvBuffer: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() { _ = r.Close() }()
	if got := r.Sockets()[0].RecvBuffer; got < want || r.BufferErr() != nil {
		t.Errorf("RecvBuffer = %d (%v), want at least %d", got, r.BufferErr(), want)
	}
}
