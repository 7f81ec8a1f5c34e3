package verbsfabric

import (
	"errors"
	"fmt"
	"log"
	"math"
	"os"
	"syscall"

	"github.com/ringcap/ringcap/pkg/capture/fabric"
	"github.com/ringcap/ringcap/pkg/rdma/verbs"
)

// MRMode is the shared registration choice (fabric.MRMode), under the
// names this package has always used.
type MRMode = fabric.MRMode

// Registration modes (see fabric.MRMode).
const (
	Auto      = fabric.MRAuto
	WholeRing = fabric.MRWholeRing
	PerBlock  = fabric.MRPerBlock
)

// ParseMRMode parses "auto", "wholering" or "perblock" (fabric.ParseMRMode).
func ParseMRMode(s string) (MRMode, error) { return fabric.ParseMRMode(s) }

// ErrNotContiguous is fabric.ErrNotContiguous.
var ErrNotContiguous = fabric.ErrNotContiguous

// ErrMemlock is returned when the memory to register exceeds RLIMIT_MEMLOCK and the process
// lacks CAP_IPC_LOCK.
var ErrMemlock = errors.New("not enough locked-memory allowance to register the ring")

// RegisterOptions tunes Register.
type RegisterOptions struct {
	// Access of the MRs; zero means AccessLocalWrite|AccessRemoteWrite (SEND and RDMA WRITE
	// into the ring).
	Access verbs.Access
	// Log receives the one-line summary of the registration; nil logs it with log.Print.
	Log func(line string)
	// Name names the ring in errors and the summary, e.g. "key=dada".
	Name string
}

// Ring is the memory Register registers (fabric.Ring).
type Ring = fabric.Ring

// BlockMR is what a work request targeting one ring block needs.
type BlockMR struct {
	Addr uint64 // address of the block's first byte in this process
	LKey uint32
	RKey uint32
}

// Region is one registered memory region of a Registration: what a peer needs to RDMA WRITE
// into it.
type Region struct {
	Addr uint64
	Len  uint64
	LKey uint32
	RKey uint32
}

// Registration is a ring's blocks registered with one protection domain.
type Registration struct {
	ring   Ring
	name   string
	mode   MRMode
	reason string
	bytes  uint64
	mrs    []*verbs.MR
	blocks []BlockMR
	closed bool
}

// Register registers the data blocks of ring with pd. For WholeRing (and Auto to pick it)
// the ring's blocks must be mapped back to back (pkg/dada: ConnectOptions{Contiguous: true}); the MR then covers
// exactly the attached range. Before registering it checks RLIMIT_MEMLOCK and CAP_IPC_LOCK
// and fails with ErrMemlock and both numbers instead of a bare ENOMEM.
func Register(pd *verbs.PD, ring Ring, mode MRMode, opts RegisterOptions) (*Registration, error) {
	if pd == nil || ring == nil {
		return nil, errors.New("register ring: nil protection domain or ring")
	}
	name := opts.Name
	if name == "" {
		name = "(unnamed)"
	}
	access := opts.Access
	if access == 0 {
		access = verbs.AccessLocalWrite | verbs.AccessRemoteWrite
	}
	n, bs := ring.NBufs(), ring.BufSize()
	r := &Registration{ring: ring, name: name, bytes: uint64(n) * uint64(bs)}
	region, contiguous, why := ring.Contiguous()
	var err error
	if r.mode, r.reason, err = fabric.ChooseMRMode(mode, contiguous, why); err != nil {
		return nil, fmt.Errorf("register ring %s: %w", name, err)
	}

	if err := checkMemlock(r.pinnedBytes()); err != nil {
		return nil, fmt.Errorf("register ring %s mode=%v (%d bytes): %w", name, r.mode, r.bytes, err)
	}
	r.blocks = make([]BlockMR, n)
	if r.mode == WholeRing {
		mr, err := pd.RegisterMR(region, access)
		if err != nil {
			return nil, fmt.Errorf("register ring %s mode=WholeRing (%d bytes): %w", name, r.bytes, memlockHint(err))
		}
		r.mrs = []*verbs.MR{mr}
		for i := range r.blocks {
			r.blocks[i] = BlockMR{Addr: uint64(mr.Addr()) + uint64(i)*uint64(bs), LKey: mr.LKey(), RKey: mr.RKey()}
		}
	} else {
		r.mrs = make([]*verbs.MR, 0, n)
		for i := range r.blocks {
			mr, err := pd.RegisterMR(ring.Block(i), access)
			if err != nil {
				_ = r.Close()
				return nil, fmt.Errorf("register ring %s mode=PerBlock: block %d of %d: %w", name, i, n, memlockHint(err))
			}
			r.mrs = append(r.mrs, mr)
			r.blocks[i] = BlockMR{Addr: uint64(mr.Addr()), LKey: mr.LKey(), RKey: mr.RKey()}
		}
	}
	if opts.Log != nil {
		opts.Log(r.Summary())
	} else {
		log.Print(r.Summary())
	}
	return r, nil
}

