/* The client side of the service tests (reload.sh, crash-commit.sh), over
 * libnfs's raw API (nfs_raw.h):
 *
 *   svc_client HOST PORT reload TO_RO BROKEN TO_RW
 *       One connection throughout. A WRITE succeeds; the shell command TO_RO
 *       (which rewrites the export as access=ro and sends SIGHUP) runs; on
 *       the same TCP connection WRITE and CREATE now get NFS3ERR_ROFS and
 *       READ still works; BROKEN (a config with errors, SIGHUP) changes
 *       nothing; after TO_RW writes work again.
 *   svc_client HOST PORT commit-stream STATE ACKS
 *       UNSTABLE writes of numbered records, a COMMIT after every BATCH;
 *       once a COMMIT succeeds with the verifier the batch's writes got,
 *       the batch's record numbers go to ACKS. Until the server goes away.
 *   svc_client HOST PORT commit-verify STATE ACKS
 *       After a restart, every record in ACKS is there.
 *   svc_client HOST PORT getattr-loop SECONDS LATENCIES
 *       GETATTR of the export's root, one call after another, for SECONDS;
 *       each call's latency in microseconds, one a line, to LATENCIES; a
 *       summary line on stdout (calls, median, 99.9th percentile, max,
 *       calls over 10 ms) for the benchmark of a repair's stall.
 *   svc_client HOST PORT full-disk FILL FREE
 *       A MKDIR succeeds; FILL (which fills the file system holding the
 *       volume) runs; the directory's first CREATE, whose unit needs blocks
 *       of the image never written before, gets NFS3ERR_IO, and so do 8
 *       CREATEs sent together on the connection (their commits still carry
 *       that unit: the daemon answers some from the worker that syncs,
 *       others it held for that sync). FREE runs; a CREATE succeeds, and
 *       the 9 files are there: a change whose commit failed stays in
 *       memory and goes out with the next one.
 *   svc_client HOST PORT unstable-write NAME RECORDS
 *       NAME created in the root and RECORDS records written to it
 *       UNSTABLE, in order, with no COMMIT (delayed allocation's timer
 *       test: the data must reach the disk without one).
 *   svc_client HOST PORT read-verify NAME RECORDS
 *       NAME holds exactly those records.
 *   svc_client HOST PORT interleave DIR PIECES
 *       Three files made in a new directory DIR, then PIECES 4 KiB
 *       UNSTABLE writes to each by turns, then a COMMIT of each.
 *   svc_client HOST PORT prealloc DIR PIECES
 *       In a new directory DIR, other.dat and then app.log made; PIECES
 *       4 KiB UNSTABLE writes to each by turns, then a COMMIT of each.
 *       Prints the free blocks FSSTAT lost at each step: "created=N"
 *       (app.log's CREATE: its reservation), "written=N" (after the
 *       writes), "committed=N" (after the COMMITs), each counted from
 *       just after other.dat's CREATE. PIECES -1: no writes and no
 *       COMMIT, only "created=N".
 *   svc_client HOST PORT commit-retry DIR FILES
 *       FILES files made in the existing directory DIR (a CREATE that
 *       fails is sent again), each written in 16 UNSTABLE WRITEs of 4 KiB
 *       (in runs of 4 with a hole of 4 KiB after each run),
 *       then COMMITted until a COMMIT answers NFS3_OK (at most 60 tries,
 *       250 ms apart; every failed one NFS3ERR_IO, or with
 *       SVC_COMMIT_ERROR=NOSPC NFS3ERR_NOSPC too) with the verifier its writes got, the writes never
 *       sent again; then every file reads back exactly. For delayed
 *       allocation behind a faulty NBD server: a failed placement keeps
 *       the data and a later COMMIT places it. Prints how many COMMITs
 *       failed.
 *   svc_client HOST PORT commit-check DIR FILES
 *       The files commit-retry wrote read back exactly.
 *   svc_client HOST PORT rewrite DIR PIECES
 *       DIR/f1 (interleave's) rewritten whole in PIECES UNSTABLE WRITEs of
 *       4 KiB, new bytes, in the order 0, 2, 1, 4, 3, ... (as several
 *       WRITEs in flight arrive), then COMMITted; it reads back exactly
 *       (reallocation on rewrite's server test). */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "nfs_raw.h"

#define RECORD 8192
#define BATCH 4
#define MAX_RECORDS 40000

