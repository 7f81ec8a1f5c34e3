/*
 * c-sender: a ringcap sender in C over libibverbs, written from docs/wire-protocol.md.
 *
 * It speaks protocol version 8 in send mode over verbs RC queue pairs: the TCP handshake
 * (preamble, Settings, Hello, Accept), SEND_WITH_IMM of each slice once the receiver has
 * posted its receive (Posted), End, and the receiver's Done. The data is ringcap's seeded
 * test pattern, so `ringcap ring read --verify SEED` checks every byte.
 *
 *   c-sender HOST:PORT --bytes N --seed S [--qps Q] --dev rxe0 --gid-index G
 *            [--ib-port P] [--tx-depth D] [--header KEY=VALUE]...
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>

enum {
	PROTOCOL_VERSION = 8,
	MAX_PAYLOAD = 16u << 20,
	MAX_QPS = 64,
	MAX_TEXT = 4096,
	MAX_KEYWORDS = 256,
	MODE_SEND = 1,
	TRANSPORT_VERBS = 1,
};

enum msg_type {
	MSG_HELLO = 1,
	MSG_ACCEPT = 2,
	MSG_REJECT = 3,
	MSG_CREDIT = 4,
	MSG_END = 5,
	MSG_DONE = 6,
	MSG_HELD = 7,
	MSG_SETTINGS = 8,
	MSG_POSTED = 9,
};

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("c-sender: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* ---- the test pattern: byte o is byte o%8 (little endian) of splitmix64(seed ^ o/8) ---- */

static uint64_t pattern_word(uint64_t seed, uint64_t i)
{
	uint64_t z = (seed ^ i) + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* pattern_fill writes stream bytes [off, off+n) into dst. */
static void pattern_fill(uint8_t *dst, size_t n, uint64_t seed, uint64_t off)
{
	for (size_t k = 0; k < n; k++) {
		uint64_t o = off + k;

		if (o % 8 == 0 && n - k >= 8) {
			uint64_t w = pattern_word(seed, o / 8);

			for (unsigned b = 0; b < 8; b++)
				dst[k + b] = (uint8_t)(w >> (8 * b));
			k += 7;
			continue;
		}
		dst[k] = (uint8_t)(pattern_word(seed, o / 8) >> (8 * (o % 8)));
	}
}

/* ---- encoding: big-endian integers, text = u16 length + bytes ---- */

struct enc {
	uint8_t *p;
	size_t n, cap;
};

static void enc_bytes(struct enc *e, const void *b, size_t n)
{
	if (e->n + n > e->cap) {
		e->cap = (e->n + n) * 2 + 64;
		e->p = realloc(e->p, e->cap);
		if (!e->p)
			die("out of memory encoding a message");
	}
	memcpy(e->p + e->n, b, n);
	e->n += n;
}

static void enc_uint(struct enc *e, uint64_t v, int size)
{
	uint8_t b[8];

	for (int i = 0; i < size; i++)
		b[i] = (uint8_t)(v >> (8 * (size - 1 - i)));
	enc_bytes(e, b, (size_t)size);
}

static void enc_text(struct enc *e, const char *s, size_t n)
{
	enc_uint(e, n, 2);
	enc_bytes(e, s, n);
}

struct dec {
	const uint8_t *p;
	size_t n, off;
	const char *what;
};

static uint64_t dec_uint(struct dec *d, int size)
{
	uint64_t v = 0;

	if (d->n - d->off < (size_t)size)
		die("%s message is too short", d->what);
	for (int i = 0; i < size; i++)
		v = v << 8 | d->p[d->off++];
	return v;
}

static const uint8_t *dec_bytes(struct dec *d, size_t n)
{
	const uint8_t *b = d->p + d->off;

	if (d->n - d->off < n)
		die("%s message is too short", d->what);
	d->off += n;
	return b;
}

/* dec_text returns a NUL-terminated copy of a text field (the caller frees it). */
static char *dec_text(struct dec *d)
{
	size_t n = dec_uint(d, 2);
	char *s;

	if (n > MAX_TEXT)
		die("%s message has a text of %zu bytes (at most %d)", d->what, n, MAX_TEXT);
	s = malloc(n + 1);
	if (!s)
		die("out of memory decoding a message");
	memcpy(s, dec_bytes(d, n), n);
	s[n] = 0;
	return s;
}

static void dec_end(struct dec *d)
{
	if (d->off != d->n)
		die("%s message has %zu bytes after its last field", d->what, d->n - d->off);
}

/* dec_fabric checks that a fabric field says verbs with no provider. */
static void dec_fabric(struct dec *d)
{
	unsigned transport = (unsigned)dec_uint(d, 1);
	char *provider = dec_text(d);

	if (transport != TRANSPORT_VERBS)
		die("the receiver uses transport %u (this sender speaks only verbs, 1)", transport);
	if (provider[0])
		die("the receiver names a verbs provider %s (want none)", provider);
	free(provider);
}

/* ---- the TCP control connection ---- */

static void write_full(int fd, const void *b, size_t n)
{
	const uint8_t *p = b;

	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write to the receiver: %s", strerror(errno));
		p += w;
		n -= (size_t)w;
	}
}

