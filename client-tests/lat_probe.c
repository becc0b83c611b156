/* lat_probe: one client's latency, one call in flight, for the benchmarks of
 * what a repair or a scrub costs the other clients (bench/repair-probe.sh,
 * bench/scrub-bench.sh). Not a test: it prints figures.
 *
 *   lat_probe HOST PORT MODE SECONDS LATENCIES PATH
 *
 * PATH is looked up once from the export's root ("/" is the root itself)
 * before the first timed turn, so a probe holding a handle in one chunk
 * needs nothing of another while it runs. Then, one turn after another
 * until SECONDS pass or SIGTERM comes:
 *   getattr      a GETATTR of PATH
 *   read         a READ of 4 KiB of the file PATH, the offset stepping by
 *                4 KiB through its first MiB (or its size, when smaller)
 *   lookup-read  PATH a directory whose files are listed once (READDIRPLUS):
 *                a LOOKUP of the next one's name and a READ of its first
 *                4 KiB, timed together as one turn
 *   create       PATH a directory (made when missing): a CREATE (UNCHECKED)
 *                of a new name, p<pid>_<n>
 * Every reply must be NFS3_OK (else FAIL, exit 1). LATENCIES gets a line a
 * turn, "START US": when it began (CLOCK_REALTIME in ns, as `date +%s%N`
 * prints it, for cutting out a window) and its latency in microseconds
 * (CLOCK_MONOTONIC). On stdout, a summary of all turns:
 *   MODE: N turns, median X us, p99 X us, max X us, N over 10 ms
 * (p99 the nearest rank: the ceil(0.99 N)-th smallest). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nfs_raw.h"

#define PROBE_IO 4096u
#define READ_SPAN (1u << 20)
#define REPLY_WAIT_MS 10000

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* --- a READ whose bytes are not kept (nfs_raw's call_read keeps them all) --- */

struct read_wait {
	int done;
	int rpc_status;
	nfsstat3 status;
};

static void on_read(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	struct read_wait *w = private_data;

	(void)rpc;
	w->done = 1;
	w->rpc_status = status;
	if (status == RPC_STATUS_SUCCESS)
		w->status = ((READ3res *)data)->status;
}

static void read_4k(nfs_fh3 fh, uint64_t off)
{
	struct rpc_context *rpc = call_context();
	READ3args a = { .file = fh, .offset = off, .count = PROBE_IO };
	struct read_wait w = { 0 };

	CHECK(rpc_nfs3_read_async(rpc, on_read, &a, &w) == 0, "READ: cannot send: %s",
	      rpc_get_error(rpc));
	while (!w.done) {
		struct pollfd pfd = { .fd = rpc_get_fd(rpc), .events = rpc_which_events(rpc) };
		int n = poll(&pfd, 1, REPLY_WAIT_MS);

		if (n < 0 && errno == EINTR)
			continue;
		CHECK(n > 0, "READ: %s", n < 0 ? strerror(errno) : "no reply within 10 s");
		CHECK(rpc_service(rpc, pfd.revents) >= 0 || w.done, "READ: connection lost: %s",
		      rpc_get_error(rpc));
	}
	CHECK(w.rpc_status == RPC_STATUS_SUCCESS, "READ: the RPC failed");
	expect("READ", w.status, NFS3_OK);
}

static LOOKUP3res lookup(nfs_fh3 dir, const char *name)
{
	LOOKUP3args a = { .what = { .dir = dir, .name = (char *)name } };

	return call_lookup(&a);
}

/* --- before the loop: the path, the file's size, a directory's files ------ */

/* The handle of path from the root; with make_last, a missing last
 * component is made a directory. */
static nfs_fh3 walk(const char *path, int make_last)
{
	mountres3 m = call_mnt("/");
	char *copy = strdup(path), *save = NULL, *names[64];
	int n = 0;
	nfs_fh3 fh;

	CHECK(m.fhs_status == MNT3_OK, "MNT /: status %d", m.fhs_status);
	CHECK(copy, "out of memory");
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		CHECK(n < 64, "%s: too deep", path);
		names[n++] = c;
	}
	fh = call_mnt_root(&m);
	for (int i = 0; i < n; i++) {
		LOOKUP3res r = lookup(fh, names[i]);

		if (r.status == NFS3ERR_NOENT && i == n - 1 && make_last) {
			MKDIR3args a = { .where = { .dir = fh, .name = names[i] } };
			MKDIR3res k = call_mkdir(&a);

			expect("MKDIR", k.status, NFS3_OK);
			CHECK(k.MKDIR3res_u.resok.obj.handle_follows, "MKDIR %s: no handle", names[i]);
			fh = k.MKDIR3res_u.resok.obj.post_op_fh3_u.handle;
			break;
		}
		expect(names[i], r.status, NFS3_OK);
		fh = r.LOOKUP3res_u.resok.object;
	}
	free(copy); /* (the handles returned are nfs_raw's copies) */
	return fh;
}

static uint64_t size_of(nfs_fh3 fh)
{
	GETATTR3args a = { .object = fh };
	GETATTR3res r = call_getattr(&a);

	expect("GETATTR", r.status, NFS3_OK);
	return r.GETATTR3res_u.resok.obj_attributes.size;
}