/* The bytes of record n, recomputed by the verifier. */
static void fill(char *buf, size_t len, uint32_t n)
{
	uint32_t x = n * 2654435761u + 12345u;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (char)(x >> 23);
	}
}

static nfs_fh3 mount_root(void)
{
	mountres3 m = call_mnt("/");

	CHECK(m.fhs_status == MNT3_OK, "MNT /: status %d", m.fhs_status);
	return call_mnt_root(&m);
}

static CREATE3res create(nfs_fh3 dir, const char *name)
{
	CREATE3args a;

	memset(&a, 0, sizeof(a));
	a.where.dir = dir;
	a.where.name = (char *)name;
	a.how.mode = UNCHECKED;
	return call_create(&a);
}

static nfs_fh3 create_ok(nfs_fh3 dir, const char *name)
{
	CREATE3res r = create(dir, name);

	expect(name, r.status, NFS3_OK);
	CHECK(r.CREATE3res_u.resok.obj.handle_follows, "CREATE %s: no handle", name);
	return r.CREATE3res_u.resok.obj.post_op_fh3_u.handle;
}

static WRITE3res write_at(nfs_fh3 fh, uint64_t off, const char *data, size_t len)
{
	WRITE3args a = { .file = fh, .offset = off, .count = (count3)len, .stable = FILE_SYNC };

	a.data.data_len = (u_int)len;
	a.data.data_val = (char *)data;
	return call_write(&a);
}

static void read_is(const char *what, nfs_fh3 fh, const char *want, size_t len)
{
	READ3args a = { .file = fh, .offset = 0, .count = (count3)len };
	READ3res r = call_read(&a);

	expect(what, r.status, NFS3_OK);
	CHECK(r.READ3res_u.resok.data.data_len == len &&
		      !memcmp(r.READ3res_u.resok.data.data_val, want, len),
	      "%s: %u bytes, not the %zu written", what, r.READ3res_u.resok.data.data_len, len);
}

/* The local port of the connection: the same one means the same TCP
 * connection (libnfs did not reconnect). */
static unsigned local_port(void)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(rpc_get_fd(call_context()), (struct sockaddr *)&ss, &len) < 0)
		fail("getsockname: %s", strerror(errno));
	return ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					     : ((struct sockaddr_in6 *)&ss)->sin6_port);
}

static void run(const char *cmd)
{
	int st = system(cmd);

	CHECK(st == 0, "command failed (status %d): %s", st, cmd);
}

static void reload(const char *to_ro, const char *broken, const char *to_rw)
{
	nfs_fh3 root = mount_root(), f;
	unsigned port0;
	WRITE3res w;

	f = create_ok(root, "reload.dat");
	w = write_at(f, 0, "before", 6);
	expect("WRITE before the reload", w.status, NFS3_OK);
	port0 = local_port();

	run(to_ro);
	w = write_at(f, 0, "during", 6);
	expect("WRITE after the reload to access=ro", w.status, NFS3ERR_ROFS);
	expect("CREATE after the reload to access=ro", create(root, "new.dat").status,
	       NFS3ERR_ROFS);
	read_is("READ after the reload to access=ro", f, "before", 6);
	CHECK(local_port() == port0, "the connection changed (local port %u, was %u)",
	      local_port(), port0);
	printf("ok: after SIGHUP (rw -> ro) on the same connection (local port %u): WRITE and "
	       "CREATE NFS3ERR_ROFS, READ works\n", port0);

	run(broken);
	w = write_at(f, 0, "during", 6);
	expect("WRITE after a reload of a broken config", w.status, NFS3ERR_ROFS);
	printf("ok: a broken config changed nothing: WRITE still NFS3ERR_ROFS\n");

	run(to_rw);
	w = write_at(f, 0, "after!", 6);
	expect("WRITE after the reload back to access=rw", w.status, NFS3_OK);
	read_is("READ after the reload back to access=rw", f, "after!", 6);
	CHECK(local_port() == port0, "the connection changed (local port %u, was %u)",
	      local_port(), port0);
	printf("ok: after SIGHUP (ro -> rw) on the same connection: WRITE works again\n");
}

/* --- UNSTABLE writes + COMMIT across kill -9 -------------------------------- */

struct pending {
	int done, status;
	union {
		WRITE3res w;
		COMMIT3res c;
		CREATE3res cr;
	} res;
};

