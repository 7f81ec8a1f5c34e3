// stress drives the posting-thread core (cpost.h) as the bindings do, under ThreadSanitizer:
// per lane a producer hands batches of items over, a posting thread takes them (sleeping on
// the futex or in poll on its kick eventfd) and hands each on through a second ring to a
// checker, which sleeps on the notify eventfd. Lanes stop while busy and some fail a post.
// It exits non-zero when an item is lost, duplicated, out of order or damaged, a failure
// is recorded wrongly, or a sleeper is not woken; TSan exits 66 on any report.
#define _GNU_SOURCE
#include "cpost.h"
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#define QSIZE 64
#define CSIZE 32
#define ITEMS 20000
#define MAXBATCH 16
#define ROUNDS 3
#define LOST_MS 20000 // a sleeper that nothing wakes this long missed its wake-up

struct item {
	uint64_t seq, check;
	int32_t last;
};

struct lane {
	struct cpost core;
	struct item *q;
	struct cpost_ring done; // the posting thread hands each item's seq on to the checker
	uint64_t *c;
	int id, kick_mode;
	uint64_t fail_seq;    // the posting thread fails the post of this item (UINT64_MAX: none)
	uint64_t pushed;      // the producer's: items handed over
	uint64_t batch_of_fail; // the producer's: the first seq of the batch holding fail_seq
	int bad_order;        // the posting thread's: items out of order or damaged
	int sleeps;           // the posting thread's: times it slept in poll (eventfd lanes)
	uint64_t checked;     // the checker's: items seen in order
	int checker_errors;   // the checker's
	_Atomic int finished; // the producer stopped the thread
	pthread_t producer, checker;
};

static uint64_t mix(uint64_t x) {
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ULL;
	return x ^ (x >> 29);
}

static int wait_fd(int fd, const char *who, struct lane *l) {
	struct pollfd p = {fd, POLLIN, 0};
	int r = poll(&p, 1, LOST_MS);
	if (r == 0) fprintf(stderr, "lane %d: %s slept %d ms: a lost wake-up\n", l->id, who, LOST_MS);
	return r;
}

// hand_on gives seq to the checker, waiting for room.
static void hand_on(struct lane *l, uint64_t seq) {
	uint64_t at;
	while (cpost_ring_reserve(&l->done, 1, &at) != 0) sched_yield();
	l->c[cpost_ring_slot(&l->done, at)] = seq;
	cpost_ring_publish(&l->done, at + 1);
	if (cpost_ring_tail(&l->done) == at) cpost_notify(&l->core); // the checker may sleep: it saw none
}

// next is cpost_next for a thread that sleeps in poll on the kick eventfd, as the ofi
// binding's lanes sleep in epoll.
static int next(struct lane *l, uint64_t tail, uint64_t *head) {
	struct cpost *c = &l->core;
	if (!l->kick_mode) return cpost_next(c, tail, head);
	while ((*head = cpost_head(c)) == tail) {
		if (cpost_stopping(c)) return 0;
		cpost_sleep_begin(c);
		if (cpost_has_work(c, tail)) {
			cpost_sleep_cancel(c);
			continue;
		}
		if (wait_fd(c->kick, "the posting thread", l) == 0) l->bad_order++;
		l->sleeps++;
		cpost_sleep_end(c);
	}
	return 1;
}

static void *post_main(struct cpost *c) {
	struct lane *l = cpost_of(c, struct lane, core);
	uint64_t tail = cpost_ring_tail(&c->q), bstart = tail, expect = 0, head;
	while (next(l, tail, &head)) {
		for (; tail != head; cpost_taken(c, ++tail)) {
			struct item *it = &l->q[cpost_ring_slot(&c->q, tail)];
			if (it->seq != expect++ || it->check != mix(it->seq)) l->bad_order++;
			if (it->seq == l->fail_seq) {
				cpost_fail(c, -EIO, bstart, tail);
				return NULL;
			}
			hand_on(l, it->seq);
			if (it->last) bstart = tail + 1;
		}
	}
	return NULL;
}

// take_all moves what the posting thread handed on into the check; returns how many.
static uint64_t take_all(struct lane *l) {
	uint64_t tail = cpost_ring_consumed(&l->done), head = cpost_ring_head(&l->done), n = head - tail;
	for (; tail != head; tail++) {
		if (l->c[cpost_ring_slot(&l->done, tail)] != l->checked) l->checker_errors++;
		l->checked++;
	}
	cpost_ring_release(&l->done, tail);
	return n;
}

static void *check_main(void *arg) {
	struct lane *l = arg;
	for (;;) {
		if (take_all(l) > 0) continue;
		if (atomic_load(&l->finished)) {
			take_all(l);
			return NULL;
		}
		if (wait_fd(l->core.notify, "the checker", l) == 0) l->checker_errors++;
		uint64_t v;
		(void)!read(l->core.notify, &v, sizeof(v));
	}
}

// push hands n items over as one batch, waiting for room; returns 0 when the thread failed.
static int push(struct lane *l, uint64_t n) {
	uint64_t at;
	while (cpost_reserve(&l->core, n, &at) != 0) {
		if (cpost_state(&l->core) == CPOST_FAILED) return 0;
		sched_yield();
	}
	for (uint64_t i = 0; i < n; i++) {
		struct item *it = &l->q[cpost_ring_slot(&l->core.q, at + i)];
		it->seq = l->pushed + i;
		it->check = mix(it->seq);
		it->last = i == n - 1;
	}
	if (l->pushed <= l->fail_seq && l->fail_seq < l->pushed + n) l->batch_of_fail = l->pushed;
	l->pushed += n;
	cpost_publish(&l->core, at + n);
	return 1;
}

