/* Fair service across clients, seen from the clients: GREEDY connections,
 * each from an address of its own (127.0.0.11, .12, ...), keep DEPTH calls
 * of SIZE bytes in flight, while a light client (127.0.0.20) makes NLIGHT
 * calls one at a time. One process, one poll loop over all the sockets:
 * every send and every reply is an event numbered in the order this
 * process saw it, so what overtook what is counted, not timed.
 *
 * The greedy calls (-g MODE): "read" (the default), READs of SIZE bytes
 * walking the file NAME; "write", UNSTABLE WRITEs of SIZE bytes, each
 * client walking the first SPAN bytes (-s, default 256 MiB) of a file of
 * its own, wN in the directory NAME (made when absent); "readdirplus",
 * READDIRPLUS of the directory NAME from its start, SIZE bytes at most.
 *
 * For each light call: ahead, the greedy calls sent before it and not yet
 * answered when it was sent; overtaken, those of them answered after it.
 * Served first come, first served, a light call overtakes none of those
 * the server had queued before it; by deficit round robin it waits for
 * about one call of each greedy client (and what the workers were running,
 * and replies already on their way), so it overtakes most. With "check",
 * the median light call must overtake at least half of what was ahead of
 * it: the program exits 3 when it does not (1 is every other failure).
 *
 * KIND is the light call: "export" (MOUNT EXPORT, which always goes to the
 * workers, so the test is of their queue and not of the calls the event
 * loop answers itself) or "getattr" (NFS GETATTR of NAME, as a real light
 * client: the benchmark's; the loop answers it from its cache). The light
 * calls' round trips (p50, p99) and the greedy clients' throughput while
 * the light client ran are printed too, for the benchmark; the check never
 * looks at them.
 *
 * -t: the light client stops after this many seconds if its NLIGHT calls
 * are not done by then. NLIGHT 0: no light client; the greedy clients go
 * on until SIGTERM or SIGINT, then print their throughput since their
 * pipelines were full.
 *
 * For another server: -e, the path to mount (default /); -m, MOUNT's
 * port when it is not PORT (nfs-ganesha's; then KIND getattr).
 *
 * Usage: nfs_fair [-e EXPORT] [-g MODE] [-m MOUNTPORT] [-s SPAN] [-t SECONDS]
 *        HOST PORT NAME GREEDY DEPTH SIZE NLIGHT KIND [check] */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
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

enum mode { MODE_READ, MODE_WRITE, MODE_READDIRPLUS };
static const char *const mode_names[] = { "READs", "WRITEs", "READDIRPLUSes" };

/* One call: whose, the events of its send and of its reply (0: none yet). */
struct call {
	int who;
	uint64_t sent, answered;
	double t_sent, rtt_ms;
};

static struct call *calls;
static size_t ncalls, calls_cap;
static uint64_t events;

/* A connection: what its calls name, its records not yet taken by the
 * socket, and its reply parser (a record's marks, its first bytes: xid and
 * status; the rest skipped). */
struct peer {
	int fd;
	uint8_t fh[NFS3_FHSIZE];
	uint32_t fh_len;
	uint64_t next_off, span;
	uint8_t *out;
	size_t out_off, out_len, out_cap;
	uint32_t frag_left;
	int frag_last, in_record;
	uint8_t head[32];
	size_t head_len;
	uint64_t rec_len;
	uint8_t mark[4];
	size_t mark_len;
	uint64_t answered;
};

static struct peer peers[MAX_GREEDY + 1];
static int ngreedy, depth, stop_greedy;
static enum mode mode = MODE_READ;
static uint32_t call_size;
static int light_kind_export;
static uint8_t *write_data;

/* The greedy clients' work while it is measured. */
static int counting;
static uint64_t moved_bytes, moved_calls;

static volatile sig_atomic_t stopped;

