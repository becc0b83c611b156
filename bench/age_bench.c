/* age_bench: ages a filesystem and measures it (bench/age-bench.sh drives
 * it). The same replay runs against chunkfsd through NFSv3 (libnfs's raw
 * RPC calls, one connection, UNSTABLE WRITEs and per-file COMMITs) or
 * against a directory of a kernel filesystem (ext4 on a loop image).
 *
 * The method is Geriatrix's (Kadekodi et al., ATC 2018) in outline: files
 * are created, appended to, overwritten and deleted with sizes drawn from
 * a fixed distribution until the filesystem is FULL of its capacity, then
 * churned around that fullness until WRITE_FACTOR times the capacity has
 * been written; every SYNC_EVERY operations everything written so far is
 * made durable (COMMIT of each file written since, or syncfs), so that no
 * allocator can lay a burst out as one. The distribution (file sizes by
 * count; natural logarithms of bytes):
 *   body: lognormal, mu 9.48, sigma 2.46 (median 13 KiB, mean ~270 KiB),
 *         after the fit Agrawal et al. (FAST 2007) give for file sizes
 *   tail: with probability 0.02 instead, Pareto with x_m 4 MiB, alpha 1.2
 *   every size clamped to [1 byte, MAX_FILE] (default capacity / 32, at
 *   most 256 MiB)
 * Operations below the target fullness: create 55%, append 25%, overwrite
 * 10%, delete 10%; at or above it: delete 55%, create 20%, append 15%,
 * overwrite 10%. Of creates, 3% are logs (*.log, 4 KiB to start) that
 * appends then favour (half of all appends go to a log when there is
 * one); an append adds a size drawn from the body divided by 8, an
 * overwrite rewrites a drawn length in place at a random offset. A name
 * says its size class half the time (small: .c .h .conf .json .txt,
 * medium: .jpg .pdf .html .so, large: .mp4 .iso .tar.gz .qcow2 .mkv
 * .zst) and is neutral (.dat) otherwise, so a name-based placement gains
 * something and cannot be told everything. Files live in NDIRS
 * directories age/dNN. Everything is drawn from SEED; with --capacity the
 * fullness that steers the replay is its own count of its files' blocks
 * against that capacity, so that the same seed makes the same trace on
 * every filesystem (without, the filesystem's own used count steers, read
 * every 64 operations, and traces part once the target is reached).
 *
 * Commands (one per run, so that the script can restart the server or
 * remount and drop caches between them):
 *   age          the ageing replay above
 *   probe-write  the measured set: LARGE files of LARGE_MIB under
 *                probe/large, SMALL files of 2-16 KiB under probe/sNN
 *                (100 a directory), synced every SYNC_EVERY files
 *   probe-read   sequential read of the large files (reads of IO bytes,
 *                QD in flight through NFS; read(2) through the kernel)
 *                and LOOKUP + READ of every small file, one at a time,
 *                each set in a fixed shuffled order (read_order); --part
 *                large or small reads one set only
 *   count        (a directory only) every file's extents through FIEMAP,
 *                printed as bench/age_count prints chunkfs's
 * Every reply's status is checked; the first failure ends the run
 * (exit 1). Output: one line of key=value figures per result. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>

#include "fs/fs.h"
#include "fs/name_table.h"
#include "fs/predict.h"

#define KIB 1024ull
#define MIB (1024ull * 1024ull)
#define REPLY_TIMEOUT_MS 60000
#define MAX_QD 32

/* --- options ------------------------------------------------------------- */

static const char *o_server;         /* NFS: host (with o_port) */
static int o_port;
static int o_mport;                  /* MOUNT's port, when not o_port (ganesha) */
static const char *o_export = "/";
static const char *o_dir;            /* or a directory */
static double o_full = 0.80;
static double o_write_factor = 3.0;
static unsigned o_sync_every = 8;
static unsigned o_ndirs = 32;
static uint64_t o_seed = 1;
static uint64_t o_max_file;          /* 0: capacity / 32, at most 256 MiB */
static uint64_t o_max_ops;           /* 0: no limit */
static const char *o_history;        /* age: each file's history written there */
static uint64_t o_capacity;          /* 0: the filesystem's own counts steer */
static unsigned o_large = 8;
static unsigned o_large_mib = 64;
static unsigned o_small = 2000;
static unsigned o_io = 1u << 20;
static unsigned o_qd = 4;
static const char *o_part = "all";   /* probe-read: all, large or small */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "age_bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory");
	return p;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- random numbers: splitmix64 ------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd64(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double rnd01(void)
{
	return (double)(rnd64() >> 11) / 9007199254740992.0;
}

static uint64_t rnd_below(uint64_t n)
{
	return n ? rnd64() % n : 0;
}

static double rnd_normal(void)
{
	double u = rnd01(), w = rnd01();

	if (u < 1e-300)
		u = 1e-300;
	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * w);
}

#define BODY_MU 9.48
#define BODY_SIGMA 2.46
#define TAIL_P 0.02
#define TAIL_XM (4.0 * MIB)
#define TAIL_ALPHA 1.2

static uint64_t max_file;

static uint64_t clamp_size(double s)
{
	if (s < 1.0)
		return 1;
	if (s > (double)max_file)
		return max_file;
	return (uint64_t)s;
}

static uint64_t draw_body(void)
{
	return clamp_size(exp(BODY_MU + BODY_SIGMA * rnd_normal()));
}

static uint64_t draw_size(void)
{
	if (rnd01() < TAIL_P) {
		double u = 1.0 - rnd01(); /* (0, 1] */
		return clamp_size(TAIL_XM / pow(u, 1.0 / TAIL_ALPHA));
	}
	return draw_body();
}

/* --- names ---------------------------------------------------------------- */

static const char *const ext_small[] = { ".c", ".h", ".conf", ".json", ".txt" };
static const char *const ext_medium[] = { ".jpg", ".pdf", ".html", ".so" };
static const char *const ext_large[] = { ".mp4", ".iso", ".tar.gz", ".qcow2", ".mkv", ".zst" };
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* The suffix a new file of size gets (is_log: a log). */
static const char *pick_ext(uint64_t size, int is_log)
{
	if (is_log)
		return ".log";
	if (rnd01() >= 0.5)
		return ".dat";
	if (size < 64 * KIB)
		return ext_small[rnd_below(NELEM(ext_small))];
	if (size < 4 * MIB)
		return ext_medium[rnd_below(NELEM(ext_medium))];
	return ext_large[rnd_below(NELEM(ext_large))];
}

/* --- the backends --------------------------------------------------------- */

/* A file as the replay knows it; fh for NFS. */
struct file {
	uint32_t dir;
	uint32_t id;
	uint64_t size;
	char ext[8];
	int is_log;
	int unjudged;                 /* created, not yet through a sync */
	int8_t by_table, by_learning; /* the predictions at create: 1 large, 0 small */
	int learned;                  /* by_learning came from the predictor */
	/* --history: how the file was written */
	uint64_t created;             /* its size at create */
	uint32_t appends, overwrites;
	uint32_t grow_syncs;          /* sync intervals in which it grew */
	uint64_t grew_in;             /* the last of them, + 1 */
	nfs_fh3 fh;
};