static void read_full(int fd, void *b, size_t n)
{
	uint8_t *p = b;

	while (n > 0) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("read from the receiver: %s", strerror(errno));
		if (r == 0)
			die("the receiver closed the connection");
		p += r;
		n -= (size_t)r;
	}
}

struct msg {
	unsigned type;
	uint8_t *payload;
	size_t len;
};

static void send_msg(int fd, enum msg_type type, const struct enc *payload)
{
	struct enc e = {0};

	enc_uint(&e, type, 1);
	enc_uint(&e, payload->n, 4);
	enc_bytes(&e, payload->p, payload->n);
	write_full(fd, e.p, e.n);
	free(e.p);
}

/* read_msg reads one framed message; the caller frees m->payload. */
static void read_msg(int fd, struct msg *m)
{
	uint8_t hdr[5];

	read_full(fd, hdr, sizeof(hdr));
	m->type = hdr[0];
	m->len = (size_t)hdr[1] << 24 | (size_t)hdr[2] << 16 | (size_t)hdr[3] << 8 | hdr[4];
	if (m->type < MSG_HELLO || m->type > MSG_POSTED)
		die("the receiver sent a message of unknown type %u", m->type);
	if (m->len > MAX_PAYLOAD)
		die("the receiver sent a message of %zu bytes (at most %u)", m->len, MAX_PAYLOAD);
	m->payload = malloc(m->len ? m->len : 1);
	if (!m->payload)
		die("out of memory reading a message");
	read_full(fd, m->payload, m->len);
}

static struct dec msg_dec(const struct msg *m, const char *what)
{
	struct dec d = {.p = m->payload, .n = m->len, .what = what};

	return d;
}

/* die_rejected prints a Reject's reason and exits. */
static void die_rejected(const struct msg *m)
{
	struct dec d = msg_dec(m, "reject");
	char *why = dec_text(&d);

	die("the receiver refused this sender: %s", why);
}

static int dial(const char *hostport)
{
	char host[256];
	const char *colon = strrchr(hostport, ':');
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
	int fd = -1, one = 1, rc;

	if (!colon || colon == hostport || (size_t)(colon - hostport) >= sizeof(host))
		die("receiver address %s is not HOST:PORT", hostport);
	memcpy(host, hostport, (size_t)(colon - hostport));
	host[colon - hostport] = 0;
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = 0;
	}
	rc = getaddrinfo(host, colon + 1, &hints, &res);
	if (rc)
		die("resolve %s: %s", hostport, gai_strerror(rc));
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		die("connect to %s: %s", hostport, strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* ---- options ---- */

struct options {
	const char *connect, *dev;
	uint64_t bytes, seed;
	unsigned qps, tx_depth, gid_index, ib_port;
	const char *headers[MAX_KEYWORDS];
	unsigned nheaders;
};

static uint64_t parse_u64(const char *flag, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || !*s || *end || s[0] == '-')
		die("%s %s: not a number", flag, s);
	return v;
}