static void on_signal(int sig)
{
	(void)sig;
	stopped = 1;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A connection from address from; with small_rcvbuf, a small receive
 * buffer, so that few of its replies wait in the kernel, unread (the
 * check's greedy clients; the benchmark's have the kernel's buffers, as
 * real clients do). */
static int peer_connect(const char *host, int port, const char *from, int small_rcvbuf)
{
	struct sockaddr_in src, dst;
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1, rcvbuf = 256 << 10;

	if (fd < 0)
		fail("socket: %s", strerror(errno));
	if (small_rcvbuf && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) < 0)
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

/* Bytes for the socket, after those already waiting. */
static void out_put(struct peer *pr, const void *data, size_t n)
{
	if (pr->out_off == pr->out_len)
		pr->out_off = pr->out_len = 0;
	if (pr->out_len + n > pr->out_cap) {
		size_t cap = pr->out_cap ? pr->out_cap : 64 << 10;
		if (pr->out_off) {
			memmove(pr->out, pr->out + pr->out_off, pr->out_len - pr->out_off);
			pr->out_len -= pr->out_off;
			pr->out_off = 0;
		}
		while (cap < pr->out_len + n)
			cap *= 2;
		if (cap != pr->out_cap) {
			pr->out = realloc(pr->out, cap);
			if (!pr->out)
				fail("out of memory");
			pr->out_cap = cap;
		}
	}
	memcpy(pr->out + pr->out_len, data, n);
	pr->out_len += n;
}

/* As much of what waits as the socket takes now. */
static void out_flush(int who)
{
	struct peer *pr = &peers[who];

	while (pr->out_off < pr->out_len) {
		ssize_t n = send(pr->fd, pr->out + pr->out_off, pr->out_len - pr->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			fail("send on connection %d: %s", who, strerror(errno));
		}
		pr->out_off += (size_t)n;
	}
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
	return p + 4;
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
	p = put32(p, (uint32_t)(v >> 32));
	return put32(p, (uint32_t)v);
}

static uint8_t *put_fh(uint8_t *p, const struct peer *pr)
{
	p = put32(p, pr->fh_len);
	memset(p, 0, (pr->fh_len + 3) & ~3u);
	memcpy(p, pr->fh, pr->fh_len);
	return p + ((pr->fh_len + 3) & ~3u);
}

/* A call record: the mark, the RPC header with AUTH_SYS (uid 0, gid 0),
 * the arguments, and a WRITE's data. */
static void send_call(int who, uint32_t prog, uint32_t proc, uint64_t off)
{
	struct peer *pr = &peers[who];
	uint8_t rec[256], *p = rec + 4;
	uint32_t data_len = 0;
	struct call *c;

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
		p = put_fh(p, pr);
	if (prog == NFS_PROGRAM && proc == NFS3_READ) {
		p = put64(p, off);
		p = put32(p, call_size);
	} else if (prog == NFS_PROGRAM && proc == NFS3_WRITE) {
		data_len = (call_size + 3) & ~3u;
		p = put64(p, off);
		p = put32(p, call_size);
		p = put32(p, 0); /* UNSTABLE */
		p = put32(p, call_size);
	} else if (prog == NFS_PROGRAM && proc == NFS3_READDIRPLUS) {
		p = put64(p, 0); /* cookie */
		p = put64(p, 0); /* cookieverf */
		p = put32(p, call_size); /* dircount */
		p = put32(p, call_size); /* maxcount */
	}
	put32(rec, 0x80000000u | (uint32_t)(p - rec - 4 + data_len));
	out_put(pr, rec, (size_t)(p - rec));
	if (data_len)
		out_put(pr, write_data, data_len);
	out_flush(who);
}

static void send_greedy(int g)
{
	struct peer *pr = &peers[g];

	if (mode == MODE_READDIRPLUS) {
		send_call(g, NFS_PROGRAM, NFS3_READDIRPLUS, 0);
		return;
	}
	send_call(g, NFS_PROGRAM, mode == MODE_READ ? NFS3_READ : NFS3_WRITE, pr->next_off);
	pr->next_off += call_size;
	if (pr->next_off + call_size > pr->span)
		pr->next_off = 0;
}

static void send_light(void)
{
	if (light_kind_export)
		send_call(LIGHT, MOUNT_PROGRAM, MOUNT3_EXPORT, 0);
	else
		send_call(LIGHT, NFS_PROGRAM, NFS3_GETATTR, 0);
}

/* A whole reply (len bytes) of which h holds the first hlen: xid, REPLY,
 * MSG_ACCEPTED, the verifier, SUCCESS, and for NFS an NFS3_OK status. */
static void reply_seen(int who, const uint8_t *h, size_t hlen, uint64_t len)
{
	uint32_t w[8];
	struct call *c;

	if (hlen < 24)
		fail("connection %d: a reply of %zu bytes", who, hlen);
	for (int i = 0; i < 6; i++) {
		memcpy(&w[i], h + 4 * i, 4);
		w[i] = ntohl(w[i]);
	}
	if (!w[0] || w[0] > ncalls || calls[w[0] - 1].who != who || calls[w[0] - 1].answered)
		fail("connection %d: a reply to xid %u, which it did not send", who, w[0]);
	c = &calls[w[0] - 1];
	if (w[1] != 1 || w[2] != 0 || w[4] != 0 || w[5] != 0)
		fail("connection %d: xid %u not accepted (%u %u %u %u)", who, w[0], w[1], w[2],
		     w[4], w[5]);
	if (hlen >= 28 && !(who == LIGHT && light_kind_export)) {
		memcpy(&w[6], h + 24, 4);
		if (ntohl(w[6]) != 0)
			fail("connection %d: xid %u: NFS status %u", who, w[0], ntohl(w[6]));
	}
	c->answered = ++events;
	c->rtt_ms = now_ms() - c->t_sent;
	peers[who].answered++;
	if (who == LIGHT)
		return;
	if (counting) {
		moved_calls++;
		moved_bytes += mode == MODE_WRITE ? call_size : len;
	}
	if (!stop_greedy)
		send_greedy(who);
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
				pr->rec_len = 0;
			}
		}
		size_t take = pr->frag_left < (size_t)n - at ? pr->frag_left : (size_t)n - at;
		size_t keep = sizeof(pr->head) - pr->head_len;
		if (keep > take)
			keep = take;
		memcpy(pr->head + pr->head_len, buf + at, keep);
		pr->head_len += keep;
		pr->rec_len += take;
		at += take;
		pr->frag_left -= (uint32_t)take;
		if (!pr->frag_left && pr->frag_last) {
			pr->in_record = 0;
			reply_seen(who, pr->head, pr->head_len, pr->rec_len);
		}
	}
}

