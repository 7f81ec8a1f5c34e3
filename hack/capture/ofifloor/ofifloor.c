/* ofifloor: the floor of ringcap's write mode over libfabric, for `make bench-ofi`'s VM half
 * (hack/capture/bench-ofi-vm.sh). A receiver registers one buffer of NBLOCKS blocks (ringcap's
 * ring) and a writer fills it with what ringcap's write mode puts on the wire and nothing
 * else: FI_EP_RDM endpoints (EPS of them, endpoint i talking to the peer's endpoint i), each
 * block whole on one endpoint as MSG-byte writes, the block's last write carrying remote CQ
 * data (its block number; fi_writedata), at most DEPTH writes in flight per endpoint, each
 * endpoint with a completion queue of its own, the blocks going round the buffer without
 * credits and without a reader. With -L the last write goes plain and a 4-byte message carries
 * the block's length with the CQ data (ringcap's length messages, its path where
 * cq_data_size < 8: verbs;ofi_rxm, efa).
 *
 * The provider's mode and MR mode bits are honoured as it asks: FI_RX_CQ_DATA (a receive
 * posted for every immediate), FI_MR_LOCAL (descriptors on every post), FI_MR_VIRT_ADDR
 * (virtual addresses, else offsets), FI_MR_PROV_KEY (the provider's key). Like ringcap it
 * sets libfabric's environment as ringcap's pkg/rdma/ofi/env.go does, unless the environment
 * sets it: FI_UNIVERSE_SIZE=16 (ofi_rxm's core CQ must fit rxe), FI_OFI_RXM_MSG_RX_SIZE=128
 * and FI_OFI_RXM_BUFFER_SIZE=1024 (ofi_rxm's bounce buffers and their pools).
 * Address, key and endpoint names go over a TCP connection (receiver listens, writer
 * connects), and so do the writer's count of blocks and the receiver's confirmation.
 *
 *   ofifloor recv -p PROV [-d DOMAIN] [-a NODE] -l HOST:PORT [-e EPS] [-m MSG] [-b BLOCK] [-n NBLOCKS] [-r RXDEPTH] [-L] [-w ...]
 *   ofifloor send -p PROV [-d DOMAIN] [-a NODE] -c HOST:PORT [-q DEPTH] [-t SECONDS | -B BYTES] [-w wait|spin|sleep] [-T]
 *
 * The writer takes EPS, MSG, BLOCK, NBLOCKS and -L from the receiver. -w is how either waits
 * when it has nothing to do: on the completion queues' wait fds (FI_WAIT_FD) after fi_trywait
 * (wait, the default; ringcap's receiver waits so), fi_cq_read in a loop (spin), or
 * fi_cq_read with 20 us sleeps (sleep, as ringcap's sender does). The writer drives all its
 * endpoints from one thread (as ringcap's adapter, whose libfabric calls one mutex serialises),
 * or with -T each from a thread of its own (asking for FI_THREAD_SAFE). Both print one line:
 *   ofifloor send: bytes=B seconds=S gbps=G user=U sys=S blocks=K complete=true ...
 * with seconds from the first post to the last completion, user/sys the process's CPU time
 * (getrusage) over its whole life and stream_user/stream_sys that of the stream alone. The receiver checks that every block number arrived
 * exactly once, in order on each endpoint. Errors name the call and fi_strerror's text. */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define API FI_VERSION(1, 17)
#define MAXEPS 64
#define NAMEMAX 256
#define MAGIC 0x6f666966u /* "ofif" */
#define CQBATCH 64
#define LENBYTES 4

enum waitmode { WAIT_FD, WAIT_SPIN, WAIT_SLEEP };

struct opts {
	const char *role, *prov, *dom, *node, *addr;
	int eps, depth, rxdepth, lenmsg, threads;
	uint64_t msg, block, nblocks, bytes;
	double secs;
	enum waitmode wait;
};

/* What the receiver tells the writer (host byte order: both ends run on one machine). */
struct offer {
	uint32_t magic, eps, lenmsg, namelen[MAXEPS];
	uint64_t msg, block, nblocks, raddr, key;
	uint8_t names[MAXEPS][NAMEMAX];
};

struct fab {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq[MAXEPS]; /* one per endpoint, as ringcap has */
	int fd[MAXEPS];            /* their wait fds (-w wait) */
	struct fid_ep *ep[MAXEPS];
	fi_addr_t peer[MAXEPS];
	size_t namelen[MAXEPS];
	uint8_t name[MAXEPS][NAMEMAX];
	int n;
};

static const char *role = "ofifloor";

