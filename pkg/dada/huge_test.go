package dada

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringcap/ringcap/pkg/pattern"
)

func meminfo(t *testing.T, field string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.Fields(rest)[0])
			return n
		}
	}
	t.Fatalf("no %s in /proc/meminfo", field)
	return 0
}

// hugePagesLock serialises the tests that reserve huge pages across processes (two
// `go test` runs at once): vm.nr_hugepages and the free count are the whole machine's.
const hugePagesLock = "/tmp/ringcap-test-hugepages.lock"

// lockHugePages holds hugePagesLock (flock, waiting for another process's test to end)
// until the test ends.
func lockHugePages(t *testing.T) {
	t.Helper()
	// Read-only, as flock needs no more, and without O_CREAT when it exists: with
	// fs.protected_regular, O_CREAT fails on another user's file in /tmp.
	f, err := os.Open(hugePagesLock)
	if errors.Is(err, os.ErrNotExist) {
		f, err = os.OpenFile(hugePagesLock, os.O_RDONLY|os.O_CREATE, 0o644)
	}
	if err != nil {
		t.Fatalf("open the huge page test lock: %v", err)
	}
	t.Cleanup(func() { _ = f.Close() }) // releases the lock
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatalf("lock %s: %v", hugePagesLock, err)
	}
}

// reserveHugePages makes sure n huge pages are free, raising vm.nr_hugepages if needed and
// restoring it when the test ends, and keeps other test processes' huge page tests out
// (lockHugePages) until then. It skips the test only when the pages cannot be reserved.
func reserveHugePages(t *testing.T, n int) {
	t.Helper()
	const knob = "/proc/sys/vm/nr_hugepages"
	if HugePageSize() == 0 {
		t.Skip("skip: the kernel reports no huge page size")
	}
	lockHugePages(t)
	free := meminfo(t, "HugePages_Free")
	if free >= n {
		return
	}
	b, err := os.ReadFile(knob)
	if err != nil {
		t.Skipf("skip: cannot read %s: %v", knob, err)
	}
	orig, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	want := orig + n - free
	if err := os.WriteFile(knob, []byte(strconv.Itoa(want)), 0o644); err != nil {
		t.Skipf("skip: cannot reserve %d huge pages (write %s: %v)", n, knob, err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(knob, []byte(strconv.Itoa(orig)), 0o644); err != nil {
			t.Errorf("restore %s to %d: %v", knob, orig, err)
		}
	})
	if got := meminfo(t, "HugePages_Free"); got < n {
		t.Skipf("skip: asked the kernel for %d huge pages, only %d free (memory fragmented)", n, got)
	}
}

func TestHugePageRing(t *testing.T) {
	hp := HugePageSize()
	const nbufs = 4
	reserveHugePages(t, nbufs)
	freeBefore := meminfo(t, "HugePages_Free")
	h := createTestRing(t, Config{NBufs: nbufs, BufSize: uint64(hp), HugePages: true})
	if !h.Data.HugePages() || h.Data.PageSize() != hp {
		t.Fatalf("data ring: HugePages()=%v PageSize()=%d, want true %d", h.Data.HugePages(), h.Data.PageSize(), hp)
	}
	if h.Header.HugePages() {
		t.Fatal("header ring uses huge pages")
	}
	// Another process's view (a PSRDADA reader needs no flag) can map the ring contiguously.
	c, err := Connect(h.Key(), ConnectOptions{Contiguous: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	region, ok, reason := c.Data.Contiguous()
	if !ok || len(region) != nbufs*hp {
		t.Fatalf("huge-page ring not contiguous: %s", reason)
	}
	ctx := context.Background()
	w, err := c.LockWrite(ctx, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := nbufs*hp - 12345
	if err := writeObs(w, 3, n, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := pattern.Verify(region[:n], 3, 0); !ok {
		t.Fatal("contiguous region does not hold the stream")
	}
	r, err := h.LockRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	if got, err := readObs(ctx, r, 3); err != nil || got != n {
		t.Fatalf("read %d bytes, %v; want %d", got, err, n)
	}
	if used := freeBefore - meminfo(t, "HugePages_Free"); used != nbufs {
		t.Errorf("%d huge pages in use after touching the ring, want %d", used, nbufs)
	}
}

func TestHugePageSizeRejected(t *testing.T) {
	hp := HugePageSize()
	if hp == 0 {
		t.Skip("skip: the kernel reports no huge page size")
	}
	cfg := DefaultConfig()
	cfg.Key = testKey(t)
	cfg.HugePages = true
	cfg.BufSize = uint64(hp) + 4096
	_, err := Create(cfg)
	if err == nil || !strings.Contains(err.Error(), "not a multiple of the huge page size") || !strings.Contains(err.Error(), strconv.Itoa(2*hp)) {
		t.Fatalf("Create = %v, want a rejection suggesting %d", err, 2*hp)
	}
	if got, _ := RoundToHugePages(uint64(hp)+1, 0); got != uint64(2*hp) {
		t.Fatalf("RoundToHugePages = %d", got)
	}
}

// shmget is told the page size (log2 from SHM_HUGE_SHIFT), so a ring gets the pages its
// pod asked for (hugepages-2Mi) even where the kernel's default size is another.
func TestHugeFlagsCarryThePageSize(t *testing.T) {
	for _, c := range []struct {
		size uint64
		want int
	}{
		{0, 0},
		{2 << 20, 0o4000 | 21<<26},  // SHM_HUGETLB | SHM_HUGE_2MB
		{1 << 30, 0o4000 | 30<<26},  // SHM_HUGE_1GB
		{64 << 10, 0o4000 | 16<<26}, // arm64's 64 KiB
	} {
		if got := hugeFlags(c.size); got != c.want {
			t.Errorf("hugeFlags(%d) = %#x, want %#x", c.size, got, c.want)
		}
	}
}

func TestHugePageRingOfAGivenSize(t *testing.T) {
	const size = 2 << 20
	if !hugePageSizeOffered(size) {
		t.Skip("skip: the kernel has no 2 MiB huge page pool")
	}
	reserveHugePages(t, 2) // the default pool, which is the 2 MiB one on x86-64 hosts
	h := createTestRing(t, Config{NBufs: 2, BufSize: size, HugePages: true, HugePageSize: size})
	if !h.Data.HugePages() || h.Data.PageSize() != size {
		t.Fatalf("data ring: HugePages()=%v PageSize()=%d, want true %d", h.Data.HugePages(), h.Data.PageSize(), size)
	}
}

func TestHugePageSizeNotOfferedRefused(t *testing.T) {
	for _, size := range []uint64{3 << 20, 1 << 40} { // not a power of two; a pool no kernel has
		cfg := DefaultConfig()
		cfg.Key = testKey(t)
		cfg.HugePages, cfg.HugePageSize, cfg.BufSize = true, size, size
		if _, err := Create(cfg); err == nil || !strings.Contains(err.Error(), "not one this kernel offers") {
			t.Errorf("Create with %d-byte huge pages = %v, want a refusal naming the sizes offered", size, err)
		}
	}
}
