package dada

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrRingExists: a SysV key the ring needs is already in use.
	ErrRingExists = errors.New("ring key already in use")
	// ErrNoRing: no ring exists at the key.
	ErrNoRing = errors.New("no ring at key")
	// ErrRingIncomplete: the ring's sync segment exists but not all of its parts: its
	// creator is between its first IPC object and its last (or a remover is). ConnectWait
	// waits for it as for a ring that does not exist yet.
	ErrRingIncomplete = errors.New("ring incomplete (being created or removed)")
	// ErrRingRemoved: the ring's IPC objects were removed while in use.
	ErrRingRemoved = errors.New("ring was removed")
	// ErrClosed: the handle was closed.
	ErrClosed = errors.New("handle closed")
	// ErrNotSupported: this platform has no Linux SysV IPC (rings exist on Linux only).
	ErrNotSupported = errors.New("PSRDADA rings need Linux SysV IPC")
	// ErrInvalidConfig: a Config or argument is out of range.
	ErrInvalidConfig = errors.New("invalid ring configuration")
)

// Key is the SysV key of a ring's sync segment. A HDU's data ring uses Key and its header
// ring Key+1, as dada_hdu_set_key does.
type Key int32

// DefaultKey is dada_db's default key, 0xdada.
const DefaultKey Key = 0xdada

// ParseKey parses a key in hexadecimal as dada_db -k does ("dada", "0xdada").
func ParseKey(s string) (Key, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X")
	if t == "" {
		return 0, fmt.Errorf("parse key %q: empty", s)
	}
	v, err := strconv.ParseUint(t, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("parse key %q: not hexadecimal", s)
	}
	if v == 0 {
		return 0, fmt.Errorf("parse key %q: key 0 is IPC_PRIVATE and cannot name a ring", s)
	}
	if v > 0x7fffffff {
		return 0, fmt.Errorf("parse key %q: larger than 0x7fffffff", s)
	}
	return Key(v), nil
}

// String returns the key in lower-case hexadecimal without 0x, as PSRDADA tools print it.
func (k Key) String() string { return strconv.FormatUint(uint64(uint32(k)), 16) }

