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

// heapBytes is the rule's heap: a trial sends whole heaps.
const heapBytes = 256 << 10

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

// trial streams rate bytes/s for duration seconds to a receiver of kind, started for it.
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
	c0, err := cpuNanos(rcv.pid())
	if err != nil {
		return result{}, err
	}
	s, err := b.send(port, rate, seconds)
	if err != nil {
		return result{}, err
	}
	rcv.settle(s)
	c1, err := cpuNanos(rcv.pid())
	if err != nil {
		return result{}, err
	}
	got, err := rcv.stop()
	if err != nil {
		return result{}, err
	}
	r := result{kind: kind, rate: rate, sent: s, got: got, cpu: float64(c1-c0) / 1e9}
	fmt.Fprintln(b.o.out, r)
	return r, nil
}

func (b *bench) startReceiver(kind string, port int) (receiver, error) {
	if kind == kindFloor {
		return startFloor(&b.o, port)
	}
	b.keys++
	return startRingcap(&b.o, port, strconv.FormatUint(b.o.keyBase+b.keys*2, 16))
}

// send runs the sender for seconds at rate, whole heaps, at least 16.
func (b *bench) send(port int, rate, seconds float64) (sent, error) {
	heaps := math.Max(16, math.Ceil(rate*seconds/heapBytes))
	args := append([]string{"send", "--connect", "127.0.0.1:" + strconv.Itoa(port)}, speadRule...)
	args = append(args, "--bytes", strconv.FormatFloat(heaps*heapBytes, 'f', 0, 64), "--seed", "1",
		"--rate", strconv.FormatFloat(math.Round(rate), 'f', 0, 64))
	cmd := pinned(b.o.sendCPU, b.o.ringcap, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		fmt.Fprint(os.Stderr, out.String())
		return sent{}, fmt.Errorf("ringcap send at %.0f MiB/s: %w", rate/mib, err)
	}
	return parseSent(out.String())
}