static char *file_name(const struct file *f, char *buf, size_t len)
{
	snprintf(buf, len, "f%07u%s", f->id, f->ext);
	return buf;
}

static uint8_t *wbuf;                /* o_io bytes of data to write */
static uint8_t *rbuf;

/* NFS: one connection, calls made synchronous but for READ's pipeline. */
static struct rpc_context *rpc;
static nfs_fh3 root_fh;
static uint32_t wtmax, rtmax;

struct reply {
	int done;
	int rpc_status;
	char err[160];
	nfsstat3 status;
	uint8_t fh[NFS3_FHSIZE];
	u_int fh_len;
	uint32_t count;
	int eof;
	uint64_t tbytes, fbytes;
	uint32_t rtmax, wtmax;
};

static void fh_set(nfs_fh3 *dst, const uint8_t *data, u_int len)
{
	dst->data.data_len = len;
	dst->data.data_val = xmalloc(len);
	memcpy(dst->data.data_val, data, len);
}

static void fh_clear(nfs_fh3 *fh)
{
	free(fh->data.data_val);
	fh->data.data_val = NULL;
	fh->data.data_len = 0;
}

static void keep_fh(struct reply *r, const nfs_fh3 *fh)
{
	if (fh->data.data_len > NFS3_FHSIZE) {
		r->status = NFS3ERR_BADHANDLE;
		return;
	}
	memcpy(r->fh, fh->data.data_val, fh->data.data_len);
	r->fh_len = fh->data.data_len;
}

/* Each callback records the reply's status and what the caller needs. */
static int cb_common(struct reply *r, int status, void *data)
{
	r->done = 1;
	r->rpc_status = status;
	if (status != RPC_STATUS_SUCCESS) {
		snprintf(r->err, sizeof(r->err), "%s", data ? (const char *)data : "cancelled");
		return 0;
	}
	return 1;
}

static void cb_mnt(struct rpc_context *c, int status, void *data, void *priv)
{
	struct reply *r = priv;
	mountres3 *m = data;

	(void)c;
	if (!cb_common(r, status, data))
		return;
	r->status = m->fhs_status == MNT3_OK ? NFS3_OK : NFS3ERR_ACCES;
	if (m->fhs_status == MNT3_OK) {
		nfs_fh3 fh = { .data = { m->mountres3_u.mountinfo.fhandle.fhandle3_len,
					 m->mountres3_u.mountinfo.fhandle.fhandle3_val } };
		keep_fh(r, &fh);
	}
}

static void cb_null(struct rpc_context *c, int status, void *data, void *priv)
{
	(void)c;
	cb_common(priv, status, data);
}

static void cb_fsinfo(struct rpc_context *c, int status, void *data, void *priv)
{
	struct reply *r = priv;
	FSINFO3res *res = data;

	(void)c;
	if (!cb_common(r, status, data))
		return;
	r->status = res->status;
	if (res->status == NFS3_OK) {
		r->rtmax = res->FSINFO3res_u.resok.rtmax;
		r->wtmax = res->FSINFO3res_u.resok.wtmax;
	}
}

static void cb_fsstat(struct rpc_context *c, int status, void *data, void *priv)
{
	struct reply *r = priv;
	FSSTAT3res *res = data;

	(void)c;
	if (!cb_common(r, status, data))
		return;
	r->status = res->status;
	if (res->status == NFS3_OK) {
		r->tbytes = res->FSSTAT3res_u.resok.tbytes;
		r->fbytes = res->FSSTAT3res_u.resok.fbytes;
	}
}

static void cb_lookup(struct rpc_context *c, int status, void *data, void *priv)
{
	struct reply *r = priv;
	LOOKUP3res *res = data;

	(void)c;
	if (!cb_common(r, status, data))
		return;
	r->status = res->status;
	if (res->status == NFS3_OK)
		keep_fh(r, &res->LOOKUP3res_u.resok.object);
}

static void cb_create(struct rpc_context *c, int status, void *data, void *priv)
{
	struct reply *r = priv;
	CREATE3res *res = data;

	(void)c;
	if (!cb_common(r, status, data))
		return;
	r->status = res->status;
	if (res->status != NFS3_OK)
		return;
	if (!res->CREATE3res_u.resok.obj.handle_follows)
		r->status = NFS3ERR_SERVERFAULT; /* chunkfsd always sends it */
	else
		keep_fh(r, &res->CREATE3res_u.resok.obj.post_op_fh3_u.handle);
}

static void cb_mkdir(struct rpc_context *c, int status, void *data, void *priv)
{
	struct reply *r = priv;
	MKDIR3res *res = data;

	(void)c;
	if (!cb_common(r, status, data))
		return;
	r->status = res->status;
	if (res->status != NFS3_OK)
		return;
	if (!res->MKDIR3res_u.resok.obj.handle_follows)
		r->status = NFS3ERR_SERVERFAULT;
	else
		keep_fh(r, &res->MKDIR3res_u.resok.obj.post_op_fh3_u.handle);
}

static void cb_write(struct rpc_context *c, int status, void *data, void *priv)
{
	struct reply *r = priv;
	WRITE3res *res = data;

	(void)c;
	if (!cb_common(r, status, data))
		return;
	r->status = res->status;
	if (res->status == NFS3_OK)
		r->count = res->WRITE3res_u.resok.count;
}

static void cb_read(struct rpc_context *c, int status, void *data, void *priv)
{
	struct reply *r = priv;
	READ3res *res = data;

	(void)c;
	if (!cb_common(r, status, data))
		return;
	r->status = res->status;
	if (res->status == NFS3_OK) {
		r->count = res->READ3res_u.resok.count;
		r->eof = res->READ3res_u.resok.eof;
		if (res->READ3res_u.resok.data.data_len != r->count)
			r->status = NFS3ERR_IO;
	}
}

static void cb_commit(struct rpc_context *c, int status, void *data, void *priv)
{
	struct reply *r = priv;
	COMMIT3res *res = data;

	(void)c;
	if (cb_common(r, status, data))
		r->status = res->status;
}

static void cb_remove(struct rpc_context *c, int status, void *data, void *priv)
{
	struct reply *r = priv;
	REMOVE3res *res = data;

	(void)c;
	if (cb_common(r, status, data))
		r->status = res->status;
}

/* Drive the connection until every reply in r[0..n) has come. */
static void wait_all(struct reply *r, unsigned n, const char *what)
{
	for (;;) {
		unsigned pending = 0;
		for (unsigned i = 0; i < n; i++)
			pending += !r[i].done;
		if (!pending)
			break;
		struct pollfd pfd = { .fd = rpc_get_fd(rpc), .events = rpc_which_events(rpc) };
		int k = poll(&pfd, 1, REPLY_TIMEOUT_MS);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			die("%s: poll: %s", what, strerror(errno));
		if (k == 0)
			die("%s: no reply within %d s", what, REPLY_TIMEOUT_MS / 1000);
		if (rpc_service(rpc, pfd.revents) < 0)
			die("%s: connection lost: %s", what, rpc_get_error(rpc));
	}
	for (unsigned i = 0; i < n; i++)
		if (r[i].rpc_status != RPC_STATUS_SUCCESS)
			die("%s: RPC failed: %s", what, r[i].err);
}