static void on_done(struct rpc_context *rpc, int status, void *data, void *private_data)
{
	struct pending *p = private_data;

	(void)rpc;
	p->done = 1;
	p->status = status;
	if (status == RPC_STATUS_SUCCESS)
		memcpy(&p->res, data, sizeof(p->res));
}

/* 0 when answered, -1 when the connection went (the server was killed). */
static int wait_done(struct pending *p)
{
	struct rpc_context *rpc = call_context();

	while (!p->done) {
		struct pollfd pfd = { .fd = rpc_get_fd(rpc), .events = rpc_which_events(rpc) };
		int n = poll(&pfd, 1, 10000);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail("poll: %s", strerror(errno));
		if (n == 0)
			fail("no reply for 10 s, and the server did not go away");
		if (rpc_service(rpc, pfd.revents) < 0)
			return -1;
	}
	return p->status == RPC_STATUS_SUCCESS ? 0 : -1;
}

static void save_fh(const char *path, nfs_fh3 fh)
{
	FILE *f = fopen(path, "w");

	if (!f)
		fail("%s: %s", path, strerror(errno));
	for (u_int i = 0; i < fh.data.data_len; i++)
		fprintf(f, "%02x", (unsigned char)fh.data.data_val[i]);
	fprintf(f, "\n");
	if (fclose(f) != 0)
		fail("%s: %s", path, strerror(errno));
}

static nfs_fh3 load_fh(const char *path)
{
	static char bytes[NFS3_FHSIZE];
	nfs_fh3 fh = { .data = { 0, bytes } };
	FILE *f = fopen(path, "r");
	unsigned b;

	if (!f)
		fail("%s: %s", path, strerror(errno));
	while (fh.data.data_len < NFS3_FHSIZE && fscanf(f, "%2x", &b) == 1)
		bytes[fh.data.data_len++] = (char)b;
	fclose(f);
	CHECK(fh.data.data_len > 0, "%s: no handle", path);
	return fh;
}

static void commit_stream(const char *state, const char *acks)
{
	static char buf[RECORD];
	struct rpc_context *rpc = call_context();
	nfs_fh3 fh = create_ok(mount_root(), "commit.dat");
	uint32_t next = 0, acked = 0;
	FILE *out;

	save_fh(state, fh);
	out = fopen(acks, "w");
	if (!out)
		fail("%s: %s", acks, strerror(errno));
	for (;;) {
		char verf[NFS3_WRITEVERFSIZE];
		struct pending p;
		int i;

		CHECK(next < MAX_RECORDS, "%u records written and the server is still there", next);
		for (i = 0; i < BATCH; i++) {
			WRITE3args a = { .file = fh, .offset = (uint64_t)(next + i) * RECORD,
					 .count = RECORD, .stable = UNSTABLE };
			fill(buf, RECORD, next + i);
			a.data.data_len = RECORD;
			a.data.data_val = buf;
			memset(&p, 0, sizeof(p));
			if (rpc_nfs3_write_async(rpc, on_done, &a, &p) != 0 || wait_done(&p) < 0)
				goto lost;
			expect("WRITE UNSTABLE", p.res.w.status, NFS3_OK);
			if (i == 0)
				memcpy(verf, p.res.w.WRITE3res_u.resok.verf, sizeof(verf));
			else
				CHECK(!memcmp(verf, p.res.w.WRITE3res_u.resok.verf, sizeof(verf)),
				      "the write verifier changed within one server's life");
		}
		{
			COMMIT3args c = { .file = fh, .offset = 0, .count = 0 };
			memset(&p, 0, sizeof(p));
			if (rpc_nfs3_commit_async(rpc, on_done, &c, &p) != 0 || wait_done(&p) < 0)
				goto lost;
			expect("COMMIT", p.res.c.status, NFS3_OK);
			CHECK(!memcmp(verf, p.res.c.COMMIT3res_u.resok.verf, sizeof(verf)),
			      "COMMIT's verifier is not the writes'");
		}
		for (i = 0; i < BATCH; i++)
			fprintf(out, "%u\n", next + i);
		fflush(out);
		next += BATCH;
		acked += BATCH;
	}
lost:
	fclose(out);
	printf("streamed: %u records committed before the connection went\n", acked);
	CHECK(acked > 0, "no COMMIT succeeded");
}

