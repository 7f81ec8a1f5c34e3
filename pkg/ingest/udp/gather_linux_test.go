//go:build linux

package udp

import (
	"testing"
	"time"
)

// A gathering read takes every datagram waiting after its sleep in one call; when none is
// waiting it waits for the next one instead of returning empty.
func TestGatheringRead(t *testing.T) {
	t.Parallel()
	r, c := openLoopback(t, Config{BatchSize: 64, PacketSize: 2048, RecvBufferBytes: 1 << 20})
	s := r.socks[0]
	buf := make([]byte, 512)
	for range 10 { // loopback queues them in the socket before Write returns
		send(t, c, buf)
	}
	s.read(time.Millisecond)
	if s.b.errno != 0 || s.b.n != 10 {
		t.Fatalf("read after sleeping: %d datagrams (errno %v), want the 10 waiting in one call", s.b.n, s.b.errno)
	}
	go func() {
		time.Sleep(50 * time.Millisecond) // arrives after the sleep: the read waits for it
		_, _ = c.Write(buf)
	}()
	s.read(time.Millisecond)
	if s.b.errno != 0 || s.b.n != 1 {
		t.Fatalf("read after an empty sleep: %d datagrams (errno %v), want the 1 sent after it", s.b.n, s.b.errno)
	}
}