/* One turn of the loop: every socket with something to send written to,
 * every readable one read. Returns early on a signal. */
static void turn(void)
{
	struct pollfd pfd[MAX_GREEDY + 1];
	int n = 0, map[MAX_GREEDY + 1], ret;

	for (int i = 0; i <= LIGHT; i++) {
		if (peers[i].fd < 0)
			continue;
		pfd[n].fd = peers[i].fd;
		pfd[n].events = POLLIN;
		if (peers[i].out_off < peers[i].out_len)
			pfd[n].events |= POLLOUT;
		map[n++] = i;
	}
	ret = poll(pfd, (nfds_t)n, 60000);
	if (ret == 0)
		fail("no reply for 60 s");
	if (ret < 0 && errno != EINTR)
		fail("poll: %s", strerror(errno));
	for (int i = 0; i < n && ret > 0; i++) {
		if (pfd[i].revents & POLLOUT)
			out_flush(map[i]);
		if (pfd[i].revents & ~POLLOUT)
			peer_read(map[i]);
	}
}

/* The object named by name in the export's root, with its size and type. */
static nfs_fh3 look_up(nfs_fh3 root, const char *name, uint64_t *size, ftype3 *type)
{
	LOOKUP3args la;
	LOOKUP3res lr;
	GETATTR3args ga;
	GETATTR3res gr;

	memset(&la, 0, sizeof(la));
	la.what.dir = root;
	la.what.name = (char *)name;
	lr = call_lookup(&la);
	expect("LOOKUP", lr.status, NFS3_OK);
	ga.object = lr.LOOKUP3res_u.resok.object;
	gr = call_getattr(&ga);
	expect("GETATTR", gr.status, NFS3_OK);
	*size = gr.GETATTR3res_u.resok.obj_attributes.size;
	*type = gr.GETATTR3res_u.resok.obj_attributes.type;
	return ga.object;
}

