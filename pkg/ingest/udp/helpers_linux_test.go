//go:build linux

package udp

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/ringcap/ringcap/internal/testkit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// loopback is the address every unicast test sends to.
var loopback = netip.MustParseAddr("127.0.0.1")

// start opens a receiver for cfg and runs it with h; cleanup closes it and checks that Run
// returned nil.
func start(t *testing.T, cfg Config, h Handler) *Receiver {
	t.Helper()
	r, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open(%+v): %v", cfg, err)
	}
	return run(t, r, h)
}

// run runs r with h until the test ends.
func run(t *testing.T, r *Receiver, h Handler) *Receiver {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.Run(h) }()
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v after Close, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return after Close")
		}
	})
	return r
}

// dial opens a sender socket toward to.
func dial(t *testing.T, to netip.AddrPort) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(to))
	if err != nil {
		t.Fatalf("dial udp %s: %v", to, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// datagram fills p with sequence number seq followed by bytes derived from it.
func datagram(p []byte, seq uint64) []byte {
	binary.LittleEndian.PutUint64(p, seq)
	for i := 8; i < len(p); i++ {
		p[i] = byte(seq) + byte(i)
	}
	return p
}

// intact reports whether p is datagram(p, seq) for its own seq.
func intact(p []byte) bool {
	if len(p) < 8 {
		return false
	}
	seq := binary.LittleEndian.Uint64(p)
	for i := 8; i < len(p); i++ {
		if p[i] != byte(seq)+byte(i) {
			return false
		}
	}
	return true
}

// send writes p once, failing the test on error.
func send(t *testing.T, c *net.UDPConn, p []byte) {
	t.Helper()
	if _, err := c.Write(p); err != nil {
		t.Fatalf("send %d bytes: %v", len(p), err)
	}
}

// waitAccounted waits until every one of sent datagrams is accounted for.
func waitAccounted(t *testing.T, r *Receiver, sent uint64) Stats {
	t.Helper()
	testkit.WaitFor(t, 20*time.Second, "every datagram accounted for", func() (bool, string) {
		s := r.Stats()
		return s.Accounted() == sent, statsString(s, sent)
	})
	return r.Stats()
}

func statsString(s Stats, sent uint64) string {
	return fmt.Sprintf("sent %d: packets %d, truncated %d, kernel drops %d, errors %d", sent, s.Packets, s.Truncated, s.KernelDrops, s.Errors)
}

// runtimeYield lets the receiver run while a sender waits for it.
func runtimeYield() { time.Sleep(50 * time.Microsecond) }
