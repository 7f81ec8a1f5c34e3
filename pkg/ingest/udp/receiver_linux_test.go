//go:build linux

package udp

import (
	"errors"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Every datagram sent arrives intact from its sender and is counted once; datagrams longer
// than PacketSize are counted as truncated, not handed on.
func TestPacketsSentArePacketsCounted(t *testing.T) {
	t.Parallel()
	const packetSize, n, long = 1500, 20000, 100
	var bad, handled, bytes atomic.Uint64
	var mu sync.Mutex
	sources := map[netip.AddrPort]int{}
	r := start(t, Config{Address: loopback, Ports: []uint16{0}, PacketSize: packetSize, RecvBufferBytes: 4 << 20}, func(p Packet) {
		if !intact(p.Data) || p.Socket != 0 {
			bad.Add(1)
		}
		handled.Add(1)
		bytes.Add(uint64(len(p.Data)))
		mu.Lock()
		sources[p.Source]++
		mu.Unlock()
	})
	c := dial(t, r.Sockets()[0].Local)
	buf := make([]byte, packetSize+1)
	var sentBytes uint64
	for i := range uint64(n) {
		size := 8 + int(i%uint64(packetSize-7)) // 8 ... packetSize bytes
		send(t, c, datagram(buf[:size], i))
		sentBytes += uint64(size)
		for i+1 > r.Stats().Accounted()+256 { // pace: stay far below the socket buffer
			time.Sleep(100 * time.Microsecond)
		}
	}
	for i := range uint64(long) {
		send(t, c, datagram(buf[:packetSize+1], i))
	}
	s := waitAccounted(t, r, n+long)
	if s.KernelDrops != 0 {
		t.Skipf("the kernel dropped %d datagrams on a loaded host; the drop test checks the accounting", s.KernelDrops)
	}
	if s.Packets != n || s.Truncated != long || handled.Load() != n || s.Bytes != sentBytes || bytes.Load() != sentBytes || s.Errors != 0 {
		t.Errorf("stats %+v, handler saw %d packets of %d bytes; want %d packets of %d bytes and %d truncated", s, handled.Load(), bytes.Load(), n, sentBytes, long)
	}
	if bad.Load() != 0 {
		t.Errorf("%d datagrams arrived corrupted or on the wrong socket", bad.Load())
	}
	local := c.LocalAddr().String()
	if len(sources) != 1 || sources[netip.MustParseAddrPort(local)] != n {
		t.Errorf("sources %v, want all %d from %s", sources, n, local)
	}
	if s.Batches == 0 || s.Batches > s.Packets+s.Truncated {
		t.Errorf("%d batches for %d datagrams", s.Batches, s.Packets+s.Truncated)
	}
}

// Several sockets on one port (SO_REUSEPORT) share datagrams from many senders, each
// datagram delivered once.
func TestReusePortSocketsShareTheLoad(t *testing.T) {
	t.Parallel()
	const senders, each = 32, 50
	var handled [2]atomic.Uint64
	r := start(t, Config{Address: loopback, Ports: []uint16{0}, SocketsPerPort: 2, LockOSThread: true, RecvBufferBytes: 1 << 20},
		func(p Packet) { handled[p.Socket].Add(1) })
	socks := r.Sockets()
	if len(socks) != 2 || socks[0].Local != socks[1].Local {
		t.Fatalf("sockets %+v, want two on one port", socks)
	}
	buf := make([]byte, 64)
	for s := range senders {
		c := dial(t, socks[0].Local)
		for i := range each {
			send(t, c, datagram(buf, uint64(s*each+i)))
		}
	}
	st := waitAccounted(t, r, senders*each)
	if st.Packets != senders*each || handled[0].Load()+handled[1].Load() != senders*each {
		t.Fatalf("stats %+v, handlers %d+%d, want %d packets", st, handled[0].Load(), handled[1].Load(), senders*each)
	}
	for i := range 2 {
		if c := r.Counters(i).Packets.Load(); c == 0 || c != handled[i].Load() {
			t.Errorf("socket %d counted %d packets and handled %d; want the load shared (%d senders)", i, c, handled[i].Load(), senders)
		}
	}
}

// IPv6 loopback works the same way.
func TestIPv6Loopback(t *testing.T) {
	t.Parallel()
	r, err := Open(Config{Address: netip.IPv6Loopback(), Ports: []uint16{0}})
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	var from atomic.Value
	run(t, r, func(p Packet) { from.Store(p.Source) })
	c := dial(t, r.Sockets()[0].Local)
	for i := range uint64(10) {
		send(t, c, datagram(make([]byte, 100), i))
	}
	if s := waitAccounted(t, r, 10); s.Packets != 10 {
		t.Fatalf("stats %+v, want 10 packets", s)
	}
	if got := from.Load().(netip.AddrPort); got.Addr() != netip.IPv6Loopback() {
		t.Errorf("source %s, want ::1", got)
	}
}

// A stalled handler and a tiny socket buffer make the kernel drop datagrams; every one sent
// is then either handed on or counted as a kernel drop, exactly.
func TestKernelDropsAreCountedExactly(t *testing.T) {
	t.Parallel()
	stalled, release := make(chan struct{}), make(chan struct{})
	var once, unstall sync.Once
	r := start(t, Config{Address: loopback, Ports: []uint16{0}, RecvBufferBytes: 1, BatchSize: 8},
		func(Packet) { once.Do(func() { close(stalled); <-release }) })
	t.Cleanup(func() { unstall.Do(func() { close(release) }) }) // runs before start's Close
	c := dial(t, r.Sockets()[0].Local)
	buf := make([]byte, 1000)
	var sent uint64
	send(t, c, datagram(buf, sent)) // the handler stalls on this one
	sent++
	select {
	case <-stalled:
	case <-time.After(10 * time.Second):
		t.Fatalf("the first datagram did not arrive: %+v", r.Stats())
	}
	for range 500 {
		send(t, c, datagram(buf, sent))
		sent++
	}
	unstall.Do(func() { close(release) })
	// The kernel reports its counter on the next datagram it queues: send markers once the
	// burst is drained until the drops behind the last one are reported.
	deadline := time.Now().Add(20 * time.Second)
	for r.Stats().Accounted() != sent && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		send(t, c, datagram(buf, sent))
		sent++
	}
	s := waitAccounted(t, r, sent)
	if s.KernelDrops == 0 || s.Packets+s.KernelDrops != sent || s.Truncated != 0 {
		t.Fatalf("stats %+v after %d sent; want kernel drops > 0 and packets + drops = sent", s, sent)
	}
	t.Logf("%d sent: %d received, %d dropped by the kernel (buffer %d bytes)", sent, s.Packets, s.KernelDrops, r.Sockets()[0].RecvBuffer)
}