static void *produce_main(void *arg) {
	struct lane *l = arg;
	unsigned seed = (unsigned)l->id * 7919u + 1;
	while (l->pushed < ITEMS) {
		uint64_t n = 1 + (uint64_t)rand_r(&seed) % MAXBATCH;
		if (n > ITEMS - l->pushed) n = ITEMS - l->pushed;
		if (!push(l, n)) break;
		if (rand_r(&seed) % 64 == 0) usleep(200); // let the posting thread sleep now and then
	}
	cpost_stop(&l->core); // while it may still be busy: it posts what is queued first
	atomic_store(&l->finished, 1);
	cpost_write(l->core.notify); // the checker's stop
	return NULL;
}

// verify reports what went wrong in lane l; returns the number of problems.
static int verify(struct lane *l) {
	int bad = l->bad_order + l->checker_errors;
	uint64_t want = l->fail_seq < ITEMS ? l->fail_seq : ITEMS;
	if (l->checked != want) bad++, fprintf(stderr, "lane %d: checked %llu items, want %llu\n", l->id, (unsigned long long)l->checked, (unsigned long long)want);
	int failed = cpost_state(&l->core) == CPOST_FAILED;
	if (failed != (l->fail_seq < ITEMS)) bad++, fprintf(stderr, "lane %d: failed %d, want %d\n", l->id, failed, !failed);
	if (failed && (l->core.fail_at != l->batch_of_fail || l->core.fail_at + l->core.fail_idx != l->fail_seq || l->core.rc != -EIO))
		bad++, fprintf(stderr, "lane %d: failure at %llu+%llu rc %lld, want %llu+%llu rc %d\n", l->id,
		               (unsigned long long)l->core.fail_at, (unsigned long long)l->core.fail_idx, (long long)l->core.rc,
		               (unsigned long long)l->batch_of_fail, (unsigned long long)(l->fail_seq - l->batch_of_fail), -EIO);
	if (failed && cpost_head(&l->core) != l->pushed) bad++, fprintf(stderr, "lane %d: head %llu, pushed %llu\n", l->id, (unsigned long long)cpost_head(&l->core), (unsigned long long)l->pushed);
	if (bad) fprintf(stderr, "lane %d: %d out of order or damaged, %d seen wrong by the checker\n", l->id, l->bad_order, l->checker_errors);
	return bad;
}

static void print_ok(const struct lane *l) {
	printf("cpost-stress: ok lane %d (%s, %s, %llu items", l->id, l->kick_mode ? "eventfd" : "futex",
	       l->fail_seq < ITEMS ? "failed post" : "all posted", (unsigned long long)l->checked);
	if (l->kick_mode) printf(", %d sleeps in poll", l->sleeps);
	printf(")\n");
}

static struct lane *lane_new(int id, int kick_mode, uint64_t fail_seq) {
	struct lane *l = calloc(1, sizeof(*l));
	l->q = calloc(QSIZE, sizeof(*l->q));
	l->c = calloc(CSIZE, sizeof(*l->c));
	l->id = id, l->kick_mode = kick_mode, l->fail_seq = fail_seq;
	int kick = kick_mode ? eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) : -1;
	cpost_init(&l->core, QSIZE, -1, kick, eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
	cpost_ring_init(&l->done, CSIZE);
	atomic_init(&l->finished, 0);
	return l;
}

static void lane_free(struct lane *l) {
	if (l->core.kick >= 0) close(l->core.kick);
	close(l->core.notify);
	free(l->q);
	free(l->c);
	free(l);
}

static int round_of(int r) {
	enum { LANES = 4 };
	struct lane *ls[LANES];
	for (int i = 0; i < LANES; i++) {
		uint64_t fail = i >= 2 ? (uint64_t)(ITEMS / 3 + 977 * r + 131 * i) : UINT64_MAX;
		ls[i] = lane_new(r * LANES + i, i % 2, fail);
		int rc = cpost_start(&ls[i]->core, post_main);
		if (rc != 0) {
			fprintf(stderr, "lane %d: start: %s\n", ls[i]->id, strerror(rc));
			return 1;
		}
		pthread_create(&ls[i]->checker, NULL, check_main, ls[i]);
		pthread_create(&ls[i]->producer, NULL, produce_main, ls[i]);
	}
	int bad = 0;
	for (int i = 0; i < LANES; i++) {
		pthread_join(ls[i]->producer, NULL);
		pthread_join(ls[i]->checker, NULL);
		int b = verify(ls[i]);
		if (b == 0) print_ok(ls[i]);
		bad += b;
		lane_free(ls[i]);
	}
	return bad;
}

int main(void) {
	alarm(120); // a lost futex wake-up hangs a posting thread: end the run
	int bad = 0;
	for (int r = 0; r < ROUNDS; r++) bad += round_of(r);
	if (bad) {
		fprintf(stderr, "cpost-stress: %d problems\n", bad);
		return 1;
	}
	printf("cpost-stress: ok\n");
	return 0;
}
