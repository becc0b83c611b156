/* nfs_bench: NFSv3 load from a raw libnfs client, sending exactly the named
 * procedures on one TCP connection with QD requests (or per-file request
 * chains) outstanding, so that a figure is one procedure's, not a client
 * library's. Every reply's status is checked and data read back is
 * verified; the first failure aborts that test with a message. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>

#define MIB (1u << 20)
#define SMALL 4096u
#define PAGE 4096u
/* Each 4 KiB page written starts with this and its file offset. */
#define MAGIC 0x6e66736265e4c400ull

/* Options, with their defaults. */
static const char *o_server = "127.0.0.1";
static int o_port = 2049;
static int o_mountport;              /* 0: the NFS port */
static const char *o_export = "/";
static int o_qd = 1;
static unsigned o_files = 2000;
static unsigned o_size = 256;        /* MiB, seqwrite / seqread */
static unsigned o_io = MIB;          /* READ/WRITE request size, clamped by FSINFO */
static unsigned o_getattr_passes = 5;
static unsigned o_rdp_listings = 64; /* whole-directory listings, spread over QD streams */
static unsigned o_rdp_max = 32768;   /* READDIRPLUS maxcount (dircount the same) */
static int o_timeout = 60;           /* seconds without any reply: the server is hung */
static int o_keep;

static struct rpc_context *rpc;
static nfs_fh3 root_fh, work_fh, empty_fh, small_fh, seq_fh;
static nfs_fh3 *empty_files, *small_files;
static char work_name[64];
static int have_empty_dir, have_small_dir, have_empty, have_small, have_seq;
static int cleaning;                 /* removing what a failed test left: NOENT is fine */
static double last_reply;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "nfs_bench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory");
	return p;
}

static nfs_fh3 fh_copy(const char *data, u_int len)
{
	nfs_fh3 fh;

	fh.data.data_len = len;
	fh.data.data_val = xmalloc(len);
	memcpy(fh.data.data_val, data, len);
	return fh;
}

static void fh_free(nfs_fh3 *fh)
{
	free(fh->data.data_val);
	fh->data.data_val = NULL;
	fh->data.data_len = 0;
}

static const char *nfsstat_name(int st)
{
	switch (st) {
	case NFS3_OK: return "NFS3_OK";
	case NFS3ERR_PERM: return "NFS3ERR_PERM";
	case NFS3ERR_NOENT: return "NFS3ERR_NOENT";
	case NFS3ERR_IO: return "NFS3ERR_IO";
	case NFS3ERR_NXIO: return "NFS3ERR_NXIO";
	case NFS3ERR_ACCES: return "NFS3ERR_ACCES";
	case NFS3ERR_EXIST: return "NFS3ERR_EXIST";
	case NFS3ERR_NOTDIR: return "NFS3ERR_NOTDIR";
	case NFS3ERR_ISDIR: return "NFS3ERR_ISDIR";
	case NFS3ERR_INVAL: return "NFS3ERR_INVAL";
	case NFS3ERR_FBIG: return "NFS3ERR_FBIG";
	case NFS3ERR_NOSPC: return "NFS3ERR_NOSPC";
	case NFS3ERR_ROFS: return "NFS3ERR_ROFS";
	case NFS3ERR_NAMETOOLONG: return "NFS3ERR_NAMETOOLONG";
	case NFS3ERR_NOTEMPTY: return "NFS3ERR_NOTEMPTY";
	case NFS3ERR_STALE: return "NFS3ERR_STALE";
	case NFS3ERR_BADHANDLE: return "NFS3ERR_BADHANDLE";
	case NFS3ERR_BAD_COOKIE: return "NFS3ERR_BAD_COOKIE";
	case NFS3ERR_NOTSUPP: return "NFS3ERR_NOTSUPP";
	case NFS3ERR_TOOSMALL: return "NFS3ERR_TOOSMALL";
	case NFS3ERR_SERVERFAULT: return "NFS3ERR_SERVERFAULT";
	case NFS3ERR_JUKEBOX: return "NFS3ERR_JUKEBOX";
	default: return "unknown status";
	}
}

/* --- the engine: one test's units, QD of them in flight ------------------ */

struct test;

/* One stream of work: a unit in progress (a file, a request, a listing). */
struct slot {
	struct test *t;
	uint64_t unit;
	double t0;                    /* when the unit (or its current call) began */
	nfs_fh3 fh;                   /* a handle a chain learnt on the way */
	uint64_t cookie;              /* readdirplus */
	char verf[NFS3_COOKIEVERFSIZE];
	uint64_t entries;
};

struct test {
	const char *name;
	uint64_t units;               /* to issue */
	uint64_t issued, finished;
	uint64_t count;               /* what the rate counts: ops, files, entries */
	double mib;                   /* for a MiB/s rate: data moved */
	const char *unit;             /* of the rate: ops/s, files/s, entries/s, MiB/s */
	int inflight;
	int failed;
	char why[512];
	double *lat;                  /* latencies, seconds */
	size_t nlat, caplat;
	void (*start)(struct slot *s); /* issue s->unit's first call */
	void *priv;
};

