package ofifabric

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// waiter lets the receive loop sleep until a completion may be there
// (fabric.Notifier): the completion queues' wait fds (FI_WAIT_FD) in one
// epoll set with an eventfd that Close rings; fi_trywait before each sleep,
// as libfabric asks, so that a manual-progress provider (tcp;ofi_rxm) is
// progressed and nothing ready is slept through.
type waiter struct {
	epfd, wake int
	arm        chan struct{}
	events     chan struct{}
	done       chan struct{}
	exited     chan struct{}
}

// newWaiter puts the wait fds of cqs in an epoll set; an error means the
// endpoint cannot sleep this way (it polls instead).
func newWaiter(cqs []*ofi.CQ) (_ *waiter, err error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	w := &waiter{epfd: epfd, wake: -1, arm: make(chan struct{}, 1), events: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{})}
	defer func() {
		if err != nil {
			w.closeFDs()
		}
	}()
	if w.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	fds := []int{w.wake}
	for i, q := range cqs {
		fd, ok := q.WaitFD()
		if !ok {
			return nil, fmt.Errorf("completion queue %d has no wait fd", i)
		}
		fds = append(fds, fd)
	}
	for _, fd := range fds {
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			return nil, fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	go w.run()
	return w, nil
}

// run sleeps in epoll_wait after each arm until a wait fd (or Close) wakes it.
func (w *waiter) run() {
	defer close(w.exited)
	evs := make([]unix.EpollEvent, 8)
	for {
		select {
		case <-w.done:
			return
		case <-w.arm:
		}
		for {
			n, err := unix.EpollWait(w.epfd, evs, -1)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			select {
			case <-w.done:
				return
			default:
			}
			if n > 0 || err != nil {
				w.notify()
				break
			}
		}
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

// close stops run, waits for it and closes the fds; call it once.
func (w *waiter) close() {
	close(w.done)
	var one [8]byte
	one[0] = 1
	_, _ = unix.Write(w.wake, one[:])
	<-w.exited
	w.closeFDs()
}

func (w *waiter) closeFDs() {
	if w.wake >= 0 {
		_ = unix.Close(w.wake)
	}
	_ = unix.Close(w.epfd)
}
