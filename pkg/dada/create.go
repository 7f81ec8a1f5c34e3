package dada

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Config describes a HDU to create, with dada_db's options.
type Config struct {
	// Key of the data ring (dada_db -k); the header ring uses Key+1.
	Key Key
	// NBufs is the number of data blocks (-n), 1..MaxNBufs.
	NBufs uint64
	// BufSize is the size of each data block in bytes (-b).
	BufSize uint64
	// HeaderBufSize is the size of each of the 8 header blocks (-a), at least 4096.
	HeaderBufSize uint64
	// Readers is the number of reader slots (-r), 1..MaxReaders (dada_db allows 1..5).
	Readers int
	// Lock locks every segment in memory with SHM_LOCK (-l).
	Lock bool
	// PageIn zeroes every block after creation to fault its pages in (-p).
	PageIn bool
	// HugePages creates the data blocks with SHM_HUGETLB. BufSize must be a multiple of
	// the huge page size (see RoundToHugePages).
	HugePages bool
	// HugePageSize is the huge page size in bytes (e.g. 2 MiB, what a pod's
	// hugepages-2Mi gives); 0: the kernel's default (Hugepagesize in /proc/meminfo).
	HugePageSize uint64
}

// MinHeaderBufSize is the smallest header block dada_db accepts (the page size).
const MinHeaderBufSize = 4096

// DefaultConfig returns dada_db's defaults: key dada, 4 blocks of 524288 bytes, 4096-byte
// header blocks, one reader.
func DefaultConfig() Config {
	return Config{Key: DefaultKey, NBufs: 4, BufSize: 524288, HeaderBufSize: MinHeaderBufSize, Readers: 1}
}

// HugePageSize returns the system's default huge page size in bytes (0 if unknown).
func HugePageSize() int { return hugePageSize() }

// RoundToHugePages rounds n up to a multiple of the huge page size size (0: the
// kernel's default).
func RoundToHugePages(n, size uint64) (uint64, error) {
	hp := Config{HugePageSize: size}.hugeSize()
	if hp == 0 {
		return 0, errors.New("huge page size unknown: no Hugepagesize in /proc/meminfo")
	}
	return (n + hp - 1) / hp * hp, nil
}

// Validate checks the configuration.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, a...))
	}
	switch {
	case c.Key == 0:
		return bad("key 0 is IPC_PRIVATE and cannot name a ring")
	case c.Key < 0:
		return bad("key %#x is negative", uint32(c.Key))
	case c.NBufs < 1 || c.NBufs > MaxNBufs:
		return bad("nbufs %d out of range 1..%d (semaphore values are limited to 32767)", c.NBufs, MaxNBufs)
	case c.BufSize < 1:
		return bad("block size must be at least 1 byte")
	case c.BufSize > 1<<40:
		return bad("block size %d larger than 1 TiB", c.BufSize)
	case c.HeaderBufSize < MinHeaderBufSize:
		return bad("header block size %d smaller than %d", c.HeaderBufSize, MinHeaderBufSize)
	case c.HeaderBufSize > 1<<30:
		return bad("header block size %d larger than 1 GiB", c.HeaderBufSize)
	case c.Readers < 1 || c.Readers > MaxReaders:
		return bad("readers %d out of range 1..%d", c.Readers, MaxReaders)
	}
	if c.HugePages {
		if err := c.validateHuge(); err != nil {
			return bad("%v", err)
		}
	}
	for _, r := range []struct {
		k     Key
		nbufs uint64
	}{{c.Key, c.NBufs}, {c.Key + 1, Xfers}} {
		for n := uint64(0); n < 10+r.nbufs; n++ {
			if r.k.plus(n) == 0 {
				return bad("key %s: derived key %d of ring %s would be 0 (IPC_PRIVATE)", c.Key, n, r.k)
			}
		}
	}
	return nil
}

// hugeSize is the huge page size the blocks use: HugePageSize, else the kernel's default.
func (c Config) hugeSize() uint64 {
	if c.HugePageSize != 0 {
		return c.HugePageSize
	}
	return uint64(hugePageSize())
}

func (c Config) validateHuge() error {
	hp := c.hugeSize()
	switch {
	case hp == 0:
		return errors.New("huge pages requested but the huge page size is unknown")
	case c.HugePageSize != 0 && !hugePageSizeOffered(hp):
		return fmt.Errorf("huge page size %d bytes is not one this kernel offers (%s)", hp, offeredHugePageSizes())
	case c.BufSize%hp != 0:
		return fmt.Errorf("block size %d is not a multiple of the huge page size %d (use %d)", c.BufSize, hp, (c.BufSize+hp-1)/hp*hp)
	}
	return nil
}