// Close unblocks receivers waiting for datagrams, is idempotent and leaves no goroutine
// and no descriptor.
func TestCloseUnblocksAndLeavesNoGoroutines(t *testing.T) {
	base := goleak.IgnoreCurrent()
	fds := openFDs(t)
	r, err := Open(Config{Address: loopback, Ports: []uint16{0, 0}, SocketsPerPort: 3, LockOSThread: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if n := len(r.Sockets()); n != 6 {
		t.Fatalf("%d sockets, want 6", n)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(func(Packet) {}) }()
	waitRunning(t)
	for range 2 {
		if err := r.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v after Close, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run still blocked 10s after Close")
	}
	if err := r.Run(func(Packet) {}); err == nil {
		t.Error("a second Run returned nil, want an error")
	}
	if err := goleak.Find(base); err != nil {
		t.Fatalf("goroutines left after Close: %v", err)
	}
	if n := openFDs(t); n != fds {
		t.Errorf("%d descriptors open after Close, %d before Open", n, fds)
	}
	// A receiver closed before it ran returns at once.
	r2, err := Open(Config{Address: loopback, Ports: []uint16{0}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	_ = r2.Close()
	if err := r2.Run(func(Packet) {}); err != nil {
		t.Errorf("Run after Close = %v, want nil", err)
	}
}

// waitRunning gives Run's goroutines a moment to block in the poller.
func waitRunning(t *testing.T) {
	t.Helper()
	time.Sleep(50 * time.Millisecond)
}

// Open fails cleanly and closes what it opened when a later socket cannot bind.
func TestOpenFailureClosesEverything(t *testing.T) {
	t.Parallel()
	r, err := Open(Config{Address: loopback, Ports: []uint16{0}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() { _ = r.Close() }()
	_, err = Open(Config{Address: netip.MustParseAddr("192.0.2.1"), Ports: []uint16{0}}) // TEST-NET-1, not ours
	if err == nil {
		t.Fatal("Open on an address not on this host succeeded")
	}
	var be *BufferError
	if errors.As(err, &be) {
		t.Fatalf("Open = %v, want a bind error", err)
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
