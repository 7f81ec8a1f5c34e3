//go:build linux

package udp

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Receiver owns a set of UDP sockets and, while Run runs, one receive goroutine per socket.
type Receiver struct {
	cfg     Config
	socks   []*socket
	running atomic.Bool
	mu      sync.Mutex // orders Run's start against Close
	closed  bool       // under mu
	once    sync.Once  // closes the sockets
	wg      sync.WaitGroup
}

// socket is one bound socket with its batch state and counters.
type socket struct {
	info     SocketInfo
	conn     *net.UDPConn
	rc       syscall.RawConn
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
	rc, err := conn.SyscallConn()
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("raw connection of udp socket: %w", err)
	}
	s := &socket{conn: conn, rc: rc, b: newBatch(r.cfg.BatchSize, r.cfg.PacketSize)}
	s.info = SocketInfo{
		Local:      conn.LocalAddr().(*net.UDPAddr).AddrPort(),
		Groups:     groups,
		RecvBuffer: buf.obtained,
		BufferErr:  buf.err,
	}
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
			r.closeSockets()
		}
	}
	return first
}

// receive is socket i's loop: a batch, its delivery, its counts.
func (r *Receiver) receive(i int, s *socket, h Handler) error {
	if r.cfg.LockOSThread {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	for {
		if err := s.receiveBatch(i, h); err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
	}
}

// receiveBatch waits for one batch, hands it to h and counts it. Transient errors are
// counted and return nil.
func (s *socket) receiveBatch(i int, h Handler) error {
	if err := s.rc.Read(s.b.readFn); err != nil {
		if errors.Is(err, net.ErrClosed) {
			return err
		}
		s.counters.Errors.Add(1)
		return fmt.Errorf("receive on udp %s: %w", s.info.Local, err)
	}
	switch s.b.errno {
	case 0:
		s.counters.add(s.b.deliver(h, i))
		return nil
	case unix.EINTR, unix.ENOMEM, unix.ENOBUFS:
		s.counters.Errors.Add(1)
		return nil
	default:
		s.counters.Errors.Add(1)
		return fmt.Errorf("recvmmsg on udp %s: %w", s.info.Local, s.b.errno)
	}
}

// Close closes every socket, which ends Run's goroutines, and waits for them to return.
// It is idempotent.
func (r *Receiver) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.closeSockets()
	r.wg.Wait()
	return nil
}

// closeSockets closes the sockets once; a blocked receive returns net.ErrClosed.
func (r *Receiver) closeSockets() {
	r.once.Do(func() {
		for _, s := range r.socks {
			_ = s.conn.Close()
		}
	})
}