/* One call: sent is what the libnfs _async function returned. */
static void one(struct reply *r, int sent, const char *what)
{
	if (sent != 0)
		die("%s: cannot send: %s", what, rpc_get_error(rpc));
	wait_all(r, 1, what);
}

static void expect_ok(const struct reply *r, const char *what, const char *name)
{
	if (r->status != NFS3_OK)
		die("%s %s: %s", what, name ? name : "", nfsstat3_to_str(r->status));
}

/* rpc: a new connection to port for program prog, version vers. */
static void rn_open(int port, int prog, int vers)
{
	struct rpc_context *c = rpc_init_context();
	struct reply r = { 0 };

	if (!c)
		die("rpc_init_context failed");
	rpc_set_uid(c, 0);
	rpc_set_gid(c, 0);
	rpc = c;
	if (rpc_connect_port_async(c, o_server, port, prog, vers, cb_null, &r) != 0)
		die("connect %s:%d: %s", o_server, port, rpc_get_error(c));
	wait_all(&r, 1, "connect");
}

/* MNT on o_mport (o_port when 0: chunkfsd answers both on one port), then
 * NFS on o_port. */
static void rn_connect(void)
{
	struct reply r = { 0 };
	FSINFO3args fa;
	int mport = o_mport ? o_mport : o_port;

	rn_open(mport, MOUNT_PROGRAM, MOUNT_V3);
	one(&r, rpc_mount3_mnt_async(rpc, cb_mnt, (char *)o_export, &r), "MNT");
	expect_ok(&r, "MNT", o_export);
	fh_set(&root_fh, r.fh, r.fh_len);
	if (mport != o_port) {
		rpc_destroy_context(rpc);
		rn_open(o_port, NFS_PROGRAM, NFS_V3);
	}
	memset(&r, 0, sizeof(r));
	fa.fsroot = root_fh;
	one(&r, rpc_nfs3_fsinfo_async(rpc, cb_fsinfo, &fa, &r), "FSINFO");
	expect_ok(&r, "FSINFO", NULL);
	rtmax = r.rtmax ? r.rtmax : 65536;
	wtmax = r.wtmax ? r.wtmax : 65536;
}

static int rn_lookup(const nfs_fh3 *dir, const char *name, nfs_fh3 *out)
{
	struct reply r = { 0 };
	LOOKUP3args a = { .what = { .dir = *dir, .name = (char *)name } };

	one(&r, rpc_nfs3_lookup_async(rpc, cb_lookup, &a, &r), "LOOKUP");
	if (r.status == NFS3_OK)
		fh_set(out, r.fh, r.fh_len);
	return r.status == NFS3_OK ? 0 : -(int)r.status;
}

/* dir/name as a directory: made, or looked up when it exists. */
static void rn_mkdir_p(const nfs_fh3 *dir, const char *name, nfs_fh3 *out)
{
	struct reply r = { 0 };
	MKDIR3args a;

	memset(&a, 0, sizeof(a));
	a.where.dir = *dir;
	a.where.name = (char *)name;
	a.attributes.mode.set_it = 1;
	a.attributes.mode.set_mode3_u.mode = 0755;
	one(&r, rpc_nfs3_mkdir_async(rpc, cb_mkdir, &a, &r), "MKDIR");
	if (r.status == NFS3ERR_EXIST) {
		if (rn_lookup(dir, name, out) != 0)
			die("LOOKUP %s after EXIST failed", name);
		return;
	}
	expect_ok(&r, "MKDIR", name);
	fh_set(out, r.fh, r.fh_len);
}

/* 0, or -ENOSPC when the server has no room for the file. */
static int rn_create(const nfs_fh3 *dir, const char *name, nfs_fh3 *out)
{
	struct reply r = { 0 };
	CREATE3args a;

	memset(&a, 0, sizeof(a));
	a.where.dir = *dir;
	a.where.name = (char *)name;
	a.how.mode = GUARDED;
	a.how.createhow3_u.obj_attributes.mode.set_it = 1;
	a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0644;
	one(&r, rpc_nfs3_create_async(rpc, cb_create, &a, &r), "CREATE");
	if (r.status == NFS3ERR_NOSPC)
		return -ENOSPC;
	expect_ok(&r, "CREATE", name);
	fh_set(out, r.fh, r.fh_len);
	return 0;
}

/* [off, off + len) written with UNSTABLE WRITEs of at most wtmax, QD in
 * flight: 0, or -ENOSPC when the server said NFS3ERR_NOSPC (the rest of
 * the range may be written or not). */
static int rn_write(const nfs_fh3 *fh, uint64_t off, uint64_t len)
{
	int nospc = 0;
	struct reply r[MAX_QD];
	WRITE3args a[MAX_QD];
	unsigned io = o_io < wtmax ? o_io : wtmax;

	while (len > 0) {
		unsigned n = 0;
		for (; n < o_qd && len > 0; n++) {
			uint32_t cnt = len < io ? (uint32_t)len : io;
			memset(&r[n], 0, sizeof(r[n]));
			memset(&a[n], 0, sizeof(a[n]));
			a[n].file = *fh;
			a[n].offset = off;
			a[n].count = cnt;
			a[n].stable = UNSTABLE;
			a[n].data.data_len = cnt;
			a[n].data.data_val = (char *)wbuf;
			if (rpc_nfs3_write_async(rpc, cb_write, &a[n], &r[n]) != 0)
				die("WRITE: cannot send: %s", rpc_get_error(rpc));
			off += cnt;
			len -= cnt;
		}
		wait_all(r, n, "WRITE");
		for (unsigned i = 0; i < n; i++) {
			if (r[i].status == NFS3ERR_NOSPC) {
				nospc = 1;
				continue;
			}
			expect_ok(&r[i], "WRITE", NULL);
			if (r[i].count != a[i].count)
				die("WRITE: short write (%u of %u)", r[i].count, a[i].count);
		}
		if (nospc)
			return -ENOSPC;
	}
	return 0;
}

/* COMMIT of the whole file; a file removed since it was written is
 * NFS3ERR_STALE, which is fine. */
static void rn_commit(const nfs_fh3 *fh)
{
	struct reply r = { 0 };
	COMMIT3args a = { .file = *fh, .offset = 0, .count = 0 };

	one(&r, rpc_nfs3_commit_async(rpc, cb_commit, &a, &r), "COMMIT");
	if (r.status != NFS3ERR_STALE)
		expect_ok(&r, "COMMIT", NULL);
}

static void rn_remove(const nfs_fh3 *dir, const char *name)
{
	struct reply r = { 0 };
	REMOVE3args a = { .object = { .dir = *dir, .name = (char *)name } };

	one(&r, rpc_nfs3_remove_async(rpc, cb_remove, &a, &r), "REMOVE");
	expect_ok(&r, "REMOVE", name);
}

