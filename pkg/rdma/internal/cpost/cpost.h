// The core of a posting thread, shared by the cgo bindings (pkg/rdma/verbs, pkg/rdma/ofi):
// a single-producer, single-consumer queue of work, the thread's start, sleep and wake-up,
// its stop and its failure record. What a post is (ibv_post_send, fi_sendmsg) stays in
// each binding: it embeds struct cpost in its own and passes its loop to cpost_start.
//
// Include it after defining _GNU_SOURCE (before any other include). Header-only: every
// function is static inline.
#ifndef RINGCAP_CPOST_H
#define RINGCAP_CPOST_H

#ifndef _GNU_SOURCE
#error "cpost.h: define _GNU_SOURCE before the first include"
#endif

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

// The struct of type that holds p as its member.
#define cpost_of(p, type, member) ((type *)(void *)((char *)(p) - offsetof(type, member)))

// An index ring of a power-of-two size: one producer publishes head, one consumer tail.
// The entries live in an array of the user's, indexed by cpost_ring_slot; the producer
// writes them before it publishes head, the consumer reads them before it publishes tail.
struct cpost_ring {
	uint64_t mask;
	_Atomic uint64_t head, tail;
};

static inline void cpost_ring_init(struct cpost_ring *r, uint64_t size) {
	r->mask = size - 1;
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
}

static inline uint64_t cpost_ring_size(const struct cpost_ring *r) { return r->mask + 1; }
static inline uint64_t cpost_ring_slot(const struct cpost_ring *r, uint64_t i) { return i & r->mask; }
static inline uint64_t cpost_ring_head(struct cpost_ring *r) { return atomic_load(&r->head); }
static inline uint64_t cpost_ring_tail(struct cpost_ring *r) { return atomic_load(&r->tail); }

// Producer: its own head; consumer: its own tail.
static inline uint64_t cpost_ring_produced(struct cpost_ring *r) { return atomic_load_explicit(&r->head, memory_order_relaxed); }
static inline uint64_t cpost_ring_consumed(struct cpost_ring *r) { return atomic_load_explicit(&r->tail, memory_order_relaxed); }

// Producer: 0 and *at, the index of the first of n free entries, or -1 when n do not fit.
static inline int cpost_ring_reserve(struct cpost_ring *r, uint64_t n, uint64_t *at) {
	uint64_t head = cpost_ring_produced(r);
	if (head + n - atomic_load(&r->tail) > r->mask + 1) return -1;
	*at = head;
	return 0;
}

// Producer: the entries before head are written.
static inline void cpost_ring_publish(struct cpost_ring *r, uint64_t head) { atomic_store(&r->head, head); }

// Consumer: the entries before tail are read; their room is the producer's again.
static inline void cpost_ring_release(struct cpost_ring *r, uint64_t tail) { atomic_store(&r->tail, tail); }

// Producer: the ring has no free entry.
static inline int cpost_ring_full(struct cpost_ring *r) {
	return atomic_load(&r->head) - atomic_load(&r->tail) > r->mask;
}

enum { CPOST_STARTING, CPOST_RUNNING, CPOST_NOSTART, CPOST_FAILED };

// A posting thread. The producer hands work over through q and wakes the thread only when
// it sleeps (sleeping): with a futex wake on seq, or by writing kick when the thread sleeps
// in epoll on it (kick >= 0). The thread writes notify (an eventfd, -1: none) to tell the
// producer's side that it failed, and records the failure (rc, fail_at, fail_idx).
struct cpost {
	struct cpost_ring q;
	_Atomic uint32_t state, seq;
	_Atomic int32_t sleeping, stop;
	int cpu;           // the CPU the thread runs on, -1: not pinned
	int kick, notify;  // eventfds, -1: none
	int err;           // errno of a start that failed
	int64_t rc;        // the failed post's return code
	uint64_t fail_at;  // queue index of the first entry of the batch that failed
	uint64_t fail_idx; // index in that batch of the first entry not posted
	void *(*run)(struct cpost *);
	pthread_t th;
};

// Sets the fields before cpost_start: queue size (a power of two), CPU (-1: any), kick and
// notify eventfds (-1: none).
static inline void cpost_init(struct cpost *t, uint64_t size, int cpu, int kick, int notify) {
	cpost_ring_init(&t->q, size);
	atomic_init(&t->state, CPOST_STARTING);
	atomic_init(&t->seq, 0);
	atomic_init(&t->sleeping, 0);
	atomic_init(&t->stop, 0);
	t->cpu = cpu, t->kick = kick, t->notify = notify, t->err = 0, t->rc = 0;
	t->fail_at = 0, t->fail_idx = 0;
}

static inline long cpost_futex(_Atomic uint32_t *a, int op, uint32_t v) {
	return syscall(SYS_futex, (uint32_t *)a, op, v, NULL, NULL, 0);
}

static inline void cpost_write(int fd) {
	uint64_t one = 1;
	(void)!write(fd, &one, sizeof(one));
}

