package dada

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringcap/ringcap/internal/benchstat"
)

// Benchmarks print each ring figure beside an anchor measured in the same run (a plain
// copy of the same bytes), as a ratio; TestMain prints the ratio lines at the end.

var (
	ratioMu    sync.Mutex
	ratioLines = map[string]string{}
)

func recordRatio(name, line string) {
	ratioMu.Lock()
	ratioLines[name] = line
	ratioMu.Unlock()
}

func printRatios() {
	ratioMu.Lock()
	defer ratioMu.Unlock()
	names := make([]string, 0, len(ratioLines))
	for n := range ratioLines {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Println(ratioLines[n])
	}
}

// copyRate measures a plain copy of nblocks*bs bytes between two bs-sized buffers in GB/s.
func copyRate(bs, nblocks int) float64 {
	src, dst := make([]byte, bs), make([]byte, bs)
	for i := range src {
		src[i] = byte(i)
	}
	copy(dst, src) // fault in
	start := time.Now()
	for i := 0; i < nblocks; i++ {
		copy(dst, src)
	}
	return float64(bs) * float64(nblocks) / time.Since(start).Seconds() / 1e9
}

// BenchmarkRingThroughput moves b.N blocks writer -> reader(s): the writer copies a source
// buffer into each block, every reader copies each block out. Anchor: one plain copy of
// the same bytes (so a ring moving each byte twice at full memory speed scores ~0.5 with
// one core, up to ~1 when writer and reader run in parallel).
func BenchmarkRingThroughput(b *testing.B) {
	for _, readers := range []int{1, 2} {
		for _, bs := range []int{1 << 20, 16 << 20} {
			b.Run(fmt.Sprintf("readers=%d/block=%dMiB", readers, bs>>20), func(b *testing.B) {
				benchThroughput(b, readers, bs)
			})
		}
	}
}