static void commit_verify(const char *state, const char *acks)
{
	static char want[RECORD];
	nfs_fh3 fh = load_fh(state);
	FILE *f = fopen(acks, "r");
	unsigned n, count = 0;

	if (!f)
		fail("%s: %s", acks, strerror(errno));
	mount_root();
	while (fscanf(f, "%u", &n) == 1) {
		READ3args a = { .file = fh, .offset = (uint64_t)n * RECORD, .count = RECORD };
		READ3res r = call_read(&a);

		expect("READ of a committed record", r.status, NFS3_OK);
		fill(want, RECORD, n);
		CHECK(r.READ3res_u.resok.data.data_len == RECORD &&
			      !memcmp(r.READ3res_u.resok.data.data_val, want, RECORD),
		      "record %u was COMMITted, but it is not there after kill -9 and a restart", n);
		count++;
	}
	fclose(f);
	CHECK(count > 0, "%s lists no committed record", acks);
	printf("verified: all %u committed records are there\n", count);
}

/* --- a full disk under the volume ----------------------------------------- */

#define FULL_CREATES 8

static void full_disk(const char *fill, const char *free_cmd)
{
	struct rpc_context *rpc = call_context();
	nfs_fh3 root = mount_root(), dir;
	struct pending p[FULL_CREATES];
	char names[FULL_CREATES][16];
	MKDIR3args m;
	MKDIR3res mr;

	memset(&m, 0, sizeof(m));
	m.where.dir = root;
	m.where.name = (char *)"full";
	mr = call_mkdir(&m);
	expect("MKDIR", mr.status, NFS3_OK);
	CHECK(mr.MKDIR3res_u.resok.obj.handle_follows, "MKDIR: no handle");
	dir = mr.MKDIR3res_u.resok.obj.post_op_fh3_u.handle;
	run(fill);
	expect("CREATE of the first entry of a directory with the disk under the volume full",
	       create(dir, "first").status, NFS3ERR_IO);
	for (int i = 0; i < FULL_CREATES; i++) {
		CREATE3args a;
		memset(&a, 0, sizeof(a));
		snprintf(names[i], sizeof(names[i]), "held%d", i);
		a.where.dir = root;
		a.where.name = names[i];
		a.how.mode = UNCHECKED;
		memset(&p[i], 0, sizeof(p[i]));
		CHECK(rpc_nfs3_create_async(rpc, on_done, &a, &p[i]) == 0, "CREATE %s: not sent",
		      names[i]);
	}
	for (int i = 0; i < FULL_CREATES; i++) {
		CHECK(wait_done(&p[i]) == 0, "CREATE %s: no reply", names[i]);
		expect(names[i], p[i].res.cr.status, NFS3ERR_IO);
	}
	printf("ok: with the disk full, a directory's first CREATE and %d CREATEs in flight "
	       "together got NFS3ERR_IO\n",
	       FULL_CREATES);
	run(free_cmd);
	create_ok(root, "after");
	{
		LOOKUP3args l = { .what = { .dir = dir, .name = (char *)"first" } };
		LOOKUP3res lr = call_lookup(&l);
		expect("LOOKUP of the file made while the disk was full", lr.status, NFS3_OK);
		CHECK(lr.LOOKUP3res_u.resok.obj_attributes.attributes_follow &&
			      lr.LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes.type ==
				      NF3REG,
		      "'full/first' is not a regular file");
	}
	for (int i = 0; i < FULL_CREATES; i++) {
		LOOKUP3args l = { .what = { .dir = root, .name = names[i] } };
		expect(names[i], call_lookup(&l).status, NFS3_OK);
	}
	printf("ok: with room again, CREATE works, and the %d files are there\n", FULL_CREATES + 1);
}

