//go:build vm

package verbsfabric

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringcap/ringcap/pkg/dada"
	"github.com/ringcap/ringcap/pkg/rdma/verbs"
	"github.com/ringcap/ringcap/test/vm/vmtest"
)

func tlog(t *testing.T) func(string) { return func(s string) { t.Log(s) } }

func quiet(string) {}

// openPD opens rxe1 and a protection domain on it until the test ends.
func openPD(t testing.TB) *verbs.PD {
	t.Helper()
	c, err := verbs.Open(vmtest.Device1)
	if err != nil {
		t.Fatal(err)
	}
	vmtest.Cleanup(t, c.Close)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	return pd
}

// The benchmark ring: 256 MiB in 64 blocks of 4 MiB (make bench-verbs).
const (
	benchBlocks    = 64
	benchBlockSize = 4 << 20
)

func TestRegistrationModes(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, verbs.Live)
	pd := openPD(t)
	aligned := vmtest.NewRing(t, 4, 1<<20)
	unaligned := vmtest.NewRing(t, 8, 413184)

	var logged []string
	logf := func(s string) { logged = append(logged, s) }
	cases := []struct {
		name       string
		key        dada.Key
		contiguous bool
		mode       MRMode
		wantMode   MRMode
		regions    int
		reason     string
	}{
		{"aligned/auto", aligned, true, Auto, WholeRing, 1, "blocks contiguous"},
		{"aligned/wholering", aligned, true, WholeRing, WholeRing, 1, "blocks contiguous"},
		{"aligned/perblock", aligned, true, PerBlock, PerBlock, 4, "per-block registration requested"},
		{"unaligned/auto", unaligned, true, Auto, PerBlock, 8, "block size 413184 is not a multiple of the page size"},
		{"unaligned/perblock", unaligned, true, PerBlock, PerBlock, 8, "per-block registration requested"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := vmtest.ConnectRing(t, tc.key, tc.contiguous)
			r, err := Register(pd, h.Data, tc.mode, RegisterOptions{Log: logf, Name: "key=" + h.Data.Key().String()})
			if err != nil {
				t.Fatal(err)
			}
			vmtest.Cleanup(t, r.Close)
			if r.Mode() != tc.wantMode || r.Regions() != tc.regions || !strings.Contains(r.Reason(), tc.reason) {
				t.Errorf("mode %v regions %d reason %q; want %v %d %q", r.Mode(), r.Regions(), r.Reason(), tc.wantMode, tc.regions, tc.reason)
			}
			if want := uint64(h.Data.NBufs() * h.Data.BufSize()); r.Bytes() != want {
				t.Errorf("bytes %d, want %d", r.Bytes(), want)
			}
			tab := r.RegionTable()
			if len(tab) != tc.regions {
				t.Fatalf("region table has %d entries, want %d", len(tab), tc.regions)
			}
			var sum uint64
			for i, reg := range tab {
				sum += reg.Len
				if tc.wantMode == PerBlock && (reg.Addr != r.Block(i).Addr || reg.RKey != r.Block(i).RKey || reg.Len != uint64(h.Data.BufSize())) {
					t.Errorf("region %d %+v does not match block %d %+v", i, reg, i, r.Block(i))
				}
			}
			if sum != r.Bytes() || tab[0].Addr != r.Block(0).Addr {
				t.Errorf("region table %+v does not cover the ring (%d bytes at %#x)", tab, r.Bytes(), r.Block(0).Addr)
			}
			if verbs.Live().MRs != int64(tc.regions) {
				t.Errorf("%d live MRs, want %d", verbs.Live().MRs, tc.regions)
			}
			for i := 0; i < h.Data.NBufs(); i++ {
				b := r.Block(i)
				if b.Addr != uint64(h.Data.BlockAddr(i)) {
					t.Errorf("block %d address %#x, ring has it at %#x", i, b.Addr, h.Data.BlockAddr(i))
				}
				if tc.wantMode == WholeRing && (b.RKey != r.Block(0).RKey || b.LKey != r.Block(0).LKey) {
					t.Errorf("block %d keys differ from block 0 in WholeRing mode", i)
				}
				if tc.wantMode == PerBlock && i > 0 && b.RKey == r.Block(i-1).RKey {
					t.Errorf("blocks %d and %d share rkey %#x in PerBlock mode", i-1, i, b.RKey)
				}
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if verbs.Live().MRs != 0 {
				t.Errorf("%d MRs live after Close", verbs.Live().MRs)
			}
		})
	}
	want := "Registered ring key=" + aligned.String() + " mode=WholeRing regions=1 bytes=4194304 (blocks contiguous)"
	if len(logged) == 0 || logged[0] != want {
		t.Errorf("first log line %q, want %q", logged, want)
	}
	if len(logged) != len(cases) {
		t.Errorf("%d log lines for %d registrations", len(logged), len(cases))
	}

	// WholeRing is impossible for a ring whose blocks are not back to back: a clear error.
	for _, tc := range []struct {
		key        dada.Key
		contiguous bool
		why        string
	}{{unaligned, true, "not a multiple of the page size"}, {aligned, false, "not attached contiguously"}} {
		h := vmtest.ConnectRing(t, tc.key, tc.contiguous)
		if _, ok, _ := h.Data.Contiguous(); ok {
			continue // the kernel happened to attach the blocks back to back
		}
		_, err := Register(pd, h.Data, WholeRing, RegisterOptions{Log: logf, Name: "key=" + h.Data.Key().String()})
		if !errors.Is(err, ErrNotContiguous) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("WholeRing on ring %s: %v, want ErrNotContiguous saying %q", tc.key, err, tc.why)
		}
	}
	if verbs.Live().MRs != 0 {
		t.Errorf("%d MRs live after failed registrations", verbs.Live().MRs)
	}
}