/* Bytes used and total, by the server's own count. */
static void rn_fsstat(uint64_t *used, uint64_t *total)
{
	struct reply r = { 0 };
	FSSTAT3args a = { .fsroot = root_fh };

	one(&r, rpc_nfs3_fsstat_async(rpc, cb_fsstat, &a, &r), "FSSTAT");
	expect_ok(&r, "FSSTAT", NULL);
	*total = r.tbytes;
	*used = r.tbytes - r.fbytes;
}

/* Reads the whole file (size bytes) with QD READs of at most rtmax in
 * flight; returns the bytes read. */
static uint64_t rn_read_all(const nfs_fh3 *fh, uint64_t size)
{
	struct reply r[MAX_QD];
	READ3args a[MAX_QD];
	unsigned io = o_io < rtmax ? o_io : rtmax;
	uint64_t off = 0, got = 0;

	while (off < size) {
		unsigned n = 0;
		for (; n < o_qd && off < size; n++) {
			memset(&r[n], 0, sizeof(r[n]));
			a[n].file = *fh;
			a[n].offset = off;
			a[n].count = io;
			if (rpc_nfs3_read_async(rpc, cb_read, &a[n], &r[n]) != 0)
				die("READ: cannot send: %s", rpc_get_error(rpc));
			off += io;
		}
		wait_all(r, n, "READ");
		for (unsigned i = 0; i < n; i++) {
			expect_ok(&r[i], "READ", NULL);
			got += r[i].count;
		}
	}
	return got;
}

/* The directory backend: paths under o_dir. */
static int root_fd = -1;

static void dir_path(char *buf, size_t len, const char *sub, const char *name)
{
	snprintf(buf, len, "%s/%s%s%s", o_dir, sub, name ? "/" : "", name ? name : "");
}

/* 0, or -ENOSPC (the rest of the range may be written or not). */
static int dir_write(const char *path, uint64_t off, uint64_t len, int create)
{
	int fd = open(path, O_WRONLY | (create ? O_CREAT | O_EXCL : 0), 0644);

	if (fd < 0 && errno == ENOSPC)
		return -ENOSPC;
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	while (len > 0) {
		size_t cnt = len < o_io ? (size_t)len : o_io;
		ssize_t k = pwrite(fd, wbuf, cnt, (off_t)off);
		if (k < 0 && errno == ENOSPC) {
			close(fd);
			return -ENOSPC;
		}
		if (k < 0)
			die("write %s: %s", path, strerror(errno));
		if ((size_t)k != cnt)
			die("write %s: short write", path);
		off += cnt;
		len -= cnt;
	}
	if (close(fd) < 0)
		die("close %s: %s", path, strerror(errno));
	return 0;
}

static void dir_statfs(uint64_t *used, uint64_t *total)
{
	struct statvfs st;

	if (fstatvfs(root_fd, &st) < 0)
		die("statvfs %s: %s", o_dir, strerror(errno));
	*total = (uint64_t)st.f_blocks * st.f_frsize;
	*used = (uint64_t)(st.f_blocks - st.f_bfree) * st.f_frsize;
}

static void dir_sync(void)
{
	if (syncfs(root_fd) < 0)
		die("syncfs %s: %s", o_dir, strerror(errno));
}

static void dir_mkdir(const char *path)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		die("mkdir %s: %s", path, strerror(errno));
}

/* --- what both backends are asked ----------------------------------------- */

static int use_nfs;
static uint64_t sync_epoch;          /* syncs so far (--history) */
static nfs_fh3 *dir_fh;              /* NFS: the handles of the age/dNN */
static nfs_fh3 age_fh;

/* Files written since the last sync (NFS: their handles, to COMMIT). */
static nfs_fh3 *dirty;
static unsigned ndirty;

static void note_dirty(const struct file *f)
{
	if (!use_nfs)
		return;
	for (unsigned i = 0; i < ndirty; i++)
		if (dirty[i].data.data_len == f->fh.data.data_len &&
		    memcmp(dirty[i].data.data_val, f->fh.data.data_val, f->fh.data.data_len) == 0)
			return;
	fh_set(&dirty[ndirty++], (const uint8_t *)f->fh.data.data_val, f->fh.data.data_len);
}

static void note_growth(struct file *f)
{
	if (f->grew_in != sync_epoch + 1) {
		f->grew_in = sync_epoch + 1;
		f->grow_syncs++;
	}
}

static void sync_all(void)
{
	sync_epoch++;
	if (!use_nfs) {
		dir_sync();
		return;
	}
	for (unsigned i = 0; i < ndirty; i++) {
		rn_commit(&dirty[i]);
		fh_clear(&dirty[i]);
	}
	ndirty = 0;
}

static void fs_usage(uint64_t *used, uint64_t *total)
{
	if (use_nfs)
		rn_fsstat(used, total);
	else
		dir_statfs(used, total);
}

static void age_dirs(void)
{
	char path[4096], name[32];

	if (use_nfs) {
		rn_mkdir_p(&root_fh, "age", &age_fh);
		dir_fh = xmalloc(o_ndirs * sizeof(*dir_fh));
	} else {
		dir_path(path, sizeof(path), "age", NULL);
		dir_mkdir(path);
	}
	for (unsigned d = 0; d < o_ndirs; d++) {
		snprintf(name, sizeof(name), "d%02u", d);
		if (use_nfs) {
			rn_mkdir_p(&age_fh, name, &dir_fh[d]);
		} else {
			snprintf(path, sizeof(path), "%s/age/%s", o_dir, name);
			dir_mkdir(path);
		}
	}
}

static void file_path(const struct file *f, char *buf, size_t len)
{
	char name[64];

	snprintf(buf, len, "%s/age/d%02u/%s", o_dir, f->dir, file_name(f, name, sizeof(name)));
}

/* 0, or -ENOSPC: the file exists, with some of its bytes. */
static int op_create(struct file *f)
{
	char name[64], path[4096];

	if (use_nfs) {
		if (rn_create(&dir_fh[f->dir], file_name(f, name, sizeof(name)), &f->fh) < 0)
			die("CREATE %s: no space for a new file (the replay cannot go on)", name);
		note_dirty(f);
		return rn_write(&f->fh, 0, f->size);
	}
	file_path(f, path, sizeof(path));
	return dir_write(path, 0, f->size, 1);
}

static int op_write(struct file *f, uint64_t off, uint64_t len)
{
	char path[4096];

	if (use_nfs) {
		note_dirty(f);
		return rn_write(&f->fh, off, len);
	}
	file_path(f, path, sizeof(path));
	return dir_write(path, off, len, 0);
}

static void op_delete(struct file *f)
{
	char name[64], path[4096];

	if (use_nfs) {
		rn_remove(&dir_fh[f->dir], file_name(f, name, sizeof(name)));
		fh_clear(&f->fh);
	} else {
		file_path(f, path, sizeof(path));
		if (unlink(path) < 0)
			die("unlink %s: %s", path, strerror(errno));
	}
}

