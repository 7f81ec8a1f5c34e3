//go:build linux

package udp

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringcap/ringcap/internal/affinity"
)

// Receiver owns a set of UDP sockets and, while Run runs, one receive goroutine per socket,
// each blocked in recvmmsg on its own thread while no datagram waits (not in Go's network
// poller: a wake-up is then one thread switch, not a poller's hand-off to a goroutine).
type Receiver struct {
	cfg      Config
	socks    []*socket
	running  atomic.Bool
	stopping atomic.Bool // set before the sockets are shut down: receive loops return
	mu       sync.Mutex  // orders Run's start against Close
	closed   bool        // under mu
	stop     sync.Once   // shuts the sockets down
	wg       sync.WaitGroup
	release  sync.Once // closes the descriptors, after the loops returned
}

// socket is one bound socket (a blocking descriptor the receiver owns) with its batch state
// and counters.
type socket struct {
	info     SocketInfo
	fd       int
	b        *batch
	counters Counters
}

// Open validates cfg, opens and binds every socket, sizes its buffer and joins its groups.
// On error nothing stays open.
func Open(cfg Config) (*Receiver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := affinity.CheckAllowed(cfg.CPUs); err != nil {
		return nil, fmt.Errorf("udp config: CPUs %v: %w", cfg.CPUs, err)
	}
	var ifindex int
	if len(cfg.Groups) > 0 {
		var err error
		if ifindex, err = interfaceIndex(cfg.Interface); err != nil {
			return nil, err
		}
	}
	r := &Receiver{cfg: cfg}
	for _, port := range cfg.Ports {
		for k := range cfg.SocketsPerPort {
			s, err := r.openSocket(port, k, ifindex)
			if err != nil {
				_ = r.Close()
				return nil, err
			}
			port = s.info.Local.Port() // the kernel's choice for port 0, shared by the others
			s.info.CPU, s.info.Pinned = cfg.cpuFor(len(r.socks))
			r.socks = append(r.socks, s)
		}
	}
	return r, nil
}

// openSocket opens socket k of port.
func (r *Receiver) openSocket(port uint16, k, ifindex int) (*socket, error) {
	groups := r.cfg.groupsFor(k)
	conn, buf, err := openSocket(r.cfg, port, groups, ifindex)
	if err != nil {
		return nil, err
	}
	local := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	fd, err := detach(conn)
	if err != nil {
		return nil, fmt.Errorf("udp %s: %w", local, err)
	}
	s := &socket{fd: fd, b: newBatch(r.cfg.BatchSize, r.cfg.PacketSize)}
	s.info = SocketInfo{Local: local, Groups: groups, RecvBuffer: buf.obtained, BufferErr: buf.err}
	return s, nil
}

// Sockets describes the open sockets, in the order of Packet.Socket.
func (r *Receiver) Sockets() []SocketInfo {
	out := make([]SocketInfo, len(r.socks))
	for i, s := range r.socks {
		out[i] = s.info
	}
	return out
}

// BufferErr is the first socket's *BufferError, or nil when every socket got the receive
// buffer asked for.
func (r *Receiver) BufferErr() error {
	for _, s := range r.socks {
		if s.info.BufferErr != nil {
			return s.info.BufferErr
		}
	}
	return nil
}

// Counters returns socket i's live counters.
func (r *Receiver) Counters(i int) *Counters { return &r.socks[i].counters }

// Stats sums every socket's counters.
func (r *Receiver) Stats() Stats {
	var s Stats
	for _, sk := range r.socks {
		s = s.Add(sk.counters.Load())
	}
	return s
}

// Run receives on every socket, calling h for each datagram, until Close (then it returns
// nil) or until a socket fails (then it closes the others and returns that error). Run may
// be called once.
func (r *Receiver) Run(h Handler) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("udp receiver: Run called twice")
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	errs := make(chan error, len(r.socks))
	r.wg.Add(len(r.socks))
	r.mu.Unlock()
	for i, s := range r.socks {
		go func() {
			defer r.wg.Done()
			errs <- r.receive(i, s, h)
		}()
	}
	var first error
	for range r.socks {
		if err := <-errs; err != nil && first == nil {
			first = err
			r.shutdown()
		}
	}
	return first
}