// pinnedBytes is what the kernel charges against RLIMIT_MEMLOCK: whole pages per MR.
func (r *Registration) pinnedBytes() uint64 {
	page := uint64(max(r.ring.PageSize(), os.Getpagesize()))
	span := func(addr, n uint64) uint64 { return (addr+n+page-1)/page*page - addr/page*page }
	if r.mode == WholeRing {
		return span(uint64(r.ring.BlockAddr(0)), r.bytes)
	}
	var sum uint64
	for i := 0; i < r.ring.NBufs(); i++ {
		sum += span(uint64(r.ring.BlockAddr(i)), uint64(r.ring.BufSize()))
	}
	return sum
}

// Mode returns the mode in use: WholeRing or PerBlock (never Auto).
func (r *Registration) Mode() MRMode { return r.mode }

// Reason says why the mode was chosen.
func (r *Registration) Reason() string { return r.reason }

// Regions returns the number of MRs.
func (r *Registration) Regions() int { return len(r.mrs) }

// Bytes returns the registered bytes (NBufs*BufSize).
func (r *Registration) Bytes() uint64 { return r.bytes }

// RegionTable returns the registered regions in ring order: one for WholeRing, one per block
// for PerBlock (the table a sender needs for RDMA WRITE).
func (r *Registration) RegionTable() []Region {
	out := make([]Region, len(r.mrs))
	for i, mr := range r.mrs {
		out[i] = Region{Addr: uint64(mr.Addr()), Len: uint64(mr.Len()), LKey: mr.LKey(), RKey: mr.RKey()}
	}
	return out
}

// Block returns the address and keys for block i, in O(1).
func (r *Registration) Block(i int) BlockMR { return r.blocks[i] }

// Summary is the registration's log line, e.g.
// "Registered ring key=dada mode=WholeRing regions=1 bytes=33554432 (blocks contiguous)".
func (r *Registration) Summary() string {
	return fmt.Sprintf("Registered ring %s mode=%v regions=%d bytes=%d (%s)", r.name, r.mode, len(r.mrs), r.bytes, r.reason)
}

// Close deregisters every MR exactly once. Idempotent.
func (r *Registration) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	for _, mr := range r.mrs {
		errs = append(errs, mr.Close())
	}
	return errors.Join(errs...)
}

// memlockState is what decides whether pinning memory can succeed.
type memlockState struct {
	limit  uint64 // RLIMIT_MEMLOCK soft limit (math.MaxUint64 = unlimited)
	pinned uint64 // already pinned by this process (VmPin)
	ipcLck bool   // CAP_IPC_LOCK in the effective set
}

func checkMemlock(need uint64) error {
	st, err := currentMemlock()
	if err != nil {
		return err
	}
	return st.check(need)
}

// check fails when pinning need more bytes would exceed the limit without CAP_IPC_LOCK.
func (st memlockState) check(need uint64) error {
	if st.ipcLck || st.limit == math.MaxUint64 || st.pinned+need <= st.limit {
		return nil
	}
	pinned := ""
	if st.pinned > 0 {
		pinned = fmt.Sprintf(", %d of it already pinned", st.pinned)
	}
	return fmt.Errorf("%w: registering needs %d bytes of locked memory but RLIMIT_MEMLOCK is %d bytes%s and the process lacks CAP_IPC_LOCK; grant the IPC_LOCK capability or raise the memlock limit to at least %d bytes (ulimit -l / the container runtime's memlock ulimit)",
		ErrMemlock, need, st.limit, pinned, st.pinned+need)
}

// memlockHint explains an ENOMEM from ibv_reg_mr that the pre-check did not foresee.
func memlockHint(err error) error {
	if !errors.Is(err, syscall.ENOMEM) {
		return err
	}
	st, serr := currentMemlock()
	if serr != nil || st.ipcLck || st.limit == math.MaxUint64 {
		return err
	}
	return fmt.Errorf("%w (RLIMIT_MEMLOCK is %d bytes, %d pinned, no CAP_IPC_LOCK: grant IPC_LOCK or raise the memlock limit)", err, st.limit, st.pinned)
}