/* --- a GETATTR loop, for the stall a repair causes -------------------------- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void getattr_loop(const char *seconds, const char *out_path)
{
	GETATTR3args a = { .object = mount_root() };
	uint64_t end = now_us() + (uint64_t)atoi(seconds) * 1000000u;
	size_t n = 0, cap = 1 << 16, slow = 0;
	uint32_t *lat = malloc(cap * sizeof(*lat));
	FILE *out = fopen(out_path, "w");

	CHECK(lat && out, "%s: %s", out_path, strerror(errno));
	while (now_us() < end) {
		uint64_t t = now_us();
		expect("GETATTR of the root", call_getattr(&a).status, NFS3_OK);
		t = now_us() - t;
		if (n == cap) {
			cap *= 2;
			lat = realloc(lat, cap * sizeof(*lat));
			CHECK(lat, "out of memory");
		}
		lat[n++] = (uint32_t)t;
		slow += t > 10000;
		fprintf(out, "%llu\n", (unsigned long long)t);
	}
	fclose(out);
	CHECK(n > 0, "no GETATTR in %s s", seconds);
	qsort(lat, n, sizeof(*lat), cmp_u32);
	printf("getattr-loop: %zu calls, median %u us, p99.9 %u us, max %u us, %zu over 10 ms\n", n,
	       lat[n / 2], lat[n - 1 - n / 1000], lat[n - 1], slow);
	free(lat);
}

/* --- UNSTABLE data without a COMMIT (dalloc-timer.sh) ----------------------- */

static void unstable_write(const char *name, const char *records)
{
	nfs_fh3 root = mount_root(), f = create_ok(root, name);
	long n = atol(records);
	static char buf[RECORD];

	for (long i = 0; i < n; i++) {
		WRITE3args a = { .file = f, .offset = (uint64_t)i * RECORD, .count = RECORD,
				 .stable = UNSTABLE };
		WRITE3res r;
		fill(buf, RECORD, (uint32_t)i);
		a.data.data_len = RECORD;
		a.data.data_val = buf;
		r = call_write(&a);
		expect("WRITE UNSTABLE", r.status, NFS3_OK);
		CHECK(r.WRITE3res_u.resok.committed == UNSTABLE, "WRITE %ld: committed %d", i,
		      (int)r.WRITE3res_u.resok.committed);
	}
	printf("unstable-write: %ld records of %d bytes to %s, no COMMIT\n", n, RECORD, name);
}

static void read_verify(const char *name, const char *records)
{
	nfs_fh3 root = mount_root();
	LOOKUP3args l = { .what = { .dir = root, .name = (char *)name } };
	LOOKUP3res lr = call_lookup(&l);
	long n = atol(records);
	static char want[RECORD];

	expect("LOOKUP", lr.status, NFS3_OK);
	for (long i = 0; i <= n; i++) {
		READ3args a = { .file = lr.LOOKUP3res_u.resok.object, .offset = (uint64_t)i * RECORD,
				.count = RECORD };
		READ3res r = call_read(&a);
		expect("READ", r.status, NFS3_OK);
		if (i == n) {
			CHECK(r.READ3res_u.resok.data.data_len == 0 && r.READ3res_u.resok.eof,
			      "%s: more than %ld records", name, n);
			break;
		}
		fill(want, RECORD, (uint32_t)i);
		CHECK(r.READ3res_u.resok.data.data_len == RECORD &&
			      !memcmp(r.READ3res_u.resok.data.data_val, want, RECORD),
		      "%s: record %ld is not there (%u bytes read)", name, i,
		      r.READ3res_u.resok.data.data_len);
	}
	printf("read-verify: %s holds its %ld records\n", name, n);
}

/* Where commit_retry's piece p goes: runs of 4 pieces with a hole of
 * 4 KiB after each, so that a placement writes 4 runs (4 chances for a
 * faulty server to fail it). */
static uint64_t piece_off(int p)
{
	return (uint64_t)(p + p / 4) * 4096;
}

/* Files cr0 .. cr<n-1> of d hold what commit_retry wrote. */
static void read_files(nfs_fh3 d, long n)
{
	static char buf[4096], got[4096];

	for (long i = 0; i < n; i++) {
		char name[32];
		LOOKUP3args fl = { .what = { .dir = d, .name = name } };
		LOOKUP3res fr;
		snprintf(name, sizeof(name), "cr%ld", i);
		fr = call_lookup(&fl);
		expect(name, fr.status, NFS3_OK);
		for (int p = 0; p < 16; p++) {
			READ3args a = { .file = fr.LOOKUP3res_u.resok.object,
					.offset = piece_off(p), .count = sizeof(buf) };
			READ3res r = call_read(&a);
			expect("READ", r.status, NFS3_OK);
			fill(buf, sizeof(buf), (uint32_t)(i * 16 + p));
			CHECK(r.READ3res_u.resok.data.data_len == sizeof(buf),
			      "%s: READ at %llu: %u bytes", name, (unsigned long long)piece_off(p),
			      r.READ3res_u.resok.data.data_len);
			memcpy(got, r.READ3res_u.resok.data.data_val, sizeof(got));
			CHECK(!memcmp(got, buf, sizeof(buf)), "%s: bytes at %llu differ", name,
			      (unsigned long long)piece_off(p));
		}
	}
}