static void set_fh(struct peer *pr, nfs_fh3 fh)
{
	CHECK(fh.data.data_len <= sizeof(pr->fh), "a handle of %u bytes", fh.data.data_len);
	pr->fh_len = fh.data.data_len;
	memcpy(pr->fh, fh.data.data_val, fh.data.data_len);
}

/* Every connection's handle, over a libnfs connection of its own: NAME's
 * for the light client, and the greedy clients' files (a writer's made
 * when absent, its size left as it is). */
static void set_up(const char *host, int port, int mport, const char *path, const char *name,
		   uint64_t span)
{
	static char root_fh[NFS3_FHSIZE];
	mountres3 m;
	nfs_fh3 root, fh;
	uint64_t size;
	ftype3 type;

	call_connect(host, mport, 0, 0);
	m = call_mnt(path);
	CHECK(m.fhs_status == MNT3_OK, "MNT %s: %d", path, m.fhs_status);
	root = call_mnt_root(&m);
	if (mport != port) {
		CHECK(root.data.data_len <= sizeof(root_fh), "a root handle of %u bytes",
		      root.data.data_len);
		memcpy(root_fh, root.data.data_val, root.data.data_len);
		root.data.data_val = root_fh;
		call_disconnect();
		call_connect_nfs(host, port, 0, 0);
	}
	fh = look_up(root, name, &size, &type);
	CHECK((mode == MODE_READ) == (type == NF3REG), "%s: a %s is wanted", name,
	      mode == MODE_READ ? "file" : "directory");
	CHECK(mode != MODE_READ || size >= call_size, "%s has %llu bytes, less than one READ",
	      name, (unsigned long long)size);
	set_fh(&peers[LIGHT], fh);
	for (int g = 0; g < ngreedy; g++) {
		struct peer *pr = &peers[g];
		CREATE3args ca;
		CREATE3res cr;
		char wname[16];
		if (mode != MODE_WRITE) {
			set_fh(pr, fh);
			pr->span = size;
			pr->next_off = size / (uint64_t)ngreedy * (uint64_t)g / call_size * call_size;
			continue;
		}
		snprintf(wname, sizeof(wname), "w%d", g);
		memset(&ca, 0, sizeof(ca));
		ca.where.dir = fh;
		ca.where.name = wname;
		ca.how.mode = UNCHECKED;
		cr = call_create(&ca);
		expect("CREATE", cr.status, NFS3_OK);
		CHECK(cr.CREATE3res_u.resok.obj.handle_follows, "CREATE %s: no handle", wname);
		set_fh(pr, cr.CREATE3res_u.resok.obj.post_op_fh3_u.handle);
		pr->span = span;
	}
	call_disconnect();
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-e EXPORT] [-g read|write|readdirplus] [-m MOUNTPORT] [-s SPAN] "
		"[-t SECONDS] HOST PORT NAME GREEDY DEPTH SIZE NLIGHT KIND [check]\n",
		argv0);
	exit(2);
}

static void print_throughput(double t0, double t1)
{
	double s = (t1 - t0) / 1e3;

	printf("greedy throughput %.1f MiB/s, %.0f calls/s (%llu calls in %.2f s)\n",
	       (double)moved_bytes / (1 << 20) / s, (double)moved_calls / s,
	       (unsigned long long)moved_calls, s);
}

