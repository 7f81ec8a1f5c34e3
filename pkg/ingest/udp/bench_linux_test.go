//go:build linux

package udp

import (
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"
)

// openLoopback opens a receiver on 127.0.0.1 without running it, and a sender toward it.
func openLoopback(t testing.TB, cfg Config) (*Receiver, *net.UDPConn) {
	t.Helper()
	cfg.Address, cfg.Ports = loopback, []uint16{0}
	r, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(r.Sockets()[0].Local))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return r, c
}

// In the steady state a batch (a gathering sleep, recvmmsg, control messages, delivery,
// counters) allocates nothing, and neither does anything per datagram.
func TestReceiveBatchAllocatesNothing(t *testing.T) { // not parallel: AllocsPerRun counts every goroutine
	const perRun = 16
	r, c := openLoopback(t, Config{BatchSize: perRun, PacketSize: 2048, RecvBufferBytes: 1 << 20})
	s := r.socks[0]
	var got int
	h := func(p Packet) { got += len(p.Data) & 1 } // touch the packet
	buf := make([]byte, 1024)
	allocs := testing.AllocsPerRun(200, func() {
		for range perRun {
			if _, err := c.Write(buf); err != nil {
				t.Fatalf("send: %v", err)
			}
		}
		for want := s.counters.Packets.Load() + perRun; s.counters.Packets.Load() < want; {
			s.read(100 * time.Microsecond)
			if _, err := s.deliverBatch(0, h); err != nil {
				t.Fatalf("receive: %v", err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per %d datagrams sent and received, want 0", allocs, perRun)
	}
	_ = got
}

// BenchmarkReceiveLoopback is the receive rate on loopback: one op is one datagram handed
// to the handler (ns/op is ns per packet); a paced sender keeps the socket from dropping.
func BenchmarkReceiveLoopback(b *testing.B) {
	for _, size := range []int{1024, 8192} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) { benchReceive(b, size) })
	}
}

func benchReceive(b *testing.B, size int) {
	r, c := openLoopback(b, Config{PacketSize: size, RecvBufferBytes: 8 << 20})
	done := make(chan error, 1)
	b.ReportAllocs()
	b.SetBytes(int64(size))
	reached := make(chan struct{})
	var handled int
	go func() {
		done <- r.Run(func(Packet) {
			if handled++; handled == b.N {
				close(reached)
			}
		})
	}()
	stop := make(chan struct{})
	go pacedSend(r, c, size, stop)
	b.ResetTimer()
	start := time.Now()
	<-reached
	elapsed := time.Since(start)
	b.StopTimer()
	close(stop)
	_ = r.Close()
	if err := <-done; err != nil {
		b.Fatalf("Run: %v", err)
	}
	s := r.Stats()
	b.ReportMetric(float64(s.Packets)/elapsed.Seconds(), "packets/s")
	b.ReportMetric(float64(s.Packets)/float64(s.Batches), "packets/batch")
	b.ReportMetric(float64(s.KernelDrops), "drops")
}

// pacedSend sends size-byte datagrams with at most 512 not yet accounted for, until stop.
func pacedSend(r *Receiver, c *net.UDPConn, size int, stop <-chan struct{}) {
	buf := make([]byte, size)
	var sent uint64
	for {
		select {
		case <-stop:
			return
		default:
		}
		if sent >= r.Stats().Accounted()+512 {
			runtime.Gosched()
			continue
		}
		if _, err := c.Write(buf); err == nil {
			sent++
		}
	}
}