static void usage(void)
{
	fprintf(stderr, "usage: c-sender HOST:PORT --bytes N --seed S [--qps Q] --dev DEVICE --gid-index G\n"
			"                [--ib-port P] [--tx-depth D] [--header KEY=VALUE]...\n");
	exit(2);
}

static void parse_options(int argc, char **argv, struct options *o)
{
	*o = (struct options){.ib_port = 1, .tx_depth = 16, .gid_index = ~0u};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (a[0] != '-') {
			if (o->connect)
				usage();
			o->connect = a;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--bytes"))
			o->bytes = parse_u64(a, v);
		else if (!strcmp(a, "--seed"))
			o->seed = parse_u64(a, v);
		else if (!strcmp(a, "--qps"))
			o->qps = (unsigned)parse_u64(a, v);
		else if (!strcmp(a, "--tx-depth"))
			o->tx_depth = (unsigned)parse_u64(a, v);
		else if (!strcmp(a, "--gid-index"))
			o->gid_index = (unsigned)parse_u64(a, v);
		else if (!strcmp(a, "--ib-port"))
			o->ib_port = (unsigned)parse_u64(a, v);
		else if (!strcmp(a, "--dev"))
			o->dev = v;
		else if (!strcmp(a, "--header") && o->nheaders < MAX_KEYWORDS)
			o->headers[o->nheaders++] = v;
		else
			usage();
	}
	if (!o->connect || !o->dev || o->gid_index == ~0u || o->bytes == 0)
		usage();
	if (o->qps > MAX_QPS || o->tx_depth == 0 || o->tx_depth > 4096)
		die("--qps must be 0..%d (0: the receiver's) and --tx-depth 1..4096", MAX_QPS);
}

/* ---- verbs ---- */

struct qp_info {
	uint32_t qpn, psn, mtu;
	uint16_t lid;
	uint8_t gid[16];
};

struct sender {
	struct options opt;
	int fd;
	/* from the Settings and the Accept */
	unsigned nqps;
	uint32_t msg_bytes;
	uint64_t buf_size;
	/* verbs objects, torn down in reverse order */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	struct ibv_qp *qp[MAX_QPS];
	struct ibv_mr *mr;
	uint8_t *buf;
	struct qp_info local[MAX_QPS], remote[MAX_QPS];
	/* per queue pair: the next slice to send, the receiver's grant, sends in flight */
	uint64_t next[MAX_QPS], upto[MAX_QPS];
	unsigned inflight[MAX_QPS];
	uint64_t nslices, completed;
};

static unsigned mtu_bytes(enum ibv_mtu m) { return 128u << m; }

static enum ibv_mtu mtu_enum(uint32_t bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	}
	die("MTU %" PRIu32 " is not 256, 512, 1024, 2048 or 4096", bytes);
}

static struct ibv_context *open_device(const char *name)
{
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_context *ctx = NULL;

	if (!list)
		die("list RDMA devices: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		die("open RDMA device %s: not found or not openable", name);
	return ctx;
}

static uint32_t random_psn(void)
{
	uint32_t r;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		die("random PSN: %s", strerror(errno));
	return r & 0xffffff;
}

/* create_qp creates queue pair i and moves it to INIT. */
static void create_qp(struct sender *s, unsigned i)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = s->opt.tx_depth, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
	};
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = (uint8_t)s->opt.ib_port};
	int rc;

	s->qp[i] = ibv_create_qp(s->pd, &ia);
	if (!s->qp[i])
		die("create queue pair %u: %s", i, strerror(errno));
	rc = ibv_modify_qp(s->qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc)
		die("move queue pair %u to INIT: %s", i, strerror(rc));
}