// Create creates a HDU like dada_db: the data ring at cfg.Key and the header ring (8 blocks
// of HeaderBufSize) at cfg.Key+1, with the same number of readers. Creation is
// all-or-nothing: on any failure every object already created is removed. The returned
// HDU is attached normally (use Connect with Contiguous for a contiguous view).
func Create(cfg Config) (*HDU, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("create ring %s: %w", cfg.Key, err)
	}
	var created []func() error
	undo := func() {
		for i := len(created) - 1; i >= 0; i-- {
			_ = created[i]()
		}
	}
	if err := createRing(cfg.Key, cfg.NBufs, cfg.BufSize, cfg.Readers, cfg.blockHugeSize(), cfg.Lock, &created); err != nil {
		undo()
		return nil, fmt.Errorf("create data ring %s: %w", cfg.Key, err)
	}
	if err := createRing(cfg.Key+1, Xfers, cfg.HeaderBufSize, cfg.Readers, 0, cfg.Lock, &created); err != nil {
		undo()
		return nil, fmt.Errorf("create header ring %s: %w", cfg.Key+1, err)
	}
	h, err := Connect(cfg.Key, ConnectOptions{})
	if err != nil {
		undo()
		return nil, fmt.Errorf("create ring %s: %w", cfg.Key, err)
	}
	if cfg.PageIn {
		for _, r := range []*Ring{h.Header, h.Data} {
			for b := 0; b < r.NBufs(); b++ {
				clear(r.Block(b))
			}
		}
	}
	return h, nil
}

func existsErr(what string, key int32, ring Key, err error) error {
	if errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("%w: %s key %#x already exists (an existing ring, the header ring of ring %s, or a ring whose key differs by a multiple of 0x10000): %w",
			ErrRingExists, what, uint32(key), ring-1, err)
	}
	if errors.Is(err, unix.ENOSPC) {
		return fmt.Errorf("%s key %#x: system limit on SysV objects reached (kernel.shmmni/sem): %w", what, uint32(key), err)
	}
	return fmt.Errorf("%s key %#x: %w", what, uint32(key), err)
}

// blockHugeSize is the huge page size of the data blocks, 0 without huge pages.
func (c Config) blockHugeSize() uint64 {
	if !c.HugePages {
		return 0
	}
	return c.hugeSize()
}

// createRing creates one ring; hugeSize > 0 backs its blocks with huge pages of that size.
func createRing(key Key, nbufs, bufsz uint64, nread int, hugeSize uint64, lock bool, created *[]func() error) error {
	sid, err := createSync(key, nbufs, bufsz, nread, created)
	if err != nil {
		return err
	}
	if err := createSems(key, nread, created); err != nil {
		return err
	}
	ids, err := createBlocks(key, nbufs, bufsz, hugeSize, created)
	if err != nil {
		return err
	}
	if lock {
		return lockRing(key, append([]int{sid}, ids...))
	}
	return nil
}

const createFlags = ipcCreat | ipcExcl | perm

// createSync creates and fills the ring's sync segment (geometry, keys, every
// transfer ended) and returns its id.
func createSync(key Key, nbufs, bufsz uint64, nread int, created *[]func() error) (int, error) {
	syncKey := int32(key)
	sid, err := shmGet(syncKey, syncSize(nbufs), createFlags)
	if err != nil {
		return 0, existsErr("sync segment", syncKey, key, err)
	}
	*created = append(*created, func() error { return shmRemove(sid) })
	addr, err := shmAt(sid, 0, 0)
	if err != nil {
		return 0, fmt.Errorf("attach new sync segment %#x: %w", uint32(syncKey), err)
	}
	defer func() { _ = shmDt(addr) }()
	s := syncSeg{base: ptr(addr), size: syncSize(nbufs)}
	clear(s.bytes())
	s.setSemkeyConnect(key.plus(1))
	for i := 0; i < MaxReaders; i++ {
		s.setSemkeyData(i, key.plus(uint64(2+i)))
	}
	s.setGeometry(nbufs, bufsz)
	s.setNReaders(nread)
	for x := uint64(0); x < Xfers; x++ {
		s.setEOD(x, true)
	}
	s.setOnDeviceID(-1)
	for b := uint64(0); b < nbufs; b++ {
		s.setShmKey(b, key.plus(10+b))
	}
	return sid, nil
}