/* Files committed until their COMMIT succeeds (delayed allocation's
 * retry of a failed placement). */
static void commit_retry(const char *dir, const char *files)
{
	nfs_fh3 root = mount_root(), d;
	long n = atol(files), failed = 0, nospc = 0;
	/* what a failed COMMIT answers: NFS3ERR_IO, or with SVC_COMMIT_ERROR=NOSPC
	 * (a store that answers ENOSPC) NFS3ERR_NOSPC or NFS3ERR_IO */
	const char *want = getenv("SVC_COMMIT_ERROR");
	nfsstat3 fail_status = want && !strcmp(want, "NOSPC") ? NFS3ERR_NOSPC : NFS3ERR_IO;
	static char buf[4096];
	LOOKUP3args l = { .what = { .dir = root, .name = (char *)dir } };
	LOOKUP3res lr = call_lookup(&l);

	expect("LOOKUP DIR", lr.status, NFS3_OK);
	d = lr.LOOKUP3res_u.resok.object;
	for (long i = 0; i < n; i++) {
		char name[32], verf[NFS3_WRITEVERFSIZE];
		CREATE3res cr;
		nfs_fh3 f;
		int tries = 0;
		snprintf(name, sizeof(name), "cr%ld", i);
		while ((cr = create(d, name)).status != NFS3_OK && ++tries < 60)
			nanosleep(&(struct timespec){ 0, 250000000 }, NULL);
		expect(name, cr.status, NFS3_OK);
		CHECK(cr.CREATE3res_u.resok.obj.handle_follows, "CREATE %s: no handle", name);
		f = cr.CREATE3res_u.resok.obj.post_op_fh3_u.handle;
		for (int p = 0; p < 16; p++) {
			WRITE3args a = { .file = f, .offset = piece_off(p),
					 .count = sizeof(buf), .stable = UNSTABLE };
			WRITE3res w;
			fill(buf, sizeof(buf), (uint32_t)(i * 16 + p));
			a.data.data_len = sizeof(buf);
			a.data.data_val = buf;
			w = call_write(&a);
			expect("WRITE UNSTABLE", w.status, NFS3_OK);
			if (p == 0)
				memcpy(verf, w.WRITE3res_u.resok.verf, sizeof(verf));
			CHECK(!memcmp(verf, w.WRITE3res_u.resok.verf, sizeof(verf)),
			      "%s: the write verifier changed between writes", name);
		}
		for (tries = 0;; tries++) {
			COMMIT3args c = { .file = f, .offset = 0, .count = 0 };
			COMMIT3res r = call_commit(&c);
			if (r.status == NFS3_OK) {
				CHECK(!memcmp(verf, r.COMMIT3res_u.resok.verf, sizeof(verf)),
				      "%s: COMMIT answered a new verifier: the data was given up",
				      name);
				break;
			}
			/* (a store answering ENOSPC fails the group commit's
			 * transaction too, when it hits a metadata write: that
			 * is NFS3ERR_IO for every call of the group) */
			CHECK(r.status == fail_status || r.status == NFS3ERR_IO,
			      "%s: COMMIT: status %d", name, r.status);
			nospc += r.status == NFS3ERR_NOSPC;
			CHECK(tries < 60, "%s: 60 COMMITs failed", name);
			failed++;
			nanosleep(&(struct timespec){ 0, 250000000 }, NULL);
		}
	}
	read_files(d, n);
	printf("commit-retry: %ld files, %ld COMMITs failed and were sent again (%ld of them "
	       "NFS3ERR_NOSPC), every file read back\n",
	       n, failed, nospc);
}

/* After commit_retry (a restart between): the files read back. */
static void commit_check(const char *dir, const char *files)
{
	nfs_fh3 root = mount_root();
	LOOKUP3args l = { .what = { .dir = root, .name = (char *)dir } };
	LOOKUP3res lr = call_lookup(&l);

	expect("LOOKUP DIR", lr.status, NFS3_OK);
	read_files(lr.LOOKUP3res_u.resok.object, atol(files));
	printf("commit-check: %s files read back\n", files);
}

