//go:build linux && cgo

package verbs

/*
#cgo CFLAGS: -I${SRCDIR}/../internal/cpost
#cgo LDFLAGS: -libverbs -lpthread
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <infiniband/verbs.h>
#include "cpost.h"
#include "rc.h"

// One work request in a posting thread's queue.
struct rc_pt_ent {
	struct ibv_qp *qp;
	struct rc_swr w;
	int32_t tag;  // the caller's name for the queue pair
	int32_t last; // 1: the last work request of the batch handed over
};

#define RC_PT_CHAIN 256

// A posting thread (the shared core, cpost.h): the queue holds work requests; the thread
// sleeps on the core's futex and writes its eventfd (notify) when a post fails.
struct rc_pt {
	struct cpost core;
	struct rc_pt_ent *q;
	struct ibv_send_wr wr[RC_PT_CHAIN];
	struct ibv_sge sge[RC_PT_CHAIN];
	struct rc_swr w[RC_PT_CHAIN];
};

// rc_pt_chain posts one chain: the rest of the current batch from tail, at most
// RC_PT_CHAIN work requests. Returns how many it posted (0: the post failed).
static int rc_pt_chain(struct rc_pt *t, uint64_t tail, uint64_t head, uint64_t bstart, int *last) {
	struct ibv_qp *qp = t->q[cpost_ring_slot(&t->core.q, tail)].qp;
	int n = 0;
	*last = 0;
	while (n < RC_PT_CHAIN && tail + n != head && !*last) {
		struct rc_pt_ent *e = &t->q[cpost_ring_slot(&t->core.q, tail + n)];
		t->w[n++] = e->w;
		*last = e->last;
	}
	rc_build_send(t->w, n, t->wr, t->sge);
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(qp, t->wr, &bad);
	if (rc != 0) {
		cpost_fail(&t->core, rc, bstart, tail + (uint64_t)(bad ? bad - t->wr : 0));
		return 0;
	}
	return n;
}

static void *rc_pt_main(struct cpost *c) {
	struct rc_pt *t = cpost_of(c, struct rc_pt, core);
	uint64_t tail = cpost_ring_tail(&c->q), bstart = tail;
	uint64_t head;
	while (cpost_next(c, tail, &head)) {
		int last;
		int n = rc_pt_chain(t, tail, head, bstart, &last);
		if (n == 0) return NULL; // posts nothing more: the rest stays queued for Close to report
		tail += n;
		if (last) bstart = tail;
		cpost_taken(c, tail);
	}
	return NULL;
}

static int rc_pt_start(struct rc_pt *t, uint64_t size, int cpu, int efd) {
	cpost_init(&t->core, size, cpu, -1, efd);
	return cpost_start(&t->core, rc_pt_main);
}

// Queues n work requests for qp as one batch. Returns 0, or -1 when the queue has no room.
static int rc_pt_push(struct rc_pt *t, struct ibv_qp *qp, const struct rc_swr *w, int n, int32_t tag) {
	uint64_t head;
	if (cpost_reserve(&t->core, (uint64_t)n, &head) != 0) return -1;
	for (int i = 0; i < n; i++) {
		struct rc_pt_ent *e = &t->q[cpost_ring_slot(&t->core.q, head + i)];
		e->qp = qp; e->w = w[i]; e->tag = tag; e->last = i == n - 1;
	}
	cpost_publish(&t->core, head + n);
	return 0;
}

// Lets the thread post what is queued (unless a post failed) and joins it.
static void rc_pt_stop(struct rc_pt *t) { cpost_stop(&t->core); }

static struct rc_pt_ent *rc_pt_at(struct rc_pt *t, uint64_t i) { return &t->q[cpost_ring_slot(&t->core.q, i)]; }
static uint64_t rc_pt_head(struct rc_pt *t) { return cpost_head(&t->core); }
static int rc_pt_failed(struct rc_pt *t) { return cpost_state(&t->core) == CPOST_FAILED; }
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	_ "github.com/ringcap/ringcap/pkg/rdma/internal/cpost" // cpost.h, the posting thread's core
)

// PostThread is an OS thread of its own, outside the Go scheduler and pinned to one CPU,
// that posts the send work requests handed to it (Post), batch after batch, in order.
//
// Why: a goroutine that posts in a loop spends nearly all its time in cgo calls, which the
// Go runtime treats as system calls. It takes the goroutine's P away every 10 ms, and its
// sysmon thread, which does that, then keeps waking every 20 µs: thousands of wake-ups a
// second that take CPU from the data path. A thread the runtime does not know of costs it
// nothing; handing a batch over costs a futex wake only when the thread sleeps.
//
// Close the PostThread before the queue pairs it posts to.
type PostThread struct {
	mu       sync.Mutex
	t        *C.struct_rc_pt
	stage    *C.struct_rc_swr
	cpu      int
	capacity int
	closed   bool
	events   *os.File      // the eventfd the thread writes when a post fails
	failed   chan struct{} // closed at the first failure
	watched  chan struct{} // closed when the watcher has returned
	fails    []PostFailure
}

// StartPostThread starts a posting thread pinned to cpu (-1: not pinned) whose queue holds
// at least capacity work requests handed over and not yet posted.
func StartPostThread(cpu, capacity int) (*PostThread, error) {
	if capacity <= 0 {
		return nil, fmt.Errorf("start a posting thread: capacity must be > 0, got %d", capacity)
	}
	if cpu >= C.CPU_SETSIZE {
		return nil, fmt.Errorf("start a posting thread on CPU %d: %w", cpu, syscall.EINVAL)
	}
	size := 1
	for size < capacity {
		size <<= 1
	}
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("start a posting thread: eventfd: %w", err)
	}
	p := &PostThread{cpu: cpu, capacity: size, failed: make(chan struct{}), watched: make(chan struct{})}
	p.events = os.NewFile(uintptr(fd), "posting-thread-events")
	p.t = (*C.struct_rc_pt)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_rc_pt{}))))
	if p.t != nil {
		p.t.q = (*C.struct_rc_pt_ent)(C.calloc(C.size_t(size), C.size_t(unsafe.Sizeof(C.struct_rc_pt_ent{}))))
		p.stage = (*C.struct_rc_swr)(C.calloc(C.size_t(size), C.size_t(unsafe.Sizeof(C.struct_rc_swr{}))))
	}
	if p.t == nil || p.t.q == nil || p.stage == nil {
		p.free()
		return nil, errors.New("start a posting thread: out of memory")
	}
	if rc := C.rc_pt_start(p.t, C.uint64_t(size), C.int(cpu), C.int(fd)); rc != 0 {
		p.free()
		return nil, fmt.Errorf("start a posting thread on CPU %d: %w", cpu, errnoErr(rc))
	}
	live.postThreads.Add(1)
	go p.watch()
	return p, nil
}

// watch closes failed when the thread reports a failed post; it returns when the eventfd
// is closed.
func (p *PostThread) watch() {
	defer close(p.watched)
	var b [8]byte
	if _, err := p.events.Read(b[:]); err == nil {
		close(p.failed)
	}
}

func (p *PostThread) free() {
	if p.t != nil {
		C.free(unsafe.Pointer(p.t.q))
		C.free(unsafe.Pointer(p.t))
		p.t = nil
	}
	C.free(unsafe.Pointer(p.stage))
	p.stage = nil
	_ = p.events.Close()
}

// Post hands wrs, work requests of qp in order, to the thread as one batch; tag names it
// in failures. It does not wait for the post. Work requests handed over and not yet posted
// must never exceed the capacity StartPostThread was given.
func (p *PostThread) Post(qp *QP, tag int, wrs []SendWR) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if len(wrs) == 0 {
		return nil
	}
	if len(wrs) > p.capacity {
		return fmt.Errorf("hand %d work requests to the posting thread on CPU %d: more than its queue of %d", len(wrs), p.cpu, p.capacity)
	}
	dst := unsafe.Slice(p.stage, len(wrs))
	for i, w := range wrs {
		dst[i] = cSendWR(w)
	}
	crossings.Add(1)
	if C.rc_pt_push(p.t, qp.qp, p.stage, C.int(len(wrs)), C.int32_t(tag)) != 0 {
		return fmt.Errorf("hand %d work requests to the posting thread on CPU %d: its queue of %d is full", len(wrs), p.cpu, p.capacity)
	}
	return nil
}

// Failed is closed when a post failed; Close then reports the batches not posted.
func (p *PostThread) Failed() <-chan struct{} { return p.failed }

// Close lets the thread post what it was handed (nothing more after a failed post), stops
// it and returns the batches it did not post. Idempotent: later calls return the same.
func (p *PostThread) Close() []PostFailure {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return p.fails
	}
	p.closed = true
	C.rc_pt_stop(p.t)
	if C.rc_pt_failed(p.t) != 0 {
		p.fails = p.unposted()
	}
	_ = p.events.Close()
	<-p.watched
	p.free()
	live.postThreads.Add(-1)
	return p.fails
}

// unposted reads the batches left in the queue of a thread whose post failed.
func (p *PostThread) unposted() []PostFailure {
	var out []PostFailure
	var first error
	head := uint64(C.rc_pt_head(p.t))
	for i := uint64(p.t.core.fail_at); i < head; {
		e := C.rc_pt_at(p.t, C.uint64_t(i))
		f := PostFailure{Tag: int(e.tag), First: goSendWR(e.w)}
		for ; i < head; i++ {
			f.N++
			if C.rc_pt_at(p.t, C.uint64_t(i)).last != 0 {
				i++
				break
			}
		}
		if first == nil {
			bad := min(int(p.t.core.fail_idx), f.N-1)
			w := goSendWR(C.rc_pt_at(p.t, C.uint64_t(uint64(p.t.core.fail_at)+uint64(bad))).w)
			first = fmt.Errorf("post send work request %d of %d (wr_id=%d %v) on QP %d: %w",
				bad, f.N, w.ID, w.Opcode, uint32(e.qp.qp_num), errnoErr(C.int(p.t.core.rc)))
		}
		f.Err = first
		out = append(out, f)
	}
	return out
}

// cSendWR is w as the C side takes it.
func cSendWR(w SendWR) C.struct_rc_swr {
	var fl C.int32_t
	if w.Signaled {
		fl |= C.IBV_SEND_SIGNALED
	}
	if w.Inline {
		fl |= C.IBV_SEND_INLINE
	}
	if w.Solicited {
		fl |= C.IBV_SEND_SOLICITED
	}
	return C.struct_rc_swr{id: C.uint64_t(w.ID), addr: C.uint64_t(w.Addr), raddr: C.uint64_t(w.RemoteAddr),
		len: C.uint32_t(w.Length), lkey: C.uint32_t(w.LKey), rkey: C.uint32_t(w.RKey), imm: C.uint32_t(w.Imm),
		opcode: C.int32_t(w.Opcode), flags: fl}
}

// goSendWR is cSendWR's inverse.
func goSendWR(w C.struct_rc_swr) SendWR {
	return SendWR{ID: uint64(w.id), Opcode: Opcode(w.opcode), Addr: uint64(w.addr), Length: uint32(w.len), LKey: uint32(w.lkey),
		RemoteAddr: uint64(w.raddr), RKey: uint32(w.rkey), Imm: uint32(w.imm),
		Signaled: w.flags&C.IBV_SEND_SIGNALED != 0, Inline: w.flags&C.IBV_SEND_INLINE != 0, Solicited: w.flags&C.IBV_SEND_SOLICITED != 0}
}
