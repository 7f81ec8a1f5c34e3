package stream

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/ringcap/ringcap/internal/benchstat"
	"github.com/ringcap/ringcap/internal/ingesttest"
	"github.com/ringcap/ringcap/internal/ringtest"
	"github.com/ringcap/ringcap/pkg/ingest/assemble"
	"github.com/ringcap/ringcap/pkg/ingest/spead"
)

// BenchmarkPipelineFloor is `ratio pipeline/memcpy-floor` (make bench-ingest):
// the CPU time of the whole SPEAD path of a receiver, Handle (decode, place by
// the timestamp item, Put into a real ring that a reader drains), of a batch
// of 8 KiB packets (one heap each) already in memory, against a bare copy of
// their payloads into the same block memory at the same offsets. Before each
// Handle the packet's heap counter and timestamp are rewritten to go on from
// the last (two stores). It ignores b.N (run it with -benchtime 1x):
// RINGCAP_BENCH_ROUNDS rounds (default 7) after a warm-up round, each writing
// the batch 32 times each way, the first way alternating.
func BenchmarkPipelineFloor(b *testing.B) {
	rounds, err := benchstat.EnvRounds(7)
	if err != nil {
		b.Fatal(err)
	}
	h := ringtest.New(b, testKeys, pipeBlocks, pipeBlockBytes)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, drained := ringtest.DrainedWriter(ctx, b, h)
	cfg := Config{Protocol: SPEAD, SPEAD: spead.Rule{TimestampID: tsID, TimestampStep: pipeStep},
		SPEADTime: SPEADTime{SyncTime: syncTime, SampleRate: sampleRate}, HeaderBytes: h.Header.BufSize()}
	p, err := New(ctx, cfg, assemble.ForDada(w, 4))
	if err != nil {
		b.Fatal(err)
	}
	pb := &pipeBench{p: p, pkts: pipePackets(), block: h.Data.Block}
	for i := range rounds + 1 { // the first a warm-up: the ring's pages fault in
		if err := pb.round(i == 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		b.Fatal(err)
	}
	if err := <-drained; err != nil {
		b.Fatal(err)
	}
	if c := p.Snapshot(); c.Received != c.Packets {
		b.Fatalf("placed %d of %d packets: %+v", c.Received, c.Packets, c)
	}
	pb.print()
}

// BenchmarkPipelineFloor's geometry: heaps of one 8 KiB packet, a batch of
// 1024 written pipePasses times per way and round, a ring of 8 blocks of 4 MiB.
const (
	pipePayload, pipeBatch, pipePasses = 8 << 10, 1024, 32
	pipeBlocks, pipeBlockBytes         = 8, 4 << 20
	pipeStep                           = 8192
)

// pipePackets is a batch of SPEAD-64-48 packets of one heap each: the four
// standard items, then the timestamp (item 4), then the payload.
func pipePackets() [][]byte {
	pkts := make([][]byte, pipeBatch)
	for i := range pkts {
		pkts[i] = ingesttest.SPEADHeap(48, uint64(i), pipePayload, 0, ingesttest.Pattern(uint64(i*pipePayload), pipePayload),
			ingesttest.Imm(tsID, t0+uint64(i)*pipeStep))
	}
	return pkts
}

// setImmediate sets the value of immediate item k (SPEAD-64-48) of pkt.
func setImmediate(pkt []byte, k int, v uint64) {
	at := 8 + 8*k
	w := binary.BigEndian.Uint64(pkt[at:])
	binary.BigEndian.PutUint64(pkt[at:], w&^(1<<48-1)|v&(1<<48-1))
}

// pipeBench is BenchmarkPipelineFloor's two ways of writing the same
// payloads into the same blocks: through the pipeline, and copied.
type pipeBench struct {
	p         *Pipeline
	pkts      [][]byte
	block     func(int) []byte
	seq, coff uint64
	cpu, wall [2][]float64 // per way (pipeline, copy), per round
	ratios    []float64
}

// round writes the batch pipePasses times each way; warm: not recorded.
func (pb *pipeBench) round(warm bool) error {
	ways := []func() error{pb.handle, pb.copy}
	var c [2][2]float64 // per way: cpu, wall
	for k := range ways {
		way := (len(pb.ratios) + k) % 2
		cpu, wall, err := timeRun(ways[way])
		if err != nil {
			return err
		}
		c[way] = [2]float64{cpu / (pipePasses * pipeBatch), wall / (pipePasses * pipeBatch)}
	}
	if warm {
		return nil
	}
	for way := range c {
		pb.cpu[way], pb.wall[way] = append(pb.cpu[way], c[way][0]), append(pb.wall[way], c[way][1])
	}
	pb.ratios = append(pb.ratios, c[0][0]/c[1][0])
	return nil
}

func (pb *pipeBench) handle() error {
	for range pipePasses {
		for _, pkt := range pb.pkts {
			setImmediate(pkt, 0, pb.seq)
			setImmediate(pkt, 4, t0+pb.seq*pipeStep)
			if err := pb.p.Handle(pkt); err != nil {
				return err
			}
			pb.seq++
		}
	}
	return nil
}

func (pb *pipeBench) copy() error {
	for range pipePasses {
		for _, pkt := range pb.pkts {
			off := pb.coff
			copy(pb.block(int(off / pipeBlockBytes % pipeBlocks))[off%pipeBlockBytes:], pkt[len(pkt)-pipePayload:])
			pb.coff += pipePayload
		}
	}
	return nil
}

func (pb *pipeBench) print() {
	med, lo, hi := benchstat.MedianCI(pb.ratios)
	m := func(xs []float64) float64 { v, _, _ := benchstat.MedianCI(xs); return v }
	fmt.Printf("ratio pipeline/memcpy-floor=%.3f [%.3f, %.3f]  SPEAD Handle (decode, place, Put) %.0f ns per packet, copy %.0f ns (wall %.0f and %.0f ns)  (CPU time; 8 KiB packets of one heap each, a batch of 8 MiB into a ring of %d x %d MiB with a clearing reader, median of %d rounds of %d packets)\n",
		med, lo, hi, m(pb.cpu[0]), m(pb.cpu[1]), m(pb.wall[0]), m(pb.wall[1]), pipeBlocks, pipeBlockBytes>>20, len(pb.ratios), pipePasses*pipeBatch)
}

// timeRun runs fn and returns the process's CPU time and the wall time it
// took, in ns.
func timeRun(fn func() error) (cpu, wall float64, err error) {
	c, err := benchstat.Measure(fn)
	return c.CPU, c.Wall, err
}
