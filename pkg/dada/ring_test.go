package dada

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/ringcap/ringcap/internal/ipctest"
)

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Key
		ok   bool
	}{
		{"dada", 0xdada, true}, {"0xdada", 0xdada, true}, {"DADA", 0xdada, true}, {"0XDADA", 0xdada, true}, {"0X7E50", 0x7e50, true}, {"7e10", 0x7e10, true},
		{"7fffffff", 0x7fffffff, true}, {"0", 0, false}, {"", 0, false}, {"0x", 0, false},
		{"80000000", 0, false}, {"xyz", 0, false}, {"-1", 0, false}, {"da da", 0, false},
	} {
		got, err := ParseKey(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseKey(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	if s := Key(0xdada).String(); s != "dada" {
		t.Errorf("String() = %q", s)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	for name, mut := range map[string]func(*Config){
		"key 0":          func(c *Config) { c.Key = 0 },
		"nbufs 0":        func(c *Config) { c.NBufs = 0 },
		"nbufs 32768":    func(c *Config) { c.NBufs = 32768 },
		"bufsz 0":        func(c *Config) { c.BufSize = 0 },
		"header 4095":    func(c *Config) { c.HeaderBufSize = 4095 },
		"readers 0":      func(c *Config) { c.Readers = 0 },
		"readers 9":      func(c *Config) { c.Readers = 9 },
		"hugepage bufsz": func(c *Config) { c.HugePages = true; c.BufSize = 4096 },
	} {
		c := DefaultConfig()
		mut(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidConfig", name, err)
		}
	}
}

// The objects dada_db creates for a ring, with its keys, sizes and initial values.
func TestCreateMatchesDadaDB(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 8, BufSize: 1 << 20, HeaderBufSize: 4096, Readers: 2})
	k := h.Key()
	objs, err := listIPC()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, o := range objs {
		have[o.Kind+":"+Key(o.Key).String()] = true
	}
	want := []string{"shm:" + k.String(), "shm:" + (k + 1).String()}
	for _, r := range []Key{k, k + 1} {
		want = append(want, "sem:"+Key(r.plus(1)).String(), "sem:"+Key(r.plus(2)).String(), "sem:"+Key(r.plus(3)).String())
		for b := 0; b < 8; b++ {
			want = append(want, "shm:"+Key(r.plus(uint64(10+b))).String())
		}
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("missing IPC object %s", w)
		}
	}
	// The test mains' leak checks (internal/ipctest) see every object of the ring.
	if at, err := ipctest.Leaked([]uint32{uint32(k)}, 8); err != nil || len(at) != len(want) {
		t.Errorf("ipctest finds %d objects at the ring's keys (%v), want %d", len(at), err, len(want))
	}
	if have["sem:"+Key(k.plus(4)).String()] {
		t.Errorf("semaphore set for a third reader exists")
	}
	for _, r := range []*Ring{h.Data, h.Header} {
		s := r.sync
		if got, _ := shmSize(r.syncID); got != syncSize(uint64(r.NBufs())) {
			t.Errorf("ring %s sync segment is %d bytes, want %d", r.Key(), got, syncSize(uint64(r.NBufs())))
		}
		if s.semkeyConnect() != r.Key().plus(1) || s.semkeyData(7) != r.Key().plus(9) {
			t.Errorf("ring %s stored semaphore keys %#x/%#x", r.Key(), s.semkeyConnect(), s.semkeyData(7))
		}
		if s.onDeviceID() != -1 || s.nReaders() != 2 || s.wState() != stateDiscon {
			t.Errorf("ring %s: on_device_id=%d n_readers=%d w_state=%d", r.Key(), s.onDeviceID(), s.nReaders(), s.wState())
		}
		for x := uint64(0); x < Xfers; x++ {
			if !s.eod(x) {
				t.Errorf("ring %s eod[%d]=0", r.Key(), x)
			}
		}
		for b := 0; b < r.NBufs(); b++ {
			if s.shmKey(uint64(b)) != r.Key().plus(uint64(10+b)) {
				t.Errorf("ring %s shmkey[%d]=%#x", r.Key(), b, s.shmKey(uint64(b)))
			}
		}
		for num, want := range []int{1, 2} {
			if v, _ := semValue(r.connSem, num); v != want {
				t.Errorf("ring %s connection sem %d = %d, want %d", r.Key(), num, v, want)
			}
		}
		for i, id := range r.dataSem {
			for num, want := range []int{8, 8, 0, 0, 1} {
				if v, _ := semValue(id, num); v != want {
					t.Errorf("ring %s reader %d sem %d = %d, want %d", r.Key(), i, num, v, want)
				}
			}
		}
	}
	if h.Header.NBufs() != 8 || h.Header.BufSize() != 4096 || h.Data.NBufs() != 8 || h.Data.BufSize() != 1<<20 {
		t.Errorf("geometry: header %dx%d data %dx%d", h.Header.NBufs(), h.Header.BufSize(), h.Data.NBufs(), h.Data.BufSize())
	}
	// The 8-block sync segment is 568 bytes, as dada_db's.
	if syncSize(8) != 568 || syncSize(3) != 543 {
		t.Errorf("syncSize(8)=%d syncSize(3)=%d", syncSize(8), syncSize(3))
	}
}