/* setup_verbs opens the device and creates the queue pairs and the send buffers. */
static void setup_verbs(struct sender *s)
{
	struct ibv_port_attr port;
	union ibv_gid gid;
	size_t len = (size_t)s->nqps * s->opt.tx_depth * s->msg_bytes;
	int rc;

	s->ctx = open_device(s->opt.dev);
	rc = ibv_query_port(s->ctx, (uint8_t)s->opt.ib_port, &port);
	if (rc)
		die("query port %u of %s: %s", s->opt.ib_port, s->opt.dev, strerror(rc));
	if (port.state != IBV_PORT_ACTIVE)
		die("port %u of %s is not active", s->opt.ib_port, s->opt.dev);
	rc = ibv_query_gid(s->ctx, (uint8_t)s->opt.ib_port, (int)s->opt.gid_index, &gid);
	if (rc)
		die("query GID index %u of %s: %s", s->opt.gid_index, s->opt.dev, strerror(rc));
	s->pd = ibv_alloc_pd(s->ctx);
	s->channel = ibv_create_comp_channel(s->ctx);
	if (!s->pd || !s->channel)
		die("allocate a protection domain and a completion channel on %s: %s", s->opt.dev, strerror(errno));
	s->cq = ibv_create_cq(s->ctx, (int)(s->nqps * s->opt.tx_depth + s->nqps), NULL, s->channel, 0);
	if (!s->cq)
		die("create a completion queue: %s", strerror(errno));
	if ((rc = ibv_req_notify_cq(s->cq, 0)))
		die("arm the completion queue: %s", strerror(rc));
	s->buf = aligned_alloc(4096, (len + 4095) / 4096 * 4096);
	if (!s->buf)
		die("allocate %zu bytes of send buffers", len);
	s->mr = ibv_reg_mr(s->pd, s->buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!s->mr)
		die("register %zu bytes of send buffers: %s", len, strerror(errno));
	for (unsigned i = 0; i < s->nqps; i++) {
		create_qp(s, i);
		s->local[i] = (struct qp_info){.qpn = s->qp[i]->qp_num, .psn = random_psn(),
					       .lid = port.lid, .mtu = mtu_bytes(port.active_mtu)};
		memcpy(s->local[i].gid, gid.raw, 16);
	}
}

/* connect_qp moves queue pair i to RTR and RTS with the receiver's queue pair i. */
static void connect_qp(struct sender *s, unsigned i)
{
	const struct qp_info *l = &s->local[i], *r = &s->remote[i];
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = mtu_enum(l->mtu < r->mtu ? l->mtu : r->mtu),
		.dest_qp_num = r->qpn,
		.rq_psn = r->psn,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = {.is_global = 1, .dlid = r->lid, .port_num = (uint8_t)s->opt.ib_port,
			    .grh = {.sgid_index = (uint8_t)s->opt.gid_index, .hop_limit = 64}},
	};
	int rc;

	memcpy(a.ah_attr.grh.dgid.raw, r->gid, 16);
	rc = ibv_modify_qp(s->qp[i], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		die("move queue pair %u to RTR: %s", i, strerror(rc));
	a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS, .sq_psn = l->psn, .timeout = 18,
				 .retry_cnt = 6, .rnr_retry = 7, .max_rd_atomic = 1};
	rc = ibv_modify_qp(s->qp[i], &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc)
		die("move queue pair %u to RTS: %s", i, strerror(rc));
}

static void teardown(struct sender *s)
{
	for (unsigned i = 0; i < s->nqps; i++)
		if (s->qp[i])
			ibv_destroy_qp(s->qp[i]);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	free(s->buf);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->channel)
		ibv_destroy_comp_channel(s->channel);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
}

/* ---- the handshake ---- */

static void enc_qp_table(struct enc *e, const struct qp_info *q, unsigned n)
{
	enc_uint(e, n, 2);
	for (unsigned i = 0; i < n; i++) {
		enc_uint(e, q[i].qpn, 4);
		enc_uint(e, q[i].psn, 4);
		enc_uint(e, q[i].lid, 2);
		enc_bytes(e, q[i].gid, 16);
		enc_uint(e, q[i].mtu, 4);
	}
}

