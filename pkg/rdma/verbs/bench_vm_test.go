//go:build vm

package verbs

import (
	"fmt"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/ringcap/ringcap/pkg/pattern"
	"github.com/ringcap/ringcap/test/vm/vmtest"
)

// The benchmark ring: 256 MiB in 64 blocks of 4 MiB (make bench-verbs).
const (
	benchBlocks    = 64
	benchBlockSize = 4 << 20
)

// The two ways of registering a ring as memory regions that BenchmarkRingWrite compares (the
// registration modes of pkg/capture/verbsfabric, whose BenchmarkRegistration times them).
const modeWholeRing, modePerBlock = "WholeRing", "PerBlock"

// BenchmarkRingWrite measures RDMA WRITE throughput from rxe0 into the ring on rxe1 through
// the whole-ring rkey and through per-block rkeys: the same 64 KiB messages at the same ring
// offsets, alternating the two modes in each round so both see the same host load.
func BenchmarkRingWrite(b *testing.B) {
	vmtest.Require(b)
	p := newPair(b)
	key := vmtest.NewRing(b, benchBlocks, benchBlockSize)
	h := vmtest.ConnectRing(b, key, true)
	regs := map[string]*ringMRs{modeWholeRing: registerRing(b, p.dst.pd, h.Data, true), modePerBlock: registerRing(b, p.dst.pd, h.Data, false)}
	const (
		msg      = 64 << 10
		depth    = 32      // outstanding work requests
		perRound = 4 << 20 // bytes per mode per round: short rounds interleave finely
		rounds   = 16
		ringSize = benchBlocks * benchBlockSize
	)
	src, err := Mmap(1 << 20)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = Munmap(src) }()
	pattern.Fill(src, 1, 0)
	smr, err := p.src.pd.RegisterMR(src, AccessLocalWrite)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = smr.Close() }()
	srcAddr := uint64(uintptr(unsafe.Pointer(&src[0])))

	pos := 0 // ring offset of the next message; both modes write the same offsets
	write := func(r *ringMRs, start int) time.Duration {
		t0 := time.Now()
		wcs := make([]WorkCompletion, depth)
		wrs := make([]SendWR, 0, depth)
		posted, done, off := 0, 0, start
		total := perRound / msg
		for done < total {
			wrs = wrs[:0]
			for posted < total && posted-done < depth {
				blk := off / benchBlockSize
				bm := r.block(blk)
				wrs = append(wrs, SendWR{ID: uint64(posted), Opcode: OpRDMAWrite, Addr: srcAddr + uint64(off%(1<<20)),
					Length: msg, LKey: smr.LKey(), RemoteAddr: bm.Addr + uint64(off%benchBlockSize), RKey: bm.RKey, Signaled: true})
				posted++
				off = (off + msg) % ringSize
			}
			if len(wrs) > 0 {
				if err := p.src.qp.PostSend(wrs); err != nil {
					b.Fatal(err)
				}
			}
			n, err := p.src.cq.PollWait(b.Context(), wcs)
			if err != nil {
				b.Fatal(err)
			}
			for _, wc := range wcs[:n] {
				if err := wc.Err(); err != nil {
					b.Fatal(err)
				}
			}
			done += n
		}
		return time.Since(t0)
	}
	elapsed := map[string]time.Duration{}
	var ratios []float64 // per round: per-block throughput / whole-ring throughput
	b.SetBytes(2 * perRound * rounds)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for round := 0; round < rounds; round++ {
			order := []string{modeWholeRing, modePerBlock}
			if round%2 == 1 {
				order = []string{modePerBlock, modeWholeRing}
			}
			d := map[string]time.Duration{}
			for _, mode := range order {
				d[mode] = write(regs[mode], pos)
				elapsed[mode] += d[mode]
			}
			ratios = append(ratios, d[modeWholeRing].Seconds()/d[modePerBlock].Seconds())
			pos = (pos + perRound) % ringSize
		}
	}
	b.StopTimer()
	mbps := func(d time.Duration) float64 { return float64(perRound*rounds*b.N) / d.Seconds() / 1e6 }
	whole, per := mbps(elapsed[modeWholeRing]), mbps(elapsed[modePerBlock])
	slices.Sort(ratios)
	median := ratios[len(ratios)/2]
	b.ReportMetric(whole, "wholering-MB/s")
	b.ReportMetric(per, "perblock-MB/s")
	fmt.Printf("write_MBps wholering=%.1f perblock=%.1f (%d KiB RDMA WRITEs, %d outstanding, %d MiB per mode in %d alternating rounds)\n",
		whole, per, msg>>10, depth, perRound*rounds*b.N>>20, len(ratios))
	// The median of the per-round ratios: each round pairs the two modes back to back, so a
	// burst of load from other jobs on the host skews one round, not the result.
	fmt.Printf("ratio perblock/wholering write=%.3f (totals: %.3f)\n", median, per/whole)
}