static void record(struct test *t, double secs)
{
	if (t->nlat == t->caplat) {
		t->caplat = t->caplat ? 2 * t->caplat : 4096;
		t->lat = realloc(t->lat, t->caplat * sizeof(*t->lat));
		if (!t->lat)
			die("out of memory");
	}
	t->lat[t->nlat++] = secs;
}

static void fail_test(struct test *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_test(struct test *t, const char *fmt, ...)
{
	va_list ap;

	if (t->failed)
		return;
	t->failed = 1;
	va_start(ap, fmt);
	vsnprintf(t->why, sizeof(t->why), fmt, ap);
	va_end(ap);
}

/* The next unit on this slot, if any is left. */
static void next_unit(struct slot *s)
{
	struct test *t = s->t;

	if (t->failed || t->issued >= t->units) {
		t->inflight--;
		return;
	}
	s->unit = t->issued++;
	s->t0 = now();
	t->start(s);
}

/* A unit is complete: its latency counts from s->t0. */
static void unit_done(struct slot *s)
{
	struct test *t = s->t;

	record(t, now() - s->t0);
	t->finished++;
	next_unit(s);
}

/* A call that could not be queued, or whose reply was not a success at
 * the RPC level. 1 when the caller must stop. */
static int rpc_failed(struct slot *s, const char *call, int status, void *data)
{
	if (status == RPC_STATUS_SUCCESS)
		return 0;
	fail_test(s->t, "%s of unit %" PRIu64 ": %s", call, s->unit,
		  status == RPC_STATUS_ERROR && data ? (const char *)data
		  : status == RPC_STATUS_TIMEOUT     ? "timed out"
						     : "cancelled");
	s->t->inflight--;
	return 1;
}

static int nfs_failed(struct slot *s, const char *call, int st)
{
	if (st == NFS3_OK)
		return 0;
	fail_test(s->t, "%s of unit %" PRIu64 ": %s (%d)", call, s->unit, nfsstat_name(st), st);
	s->t->inflight--;
	return 1;
}

static void queued(struct slot *s, const char *call, int ret)
{
	if (ret == 0)
		return;
	fail_test(s->t, "%s of unit %" PRIu64 " not queued: %s", call, s->unit, rpc_get_error(rpc));
	s->t->inflight--;
}

/* Drive the connection until *done, or until the test has nothing in
 * flight when done is NULL. A server that stops answering is reported
 * after o_timeout seconds, and the program ends: the connection cannot be
 * trusted any more. */
static void drive(struct test *t, int *done)
{
	last_reply = now();
	while (done ? !*done : t->inflight > 0) {
		struct pollfd pfd = { .fd = rpc_get_fd(rpc), .events = (short)rpc_which_events(rpc) };
		int n = poll(&pfd, 1, 1000);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}
		if (n > 0) {
			if (pfd.revents & POLLIN)
				last_reply = now();
			if (rpc_service(rpc, pfd.revents) < 0)
				die("%s: connection lost: %s", t ? t->name : "setup",
				    rpc_get_error(rpc) ? rpc_get_error(rpc) : "the server closed it");
		} else if (now() - last_reply > o_timeout) {
			die("%s: no reply for %d s with %d request(s) outstanding: the server is hung",
			    t ? t->name : "setup", o_timeout, rpc_queue_length(rpc));
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const struct test *t, double p)
{
	if (!t->nlat)
		return 0;
	return t->lat[(size_t)(p * (double)(t->nlat - 1) + 0.5)];
}

/* Runs t at QD o_qd; prints its line unless quiet. 0 or -1. */
static int run(struct test *t, int quiet)
{
	int qd = o_qd;
	struct slot *slots;
	double t0, secs;

	if ((uint64_t)qd > t->units)
		qd = t->units ? (int)t->units : 1;
	slots = calloc((size_t)qd, sizeof(*slots));
	if (!slots)
		die("out of memory");
	t0 = now();
	t->inflight = qd;
	for (int i = 0; i < qd; i++) {
		slots[i].t = t;
		next_unit(&slots[i]);
	}
	drive(t, NULL);
	secs = now() - t0;
	for (int i = 0; i < qd; i++)
		fh_free(&slots[i].fh);
	free(slots);
	if (t->failed) {
		printf("%-14s %3d FAILED: %s\n", t->name, o_qd, t->why);
		fflush(stdout);
		return -1;
	}
	if (!quiet) {
		qsort(t->lat, t->nlat, sizeof(*t->lat), cmp_double);
		printf("%-14s %3d %8" PRIu64 " %8.3f %10.1f %-9s %8.0f %8.0f\n", t->name, o_qd,
		       t->count, secs, (t->mib ? t->mib : (double)t->count) / secs,
		       t->mib ? "MiB/s" : t->unit, pct(t, 0.50) * 1e6, pct(t, 0.99) * 1e6);
		fflush(stdout);
	}
	return 0;
}

static void test_init(struct test *t, const char *name, uint64_t units, void (*start)(struct slot *))
{
	memset(t, 0, sizeof(*t));
	t->name = name;
	t->units = units;
	t->start = start;
	t->unit = "ops/s";
}

static void test_free(struct test *t)
{
	free(t->lat);
}

/* --- single calls outside any test --------------------------------------- */

struct one {
	int done;
	int status;
	char err[256];
	void *res;                    /* copied out by the callback's caller */
	void (*copy)(struct one *o, void *res);
};

static void one_cb(struct rpc_context *r, int status, void *data, void *priv)
{
	struct one *o = priv;

	(void)r;
	o->done = 1;
	o->status = status;
	if (status != RPC_STATUS_SUCCESS)
		snprintf(o->err, sizeof(o->err), "%s",
			 status == RPC_STATUS_ERROR && data ? (const char *)data : "cancelled");
	else if (o->copy)
		o->copy(o, data);
}

static void one_wait(struct one *o, const char *what, int ret)
{
	if (ret)
		die("%s not queued: %s", what, rpc_get_error(rpc));
	drive(NULL, &o->done);
	if (o->status != RPC_STATUS_SUCCESS)
		die("%s: %s", what, o->err);
}

static void connect_cb(struct rpc_context *r, int status, void *data, void *priv)
{
	one_cb(r, status, data, priv);
}

static void connect_to(int port, int prog, int vers)
{
	struct one o = { 0 };

	rpc = rpc_init_context();
	if (!rpc)
		die("rpc_init_context failed");
	one_wait(&o, "connect", rpc_connect_port_async(rpc, o_server, port, prog, vers,
						       connect_cb, &o));
}

static void mnt_copy(struct one *o, void *data)
{
	mountres3 *res = data;
	nfs_fh3 *fh = o->res;

	if (res->fhs_status != MNT3_OK) {
		snprintf(o->err, sizeof(o->err), "MNT %s: status %d", o_export, res->fhs_status);
		o->status = RPC_STATUS_ERROR;
		return;
	}
	*fh = fh_copy(res->mountres3_u.mountinfo.fhandle.fhandle3_val,
		      res->mountres3_u.mountinfo.fhandle.fhandle3_len);
}

static void fsinfo_copy(struct one *o, void *data)
{
	FSINFO3res *res = data;
	FSINFO3resok *ok = &res->FSINFO3res_u.resok;

	if (res->status != NFS3_OK) {
		snprintf(o->err, sizeof(o->err), "%s", nfsstat_name(res->status));
		o->status = RPC_STATUS_ERROR;
		return;
	}
	if (ok->rtmax < o_io || ok->wtmax < o_io) {
		unsigned m = ok->rtmax < ok->wtmax ? ok->rtmax : ok->wtmax;
		fprintf(stderr, "nfs_bench: server's rtmax %u / wtmax %u: requests of %u bytes\n",
			ok->rtmax, ok->wtmax, m);
		o_io = m;
	}
}

static void mkdir_copy(struct one *o, void *data)
{
	MKDIR3res *res = data;

	if (res->status != NFS3_OK) {
		snprintf(o->err, sizeof(o->err), "%s", nfsstat_name(res->status));
		o->status = RPC_STATUS_ERROR;
		return;
	}
	if (!res->MKDIR3res_u.resok.obj.handle_follows) {
		snprintf(o->err, sizeof(o->err), "no handle in the reply");
		o->status = RPC_STATUS_ERROR;
		return;
	}
	*(nfs_fh3 *)o->res = fh_copy(res->MKDIR3res_u.resok.obj.post_op_fh3_u.handle.data.data_val,
				     res->MKDIR3res_u.resok.obj.post_op_fh3_u.handle.data.data_len);
}

static nfs_fh3 do_mkdir(nfs_fh3 dir, const char *name)
{
	struct one o = { .copy = mkdir_copy };
	MKDIR3args a;
	nfs_fh3 fh = { 0 };
	char what[128];

	memset(&a, 0, sizeof(a));
	a.where.dir = dir;
	a.where.name = (char *)name;
	a.attributes.mode.set_it = 1;
	a.attributes.mode.set_mode3_u.mode = 0755;
	o.res = &fh;
	snprintf(what, sizeof(what), "MKDIR %s", name);
	one_wait(&o, what, rpc_nfs3_mkdir_async(rpc, one_cb, &a, &o));
	return fh;
}

static void status_copy(struct one *o, void *data)
{
	int st = *(int *)data; /* every NFS result starts with its status */

	if (st != NFS3_OK) {
		snprintf(o->err, sizeof(o->err), "%s", nfsstat_name(st));
		o->status = RPC_STATUS_ERROR;
	}
}

static void do_rmdir(nfs_fh3 dir, const char *name)
{
	struct one o = { .copy = status_copy };
	RMDIR3args a;
	char what[128];

	a.object.dir = dir;
	a.object.name = (char *)name;
	snprintf(what, sizeof(what), "RMDIR %s", name);
	one_wait(&o, what, rpc_nfs3_rmdir_async(rpc, one_cb, &a, &o));
}

static void do_remove(nfs_fh3 dir, const char *name)
{
	struct one o = { .copy = status_copy };
	REMOVE3args a;
	char what[128];

	a.object.dir = dir;
	a.object.name = (char *)name;
	snprintf(what, sizeof(what), "REMOVE %s", name);
	one_wait(&o, what, rpc_nfs3_remove_async(rpc, one_cb, &a, &o));
}

/* --- data patterns -------------------------------------------------------- */

/* Page headers carry (file number or offset); the rest is a fixed byte, so
 * filling and checking cost little next to the transfer. */
static void fill(char *buf, size_t len, uint64_t id)
{
	memset(buf, (int)(0x5a ^ (id & 0xff)), len);
	for (size_t p = 0; p + 16 <= len; p += PAGE) {
		uint64_t w[2] = { MAGIC, id + p };
		memcpy(buf + p, w, sizeof(w));
	}
}

static int check(const char *buf, size_t len, uint64_t id)
{
	for (size_t p = 0; p + 16 <= len; p += PAGE) {
		uint64_t w[2];
		memcpy(w, buf + p, sizeof(w));
		if (w[0] != MAGIC || w[1] != id + p)
			return -1;
		if ((unsigned char)buf[p + 16] != (unsigned char)(0x5a ^ (id & 0xff)) ||
		    (unsigned char)buf[(p + PAGE < len ? p + PAGE : len) - 1] !=
			    (unsigned char)(0x5a ^ (id & 0xff)))
			return -1;
	}
	return 0;
}

static void name_of(char *buf, size_t len, char prefix, uint64_t i)
{
	snprintf(buf, len, "%c%06" PRIu64, prefix, i);
}

/* --- create: CREATE GUARDED of empty files; create-write4k adds a WRITE -- */

static char small_buf[SMALL];

static void cw_write_cb(struct rpc_context *r, int status, void *data, void *priv);

static void create_cb(struct rpc_context *r, int status, void *data, void *priv)
{
	struct slot *s = priv;
	struct test *t = s->t;
	CREATE3res *res = data;
	post_op_fh3 *pfh;
	int with_write = t->priv != NULL;
	nfs_fh3 *files = with_write ? small_files : empty_files;

	(void)r;
	if (rpc_failed(s, "CREATE", status, data) || nfs_failed(s, "CREATE", res->status))
		return;
	pfh = &res->CREATE3res_u.resok.obj;
	if (!pfh->handle_follows) {
		fail_test(t, "CREATE of unit %" PRIu64 ": the reply has no file handle", s->unit);
		t->inflight--;
		return;
	}
	files[s->unit] = fh_copy(pfh->post_op_fh3_u.handle.data.data_val,
				 pfh->post_op_fh3_u.handle.data.data_len);
	if (!with_write) {
		t->count++;
		unit_done(s);
		return;
	}
	{
		WRITE3args a;
		memset(&a, 0, sizeof(a));
		a.file = files[s->unit];
		a.offset = 0;
		a.count = SMALL;
		a.stable = FILE_SYNC;
		fill(small_buf, SMALL, s->unit);
		a.data.data_len = SMALL;
		a.data.data_val = small_buf;
		queued(s, "WRITE", rpc_nfs3_write_async(rpc, cw_write_cb, &a, s));
	}
}

static void cw_write_cb(struct rpc_context *r, int status, void *data, void *priv)
{
	struct slot *s = priv;
	WRITE3res *res = data;

	(void)r;
	if (rpc_failed(s, "WRITE", status, data) || nfs_failed(s, "WRITE", res->status))
		return;
	if (res->WRITE3res_u.resok.count != SMALL) {
		fail_test(s->t, "WRITE of unit %" PRIu64 ": %u bytes written of %u", s->unit,
			  res->WRITE3res_u.resok.count, SMALL);
		s->t->inflight--;
		return;
	}
	if (res->WRITE3res_u.resok.committed != FILE_SYNC) {
		fail_test(s->t, "WRITE FILE_SYNC of unit %" PRIu64 ": reply says committed=%d",
			  s->unit, res->WRITE3res_u.resok.committed);
		s->t->inflight--;
		return;
	}
	s->t->count++;
	unit_done(s);
}

static void create_start(struct slot *s)
{
	int with_write = s->t->priv != NULL;
	char name[32];
	CREATE3args a;

	name_of(name, sizeof(name), with_write ? 's' : 'e', s->unit);
	memset(&a, 0, sizeof(a));
	a.where.dir = with_write ? small_fh : empty_fh;
	a.where.name = name;
	a.how.mode = GUARDED;
	a.how.createhow3_u.obj_attributes.mode.set_it = 1;
	a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0644;
	queued(s, "CREATE", rpc_nfs3_create_async(rpc, create_cb, &a, s));
}

static int test_create(int quiet, int with_write)
{
	struct test t;
	int ret;

	if (with_write && !have_small_dir) {
		small_fh = do_mkdir(work_fh, "small");
		have_small_dir = 1;
	}
	if (!with_write && !have_empty_dir) {
		empty_fh = do_mkdir(work_fh, "empty");
		have_empty_dir = 1;
	}
	test_init(&t, with_write ? "create-write4k" : "create", o_files, create_start);
	t.priv = with_write ? (void *)1 : NULL;
	t.unit = with_write ? "files/s" : "ops/s";
	ret = run(&t, quiet);
	test_free(&t);
	if (with_write)
		have_small = 1; /* even a partial set: cleanup removes what exists */
	else
		have_empty = 1;
	return ret;
}

/* --- lookup-read4k: LOOKUP then READ 4 KiB of each small file ------------- */

static void lr_read_cb(struct rpc_context *r, int status, void *data, void *priv)
{
	struct slot *s = priv;
	READ3res *res = data;
	READ3resok *ok = &res->READ3res_u.resok;

	(void)r;
	if (rpc_failed(s, "READ", status, data) || nfs_failed(s, "READ", res->status))
		return;
	if (ok->count != SMALL || ok->data.data_len != SMALL || !ok->eof ||
	    check(ok->data.data_val, SMALL, s->unit) < 0) {
		fail_test(s->t, "READ of unit %" PRIu64 ": %u bytes, eof %u, %s", s->unit,
			  ok->count, ok->eof,
			  ok->data.data_len == SMALL && check(ok->data.data_val, SMALL, s->unit) == 0
				  ? "data right"
				  : "data WRONG");
		s->t->inflight--;
		return;
	}
	fh_free(&s->fh);
	s->t->count++;
	unit_done(s);
}

static void lr_lookup_cb(struct rpc_context *r, int status, void *data, void *priv)
{
	struct slot *s = priv;
	LOOKUP3res *res = data;
	READ3args a;

	(void)r;
	if (rpc_failed(s, "LOOKUP", status, data) || nfs_failed(s, "LOOKUP", res->status))
		return;
	fh_free(&s->fh);
	s->fh = fh_copy(res->LOOKUP3res_u.resok.object.data.data_val,
			res->LOOKUP3res_u.resok.object.data.data_len);
	memset(&a, 0, sizeof(a));
	a.file = s->fh;
	a.offset = 0;
	a.count = SMALL;
	queued(s, "READ", rpc_nfs3_read_async(rpc, lr_read_cb, &a, s));
}

static void lr_start(struct slot *s)
{
	char name[32];
	LOOKUP3args a;

	name_of(name, sizeof(name), 's', s->unit);
	a.what.dir = small_fh;
	a.what.name = name;
	queued(s, "LOOKUP", rpc_nfs3_lookup_async(rpc, lr_lookup_cb, &a, s));
}

static int test_lookup_read(void)
{
	struct test t;
	int ret;

	test_init(&t, "lookup-read4k", o_files, lr_start);
	t.unit = "files/s";
	ret = run(&t, 0);
	test_free(&t);
	return ret;
}

/* --- getattr: GETATTR of every empty file, o_getattr_passes times --------- */

static void ga_cb(struct rpc_context *r, int status, void *data, void *priv)
{
	struct slot *s = priv;
	GETATTR3res *res = data;

	(void)r;
	if (rpc_failed(s, "GETATTR", status, data) || nfs_failed(s, "GETATTR", res->status))
		return;
	if (res->GETATTR3res_u.resok.obj_attributes.type != NF3REG) {
		fail_test(s->t, "GETATTR of unit %" PRIu64 ": type %d, not a regular file", s->unit,
			  res->GETATTR3res_u.resok.obj_attributes.type);
		s->t->inflight--;
		return;
	}
	s->t->count++;
	unit_done(s);
}

static void ga_start(struct slot *s)
{
	GETATTR3args a;

	a.object = empty_files[s->unit % o_files];
	queued(s, "GETATTR", rpc_nfs3_getattr_async(rpc, ga_cb, &a, s));
}

static int test_getattr(void)
{
	struct test t;
	int ret;

	test_init(&t, "getattr", (uint64_t)o_files * o_getattr_passes, ga_start);
	ret = run(&t, 0);
	test_free(&t);
	return ret;
}

/* --- readdirplus: whole listings of the empty files' directory ------------ */

static void rdp_call(struct slot *s);

static void rdp_cb(struct rpc_context *r, int status, void *data, void *priv)
{
	struct slot *s = priv;
	struct test *t = s->t;
	READDIRPLUS3res *res = data;
	READDIRPLUS3resok *ok = &res->READDIRPLUS3res_u.resok;
	int eof;

	(void)r;
	if (rpc_failed(s, "READDIRPLUS", status, data) ||
	    nfs_failed(s, "READDIRPLUS", res->status))
		return;
	record(t, now() - s->t0);
	for (entryplus3 *e = ok->reply.entries; e; e = e->nextentry) {
		s->cookie = e->cookie;
		if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
			continue;
		if (!e->name_attributes.attributes_follow || !e->name_handle.handle_follows) {
			fail_test(t, "READDIRPLUS of listing %" PRIu64 ": %s without %s", s->unit,
				  e->name, e->name_handle.handle_follows ? "attributes" : "handle");
			t->inflight--;
			return;
		}
		s->entries++;
	}
	memcpy(s->verf, ok->cookieverf, sizeof(s->verf));
	eof = ok->reply.eof;
	if (!eof && !ok->reply.entries) {
		fail_test(t, "READDIRPLUS of listing %" PRIu64 ": no entries and no eof", s->unit);
		t->inflight--;
		return;
	}
	if (!eof) {
		rdp_call(s);
		return;
	}
	if (s->entries != o_files) {
		fail_test(t, "READDIRPLUS listing %" PRIu64 ": %" PRIu64 " entries, want %u",
			  s->unit, s->entries, o_files);
		t->inflight--;
		return;
	}
	t->count += s->entries;
	t->finished++;
	next_unit(s); /* latency was per call: not unit_done */
}

static void rdp_call(struct slot *s)
{
	READDIRPLUS3args a;

	memset(&a, 0, sizeof(a));
	a.dir = empty_fh;
	a.cookie = s->cookie;
	memcpy(a.cookieverf, s->verf, sizeof(a.cookieverf));
	a.dircount = o_rdp_max;
	a.maxcount = o_rdp_max;
	s->t0 = now();
	queued(s, "READDIRPLUS", rpc_nfs3_readdirplus_async(rpc, rdp_cb, &a, s));
}

static void rdp_start(struct slot *s)
{
	s->cookie = 0;
	memset(s->verf, 0, sizeof(s->verf));
	s->entries = 0;
	rdp_call(s);
}

static int test_readdirplus(void)
{
	struct test t;
	int ret;

	test_init(&t, "readdirplus", o_rdp_listings, rdp_start);
	t.unit = "entries/s";
	ret = run(&t, 0);
	test_free(&t);
	return ret;
}

/* --- remove: REMOVE of every empty file ----------------------------------- */

static void rm_cb(struct rpc_context *r, int status, void *data, void *priv)
{
	struct slot *s = priv;
	REMOVE3res *res = data;
	nfs_fh3 *files = s->t->priv;

	(void)r;
	if (rpc_failed(s, "REMOVE", status, data) ||
	    nfs_failed(s, "REMOVE", cleaning && res->status == NFS3ERR_NOENT ? NFS3_OK : res->status))
		return;
	if (files)
		fh_free(&files[s->unit]);
	s->t->count++;
	unit_done(s);
}

static void rm_start(struct slot *s)
{
	nfs_fh3 *files = s->t->priv;
	char name[32];
	REMOVE3args a;

	name_of(name, sizeof(name), files == small_files ? 's' : 'e', s->unit);
	a.object.dir = files == small_files ? small_fh : empty_fh;
	a.object.name = name;
	queued(s, "REMOVE", rpc_nfs3_remove_async(rpc, rm_cb, &a, s));
}

static int test_remove(int quiet, nfs_fh3 *files)
{
	struct test t;
	int ret;

	test_init(&t, "remove", o_files, rm_start);
	t.priv = files;
	ret = run(&t, quiet);
	test_free(&t);
	if (ret == 0) {
		if (files == small_files)
			have_small = 0;
		else
			have_empty = 0;
	}
	return ret;
}

/* --- seqwrite: WRITE UNSTABLE of the whole file, then COMMIT -------------- */

static char *big_buf;
static char verf_first[NFS3_WRITEVERFSIZE];
static int have_verf;

static void sw_cb(struct rpc_context *r, int status, void *data, void *priv)
{
	struct slot *s = priv;
	WRITE3res *res = data;
	WRITE3resok *ok = &res->WRITE3res_u.resok;

	(void)r;
	if (rpc_failed(s, "WRITE", status, data) || nfs_failed(s, "WRITE", res->status))
		return;
	if (ok->count != o_io) {
		fail_test(s->t, "WRITE of request %" PRIu64 ": %u bytes written of %u", s->unit,
			  ok->count, o_io);
		s->t->inflight--;
		return;
	}
	if (!have_verf) {
		memcpy(verf_first, ok->verf, sizeof(verf_first));
		have_verf = 1;
	} else if (memcmp(verf_first, ok->verf, sizeof(verf_first))) {
		fail_test(s->t, "WRITE of request %" PRIu64 ": the write verifier changed", s->unit);
		s->t->inflight--;
		return;
	}
	s->t->count++;
	unit_done(s);
}

static void sw_start(struct slot *s)
{
	WRITE3args a;
	uint64_t off = s->unit * (uint64_t)o_io;

	memset(&a, 0, sizeof(a));
	a.file = seq_fh;
	a.offset = off;
	a.count = o_io;
	a.stable = UNSTABLE;
	fill(big_buf, o_io, off); /* libnfs copies the data when it queues the call */
	a.data.data_len = o_io;
	a.data.data_val = big_buf;
	queued(s, "WRITE", rpc_nfs3_write_async(rpc, sw_cb, &a, s));
}

static void commit_copy(struct one *o, void *data)
{
	COMMIT3res *res = data;

	if (res->status != NFS3_OK) {
		snprintf(o->err, sizeof(o->err), "%s", nfsstat_name(res->status));
		o->status = RPC_STATUS_ERROR;
		return;
	}
	if (have_verf && memcmp(verf_first, res->COMMIT3res_u.resok.verf, sizeof(verf_first))) {
		snprintf(o->err, sizeof(o->err), "the verifier differs from the WRITEs'");
		o->status = RPC_STATUS_ERROR;
	}
}

static void create_seq_copy(struct one *o, void *data)
{
	CREATE3res *res = data;
	post_op_fh3 *pfh = &res->CREATE3res_u.resok.obj;

	if (res->status != NFS3_OK || !pfh->handle_follows) {
		snprintf(o->err, sizeof(o->err), "%s",
			 res->status != NFS3_OK ? nfsstat_name(res->status) : "no handle");
		o->status = RPC_STATUS_ERROR;
		return;
	}
	seq_fh = fh_copy(pfh->post_op_fh3_u.handle.data.data_val,
			 pfh->post_op_fh3_u.handle.data.data_len);
}

static int test_seqwrite(int quiet)
{
	struct test t;
	struct one o = { .copy = create_seq_copy };
	struct one c = { .copy = commit_copy };
	CREATE3args a;
	COMMIT3args ca;
	uint64_t units = ((uint64_t)o_size * MIB) / o_io;
	double t0, secs;
	int ret;

	if (!have_seq) {
		memset(&a, 0, sizeof(a));
		a.where.dir = work_fh;
		a.where.name = "seq";
		a.how.mode = GUARDED;
		a.how.createhow3_u.obj_attributes.mode.set_it = 1;
		a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0644;
		one_wait(&o, "CREATE seq", rpc_nfs3_create_async(rpc, one_cb, &a, &o));
		have_seq = 1;
	}
	have_verf = 0;
	test_init(&t, "seqwrite", units, sw_start);
	t0 = now();
	ret = run(&t, 1);
	if (ret == 0) {
		memset(&ca, 0, sizeof(ca));
		ca.file = seq_fh;
		one_wait(&c, "COMMIT", rpc_nfs3_commit_async(rpc, one_cb, &ca, &c));
		secs = now() - t0;
		if (!quiet) {
			qsort(t.lat, t.nlat, sizeof(*t.lat), cmp_double);
			printf("%-14s %3d %8" PRIu64 " %8.3f %10.1f %-9s %8.0f %8.0f\n", t.name, o_qd,
			       t.count, secs, (double)units * o_io / MIB / secs, "MiB/s",
			       pct(&t, 0.5) * 1e6, pct(&t, 0.99) * 1e6);
			fflush(stdout);
		}
	}
	test_free(&t);
	return ret;
}

/* --- seqread: READ of the whole file, after one untimed pass -------------- */

static void sr_cb(struct rpc_context *r, int status, void *data, void *priv)
{
	struct slot *s = priv;
	READ3res *res = data;
	READ3resok *ok = &res->READ3res_u.resok;
	uint64_t off = s->unit * (uint64_t)o_io;
	int last = s->unit + 1 == s->t->units;

	(void)r;
	if (rpc_failed(s, "READ", status, data) || nfs_failed(s, "READ", res->status))
		return;
	if (ok->count != o_io || ok->data.data_len != o_io || (last && !ok->eof) ||
	    check(ok->data.data_val, o_io, off) < 0) {
		fail_test(s->t, "READ at %" PRIu64 ": %u bytes, eof %u, %s", off, ok->count, ok->eof,
			  ok->data.data_len == o_io && check(ok->data.data_val, o_io, off) == 0
				  ? "data right"
				  : "data WRONG");
		s->t->inflight--;
		return;
	}
	s->t->count++;
	s->t->mib += (double)o_io / MIB;
	unit_done(s);
}

static void sr_start(struct slot *s)
{
	READ3args a;

	memset(&a, 0, sizeof(a));
	a.file = seq_fh;
	a.offset = s->unit * (uint64_t)o_io;
	a.count = o_io;
	queued(s, "READ", rpc_nfs3_read_async(rpc, sr_cb, &a, s));
}

static int test_seqread(void)
{
	struct test t;
	uint64_t units = ((uint64_t)o_size * MIB) / o_io;
	int ret;

	if (!have_seq && test_seqwrite(1) < 0)
		return -1;
	test_init(&t, "seqread-warm", units, sr_start);
	ret = run(&t, 1);
	test_free(&t);
	if (ret < 0)
		return ret;
	test_init(&t, "seqread", units, sr_start);
	ret = run(&t, 0);
	test_free(&t);
	return ret;
}

/* --- main ------------------------------------------------------------------ */

static const char *const test_names[] = {
	"create", "create-write4k", "lookup-read4k", "getattr",
	"readdirplus", "remove", "seqwrite", "seqread",
};
#define NTESTS (sizeof(test_names) / sizeof(test_names[0]))

static void usage(int status)
{
	fprintf(status ? stderr : stdout,
		"usage: nfs_bench --server HOST --port P [--mountport P] --export PATH\n"
		"       [--qd N] [--files N] [--size MIB] [--io BYTES] [--getattr-passes N]\n"
		"       [--rdp-listings N] [--rdp-max BYTES] [--timeout S] [--keep]\n"
		"       --test NAME...\n"
		"tests: create create-write4k lookup-read4k getattr readdirplus remove\n"
		"       seqwrite seqread (run in the order given; what a test needs and\n"
		"       was not made by an earlier one is made untimed first)\n"
		"output: test qd count seconds rate unit p50_us p99_us\n");
	exit(status);
}

static unsigned number(const char *opt, const char *s, unsigned lo, unsigned hi)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "nfs_bench: %s: %s is not a number from %u to %u\n", opt, s, lo, hi);
		exit(1);
	}
	return (unsigned)v;
}