/* --- age -------------------------------------------------------------------- */

/* How well names predict where a file's first data belongs, judged on the
 * trace itself: a new file's kind is predicted at create by the name
 * table alone (fs/name_table.c) and by the learned predictor
 * (fs/predict.c, the table where it has too few samples); the truth is
 * its size at the first sync after it was made (at least
 * PRED_LARGE_BYTES: large), which is also what the predictor learns. The
 * trace's owner and mode never vary, so only suffixes are learned. */
static struct predictor pred;
static uint64_t judged, table_right, learned_right, learned_used;

static void predict_at_create(struct file *f)
{
	char name[64];
	size_t len = strlen(file_name(f, name, sizeof(name)));
	int l = pred_large(&pred, name, len, 0, 0644);

	f->by_table = name_table_kind(name, len) == FS_KIND_LARGE;
	f->learned = l >= 0;
	f->by_learning = (int8_t)(l >= 0 ? l : f->by_table);
	f->unjudged = 1;
}

/* After a sync: every file made since is judged and learned from. */
static void judge_after_sync(struct file *files, size_t nfiles, unsigned *pending)
{
	char name[64];

	for (size_t i = 0; i < nfiles && *pending; i++) {
		struct file *f = &files[i];
		int large = f->size >= PRED_LARGE_BYTES;
		if (!f->unjudged)
			continue;
		f->unjudged = 0;
		(*pending)--;
		judged++;
		table_right += f->by_table == large;
		learned_right += f->by_learning == large;
		learned_used += f->learned;
		file_name(f, name, sizeof(name));
		pred_observe(&pred, name, strlen(name), 0, 0644, f->size);
	}
	*pending = 0;
}

/* --history: one line a file left, to set beside bench/age_count -l:
 *   hist /age/dNN/NAME size=S created=C appends=A overwrites=O grow_syncs=G
 * (G: the sync intervals in which it was created or appended to, each a
 * placement of its own through chunkfsd). */
static void write_history(const struct file *files, size_t nfiles)
{
	char name[64];
	FILE *h = fopen(o_history, "w");

	if (!h)
		die("%s: %s", o_history, strerror(errno));
	for (size_t i = 0; i < nfiles; i++) {
		const struct file *f = &files[i];
		fprintf(h,
			"hist /age/d%02u/%s size=%" PRIu64 " created=%" PRIu64
			" appends=%u overwrites=%u grow_syncs=%u\n",
			f->dir, file_name(f, name, sizeof(name)), f->size, f->created, f->appends,
			f->overwrites, f->grow_syncs);
	}
	if (fclose(h) != 0)
		die("%s: %s", o_history, strerror(errno));
}

struct counts {
	uint64_t ops, creates, deletes, appends, overwrites, syncs, written, enospc;
};

static uint64_t round_blocks(uint64_t n)
{
	return (n + 4095) & ~4095ull;
}

static void cmd_age(void)
{
	struct file *files;
	size_t nfiles = 0, cap = 1024;
	uint64_t used, total, est, target, limit;
	uint32_t next_id = 0;
	struct counts c = { 0 };
	double t0 = now(), reached = 0, first_enospc = -1;
	unsigned since_sync = 0, since_stat = 0, pending = 0;

	pred_init(&pred);
	files = xmalloc(cap * sizeof(*files));
	age_dirs();
	fs_usage(&used, &total);
	/* With --capacity, the replay is steered by its own count of the
	 * bytes its files hold (in 4 KiB blocks) against that capacity: the
	 * same seed then makes the same trace on every filesystem. Without,
	 * by the filesystem's own used count (FSSTAT, statvfs), read every
	 * 64 operations. */
	if (o_capacity) {
		total = o_capacity;
		used = 0;
	}
	max_file = o_max_file ? o_max_file : total / 32;
	if (!o_max_file && max_file > 256 * MIB)
		max_file = 256 * MIB;
	target = (uint64_t)(o_full * (double)total);
	limit = (uint64_t)(o_write_factor * (double)total);
	est = used;
	if (use_nfs)
		dirty = xmalloc((o_sync_every * 2 + 8) * sizeof(*dirty));

	while (c.written < limit && (!o_max_ops || c.ops < o_max_ops)) {
		int below = est < target;
		double p = rnd01();
		int op; /* 0 create, 1 append, 2 overwrite, 3 delete */
		long victim = -1; /* a file that met ENOSPC */

		if (below)
			op = p < 0.55 ? 0 : p < 0.80 ? 1 : p < 0.90 ? 2 : 3;
		else
			op = p < 0.55 ? 3 : p < 0.75 ? 0 : p < 0.90 ? 1 : 2;
		if (nfiles == 0)
			op = 0;
		if (!below && reached == 0)
			reached = now();

		if (op == 0) {
			struct file *f;
			int is_log = rnd01() < 0.03;
			uint64_t size = is_log ? 4096 : draw_size();
			if (est + round_blocks(size) > total - total / 50) {
				op = 3; /* no room: delete instead */
			} else {
				if (nfiles == cap) {
					cap *= 2;
					files = realloc(files, cap * sizeof(*files));
					if (!files)
						die("out of memory");
				}
				f = &files[nfiles++];
				memset(f, 0, sizeof(*f));
				f->dir = (uint32_t)rnd_below(o_ndirs);
				f->id = next_id++;
				f->size = size;
				f->is_log = is_log;
				f->created = size;
				note_growth(f);
				snprintf(f->ext, sizeof(f->ext), "%s", pick_ext(size, is_log));
				predict_at_create(f);
				pending++;
				c.creates++;
				c.written += size;
				est += round_blocks(size);
				if (op_create(f) < 0)
					victim = (long)nfiles - 1;
			}
		} else if (op == 1) {
			size_t i = rnd_below(nfiles);
			if (rnd01() < 0.5) {
				/* a log, when there is one among a few tries */
				for (int k = 0; k < 8 && !files[i].is_log; k++)
					i = rnd_below(nfiles);
			}
			struct file *f = &files[i];
			uint64_t add = f->is_log ? 512 + rnd_below(16 * KIB) : draw_body() / 8 + 1;
			if (f->size + add > max_file || est + round_blocks(add) > total - total / 50) {
				op = 3;
			} else {
				if (op_write(f, f->size, add) < 0)
					victim = (long)i;
				est += round_blocks(f->size + add) - round_blocks(f->size);
				f->size += add;
				f->appends++;
				note_growth(f);
				c.appends++;
				c.written += add;
			}
		} else if (op == 2) {
			size_t i = rnd_below(nfiles);
			struct file *f = &files[i];
			uint64_t len = draw_body();
			if (len > f->size)
				len = f->size;
			uint64_t off = rnd_below(f->size - len + 1);
			if (op_write(f, off, len) < 0)
				victim = (long)i;
			f->overwrites++;
			c.overwrites++;
			c.written += len;
		}
		if (victim >= 0) {
			/* No space although the filesystem's count said there
			 * was: the file (its size now unknown) goes, what was
			 * freed is committed, and the replay goes on. */
			uint64_t u, t;
			fs_usage(&u, &t);
			if (c.enospc++ == 0)
				first_enospc = 100.0 * (double)u / (double)t;
			op = 3;
			sync_all();
		}
		if (op == 3 && nfiles > 0) {
			size_t i = victim >= 0 ? (size_t)victim : rnd_below(nfiles);
			op_delete(&files[i]);
			if (files[i].unjudged)
				pending--; /* gone before any sync: never judged */
			est -= est > round_blocks(files[i].size) ? round_blocks(files[i].size) : est;
			files[i] = files[--nfiles];
			c.deletes++;
		}
		c.ops++;
		if (++since_sync >= o_sync_every || (use_nfs && ndirty >= o_sync_every * 2)) {
			sync_all();
			judge_after_sync(files, nfiles, &pending);
			c.syncs++;
			since_sync = 0;
		}
		/* the filesystem's own count, now and then */
		if (!o_capacity && ++since_stat >= 64) {
			fs_usage(&est, &total);
			since_stat = 0;
		}
	}
	sync_all();
	judge_after_sync(files, nfiles, &pending);
	c.syncs++;
	fs_usage(&used, &total);
	printf("age ops=%" PRIu64 " creates=%" PRIu64 " deletes=%" PRIu64 " appends=%" PRIu64
	       " overwrites=%" PRIu64 " syncs=%" PRIu64 " written_mib=%.0f files=%zu"
	       " used_pct=%.1f total_mib=%.0f max_file_mib=%.1f secs=%.1f full_at_secs=%.1f"
	       " enospc=%" PRIu64 " first_enospc_used_pct=%.1f\n",
	       c.ops, c.creates, c.deletes, c.appends, c.overwrites, c.syncs,
	       (double)c.written / MIB, nfiles, 100.0 * (double)used / (double)total,
	       (double)total / MIB, (double)max_file / MIB, now() - t0,
	       reached ? reached - t0 : -1.0, c.enospc, first_enospc);
	printf("predict judged=%" PRIu64 " table_right=%" PRIu64 " learned_right=%" PRIu64
	       " learned_used=%" PRIu64 " entries=%u\n",
	       judged, table_right, learned_right, learned_used, pred_entries(&pred));
	if (o_history)
		write_history(files, nfiles);
	for (size_t i = 0; i < nfiles; i++)
		fh_clear(&files[i].fh);
	free(files);
}

