package sender

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/ringcap/ringcap/pkg/ingest/stream"
)

// batch is the packets sent between two checks of the context when the rate
// is unlimited; a limited rate is paced packet by packet, so that no burst
// overflows a small receive buffer.
const batch = 32

// Result is what a run sent.
type Result struct {
	Bytes          uint64 // stream bytes the packets cover, dropped ones included
	Packets        uint64 // packets sent
	PayloadBytes   uint64 // payload bytes sent
	DroppedPackets uint64 // packets skipped by DropEvery
	DroppedBytes   uint64 // their payload bytes
	StopHeaps      uint64 // SPEAD stream-stop heaps sent after the data (not in Packets)
	Seconds        float64
	Complete       bool
}

// packets is a stream cut into packets.
type packets interface {
	count() uint64
	packet(i uint64) (b []byte, payload uint64)
}

// ender is a stream that ends with a packet of its own (SPEAD's stream-stop
// heap), never dropped.
type ender interface {
	end() []byte
}

// Run sends the stream c describes to c.Target and returns what it sent.
func Run(ctx context.Context, c Config) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	var ps packets
	if c.Stream.Protocol == stream.SPEAD {
		ps = newSPEAD(c)
	} else {
		ps = newVDIF(c)
	}
	conn, err := dial(c)
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = conn.Close() }()
	return send(ctx, conn, ps, c)
}

// dial opens the UDP socket to the target, with the multicast TTL and
// interface.
func dial(c Config) (*net.UDPConn, error) {
	raddr, err := net.ResolveUDPAddr("udp", c.Target)
	if err != nil {
		return nil, fmt.Errorf("sender: resolving %s: %w", c.Target, err)
	}
	var d net.Dialer
	if raddr.IP.IsMulticast() {
		d.Control = multicastControl(c.MulticastTTL, c.MulticastInterface)
	}
	nc, err := d.Dial("udp", raddr.String())
	if err != nil {
		return nil, fmt.Errorf("sender: connecting to %s: %w", c.Target, err)
	}
	conn := nc.(*net.UDPConn)
	_ = conn.SetWriteBuffer(4 << 20)
	return conn, nil
}

// send writes the packets in order, skipping every DropEvery-th, pacing each
// packet (or batch) to the rate.
func send(ctx context.Context, conn *net.UDPConn, ps packets, c Config) (Result, error) {
	var r Result
	start := time.Now()
	defer func() { r.Seconds = time.Since(start).Seconds() }()
	n := ps.count()
	for i := uint64(0); i < n; i++ {
		b, pl := ps.packet(i)
		r.Bytes += pl
		if c.DropEvery > 0 && (i+1)%c.DropEvery == 0 {
			r.DroppedPackets++
			r.DroppedBytes += pl
			continue
		}
		if _, err := conn.Write(b); err != nil {
			r.Seconds = time.Since(start).Seconds()
			return r, fmt.Errorf("sender: packet %d to %s: %w", i, c.Target, err)
		}
		r.Packets++
		r.PayloadBytes += pl
		if c.RateBytesPerSecond > 0 || r.Packets%batch == 0 {
			if err := pace(ctx, start, r.PayloadBytes, c.RateBytesPerSecond); err != nil {
				r.Seconds = time.Since(start).Seconds()
				return r, err
			}
		}
	}
	if e, ok := ps.(ender); ok {
		if _, err := conn.Write(e.end()); err != nil {
			return r, fmt.Errorf("sender: the stream's end to %s: %w", c.Target, err)
		}
		r.StopHeaps++
	}
	r.Complete = true
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

// pace sleeps until sent bytes are due at rate (0: no wait), or ctx ends.
func pace(ctx context.Context, start time.Time, sent uint64, rate float64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if rate <= 0 {
		return nil
	}
	ahead := time.Duration(float64(sent)/rate*float64(time.Second)) - time.Since(start)
	if ahead <= 0 {
		return nil
	}
	t := time.NewTimer(ahead)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