static void cleanup(void)
{
	o_qd = o_qd < 8 ? 8 : o_qd; /* cleanup goes as fast as it can */
	cleaning = 1;
	if (have_empty)
		test_remove(1, empty_files);
	if (have_small)
		test_remove(1, small_files);
	if (have_seq) {
		do_remove(work_fh, "seq");
		have_seq = 0;
	}
	if (have_empty_dir)
		do_rmdir(work_fh, "empty");
	if (have_small_dir)
		do_rmdir(work_fh, "small");
	do_rmdir(root_fh, work_name);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "server", required_argument, NULL, 'S' },
		{ "port", required_argument, NULL, 'p' },
		{ "mountport", required_argument, NULL, 'm' },
		{ "export", required_argument, NULL, 'e' },
		{ "qd", required_argument, NULL, 'q' },
		{ "files", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "io", required_argument, NULL, 'i' },
		{ "getattr-passes", required_argument, NULL, 'g' },
		{ "rdp-listings", required_argument, NULL, 'l' },
		{ "rdp-max", required_argument, NULL, 'r' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "keep", no_argument, NULL, 'k' },
		{ "test", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int want[NTESTS] = { 0 }, order[NTESTS], ntest = 0, failures = 0, c;
	struct one o = { 0 };

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'S': o_server = optarg; break;
		case 'p': o_port = (int)number("--port", optarg, 1, 65535); break;
		case 'm': o_mountport = (int)number("--mountport", optarg, 1, 65535); break;
		case 'e': o_export = optarg; break;
		case 'q': o_qd = (int)number("--qd", optarg, 1, 1024); break;
		case 'n': o_files = number("--files", optarg, 1, 999999); break;
		case 's': o_size = number("--size", optarg, 1, 1u << 20); break;
		case 'i': o_io = number("--io", optarg, 4096, 16u << 20); break;
		case 'g': o_getattr_passes = number("--getattr-passes", optarg, 1, 1000); break;
		case 'l': o_rdp_listings = number("--rdp-listings", optarg, 1, 1u << 20); break;
		case 'r': o_rdp_max = number("--rdp-max", optarg, 1024, 16u << 20); break;
		case 'T': o_timeout = (int)number("--timeout", optarg, 1, 86400); break;
		case 'k': o_keep = 1; break;
		case 't': {
			size_t i;
			for (i = 0; i < NTESTS && strcmp(test_names[i], optarg); i++)
				;
			if (i == NTESTS) {
				fprintf(stderr, "nfs_bench: unknown test %s\n", optarg);
				usage(1);
			}
			if (!want[i]) {
				want[i] = 1;
				order[ntest++] = (int)i;
			}
			break;
		}
		case 'h': usage(0); break;
		default: usage(1);
		}
	}
	/* "--test a b c": the names after --test's own argument */
	for (; optind < argc; optind++) {
		size_t i;
		for (i = 0; i < NTESTS && strcmp(test_names[i], argv[optind]); i++)
			;
		if (i == NTESTS) {
			fprintf(stderr, "nfs_bench: unknown test %s\n", argv[optind]);
			usage(1);
		}
		if (!want[i]) {
			want[i] = 1;
			order[ntest++] = (int)i;
		}
	}
	if (!ntest)
		usage(1);
	if (!o_mountport)
		o_mountport = o_port;

	big_buf = xmalloc(16u << 20);
	empty_files = calloc(o_files, sizeof(*empty_files));
	small_files = calloc(o_files, sizeof(*small_files));
	if (!empty_files || !small_files)
		die("out of memory");

	/* MOUNT, then NFS on the same connection when both share a port. */
	connect_to(o_mountport, MOUNT_PROGRAM, MOUNT_V3);
	o.copy = mnt_copy;
	o.res = &root_fh;
	one_wait(&o, "MNT", rpc_mount3_mnt_async(rpc, one_cb, (char *)o_export, &o));
	if (o_mountport != o_port) {
		rpc_destroy_context(rpc);
		connect_to(o_port, NFS_PROGRAM, NFS_V3);
	}
	{
		struct one f = { .copy = fsinfo_copy };
		FSINFO3args fa = { .fsroot = root_fh };
		one_wait(&f, "FSINFO", rpc_nfs3_fsinfo_async(rpc, one_cb, &fa, &f));
	}
	snprintf(work_name, sizeof(work_name), "nfs_bench.%ld.%ld", (long)getpid(),
		 (long)time(NULL));
	work_fh = do_mkdir(root_fh, work_name);

	printf("# %-12s %3s %8s %8s %10s %-9s %8s %8s\n", "test", "qd", "count", "seconds",
	       "rate", "unit", "p50_us", "p99_us");
	for (int k = 0; k < ntest; k++) {
		const char *n = test_names[order[k]];
		int ret;

		if (!strcmp(n, "create")) {
			ret = test_create(0, 0);
		} else if (!strcmp(n, "create-write4k")) {
			ret = test_create(0, 1);
		} else if (!strcmp(n, "lookup-read4k")) {
			ret = have_small ? 0 : test_create(1, 1);
			if (ret == 0)
				ret = test_lookup_read();
		} else if (!strcmp(n, "getattr") || !strcmp(n, "readdirplus") ||
			   !strcmp(n, "remove")) {
			ret = have_empty ? 0 : test_create(1, 0);
			if (ret == 0)
				ret = !strcmp(n, "getattr")	  ? test_getattr()
				      : !strcmp(n, "readdirplus") ? test_readdirplus()
								  : test_remove(0, empty_files);
		} else if (!strcmp(n, "seqwrite")) {
			ret = test_seqwrite(0);
		} else {
			ret = test_seqread();
		}
		failures += ret < 0;
	}
	if (!o_keep)
		cleanup();
	rpc_destroy_context(rpc);
	return failures ? 1 : 0;
}