// createSems creates the connection semaphores and each reader slot's data
// semaphores, with their initial values.
func createSems(key Key, nread int, created *[]func() error) error {
	ck := key.plus(1)
	cid, err := semGet(ck, 2, createFlags)
	if err != nil {
		return existsErr("connection semaphores", ck, key, err)
	}
	*created = append(*created, func() error { return semRemove(cid) })
	if err := semInit(cid, map[uint16]int16{semWrite: 1, semRead: int16(nread)}); err != nil {
		return fmt.Errorf("initialise connection semaphores %#x: %w", uint32(ck), err)
	}
	for i := 0; i < nread; i++ {
		dk := key.plus(uint64(2 + i))
		did, err := semGet(dk, 5, createFlags)
		if err != nil {
			return existsErr(fmt.Sprintf("data semaphores of reader %d", i), dk, key, err)
		}
		*created = append(*created, func() error { return semRemove(did) })
		if err := semInit(did, map[uint16]int16{semSODAck: Xfers, semEODAck: Xfers, semReaderConn: 1}); err != nil {
			return fmt.Errorf("initialise data semaphores %#x: %w", uint32(dk), err)
		}
	}
	return nil
}

// createBlocks creates the data blocks and returns their ids.
func createBlocks(key Key, nbufs, bufsz, hugeSize uint64, created *[]func() error) ([]int, error) {
	bflags := createFlags | hugeFlags(hugeSize)
	huge := hugeSize != 0
	var ids []int
	for b := uint64(0); b < nbufs; b++ {
		bk := key.plus(10 + b)
		bid, err := shmGet(bk, bufsz, bflags)
		if err != nil {
			if huge && (errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EINVAL)) {
				return nil, fmt.Errorf("create huge-page block %d (key %#x, %d bytes): not enough free huge pages of %d bytes (reserve them via /sys/kernel/mm/hugepages/hugepages-%dkB/nr_hugepages): %w", b, uint32(bk), bufsz, hugeSize, hugeSize>>10, err)
			}
			if errors.Is(err, unix.EINVAL) {
				return nil, fmt.Errorf("create block %d (key %#x, %d bytes): size exceeds kernel.shmmax or the key is used by a smaller segment: %w", b, uint32(bk), bufsz, err)
			}
			return nil, existsErr(fmt.Sprintf("block %d", b), bk, key, err)
		}
		*created = append(*created, func() error { return shmRemove(bid) })
		ids = append(ids, bid)
	}
	return ids, nil
}

// lockRing locks the ring's segments (the sync segment first, then the
// blocks) in memory.
func lockRing(key Key, ids []int) error {
	for i, id := range ids {
		if err := shmLockMem(id); err != nil {
			what := "sync segment"
			if i > 0 {
				what = fmt.Sprintf("block %d", i-1)
			}
			if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOMEM) {
				return fmt.Errorf("lock %s of ring %s in memory (SHM_LOCK): needs CAP_IPC_LOCK or a larger RLIMIT_MEMLOCK (ulimit -l): %w", what, key, err)
			}
			return fmt.Errorf("lock %s of ring %s in memory (SHM_LOCK): %w", what, key, err)
		}
	}
	return nil
}

func semInit(id int, vals map[uint16]int16) error {
	for num, v := range vals {
		if err := semTry(id, num, v, 0, nil); err != nil {
			return err
		}
	}
	return nil
}

// shmHugeShift is SHM_HUGE_SHIFT: shmget's flags carry log2 of the huge page size
// from this bit, so a segment gets pages of that size rather than the default's.
const shmHugeShift = 26

// hugeFlags are shmget's flags for blocks in huge pages of size bytes (0: none).
func hugeFlags(size uint64) int {
	if size == 0 {
		return 0
	}
	return shmHuge | bits.TrailingZeros64(size)<<shmHugeShift
}

// hugePageSizeOffered reports whether the kernel has a huge page pool of size bytes
// (/sys/kernel/mm/hugepages/hugepages-<kB>kB): a power of two it supports.
func hugePageSizeOffered(size uint64) bool {
	if size == 0 || size&(size-1) != 0 {
		return false
	}
	_, err := os.Stat(fmt.Sprintf("/sys/kernel/mm/hugepages/hugepages-%dkB", size>>10))
	return err == nil
}

// offeredHugePageSizes lists the kernel's huge page pools for an error message.
func offeredHugePageSizes() string {
	ents, err := os.ReadDir("/sys/kernel/mm/hugepages")
	if err != nil || len(ents) == 0 {
		return "it offers none"
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, strings.TrimPrefix(e.Name(), "hugepages-"))
	}
	return "it offers " + strings.Join(names, ", ")
}
