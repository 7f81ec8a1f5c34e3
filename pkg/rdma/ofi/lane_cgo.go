//go:build linux && cgo

package ofi

/*
#cgo CFLAGS: -I${SRCDIR}/../internal/cpost
#cgo LDFLAGS: -lfabric -lpthread
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include "cpost.h"
#include "post.h"

#define LANE_MAXEPS 64
#define LANE_TEXT 128

// One operation handed to a lane, and where it belongs.
struct lane_op {
	struct ofi_op op;
	int32_t ep;   // the endpoint's index in the lane
	int32_t tag;  // the caller's name for the batch
	int32_t nwr;  // the caller's work requests in the batch
	int32_t last; // 1: the batch's last operation
};

// One completion a lane read, for Go.
struct lane_cqe {
	uint64_t ctx, flags, len, data;
	int32_t ep, err, prov_errno, pad;
	char text[LANE_TEXT];
};

// A lane: a thread (the shared core, cpost.h) that posts the operations handed to it on its
// endpoints and reads their completion queues, as one thread per endpoint of a C program
// would. Two single-producer, single-consumer queues: operations (the core's, Go to the
// thread) and completions (cq, the thread to Go). The thread sleeps in epoll on its queues'
// wait fds and the core's kick, which Go writes only when the thread sleeps. The thread
// writes the core's notify (shared by the lanes of one set) when its completion queue
// turns non-empty or a post fails.
struct lane {
	struct cpost core;
	int n, canwait;
	struct fid_ep *ep[LANE_MAXEPS];
	struct fid_cq *cq[LANE_MAXEPS];
	struct fid *cqfid[LANE_MAXEPS];
	struct fid_fabric *fab;
	struct lane_op *q;
	struct lane_cqe *c;
	struct cpost_ring cq_ring;
	int epall, epkick;
	int fail_kind;       // the failed post's operation's kind
	int64_t outstanding; // posted, completion not read (the thread's own)
	int stalled;         // the failure was the stall below (1) or a stop while the provider took nothing (2)
	int64_t stall_ns;    // a provider that takes nothing and completes nothing this long: a gone peer
};

static int64_t lane_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// lane_cqerr reads queue i's error entry into e.
static void lane_cqerr(struct lane *t, int i, struct lane_cqe *e) {
	struct fi_cq_err_entry x;
	memset(&x, 0, sizeof(x));
	memset(e, 0, sizeof(*e));
	e->ep = i;
	ssize_t rc = fi_cq_readerr(t->cq[i], &x, 0);
	if (rc < 0) {
		e->err = (int32_t)-rc;
		snprintf(e->text, LANE_TEXT, "fi_cq_readerr: %s", fi_strerror((int)-rc));
		return;
	}
	e->ctx = (uint64_t)(uintptr_t)x.op_context;
	e->flags = x.flags;
	e->len = x.len;
	e->data = x.data;
	e->err = x.err ? x.err : FI_EOTHER;
	e->prov_errno = x.prov_errno;
	const char *s = fi_cq_strerror(t->cq[i], x.prov_errno, x.err_data, e->text, LANE_TEXT);
	if (s && s != e->text) snprintf(e->text, LANE_TEXT, "%s", s);
}

// lane_read reads each completion queue once into the completion queue's free room and
// publishes what it read; returns the entries read.
static int lane_read(struct lane *t) {
	struct cpost_ring *r = &t->cq_ring;
	uint64_t head = cpost_ring_produced(r), start = head;
	for (int i = 0; i < t->n; i++) {
		uint64_t room = cpost_ring_size(r) - (head - cpost_ring_tail(r));
		if (room == 0) break;
		struct fi_cq_data_entry e[32];
		ssize_t got = fi_cq_read(t->cq[i], e, room < 32 ? room : 32);
		if (got == -FI_EAVAIL) {
			lane_cqerr(t, i, &t->c[cpost_ring_slot(r, head)]);
			head++, t->outstanding--;
			continue;
		}
		for (ssize_t k = 0; k < got; k++) {
			struct lane_cqe *o = &t->c[cpost_ring_slot(r, head++)];
			o->ctx = (uint64_t)(uintptr_t)e[k].op_context;
			o->flags = e[k].flags;
			o->len = e[k].len;
			o->data = e[k].data;
			o->ep = i;
			o->err = 0;
		}
		if (got > 0) t->outstanding -= got;
	}
	if (head == start) return 0;
	cpost_ring_publish(r, head);
	if (cpost_ring_tail(r) == start) cpost_notify(&t->core); // Go may sleep: it saw none
	return (int)(head - start);
}

// lane_fail records the failed post of the operation at queue index i (batch from bstart).
static void lane_fail(struct lane *t, ssize_t rc, uint64_t bstart, uint64_t i) {
	t->fail_kind = t->q[cpost_ring_slot(&t->core.q, i)].op.kind;
	cpost_fail(&t->core, rc, bstart, i);
}

// lane_idle sleeps until an operation is handed over, a completion queue's wait fd wakes
// (only while operations are outstanding, after fi_trywait allows it) or 100 ms pass.
// busy: the provider refused the next post (FI_EAGAIN) and nothing completed, so what is
// queued waits for completions, not for Go.
static void lane_idle(struct lane *t, uint64_t tail, int busy) {
	cpost_sleep_begin(&t->core);
	if (!busy && cpost_has_work(&t->core, tail)) {
		cpost_sleep_cancel(&t->core);
		return;
	}
	int ep = t->epkick;
	if (t->outstanding > 0 || busy) {
		if (!t->canwait || fi_trywait(t->fab, t->cqfid, t->n) != FI_SUCCESS) {
			cpost_sleep_cancel(&t->core);
			if (!t->canwait) {
				struct timespec ts = {0, 20000};
				nanosleep(&ts, NULL);
			}
			return; // read the queues first
		}
		ep = t->epall;
	}
	struct epoll_event ev[8];
	(void)epoll_wait(ep, ev, 8, 100);
	cpost_sleep_end(&t->core);
}

// lane_post posts what is queued from *tail until the provider refuses (*busy, FI_EAGAIN)
// or a post fails (*failed); returns 1 when it posted anything.
static int lane_post(struct lane *t, uint64_t *tail, uint64_t *bstart, int *busy, int *failed) {
	uint64_t head = cpost_head(&t->core);
	int did = 0;
	while (*tail != head) {
		struct lane_op *o = &t->q[cpost_ring_slot(&t->core.q, *tail)];
		ssize_t rc;
		ofi_post(t->ep[o->ep], &o->op, 1, &rc);
		if (rc == -FI_EAGAIN) {
			*busy = 1; // the provider is full: read its completions first
			break;
		}
		if (rc != 0) {
			lane_fail(t, rc, *bstart, *tail);
			*failed = 1;
			break;
		}
		t->outstanding++, did = 1;
		if (o->last) *bstart = *tail + 1;
		cpost_taken(&t->core, ++*tail);
	}
	return did;
}

static void *lane_main(struct cpost *c) {
	struct lane *t = cpost_of(c, struct lane, core);
	uint64_t tail = cpost_ring_tail(&c->q), bstart = tail;
	int failed = 0;
	int64_t last = lane_now();
	for (;;) {
		int did = 0, busy = 0;
		if (!failed) did = lane_post(t, &tail, &bstart, &busy, &failed);
		if (lane_read(t) > 0) did = 1;
		if (did) {
			last = lane_now();
			continue;
		}
		if (cpost_ring_full(&t->cq_ring)) {
			sched_yield(); // Go takes what fills the completion queue
			continue;
		}
		// Stopping, a lane does not wait for a provider that takes nothing:
		// the sender ends (its peer may be gone) and what is left is not posted.
		int stopping = cpost_stopping(c);
		if (busy && (stopping || lane_now() - last > t->stall_ns)) {
			t->stalled = stopping ? 2 : 1;
			lane_fail(t, stopping ? -FI_ECANCELED : -FI_ETIMEDOUT, bstart, tail);
			failed = 1, busy = 0;
		}
		if (!busy && cpost_stopping(c) && (failed || tail == cpost_head(c))) return NULL;
		lane_idle(t, failed ? cpost_head(c) : tail, busy); // a failed lane waits for stop alone
	}
}

// lane_init sets the lane's core: its queues hold size entries; notify is the set's eventfd.
static void lane_init(struct lane *t, uint64_t size, int cpu, int notify) {
	cpost_init(&t->core, size, cpu, -1, notify);
	cpost_ring_init(&t->cq_ring, size);
	t->epall = t->epkick = -1;
}

static int lane_start(struct lane *t) { return cpost_start(&t->core, lane_main); }

// Queues n operations as one batch. Returns 0, or -1 when the queue has no room.
static int lane_push(struct lane *t, const struct lane_op *ops, int n) {
	uint64_t head;
	if (cpost_reserve(&t->core, (uint64_t)n, &head) != 0) return -1;
	for (int i = 0; i < n; i++) t->q[cpost_ring_slot(&t->core.q, head + i)] = ops[i];
	cpost_publish(&t->core, head + n);
	return 0;
}

// Copies up to n completions out; *state is the lane's.
static int lane_take(struct lane *t, struct lane_cqe *out, int n, uint32_t *state) {
	struct cpost_ring *r = &t->cq_ring;
	*state = cpost_state(&t->core);
	uint64_t tail = cpost_ring_consumed(r), head = cpost_ring_head(r);
	int k = 0;
	for (; k < n && tail != head; k++, tail++) out[k] = t->c[cpost_ring_slot(r, tail)];
	cpost_ring_release(r, tail);
	return k;
}

// Lets the thread post what is queued (unless a post failed) and joins it.
static void lane_stop(struct lane *t) { cpost_stop(&t->core); }

static struct fid *lane_fid_cq(struct fid_cq *x) { return &x->fid; }
static struct lane_op *lane_at(struct lane *t, uint64_t i) { return &t->q[cpost_ring_slot(&t->core.q, i)]; }
static uint64_t lane_qhead(struct lane *t) { return cpost_head(&t->core); }
static int lane_failed(struct lane *t) { return cpost_state(&t->core) == CPOST_FAILED; }
static uint64_t lane_qsize(struct lane *t) { return cpost_ring_size(&t->core.q); }

// lane_epoll makes an epoll set of kick and, with all, the completion queues' wait fds.
static int lane_epoll(struct lane *t, const int *fds, int all) {
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0) return -1;
	struct epoll_event ev = {EPOLLIN};
	ev.data.fd = t->core.kick;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, t->core.kick, &ev) != 0) goto fail;
	for (int i = 0; all && i < t->n; i++) {
		ev.data.fd = fds[i];
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) != 0) goto fail;
	}
	return ep;
fail:
	close(ep);
	return -1;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	_ "github.com/ringcap/ringcap/pkg/rdma/internal/cpost" // cpost.h, the lanes' core
)

// laneStall is how long a lane whose provider takes no operation (FI_EAGAIN)
// and completes none waits before it fails the post: a peer that is gone.
var laneStall = 30 * time.Second

// LaneSet is threads of their own, outside the Go scheduler, each posting the operations
// handed to it on its endpoints and reading their completion queues, as a C program with a
// thread per endpoint does. ofi_rxm progresses an endpoint's protocol only while its
// completion queue is read, so the thread that posts is the one that keeps its endpoints
// moving; Go takes the completions they read (Take) and sleeps until one is there (Wait).
//
// Why C threads: a goroutine that posts and polls in a loop spends nearly all its time in
// cgo calls, and the Go runtime's sysmon then keeps waking to take its P away (see
// verbs.PostThread).
//
// Post, Take and Wait are for one goroutine at a time. While the set runs, nothing else may
// post on its endpoints or read their completion queues. Stop it before closing them.
type LaneSet struct {
	mu      sync.Mutex
	lanes   []*C.struct_lane
	cfgs    []LaneConfig
	stage   []C.struct_lane_op
	cqes    *[readChunk]C.struct_lane_cqe
	notify  *os.File
	raw     syscall.RawConn
	stopped bool
	closed  bool
	fails   []LaneFailure
}

// StartLanes starts one thread per lane; each holds at least capacity operations handed
// over and not yet posted, and as many completions read and not yet taken.
func (d *Domain) StartLanes(cfgs []LaneConfig, capacity int) (*LaneSet, error) {
	if len(cfgs) == 0 || capacity <= 0 {
		return nil, fmt.Errorf("start %d lanes holding %d operations: want one or more of each", len(cfgs), capacity)
	}
	size := 1
	for size < capacity {
		size <<= 1
	}
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("start lanes: eventfd: %w", err)
	}
	s := &LaneSet{cfgs: cfgs, notify: os.NewFile(uintptr(fd), "ofi-lanes"), cqes: new([readChunk]C.struct_lane_cqe)}
	if s.raw, err = s.notify.SyscallConn(); err != nil {
		_ = s.notify.Close()
		return nil, fmt.Errorf("start lanes: %w", err)
	}
	for i, c := range cfgs {
		t, err := d.startLane(c, size, fd)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("start lane %d: %w", i, err)
		}
		s.lanes = append(s.lanes, t)
	}
	return s, nil
}

func (d *Domain) startLane(c LaneConfig, size, notify int) (*C.struct_lane, error) {
	if len(c.Endpoints) == 0 || len(c.Endpoints) != len(c.CQs) || len(c.Endpoints) > C.LANE_MAXEPS {
		return nil, fmt.Errorf("%d endpoints and %d completion queues: want 1..%d of each, as many", len(c.Endpoints), len(c.CQs), C.LANE_MAXEPS)
	}
	if c.CPU >= C.CPU_SETSIZE {
		return nil, fmt.Errorf("CPU %d: %w", c.CPU, syscall.EINVAL)
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	t := (*C.struct_lane)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_lane{}))))
	if t == nil {
		return nil, errors.New("out of memory")
	}
	C.lane_init(t, C.uint64_t(size), C.int(c.CPU), C.int(notify))
	ok := false
	defer func() {
		if !ok {
			freeLane(t)
		}
	}()
	t.q = (*C.struct_lane_op)(C.calloc(C.size_t(size), C.size_t(unsafe.Sizeof(C.struct_lane_op{}))))
	t.c = (*C.struct_lane_cqe)(C.calloc(C.size_t(size), C.size_t(unsafe.Sizeof(C.struct_lane_cqe{}))))
	if t.q == nil || t.c == nil {
		return nil, errors.New("out of memory")
	}
	t.fab = d.fabric
	t.stall_ns = C.int64_t(laneStall.Nanoseconds())
	fds, err := setLaneQueues(t, c)
	if err != nil {
		return nil, err
	}
	kick, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	t.core.kick = C.int(kick)
	if t.epkick = C.lane_epoll(t, &fds[0], 0); t.epkick < 0 {
		return nil, errors.New("epoll set of the lane's wake-up fd: epoll_create1 or epoll_ctl failed")
	}
	if t.epall = C.lane_epoll(t, &fds[0], t.canwait); t.epall < 0 {
		return nil, errors.New("epoll set of the completion queues' wait fds: epoll_create1 or epoll_ctl failed")
	}
	if rc := C.lane_start(t); rc != 0 {
		return nil, fmt.Errorf("on CPU %d: %w", c.CPU, syscall.Errno(rc))
	}
	live.lanes.Add(1)
	ok = true
	return t, nil
}

// setLaneQueues gives lane t the endpoints of c and their completion
// queues; it returns the queues' wait fds (canwait: all have one).
func setLaneQueues(t *C.struct_lane, c LaneConfig) ([]C.int, error) {
	fds, canWait := make([]C.int, len(c.CQs)), true
	for i, e := range c.Endpoints {
		if e == nil || e.ep == nil || c.CQs[i] == nil || c.CQs[i].cq == nil {
			return nil, fmt.Errorf("endpoint %d: %w", i, ErrClosed)
		}
		t.ep[i], t.cq[i], t.cqfid[i] = e.ep, c.CQs[i].cq, C.lane_fid_cq(c.CQs[i].cq)
		fd, ok := c.CQs[i].WaitFD()
		canWait = canWait && ok
		fds[i] = C.int(fd)
	}
	t.n = C.int(len(c.Endpoints))
	if canWait {
		t.canwait = 1
	}
	return fds, nil
}

func freeLane(t *C.struct_lane) {
	for _, fd := range []C.int{t.core.kick, t.epall, t.epkick} {
		if fd >= 0 {
			_ = unix.Close(int(fd))
		}
	}
	C.free(unsafe.Pointer(t.q))
	C.free(unsafe.Pointer(t.c))
	C.free(unsafe.Pointer(t))
}

// Lanes is the number of lanes.
func (s *LaneSet) Lanes() int { return len(s.lanes) }

// Post hands ops, on endpoint ep of lane l in order, to its thread as one batch; tag and
// wrs name the batch in failures. It does not wait for the post. Operations handed over
// and not yet posted must never exceed the capacity StartLanes was given.
func (s *LaneSet) Post(l, ep, tag, wrs int, ops []Op) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return fmt.Errorf("hand %d operations to lane %d: %w", len(ops), l, ErrClosed)
	}
	if len(ops) == 0 {
		return nil
	}
	if l < 0 || l >= len(s.lanes) || ep < 0 || ep >= len(s.cfgs[l].Endpoints) {
		return fmt.Errorf("hand operations to endpoint %d of lane %d: no such endpoint", ep, l)
	}
	s.stage = s.stage[:0]
	e := s.cfgs[l].Endpoints[ep]
	for i, o := range ops {
		op, err := e.cOp(o)
		if err != nil {
			return fmt.Errorf("hand operation %d to lane %d: %w", i, l, err)
		}
		s.stage = append(s.stage, C.struct_lane_op{op: op, ep: C.int32_t(ep), tag: C.int32_t(tag), nwr: C.int32_t(wrs)})
	}
	s.stage[len(s.stage)-1].last = 1
	crossings.Add(1)
	if C.lane_push(s.lanes[l], &s.stage[0], C.int(len(s.stage))) != 0 {
		return fmt.Errorf("hand %d operations to lane %d: its queue of %d is full", len(ops), l, int(C.lane_qsize(s.lanes[l])))
	}
	return nil
}

// Take moves the completions lane l read into out; failed reports that one of its posts
// failed (Stop then says which).
func (s *LaneSet) Take(l int, out []LaneCompletion) (n int, failed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, false, ErrClosed
	}
	var state C.uint32_t
	crossings.Add(1)
	k := int(C.lane_take(s.lanes[l], &s.cqes[0], C.int(min(len(out), readChunk)), &state))
	for i := range k {
		out[i] = laneCompletion(&s.cqes[i])
	}
	return k, state == C.CPOST_FAILED, nil
}

func laneCompletion(e *C.struct_lane_cqe) LaneCompletion {
	c := Completion{ID: uint64(e.ctx), Flags: Caps(e.flags), Len: uint64(e.len)}
	if uint64(e.flags)&flagRemoteCQData != 0 {
		c.Data, c.HasData = uint64(e.data), true
	}
	if e.err != 0 {
		c.Err = &CompletionError{ID: c.ID, Flags: c.Flags, Errno: int(e.err), ProvErrno: int(e.prov_errno), Text: C.GoString(&e.text[0])}
	}
	return LaneCompletion{Completion: c, Ep: int(e.ep)}
}

// Wait sleeps until a lane may have read completions or failed a post (the caller then
// takes from every lane), ctx is done or the set is closed. It may return early.
func (s *LaneSet) Wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_ = s.notify.SetReadDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { _ = s.notify.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var b [8]byte
	var rerr error
	err := s.raw.Read(func(fd uintptr) bool {
		_, rerr = unix.Read(int(fd), b[:])
		return rerr != unix.EAGAIN
	})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return ctx.Err()
	case errors.Is(err, os.ErrClosed):
		return ErrClosed
	case err != nil:
		return fmt.Errorf("wait for the lanes: %w", err)
	case rerr != nil:
		return fmt.Errorf("wait for the lanes: read eventfd: %w", rerr)
	}
	return nil
}

// Stop lets each thread post what it was handed and the provider takes at once (nothing
// after a failed post, nor what it refuses with FI_EAGAIN once stopped) and joins it; it returns the batches not posted. What the threads read stays for Take, and
// the completions of operations still outstanding are the caller's to read from their
// queues. Idempotent: later calls return the same.
func (s *LaneSet) Stop() []LaneFailure {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return s.fails
	}
	s.stopped = true
	for i, t := range s.lanes {
		C.lane_stop(t)
		if C.lane_failed(t) != 0 {
			s.fails = append(s.fails, s.unposted(i, t)...)
		}
	}
	return s.fails
}

// unposted reads the batches left in the queue of lane i, whose post failed.
func (s *LaneSet) unposted(i int, t *C.struct_lane) []LaneFailure {
	var out []LaneFailure
	head := uint64(C.lane_qhead(t))
	for k := uint64(t.core.fail_at); k < head; {
		e := C.lane_at(t, C.uint64_t(k))
		f := LaneFailure{Lane: i, Tag: int(e.tag), WRs: int(e.nwr)}
		for ; k < head; k++ {
			f.Ops++
			if C.lane_at(t, C.uint64_t(k)).last != 0 {
				k++
				break
			}
		}
		if len(out) == 0 {
			f.Ops -= int(t.core.fail_idx) // the first ones of the failed batch went out
			why := callErr(opCalls[int(t.fail_kind)], C.int(t.core.rc))
			switch t.stalled {
			case 1:
				why = fmt.Errorf("%s: the provider took no operation (FI_EAGAIN) and completed none for %v", opCalls[int(t.fail_kind)], laneStall)
			case 2:
				why = fmt.Errorf("%s: the provider took no more operations (FI_EAGAIN) when the lane was stopped", opCalls[int(t.fail_kind)])
			}
			f.Err = fmt.Errorf("post operation %d of a batch of %d on endpoint %d of lane %d: %w",
				int(t.core.fail_idx), f.Ops+int(t.core.fail_idx), int(e.ep), i, why)
		} else {
			f.Err = fmt.Errorf("not posted: an earlier post on lane %d failed", i)
		}
		out = append(out, f)
	}
	return out
}

// Close stops the threads (Stop) and frees the set. Idempotent.
func (s *LaneSet) Close() {
	s.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	for _, t := range s.lanes {
		freeLane(t)
		live.lanes.Add(-1)
	}
	s.lanes = nil
	_ = s.notify.Close()
}