static inline uint32_t cpost_state(struct cpost *t) { return atomic_load(&t->state); }
static inline int cpost_stopping(struct cpost *t) { return atomic_load(&t->stop); }
static inline uint64_t cpost_head(struct cpost *t) { return cpost_ring_head(&t->q); }

static inline void cpost_set_state(struct cpost *t, uint32_t s) {
	atomic_store(&t->state, s);
	cpost_futex(&t->state, FUTEX_WAKE_PRIVATE, 1);
}

// Thread: tells the producer's side (notify).
static inline void cpost_notify(struct cpost *t) {
	if (t->notify >= 0) cpost_write(t->notify);
}

// Thread: the post of queue entry i failed with rc (its batch began at bstart). The thread
// posts nothing more: what is queued from fail_at on stays for the producer to report.
static inline void cpost_fail(struct cpost *t, int64_t rc, uint64_t bstart, uint64_t i) {
	t->rc = rc;
	t->fail_at = bstart;
	t->fail_idx = i - bstart;
	cpost_set_state(t, CPOST_FAILED);
	cpost_notify(t);
}

static inline void *cpost_main(void *arg) {
	struct cpost *t = arg;
	if (t->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(t->cpu, &set);
		int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
		if (rc != 0) {
			t->err = rc;
			cpost_set_state(t, CPOST_NOSTART);
			return NULL;
		}
	}
	cpost_set_state(t, CPOST_RUNNING);
	return t->run(t);
}

// Starts the thread running run (signals blocked: they go to the process's other threads)
// and waits until it runs on its CPU or could not. Returns 0 or an errno value.
static inline int cpost_start(struct cpost *t, void *(*run)(struct cpost *)) {
	t->run = run;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&t->th, NULL, cpost_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) return rc;
	uint32_t s;
	while ((s = atomic_load(&t->state)) == CPOST_STARTING)
		cpost_futex(&t->state, FUTEX_WAIT_PRIVATE, CPOST_STARTING);
	if (s == CPOST_NOSTART) {
		pthread_join(t->th, NULL);
		return t->err;
	}
	return 0;
}

static inline void cpost_wake(struct cpost *t) {
	if (t->kick >= 0) cpost_write(t->kick);
	else cpost_futex(&t->seq, FUTEX_WAKE_PRIVATE, 1);
}

// Producer: 0 and *at, where to write n entries, or -1 when the queue has no room.
static inline int cpost_reserve(struct cpost *t, uint64_t n, uint64_t *at) {
	return cpost_ring_reserve(&t->q, n, at);
}

// Producer: hands the entries before head over and wakes the thread if it sleeps.
static inline void cpost_publish(struct cpost *t, uint64_t head) {
	cpost_ring_publish(&t->q, head);
	atomic_fetch_add(&t->seq, 1);
	if (atomic_load(&t->sleeping)) cpost_wake(t);
}

// Lets the thread finish (run returns once stop is set and it has posted what it could)
// and joins it.
static inline void cpost_stop(struct cpost *t) {
	atomic_store(&t->stop, 1);
	atomic_fetch_add(&t->seq, 1);
	cpost_wake(t);
	pthread_join(t->th, NULL);
}

// Thread, sleeping in epoll on kick: announces the sleep; then the thread checks
// cpost_has_work (unless it waits for something else) and, after the sleep, calls
// cpost_sleep_end. A producer that publishes after the announcement writes kick.
static inline void cpost_sleep_begin(struct cpost *t) { atomic_store(&t->sleeping, 1); }

// Thread: work was handed over past tail, or stop was asked.
static inline int cpost_has_work(struct cpost *t, uint64_t tail) {
	return cpost_ring_head(&t->q) != tail || atomic_load(&t->stop);
}

// Thread: withdraws the announcement without sleeping.
static inline void cpost_sleep_cancel(struct cpost *t) { atomic_store(&t->sleeping, 0); }

// Thread: after the sleep in epoll, drains kick and withdraws the announcement.
static inline void cpost_sleep_end(struct cpost *t) {
	if (t->kick >= 0) {
		uint64_t v;
		(void)!read(t->kick, &v, sizeof(v));
	}
	atomic_store(&t->sleeping, 0);
}

// Thread, woken by the futex: sleeps until work is handed over past tail or stop is asked
// (it may return early).
static inline void cpost_sleep(struct cpost *t, uint64_t tail) {
	uint32_t s = atomic_load(&t->seq);
	atomic_store(&t->sleeping, 1);
	if (!cpost_has_work(t, tail)) cpost_futex(&t->seq, FUTEX_WAIT_PRIVATE, s);
	atomic_store(&t->sleeping, 0);
}

// Thread, woken by the futex: waits for work past tail; 1 and *head, the queue's head, when
// there is some, 0 when there is none and stop was asked.
static inline int cpost_next(struct cpost *t, uint64_t tail, uint64_t *head) {
	while ((*head = cpost_ring_head(&t->q)) == tail) {
		if (atomic_load(&t->stop)) return 0;
		cpost_sleep(t, tail);
	}
	return 1;
}

// Thread: publishes that the entries before tail are taken (posted).
static inline void cpost_taken(struct cpost *t, uint64_t tail) { cpost_ring_release(&t->q, tail); }

#endif
