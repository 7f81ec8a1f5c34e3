package ofifabric

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringcap/ringcap/pkg/rdma/ofi"
)

// Length messages (write mode where remote CQ data cannot also carry the
// length, see lengthMessages): a write with an immediate goes out as a plain
// write followed by a send of lenBytes bytes, the write's length, with the
// immediate as remote CQ data. The receiver posts those sends' receives into
// slots of registered memory and reads the length there; send-after-write
// ordering (FI_ORDER_SAW) makes the message land after its write.

// lenBytes is a length message's payload: the write's length, little endian.
const lenBytes = 4

// lenSlot is the room of one length word.
const lenSlot = 8

// lenWords is registered memory of length words, slots per endpoint.
type lenWords struct {
	buf   []byte
	mr    *ofi.MR
	slots int // per endpoint
}

// newLenWords maps and registers room for eps endpoints of slots words each.
func newLenWords(d *ofi.Domain, eps, slots int, access ofi.Caps) (*lenWords, error) {
	page := os.Getpagesize()
	n := (eps*slots*lenSlot + page - 1) / page * page
	buf, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes of length words: %w", n, err)
	}
	mr, err := d.RegisterMR(uintptr(unsafe.Pointer(&buf[0])), n, access)
	if err != nil {
		_ = unix.Munmap(buf)
		return nil, fmt.Errorf("register %d bytes of length words: %w", n, err)
	}
	return &lenWords{buf: buf, mr: mr, slots: slots}, nil
}

// slot is endpoint qi's k-th word.
func (w *lenWords) slot(qi, k int) int { return qi*w.slots + k }

func (w *lenWords) local(s int) ofi.Local { return w.mr.Local(uint64(s*lenSlot), lenBytes) }

func (w *lenWords) put(s int, n uint32) { binary.LittleEndian.PutUint32(w.buf[s*lenSlot:], n) }

func (w *lenWords) get(s int) uint32 { return binary.LittleEndian.Uint32(w.buf[s*lenSlot:]) }

// close deregisters and unmaps the words; idempotent.
func (w *lenWords) close() error {
	if w == nil || w.buf == nil {
		return nil
	}
	err := errors.Join(w.mr.Close(), unix.Munmap(w.buf))
	w.buf = nil
	return err
}

// lenRx is the receiver's side: which words are free for a receive, and the
// engine's work-request ID of each posted one.
type lenRx struct {
	w    *lenWords
	free [][]int  // per endpoint, free slots
	ids  []uint64 // per slot, the engine's ID
}

func newLenRx(d *ofi.Domain, eps, depth int) (*lenRx, error) {
	w, err := newLenWords(d, eps, depth, ofi.CapRecv)
	if err != nil {
		return nil, err
	}
	r := &lenRx{w: w, free: make([][]int, eps), ids: make([]uint64, eps*depth)}
	for qi := range r.free {
		for k := range depth {
			r.free[qi] = append(r.free[qi], w.slot(qi, k))
		}
	}
	return r, nil
}

// take gives endpoint qi's receive with the engine's ID id a word.
func (r *lenRx) take(qi int, id uint64) (int, error) {
	f := r.free[qi]
	if len(f) == 0 {
		return 0, fmt.Errorf("endpoint %d: more than %d receives posted for length messages", qi, r.w.slots)
	}
	s := f[len(f)-1]
	r.free[qi] = f[:len(f)-1]
	r.ids[s] = id
	return s, nil
}

// give returns slot s of endpoint qi (its receive completed or was not
// posted) and the engine's ID of its receive.
func (r *lenRx) give(qi, s int) (uint64, bool) {
	if s < qi*r.w.slots || s >= (qi+1)*r.w.slots {
		return 0, false
	}
	r.free[qi] = append(r.free[qi], s)
	return r.ids[s], true
}