static void dec_qp_table(struct dec *d, struct qp_info *q, unsigned want)
{
	unsigned n = (unsigned)dec_uint(d, 2);

	if (n != want)
		die("the receiver's Accept has %u queue pairs, this sender asked for %u", n, want);
	for (unsigned i = 0; i < n; i++) {
		q[i].qpn = (uint32_t)dec_uint(d, 4);
		q[i].psn = (uint32_t)dec_uint(d, 4);
		q[i].lid = (uint16_t)dec_uint(d, 2);
		memcpy(q[i].gid, dec_bytes(d, 16), 16);
		q[i].mtu = (uint32_t)dec_uint(d, 4);
		mtu_enum(q[i].mtu);
	}
}

static void send_preamble(int fd)
{
	struct enc e = {0};

	enc_bytes(&e, "RCAP", 4);
	enc_uint(&e, PROTOCOL_VERSION, 2);
	write_full(fd, e.p, e.n);
	free(e.p);
}

/* read_settings reads the receiver's Settings and takes its queue pairs and slice size. */
static void read_settings(struct sender *s)
{
	struct msg m;
	struct dec d;
	unsigned mode, qps;

	read_msg(s->fd, &m);
	if (m.type == MSG_REJECT)
		die_rejected(&m);
	if (m.type != MSG_SETTINGS)
		die("expected the receiver's Settings, got message type %u", m.type);
	d = msg_dec(&m, "settings");
	mode = (unsigned)dec_uint(&d, 1);
	qps = (unsigned)dec_uint(&d, 2);
	s->msg_bytes = (uint32_t)dec_uint(&d, 4);
	dec_fabric(&d);
	dec_end(&d);
	free(m.payload);
	if (mode != MODE_SEND)
		die("the receiver runs write mode (%u); this sender speaks send mode only", mode);
	if (qps < 1 || qps > MAX_QPS || s->msg_bytes < 1 || s->msg_bytes > 1u << 31)
		die("the receiver's Settings are out of range: qps %u, msg_bytes %" PRIu32, qps, s->msg_bytes);
	if (s->opt.qps && s->opt.qps != qps)
		die("--qps %u, the receiver uses %u queue pairs", s->opt.qps, qps);
	s->nqps = qps;
	printf("c-sender: settings mode=send qps=%u msg_bytes=%" PRIu32 "\n", qps, s->msg_bytes);
}

static void send_hello(struct sender *s)
{
	struct enc e = {0};

	enc_uint(&e, MODE_SEND, 1);
	enc_uint(&e, s->msg_bytes, 4);
	enc_uint(&e, s->opt.bytes, 8);
	enc_uint(&e, TRANSPORT_VERBS, 1);
	enc_text(&e, "", 0);
	enc_qp_table(&e, s->local, s->nqps);
	enc_uint(&e, s->opt.nheaders, 2);
	for (unsigned i = 0; i < s->opt.nheaders; i++) {
		const char *kv = s->opt.headers[i], *eq = strchr(kv, '=');

		if (!eq || eq == kv || (size_t)(eq - kv) > MAX_TEXT || strlen(eq + 1) > MAX_TEXT)
			die("--header %s is not KEY=VALUE", kv);
		enc_text(&e, kv, (size_t)(eq - kv));
		enc_text(&e, eq + 1, strlen(eq + 1));
	}
	send_msg(s->fd, MSG_HELLO, &e);
	free(e.p);
}

static void decode_accept(struct sender *s, const struct msg *m)
{
	struct dec d = msg_dec(m, "accept");
	unsigned mode = (unsigned)dec_uint(&d, 1), mr_mode = (unsigned)dec_uint(&d, 1);
	uint32_t msg_bytes = (uint32_t)dec_uint(&d, 4), nbufs = (uint32_t)dec_uint(&d, 4), regions;

	s->buf_size = dec_uint(&d, 8);
	dec_fabric(&d);
	dec_qp_table(&d, s->remote, s->nqps);
	regions = (uint32_t)dec_uint(&d, 4);
	dec_end(&d);
	if (mode != MODE_SEND || msg_bytes != s->msg_bytes || regions != 0)
		die("the Accept does not match the Hello: mode %u, msg_bytes %" PRIu32 ", %" PRIu32 " regions",
		    mode, msg_bytes, regions);
	if (nbufs < 1 || s->buf_size < 1)
		die("the Accept's ring is empty: %" PRIu32 " blocks of %" PRIu64 " bytes", nbufs, s->buf_size);
	printf("c-sender: accept nbufs=%" PRIu32 " buf_size=%" PRIu64 " mr_mode=%u\n", nbufs, s->buf_size, mr_mode);
}