int main(int argc, char **argv)
{
	const char *host, *path = "/";
	int port, mport = 0, nlight, check, opt;
	double *rtt, *frac, t0, t1, median, limit_ms = 0;
	uint64_t sum_ahead = 0, sum_over = 0, max_between = 0, span = 256u << 20;
	size_t first_light, nl = 0;

	while ((opt = getopt(argc, argv, "e:g:m:s:t:")) != -1) {
		if (opt == 'e')
			path = optarg;
		else if (opt == 'g' && !strcmp(optarg, "read"))
			mode = MODE_READ;
		else if (opt == 'g' && !strcmp(optarg, "write"))
			mode = MODE_WRITE;
		else if (opt == 'g' && !strcmp(optarg, "readdirplus"))
			mode = MODE_READDIRPLUS;
		else if (opt == 'm')
			mport = atoi(optarg);
		else if (opt == 's')
			span = strtoull(optarg, NULL, 0);
		else if (opt == 't')
			limit_ms = atof(optarg) * 1e3;
		else
			usage(argv[0]);
	}
	argv += optind - 1;
	argc -= optind - 1;
	if (argc < 9)
		usage(argv[0]);
	host = argv[1];
	port = atoi(argv[2]);
	ngreedy = atoi(argv[4]);
	depth = atoi(argv[5]);
	call_size = (uint32_t)strtoul(argv[6], NULL, 0);
	nlight = atoi(argv[7]);
	light_kind_export = !strcmp(argv[8], "export");
	check = argc > 9 && !strcmp(argv[9], "check");
	if (ngreedy < 0 || ngreedy > MAX_GREEDY || depth < 1 || nlight < 0 || !call_size ||
	    (mode == MODE_WRITE && span < call_size) || (!nlight && !ngreedy))
		fail("bad arguments");
	if (mode == MODE_WRITE) {
		write_data = calloc(1, (call_size + 3) & ~3u);
		if (!write_data)
			fail("out of memory");
		for (uint32_t i = 0; i < call_size; i++)
			write_data[i] = (uint8_t)(i * 7 + 1);
	}
	set_up(host, port, mport ? mport : port, path, argv[3], span);
	for (int i = 0; i < ngreedy; i++) {
		char from[32];
		snprintf(from, sizeof(from), "127.0.0.%d", 11 + i);
		peers[i].fd = peer_connect(host, port, from, check);
	}
	for (int i = ngreedy; i < LIGHT; i++)
		peers[i].fd = -1;
	peers[LIGHT].fd = nlight ? peer_connect(host, port, "127.0.0.20", 0) : -1;
	if (!nlight) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
	}

	/* The greedy clients fill their pipelines, and each has had DEPTH
	 * replies (the server's queues full) before anything is measured. */
	for (int g = 0; g < ngreedy; g++)
		for (int i = 0; i < depth; i++)
			send_greedy(g);
	for (int g = 0; g < ngreedy; g++)
		while (peers[g].answered < (uint64_t)depth)
			turn();
	counting = 1;
	t0 = now_ms();
	if (!nlight) {
		while (!stopped)
			turn();
		print_throughput(t0, now_ms());
		return 0;
	}
	first_light = ncalls;
	for (int i = 0; i < nlight && !(limit_ms && now_ms() - t0 >= limit_ms); i++) {
		size_t me;
		send_light();
		me = ncalls - 1;
		while (!calls[me].answered)
			turn();
	}
	stop_greedy = 1;
	t1 = now_ms();

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
		for (size_t i = 0; i < ncalls && ngreedy; i++) {
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
	median = frac[nl / 2];
	printf("light calls %zu (%s), greedy clients %d x %d %s of %u bytes in flight\n", nl,
	       light_kind_export ? "MOUNT EXPORT" : "GETATTR", ngreedy, depth, mode_names[mode],
	       call_size);
	printf("greedy calls ahead of a light call %.1f on average, overtaken by it %.1f "
	       "(median share %.2f, lowest %.2f); greedy replies between a light call and its "
	       "reply at most %llu\n",
	       (double)sum_ahead / (double)nl, (double)sum_over / (double)nl, median, frac[0],
	       (unsigned long long)max_between);
	printf("light round trip p50 %.3f ms p99 %.3f ms\n", rtt[nl / 2],
	       rtt[(nl * 99) / 100 < nl ? (nl * 99) / 100 : nl - 1]);
	if (ngreedy)
		print_throughput(t0, t1);
	for (int i = 0; i <= LIGHT; i++)
		if (peers[i].fd >= 0)
			close(peers[i].fd);
	free(rtt);
	free(frac);
	free(calls);
	free(write_data);
	if (check && ngreedy && median < 0.5) {
		printf("not met: the median light call overtook %.2f of the greedy calls ahead "
		       "of it (at least 0.5 wanted)\n",
		       median);
		return 3;
	}
	return 0;
}