func TestConnectSeesCreatorsMemory(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 4, BufSize: 8192})
	c, err := Connect(h.Key(), ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	copy(h.Data.Block(3), "hello")
	if !bytes.HasPrefix(c.Data.Block(3), []byte("hello")) {
		t.Fatal("block 3 written through the creator is not visible through Connect")
	}
	if c.Data.Readers() != 1 || c.Data.NBufs() != 4 || c.Data.BufSize() != 8192 {
		t.Fatalf("connected geometry %d/%d/%d", c.Data.Readers(), c.Data.NBufs(), c.Data.BufSize())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestContiguousAttach(t *testing.T) {
	const nbufs, bufsz = 8, 64 << 10
	h := createTestRing(t, Config{NBufs: nbufs, BufSize: bufsz})
	c, err := Connect(h.Key(), ConnectOptions{Contiguous: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	region, ok, reason := c.Data.Contiguous()
	if !ok {
		t.Fatalf("not contiguous: %s", reason)
	}
	if len(region) != nbufs*bufsz {
		t.Fatalf("region is %d bytes, want %d", len(region), nbufs*bufsz)
	}
	base := uintptr(unsafe.Pointer(&region[0]))
	for b := 0; b < nbufs; b++ {
		if c.Data.BlockAddr(b) != base+uintptr(b*bufsz) {
			t.Fatalf("block %d at %#x, want %#x", b, c.Data.BlockAddr(b), base+uintptr(b*bufsz))
		}
		// The region aliases the same memory as an ordinary attach, across boundaries.
		copy(h.Data.Block(b), []byte{byte(b), 0xaa})
	}
	for b := 0; b < nbufs; b++ {
		if region[b*bufsz] != byte(b) || region[b*bufsz+1] != 0xaa {
			t.Fatalf("region byte at block %d does not alias the block", b)
		}
	}
	copy(region[bufsz-2:], []byte{1, 2, 3, 4})
	if h.Data.Block(0)[bufsz-1] != 2 || h.Data.Block(1)[0] != 3 {
		t.Fatal("a write across the block 0/1 boundary did not reach both blocks")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestContiguousRefusedForUnalignedBlocks(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 3, BufSize: 5000})
	c, err := Connect(h.Key(), ConnectOptions{Contiguous: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if _, ok, reason := c.Data.Contiguous(); ok || !strings.Contains(reason, "not a multiple of the page size") {
		t.Fatalf("Contiguous() ok=%v reason=%q", ok, reason)
	}
	// Ordinary attach still works and reports the addresses.
	copy(h.Data.Block(2), "x")
	if c.Data.Block(2)[0] != 'x' || c.Data.BlockAddr(2) == 0 {
		t.Fatal("fallback attach does not alias block 2")
	}
}

func TestCreateCollisions(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 4, BufSize: 4096})
	k := h.Key()
	cases := map[string]Key{
		"same key":               k,
		"header ring key (K+1)":  k + 1,
		"key below (K-1)":        k - 1,
		"block keys (K+0xa0000)": Key(k.plus(10)),
	}
	for name, key := range cases {
		cfg := Config{Key: key, NBufs: 4, BufSize: 4096, HeaderBufSize: 4096, Readers: 1}
		before, _ := listIPC()
		if _, err := Create(cfg); !errors.Is(err, ErrRingExists) {
			t.Errorf("%s: Create = %v, want ErrRingExists", name, err)
		} else if !strings.Contains(err.Error(), "already exists") {
			t.Errorf("%s: error does not say what collided: %v", name, err)
		}
		after, _ := listIPC()
		if len(after) != len(before) {
			t.Errorf("%s: failed Create left %d objects behind", name, len(after)-len(before))
		}
	}
}

// A ring whose blocks collide half way is rolled back completely.
func TestCreateIsAllOrNothing(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 8, BufSize: 4096})
	before, _ := listIPC()
	k2 := Key(h.Key().plus(3)) // sync and sems free; its block 0..4 keys collide with h's blocks 3..7
	_, err := Create(Config{Key: k2, NBufs: 4, BufSize: 4096, HeaderBufSize: 4096, Readers: 1})
	if !errors.Is(err, ErrRingExists) || !strings.Contains(err.Error(), "block 0") {
		t.Fatalf("Create = %v, want ErrRingExists on block 0", err)
	}
	after, _ := listIPC()
	if len(after) != len(before) {
		t.Fatalf("partial Create left %d objects behind", len(after)-len(before))
	}
}

func TestConnectMissingRing(t *testing.T) {
	k := testKey(t)
	if _, err := Connect(k, ConnectOptions{}); !errors.Is(err, ErrNoRing) {
		t.Fatalf("Connect = %v, want ErrNoRing", err)
	}
	if err := Destroy(k); !errors.Is(err, ErrNoRing) {
		t.Fatalf("Destroy = %v, want ErrNoRing", err)
	}
}

func TestDestroyByKey(t *testing.T) {
	k := testKey(t)
	h, err := Create(Config{Key: k, NBufs: 4, BufSize: 4096, HeaderBufSize: 8192, Readers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if !ringKeysInUse(k, 4) {
		t.Fatal("Close removed the ring")
	}
	if err := Destroy(k); err != nil {
		t.Fatal(err)
	}
	if ringKeysInUse(k, 4) {
		t.Fatal("Destroy left objects behind")
	}
}

func TestPageInAndLock(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 2, BufSize: 1 << 20, PageIn: true, Lock: true})
	if h.Data.Block(1)[1<<20-1] != 0 {
		t.Fatal("paged-in block not zero")
	}
	// /proc/sysvipc/shm shows SHM_LOCKED (02000) in the mode, as ipcs shows "locked".
	b, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		t.Fatal(err)
	}
	locked := map[int]bool{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		id, _ := strconv.Atoi(f[1])
		mode, _ := strconv.ParseUint(f[2], 8, 32)
		locked[id] = mode&0o2000 != 0
	}
	for _, r := range []*Ring{h.Data, h.Header} {
		ids := append([]int{r.syncID}, r.blockIDs...)
		for _, id := range ids {
			if !locked[id] {
				t.Errorf("segment %d of ring %s is not locked", id, r.Key())
			}
		}
	}
}

// Populate faults a ring's blocks in, and touches every page, without changing a byte of
// what they hold.
func TestPopulateKeepsContents(t *testing.T) {
	h := createTestRing(t, Config{NBufs: 4, BufSize: 1 << 16})
	want := make([][]byte, h.Data.NBufs())
	for i := range want {
		b := h.Data.Block(i)
		for j := range b {
			b[j] = byte(i*7 + j*13 + j>>12)
		}
		want[i] = bytes.Clone(b)
	}
	if err := h.Data.Populate(); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !bytes.Equal(h.Data.Block(i), want[i]) {
			t.Fatalf("block %d changed by Populate", i)
		}
	}
}
