package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
)

// speadRule is the stream of every trial, given to the sender and to ringcap recv alike:
// MeerKAT-shaped heaps of 256 KiB ordered by the timestamp item, cut into 8 KiB packets
// (the sender's default --packet-bytes).
var speadRule = []string{"--protocol", "spead", "--spead-timestamp-id", "0x1600", "--spead-timestamp-step", "2097152",
	"--spead-heap-bytes", "256K", "--spead-sync-time", "1700000000", "--spead-sample-rate", "1712000000"}

// heapBytes is the rule's heap: a trial sends whole heaps; the sender's first heap has
// timestamp firstTimestamp (its sample rate, a whole second), each next one step more.
const (
	heapBytes      = 256 << 10
	firstTimestamp = 1712000000
	timestampStep  = 2097152
)

const mib = 1 << 20

// result is one trial: what was sent, what the receiver counted and its CPU time while the
// stream ran.
type result struct {
	kind string
	rate float64 // asked for, bytes/s
	sent sent
	got  received
	cpu  float64 // seconds
}

func (r result) lossFree() bool { return r.got.lossFree(r.sent) }

// cpuPerGiB is the receiver's CPU seconds per GiB of payload sent.
func (r result) cpuPerGiB() float64 { return r.cpu / (r.sent.payloadBytes / (1 << 30)) }

func (r result) String() string {
	state := "loss-free"
	if !r.lossFree() {
		state = fmt.Sprintf("LOSSY (%.0f packets not written, %.0f kernel drops)", r.sent.packets-r.got.written, r.got.drops)
	}
	return fmt.Sprintf("trial %s asked %.0f MiB/s: sent %.0f packets at %.0f MiB/s, received %.0f, written %.0f, cpu %.3f s (%.2f CPU-s/GiB): %s",
		r.kind, r.rate/mib, r.sent.packets, r.sent.rate()/mib, r.got.packets, r.got.written, r.cpu, r.cpuPerGiB(), state)
}

// trial streams rate bytes/s for duration seconds to a receiver of kind, started for it,
// after a warm-up stream (see warm).
func (b *bench) trial(kind string, rate, seconds float64) (result, error) {
	port, err := freePort("udp")
	if err != nil {
		return result{}, err
	}
	rcv, err := b.startReceiver(kind, port)
	if err != nil {
		return result{}, err
	}
	defer rcv.kill()
	b.runs++
	base, next, err := b.warm(rcv, port)
	if err != nil {
		return result{}, err
	}
	c0, err := cpuNanos(rcv.pid())
	if err != nil {
		return result{}, err
	}
	s, err := b.send(port, rate, rate*seconds, next)
	if err != nil {
		return result{}, err
	}
	rcv.settle(s)
	c1, err := cpuNanos(rcv.pid())
	if err != nil {
		return result{}, err
	}
	drops, err := kernelDrops(port)
	if err != nil {
		return result{}, err
	}
	got, err := rcv.stop()
	if err != nil {
		return result{}, err
	}
	got = got.minus(base)
	got.drops = drops - base.drops
	if kind == kindFloor {
		got.written -= s.stopHeaps // ringcap counts them under control, not written
	}
	r := result{kind: kind, rate: rate, sent: s, got: got, cpu: float64(c1-c0) / 1e9}
	_, _ = fmt.Fprintln(b.o.out, r)
	return r, nil
}

// warm streams the ring's size and one block more at the warm-up rate to the receiver
// (ringcap: every page of its ring is then touched, as in a capture past its first pass;
// the floor gets the same stream) and returns its counts after it, the kernel's drops from
// /proc/net/udp among them, and the timestamp the measured stream goes on from.
func (b *bench) warm(rcv receiver, port int) (received, uint64, error) {
	if b.o.warmRate <= 0 {
		return received{}, 0, nil
	}
	size := float64((b.o.blocks + 1) * b.o.blockBytes)
	s, err := b.send(port, b.o.warmRate, size, 0)
	if err != nil {
		return received{}, 0, fmt.Errorf("warm-up: %w", err)
	}
	rcv.settle(s)
	drops, err := kernelDrops(port)
	if err != nil {
		return received{}, 0, fmt.Errorf("warm-up: %w", err)
	}
	base, ok := rcv.counts()
	if !ok { // on loopback what the kernel did not drop reached the floor
		n := s.packets + s.stopHeaps - drops
		base = received{packets: n, written: n}
	}
	base.drops = drops
	return base, firstTimestamp + uint64(heaps(size))*timestampStep, nil
}

// kernelDrops is the count of datagrams the kernel dropped at the socket bound to port
// (/proc/net/udp): exact at any moment, where SO_RXQ_OVFL tells a receiver only with its
// next datagram.
func kernelDrops(port int) (float64, error) {
	q, ok := udpQueueOf(port)
	if !ok {
		return 0, fmt.Errorf("no socket bound to port %d in /proc/net/udp", port)
	}
	return float64(q.drops), nil
}

// heaps is the number of whole heaps the sender sends for size bytes: at least 16.
func heaps(size float64) float64 { return math.Max(16, math.Ceil(size/heapBytes)) }

func (b *bench) startReceiver(kind string, port int) (receiver, error) {
	if kind == kindFloor {
		return startFloor(&b.o, port)
	}
	b.keys++
	return startRingcap(&b.o, port, strconv.FormatUint(b.o.keyBase+b.keys*2, 16))
}

// send sends size bytes (whole heaps) at rate, its first heap's timestamp start (0: the
// sender's first).
func (b *bench) send(port int, rate, size float64, start uint64) (sent, error) {
	args := append([]string{"send", "--connect", "127.0.0.1:" + strconv.Itoa(port)}, speadRule...)
	args = append(args, "--bytes", strconv.FormatFloat(heaps(size)*heapBytes, 'f', 0, 64), "--seed", "1",
		"--rate", strconv.FormatFloat(math.Round(rate), 'f', 0, 64))
	if start > 0 {
		args = append(args, "--spead-start-timestamp", strconv.FormatUint(start, 10))
	}
	cmd := pinned(b.o.sendCPU, b.o.ringcap, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		fmt.Fprint(os.Stderr, out.String())
		return sent{}, fmt.Errorf("ringcap send at %.0f MiB/s: %w", rate/mib, err)
	}
	return parseSent(out.String())
}