// TestRegisterMemlockUnprivileged registers a 32 MiB ring as a non-root user with an 8 MiB
// memlock limit: the pre-check fails with both numbers and the fix, and the kernel agrees.
func TestRegisterMemlockUnprivileged(t *testing.T) {
	vmtest.Require(t)
	vmtest.LeakCheck(t, verbs.Live)
	const envKey = "RINGCAP_TEST_RING_KEY"
	var env []string
	if !vmtest.IsUnprivilegedChild(t) {
		env = []string{envKey + "=" + vmtest.NewRing(t, 4, 8<<20).String()}
	}
	vmtest.RunUnprivileged(t, vmtest.Unprivileged{MemlockBytes: 8 << 20, Env: env}, func(t *testing.T) {
		key, err := dada.ParseKey(os.Getenv(envKey))
		if err != nil {
			t.Fatal(err)
		}
		h := vmtest.ConnectRing(t, key, true)
		pd := openPD(t)
		for _, mode := range []MRMode{Auto, PerBlock} {
			_, err = Register(pd, h.Data, mode, RegisterOptions{Log: tlog(t), Name: "key=" + h.Data.Key().String()})
			if !errors.Is(err, ErrMemlock) {
				t.Fatalf("Register %v as uid %d with memlock 8 MiB: %v, want ErrMemlock", mode, os.Getuid(), err)
			}
			for _, want := range []string{"33554432", "8388608", "CAP_IPC_LOCK", "IPC_LOCK capability", "memlock limit"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q does not mention %q", err, want)
				}
			}
			t.Logf("%v: %v", mode, err)
		}
		if verbs.Live().MRs != 0 {
			t.Errorf("%d MRs live after the refused registration", verbs.Live().MRs)
		}
		// The kernel agrees: 32 MiB cannot be pinned, 8 MiB can.
		region, ok, why := h.Data.Contiguous()
		if !ok {
			t.Fatalf("ring not contiguous: %s", why)
		}
		if mr, err := pd.RegisterMR(region, verbs.AccessLocalWrite); !errors.Is(err, unix.ENOMEM) {
			if mr != nil {
				_ = mr.Close()
			}
			t.Errorf("ibv_reg_mr of 32 MiB with memlock 8 MiB: %v, want ENOMEM", err)
		}
		mr, err := pd.RegisterMR(h.Data.Block(0), verbs.AccessLocalWrite)
		if err != nil {
			t.Fatalf("ibv_reg_mr of one 8 MiB block with memlock 8 MiB: %v", err)
		}
		_ = mr.Close()
	})
}