static void fail(const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "ofifloor %s: ", role);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* check ends the program when a libfabric call failed, naming it and fi_strerror's text. */
static void check(long rc, const char *call, const char *what) {
	if (rc < 0) fail("%s (%s): %s (errno %ld)", what, call, fi_strerror((int)-rc), -rc);
}

static double now(clockid_t c) {
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static double tv(struct timeval t) { return t.tv_sec + t.tv_usec / 1e6; }

/* ---- the fabric ---- */

static struct fi_info *discover(const struct opts *o) {
	struct fi_info *h = fi_allocinfo(), *info = NULL;
	if (!h) fail("fi_allocinfo: out of memory");
	h->caps = FI_MSG | FI_RMA;
	h->mode = FI_RX_CQ_DATA;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	uint64_t order = FI_ORDER_WAW | (o->lenmsg ? FI_ORDER_SAW : 0);
	h->tx_attr->msg_order = h->rx_attr->msg_order = order;
	h->fabric_attr->prov_name = strdup(o->prov);
	if (o->dom) h->domain_attr->name = strdup(o->dom);
	if (o->threads) h->domain_attr->threading = FI_THREAD_SAFE; /* the endpoints' threads call at once */
	int rc = fi_getinfo(API, o->node, NULL, o->node ? FI_SOURCE : 0, h, &info);
	fi_freeinfo(h);
	if (rc) fail("discover provider \"%s\" domain \"%s\" node \"%s\" (fi_getinfo): %s (errno %d)", o->prov,
	             o->dom ? o->dom : "", o->node ? o->node : "", fi_strerror(-rc), -rc);
	if (info->domain_attr->cq_data_size < 4) fail("provider %s has %zu bytes of remote CQ data, 4 needed",
	                                              info->fabric_attr->prov_name, info->domain_attr->cq_data_size);
	return info;
}

static void open_ep(struct fab *f, int i) {
	check(fi_endpoint(f->domain, f->info, &f->ep[i], NULL), "fi_endpoint", "open endpoint");
	check(fi_ep_bind(f->ep[i], &f->av->fid, 0), "fi_ep_bind", "bind the address vector");
	check(fi_ep_bind(f->ep[i], &f->cq[i]->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind", "bind the completion queue");
	check(fi_enable(f->ep[i]), "fi_enable", "enable endpoint");
	f->namelen[i] = NAMEMAX;
	check(fi_getname(&f->ep[i]->fid, f->name[i], &f->namelen[i]), "fi_getname", "endpoint name");
}

static void open_fab(struct fab *f, const struct opts *o, int eps, int depth) {
	memset(f, 0, sizeof(*f));
	f->info = discover(o);
	f->n = eps;
	check(fi_fabric(f->info->fabric_attr, &f->fabric, NULL), "fi_fabric", "open fabric");
	check(fi_domain(f->fabric, f->info, &f->domain, NULL), "fi_domain", "open domain");
	struct fi_av_attr av = {.type = FI_AV_TABLE, .count = (size_t)eps};
	check(fi_av_open(f->domain, &av, &f->av, NULL), "fi_av_open", "open address vector");
	struct fi_cq_attr cq = {.size = (size_t)(2 * depth < 256 ? 256 : 2 * depth),
	                        .format = FI_CQ_FORMAT_DATA,
	                        .wait_obj = o->wait == WAIT_FD ? FI_WAIT_FD : FI_WAIT_NONE};
	for (int i = 0; i < eps; i++) {
		check(fi_cq_open(f->domain, &cq, &f->cq[i], NULL), "fi_cq_open", "open completion queue");
		if (o->wait == WAIT_FD) check(fi_control(&f->cq[i]->fid, FI_GETWAIT, &f->fd[i]), "fi_control(FI_GETWAIT)", "completion queue's wait fd");
		open_ep(f, i);
	}
}

static void connect_peers(struct fab *f, uint8_t names[][NAMEMAX]) {
	for (int i = 0; i < f->n; i++) {
		int rc = fi_av_insert(f->av, names[i], 1, &f->peer[i], 0, NULL);
		if (rc != 1) check(rc < 0 ? rc : -FI_EINVAL, "fi_av_insert", "insert the peer's endpoint address");
	}
}

static struct fid_mr *reg(struct fab *f, void *buf, size_t len, uint64_t access) {
	static uint64_t next_key = 1; /* the keys this process asks for, where the provider takes ours */
	struct fid_mr *mr;
	uint64_t key = (f->info->domain_attr->mr_mode & FI_MR_PROV_KEY) ? 0 : next_key++;
	check(fi_mr_reg(f->domain, buf, len, access, 0, key, 0, &mr, NULL), "fi_mr_reg", "register memory");
	return mr;
}

static void *map(size_t n) {
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) fail("mmap %zu bytes: %s", n, strerror(errno));
	return p;
}

/* drain reads the completion queue until 256 reads in a row return nothing: ofi_rxm handles
 * its peer's internal messages only while the queue is read, and must not close with one
 * queued (the reason ringcap drains too). */
static void drain(struct fab *f) {
	struct fi_cq_data_entry e[CQBATCH];
	for (int k = 0; k < f->n; k++) {
		for (int quiet = 0, i = 0; quiet < 256 && i < 16384; i++) {
			ssize_t n = fi_cq_read(f->cq[k], e, CQBATCH);
			quiet = n > 0 ? 0 : quiet + 1;
			if (n == -FI_EAVAIL) {
				struct fi_cq_err_entry err = {0};
				fi_cq_readerr(f->cq[k], &err, 0);
			}
		}
	}
}

static void close_fab(struct fab *f) {
	drain(f);
	for (int i = 0; i < f->n; i++) check(fi_close(&f->ep[i]->fid), "fi_close", "close endpoint");
	for (int i = 0; i < f->n; i++) check(fi_close(&f->cq[i]->fid), "fi_close", "close completion queue");
	check(fi_close(&f->av->fid), "fi_close", "close address vector");
}

static void close_domain(struct fab *f) {
	check(fi_close(&f->domain->fid), "fi_close", "close domain");
	check(fi_close(&f->fabric->fid), "fi_close", "close fabric");
	fi_freeinfo(f->info);
}

/* cqerr reads the error entry behind -FI_EAVAIL and ends the program with its text. */
static void cqerr(struct fid_cq *cq, const char *what) {
	struct fi_cq_err_entry e = {0};
	char buf[256] = "";
	check(fi_cq_readerr(cq, &e, 0), "fi_cq_readerr", what);
	const char *s = fi_cq_strerror(cq, e.prov_errno, e.err_data, buf, sizeof(buf));
	fail("%s: completion error: %s (errno %d), provider: %s (%d)", what, fi_strerror(e.err), e.err, s ? s : buf,
	     e.prov_errno);
}

/* handler takes endpoint ep's n completions. */
typedef void handler(void *arg, int ep, struct fi_cq_data_entry *e, ssize_t n);

/* readall reads every endpoint's completion queue once (fi_cq_read, which also progresses
 * the provider) and hands what it got to fn; returns how many. */
static ssize_t readone(struct fab *f, int i, handler *fn, void *arg, const char *what) {
	struct fi_cq_data_entry e[CQBATCH];
	ssize_t n = fi_cq_read(f->cq[i], e, CQBATCH);
	if (n == -FI_EAVAIL) cqerr(f->cq[i], what);
	if (n == -FI_EAGAIN) return 0;
	check(n, "fi_cq_read", what);
	fn(arg, i, e, n);
	return n;
}

static ssize_t readall(struct fab *f, handler *fn, void *arg, const char *what) {
	ssize_t total = 0;
	for (int i = 0; i < f->n; i++) total += readone(f, i, fn, arg, what);
	return total;
}

/* idle waits for completions on queues lo..lo+n-1 as -w says: on their wait fds after
 * fi_trywait says nothing is ready (at most ms), 20 us (sleep), or not at all (spin). */
static void idle(struct fab *f, enum waitmode w, int ms, int lo, int n) {
	if (w == WAIT_SLEEP) usleep(20);
	if (w != WAIT_FD) return;
	struct fid *fids[MAXEPS];
	struct pollfd p[MAXEPS];
	for (int i = 0; i < n; i++) fids[i] = &f->cq[lo + i]->fid, p[i] = (struct pollfd){.fd = f->fd[lo + i], .events = POLLIN};
	int rc = fi_trywait(f->fabric, fids, n);
	if (rc == -FI_EAGAIN) return;
	check(rc, "fi_trywait", "wait for completions");
	if (poll(p, (nfds_t)n, ms) < 0 && errno != EINTR) fail("wait for completions: poll: %s", strerror(errno));
}

/* ---- the control connection ---- */

static int tcp(const char *hostport, int listening) {
	char host[256];
	snprintf(host, sizeof(host), "%s", hostport);
	char *port = strrchr(host, ':');
	if (!port) fail("address %s: want HOST:PORT", hostport);
	*port++ = 0;
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	int rc = getaddrinfo(host, port, &hints, &ai);
	if (rc) fail("resolve %s: %s", hostport, gai_strerror(rc));
	int s = socket(ai->ai_family, ai->ai_socktype, 0), one = 1;
	if (s < 0) fail("socket: %s", strerror(errno));
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (listening) {
		if (bind(s, ai->ai_addr, ai->ai_addrlen) || listen(s, 1)) fail("listen on %s: %s", hostport, strerror(errno));
		fprintf(stderr, "ofifloor recv: listening on %s\n", hostport);
		int c = accept(s, NULL, NULL);
		if (c < 0) fail("accept on %s: %s", hostport, strerror(errno));
		close(s);
		s = c;
	} else if (connect(s, ai->ai_addr, ai->ai_addrlen)) {
		fail("connect to %s: %s", hostport, strerror(errno));
	}
	freeaddrinfo(ai);
	return s;
}

static void put(int s, const void *p, size_t n) {
	for (const char *c = p; n > 0;) {
		ssize_t w = write(s, c, n);
		if (w <= 0) fail("control connection: write: %s", w < 0 ? strerror(errno) : "closed");
		c += w, n -= (size_t)w;
	}
}

static void get(int s, void *p, size_t n) {
	for (char *c = p; n > 0;) {
		ssize_t r = read(s, c, n);
		if (r <= 0) fail("control connection: read: %s", r < 0 ? strerror(errno) : "closed by the peer");
		c += r, n -= (size_t)r;
	}
}

/* ---- receiver ---- */

struct rx {
	struct fab f;
	uint8_t *ring, *words;
	struct fid_mr *mr, *wmr;
	void *desc, *wdesc;
	int post; /* receives needed: FI_RX_CQ_DATA or length messages */
	uint64_t block, blocks, bytes, maxb, cap, *seen; /* seen: a bit per block number, cap words */
	int64_t last[MAXEPS];
};

static void post_recv(struct rx *r, int ep, int slot) {
	struct fab *f = &r->f;
	ssize_t rc;
	void *ctx = (void *)(uintptr_t)(slot + 1);
	do {
		if (r->words) {
			rc = fi_recv(f->ep[ep], r->words + ((size_t)ep * 4096 + slot) * 8, LENBYTES, r->wdesc, FI_ADDR_UNSPEC, ctx);
		} else {
			rc = fi_recv(f->ep[ep], r->ring, 0, r->desc, FI_ADDR_UNSPEC, ctx);
		}
		if (rc == -FI_EAGAIN) {
			struct fi_cq_data_entry e;
			if (fi_cq_read(f->cq[ep], &e, 0) == -FI_EAVAIL) cqerr(f->cq[ep], "read completions");
		}
	} while (rc == -FI_EAGAIN);
	check(rc, "fi_recv", "post a receive for remote CQ data");
}

/* note records block number b arriving with n bytes on endpoint ep: each number once, in
 * order on each endpoint, every block whole. */
static void note(struct rx *r, int ep, uint64_t b, uint64_t n, uint64_t block) {
	if ((int64_t)b <= r->last[ep]) fail("endpoint %d: block %llu after block %lld", ep, (unsigned long long)b, (long long)r->last[ep]);
	if (n != block) fail("block %llu: %llu bytes, want %llu", (unsigned long long)b, (unsigned long long)n, (unsigned long long)block);
	r->last[ep] = (int64_t)b;
	if (b / 64 >= r->cap) {
		uint64_t c = (b / 64 + 1) * 2;
		r->seen = realloc(r->seen, c * 8);
		if (!r->seen) fail("out of memory");
		memset(r->seen + r->cap, 0, (c - r->cap) * 8);
		r->cap = c;
	}
	if (r->seen[b / 64] & (1ull << (b % 64))) fail("block %llu arrived twice", (unsigned long long)b);
	r->seen[b / 64] |= 1ull << (b % 64);
	r->blocks++;
	r->bytes += n;
	if (b > r->maxb) r->maxb = b;
}

static void rx_entry(struct rx *r, int ep, struct fi_cq_data_entry *e) {
	uint64_t slot = (uint64_t)(uintptr_t)e->op_context - 1; /* with posted receives */
	if (!(e->flags & FI_REMOTE_CQ_DATA)) fail("a completion without remote CQ data (flags %#llx)", (unsigned long long)e->flags);
	if (r->words) {
		uint32_t len;
		memcpy(&len, r->words + ((size_t)ep * 4096 + slot) * 8, LENBYTES);
		note(r, ep, (uint32_t)e->data, len, r->block);
	} else {
		note(r, ep, (uint32_t)e->data, r->block, r->block);
	}
	if (r->post) post_recv(r, ep, (int)slot);
}

static void rx_entries(void *arg, int ep, struct fi_cq_data_entry *e, ssize_t n) {
	for (ssize_t i = 0; i < n; i++) rx_entry(arg, ep, &e[i]);
}

/* rx_poll reads completions, waiting up to ms as -w says when none is ready; returns how many. */
static ssize_t rx_poll(struct rx *r, const struct opts *o, int ms) {
	ssize_t n = readall(&r->f, rx_entries, r, "receive");
	if (n == 0 && ms > 0) {
		idle(&r->f, o->wait, ms, 0, r->f.n);
		n = readall(&r->f, rx_entries, r, "receive");
	}
	return n;
}

static void rx_setup(struct rx *r, const struct opts *o) {
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < MAXEPS; i++) r->last[i] = -1;
	r->block = o->block;
	open_fab(&r->f, o, o->eps, o->rxdepth);
	r->ring = map(o->nblocks * o->block);
	memset(r->ring, 0, o->nblocks * o->block);
	r->mr = reg(&r->f, r->ring, o->nblocks * o->block, FI_RECV | FI_REMOTE_WRITE);
	r->desc = fi_mr_desc(r->mr);
	r->post = o->lenmsg || (r->f.info->mode & FI_RX_CQ_DATA);
	if (o->lenmsg) {
		r->words = map((size_t)o->eps * 4096 * 8);
		r->wmr = reg(&r->f, r->words, (size_t)o->eps * 4096 * 8, FI_RECV);
		r->wdesc = fi_mr_desc(r->wmr);
	}
	if (r->post && (size_t)o->rxdepth > r->f.info->rx_attr->size) fail("rx depth %d exceeds the provider's %zu", o->rxdepth, r->f.info->rx_attr->size);
	if (r->post && o->rxdepth > 4096) fail("rx depth %d exceeds 4096", o->rxdepth);
}

static void rx_offer(struct rx *r, const struct opts *o, struct offer *of) {
	memset(of, 0, sizeof(*of));
	of->magic = MAGIC, of->eps = (uint32_t)o->eps, of->lenmsg = (uint32_t)o->lenmsg;
	of->msg = o->msg, of->block = o->block, of->nblocks = o->nblocks;
	of->raddr = (r->f.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)r->ring : 0;
	of->key = fi_mr_key(r->mr);
	for (int i = 0; i < o->eps; i++) {
		of->namelen[i] = (uint32_t)r->f.namelen[i];
		memcpy(of->names[i], r->f.name[i], r->f.namelen[i]);
	}
}

static int recv_main(const struct opts *o) {
	struct rx r;
	struct offer of;
	uint8_t peers[MAXEPS][NAMEMAX];
	rx_setup(&r, o);
	if (r.post)
		for (int i = 0; i < o->eps; i++)
			for (int k = 0; k < o->rxdepth; k++) post_recv(&r, i, k);
	int s = tcp(o->addr, 1);
	rx_offer(&r, o, &of);
	put(s, &of, sizeof(of));
	get(s, peers, sizeof(peers));
	connect_peers(&r.f, peers);
	double t0 = now(CLOCK_MONOTONIC);
	uint64_t end[2]; /* the writer's blocks and bytes, when it has finished */
	for (unsigned k = 1;; k++) {
		if (rx_poll(&r, o, 50) > 0 && k % 256) continue; /* the socket when idle, or now and then */
		ssize_t got = recv(s, end, sizeof(end), MSG_DONTWAIT | MSG_PEEK);
		if (got == (ssize_t)sizeof(end)) break;
		if (got == 0) fail("the writer closed the control connection before its end");
	}
	get(s, end, sizeof(end));
	for (double t = now(CLOCK_MONOTONIC); r.blocks < end[0] && now(CLOCK_MONOTONIC) - t < 30;) rx_poll(&r, o, 50);
	double secs = now(CLOCK_MONOTONIC) - t0;
	if (r.blocks != end[0] || (r.blocks && r.maxb >= end[0]))
		fail("%llu blocks arrived (highest number %llu), the writer wrote %llu", (unsigned long long)r.blocks,
		     (unsigned long long)r.maxb, (unsigned long long)end[0]);
	uint64_t ok[2] = {r.blocks, r.bytes};
	put(s, ok, sizeof(ok));
	char bye;
	if (read(s, &bye, 1) < 0) fail("control connection: read: %s", strerror(errno));
	close(s);
	close_fab(&r.f);
	check(fi_close(&r.mr->fid), "fi_close", "close memory region");
	if (r.wmr) check(fi_close(&r.wmr->fid), "fi_close", "close memory region");
	close_domain(&r.f);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("ofifloor recv: bytes=%llu seconds=%.3f user=%.3f sys=%.3f blocks=%llu complete=true\n",
	       (unsigned long long)r.bytes, secs, tv(ru.ru_utime), tv(ru.ru_stime), (unsigned long long)r.blocks);
	return 0;
}

/* ---- writer ---- */

struct tx {
	struct fab f;
	uint8_t *buf;
	struct fid_mr *mr;
	void *desc;
	struct offer of;
	uint64_t wpb;             /* writes per block */
	uint64_t next;            /* next block number */
	int64_t cur[MAXEPS];      /* each endpoint's block, -1: none */
	uint64_t widx[MAXEPS];    /* its next write in the block */
	uint64_t posted[MAXEPS];  /* writes posted (send-buffer slots) */
	int inflight[MAXEPS];     /* operations not completed */
	uint64_t bytes[MAXEPS];   /* written (completed) */
	uint64_t blocks;          /* all posted (atomic with -T) */
	const struct opts *o;
	double t0;
};

static uint8_t *slot(struct tx *t, int ep, const struct opts *o) {
	return t->buf + ((size_t)ep * (size_t)o->depth + t->posted[ep] % (uint64_t)o->depth) * t->of.msg;
}

/* post_write posts endpoint ep's next write of its block; 0 or -FI_EAGAIN. */
static ssize_t post_write(struct tx *t, int ep, const struct opts *o) {
	uint64_t b = (uint64_t)t->cur[ep], w = t->widx[ep];
	uint64_t raddr = t->of.raddr + (b % t->of.nblocks) * t->of.block + w * t->of.msg;
	void *ctx = (void *)(uintptr_t)(ep + 1);
	int last = w + 1 == t->wpb;
	ssize_t rc;
	if (last && !t->of.lenmsg) {
		rc = fi_writedata(t->f.ep[ep], slot(t, ep, o), t->of.msg, t->desc, (uint32_t)b, t->f.peer[ep], raddr, t->of.key, ctx);
		check(rc == -FI_EAGAIN ? 0 : rc, "fi_writedata", "post a write with remote CQ data");
	} else {
		rc = fi_write(t->f.ep[ep], slot(t, ep, o), t->of.msg, t->desc, t->f.peer[ep], raddr, t->of.key, ctx);
		check(rc == -FI_EAGAIN ? 0 : rc, "fi_write", "post a write");
	}
	if (rc) return rc;
	t->posted[ep]++, t->inflight[ep]++;
	if (last && t->of.lenmsg) {
		uint8_t *len = t->buf + (size_t)o->eps * (size_t)o->depth * t->of.msg; /* the constant length word */
		do {
			rc = fi_senddata(t->f.ep[ep], len, LENBYTES, t->desc, (uint32_t)b, t->f.peer[ep], ctx);
			if (rc == -FI_EAGAIN) {
				struct fi_cq_data_entry e;
				if (fi_cq_read(t->f.cq[ep], &e, 0) == -FI_EAVAIL) cqerr(t->f.cq[ep], "write");
			}
		} while (rc == -FI_EAGAIN);
		check(rc, "fi_senddata", "post a length message");
		t->inflight[ep]++;
	}
	return 0;
}

/* fill posts what endpoint ep can take (DEPTH operations in flight; a length message may
 * make it one more); returns the writes posted. */
static int fill(struct tx *t, int ep, const struct opts *o, int stopping) {
	int n = 0;
	while (t->inflight[ep] < o->depth) {
		if (t->cur[ep] < 0) {
			if (stopping) break;
			t->cur[ep] = (int64_t)__atomic_fetch_add(&t->next, 1, __ATOMIC_RELAXED), t->widx[ep] = 0;
		}
		if (post_write(t, ep, o)) break;
		n++;
		if (++t->widx[ep] == t->wpb) t->cur[ep] = -1, __atomic_fetch_add(&t->blocks, 1, __ATOMIC_RELAXED);
	}
	return n;
}

static void tx_entries(void *arg, int ep, struct fi_cq_data_entry *e, ssize_t n) {
	struct tx *t = arg;
	for (ssize_t i = 0; i < n; i++) {
		t->inflight[ep]--;
		if (e[i].flags & FI_WRITE) t->bytes[ep] += t->of.msg;
	}
}

/* tx_poll reads completions of endpoints lo..lo+n-1; when idle (nothing posted) and none is
 * ready it waits as -w says. */
static void tx_poll(struct tx *t, int idling, int lo, int n) {
	ssize_t got = 0;
	for (int i = lo; i < lo + n; i++) got += readone(&t->f, i, tx_entries, t, "write");
	if (got == 0 && idling) {
		idle(&t->f, t->o->wait, 100, lo, n);
		for (int i = lo; i < lo + n; i++) readone(&t->f, i, tx_entries, t, "write");
	}
}

static int busy(const struct tx *t, int lo, int n) {
	for (int i = lo; i < lo + n; i++)
		if (t->inflight[i] > 0 || t->cur[i] >= 0) return 1;
	return 0;
}

static uint64_t written(const struct tx *t, int lo, int n) {
	uint64_t b = 0;
	for (int i = lo; i < lo + n; i++) b += t->bytes[i];
	return b;
}

/* run writes blocks on endpoints lo..lo+n-1 until SECONDS or BYTES, then waits for their
 * completions; it fails when nothing completes for STALL seconds (a peer that is gone). */
#define STALL 30
static void run(struct tx *t, int lo, int n) {
	const struct opts *o = t->o;
	double last = t->t0;
	for (int stopping = 0;;) {
		double at = now(CLOCK_MONOTONIC);
		uint64_t next = __atomic_load_n(&t->next, __ATOMIC_RELAXED);
		if (!stopping && (o->bytes ? next * t->of.block >= o->bytes : at - t->t0 >= o->secs)) stopping = 1;
		if (stopping && !busy(t, lo, n)) break;
		int posted = 0;
		for (int i = lo; i < lo + n; i++) posted += fill(t, i, o, stopping);
		uint64_t before = written(t, lo, n);
		tx_poll(t, !posted, lo, n);
		if (posted || written(t, lo, n) != before) last = at;
		else if (at - last > STALL) fail("nothing completed for %d s (%llu bytes written)", STALL, (unsigned long long)written(t, lo, n));
	}
}

struct lane {
	struct tx *t;
	int ep;
};

static void *lane(void *arg) {
	struct lane *l = arg;
	run(l->t, l->ep, 1);
	return NULL;
}

/* stream runs the endpoints on this thread, or with -T each on a thread of its own, and
 * returns the seconds from the first post to the last completion. */
static double stream(struct tx *t, const struct opts *o) {
	t->o = o, t->t0 = now(CLOCK_MONOTONIC);
	if (!o->threads) {
		run(t, 0, o->eps);
		return now(CLOCK_MONOTONIC) - t->t0;
	}
	pthread_t th[MAXEPS];
	struct lane l[MAXEPS];
	for (int i = 0; i < o->eps; i++) {
		l[i] = (struct lane){t, i};
		int rc = pthread_create(&th[i], NULL, lane, &l[i]);
		if (rc) fail("start the thread of endpoint %d: %s", i, strerror(rc));
	}
	for (int i = 0; i < o->eps; i++) pthread_join(th[i], NULL);
	return now(CLOCK_MONOTONIC) - t->t0;
}

static void tx_setup(struct tx *t, struct opts *o, int s) {
	memset(t, 0, sizeof(*t));
	get(s, &t->of, sizeof(t->of));
	if (t->of.magic != MAGIC || t->of.eps < 1 || t->of.eps > MAXEPS || !t->of.msg || t->of.block % t->of.msg)
		fail("the receiver's offer is malformed (magic %#x, %u endpoints, %llu-byte messages, %llu-byte blocks)", t->of.magic,
		     t->of.eps, (unsigned long long)t->of.msg, (unsigned long long)t->of.block);
	o->eps = (int)t->of.eps, o->lenmsg = (int)t->of.lenmsg; /* the receiver's say */
	t->wpb = t->of.block / t->of.msg;
	for (int i = 0; i < MAXEPS; i++) t->cur[i] = -1;
	open_fab(&t->f, o, o->eps, o->depth + 1);
	size_t n = (size_t)o->eps * (size_t)o->depth * t->of.msg + 4096;
	t->buf = map(n);
	uint32_t len = (uint32_t)t->of.block;
	memcpy(t->buf + n - 4096, &len, sizeof(len));
	t->mr = reg(&t->f, t->buf, n, FI_WRITE | FI_SEND);
	t->desc = fi_mr_desc(t->mr);
}

static int send_main(struct opts *o) {
	struct tx t;
	uint8_t names[MAXEPS][NAMEMAX];
	int s = tcp(o->addr, 0);
	tx_setup(&t, o, s);
	uint8_t peers[MAXEPS][NAMEMAX];
	memset(names, 0, sizeof(names));
	for (int i = 0; i < o->eps; i++) memcpy(names[i], t.f.name[i], t.f.namelen[i]);
	memcpy(peers, t.of.names, sizeof(peers));
	connect_peers(&t.f, peers);
	put(s, names, sizeof(names));
	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	double secs = stream(&t, o);
	getrusage(RUSAGE_SELF, &r1);
	uint64_t bytes = written(&t, 0, o->eps), end[2] = {t.blocks, bytes}, ok[2];
	put(s, end, sizeof(end));
	get(s, ok, sizeof(ok));
	put(s, "", 1);
	close(s);
	if (ok[0] != t.blocks || ok[1] != bytes) fail("the receiver confirmed %llu blocks, %llu bytes; %llu, %llu were written", (unsigned long long)ok[0],
	                                                (unsigned long long)ok[1], (unsigned long long)t.blocks, (unsigned long long)bytes);
	const char *prov = t.f.info->fabric_attr->prov_name, *dom = t.f.info->domain_attr->name;
	char desc[160];
	snprintf(desc, sizeof(desc), "provider=%s domain=%s", prov, dom);
	close_fab(&t.f);
	check(fi_close(&t.mr->fid), "fi_close", "close memory region");
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("ofifloor send: bytes=%llu seconds=%.3f gbps=%.4f user=%.3f sys=%.3f stream_user=%.3f stream_sys=%.3f blocks=%llu complete=true eps=%d msg=%llu depth=%d lenmsg=%d threads=%d %s\n",
	       (unsigned long long)bytes, secs, bytes * 8 / secs / 1e9, tv(ru.ru_utime), tv(ru.ru_stime), tv(r1.ru_utime) - tv(r0.ru_utime),
	       tv(r1.ru_stime) - tv(r0.ru_stime), (unsigned long long)t.blocks, o->eps, (unsigned long long)t.of.msg, o->depth, o->lenmsg, o->threads, desc);
	close_domain(&t.f);
	return 0;
}

/* ---- options ---- */

static uint64_t number(const char *s, const char *what) {
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || !v) fail("%s %s: want a positive integer", what, s);
	return v;
}