/* read_accept reads messages until the Accept: Held means the receiver waits for its readers. */
static void read_accept(struct sender *s)
{
	for (;;) {
		struct msg m;

		read_msg(s->fd, &m);
		if (m.type == MSG_REJECT)
			die_rejected(&m);
		if (m.type == MSG_ACCEPT) {
			decode_accept(s, &m);
			free(m.payload);
			return;
		}
		if (m.type != MSG_HELD)
			die("expected the Accept, got message type %u", m.type);
		printf("c-sender: held back by the receiver's ring readers\n");
		free(m.payload);
	}
}

/* ---- the stream ---- */

struct slice {
	uint64_t off;
	uint32_t len;
};

/* slice_at places stream slice g (docs/wire-protocol.md, Placement). */
static struct slice slice_at(const struct sender *s, uint64_t g)
{
	uint64_t per_block = (s->buf_size + s->msg_bytes - 1) / s->msg_bytes;
	uint64_t b = g / per_block, k = g % per_block;
	uint64_t off = b * s->buf_size + k * s->msg_bytes;
	uint64_t len = s->buf_size - k * s->msg_bytes;
	struct slice sl = {.off = off};

	if (len > s->msg_bytes)
		len = s->msg_bytes;
	if (off + len > s->opt.bytes)
		len = s->opt.bytes - off;
	sl.len = (uint32_t)len;
	return sl;
}

static uint64_t count_slices(const struct sender *s)
{
	uint64_t per_block = (s->buf_size + s->msg_bytes - 1) / s->msg_bytes;
	uint64_t full = s->opt.bytes / s->buf_size, rest = s->opt.bytes % s->buf_size;

	return full * per_block + (rest + s->msg_bytes - 1) / s->msg_bytes;
}

/* post_slice sends queue pair q's next slice from one of its free buffer slots. */
static void post_slice(struct sender *s, unsigned q)
{
	uint64_t g = s->next[q];
	struct slice sl = slice_at(s, g);
	uint64_t slot = (uint64_t)q * s->opt.tx_depth + (g / s->nqps) % s->opt.tx_depth;
	uint8_t *p = s->buf + slot * s->msg_bytes;
	struct ibv_sge sge = {.addr = (uintptr_t)p, .length = sl.len, .lkey = s->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = q, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
				 .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl((uint32_t)g)},
			   *bad;
	int rc;

	pattern_fill(p, sl.len, s->opt.seed, sl.off);
	rc = ibv_post_send(s->qp[q], &wr, &bad);
	if (rc)
		die("post slice %" PRIu64 " on queue pair %u: %s", g, q, strerror(rc));
	s->inflight[q]++;
	s->next[q] += s->nqps;
}

/* post_granted posts every slice the receiver has granted and a send slot can take. */
static void post_granted(struct sender *s)
{
	for (unsigned q = 0; q < s->nqps; q++)
		while (s->next[q] < s->nslices && s->next[q] < s->upto[q] && s->inflight[q] < s->opt.tx_depth)
			post_slice(s, q);
}

/* handle_posted takes a Posted grant during the stream. */
static void handle_posted(struct sender *s, const struct msg *m)
{
	struct dec d = msg_dec(m, "posted");
	unsigned q = (unsigned)dec_uint(&d, 2);
	uint64_t upto = dec_uint(&d, 8);

	dec_end(&d);
	if (q >= s->nqps)
		die("the receiver granted receives on queue pair %u of %u", q, s->nqps);
	if (upto < s->upto[q])
		die("the receiver's grant on queue pair %u went back from %" PRIu64 " to %" PRIu64, q, s->upto[q], upto);
	s->upto[q] = upto;
}