// MarshalText gives the key as String does, so JSON shows it as PSRDADA tools print it.
func (k Key) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses a key as ParseKey does.
func (k *Key) UnmarshalText(b []byte) error {
	v, err := ParseKey(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// plus returns k + n*0x10000 with key_t wrap-around, as PSRDADA's key arithmetic.
func (k Key) plus(n uint64) int32 { return int32(uint32(k) + uint32(n*keyIncrement)) }

// Semaphore numbers in the connection set and in each reader's data set.
const (
	semWrite      = 0
	semRead       = 1
	semSODAck     = 0
	semEODAck     = 1
	semFull       = 2
	semClear      = 3
	semReaderConn = 4
)

// Ring is one attached PSRDADA ring (ipcbuf): a sync segment, semaphore sets and data
// blocks. Obtain rings through an HDU.
type Ring struct {
	key      Key
	syncID   int
	syncAddr uintptr
	sync     syncSeg
	nbufs    int
	bufsz    int
	nreaders int
	connSem  int
	dataSem  []int
	blockIDs []int
	blocks   [][]byte
	addrs    []uintptr
	huge     bool
	pageSize int

	contigBase   uintptr // reservation, when attached contiguously
	contigLen    uintptr
	contigOK     bool
	contigReason string

	mu     sync.Mutex
	closed bool
	// closing is the owning HDU's flag: blocking waits end with ErrClosed once it is set.
	closing *atomic.Bool
}

func (r *Ring) semOp(ctx context.Context, id int, num uint16, op int16, flg int16) error {
	return semOpClosing(ctx, r.closing, id, num, op, flg)
}

// index is the ring index of block seq: a mask when the block count is a power of two
// (a 64-bit division costs more than the rest of the block's bookkeeping).
func (r *Ring) index(seq uint64) int {
	if r.nbufs&(r.nbufs-1) == 0 {
		return int(seq & uint64(r.nbufs-1))
	}
	return int(seq % uint64(r.nbufs))
}

// Key returns the ring's key.
func (r *Ring) Key() Key { return r.key }

// NBufs returns the number of blocks.
func (r *Ring) NBufs() int { return r.nbufs }

// BufSize returns the size of each block in bytes.
func (r *Ring) BufSize() int { return r.bufsz }

// Readers returns the number of reader slots (n_readers).
func (r *Ring) Readers() int { return r.nreaders }

// HugePages reports whether the blocks are backed by huge pages (SHM_HUGETLB).
func (r *Ring) HugePages() bool { return r.huge }

// PageSize returns the page size backing the blocks.
func (r *Ring) PageSize() int { return r.pageSize }

// Block returns the attached memory of block i (len BufSize).
func (r *Ring) Block(i int) []byte { return r.blocks[i] }

// Populate faults in every page of every block for writing, without changing the
// blocks' contents, so that a writer's first pass over a fresh ring does not pay a page
// fault per page while data arrives (a packet receiver would drop packets meanwhile). It
// needs Linux 5.14 (MADV_POPULATE_WRITE); the error says when the kernel cannot.
func (r *Ring) Populate() error {
	for i, b := range r.blocks {
		if err := populateWrite(b); err != nil {
			return fmt.Errorf("fault in block %d of the ring: %w", i, err)
		}
		r.touch(b)
	}
	return nil
}

// touch writes to every page of b from this thread, changing nothing (an atomic add of
// zero, safe beside readers): under a hypervisor that keeps shadow page tables the kernel's
// prefault leaves the hypervisor's own entry for each page to the first access from user
// space, which there costs as much as a page fault.
func (r *Ring) touch(b []byte) {
	for off := 0; off+4 <= len(b); off += r.pageSize {
		atomic.AddUint32((*uint32)(unsafe.Pointer(&b[off])), 0)
	}
}

// BlockAddr returns the address block i is attached at in this process.
func (r *Ring) BlockAddr(i int) uintptr { return r.addrs[i] }

// Contiguous returns the whole ring as one region of exactly NBufs*BufSize bytes, with block
// i at offset i*BufSize, when the blocks are mapped back to back; otherwise ok is false and
// reason says why.
func (r *Ring) Contiguous() (region []byte, ok bool, reason string) {
	if r.contigOK {
		return unsafe.Slice((*byte)(ptr(r.addrs[0])), r.nbufs*r.bufsz), true, r.contigReason
	}
	return nil, false, r.contigReason
}

// HDU is a header/data unit: a data ring at Key and a header ring at Key+1.
type HDU struct {
	Data, Header *Ring

	key       Key
	closeOnce sync.Once
	closeErr  error

	// opMu is held shared by every viewer operation and while a Writer or Reader is made
	// or closed, and exclusively by Close, which first sets closing so that blocked waits
	// end (within semPoll). Writer and Reader operations hold only their handle's lock,
	// under which Close releases each handle before it detaches the rings.
	opMu    sync.RWMutex
	closing atomic.Bool
	hmu     sync.Mutex
	handles map[releaser]struct{} // Writers and Readers not yet closed
}

// releaser is a Writer or Reader that HDU.Close must release before detaching.
type releaser interface{ release() error }

// enter starts an operation on the HDU; it fails once Close has begun.
func (h *HDU) enter() bool {
	h.opMu.RLock()
	if h.closing.Load() {
		h.opMu.RUnlock()
		return false
	}
	return true
}

func (h *HDU) exit() { h.opMu.RUnlock() }

func (h *HDU) addHandle(r releaser) {
	h.hmu.Lock()
	if h.handles == nil {
		h.handles = map[releaser]struct{}{}
	}
	h.handles[r] = struct{}{}
	h.hmu.Unlock()
}

func (h *HDU) removeHandle(r releaser) {
	h.hmu.Lock()
	delete(h.handles, r)
	h.hmu.Unlock()
}

// Key returns the data ring's key.
func (h *HDU) Key() Key { return h.key }

// ConnectOptions controls how Connect attaches a ring.
type ConnectOptions struct {
	// Contiguous maps the data blocks back to back in one address range (reserve with
	// mmap(PROT_NONE), then shmat each block with SHM_REMAP). When that is impossible the
	// blocks are attached normally and Ring.Contiguous says why.
	Contiguous bool
}

// ConnectWait connects to the ring at key (see Connect), retrying for up to
// wait while it does not exist yet or is still being created.
func ConnectWait(ctx context.Context, key Key, opts ConnectOptions, wait time.Duration) (*HDU, error) {
	deadline := time.Now().Add(wait)
	for {
		h, err := Connect(key, opts)
		notYet := errors.Is(err, ErrNoRing) || errors.Is(err, ErrRingIncomplete)
		if err == nil || !notYet || time.Now().After(deadline) {
			return h, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for ring %s: %w", key, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Connect attaches to the HDU at key: the data ring at key and the header ring at key+1.
// It reads every other key from the sync segments, as PSRDADA does.
func Connect(key Key, opts ConnectOptions) (*HDU, error) {
	if key == 0 {
		return nil, fmt.Errorf("connect ring: %w: key 0 is IPC_PRIVATE", ErrInvalidConfig)
	}
	data, err := connectRing(key, opts.Contiguous)
	if err != nil {
		return nil, fmt.Errorf("connect data ring %s: %w", key, err)
	}
	hdr, err := connectRing(key+1, false)
	if err != nil {
		_ = data.close()
		return nil, fmt.Errorf("connect header ring %s: %w", key+1, err)
	}
	h := &HDU{Data: data, Header: hdr, key: key}
	data.closing, hdr.closing = &h.closing, &h.closing
	return h, nil
}

// Close detaches from both rings. It never removes IPC objects. Calls blocked in a wait
// return ErrClosed (within 100 ms); Writers and Readers still open are closed first (an
// observation being written is ended if that needs no wait, else left open as a crashed
// writer leaves it), releasing their locks. Block memory handed out becomes invalid.
// Idempotent.
func (h *HDU) Close() error {
	h.closeOnce.Do(func() {
		h.closing.Store(true)
		h.opMu.Lock()
		defer h.opMu.Unlock()
		h.hmu.Lock()
		handles := h.handles
		h.handles = nil
		h.hmu.Unlock()
		var errs []error
		for r := range handles {
			errs = append(errs, r.release())
		}
		errs = append(errs, h.Header.close(), h.Data.close())
		h.closeErr = errors.Join(errs...)
	})
	return h.closeErr
}

// Destroy removes every IPC object of both rings (as dada_db -d) and closes the handle.
// Only the creator (or an operator destroying a ring) should call it.
func (h *HDU) Destroy() error {
	err := errors.Join(h.Data.remove(), h.Header.remove())
	return errors.Join(err, h.Close())
}

// incomplete marks a part of a ring that does not exist (its sync segment does) as
// ErrRingIncomplete.
func incomplete(err error) error {
	if errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("%w: %w", ErrRingIncomplete, err)
	}
	return err
}

func connectRing(key Key, contiguous bool) (r *Ring, err error) {
	id, err := shmGet(int32(key), syncStructSize, perm)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("%w %s (shmget %#x: %w)", ErrNoRing, key, uint32(key), err)
		}
		return nil, fmt.Errorf("get sync segment %#x: %w", uint32(key), err)
	}
	size, err := shmSize(id)
	if err != nil {
		return nil, fmt.Errorf("stat sync segment %#x: %w", uint32(key), err)
	}
	addr, err := shmAt(id, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("attach sync segment %#x: %w", uint32(key), err)
	}
	r = &Ring{key: key, syncID: id, syncAddr: addr, sync: syncSeg{base: ptr(addr), size: size}}
	defer func() {
		if err != nil {
			_ = r.close()
		}
	}()
	if err := r.checkGeometry(size); err != nil {
		return r, err
	}
	if err := r.getIPC(); err != nil {
		return r, err
	}
	return r, r.attachBlocks(contiguous)
}

// checkGeometry validates the geometry the sync segment (size bytes) holds and takes it.
func (r *Ring) checkGeometry(size uint64) error {
	key := r.key
	nbufs, bufsz, nread := r.sync.nbufs(), r.sync.bufsz(), r.sync.nReaders()
	if nbufs == 0 && bufsz == 0 && nread == 0 {
		return fmt.Errorf("sync segment %#x holds no geometry yet: %w", uint32(key), ErrRingIncomplete)
	}
	if nbufs == 0 || nbufs > MaxNBufs || bufsz == 0 || bufsz > 1<<40 || nread < 1 || nread > MaxReaders {
		return fmt.Errorf("sync segment %#x holds an invalid ring (nbufs=%d bufsz=%d n_readers=%d)", uint32(key), nbufs, bufsz, nread)
	}
	if size < syncSize(nbufs) {
		return fmt.Errorf("sync segment %#x is %d bytes, need %d for %d blocks", uint32(key), size, syncSize(nbufs), nbufs)
	}
	if dev := r.sync.onDeviceID(); dev >= 0 {
		return fmt.Errorf("ring %s lives in GPU memory (on_device_id=%d, dada_db -g): not supported", key, dev)
	}
	r.nbufs, r.bufsz, r.nreaders = int(nbufs), int(bufsz), nread
	return nil
}

// getIPC looks up the ring's semaphore sets and block segments by the sync segment's keys.
func (r *Ring) getIPC() (err error) {
	if r.connSem, err = semGet(r.sync.semkeyConnect(), 2, perm); err != nil {
		return fmt.Errorf("get connection semaphores %#x: %w", uint32(r.sync.semkeyConnect()), incomplete(err))
	}
	r.dataSem = make([]int, r.nreaders)
	for i := range r.dataSem {
		k := r.sync.semkeyData(i)
		if r.dataSem[i], err = semGet(k, 5, perm); err != nil {
			return fmt.Errorf("get data semaphores of reader %d %#x: %w", i, uint32(k), incomplete(err))
		}
	}
	r.blockIDs = make([]int, r.nbufs)
	for b := range r.blockIDs {
		k := r.sync.shmKey(uint64(b))
		if r.blockIDs[b], err = shmGet(k, uint64(r.bufsz), perm); err != nil {
			return fmt.Errorf("get block %d %#x: %w", b, uint32(k), incomplete(err))
		}
	}
	return nil
}

// attachBlocks attaches every block: back to back when contiguous is requested and possible,
// else wherever the kernel puts them.
func (r *Ring) attachBlocks(contiguous bool) error {
	// Learn the page size from block 0 (a hugetlb segment is backed by huge pages).
	a0, err := shmAt(r.blockIDs[0], 0, 0)
	if err != nil {
		return fmt.Errorf("attach block 0: %w", err)
	}
	r.pageSize = mappingPageSize(a0)
	r.huge = r.pageSize > os.Getpagesize()
	r.addrs = make([]uintptr, r.nbufs)
	r.blocks = make([][]byte, r.nbufs)
	if contiguous {
		_ = shmDt(a0)
		if r.bufsz%r.pageSize != 0 {
			r.contigReason = fmt.Sprintf("block size %d is not a multiple of the page size %d", r.bufsz, r.pageSize)
		} else if err := r.attachContiguous(); err != nil {
			r.contigReason = err.Error()
		} else {
			r.contigOK = true
			r.contigReason = fmt.Sprintf("%d blocks of %d bytes mapped back to back", r.nbufs, r.bufsz)
			return nil
		}
		if a0, err = shmAt(r.blockIDs[0], 0, 0); err != nil {
			return fmt.Errorf("attach block 0: %w", err)
		}
	}
	r.setBlock(0, a0)
	for b := 1; b < r.nbufs; b++ {
		a, err := shmAt(r.blockIDs[b], 0, 0)
		if err != nil {
			return fmt.Errorf("attach block %d: %w", b, err)
		}
		r.setBlock(b, a)
	}
	if !contiguous {
		r.contigReason = "not attached contiguously (ConnectOptions.Contiguous is false)"
		adjacent := true
		for b := 1; b < r.nbufs; b++ {
			adjacent = adjacent && r.addrs[b] == r.addrs[b-1]+uintptr(r.bufsz)
		}
		if adjacent {
			r.contigOK = true
			r.contigReason = "blocks happen to be attached back to back"
		}
	}
	return nil
}

func (r *Ring) setBlock(b int, a uintptr) {
	r.addrs[b] = a
	r.blocks[b] = unsafe.Slice((*byte)(ptr(a)), r.bufsz)
}

func (r *Ring) attachContiguous() error {
	total := uintptr(r.nbufs) * uintptr(r.bufsz)
	align := uintptr(r.pageSize)
	start, err := mmapReserve(total + align)
	if err != nil {
		return fmt.Errorf("reserve %d bytes of address space: %w", total, err)
	}
	base := (start + align - 1) &^ (align - 1)
	if head := base - start; head > 0 {
		_ = munmap(start, head)
	}
	if tail := start + total + align - (base + total); tail > 0 {
		_ = munmap(base+total, tail)
	}
	r.contigBase, r.contigLen = base, total
	for b := 0; b < r.nbufs; b++ {
		want := base + uintptr(b)*uintptr(r.bufsz)
		a, err := shmAt(r.blockIDs[b], want, shmRemap)
		if err == nil && a != want {
			_ = shmDt(a)
			err = fmt.Errorf("kernel attached at %#x", a)
		}
		if err != nil {
			for i := 0; i < b; i++ {
				_ = shmDt(r.addrs[i])
				r.addrs[i], r.blocks[i] = 0, nil
			}
			_ = munmap(base, total)
			r.contigBase, r.contigLen = 0, 0
			return fmt.Errorf("attach block %d at %#x with SHM_REMAP: %w", b, want, err)
		}
		r.setBlock(b, a)
	}
	return nil
}

// close detaches everything attached. Idempotent.
func (r *Ring) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	for b, a := range r.addrs {
		if a != 0 {
			if err := shmDt(a); err != nil {
				errs = append(errs, fmt.Errorf("detach block %d of ring %s: %w", b, r.key, err))
			}
		}
	}
	r.addrs, r.blocks = nil, nil
	if r.contigBase != 0 {
		if err := munmap(r.contigBase, r.contigLen); err != nil {
			errs = append(errs, fmt.Errorf("unmap ring %s reservation: %w", r.key, err))
		}
		r.contigBase = 0
	}
	if r.syncAddr != 0 {
		if err := shmDt(r.syncAddr); err != nil {
			errs = append(errs, fmt.Errorf("detach sync segment of ring %s: %w", r.key, err))
		}
		r.syncAddr = 0
	}
	return errors.Join(errs...)
}

// remove IPC_RMIDs the ring's objects in ipcbuf_destroy's order: connection semaphores,
// the readers' data semaphores, the blocks, then the sync segment.
func (r *Ring) remove() error {
	var errs []error
	rm := func(what string, err error) {
		if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EIDRM) {
			errs = append(errs, fmt.Errorf("remove %s of ring %s: %w", what, r.key, err))
		}
	}
	if r.connSem >= 0 {
		rm("connection semaphores", semRemove(r.connSem))
	}
	for i, id := range r.dataSem {
		rm(fmt.Sprintf("data semaphores of reader %d", i), semRemove(id))
	}
	for b, id := range r.blockIDs {
		rm(fmt.Sprintf("block %d", b), shmRemove(id))
	}
	rm("sync segment", shmRemove(r.syncID))
	return errors.Join(errs...)
}