static void usage(void) {
	fprintf(stderr, "usage: ofifloor recv -p PROV [-d DOMAIN] [-a NODE] -l HOST:PORT [-e EPS] [-m MSG] [-b BLOCK] [-n NBLOCKS] [-r RXDEPTH] [-L] [-w MODE]\n"
	                "       ofifloor send -p PROV [-d DOMAIN] [-a NODE] -c HOST:PORT [-q DEPTH] [-t SECONDS | -B BYTES] [-w wait|spin|sleep] [-T]\n");
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o) {
	*o = (struct opts){.eps = 4, .depth = 16, .rxdepth = 128, .msg = 65536, .block = 1048576, .nblocks = 16, .secs = 6};
	if (argc < 2 || (strcmp(argv[1], "recv") && strcmp(argv[1], "send"))) usage();
	o->role = role = argv[1];
	for (int c; (c = getopt(argc - 1, argv + 1, "p:d:a:l:c:e:m:b:n:r:q:t:B:LTw:")) != -1;) {
		switch (c) {
		case 'p': o->prov = optarg; break;
		case 'd': o->dom = optarg; break;
		case 'a': o->node = optarg; break;
		case 'l': case 'c': o->addr = optarg; break;
		case 'e': o->eps = (int)number(optarg, "-e"); break;
		case 'm': o->msg = number(optarg, "-m"); break;
		case 'b': o->block = number(optarg, "-b"); break;
		case 'n': o->nblocks = number(optarg, "-n"); break;
		case 'r': o->rxdepth = (int)number(optarg, "-r"); break;
		case 'q': o->depth = (int)number(optarg, "-q"); break;
		case 't': o->secs = atof(optarg); if (o->secs <= 0) fail("-t %s: want positive seconds", optarg); break;
		case 'B': o->bytes = number(optarg, "-B"); break;
		case 'L': o->lenmsg = 1; break;
		case 'T': o->threads = 1; break;
		case 'w':
			if (!strcmp(optarg, "wait")) o->wait = WAIT_FD;
			else if (!strcmp(optarg, "spin")) o->wait = WAIT_SPIN;
			else if (!strcmp(optarg, "sleep")) o->wait = WAIT_SLEEP;
			else fail("-w %s: want wait, spin or sleep", optarg);
			break;
		default: usage();
		}
	}
	if (!o->prov || !o->addr || optind != argc - 1) usage();
	if (o->eps > MAXEPS || o->block % o->msg || o->block / o->msg < 1) fail("want 1..%d endpoints and blocks a multiple of the message size", MAXEPS);
}

int main(int argc, char **argv) {
	struct opts o;
	parse(argc, argv, &o);
	/* before libfabric initialises (see ringcap's pkg/rdma/ofi/env.go) */
	setenv("FI_UNIVERSE_SIZE", "16", 0);
	setenv("FI_OFI_RXM_MSG_RX_SIZE", "128", 0);
	setenv("FI_OFI_RXM_BUFFER_SIZE", "1024", 0);
	return strcmp(o.role, "recv") ? send_main(&o) : recv_main(&o);
}
