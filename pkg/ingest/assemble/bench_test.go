package assemble

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringcap/ringcap/internal/benchstat"
	"github.com/ringcap/ringcap/pkg/dada"
)

// BenchmarkPut puts 8 KiB payloads in order into a real ring of 8 blocks of
// 1 MiB that a reader drains: the cost of one packet (the copy into the
// block, presence, counters and the hand-overs), in ns per packet.
func BenchmarkPut(b *testing.B) {
	const pkt = 8 << 10
	h := testRing(b, 8, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := h.LockWrite(ctx, dada.WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	drained := make(chan error, 1)
	go func() { drained <- drain(ctx, h) }()
	cfg := ForDada(w, 4)
	cfg.Header = func() ([]byte, error) { return []byte(testHeader), nil }
	a, err := New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	p := make([]byte, pkt)
	b.SetBytes(pkt)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := a.Put(uint64(i)*pkt, p); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := a.Close(); err != nil {
		b.Fatal(err)
	}
	if err := <-drained; err != nil {
		b.Fatal(err)
	}
}

// drain reads one observation from h, clearing each block at once.
func drain(ctx context.Context, h *dada.HDU) (err error) {
	r, err := h.LockRead(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.Close()) }()
	if _, err := r.ReadHeader(ctx); err != nil {
		return err
	}
	for {
		blk, err := r.NextBlock(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := r.MarkCleared(); err != nil {
			return err
		}
		if blk.EOD {
			return nil
		}
	}
}

// placeGoal is the goal of issue 53 for placing packets against a bare copy.
const placeGoal = 1.1

// BenchmarkPlaceFloor is `ratio place/memcpy-floor` (make bench-ingest): the
// CPU time of placing a batch of 8 KiB packets already in memory into a real
// ring with Put (presence, counters, the block hand-overs to a reader that
// clears each block at once) against a bare copy of the same packets into the
// same block memory at the same offsets, the floor of a one-copy receiver. It
// ignores b.N (run it with -benchtime 1x): RINGCAP_BENCH_ROUNDS rounds
// (default 7) after a warm-up round, each placing and copying the batch 32
// times, in turn first; it prints the median of the rounds' ratios with its
// interval.
func BenchmarkPlaceFloor(b *testing.B) {
	const pkt, batch, blocks, blockBytes, passes = 8 << 10, 1024, 8, 4 << 20, 32
	rounds := benchRounds(b, 7)
	h := testRing(b, blocks, blockBytes)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := h.LockWrite(ctx, dada.WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	drained := make(chan error, 1)
	go func() { drained <- drain(ctx, h) }()
	cfg := ForDada(w, 4)
	cfg.Header = func() ([]byte, error) { return []byte(testHeader), nil }
	a, err := New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	pkts := packetBatch(batch, pkt)
	var off uint64
	place := func() error {
		for range passes {
			for _, p := range pkts {
				if err := a.Put(off, p); err != nil {
					return err
				}
				off += pkt
			}
		}
		return nil
	}
	var coff uint64
	floor := func() error {
		for range passes {
			for _, p := range pkts {
				copy(h.Data.Block(int(coff / blockBytes % blocks))[coff%blockBytes:], p)
				coff += pkt
			}
		}
		return nil
	}
	if err := errors.Join(place(), floor()); err != nil { // warm-up: the ring's pages fault in
		b.Fatal(err)
	}
	n := float64(passes * batch)
	var ratios, pc, fc, pw, fw []float64
	for i := range rounds {
		steps := []func() error{place, floor}
		if i%2 == 1 {
			steps = []func() error{floor, place}
		}
		var costs [2]packetCost
		for j, step := range steps {
			c, err := timePackets(n, step)
			if err != nil {
				b.Fatal(err)
			}
			costs[(j+i)%2] = c
		}
		ratios = append(ratios, costs[0].cpu/costs[1].cpu)
		pc, fc, pw, fw = append(pc, costs[0].cpu), append(fc, costs[1].cpu), append(pw, costs[0].wall), append(fw, costs[1].wall)
	}
	if err := a.Close(); err != nil {
		b.Fatal(err)
	}
	if err := <-drained; err != nil {
		b.Fatal(err)
	}
	if c := a.Snapshot(); c.Received != c.Packets {
		b.Fatalf("placed %d of %d packets", c.Received, c.Packets)
	}
	printPlaceRatio(ratios, pc, fc, pw, fw, rounds, passes*batch)
}

func printPlaceRatio(ratios, pc, fc, pw, fw []float64, rounds, packets int) {
	med, lo, hi := benchstat.MedianCI(ratios)
	p, _, _ := benchstat.MedianCI(pc)
	f, _, _ := benchstat.MedianCI(fc)
	pwm, _, _ := benchstat.MedianCI(pw)
	fwm, _, _ := benchstat.MedianCI(fw)
	met := "met"
	if hi > placeGoal {
		met = "not met by the interval"
	}
	if med > placeGoal {
		met = "not met"
	}
	fmt.Printf("ratio place/memcpy-floor=%.3f [%.3f, %.3f]  goal ≤ %.1f: %s; assemble.Put %.0f ns per packet, copy %.0f ns (CPU time; wall %.0f and %.0f ns, %.2f and %.2f GB/s)  (8 KiB packets, a batch of 8 MiB into a ring of 8 x 4 MiB with a clearing reader, median of %d rounds of %d packets)\n",
		med, lo, hi, placeGoal, met, p, f, pwm, fwm, 8192/pwm, 8192/fwm, rounds, packets)
}

// packetBatch returns n packets of size bytes, each its own buffer, filled.
func packetBatch(n, size int) [][]byte {
	pkts := make([][]byte, n)
	for i := range pkts {
		pkts[i] = make([]byte, size)
		for j := range pkts[i] {
			pkts[i][j] = byte(i + j)
		}
	}
	return pkts
}

// packetCost is the cost of one packet: wall time and the process's CPU time,
// in ns.
type packetCost struct{ wall, cpu float64 }

// timePackets runs fn (n packets) and returns its cost per packet.
func timePackets(n float64, fn func() error) (packetCost, error) {
	c0, err := processCPU()
	if err != nil {
		return packetCost{}, err
	}
	start := time.Now()
	if err := fn(); err != nil {
		return packetCost{}, err
	}
	wall := time.Since(start)
	c1, err := processCPU()
	if err != nil {
		return packetCost{}, err
	}
	return packetCost{wall: float64(wall.Nanoseconds()) / n, cpu: float64(c1-c0) / n}, nil
}

// processCPU is the process's user and system CPU time so far, in ns.
func processCPU() (int64, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), nil
}

// benchRounds is RINGCAP_BENCH_ROUNDS (make bench-ingest ROUNDS=), else def.
func benchRounds(b *testing.B, def int) int {
	s := os.Getenv("RINGCAP_BENCH_ROUNDS")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("RINGCAP_BENCH_ROUNDS=%q: want a number of rounds, at least 1", s)
	}
	return n
}
