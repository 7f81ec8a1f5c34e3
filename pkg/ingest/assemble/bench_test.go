package assemble

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/ringcap/ringcap/internal/benchstat"
	"github.com/ringcap/ringcap/internal/ringtest"
	"github.com/ringcap/ringcap/pkg/capture/ring"
	"github.com/ringcap/ringcap/pkg/dada"
)

// BenchmarkPut puts 8 KiB payloads in order into a real ring of 8 blocks of
// 1 MiB that a reader drains: the cost of one packet (the copy into the
// block, presence, counters and the hand-overs), in ns per packet.
func BenchmarkPut(b *testing.B) {
	const pkt = 8 << 10
	h := ringtest.New(b, testKeys, 8, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, drained := ringtest.DrainedWriter(ctx, b, h)
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

// placeGoal is the goal of issue 53 for placing packets against a bare copy.
const placeGoal = 1.1

// BenchmarkPlaceFloor is `ratio place/memcpy-floor` (make bench-ingest): the
// CPU time of placing a batch of 8 KiB packets already in memory into a real
// ring with Put (presence, counters, the block hand-overs to a reader that
// clears each block at once) against a bare copy of the same packets into the
// same block memory at the same offsets. Beside it, `ratio
// place-noring/memcpy-floor`: Put into the same blocks through a BlockWriter
// that never waits (memWriter), the assembler's own cost without the ring's
// hand-offs; and `ratio place/copy-ring-floor`: against a copy into a second
// ring of the same shape that opens each block, fills it and marks it filled
// in line (copyRing), the floor of any one-copy receiver into a PSRDADA ring,
// with `copy-ring-floor/memcpy-floor`, what that hand-off adds to a bare
// copy. It ignores b.N (run it with -benchtime 1x): RINGCAP_BENCH_ROUNDS
// rounds (default 7) after a warm-up round, each writing the batch 32 times
// each way, the first way rotating; it prints the medians of the rounds'
// ratios with their intervals. RINGCAP_BENCH_HUGEPAGES=1 makes both rings in
// huge pages (vm.nr_hugepages ≥ 32).
func BenchmarkPlaceFloor(b *testing.B) {
	rounds, err := benchstat.EnvRounds(7)
	if err != nil {
		b.Fatal(err)
	}
	newRing := ringtest.New
	if os.Getenv("RINGCAP_BENCH_HUGEPAGES") == "1" {
		newRing = ringtest.NewHugePages
	}
	h := newRing(b, testKeys, placeBlocks, placeBlockBytes)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, drained := ringtest.DrainedWriter(ctx, b, h)
	w2, drained2 := ringtest.DrainedWriter(ctx, b, newRing(b, testKeys, placeBlocks, placeBlockBytes))
	pb := newPlaceBench(ctx, b, w, w2)
	if err := pb.round(); err != nil { // warm-up: the ring's pages fault in
		b.Fatal(err)
	}
	pb.costs = [ways][]packetCost{}
	for range rounds {
		if err := pb.round(); err != nil {
			b.Fatal(err)
		}
	}
	if err := pb.close(); err != nil {
		b.Fatal(err)
	}
	for _, d := range []<-chan error{drained, drained2} {
		if err := <-d; err != nil {
			b.Fatal(err)
		}
	}
	pb.print()
}

// BenchmarkPlaceFloor's geometry: 8 KiB packets, a batch of 1024 (8 MiB)
// written placePasses times per way and round, a ring of 8 blocks of 4 MiB.
const (
	placePacket, placeBatch, placePasses = 8 << 10, 1024, 32
	placeBlocks, placeBlockBytes         = 8, 4 << 20
)

// placeBench is BenchmarkPlaceFloor's ways of writing the same packets into
// ring blocks: Put into the ring, Put through memWriter, copy into the same
// blocks, and copy into a second ring of the same shape with its block
// hand-off done in line (copyRing).
type placeBench struct {
	pkts      [][]byte
	ring, mem *Assembler
	block     func(int) []byte
	cr        *copyRing
	off       [ways]uint64
	costs     [ways][]packetCost // per way, per round
	rounds    int
}

// The ways, in costs' order.
const (
	wayRing = iota
	wayMem
	wayCopy
	wayCopyRing
	ways
)

func newPlaceBench(ctx context.Context, b *testing.B, w, w2 *dada.Writer) *placeBench {
	cfg := ForDada(w, 4)
	cfg.Header = func() ([]byte, error) { return []byte(testHeader), nil }
	ring, err := New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	mcfg := cfg
	mcfg.Writer, mcfg.Header = &memWriter{blocks: make([][]byte, placeBlocks)}, nil
	mem, err := New(ctx, mcfg)
	if err != nil {
		_ = ring.Close()
		b.Fatal(err)
	}
	cr, err := newCopyRing(ctx, w2)
	if err != nil {
		_, _ = ring.Close(), mem.Close()
		b.Fatal(err)
	}
	return &placeBench{pkts: packetBatch(placeBatch, placePacket), ring: ring, mem: mem, block: cfg.Block, cr: cr}
}

// round writes the batch placePasses times each way, the first way rotating.
func (p *placeBench) round() error {
	ways := []func() error{
		func() error { return p.put(p.ring, &p.off[wayRing]) },
		func() error { return p.put(p.mem, &p.off[wayMem]) },
		p.copy,
		func() error { return p.cr.write(p.pkts, placePasses) },
	}
	for k := range ways {
		way := (p.rounds + k) % len(ways)
		c, err := timePackets(placePasses*placeBatch, ways[way])
		if err != nil {
			return err
		}
		p.costs[way] = append(p.costs[way], c)
	}
	p.rounds++
	return nil
}

func (p *placeBench) put(a *Assembler, off *uint64) error {
	for range placePasses {
		for _, pkt := range p.pkts {
			if err := a.Put(*off, pkt); err != nil {
				return err
			}
			*off += placePacket
		}
	}
	return nil
}

func (p *placeBench) copy() error {
	off := &p.off[wayCopy]
	for range placePasses {
		for _, pkt := range p.pkts {
			copy(p.block(int(*off / placeBlockBytes % placeBlocks))[*off%placeBlockBytes:], pkt)
			*off += placePacket
		}
	}
	return nil
}

// close ends both assemblers and the copying ring's observation and checks
// that the assemblers placed every packet.
func (p *placeBench) close() error {
	if err := p.cr.close(); err != nil {
		return err
	}
	for _, a := range []*Assembler{p.ring, p.mem} {
		if err := a.Close(); err != nil {
			return err
		}
		if c := a.Snapshot(); c.Received != c.Packets {
			return fmt.Errorf("placed %d of %d packets", c.Received, c.Packets)
		}
	}
	return nil
}

// print prints the ratio lines.
func (p *placeBench) print() {
	ratioTo := func(way, anchor int) (med, lo, hi float64) {
		var r []float64
		for i := range p.costs[way] {
			r = append(r, p.costs[way][i].cpu/p.costs[anchor][i].cpu)
		}
		return benchstat.MedianCI(r)
	}
	ratio := func(way int) (med, lo, hi float64) { return ratioTo(way, wayCopy) }
	cpu, wall := p.medians()
	tail := fmt.Sprintf("(CPU time; 8 KiB packets, a batch of 8 MiB into a ring of %d x %d MiB with a clearing reader, median of %d rounds of %d packets)",
		placeBlocks, placeBlockBytes>>20, len(p.costs[wayCopy]), placePasses*placeBatch)
	med, lo, hi := ratio(wayRing)
	fmt.Printf("ratio place/memcpy-floor=%.3f [%.3f, %.3f]  goal ≤ %.1f: %s; Put %.0f ns per packet, copy %.0f ns (wall %.0f and %.0f ns, %.2f and %.2f GB/s)  %s\n",
		med, lo, hi, placeGoal, placeVerdict(med, hi), cpu[wayRing], cpu[wayCopy], wall[wayRing], wall[wayCopy], placePacket/wall[wayRing], placePacket/wall[wayCopy], tail)
	med, lo, hi = ratio(wayMem)
	fmt.Printf("ratio place-noring/memcpy-floor=%.3f [%.3f, %.3f]  Put through a writer that never waits (no ring hand-off) %.0f ns per packet (wall %.0f ns)  %s\n",
		med, lo, hi, cpu[wayMem], wall[wayMem], tail)
	med, lo, hi = ratioTo(wayRing, wayCopyRing)
	fmt.Printf("ratio place/copy-ring-floor=%.3f [%.3f, %.3f]  against a copy into a ring of the same shape that opens and marks filled each block in line (%.0f ns per packet, wall %.0f ns): the floor of a one-copy receiver into a PSRDADA ring  %s\n",
		med, lo, hi, cpu[wayCopyRing], wall[wayCopyRing], tail)
	med, lo, hi = ratio(wayCopyRing)
	fmt.Printf("ratio copy-ring-floor/memcpy-floor=%.3f [%.3f, %.3f]  what the ring's block hand-off adds to a bare copy  %s\n", med, lo, hi, tail)
}

// medians are each way's median CPU and wall time per packet, in ns.
func (p *placeBench) medians() (cpu, wall [ways]float64) {
	for way, cs := range p.costs {
		var c, w []float64
		for _, x := range cs {
			c, w = append(c, x.cpu), append(w, x.wall)
		}
		cpu[way], _, _ = benchstat.MedianCI(c)
		wall[way], _, _ = benchstat.MedianCI(w)
	}
	return cpu, wall
}

// placeVerdict says whether a ratio with goal ≤ placeGoal met it.
func placeVerdict(med, hi float64) string {
	switch {
	case hi <= placeGoal:
		return "met"
	case med <= placeGoal:
		return "met by the median, not by the interval"
	}
	return "not met"
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
func timePackets(n int, fn func() error) (packetCost, error) {
	c, err := benchstat.Measure(fn)
	c = c.Per(n)
	return packetCost{wall: c.Wall, cpu: c.CPU}, err
}

// copyRing copies packets in order into a ring through its writer with no
// assembler: it opens a block, copies into it until it is full and marks it
// filled, in line. What a one-copy receiver into a PSRDADA ring cannot avoid.
type copyRing struct {
	ctx   context.Context
	w     ring.DadaWriter
	block func(int) []byte
	open  int // ring index of the open block, -1 when none
	in    int // bytes copied into it
}

func newCopyRing(ctx context.Context, w *dada.Writer) (*copyRing, error) {
	c := &copyRing{ctx: ctx, w: ring.DadaWriter{W: w}, block: w.HDU().Data.Block, open: -1}
	return c, c.w.WriteHeader([]byte(testHeader))
}

// write copies pkts passes times.
func (c *copyRing) write(pkts [][]byte, passes int) error {
	for range passes {
		for _, pkt := range pkts {
			if err := c.put(pkt); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *copyRing) put(pkt []byte) error {
	if c.open < 0 {
		idx, err := c.w.OpenBlock(c.ctx)
		if err != nil {
			return err
		}
		c.open, c.in = idx, 0
	}
	c.in += copy(c.block(c.open)[c.in:], pkt)
	if c.in < placeBlockBytes {
		return nil
	}
	c.open = -1
	return c.w.MarkFilled(c.ctx, placeBlockBytes, false)
}

// close ends the observation.
func (c *copyRing) close() error { return c.w.EndOfData(c.ctx) }
