/* Fair service across clients, seen from the clients: GREEDY connections,
 * each from an address of its own (127.0.0.11, .12, ...), keep DEPTH
 * READs of SIZE bytes of FILE in flight, while a light client (127.0.0.20)
 * makes NLIGHT calls one at a time. One process, one poll loop over all
 * the sockets: every send and every reply is an event numbered in the
 * order this process saw it, so what overtook what is counted, not timed.
 *
 * For each light call: ahead, the greedy READs sent before it and not yet
 * answered when it was sent; overtaken, those of them answered after it.
 * Served first-come first-served, a light call overtakes none; by deficit
 * round robin it waits for about one READ of each greedy client (and what
 * the workers were running, and replies already on their way), so it
 * overtakes most. With "check", the median light call must overtake at
 * least half of what was ahead of it, and the program fails otherwise.
 *
 * KIND is the light call: "export" (MOUNT EXPORT, which always goes to the
 * workers, so the test is of their queue and not of the calls the event
 * loop answers itself) or "getattr" (NFS GETATTR of FILE, as a real light
 * client; the benchmark's). The light calls' round trips are printed too
 * (p50, p99), for the benchmark; the check never looks at them.
 *
 * Usage: nfs_fair HOST PORT FILE GREEDY DEPTH SIZE NLIGHT KIND [check] */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nfs_raw.h"

#define MAX_GREEDY 16
#define LIGHT MAX_GREEDY /* the light client's connection */

static uint8_t fh[NFS3_FHSIZE];
static uint32_t fh_len;
static uint64_t file_size;

/* One call: whose, the events of its send and of its reply (0: none yet). */
struct call {
	int who;
	uint64_t sent, answered;
	double t_sent, rtt_ms;
};

static struct call *calls;
static size_t ncalls, calls_cap;
static uint64_t events;

/* A connection and its reply parser: a record's marks, its first bytes
 * (xid and status), the rest skipped. */
struct peer {
	int fd;
	uint32_t frag_left;
	int frag_last, in_record;
	uint8_t head[32];
	size_t head_len;
	uint8_t mark[4];
	size_t mark_len;
	int in_flight;
	uint64_t next_off;
};

static struct peer peers[MAX_GREEDY + 1];
static int ngreedy, depth, stop_greedy;
static uint32_t read_size;
static int light_kind_export;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A connection from address from; a greedy one with a small receive
 * buffer, so that few of its replies wait in the kernel, unread. */
static int peer_connect(const char *host, int port, const char *from, int greedy)
{
	struct sockaddr_in src, dst;
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1, rcvbuf = 256 << 10;

	if (fd < 0)
		fail("socket: %s", strerror(errno));
	if (greedy && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) < 0)
		fail("SO_RCVBUF: %s", strerror(errno));
	memset(&src, 0, sizeof(src));
	src.sin_family = AF_INET;
	inet_pton(AF_INET, from, &src.sin_addr);
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0)
		fail("bind %s: %s", from, strerror(errno));
	memset(&dst, 0, sizeof(dst));
	dst.sin_family = AF_INET;
	dst.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, host, &dst.sin_addr);
	if (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0)
		fail("connect from %s: %s", from, strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
	return p + 4;
}

static uint8_t *put_fh(uint8_t *p)
{
	p = put32(p, fh_len);
	memset(p, 0, (fh_len + 3) & ~3u);
	memcpy(p, fh, fh_len);
	return p + ((fh_len + 3) & ~3u);
}

/* A call record: the mark, the RPC header with AUTH_SYS (uid 0, gid 0),
 * then the arguments. */
