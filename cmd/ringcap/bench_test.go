package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ringcap/ringcap/pkg/dada"
)

// Benchmarks print a ratio line against an anchor measured in the same run; TestMain
// prints them at the end (make bench-dada).
var (
	benchMu    sync.Mutex
	benchLines = map[string]string{}
)

func printBenchLines() {
	benchMu.Lock()
	defer benchMu.Unlock()
	for _, l := range benchLines {
		fmt.Println(l)
	}
}

// ddSeconds matches the time dd reports for its copy ("..., 0.0213 s, 12.6 GB/s").
var ddSeconds = regexp.MustCompile(`, ([0-9.e+-]+) s, `)

// ddRead reads path with dd bs=bs into /dev/null and returns the time dd measured (its own
// start-up excluded, as the write's is).
func ddRead(path string, bs int) (time.Duration, error) {
	out, err := exec.Command("dd", "bs="+strconv.Itoa(bs), "if="+path, "of=/dev/null").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("dd: %w: %s", err, out)
	}
	m := ddSeconds.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("dd printed no time: %s", out)
	}
	s, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return 0, fmt.Errorf("dd time %q: %w", m[1], err)
	}
	return time.Duration(s * float64(time.Second)), nil
}

// ringFloor reads path into the blocks of the ring at key in turn, one read per block,
// through a mapping of its own and without the ring's protocol (no reader, no
// semaphores): the least any writer of that ring's memory must spend on the file.
func ringFloor(key dada.Key, path string) (time.Duration, error) {
	start := time.Now()
	h, err := dada.Connect(key, dada.ConnectOptions{})
	if err != nil {
		return 0, err
	}
	defer func() { _ = h.Close() }()
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	for i := 0; ; i++ {
		if _, err := io.ReadFull(f, h.Data.Block(i%h.Data.NBufs())); err != nil {
			if errors.Is(err, io.EOF) {
				return time.Since(start), nil
			}
			return 0, err
		}
	}
}

// drain reads one observation from the ring without touching its bytes (as dada_dbnull),
// holding a reader slot from before it returns.
func drain(h *dada.HDU) (<-chan error, error) {
	r, err := h.LockRead(context.Background())
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		defer func() { _ = r.Close() }()
		if _, err := r.ReadHeader(context.Background()); err != nil {
			done <- err
			return
		}
		for {
			if _, err := r.NextBlock(context.Background()); err != nil {
				if errors.Is(err, io.EOF) {
					err = r.Reset()
				}
				done <- err
				return
			}
			if err := r.MarkCleared(); err != nil {
				done <- err
				return
			}
		}
	}()
	return done, nil
}

// BenchmarkRingWriteFile writes a tmpfs file into a ring with `ringcap ring write -f`
// while a reader drains it, beside two anchors: dd bs=BLOCK reading the same file into
// /dev/null (one buffer, no ring), and ringFloor reading it into the ring's blocks
// without the ring's protocol. The ratios say how close the ring write comes to reading
// the file, and what of the gap is the ring's memory rather than the write.
func BenchmarkRingWriteFile(b *testing.B) {
	const bs, nbufs, fileBytes = 1 << 20, 8, 256 << 20
	f, err := os.CreateTemp("/dev/shm", "ringcap-bench-*")
	if err != nil {
		b.Skipf("no tmpfs at /dev/shm: %v", err)
	}
	path := f.Name()
	b.Cleanup(func() { _ = os.Remove(path) })
	chunk := make([]byte, bs)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	for range fileBytes / bs {
		if _, err := f.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	k := testKey(b)
	cfg := dada.DefaultConfig()
	cfg.Key, cfg.NBufs, cfg.BufSize = k, nbufs, bs
	h, err := dada.Create(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := h.Destroy(); err != nil {
			b.Error(err)
		}
	})
	var write, dd, floor time.Duration
	runs := 0
	b.SetBytes(fileBytes)
	for b.Loop() {
		runs++
		done, err := drain(h)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, errs, err := ringcap(context.Background(), "ring", "write", "-k", k.String(), "-f", path); err != nil {
			b.Fatalf("ring write: %v\n%s", err, errs)
		}
		write += time.Since(start)
		if err := <-done; err != nil {
			b.Fatalf("reader: %v", err)
		}
		d, err := ddRead(path, bs)
		if err != nil {
			b.Fatal(err)
		}
		dd += d
		fl, err := ringFloor(k, path)
		if err != nil {
			b.Fatal(err)
		}
		floor += fl
	}
	n := float64(runs) * fileBytes
	wr, dr, fr := n/write.Seconds()/1e9, n/dd.Seconds()/1e9, n/floor.Seconds()/1e9
	b.ReportMetric(wr, "writeGB/s")
	b.ReportMetric(dr, "ddGB/s")
	b.ReportMetric(wr/dr, "write/dd")
	b.ReportMetric(wr/fr, "write/floor")
	benchMu.Lock()
	benchLines[b.Name()] = fmt.Sprintf("ratio write-file/dd-read=%.2f write-file/ring-floor=%.2f  ring write -f %.2f GB/s  dd bs=%d %.2f GB/s  floor %.2f GB/s  (%d MiB tmpfs file, %d x %d B ring, %d runs)",
		wr/dr, wr/fr, wr, bs, dr, fr, fileBytes>>20, nbufs, bs, runs)
	benchMu.Unlock()
}
