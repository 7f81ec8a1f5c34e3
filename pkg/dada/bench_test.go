package dada

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
	nsPer, err := loop(b.N)
	if err != nil {
		b.Fatal(err)
	}
	per := time.Duration(nsPer)
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
// SysV semaphore operations per block and nothing else. Seven rounds alternate the two;
// it prints the median ratio with the range of the rounds (`ratio handoff/semop-floor=`).
func BenchmarkHandoffFloor(b *testing.B) {
	const rounds, blocks = 7, 200000
	floor := filepath.Join(b.TempDir(), "semfloor")
	if out, err := exec.Command("cc", "-O2", "-o", floor, filepath.Join("testdata", "semfloor", "semfloor.c")).CombinedOutput(); err != nil {
		b.Fatalf("compile the semaphore floor with cc: %v\n%s", err, out)
	}
	handoff := newHandoffLoop(b)
	var ratios, hs, fs []float64
	for range rounds {
		h, err := handoff(blocks)
		if err != nil {
			b.Fatal(err)
		}
		out, err := exec.Command(floor, strconv.Itoa(blocks)).Output()
		if err != nil {
			b.Fatalf("run the semaphore floor: %v", err)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
		if err != nil {
			b.Fatalf("semaphore floor printed %q: %v", out, err)
		}
		ratios, hs, fs = append(ratios, h/f), append(hs, h), append(fs, f)
	}
	sort.Float64s(ratios)
	sort.Float64s(hs)
	sort.Float64s(fs)
	recordRatio(b.Name(), fmt.Sprintf("ratio handoff/semop-floor=%.2f [%.2f, %.2f]  handoff %.0f ns/block  floor %.0f ns/block  (median of %d rounds of %d blocks)",
		ratios[rounds/2], ratios[0], ratios[rounds-1], hs[rounds/2], fs[rounds/2], rounds, blocks))
}

// newHandoffLoop returns a function that hands n blocks of a fresh 8-block ring from
// writer to reader and back on one goroutine and returns the nanoseconds per block.
func newHandoffLoop(b *testing.B) func(n int) (float64, error) {
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
	return func(n int) (float64, error) {
		start := time.Now()
		for range n {
			if _, err := w.OpenBlock(ctx); err != nil {
				return 0, err
			}
			if err := w.MarkFilled(bs); err != nil {
				return 0, err
			}
			if _, err := r.NextBlock(ctx); err != nil {
				return 0, err
			}
			if err := r.MarkCleared(); err != nil {
				return 0, err
			}
		}
		return float64(time.Since(start).Nanoseconds()) / float64(n), nil
	}
}