static nfs_fh3 mkdir_ok(nfs_fh3 dir, const char *name)
{
	MKDIR3args m;
	MKDIR3res mr;

	memset(&m, 0, sizeof(m));
	m.where.dir = dir;
	m.where.name = (char *)name;
	mr = call_mkdir(&m);
	expect("MKDIR", mr.status, NFS3_OK);
	CHECK(mr.MKDIR3res_u.resok.obj.handle_follows, "MKDIR %s: no handle", name);
	return mr.MKDIR3res_u.resok.obj.post_op_fh3_u.handle;
}

/* n pieces of 4 KiB to each of nf files by turns, UNSTABLE. */
static void write_by_turns(const nfs_fh3 *f, int nf, long n)
{
	static char buf[4096];

	for (long p = 0; p < n; p++)
		for (int i = 0; i < nf; i++) {
			WRITE3args a = { .file = f[i], .offset = (uint64_t)p * sizeof(buf),
					 .count = sizeof(buf), .stable = UNSTABLE };
			fill(buf, sizeof(buf), (uint32_t)(p * nf + i));
			a.data.data_len = sizeof(buf);
			a.data.data_val = buf;
			expect("WRITE UNSTABLE", call_write(&a).status, NFS3_OK);
		}
}

static void commit_all(const nfs_fh3 *f, int nf)
{
	for (int i = 0; i < nf; i++) {
		COMMIT3args c = { .file = f[i], .offset = 0, .count = 0 };
		expect("COMMIT", call_commit(&c).status, NFS3_OK);
	}
}

/* Three files written by turns (delayed allocation's server test). */
static void interleave(const char *dir, const char *pieces)
{
	nfs_fh3 d = mkdir_ok(mount_root(), dir), f[3];
	long n = atol(pieces);

	for (int i = 0; i < 3; i++) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", i);
		f[i] = create_ok(d, name);
	}
	write_by_turns(f, 3, n);
	commit_all(f, 3);
	printf("interleave: 3 files of %ld x 4 KiB written by turns and committed\n", n);
}

static uint64_t fsstat_free(nfs_fh3 fh)
{
	FSSTAT3args a = { .fsroot = fh };
	FSSTAT3res r = call_fsstat(&a);

	expect("FSSTAT", r.status, NFS3_OK);
	return r.FSSTAT3res_u.resok.fbytes / 4096;
}

/* A .log file appended by turns with another file (preallocation). */
static void prealloc(const char *dir, const char *pieces)
{
	nfs_fh3 root = mount_root(), d = mkdir_ok(root, dir), f[2];
	long n = atol(pieces);
	uint64_t base, created, written;
	int idle = n < 0; /* (make app.log and leave it: its reservation's timeout) */

	f[0] = create_ok(d, "other.dat");
	base = fsstat_free(root);
	f[1] = create_ok(d, "app.log");
	created = fsstat_free(root);
	if (idle) {
		printf("prealloc: created=%" PRIu64 "\n", base - created);
		return;
	}
	write_by_turns(f, 2, n);
	written = fsstat_free(root);
	commit_all(f, 2);
	printf("prealloc: created=%" PRIu64 " written=%" PRIu64 " committed=%" PRIu64 "\n",
	       base - created, base - written, base - fsstat_free(root));
}

/* interleave's f1 rewritten whole, pairs of pieces swapped after the
 * first, and committed. */