// BenchmarkRegistration times registering the ring as one MR (WholeRing) and as 64 MRs
// (PerBlock), alternating the two in each round, and prints the per-block/whole-ring ratio.
func BenchmarkRegistration(b *testing.B) {
	vmtest.Require(b)
	key := vmtest.NewRing(b, benchBlocks, benchBlockSize)
	h := vmtest.ConnectRing(b, key, true)
	pd := openPD(b)
	const rounds = 3
	times := map[MRMode][]time.Duration{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			for _, mode := range []MRMode{WholeRing, PerBlock} {
				start := time.Now()
				reg, err := Register(pd, h.Data, mode, RegisterOptions{Log: quiet, Name: "key=" + h.Data.Key().String()})
				if err != nil {
					b.Fatal(err)
				}
				if err := reg.Close(); err != nil {
					b.Fatal(err)
				}
				times[mode] = append(times[mode], time.Since(start))
			}
		}
	}
	b.StopTimer()
	// The fastest round of each mode is the least disturbed by the shared host.
	whole, per := slices.Min(times[WholeRing]), slices.Min(times[PerBlock])
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(whole), "wholering-register-ms")
	b.ReportMetric(ms(per), "perblock-register-ms")
	fmt.Printf("register_ms wholering=%.1f perblock=%.1f (ring %d MiB in %d blocks, register+deregister, best of %d)\n",
		ms(whole), ms(per), benchBlocks*benchBlockSize>>20, benchBlocks, len(times[WholeRing]))
	fmt.Printf("ratio perblock/wholering register_ms=%.2f\n", ms(per)/ms(whole))
}

// BenchmarkRegistrationRaw times registering a 1 GiB ring (256 blocks of 4 MiB,
// attached contiguously, no huge pages) as WholeRing and as PerBlock beside one raw
// ibv_reg_mr of the same bytes with the same access (and PerBlock beside its floor,
// one raw ibv_reg_mr per block): see benchRegisterRaw.
func BenchmarkRegistrationRaw(b *testing.B) {
	benchRegisterRaw(b, "", 256, 4<<20, false)
}

// BenchmarkRegistrationRawHugePages is BenchmarkRegistrationRaw with the ring's blocks
// in 2 MiB huge pages (reserved for the run through /proc/sys/vm/nr_hugepages, restored
// after).
func BenchmarkRegistrationRawHugePages(b *testing.B) {
	vmtest.Require(b)
	const blocks, blockSize = 256, 4 << 20
	reserveHugePages(b, blocks*blockSize)
	benchRegisterRaw(b, "hugepages", blocks, blockSize, true)
}

// BenchmarkRegistrationRawLargest is BenchmarkRegistrationRaw with the largest ring of
// 4 MiB blocks that fits in 60 % of the VM's available memory (the raw registration
// pins the same pages, so nothing more is needed; boot the VM with more memory,
// RINGCAP_VM_MEM, for a larger ring).
func BenchmarkRegistrationRawLargest(b *testing.B) {
	vmtest.Require(b)
	const blockSize = 4 << 20
	avail, err := memAvailable()
	if err != nil {
		b.Fatal(err)
	}
	blocks := int(avail * 6 / 10 / blockSize)
	if blocks < 256 {
		b.Fatalf("the VM has %d MiB available: the largest ring would not exceed the 1 GiB of BenchmarkRegistrationRaw", avail>>20)
	}
	benchRegisterRaw(b, "largest", blocks, blockSize, false)
}

// memAvailable is MemAvailable of /proc/meminfo in bytes.
func memAvailable() (uint64, error) {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(raw), "\n") {
		var kib uint64
		if _, err := fmt.Sscanf(l, "MemAvailable: %d kB", &kib); err == nil {
			return kib << 10, nil
		}
	}
	return 0, errors.New("no MemAvailable in /proc/meminfo")
}

// reserveHugePages raises the pool of default-size huge pages by enough for n bytes
// until the benchmark ends.
func reserveHugePages(b *testing.B, n int) {
	b.Helper()
	const knob = "/proc/sys/vm/nr_hugepages"
	raw, err := os.ReadFile(knob)
	if err != nil {
		b.Fatal(err)
	}
	var had int
	if _, err := fmt.Sscan(string(raw), &had); err != nil {
		b.Fatalf("parse %s: %v", knob, err)
	}
	want := had + n/(2<<20)
	if err := os.WriteFile(knob, []byte(fmt.Sprint(want)), 0o644); err != nil {
		b.Fatalf("reserve %d huge pages: %v", want, err)
	}
	b.Cleanup(func() { _ = os.WriteFile(knob, []byte(fmt.Sprint(had)), 0o644) })
	raw, _ = os.ReadFile(knob)
	var got int
	if _, err := fmt.Sscan(string(raw), &got); err != nil || got < want {
		b.Fatalf("asked for %d huge pages, the kernel gave %s", want, strings.TrimSpace(string(raw)))
	}
}

