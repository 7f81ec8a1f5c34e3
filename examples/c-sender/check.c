/*
 * check: c-sender's encoder, decoder and test pattern against the examples of the
 * documentation, on any host (no RDMA device needed).
 *
 *   check docs/wire-protocol.md docs/ring.md
 *
 * Each `<!-- golden: NAME -->` block of hex in those pages must be what c-sender writes for
 * the values the page gives, or decode to them.
 */
#define main c_sender_main
#include "sender.c"
#undef main

#include <sys/socket.h>

static char *doc_wire, *doc_ring;

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		die("read %s: %s", path, strerror(errno));
	s = malloc((size_t)n + 1);
	if (!s || fread(s, 1, (size_t)n, f) != (size_t)n)
		die("read %s", path);
	s[n] = 0;
	fclose(f);
	return s;
}

/* golden returns the bytes of the page's example NAME; *n gets their count. */
static uint8_t *golden(const char *doc, const char *name, size_t *n)
{
	char marker[128];
	const char *p, *end;
	uint8_t *out;

	snprintf(marker, sizeof(marker), "<!-- golden: %s -->\n```\n", name);
	p = strstr(doc, marker);
	if (!p)
		die("the documentation has no example %s", name);
	p += strlen(marker);
	end = strstr(p, "```");
	out = malloc((size_t)(end - p) / 2 + 1);
	*n = 0;
	for (; p < end; p++) {
		unsigned v;

		if (*p == ' ' || *p == '\n')
			continue;
		if (sscanf(p, "%2x", &v) != 1)
			die("example %s is not hex", name);
		out[(*n)++] = (uint8_t)v;
		p++;
	}
	return out;
}

/* socket_with returns one end of a socket pair whose other end (*peer) has sent the examples. */
static int socket_with(int *peer, const char *const *names)
{
	int sp[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp))
		die("socketpair: %s", strerror(errno));
	for (; *names; names++) {
		size_t n;
		uint8_t *b = golden(doc_wire, *names, &n);

		write_full(sp[1], b, n);
		free(b);
	}
	*peer = sp[1];
	return sp[0];
}

/* expect_sent checks that the next bytes on fd are the example NAME. */
static void expect_sent(int fd, const char *name)
{
	size_t n;
	uint8_t *want = golden(doc_wire, name, &n), *got = malloc(n);

	read_full(fd, got, n);
	if (memcmp(got, want, n))
		die("c-sender does not write the bytes of example %s", name);
	printf("check: ok %s (encoded)\n", name);
	free(want);
	free(got);
}

static void expect(int cond, const char *name)
{
	if (!cond)
		die("c-sender decodes example %s to other values than the page gives", name);
	printf("check: ok %s (decoded)\n", name);
}

/* check_handshake: Settings, Hello (with its SOURCE keyword), Held then Accept, Posted. */
static void check_handshake(struct sender *s)
{
	static const uint8_t gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 1, 10};
	int peer;

	s->fd = socket_with(&peer, (const char *const[]){"settings", "held", "accept-send", "posted", NULL});
	send_preamble(s->fd);
	expect_sent(peer, "preamble");
	read_settings(s);
	expect(s->nqps == 2 && s->msg_bytes == 65536, "settings");
	s->opt.bytes = 1ull << 30;
	s->opt.headers[s->opt.nheaders++] = "SOURCE=J0437-4715";
	s->local[0] = (struct qp_info){.qpn = 0x123, .psn = 0xabcd, .mtu = 4096};
	s->local[1] = (struct qp_info){.qpn = 0x124, .psn = 0x3c0ffe, .mtu = 4096};
	memcpy(s->local[0].gid, gid, 16);
	memcpy(s->local[1].gid, gid, 16);
	send_hello(s);
	expect_sent(peer, "hello");
	read_accept(s);
	expect(s->buf_size == 1 << 20 && s->remote[0].qpn == 0x456 && s->remote[1].qpn == 0x457 &&
		       s->remote[0].psn == 0x123456 && s->remote[1].psn == 0x654321 && s->remote[1].mtu == 1024 &&
		       s->remote[1].gid[15] == 20,
	       "held, accept-send");
	handle_control(s);
	expect(s->upto[1] == 257 && s->upto[0] == 0, "posted");
	close(s->fd);
	close(peer);
}

/* check_end: the End of a 1 GiB stream, and the Done it gets. */
static void check_end(struct sender *s)
{
	int peer;

	s->fd = socket_with(&peer, (const char *const[]){"done", NULL});
	expect(finish(s) == 0, "done");
	expect_sent(peer, "end");
	close(s->fd);
	close(peer);
}

static void check_pattern(void)
{
	size_t n;
	uint8_t *want = golden(doc_ring, "pattern-seed-7", &n), *got = malloc(n + 8);

	pattern_fill(got, n, 7, 0);
	if (memcmp(got, want, n))
		die("c-sender's pattern differs from the bytes of pattern-seed-7");
	pattern_fill(got, n - 3, 7, 3);
	if (memcmp(got, want + 3, n - 3))
		die("c-sender's pattern at offset 3 differs from the bytes of pattern-seed-7");
	printf("check: ok pattern-seed-7\n");
	free(want);
	free(got);
}

/* check_placement: a 1000-byte block of 300-byte slices, a 2500-byte stream. */
static void check_placement(struct sender *s)
{
	static const uint64_t off[] = {0, 300, 600, 900, 1000, 1300, 1600, 1900, 2000, 2300};
	static const uint32_t len[] = {300, 300, 300, 100, 300, 300, 300, 100, 300, 200};

	s->buf_size = 1000;
	s->msg_bytes = 300;
	s->opt.bytes = 2500;
	if (count_slices(s) != 10)
		die("placement: %" PRIu64 " slices, want 10", count_slices(s));
	for (uint64_t g = 0; g < 10; g++) {
		struct slice sl = slice_at(s, g);

		if (sl.off != off[g] || sl.len != len[g])
			die("placement: slice %" PRIu64 " at %" PRIu64 "+%" PRIu32, g, sl.off, sl.len);
	}
	printf("check: ok placement\n");
}

int main(int argc, char **argv)
{
	struct sender s = {0};

	if (argc != 3)
		die("usage: check docs/wire-protocol.md docs/ring.md");
	doc_wire = slurp(argv[1]);
	doc_ring = slurp(argv[2]);
	check_handshake(&s);
	check_end(&s);
	check_pattern();
	check_placement(&s);
	return 0;
}