// Destroy removes the HDU at key (data ring key and header ring key+1), like dada_db -d.
// It reads the object keys from the sync segments. A missing header ring is not an error
// when the data ring exists.
func Destroy(key Key) error {
	if key == 0 {
		return fmt.Errorf("destroy ring: %w: key 0 is IPC_PRIVATE", ErrInvalidConfig)
	}
	derr := destroyRing(key)
	herr := destroyRing(key + 1)
	if errors.Is(derr, ErrNoRing) && errors.Is(herr, ErrNoRing) {
		return fmt.Errorf("destroy ring %s: %w", key, derr)
	}
	if errors.Is(herr, ErrNoRing) {
		herr = nil
	}
	if errors.Is(derr, ErrNoRing) {
		derr = nil
	}
	return errors.Join(derr, herr)
}

func destroyRing(key Key) error {
	id, err := shmGet(int32(key), syncStructSize, perm)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%w %s", ErrNoRing, key)
		}
		return fmt.Errorf("get sync segment %#x: %w", uint32(key), err)
	}
	size, err := shmSize(id)
	if err != nil {
		return fmt.Errorf("stat sync segment %#x: %w", uint32(key), err)
	}
	addr, err := shmAt(id, 0, 0)
	if err != nil {
		return fmt.Errorf("attach sync segment %#x: %w", uint32(key), err)
	}
	defer func() { _ = shmDt(addr) }()
	s := syncSeg{base: ptr(addr), size: size}
	r := &Ring{key: key, syncID: id, connSem: -1}
	nbufs, nread := s.nbufs(), s.nReaders()
	if nread > MaxReaders || size < syncSize(nbufs) {
		return fmt.Errorf("destroy ring %s: sync segment is inconsistent (nbufs=%d n_readers=%d size=%d)", key, nbufs, nread, size)
	}
	if r.connSem, err = semGet(s.semkeyConnect(), 0, 0); err != nil {
		r.connSem = -1
	}
	for i := 0; i < nread; i++ {
		if sid, err := semGet(s.semkeyData(i), 0, 0); err == nil {
			r.dataSem = append(r.dataSem, sid)
		}
	}
	for b := uint64(0); b < nbufs; b++ {
		if bid, err := shmGet(s.shmKey(b), 0, 0); err == nil {
			r.blockIDs = append(r.blockIDs, bid)
		}
	}
	return r.remove()
}

// mappingPageSize returns KernelPageSize of the mapping containing addr (from
// /proc/self/smaps), or the base page size if it cannot be determined.
func mappingPageSize(addr uintptr) int {
	def := os.Getpagesize()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return def
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := parseMapsRange(line); ok {
			in = addr >= lo && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "KernelPageSize:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				if kb, err := strconv.Atoi(f[1]); err == nil && kb > 0 {
					return kb << 10
				}
			}
			return def
		}
	}
	return def
}

func parseMapsRange(line string) (lo, hi uintptr, ok bool) {
	sp := strings.IndexByte(line, ' ')
	if sp < 0 {
		return 0, 0, false
	}
	a, b, found := strings.Cut(line[:sp], "-")
	if !found {
		return 0, 0, false
	}
	l, err1 := strconv.ParseUint(a, 16, 64)
	h, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(l), uintptr(h), true
}

// hugePageSize returns the default huge page size from /proc/meminfo (0 if unknown).
func hugePageSize() int {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Hugepagesize:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				if kb, err := strconv.Atoi(f[1]); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}