// newBenchRing creates a ring of blocks x blockSize (huge: in huge pages) until the
// benchmark ends and attaches it contiguously.
func newBenchRing(b *testing.B, blocks, blockSize int, huge bool) *dada.HDU {
	b.Helper()
	cfg := dada.DefaultConfig()
	cfg.Key, cfg.NBufs, cfg.BufSize, cfg.HugePages = vmtest.NewKey(), uint64(blocks), uint64(blockSize), huge
	created, err := dada.Create(cfg)
	if err != nil {
		b.Fatalf("create ring %d x %d (huge pages %v): %v", blocks, blockSize, huge, err)
	}
	b.Cleanup(func() {
		if err := created.Destroy(); err != nil {
			b.Errorf("destroy ring %s: %v", cfg.Key, err)
		}
	})
	return vmtest.ConnectRing(b, cfg.Key, true)
}

// benchRegisterRaw times registering a ring of blocks x blockSize as WholeRing and as
// PerBlock beside one raw ibv_reg_mr of the same bytes with the same access (and
// PerBlock beside its floor, one raw ibv_reg_mr per block), each registered and
// deregistered, the four alternating in every round (each round starting with the
// next); it prints `ratio register/raw-reg-mr` (label in brackets when set) for both
// modes, from the fastest round of each (the least disturbed by the shared host).
func benchRegisterRaw(b *testing.B, label string, blocks, blockSize int, huge bool) {
	vmtest.Require(b)
	h := newBenchRing(b, blocks, blockSize, huge)
	region, ok, reason := h.Data.Contiguous()
	if !ok {
		b.Fatalf("the ring is not attached contiguously: %s", reason)
	}
	pd := openPD(b)
	access := verbs.AccessLocalWrite | verbs.AccessRemoteWrite
	register := rawRegistrations(pd, h.Data, region, access)
	for _, mode := range []MRMode{WholeRing, PerBlock} {
		register[mode.String()] = func() error {
			reg, err := Register(pd, h.Data, mode, RegisterOptions{Access: access, Log: quiet, Name: "key=" + h.Data.Key().String()})
			if err != nil {
				return err
			}
			return reg.Close()
		}
	}
	times := timeRegistrations(b, register, []string{"raw", WholeRing.String(), "raw-perblock", PerBlock.String()})
	ms := func(name string) float64 { return float64(slices.Min(times[name])) / float64(time.Millisecond) }
	raw, whole, rawPer, per := ms("raw"), ms(WholeRing.String()), ms("raw-perblock"), ms(PerBlock.String())
	tag := ""
	if label != "" {
		tag = "[" + label + "]"
	}
	fmt.Printf("register_ms%s raw=%.1f wholering=%.1f raw-perblock=%.1f perblock=%.1f (ring %d MiB in %d blocks, huge pages %v, register+deregister, best of %d)\n",
		tag, raw, whole, rawPer, per, blocks*blockSize>>20, blocks, huge, len(times["raw"]))
	fmt.Printf("ratio register/raw-reg-mr%s wholering=%.2f perblock=%.2f\n", tag, whole/raw, per/raw)
	fmt.Printf("ratio perblock/raw-reg-mr-per-block%s=%.2f (PerBlock against its floor, %d raw ibv_reg_mr)\n", tag, per/rawPer, blocks)
}

// rawRegistrations are the anchors: one raw ibv_reg_mr over the region ("raw") and one
// per block, all held, then released ("raw-perblock", PerBlock's floor).
func rawRegistrations(pd *verbs.PD, ring *dada.Ring, region []byte, access verbs.Access) map[string]func() error {
	return map[string]func() error{
		"raw": func() error {
			mr, err := pd.RegisterMR(region, access)
			if err != nil {
				return err
			}
			return mr.Close()
		},
		"raw-perblock": func() error {
			mrs := make([]*verbs.MR, 0, ring.NBufs())
			var err error
			for i := range ring.NBufs() {
				var mr *verbs.MR
				if mr, err = pd.RegisterMR(ring.Block(i), access); err != nil {
					break
				}
				mrs = append(mrs, mr)
			}
			for _, mr := range mrs {
				err = errors.Join(err, mr.Close())
			}
			return err
		},
	}
}

// timeRegistrations runs each registration 8 rounds per b.N, in order, each round
// starting with the next name, and returns every time taken by name.
func timeRegistrations(b *testing.B, register map[string]func() error, order []string) map[string][]time.Duration {
	const rounds = 8 // each of the four first twice
	times := map[string][]time.Duration{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := range rounds {
			for k := range order {
				name := order[(r+k)%len(order)] // each round starts with the next: no place favours one
				start := time.Now()
				if err := register[name](); err != nil {
					b.Fatalf("%s: %v", name, err)
				}
				times[name] = append(times[name], time.Since(start))
			}
		}
	}
	b.StopTimer()
	return times
}