static void rewrite(const char *dir, const char *pieces)
{
	nfs_fh3 root = mount_root(), d, f;
	long n = atol(pieces);
	static char buf[4096];
	char verf[NFS3_WRITEVERFSIZE] = { 0 };
	LOOKUP3args l = { .what = { .dir = root, .name = (char *)dir } };
	LOOKUP3res lr = call_lookup(&l);
	COMMIT3res cr;

	expect("LOOKUP DIR", lr.status, NFS3_OK);
	d = lr.LOOKUP3res_u.resok.object;
	l.what.dir = d;
	l.what.name = "f1";
	lr = call_lookup(&l);
	expect("LOOKUP f1", lr.status, NFS3_OK);
	f = lr.LOOKUP3res_u.resok.object;
	for (long k = 0; k < n; k++) {
		/* 0, 2, 1, 4, 3, ...: each odd piece after the even one past it */
		long p = k == 0 ? 0 : (k % 2 ? (k + 1 < n ? k + 1 : k) : k - 1);
		WRITE3args a = { .file = f, .offset = (uint64_t)p * sizeof(buf),
				 .count = sizeof(buf), .stable = UNSTABLE };
		WRITE3res w;
		fill(buf, sizeof(buf), (uint32_t)(100000 + p));
		a.data.data_len = sizeof(buf);
		a.data.data_val = buf;
		w = call_write(&a);
		expect("WRITE UNSTABLE", w.status, NFS3_OK);
		if (k == 0)
			memcpy(verf, w.WRITE3res_u.resok.verf, sizeof(verf));
	}
	{
		COMMIT3args c = { .file = f, .offset = 0, .count = 0 };
		cr = call_commit(&c);
	}
	expect("COMMIT", cr.status, NFS3_OK);
	CHECK(!memcmp(verf, cr.COMMIT3res_u.resok.verf, sizeof(verf)), "the verifier changed");
	for (long p = 0; p < n; p++) {
		READ3args a = { .file = f, .offset = (uint64_t)p * sizeof(buf), .count = sizeof(buf) };
		READ3res r = call_read(&a);
		fill(buf, sizeof(buf), (uint32_t)(100000 + p));
		expect("READ", r.status, NFS3_OK);
		CHECK(r.READ3res_u.resok.data.data_len == sizeof(buf) &&
			      !memcmp(r.READ3res_u.resok.data.data_val, buf, sizeof(buf)),
		      "f1: bytes at piece %ld differ", p);
	}
	printf("rewrite: %s/f1 rewritten whole in %ld x 4 KiB, committed, read back\n", dir, n);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 3 ? argv[3] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!((argc == 7 && !strcmp(mode, "reload")) ||
	      (argc == 6 && (!strcmp(mode, "commit-stream") || !strcmp(mode, "commit-verify") ||
			     !strcmp(mode, "full-disk") || !strcmp(mode, "getattr-loop") ||
			     !strcmp(mode, "unstable-write") || !strcmp(mode, "read-verify") ||
			     !strcmp(mode, "interleave") || !strcmp(mode, "commit-retry") ||
			     !strcmp(mode, "prealloc") || !strcmp(mode, "rewrite") ||
			     !strcmp(mode, "commit-check"))))) {
		fprintf(stderr, "usage: svc_client HOST PORT reload TO_RO BROKEN TO_RW\n"
				"       svc_client HOST PORT commit-stream|commit-verify STATE ACKS\n"
				"       svc_client HOST PORT full-disk FILL FREE\n"
				"       svc_client HOST PORT getattr-loop SECONDS LATENCIES\n"
				"       svc_client HOST PORT unstable-write|read-verify NAME RECORDS\n"
				"       svc_client HOST PORT interleave|prealloc DIR PIECES\n"
				"       svc_client HOST PORT commit-retry|commit-check DIR FILES\n"
				"       svc_client HOST PORT rewrite DIR PIECES\n");
		return 2;
	}
	call_connect(argv[1], atoi(argv[2]), 0, 0);
	if (!strcmp(mode, "reload"))
		reload(argv[4], argv[5], argv[6]);
	else if (!strcmp(mode, "commit-stream"))
		commit_stream(argv[4], argv[5]);
	else if (!strcmp(mode, "full-disk"))
		full_disk(argv[4], argv[5]);
	else if (!strcmp(mode, "getattr-loop"))
		getattr_loop(argv[4], argv[5]);
	else if (!strcmp(mode, "unstable-write"))
		unstable_write(argv[4], argv[5]);
	else if (!strcmp(mode, "read-verify"))
		read_verify(argv[4], argv[5]);
	else if (!strcmp(mode, "interleave"))
		interleave(argv[4], argv[5]);
	else if (!strcmp(mode, "prealloc"))
		prealloc(argv[4], argv[5]);
	else if (!strcmp(mode, "commit-retry"))
		commit_retry(argv[4], argv[5]);
	else if (!strcmp(mode, "commit-check"))
		commit_check(argv[4], argv[5]);
	else if (!strcmp(mode, "rewrite"))
		rewrite(argv[4], argv[5]);
	else
		commit_verify(argv[4], argv[5]);
	call_disconnect();
	return 0;
}
