package ofifabric

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// cqSet is the completion queues' wait fds (FI_WAIT_FD) in one epoll set,
// itself a non-blocking file in Go's network poller: a goroutine sleeps on it
// without an OS thread of its own, and a past read deadline (its context
// done) or close wakes it at once. Call fi_trywait (endpoint.tryWait) before
// each sleep, as libfabric asks, so that a manual-progress provider
// (tcp;ofi_rxm) is progressed and nothing ready is slept through.
type cqSet struct {
	f      *os.File
	raw    syscall.RawConn
	evs    []unix.EpollEvent
	ready  func(uintptr) bool // f's readiness check, made once (no closure per wait)
	woken  bool               // ready ran once in this wait: the poller woke it since
	closed atomic.Bool
	once   sync.Once
	sleeps atomic.Uint64 // waits that found nothing ready and slept (tests)
}

// newCQSet puts the wait fds of cqs in an epoll set; an error says why the
// endpoint cannot sleep this way (it polls instead).
func newCQSet(cqs []*ofi.CQ) (*cqSet, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	if err := addWaitFDs(epfd, cqs); err != nil {
		_ = unix.Close(epfd)
		return nil, err
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("make the epoll set non-blocking: %w", err)
	}
	s := &cqSet{f: os.NewFile(uintptr(epfd), "ofi-cq-wait"), evs: make([]unix.EpollEvent, 8)}
	// A file outside the network poller has no deadlines: it could not be woken.
	if err := s.f.SetReadDeadline(time.Time{}); err != nil {
		_ = s.f.Close()
		return nil, fmt.Errorf("put the epoll set in Go's network poller: %w", err)
	}
	if s.raw, err = s.f.SyscallConn(); err != nil {
		_ = s.f.Close()
		return nil, fmt.Errorf("put the epoll set in Go's network poller: %w", err)
	}
	s.ready = s.readable
	return s, nil
}

// addWaitFDs adds each completion queue's wait fd to the epoll set epfd;
// a queue without one fails with the provider's reason.
func addWaitFDs(epfd int, cqs []*ofi.CQ) error {
	for i, q := range cqs {
		fd, ok := q.WaitFD()
		if !ok {
			_, why := q.CanWait()
			return fmt.Errorf("completion queue %d has no wait fd: %s", i, why)
		}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			return fmt.Errorf("epoll_ctl: add completion queue %d's wait fd: %w", i, err)
		}
	}
	return nil
}

// readable says whether a wait fd polls readable now (the set's epoll_wait
// with no timeout); an error counts as readable: the caller reads the
// completion queues and comes back. Called again in the same wait, the
// network poller woke the set: readable, without asking.
func (s *cqSet) readable(fd uintptr) bool {
	if s.woken {
		return true
	}
	s.woken = true
	n, err := unix.EpollWait(int(fd), s.evs, 0)
	if n > 0 || err != nil {
		return true
	}
	s.sleeps.Add(1)
	return false
}

// wait sleeps until a wait fd polls readable (nil), ctx is done (its error)
// or the set is closed (errClosed). It may return nil early (a stale
// cancellation): the caller polls and comes back. One caller at a time.
func (s *cqSet) wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_ = s.f.SetReadDeadline(time.Time{}) // an earlier wait's cancellation may have set one
	stop := func() bool { return false }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { _ = s.f.SetReadDeadline(time.Unix(1, 0)) })
	}
	// RawConn.Read checks readable, then sleeps in the network poller until
	// the set wakes (any wake after the check counts), and checks again.
	s.woken = false
	err := s.raw.Read(s.ready)
	stop()
	switch {
	case s.closed.Load():
		return errClosed
	case errors.Is(err, os.ErrDeadlineExceeded):
		return ctx.Err() // nil: a stale cancellation's deadline
	case err != nil:
		return fmt.Errorf("wait on the completion queues' wait fds: %w", err)
	}
	return nil
}

// close wakes a sleeping wait (errClosed) and closes the set once the wait
// let go of it; idempotent. Call it before closing the completion queues.
func (s *cqSet) close() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		s.closed.Store(true)
		_ = s.f.Close()
	})
}

// waiter lets the receive loop sleep until a completion may be there
// (fabric.Notifier): after each arm a goroutine sleeps on the set and then
// delivers an event.
type waiter struct {
	set    *cqSet
	arm    chan struct{}
	events chan struct{}
	done   chan struct{}
	exited chan struct{}
}

func newWaiter(set *cqSet) *waiter {
	w := &waiter{set: set, arm: make(chan struct{}, 1), events: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{})}
	go w.run()
	return w
}

// run sleeps on the set after each arm until a wait fd (or close) wakes it.
func (w *waiter) run() {
	defer close(w.exited)
	for {
		select {
		case <-w.done:
			return
		case <-w.arm:
		}
		if errors.Is(w.set.wait(context.Background()), errClosed) {
			return
		}
		w.notify()
	}
}

func (w *waiter) notify() {
	select {
	case w.events <- struct{}{}:
	default: // one pending wake-up is enough
	}
}

// sleep asks run to wait for the next completion.
func (w *waiter) sleep() {
	select {
	case w.arm <- struct{}{}:
	default:
	}
}

// close stops run, closing the set, and waits for it; call it once.
func (w *waiter) close() {
	close(w.done)
	w.set.close()
	<-w.exited
}