/* --- the probe set ---------------------------------------------------------- */

/* The size of small file i: 2-16 KiB, the same for every run. */
static uint64_t small_size(unsigned i)
{
	uint64_t z = (uint64_t)i * 0x9e3779b97f4a7c15ull + 12345;

	z ^= z >> 29;
	return 2 * KIB + (z % (14 * KIB));
}

/* One file of the probe set, size bytes, in the directory dir (NFS) or
 * sub under o_dir: 0, or -ENOSPC (what was made of it removed again). */
static int probe_file(const nfs_fh3 *dir, const char *sub, const char *name, uint64_t size,
		      int commit)
{
	char path[4096];
	nfs_fh3 fh = { 0 };

	if (!use_nfs) {
		snprintf(path, sizeof(path), "%s/%s/%s", o_dir, sub, name);
		if (dir_write(path, 0, size, 1) == 0)
			return 0;
		if (unlink(path) < 0 && errno != ENOENT)
			die("unlink %s: %s", path, strerror(errno));
		return -ENOSPC;
	}
	if (rn_create(dir, name, &fh) < 0)
		return -ENOSPC;
	if (rn_write(&fh, 0, size) < 0) {
		fh_clear(&fh);
		rn_remove(dir, name);
		return -ENOSPC;
	}
	if (commit) {
		rn_commit(&fh);
	} else {
		struct file f = { .fh = fh };
		note_dirty(&f);
	}
	fh_clear(&fh);
	return 0;
}

/* The probe set. A file the filesystem has no room for is left out (and
 * counted): the read then measures those that are there. */
static void cmd_probe_write(void)
{
	char name[64], path[4096], sname[16];
	nfs_fh3 probe = { 0 }, large = { 0 }, sub = { 0 };
	double t0 = now();
	unsigned since = 0, large_ok = 0, small_ok = 0;

	if (use_nfs) {
		rn_mkdir_p(&root_fh, "probe", &probe);
		rn_mkdir_p(&probe, "large", &large);
		dirty = xmalloc((o_sync_every * 2 + 8) * sizeof(*dirty));
	} else {
		dir_path(path, sizeof(path), "probe", NULL);
		dir_mkdir(path);
		dir_path(path, sizeof(path), "probe/large", NULL);
		dir_mkdir(path);
	}
	/* large files: each written start to end and committed, as cp does */
	for (unsigned i = 0; i < o_large; i++) {
		snprintf(name, sizeof(name), "L%02u.bin", i);
		if (probe_file(&large, "probe/large", name, (uint64_t)o_large_mib * MIB, 1) == 0)
			large_ok++;
		if (!use_nfs)
			dir_sync();
	}
	for (unsigned i = 0; i < o_small; i++) {
		snprintf(sname, sizeof(sname), "s%02u", i / 100);
		snprintf(name, sizeof(name), "f%05u.txt", i);
		if (i % 100 == 0) {
			if (use_nfs) {
				fh_clear(&sub);
				rn_mkdir_p(&probe, sname, &sub);
			} else {
				snprintf(path, sizeof(path), "%s/probe/%s", o_dir, sname);
				dir_mkdir(path);
			}
		}
		snprintf(path, sizeof(path), "probe/%s", sname);
		if (probe_file(&sub, path, name, small_size(i), 0) == 0)
			small_ok++;
		if (++since >= o_sync_every) {
			sync_all();
			since = 0;
		}
	}
	sync_all();
	printf("probe-write large=%u large_written=%u large_mib=%u small=%u small_written=%u"
	       " secs=%.1f\n",
	       o_large, large_ok, o_large_mib, o_small, small_ok, now() - t0);
	fh_clear(&probe);
	fh_clear(&large);
	fh_clear(&sub);
}

/* The probe set's read order: a permutation of 0..n-1 drawn from a seed
 * of its own, the same in every run and round, so that no filesystem is
 * read in the order it wrote the files and every round reads alike. */
#define READ_ORDER_SEED 0x5eed0fa11ull

static unsigned *read_order(unsigned n, uint64_t salt)
{
	unsigned *p = xmalloc(n * sizeof(*p));
	uint64_t keep = rng_state;

	rng_state = READ_ORDER_SEED ^ salt;
	for (unsigned i = 0; i < n; i++)
		p[i] = i;
	for (unsigned i = n; i > 1; i--) {
		unsigned j = (unsigned)rnd_below(i), t = p[i - 1];
		p[i - 1] = p[j];
		p[j] = t;
	}
	rng_state = keep;
	return p;
}

/* Reads path (under o_dir) whole with read(2) of o_io bytes: the bytes,
 * or -1 when it is not there. */