// yieldWithin bounds the time between a receive loop's passes through the scheduler. A
// loop that only ever returns from system calls keeps its P on one scheduling tick; after
// 10 ms of that the runtime's monitor takes the P away and then polls every 20 µs for a
// while: on a busy stream thousands of wake-ups a second. A yield keeps the tick moving, but
// it costs two thread switches (the runtime wakes an idle thread to look for work, which
// finds none and sleeps again), so the loop yields as seldom as it safely can: when the time
// since its last yield and its longest sleep ahead reach this bound.
const yieldWithin = 9 * time.Millisecond

// receive is socket i's loop: a batch, its delivery, its counts.
func (r *Receiver) receive(i int, s *socket, h Handler) error {
	if err := s.lockThread(r.cfg.LockOSThread); err != nil {
		return err
	}
	yielded := time.Now()
	yieldAfter := yieldWithin - max(r.cfg.Gather, 0) // the next sleep may take the rest
	g := newGatherer(r.cfg.Gather, r.cfg.BatchSize, s.info.RecvBuffer, yielded)
	for !r.stopping.Load() {
		s.read(g.sleep())
		if r.stopping.Load() {
			return nil
		}
		c, err := s.deliverBatch(i, h)
		if err != nil {
			return err
		}
		now := time.Now()
		g.observe(now, s.b.n, c.bytes)
		if now.Sub(yielded) >= yieldAfter {
			runtime.Gosched()
			yielded = now
		}
	}
	return nil
}

// lockThread locks the receive goroutine to its OS thread when asked (lock) or when the
// thread is to be pinned, and pins it. The lock is never released: the runtime ends the
// thread when the loop returns, so no thread with a narrowed CPU set goes back to run
// other goroutines.
func (s *socket) lockThread(lock bool) error {
	if !lock && !s.info.Pinned {
		return nil
	}
	runtime.LockOSThread()
	if !s.info.Pinned {
		return nil
	}
	if _, err := affinity.Pin(s.info.CPU); err != nil {
		return fmt.Errorf("udp %s: pin the receive thread to %w", s.info.Local, err)
	}
	return nil
}

// read fills the batch: after sleeping d (when d > 0) it takes what gathered, and when
// nothing did (or d is 0) it waits for the next datagram.
func (s *socket) read(d time.Duration) {
	if d > 0 {
		ts := unix.NsecToTimespec(d.Nanoseconds())
		_ = unix.Nanosleep(&ts, nil) // EINTR: read early
		if s.b.recv(s.fd, unix.MSG_DONTWAIT); s.b.errno != unix.EAGAIN {
			return
		}
	}
	s.b.recv(s.fd, unix.MSG_WAITFORONE)
}

// deliverBatch hands the batch just received to h, counts it and returns its counts.
// Transient errors are counted and return nil.
func (s *socket) deliverBatch(i int, h Handler) (batchCounts, error) {
	switch s.b.errno {
	case 0:
		c := s.b.deliver(h, i)
		s.counters.add(c)
		return c, nil
	case unix.EINTR, unix.ENOMEM, unix.ENOBUFS:
		s.counters.Errors.Add(1)
		return batchCounts{}, nil
	default:
		s.counters.Errors.Add(1)
		return batchCounts{}, fmt.Errorf("recvmmsg on udp %s: %w", s.info.Local, s.b.errno)
	}
}

// Close shuts every socket down, which ends Run's goroutines, waits for them to return and
// closes the descriptors. It is idempotent.
func (r *Receiver) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.shutdown()
	r.wg.Wait()
	r.release.Do(func() {
		for _, s := range r.socks {
			_ = unix.Close(s.fd)
		}
	})
	return nil
}

// shutdown stops the receive loops once: shutting a socket down for reading wakes a
// recvmmsg blocked on it (and makes the next one return at once), and the loop sees
// stopping. The descriptors stay open until the loops have returned, so none is reused
// under a loop still holding its number.
func (r *Receiver) shutdown() {
	r.stop.Do(func() {
		r.stopping.Store(true)
		for _, s := range r.socks {
			_ = unix.Shutdown(s.fd, unix.SHUT_RD) // ENOTCONN on an unconnected socket, yet it wakes readers
		}
	})
}