/* The regular files of directory dir (their names, nfs_raw's copies). */
static char **list_files(nfs_fh3 dir, size_t *count)
{
	size_t n = 0, cap = 64;
	char **names = malloc(cap * sizeof(*names));
	cookie3 cookie = 0;
	cookieverf3 verf = { 0 };

	CHECK(names, "out of memory");
	for (;;) {
		READDIRPLUS3args a = { .dir = dir, .cookie = cookie, .dircount = 8192,
				       .maxcount = 32768 };
		READDIRPLUS3res r;

		memcpy(a.cookieverf, verf, sizeof(verf));
		r = call_readdirplus(&a);
		expect("READDIRPLUS", r.status, NFS3_OK);
		for (entryplus3 *e = r.READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
			cookie = e->cookie;
			if (!e->name_attributes.attributes_follow ||
			    e->name_attributes.post_op_attr_u.attributes.type != NF3REG)
				continue;
			if (n == cap) {
				cap *= 2;
				names = realloc(names, cap * sizeof(*names));
				CHECK(names, "out of memory");
			}
			names[n++] = e->name;
		}
		if (r.READDIRPLUS3res_u.resok.reply.eof)
			break;
		memcpy(verf, r.READDIRPLUS3res_u.resok.cookieverf, sizeof(verf));
	}
	CHECK(n > 0, "no files in the directory");
	*count = n;
	return names;
}

/* --- the loop ---------------------------------------------------------------- */

enum mode { M_GETATTR, M_READ, M_LOOKUP_READ, M_CREATE };

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void probe(enum mode mode, const char *mode_name, int seconds, const char *out_path,
		  const char *path)
{
	nfs_fh3 fh = walk(path, mode == M_CREATE);
	uint64_t span = 0, turn = 0;
	size_t nfiles = 0, n = 0, cap = 1 << 16, slow = 0;
	char **files = NULL;
	uint32_t *lat = malloc(cap * sizeof(*lat));
	FILE *out = fopen(out_path, "w");
	uint64_t end = clock_ns(CLOCK_MONOTONIC) + (uint64_t)seconds * 1000000000u;

	CHECK(lat && out, "%s: %s", out_path, strerror(errno));
	if (mode == M_READ) {
		span = size_of(fh);
		span = span > READ_SPAN ? READ_SPAN : span;
		span = span / PROBE_IO ? span / PROBE_IO : 1; /* in 4 KiB steps */
	} else if (mode == M_LOOKUP_READ) {
		files = list_files(fh, &nfiles);
	}
	while (!stop && clock_ns(CLOCK_MONOTONIC) < end) {
		uint64_t wall = clock_ns(CLOCK_REALTIME), t = clock_ns(CLOCK_MONOTONIC);
		uint32_t us;

		if (mode == M_GETATTR) {
			GETATTR3args a = { .object = fh };
			expect("GETATTR", call_getattr(&a).status, NFS3_OK);
		} else if (mode == M_READ) {
			read_4k(fh, turn % span * PROBE_IO);
		} else if (mode == M_LOOKUP_READ) {
			LOOKUP3res r = lookup(fh, files[turn % nfiles]);
			expect("LOOKUP", r.status, NFS3_OK);
			read_4k(r.LOOKUP3res_u.resok.object, 0);
		} else {
			char name[64];
			CREATE3args a;
			memset(&a, 0, sizeof(a));
			snprintf(name, sizeof(name), "p%ld_%" PRIu64, (long)getpid(), turn);
			a.where.dir = fh;
			a.where.name = name;
			a.how.mode = UNCHECKED;
			expect("CREATE", call_create(&a).status, NFS3_OK);
		}
		us = (uint32_t)((clock_ns(CLOCK_MONOTONIC) - t) / 1000u);
		turn++;
		if (n == cap) {
			cap *= 2;
			lat = realloc(lat, cap * sizeof(*lat));
			CHECK(lat, "out of memory");
		}
		lat[n++] = us;
		slow += us > 10000;
		fprintf(out, "%" PRIu64 " %" PRIu32 "\n", wall, us);
	}
	CHECK(fclose(out) == 0, "%s: %s", out_path, strerror(errno));
	CHECK(n > 0, "no turn in %d s", seconds);
	qsort(lat, n, sizeof(*lat), cmp_u32);
	printf("%s: %zu turns, median %" PRIu32 " us, p99 %" PRIu32 " us, max %" PRIu32
	       " us, %zu over 10 ms\n",
	       mode_name, n, lat[(n - 1) / 2], lat[(n * 99 + 99) / 100 - 1], lat[n - 1], slow);
	free(lat);
	free(files);
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "getattr", "read", "lookup-read", "create" };
	struct sigaction sa;
	int mode = -1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; argc == 7 && i < 4; i++)
		if (!strcmp(argv[3], names[i]))
			mode = i;
	if (mode < 0 || atoi(argv[4]) <= 0) {
		fprintf(stderr, "usage: lat_probe HOST PORT getattr|read|lookup-read|create SECONDS "
				"LATENCIES PATH\n");
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term; /* no SA_RESTART: the call under way ends, then the loop */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	call_connect(argv[1], atoi(argv[2]), 0, 0);
	probe((enum mode)mode, names[mode], atoi(argv[4]), argv[5], argv[6]);
	call_disconnect();
	return 0;
}