static int64_t dir_read_all(const char *path)
{
	int64_t got = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0 && errno == ENOENT)
		return -1;
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	for (;;) {
		ssize_t k = read(fd, rbuf, o_io);
		if (k < 0)
			die("read %s: %s", path, strerror(errno));
		if (k == 0)
			break;
		got += k;
	}
	close(fd);
	return got;
}

/* name in dir read whole through NFS (LOOKUP, then READs): the bytes, or
 * -1 when it is not there. */
static int64_t rn_lookup_read(const nfs_fh3 *dir, const char *name, uint64_t size)
{
	nfs_fh3 fh;
	int64_t got;
	int st = rn_lookup(dir, name, &fh);

	if (st == -(int)NFS3ERR_NOENT)
		return -1;
	if (st != 0)
		die("LOOKUP %s failed", name);
	got = (int64_t)rn_read_all(&fh, size);
	fh_clear(&fh);
	return got;
}

/* The large probe files, each read sequentially, in read_order's order. */
static void probe_read_large(const nfs_fh3 *large)
{
	char name[64], path[4096];
	uint64_t bytes = 0, want = (uint64_t)o_large_mib * MIB;
	unsigned n = 0, *order = read_order(o_large, 1);
	double t0 = now(), t1;

	for (unsigned k = 0; k < o_large; k++) {
		int64_t got;
		snprintf(name, sizeof(name), "L%02u.bin", order[k]);
		if (use_nfs) {
			got = rn_lookup_read(large, name, want);
		} else {
			dir_path(path, sizeof(path), "probe/large", name);
			got = dir_read_all(path);
		}
		if (got < 0) /* a file probe-write had no room for is not there */
			continue;
		if ((uint64_t)got != want)
			die("%s: read %" PRId64 " bytes, expected %" PRIu64, name, got, want);
		bytes += want;
		n++;
	}
	t1 = now();
	printf("read-large files=%u mib=%.0f secs=%.3f mibps=%.1f io=%u\n", n, (double)bytes / MIB,
	       t1 - t0, n ? (double)bytes / MIB / (t1 - t0) : 0.0,
	       use_nfs && rtmax < o_io ? rtmax : o_io);
	free(order);
}

/* Every small probe file by LOOKUP + READ (open + read), one at a time, in
 * read_order's order; each directory is looked up when first needed. */
static void probe_read_small(const nfs_fh3 *probe)
{
	char name[64], path[4096], sname[16];
	unsigned ndirs = (o_small + 99) / 100, n = 0, *order = read_order(o_small, 2);
	nfs_fh3 *sub = calloc(ndirs ? ndirs : 1, sizeof(*sub));
	double t0 = now(), t1;

	if (!sub)
		die("out of memory");
	for (unsigned k = 0; k < o_small; k++) {
		unsigned i = order[k], d = i / 100;
		int64_t got;
		snprintf(sname, sizeof(sname), "s%02u", d);
		snprintf(name, sizeof(name), "f%05u.txt", i);
		if (use_nfs) {
			if (!sub[d].data.data_len && rn_lookup(probe, sname, &sub[d]) != 0)
				die("LOOKUP %s failed", sname);
			got = rn_lookup_read(&sub[d], name, small_size(i));
		} else {
			snprintf(path, sizeof(path), "%s/probe/%s/%s", o_dir, sname, name);
			got = dir_read_all(path);
		}
		if (got < 0)
			continue;
		if ((uint64_t)got != small_size(i))
			die("%s: read %" PRId64 " bytes, expected %" PRIu64, name, got, small_size(i));
		n++;
	}
	t1 = now();
	printf("read-small files=%u secs=%.3f rate=%.0f\n", n, t1 - t0, (double)n / (t1 - t0));
	for (unsigned d = 0; d < ndirs; d++)
		fh_clear(&sub[d]);
	free(sub);
	free(order);
}

/* probe-read: --part all (large, then small), large or small. */
static void cmd_probe_read(void)
{
	nfs_fh3 probe = { 0 }, large = { 0 };
	int all = strcmp(o_part, "all") == 0;

	if (use_nfs) {
		if (rn_lookup(&root_fh, "probe", &probe) != 0 ||
		    rn_lookup(&probe, "large", &large) != 0)
			die("no probe set: run probe-write first");
	}
	if (all || strcmp(o_part, "large") == 0)
		probe_read_large(&large);
	if (all || strcmp(o_part, "small") == 0)
		probe_read_small(&probe);
	fh_clear(&probe);
	fh_clear(&large);
}

/* --- count: FIEMAP over a directory tree ------------------------------------- */

struct group {
	char name[256];
	uint64_t n, data, extents, one, max, blocks;
};
#define MAX_GROUPS 64
static struct group grp_table[MAX_GROUPS];
static unsigned ngrp;

static struct group *group_get(const char *name)
{
	for (unsigned i = 0; i < ngrp; i++)
		if (strcmp(grp_table[i].name, name) == 0)
			return &grp_table[i];
	if (ngrp == MAX_GROUPS)
		return NULL;
	snprintf(grp_table[ngrp].name, sizeof(grp_table[ngrp].name), "%s", name);
	return &grp_table[ngrp++];
}

static void group_add(struct group *g, uint64_t extents, uint64_t blocks)
{
	if (!g)
		return;
	g->n++;
	if (extents == 0)
		return;
	g->data++;
	g->extents += extents;
	g->blocks += blocks;
	g->one += extents == 1;
	if (extents > g->max)
		g->max = extents;
}

/* A file's extents as FIEMAP reports them, runs contiguous on disk merged
 * (ext4 cuts an extent at 32768 blocks), and its blocks. */
static void fiemap_count(int fd, const char *path, uint64_t *extents, uint64_t *blocks)
{
	enum { BATCH = 256 };
	struct fiemap *fm = xmalloc(sizeof(*fm) + BATCH * sizeof(struct fiemap_extent));
	uint64_t start = 0, last_end_phys = UINT64_MAX, last_end_log = UINT64_MAX;
	int done = 0;

	*extents = *blocks = 0;
	while (!done) {
		memset(fm, 0, sizeof(*fm));
		fm->fm_start = start;
		fm->fm_length = FIEMAP_MAX_OFFSET - start;
		fm->fm_flags = FIEMAP_FLAG_SYNC;
		fm->fm_extent_count = BATCH;
		if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0)
			die("FIEMAP %s: %s", path, strerror(errno));
		if (fm->fm_mapped_extents == 0)
			break;
		for (unsigned i = 0; i < fm->fm_mapped_extents; i++) {
			struct fiemap_extent *e = &fm->fm_extents[i];
			if (e->fe_physical != last_end_phys || e->fe_logical != last_end_log)
				(*extents)++;
			*blocks += (e->fe_length + 4095) / 4096;
			last_end_phys = e->fe_physical + e->fe_length;
			last_end_log = e->fe_logical + e->fe_length;
			start = e->fe_logical + e->fe_length;
			if (e->fe_flags & FIEMAP_EXTENT_LAST)
				done = 1;
		}
	}
	free(fm);
}