static void send_call(int who, uint32_t prog, uint32_t proc, uint64_t off)
{
	uint8_t rec[256], *p = rec + 4;
	struct call *c;
	ssize_t n;

	if (ncalls == calls_cap) {
		calls_cap = calls_cap ? 2 * calls_cap : 4096;
		calls = realloc(calls, calls_cap * sizeof(*calls));
		if (!calls)
			fail("out of memory");
	}
	c = &calls[ncalls++];
	c->who = who;
	c->sent = ++events;
	c->answered = 0;
	c->t_sent = now_ms();
	p = put32(p, (uint32_t)ncalls); /* xid: the call's number */
	p = put32(p, 0);                /* CALL */
	p = put32(p, 2);
	p = put32(p, prog);
	p = put32(p, 3);
	p = put32(p, proc);
	p = put32(p, 1); /* AUTH_SYS: stamp, "fair", uid, gid, no groups */
	p = put32(p, 24);
	p = put32(p, 0);
	p = put32(p, 4);
	memcpy(p, "fair", 4);
	p += 4;
	p = put32(p, 0);
	p = put32(p, 0);
	p = put32(p, 0);
	p = put32(p, 0); /* verifier: AUTH_NONE */
	p = put32(p, 0);
	if (prog == NFS_PROGRAM)
		p = put_fh(p);
	if (prog == NFS_PROGRAM && proc == NFS3_READ) {
		p = put32(p, (uint32_t)(off >> 32));
		p = put32(p, (uint32_t)off);
		p = put32(p, read_size);
	}
	put32(rec, 0x80000000u | (uint32_t)(p - rec - 4));
	n = send(peers[who].fd, rec, (size_t)(p - rec), MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n != p - rec)
		fail("send on connection %d: %s", who, n < 0 ? strerror(errno) : "short");
	peers[who].in_flight++;
}

static void send_read(int g)
{
	struct peer *pr = &peers[g];

	send_call(g, NFS_PROGRAM, NFS3_READ, pr->next_off);
	pr->next_off += read_size;
	if (pr->next_off + read_size > file_size)
		pr->next_off = 0;
}

static void send_light(void)
{
	if (light_kind_export)
		send_call(LIGHT, MOUNT_PROGRAM, MOUNT3_EXPORT, 0);
	else
		send_call(LIGHT, NFS_PROGRAM, NFS3_GETATTR, 0);
}

/* A whole reply's first bytes: xid, REPLY, MSG_ACCEPTED, the verifier,
 * SUCCESS, and for NFS an NFS3_OK status. */
static void reply_seen(int who, const uint8_t *h, size_t len)
{
	uint32_t w[8];
	struct call *c;

	if (len < 24)
		fail("connection %d: a reply of %zu bytes", who, len);
	for (int i = 0; i < 6 && 4 * (size_t)i + 4 <= len; i++) {
		memcpy(&w[i], h + 4 * i, 4);
		w[i] = ntohl(w[i]);
	}
	if (!w[0] || w[0] > ncalls || calls[w[0] - 1].who != who || calls[w[0] - 1].answered)
		fail("connection %d: a reply to xid %u, which it did not send", who, w[0]);
	c = &calls[w[0] - 1];
	if (w[1] != 1 || w[2] != 0 || w[4] != 0 || w[5] != 0)
		fail("connection %d: xid %u not accepted (%u %u %u %u)", who, w[0], w[1], w[2],
		     w[4], w[5]);
	if (len >= 28 && !(who == LIGHT && light_kind_export)) {
		memcpy(&w[6], h + 24, 4);
		if (ntohl(w[6]) != 0)
			fail("connection %d: xid %u: NFS status %u", who, w[0], ntohl(w[6]));
	}
	c->answered = ++events;
	c->rtt_ms = now_ms() - c->t_sent;
	peers[who].in_flight--;
	if (who != LIGHT && !stop_greedy)
		send_read(who);
}