/* print_done prints the receiver's Done; it returns the bytes the ring holds, or 0 when not ok. */
static uint64_t print_done(const struct msg *m)
{
	struct dec d = msg_dec(m, "done");
	uint64_t bytes = dec_uint(&d, 8), blocks = dec_uint(&d, 8);
	unsigned ok = (unsigned)dec_uint(&d, 1);
	char *why = dec_text(&d);

	dec_end(&d);
	printf("c-sender: done bytes=%" PRIu64 " blocks=%" PRIu64 " ok=%u message=%s\n", bytes, blocks, ok, why);
	fflush(stdout);
	free(why);
	return ok == 1 ? bytes : 0;
}

/* handle_control reads one message from the receiver during the stream. */
static void handle_control(struct sender *s)
{
	struct msg m;

	read_msg(s->fd, &m);
	switch (m.type) {
	case MSG_POSTED:
		handle_posted(s, &m);
		break;
	case MSG_HELD:
		break;
	case MSG_DONE:
		print_done(&m);
		die("the receiver ended the observation before the End");
	default:
		die("unexpected message type %u during the stream", m.type);
	}
	free(m.payload);
}

/* reap_completions takes the completion event and every completion queued. */
static void reap_completions(struct sender *s)
{
	struct ibv_cq *cq;
	void *cq_ctx;
	struct ibv_wc wc[32];
	int n, rc;

	if (ibv_get_cq_event(s->channel, &cq, &cq_ctx))
		die("read a completion event: %s", strerror(errno));
	ibv_ack_cq_events(cq, 1);
	if ((rc = ibv_req_notify_cq(s->cq, 0)))
		die("re-arm the completion queue: %s", strerror(rc));
	while ((n = ibv_poll_cq(s->cq, 32, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				die("a send on queue pair %" PRIu64 " failed: %s", wc[i].wr_id,
				    ibv_wc_status_str(wc[i].status));
			s->inflight[wc[i].wr_id]--;
			s->completed++;
		}
	}
	if (n < 0)
		die("poll the completion queue: %d", n);
}

/* stream sends every slice, each once its receive is posted, and waits for their completions. */
static void stream(struct sender *s)
{
	struct pollfd pfd[2] = {{.fd = s->fd, .events = POLLIN}, {.fd = s->channel->fd, .events = POLLIN}};

	s->nslices = count_slices(s);
	for (unsigned q = 0; q < s->nqps; q++)
		s->next[q] = q;
	while (s->completed < s->nslices) {
		post_granted(s);
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("wait for the receiver and completions: %s", strerror(errno));
		}
		if (pfd[1].revents & POLLIN)
			reap_completions(s);
		if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))
			handle_control(s);
	}
}

/* finish sends the End and reads until the Done; it returns 0 when the ring holds the whole stream. */
static int finish(struct sender *s)
{
	struct enc e = {0};

	enc_uint(&e, s->opt.bytes, 8);
	enc_uint(&e, 1, 1);
	send_msg(s->fd, MSG_END, &e);
	free(e.p);
	for (;;) {
		struct msg m;
		uint64_t bytes;

		read_msg(s->fd, &m);
		if (m.type == MSG_POSTED || m.type == MSG_HELD) {
			free(m.payload);
			continue;
		}
		if (m.type != MSG_DONE)
			die("expected the Done, got message type %u", m.type);
		bytes = print_done(&m);
		free(m.payload);
		return bytes == s->opt.bytes ? 0 : 1;
	}
}

int main(int argc, char **argv)
{
	struct sender s = {0};
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_options(argc, argv, &s.opt);
	s.fd = dial(s.opt.connect);
	send_preamble(s.fd);
	read_settings(&s);
	setup_verbs(&s);
	send_hello(&s);
	read_accept(&s);
	for (unsigned i = 0; i < s.nqps; i++)
		connect_qp(&s, i);
	stream(&s);
	rc = finish(&s);
	close(s.fd);
	teardown(&s);
	return rc;
}