/* As bench/age_count groups chunkfs's files: by top-level directory, but
 * probe/large as probe-large and probe's other directories as
 * probe-small. */
static const char *child_group(const char *grp, const char *name, int depth)
{
	if (depth == 0)
		return name;
	if (depth == 1 && strcmp(grp, "probe") == 0)
		return strcmp(name, "large") == 0 ? "probe-large" : "probe-small";
	return grp;
}

static void count_walk(const char *path, const char *grp, int depth)
{
	DIR *d = opendir(path);
	struct dirent *de;

	if (!d)
		die("opendir %s: %s", path, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		char sub[4096], g[256];
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (depth == 0 && strcmp(de->d_name, "lost+found") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		snprintf(g, sizeof(g), "%s", child_group(grp, de->d_name, depth));
		if (lstat(sub, &st) < 0)
			die("stat %s: %s", sub, strerror(errno));
		if (S_ISDIR(st.st_mode)) {
			count_walk(sub, g, depth + 1);
		} else if (S_ISREG(st.st_mode)) {
			uint64_t ext, blk;
			int fd = open(sub, O_RDONLY);
			if (fd < 0)
				die("open %s: %s", sub, strerror(errno));
			fiemap_count(fd, sub, &ext, &blk);
			close(fd);
			group_add(group_get("all"), ext, blk);
			if (depth > 0)
				group_add(group_get(g), ext, blk);
		}
	}
	closedir(d);
}

static void cmd_count(void)
{
	if (use_nfs)
		die("count reads a local directory (chunkfs: bench/age_count on the image)");
	group_get("all");
	count_walk(o_dir, "", 0);
	for (unsigned i = 0; i < ngrp; i++)
		printf("files %s n=%" PRIu64 " data=%" PRIu64 " extents=%" PRIu64 " one=%" PRIu64
		       " max=%" PRIu64 " blocks=%" PRIu64 "\n",
		       grp_table[i].name, grp_table[i].n, grp_table[i].data, grp_table[i].extents, grp_table[i].one,
		       grp_table[i].max, grp_table[i].blocks);
}

/* --- main --------------------------------------------------------------------- */

static void usage(int status)
{
	fprintf(status ? stderr : stdout,
		"usage: age_bench (--nfs HOST:PORT [--export PATH] | --dir DIR) [options] COMMAND\n"
		"commands: age, probe-write, probe-read, count (--dir only)\n"
		"options: --full F (0.80) --write-factor W (3) --sync-every N (8) --dirs N (32)\n"
		"         --seed S (1) --max-file BYTES (capacity/32, <= 256 MiB) --max-ops N\n"
		"         --capacity BYTES (steer by the replay's own count against it)\n"
		"         --history PATH (age: each file's writes, one line a file)\n"
		"         --large N (8) --large-mib M (64) --small N (2000) --io BYTES (1 MiB)\n"
		"         --qd N (4) --mount-port PORT (MOUNT's, when not the NFS port)\n"
		"         --part all|large|small (probe-read: which files; all)\n");
	exit(status);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "nfs", required_argument, NULL, 'n' },
		{ "export", required_argument, NULL, 'e' },
		{ "dir", required_argument, NULL, 'd' },
		{ "full", required_argument, NULL, 'f' },
		{ "write-factor", required_argument, NULL, 'w' },
		{ "sync-every", required_argument, NULL, 'y' },
		{ "dirs", required_argument, NULL, 'D' },
		{ "seed", required_argument, NULL, 's' },
		{ "max-file", required_argument, NULL, 'm' },
		{ "max-ops", required_argument, NULL, 'o' },
		{ "capacity", required_argument, NULL, 'c' },
		{ "large", required_argument, NULL, 'L' },
		{ "large-mib", required_argument, NULL, 'M' },
		{ "small", required_argument, NULL, 'S' },
		{ "io", required_argument, NULL, 'i' },
		{ "qd", required_argument, NULL, 'q' },
		{ "mount-port", required_argument, NULL, 'P' },
		{ "part", required_argument, NULL, 'p' },
		{ "history", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *cmd;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': {
			char *colon = strrchr(optarg, ':');
			if (!colon)
				usage(2);
			*colon = '\0';
			o_server = optarg;
			o_port = atoi(colon + 1);
			break;
		}
		case 'e': o_export = optarg; break;
		case 'd': o_dir = optarg; break;
		case 'f': o_full = atof(optarg); break;
		case 'w': o_write_factor = atof(optarg); break;
		case 'y': o_sync_every = (unsigned)atoi(optarg); break;
		case 'D': o_ndirs = (unsigned)atoi(optarg); break;
		case 's': o_seed = strtoull(optarg, NULL, 0); break;
		case 'm': o_max_file = strtoull(optarg, NULL, 0); break;
		case 'o': o_max_ops = strtoull(optarg, NULL, 0); break;
		case 'c': o_capacity = strtoull(optarg, NULL, 0); break;
		case 'L': o_large = (unsigned)atoi(optarg); break;
		case 'M': o_large_mib = (unsigned)atoi(optarg); break;
		case 'S': o_small = (unsigned)atoi(optarg); break;
		case 'i': o_io = (unsigned)atoi(optarg); break;
		case 'q': o_qd = (unsigned)atoi(optarg); break;
		case 'P': o_mport = atoi(optarg); break;
		case 'p': o_part = optarg; break;
		case 'H': o_history = optarg; break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind != argc - 1 || (!o_server == !o_dir))
		usage(2);
	if (o_full <= 0 || o_full >= 0.98 || o_sync_every == 0 || o_ndirs == 0 ||
	    o_ndirs > 100 || o_io < 4096 || o_qd == 0 || o_qd > MAX_QD || o_large > 100 ||
	    o_small > 10000 ||
	    (strcmp(o_part, "all") && strcmp(o_part, "large") && strcmp(o_part, "small")))
		die("an option is out of range (see --help)");
	cmd = argv[optind];
	rng_state = o_seed;
	wbuf = xmalloc(o_io);
	rbuf = xmalloc(o_io);
	for (unsigned i = 0; i < o_io; i++)
		wbuf[i] = (uint8_t)(rnd64() >> 56);
	use_nfs = o_server != NULL;
	if (use_nfs) {
		rn_connect();
	} else {
		root_fd = open(o_dir, O_RDONLY | O_DIRECTORY);
		if (root_fd < 0)
			die("%s: %s", o_dir, strerror(errno));
	}
	if (strcmp(cmd, "age") == 0)
		cmd_age();
	else if (strcmp(cmd, "probe-write") == 0)
		cmd_probe_write();
	else if (strcmp(cmd, "probe-read") == 0)
		cmd_probe_read();
	else if (strcmp(cmd, "count") == 0)
		cmd_count();
	else
		usage(2);
	if (use_nfs) {
		fh_clear(&root_fh);
		rpc_destroy_context(rpc);
	} else {
		close(root_fd);
	}
	free(wbuf);
	free(rbuf);
	free(dirty);
	free(dir_fh);
	return 0;
}