/* What the socket holds now, parsed. */
static void peer_read(int who)
{
	static uint8_t buf[256 << 10];
	struct peer *pr = &peers[who];
	ssize_t n = recv(pr->fd, buf, sizeof(buf), MSG_DONTWAIT);
	size_t at = 0;

	if (n == 0)
		fail("connection %d closed by the server", who);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		fail("recv on connection %d: %s", who, strerror(errno));
	}
	while (at < (size_t)n) {
		if (!pr->frag_left) {
			size_t take = 4 - pr->mark_len;
			uint32_t m;
			if (take > (size_t)n - at)
				take = (size_t)n - at;
			memcpy(pr->mark + pr->mark_len, buf + at, take);
			pr->mark_len += take;
			at += take;
			if (pr->mark_len < 4)
				break;
			pr->mark_len = 0;
			memcpy(&m, pr->mark, 4);
			m = ntohl(m);
			pr->frag_left = m & 0x7fffffffu;
			pr->frag_last = !!(m & 0x80000000u);
			if (!pr->in_record) {
				pr->in_record = 1;
				pr->head_len = 0;
			}
		}
		size_t take = pr->frag_left < (size_t)n - at ? pr->frag_left : (size_t)n - at;
		size_t keep = sizeof(pr->head) - pr->head_len;
		if (keep > take)
			keep = take;
		memcpy(pr->head + pr->head_len, buf + at, keep);
		pr->head_len += keep;
		at += take;
		pr->frag_left -= (uint32_t)take;
		if (!pr->frag_left && pr->frag_last) {
			pr->in_record = 0;
			reply_seen(who, pr->head, pr->head_len);
		}
	}
}

/* One turn of the loop: every readable socket read. */
static void turn(void)
{
	struct pollfd pfd[MAX_GREEDY + 1];
	int n = 0, map[MAX_GREEDY + 1], ret;

	for (int i = 0; i <= LIGHT; i++) {
		if (peers[i].fd < 0)
			continue;
		pfd[n].fd = peers[i].fd;
		pfd[n].events = POLLIN;
		map[n++] = i;
	}
	ret = poll(pfd, (nfds_t)n, 60000);
	if (ret == 0)
		fail("no reply for 60 s");
	if (ret < 0 && errno != EINTR)
		fail("poll: %s", strerror(errno));
	for (int i = 0; i < n && ret > 0; i++)
		if (pfd[i].revents)
			peer_read(map[i]);
}