func benchThroughput(b *testing.B, readers, bs int) {
	nbufs := 8
	if bs >= 16<<20 {
		nbufs = 4
	}
	h := createTestRing(b, Config{NBufs: uint64(nbufs), BufSize: uint64(bs), Readers: readers, PageIn: true})
	ctx := context.Background()
	src := make([]byte, bs)
	for i := range src {
		src[i] = byte(i * 7)
	}
	rs := make([]*Reader, readers)
	for i := range rs {
		r, err := connect(b, h.Key()).LockRead(ctx)
		if err != nil {
			b.Fatal(err)
		}
		rs[i] = r
	}
	w, err := h.LockWrite(ctx, WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.WriteHeader([]byte("HDR_SIZE 4096\n")); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	b.SetBytes(int64(bs))
	b.ResetTimer()
	start := time.Now()
	for _, r := range rs {
		wg.Add(1)
		go func(r *Reader) {
			defer wg.Done()
			dst := make([]byte, bs)
			if _, err := r.ReadHeader(ctx); err != nil {
				errs <- err
				return
			}
			for {
				blk, err := r.NextBlock(ctx)
				if err != nil {
					errs <- err
					return
				}
				copy(dst, blk.Data)
				if err := r.MarkCleared(); err != nil || blk.EOD {
					errs <- err
					return
				}
			}
		}(r)
	}
	for i := 0; i < b.N; i++ {
		blk, err := w.OpenBlock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		copy(blk.Data, src)
		if i == b.N-1 {
			err = w.MarkFilledEOD(bs)
		} else {
			err = w.MarkFilled(bs)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	ring := float64(bs) * float64(b.N) / el.Seconds() / 1e9
	anchor := copyRate(bs, b.N)
	b.ReportMetric(ring, "ringGB/s")
	b.ReportMetric(anchor, "copyGB/s")
	b.ReportMetric(ring/anchor, "ring/copy")
	recordRatio(b.Name(), fmt.Sprintf("ratio %-50s ring %7.2f GB/s  plain copy %7.2f GB/s  ring/copy %.2f  (%d blocks)",
		b.Name(), ring, anchor, ring/anchor, b.N))
	_ = w.Close()
	for _, r := range rs {
		_ = r.Close()
	}
}

// BenchmarkBlockHandoff measures the cost of handing one block from writer to reader and
// back (OpenBlock+MarkFilled, NextBlock+MarkCleared: four semaphore operations and the
// shared counters), with no data copied, beside a plain copy of one 4 KiB page.
func BenchmarkBlockHandoff(b *testing.B) {
	const bs = 4096
	loop := newHandoffLoop(b)
	if _, err := loop(1); err != nil { // start of data
		b.Fatal(err)
	}
	b.ResetTimer()
	cost, err := loop(b.N)
	if err != nil {
		b.Fatal(err)
	}
	per := time.Duration(cost.wall)
	b.StopTimer()
	src, dst := make([]byte, bs), make([]byte, bs)
	n := 100000
	cs := time.Now()
	for i := 0; i < n; i++ {
		copy(dst, src)
	}
	cp := time.Since(cs) / time.Duration(n)
	// Second anchor: the four bare semaphore operations a handoff needs (syscall cost).
	sid, err := semGet(0, 1, ipcCreat|perm) // IPC_PRIVATE
	if err != nil {
		b.Fatal(err)
	}
	ts := unix.NsecToTimespec(int64(semPoll))
	ss := time.Now()
	for i := 0; i < n/10; i++ {
		for j := 0; j < 2; j++ {
			_ = semTry(sid, 0, 1, 0, nil)
			_ = semTry(sid, 0, -1, 0, &ts)
		}
	}
	sem4 := time.Since(ss) / time.Duration(n/10)
	_ = semRemove(sid)
	b.ReportMetric(float64(per.Nanoseconds())/1e3, "µs/handoff")
	b.ReportMetric(float64(cp.Nanoseconds())/1e3, "µs/4KiB-copy")
	b.ReportMetric(float64(sem4.Nanoseconds())/1e3, "µs/4-semops")
	recordRatio(b.Name(), fmt.Sprintf("ratio %-50s handoff %.2f µs/block  plain 4 KiB copy %.3f µs  handoff/copy %.1f  4 bare semops %.2f µs  handoff/semops %.2f",
		b.Name(), float64(per.Nanoseconds())/1e3, float64(cp.Nanoseconds())/1e3, float64(per)/float64(cp),
		float64(sem4.Nanoseconds())/1e3, float64(per)/float64(sem4)))
}

// BenchmarkHandoffFloor sets the ring's per-block handoff (writer OpenBlock+MarkFilled,
// reader NextBlock+MarkCleared, one goroutine, no data) beside its floor: a minimal C
// program (testdata/semfloor, compiled with the system cc now) making exactly the same
// SysV semaphore operations per block and nothing else. Between them, the same operations
// made from Go through the ring's own system call wrapper (goSemFloor): what the wrapper
// costs over C's semtimedop, and what is left to pkg/dada's own work. None of the loops ever waits (every operation finds its semaphore
// ready), so their cost is CPU time: each is taken as the process's CPU time per block,
// which a core shared with other work disturbs far less than wall time. Seven rounds take
// the three in turn; it prints the median ratios with the range of the rounds
// (`ratio handoff/semop-floor=`, `ratio go-semop/semop-floor=`, `ratio handoff/go-semop=`).
func BenchmarkHandoffFloor(b *testing.B) {
	const rounds, blocks = 7, 200000
	floor := filepath.Join(b.TempDir(), "semfloor")
	if out, err := exec.Command("cc", "-O2", "-o", floor, filepath.Join("testdata", "semfloor", "semfloor.c")).CombinedOutput(); err != nil {
		b.Fatalf("compile the semaphore floor with cc: %v\n%s", err, out)
	}
	handoff := newHandoffLoop(b)
	var hs, gs, fs, hw, fw []float64
	var hf, gf, hg []float64
	for range rounds {
		h, err := handoff(blocks)
		if err != nil {
			b.Fatal(err)
		}
		g, err := goSemFloor(blocks)
		if err != nil {
			b.Fatal(err)
		}
		f, err := cSemFloor(floor, blocks)
		if err != nil {
			b.Fatal(err)
		}
		hs, gs, fs, hw, fw = append(hs, h.cpu), append(gs, g.cpu), append(fs, f.cpu), append(hw, h.wall), append(fw, f.wall)
		hf, gf, hg = append(hf, h.cpu/f.cpu), append(gf, g.cpu/f.cpu), append(hg, h.cpu/g.cpu)
	}
	for _, x := range [][]float64{hs, gs, fs, hw, fw, hf, gf, hg} {
		sort.Float64s(x)
	}
	m := rounds / 2
	tail := fmt.Sprintf("(CPU time, median of %d rounds of %d blocks)", rounds, blocks)
	recordRatio(b.Name(), fmt.Sprintf("ratio handoff/semop-floor=%.2f [%.2f, %.2f]  handoff %.0f ns/block  floor %.0f ns/block  (wall %.0f and %.0f)  %s",
		hf[m], hf[0], hf[rounds-1], hs[m], fs[m], hw[m], fw[m], tail))
	recordRatio(b.Name()+"/go", fmt.Sprintf("ratio go-semop/semop-floor=%.2f [%.2f, %.2f]  go-semop %.0f ns/block  %s",
		gf[m], gf[0], gf[rounds-1], gs[m], tail))
	recordRatio(b.Name()+"/own", fmt.Sprintf("ratio handoff/go-semop=%.2f [%.2f, %.2f]  %s", hg[m], hg[0], hg[rounds-1], tail))
}

// blockCost is a loop's cost per block: wall time and the process's CPU time, in ns.
type blockCost struct{ wall, cpu float64 }

// timeBlocks runs fn (n blocks) and returns its cost per block.
func timeBlocks(n int, fn func() error) (blockCost, error) {
	c, err := benchstat.Measure(fn)
	if err != nil {
		return blockCost{}, err
	}
	c = c.Per(n)
	return blockCost{wall: c.Wall, cpu: c.CPU}, nil
}

// cSemFloor runs the compiled semfloor program for n blocks and returns its cost per
// block (it times its own loop).
func cSemFloor(prog string, n int) (blockCost, error) {
	out, err := exec.Command(prog, strconv.Itoa(n)).Output()
	if err != nil {
		return blockCost{}, fmt.Errorf("run the semaphore floor: %w", err)
	}
	var c blockCost
	if _, err := fmt.Sscanf(string(out), "%g %g", &c.wall, &c.cpu); err != nil {
		return blockCost{}, fmt.Errorf("semaphore floor printed %q: %w", out, err)
	}
	return c, nil
}

// goSemFloor makes semfloor's semaphore operations from Go (the same four per block, on a
// private set of its own), through semOpClosing, the wrapper the ring uses (a raw
// non-blocking semop first, the timed wait only when that would block), and nothing
// else; it returns the cost per block.
func goSemFloor(n int) (blockCost, error) {
	id, err := semGet(0, 4, ipcCreat|0o600) // IPC_PRIVATE
	if err != nil {
		return blockCost{}, fmt.Errorf("create a private semaphore set: %w", err)
	}
	defer func() { _ = semRemove(id) }()
	if err := semTry(id, semClear, 1, 0, nil); err != nil { // one block free
		return blockCost{}, err
	}
	ctx := context.Background()
	return timeBlocks(n, func() error {
		for range n {
			err := semOpClosing(ctx, nil, id, semClear, -1, 0)
			if err == nil {
				err = semOpClosing(ctx, nil, id, semFull, 1, 0)
			}
			if err == nil {
				err = semOpClosing(ctx, nil, id, semFull, -1, 0)
			}
			if err == nil {
				err = semOpClosing(ctx, nil, id, semClear, 1, 0)
			}
			if err != nil {
				return fmt.Errorf("semaphore floor from Go: %w", err)
			}
		}
		return nil
	})
}

// newHandoffLoop returns a function that hands n blocks of a fresh 8-block ring from
// writer to reader and back on one goroutine and returns the cost per block.
func newHandoffLoop(b *testing.B) func(n int) (blockCost, error) {
	const bs = 4096
	h := createTestRing(b, Config{NBufs: 8, BufSize: bs})
	ctx := context.Background()
	r, err := connect(b, h.Key()).LockRead(ctx)
	if err != nil {
		b.Fatal(err)
	}
	w, err := h.LockWrite(ctx, WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = w.Close(); _ = r.Close() })
	if err := w.WriteHeader([]byte("HDR_SIZE 4096\n")); err != nil {
		b.Fatal(err)
	}
	if _, err := r.ReadHeader(ctx); err != nil {
		b.Fatal(err)
	}
	return func(n int) (blockCost, error) {
		return timeBlocks(n, func() error {
			for range n {
				if _, err := w.OpenBlock(ctx); err != nil {
					return err
				}
				if err := w.MarkFilled(bs); err != nil {
					return err
				}
				if _, err := r.NextBlock(ctx); err != nil {
					return err
				}
				if err := r.MarkCleared(); err != nil {
					return err
				}
			}
			return nil
		})
	}
}