/* The file's handle and size, over a libnfs connection of its own. */
static void look_up(const char *host, int port, const char *name)
{
	mountres3 m;
	LOOKUP3args la;
	LOOKUP3res lr;
	GETATTR3args ga;
	GETATTR3res gr;

	call_connect(host, port, 0, 0);
	m = call_mnt("/");
	CHECK(m.fhs_status == MNT3_OK, "MNT /: %d", m.fhs_status);
	memset(&la, 0, sizeof(la));
	la.what.dir.data.data_len = m.mountres3_u.mountinfo.fhandle.fhandle3_len;
	la.what.dir.data.data_val = m.mountres3_u.mountinfo.fhandle.fhandle3_val;
	la.what.name = (char *)name;
	lr = call_lookup(&la);
	expect("LOOKUP", lr.status, NFS3_OK);
	fh_len = lr.LOOKUP3res_u.resok.object.data.data_len;
	CHECK(fh_len <= sizeof(fh), "a handle of %u bytes", fh_len);
	memcpy(fh, lr.LOOKUP3res_u.resok.object.data.data_val, fh_len);
	ga.object = lr.LOOKUP3res_u.resok.object;
	gr = call_getattr(&ga);
	expect("GETATTR", gr.status, NFS3_OK);
	file_size = gr.GETATTR3res_u.resok.obj_attributes.size;
	call_disconnect();
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *host;
	int port, nlight, check;
	double *rtt, *frac;
	uint64_t sum_ahead = 0, sum_over = 0, max_between = 0;
	size_t first_light, nl = 0;

	if (argc < 9) {
		fprintf(stderr, "usage: %s HOST PORT FILE GREEDY DEPTH SIZE NLIGHT KIND [check]\n",
			argv[0]);
		return 2;
	}
	host = argv[1];
	port = atoi(argv[2]);
	ngreedy = atoi(argv[4]);
	depth = atoi(argv[5]);
	read_size = (uint32_t)strtoul(argv[6], NULL, 0);
	nlight = atoi(argv[7]);
	light_kind_export = !strcmp(argv[8], "export");
	check = argc > 9 && !strcmp(argv[9], "check");
	if (ngreedy < 0 || ngreedy > MAX_GREEDY || depth < 1 || nlight < 1 || !read_size)
		fail("bad arguments");
	look_up(host, port, argv[3]);
	if (file_size < read_size)
		fail("%s has %llu bytes, less than one READ", argv[3], (unsigned long long)file_size);
	for (int i = 0; i <= LIGHT; i++)
		peers[i].fd = -1;
	for (int g = 0; g < ngreedy; g++) {
		char from[32];
		snprintf(from, sizeof(from), "127.0.0.%d", 11 + g);
		peers[g].fd = peer_connect(host, port, from, 1);
		peers[g].next_off = file_size / (uint64_t)ngreedy * (uint64_t)g / read_size *
				    read_size;
	}
	peers[LIGHT].fd = peer_connect(host, port, "127.0.0.20", 0);

	/* The greedy clients fill their pipelines, and each has had DEPTH
	 * replies (the file is in the page cache, the server's queues full)
	 * before the light client starts. */
	for (int g = 0; g < ngreedy; g++)
		for (int i = 0; i < depth; i++)
			send_read(g);
	for (int g = 0; g < ngreedy; g++) {
		for (;;) {
			size_t answered = 0;
			for (size_t i = 0; i < ncalls; i++)
				answered += calls[i].who == g && calls[i].answered;
			if (answered >= (size_t)depth)
				break;
			turn();
		}
	}
	first_light = ncalls;
	for (int i = 0; i < nlight; i++) {
		size_t me;
		send_light();
		me = ncalls - 1;
		while (!calls[me].answered)
			turn();
	}
	stop_greedy = 1;

	/* What overtook what. */
	rtt = calloc((size_t)nlight, sizeof(*rtt));
	frac = calloc((size_t)nlight, sizeof(*frac));
	if (!rtt || !frac)
		fail("out of memory");
	for (size_t l = first_light; l < ncalls; l++) {
		const struct call *lc = &calls[l];
		uint64_t ahead = 0, over = 0, between = 0;
		if (lc->who != LIGHT)
			continue;
		for (size_t i = 0; i < ncalls; i++) {
			const struct call *g = &calls[i];
			if (g->who == LIGHT)
				continue;
			if (g->sent < lc->sent && (!g->answered || g->answered > lc->sent)) {
				ahead++;
				over += !g->answered || g->answered > lc->answered;
			}
			between += g->answered > lc->sent && g->answered < lc->answered;
		}
		sum_ahead += ahead;
		sum_over += over;
		if (between > max_between)
			max_between = between;
		frac[nl] = ahead ? (double)over / (double)ahead : 1.0;
		rtt[nl++] = lc->rtt_ms;
	}
	qsort(rtt, nl, sizeof(*rtt), cmp_double);
	qsort(frac, nl, sizeof(*frac), cmp_double);
	printf("light calls %zu (%s), greedy clients %d x %d READs of %u bytes in flight\n", nl,
	       light_kind_export ? "MOUNT EXPORT" : "GETATTR", ngreedy, depth, read_size);
	printf("greedy READs ahead of a light call %.1f on average, overtaken by it %.1f "
	       "(median share %.2f, lowest %.2f); greedy replies between a light call and its "
	       "reply at most %llu\n",
	       (double)sum_ahead / (double)nl, (double)sum_over / (double)nl, frac[nl / 2],
	       frac[0], (unsigned long long)max_between);
	printf("light round trip p50 %.3f ms p99 %.3f ms\n", rtt[nl / 2],
	       rtt[(nl * 99) / 100 < nl ? (nl * 99) / 100 : nl - 1]);
	if (check && ngreedy && frac[nl / 2] < 0.5)
		fail("the median light call overtook %.2f of the greedy READs ahead of it "
		     "(at least 0.5 wanted)",
		     frac[nl / 2]);
	for (int i = 0; i <= LIGHT; i++)
		if (peers[i].fd >= 0)
			close(peers[i].fd);
	free(rtt);
	free(frac);
	free(calls);
	return 0;
}
