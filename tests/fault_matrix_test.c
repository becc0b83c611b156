/* The fault matrix (issue 21; the model is IRON file systems, SOSP 2005):
 * every metadata unit type of one chunk x {copy 0, copy 1, both} x {read
 * error, write error, random bytes, torn (a newer version whose last
 * sectors are still the older one's), zeroed, a stale but valid older
 * version} x {settled, committed (lists in place), held entries
 * named, crash mid-transaction}, and for each cell what happened, printed
 * as one table:
 *   det     the fault was detected (fsck -n found it, or the served
 *           volume healed a copy, found one unreadable, or recovery healed)
 *   heal    afterwards both copies of the unit are whole and equal
 *   off     the chunk was left needing repair (or offline)
 *   lost    files of the tree (tests/fsck_image.c) that no longer read
 *           back exactly: served / after fsck -y
 *   acked   acknowledged operations lost: served / after fsck -y
 *   other   bytes fsck -y on the chunk changed in other chunks
 * Each cell is taken two ways from the damaged image: served (opened
 * through memory stores, the tree read, one more change committed, both
 * copies compared) and repaired (fsck -n, fsck -y on the chunk, fsck -n on
 * it again, then opened and read). Read and write errors are served only
 * (a bad range of the memory store; fsck reads image files).
 * Required, and checked: every one-copy fault in every state loses no file
 * and no acknowledged operation, either way; the repair leaves both
 * copies equal, a second fsck clean and other chunks untouched. One cell
 * kind is out of reach and only printed (marked "2f"): in the crash state,
 * a unit the transaction in flight was writing, damaged in the copy it was
 * not writing, is two faults on one unit at once (one copy torn by the
 * crash, the other damaged): its last committed version is gone. Both
 * copies (issue 20's salvage): no crash, a second fsck clean, and no file
 * lost after fsck for the header (made again from another chunk's), the
 * bitmap, the map (rebuilt from what they index) or a dirty list, but for
 * a stale version (consistent in both copies, no check can tell it); what
 * an inode-area block, a directory or an extent unit held is printed.
 * FAULT_MATRIX_VERBOSE=1 prints every cell, else the one-copy cells that
 * failed and a summary per state. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/format/ondisk.h"
#include "fs/fs.h"
#include "fs/fsck/fsck.h"
#include "fs/store/store.h"
#include "fs/store/store_mem.h"
#include "tap.h"
#include "tests/fsck_image.h"

#define IMG_SIZE ((size_t)FI_NCHUNKS * FI_CHUNK_SIZE)
#define HALF (FI_CHUNK_SIZE / OD_BLOCK_SIZE / 2)
#define MAX_ACKED 4

enum { ST_SETTLED, ST_COMMITTED, ST_HELD, ST_CRASH, NSTATES };
static const char *const state_name[NSTATES] = { "settled", "committed", "held", "crash" };
enum { U_HEADER, U_LIST, U_BITMAP, U_MAP, U_ITABLE, U_DIR, U_EXTENT, NTYPES };
static const char *const type_name[NTYPES] = { "header", "list", "bitmap", "map",
					       "itable", "dir", "extent" };
enum { F_READ, F_WRITE, F_RANDOM, F_TORN, F_ZERO, F_STALE, NFAULTS };
static const char *const fault_name[NFAULTS] = { "read-err", "write-err", "random",
						 "torn", "zeroed", "stale" };
static const char *const copy_name[3] = { "0", "1", "both" };

/* A file an acknowledged operation made: name in /d1, content seed, size. */
struct acked {
	char name[32];
	unsigned seed;
	size_t len;
};

struct state {
	uint8_t *img;
	struct acked ack[MAX_ACKED];
	int nack;
	uint32_t chunk;              /* the chunk its last transactions wrote */
	uint32_t inflight_block[64]; /* units the crashed transaction wrote in it */
	uint8_t inflight_copy[64];
	int ninflight;
};

static uint8_t *base_img; /* the tree, settled: the older versions */
static struct state states[NSTATES];
static char work[256];
static unsigned total_files;
static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 0x2545F4914F6CDD1Dull) >> 32);
}

/* --- volumes in memory ------------------------------------------------------ */

static struct chunk_store *mem[FI_NCHUNKS];

static struct fs_volume *open_mem(const uint8_t *img, struct io_log *log)
{
	struct chunk_store *st[FI_NCHUNKS];
	struct fs_volume *v = NULL;
	char why[256];

	for (uint32_t i = 0; i < FI_NCHUNKS; i++) {
		if (store_mem_new(FI_CHUNK_SIZE, img + (size_t)i * FI_CHUNK_SIZE, &st[i]) < 0)
			return NULL;
		if (log)
			store_mem_record(st[i], log, i);
		mem[i] = st[i];
	}
	if (fs_open_stores(st, FI_NCHUNKS, 0, &v, why, sizeof(why)) < 0)
		return NULL;
	return v;
}

static void take_bytes(uint8_t *img)
{
	for (uint32_t i = 0; i < FI_NCHUNKS; i++)
		memcpy(img + (size_t)i * FI_CHUNK_SIZE, store_mem_bytes(mem[i]), FI_CHUNK_SIZE);
}

/* Create /d1/NAME (a name "sub/x": in /d1/sub) with len bytes of seed's
 * pattern and make it durable. */
static int put(struct fs_volume *v, const char *name, unsigned seed, size_t len)
{
	const char *slash = strchr(name, '/');
	uint8_t buf[9000];
	struct fs_ino root, d1, f;
	int ret;

	fi_fill(buf, len, seed);
	if ((ret = fs_root(v, &root)) < 0 || (ret = fs_lookup(v, NULL, root, "d1", &d1, NULL)) < 0 ||
	    (slash && (ret = fs_lookup(v, NULL, d1, "sub", &d1, NULL)) < 0) ||
	    (ret = fs_create(v, NULL, d1, slash ? slash + 1 : name, 0644, FS_CREATE_GUARDED, 0, &f,
			     NULL)) < 0 ||
	    (ret = fs_write(v, NULL, f, 0, len, buf, FS_FILE_SYNC, NULL)) < 0)
		return ret;
	return fs_sync(v);
}

static void ack(struct state *s, const char *name, unsigned seed, size_t len)
{
	struct acked *a = &s->ack[s->nack++];

	snprintf(a->name, sizeof(a->name), "%s", name);
	a->seed = seed;
	a->len = len;
}

static int acked_lost(struct fs_volume *v, const struct state *s, const struct acked *extra)
{
	int lost = 0;

	for (int i = 0; i <= s->nack; i++) {
		const struct acked *a = i < s->nack ? &s->ack[i] : extra;
		uint8_t want[9000], got[9001];
		struct fs_ino root, d1, f;
		size_t n = 0;
		int eof = 0;
		if (!a)
			continue;
		const char *slash = strchr(a->name, '/');
		fi_fill(want, a->len, a->seed);
		if (fs_root(v, &root) < 0 || fs_lookup(v, NULL, root, "d1", &d1, NULL) < 0 ||
		    (slash && fs_lookup(v, NULL, d1, "sub", &d1, NULL) < 0) ||
		    fs_lookup(v, NULL, d1, slash ? slash + 1 : a->name, &f, NULL) < 0 ||
		    fs_read(v, NULL, f, 0, sizeof(got), got, &n, &eof) < 0 || n != a->len ||
		    memcmp(got, want, n) != 0)
			lost++;
	}
	return lost;
}

/* The chunk /d1 lives in. */
static uint32_t d1_chunk(struct fs_volume *v)
{
	struct fs_ino root, d1;

	if (fs_root(v, &root) < 0 || fs_lookup(v, NULL, root, "d1", &d1, NULL) < 0)
		return 0;
	return OD_STABLE_CHUNK(d1.num);
}

/* --- the states ------------------------------------------------------------ */

static int make_states(void)
{
	struct io_log log = { 0 };
	struct fs_volume *v;
	int ret;

	/* settled / committed: the tree settled, then one acknowledged create
	 * with data; committed keeps the lists, settled is after a close. */
	v = open_mem(base_img, NULL);
	if (!v || put(v, "acked_a", 11, 6000) < 0)
		return -EIO;
	states[ST_COMMITTED].img = malloc(IMG_SIZE);
	take_bytes(states[ST_COMMITTED].img);
	ack(&states[ST_COMMITTED], "acked_a", 11, 6000);
	states[ST_COMMITTED].chunk = d1_chunk(v);
	fs_close(v);
	/* settled: opened again and closed, the lists spent */
	states[ST_SETTLED] = states[ST_COMMITTED];
	states[ST_SETTLED].img = malloc(IMG_SIZE);
	v = open_mem(states[ST_COMMITTED].img, NULL);
	if (!v || (ret = fs_sync(v)) < 0)
		return -EIO;
	take_bytes(states[ST_SETTLED].img);
	fs_close(v);
	/* held: creates in /d1, then a rewrite of one of the files: the last
	 * transaction's list names the units of the one before that it does
	 * not write again (/d1's directory unit) as held entries. */
	states[ST_HELD] = states[ST_COMMITTED];
	states[ST_HELD].img = malloc(IMG_SIZE);
	v = open_mem(states[ST_COMMITTED].img, NULL);
	if (!v || put(v, "acked_b0", 17, 100) < 0 || put(v, "acked_b1", 12, 3000) < 0)
		return -EIO;
	{
		/* acked_b0 rewritten in place: its inode's unit, not /d1's */
		struct fs_ino root, d1, f;
		uint8_t buf[100];
		struct fs_counters fc;
		fi_fill(buf, sizeof(buf), 18);
		if (fs_root(v, &root) < 0 || fs_lookup(v, NULL, root, "d1", &d1, NULL) < 0 ||
		    fs_lookup(v, NULL, d1, "acked_b0", &f, NULL) < 0 ||
		    fs_write(v, NULL, f, 0, sizeof(buf), buf, FS_FILE_SYNC, NULL) < 0 ||
		    fs_sync(v) < 0)
			return -EIO;
		fs_get_counters(v, &fc);
		if (fc.held_named == 0)
			fprintf(stderr, "fault_matrix: the held state named no held entry\n");
	}
	take_bytes(states[ST_HELD].img);
	ack(&states[ST_HELD], "acked_b1", 12, 3000);
	ack(&states[ST_HELD], "acked_b0", 18, 100);
	fs_close(v);
	/* crash: one more acknowledged create, then one whose transaction
	 * stops halfway through its first copies (its lists durable). */
	states[ST_CRASH] = states[ST_COMMITTED];
	states[ST_CRASH].img = malloc(IMG_SIZE);
	v = open_mem(states[ST_COMMITTED].img, &log);
	if (!v || put(v, "acked_c", 14, 7000) < 0)
		return -EIO;
	take_bytes(states[ST_CRASH].img);
	ack(&states[ST_CRASH], "acked_c", 14, 7000);
	{
		struct fs_ino root, d1, f;
		log.enabled = 1;
		if (fs_root(v, &root) < 0 || fs_lookup(v, NULL, root, "d1", &d1, NULL) < 0 ||
		    fs_create(v, NULL, d1, "inflight", 0644, FS_CREATE_GUARDED, 0, &f, NULL) < 0 ||
		    fs_write(v, NULL, f, 0, 5, "later", FS_UNSTABLE, NULL) < 0 || fs_sync(v) < 0)
			return -EIO;
		log.enabled = 0;
	}
	fs_close(v);
	{
		/* The sync's volume flushes end at g[]: the last interval holds
		 * its second copies, the one before its first copies (and its
		 * lists, when they share that flush). Everything before the
		 * first copies lands, then the lists and every other unit of
		 * the first copies. */
		struct state *s = &states[ST_CRASH];
		size_t g[8], ng = 0, lo;
		for (size_t i = 0; i < log.n; i++)
			if (log.rec[i].kind == IO_FLUSH &&
			    (i + 1 == log.n || log.rec[i + 1].kind != IO_FLUSH) && ng < 8)
				g[ng++] = i + 1;
		if (ng < 2)
			return -EIO;
		lo = ng >= 3 ? g[ng - 3] : 0;
		for (size_t i = 0, k = 0; i < g[ng - 2]; i++) {
			const struct io_rec *r = &log.rec[i];
			struct od_mb_header h = { 0 };
			if (r->kind != IO_WRITE)
				continue;
			if (r->len >= OD_MB_HEADER_SIZE)
				od_get_mb_header(r->data, &h);
			if (i >= lo && h.magic == OD_MB_MAGIC && h.type != OD_MB_DIRTY_LIST) {
				uint32_t blk = (uint32_t)(r->off / OD_BLOCK_SIZE);
				if (r->chunk == s->chunk && s->ninflight < 64) {
					s->inflight_copy[s->ninflight] = blk >= HALF;
					s->inflight_block[s->ninflight++] = blk % HALF;
				}
				if (k++ & 1)
					continue;
			}
			memcpy(s->img + (size_t)r->chunk * FI_CHUNK_SIZE + r->off, r->data, r->len);
		}
	}
	io_log_free(&log);
	return 0;
}

/* --- units and faults -------------------------------------------------------- */

struct unit {
	uint32_t block, units;
};

/* Unit `type` of chunk k in img: 0, or -ENOENT when the chunk has none. */
static int find_unit(const uint8_t *img, uint32_t k, int type, struct unit *u)
{
	const uint8_t *base = img + (size_t)k * FI_CHUNK_SIZE;
	struct od_chunk_header h;
	uint64_t best = 0;

	od_get_chunk_header(base, &h);
	u->units = 1;
	switch (type) {
	case U_HEADER: u->block = 0; return 0;
	case U_BITMAP: u->block = h.bitmap_start; return 0;
	case U_MAP: u->block = h.map_start; return 0;
	case U_ITABLE: u->block = h.itable_start; return 0;
	case U_LIST:
		/* the newest list's first block (an empty area when spent) */
		u->block = h.dirty_start;
		for (int a = 0; a < 2; a++) {
			const uint8_t *p = base + (size_t)(h.dirty_start + (a ? HALF : 0)) * OD_BLOCK_SIZE;
			struct od_mb_header mh;
			od_get_mb_header(p, &mh);
			if (od_verify(p, OD_BLOCK_SIZE) == 0 && mh.type == OD_MB_DIRTY_LIST &&
			    mh.txid > best) {
				best = mh.txid;
				u->block = h.dirty_start + (a ? HALF : 0);
			}
		}
		return 0;
	}
	/* the directory or extent unit with the greatest txid */
	for (uint32_t b = h.data_start; b < HALF; b++) {
		const uint8_t *p = base + (size_t)b * OD_BLOCK_SIZE;
		struct od_mb_header mh;
		od_get_mb_header(p, &mh);
		if (mh.magic != OD_MB_MAGIC || mh.block != b || mh.units < 1 || b + mh.units > HALF ||
		    mh.type != (type == U_DIR ? OD_MB_DIR : OD_MB_EXTENTS) ||
		    od_verify(p, (size_t)mh.units * OD_BLOCK_SIZE) < 0)
			continue;
		if (mh.txid >= best) {
			best = mh.txid;
			u->block = b;
			u->units = mh.units;
		}
		b += mh.units - 1;
	}
	return best ? 0 : -ENOENT;
}

/* Byte offset of copy c of u in the volume image. A dirty list lives in
 * one place: its "copy 1" is the other list area, the older list. */
static size_t copy_off(uint32_t k, const struct unit *u, int c)
{
	uint32_t blk = (u->block + (c ? HALF : 0)) % (2 * HALF);

	return (size_t)k * FI_CHUNK_SIZE + (size_t)blk * OD_BLOCK_SIZE;
}

/* Damage copy c of u in img; 0, or -ENOENT when the fault changes nothing
 * (a stale version equal to the current one). */
static int apply_fault(uint8_t *img, uint32_t k, const struct unit *u, int c, int fault)
{
	size_t off = copy_off(k, u, c), len = (size_t)u->units * OD_BLOCK_SIZE;
	const uint8_t *old = base_img + off;

	switch (fault) {
	case F_RANDOM:
		for (size_t i = 0; i < len; i++)
			img[off + i] = (uint8_t)rnd();
		return 0;
	case F_ZERO:
		memset(img + off, 0, len);
		return 0;
	case F_TORN: {
		/* a write of a newer version that stopped partway: from the
		 * last 512-byte sector where it differs from the version before,
		 * the older bytes (no difference: nothing to tear) */
		size_t from = len;
		for (size_t sec = 0; sec < len; sec += 512)
			if (memcmp(img + off + sec, old + sec, 512) != 0)
				from = sec;
		if (from == len || from == 0)
			return -ENOENT;
		memcpy(img + off + from, old + from, len - from);
		return 0;
	}
	case F_STALE:
		if (memcmp(img + off, old, len) == 0)
			return -ENOENT;
		memcpy(img + off, old, len);
		return 0;
	}
	return 0;
}

/* --- one cell ------------------------------------------------------------- */

struct cell {
	int na, two_faults;
	int det, heal, off;         /* heal: the repair's (served, for I/O errors) */
	unsigned lost_served, lost_fsck;
	int acked_served, acked_fsck;
	size_t other;
	int fsck_again; /* exit of the second fsck -n on the chunk */
	int bad;        /* a requirement failed */
};

static void quiet(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

static int fsck_run(const char *path, int chunk, int mode)
{
	struct fsck_opts o = { .mode = mode, .cross = chunk < 0, .force = 1, .out = quiet,
			       .both_copies = 1 };
	struct fsck_result r;
	int ret = fsck_volume_path(path, chunk, &o, &r);

	return ret < 0 ? ret : r.exit_code;
}

static int copies_equal(const uint8_t *img, uint32_t k, const struct unit *u, int type)
{
	size_t len = (size_t)u->units * OD_BLOCK_SIZE;

	if (type == U_LIST)
		return 1; /* one copy */
	return memcmp(img + copy_off(k, u, 0), img + copy_off(k, u, 1), len) == 0 &&
	       od_verify(img + copy_off(k, u, 0), len) == 0;
}

static int write_image(const char *path, const uint8_t *img)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(img, 1, IMG_SIZE, f) == IMG_SIZE;

	if (f && fclose(f) != 0)
		ok = 0;
	return ok ? 0 : -EIO;
}

/* Served: open the damaged image through memory stores (with a bad range
 * for read and write errors), read the tree and the acknowledged files,
 * commit one more change, compare the unit's copies. */
static void served(const struct state *s, const uint8_t *dmg, const struct unit *u, int type,
		   int copy, int fault, struct cell *cl)
{
	struct fs_volume *v = open_mem(dmg, NULL);
	struct acked w = { "after", 16, 4000 };
	struct fs_counters fc;
	uint8_t *after;
	unsigned total = 0;
	int wrote;

	if (!v) {
		cl->lost_served = total_files;
		cl->acked_served = s->nack;
		return;
	}
	/* (one bad range per store: both copies as the span from one to
	 * the other) */
	if (fault == F_READ || fault == F_WRITE)
		store_mem_bad_range(mem[s->chunk], copy_off(0, u, copy == 2 ? 0 : copy),
				    (uint64_t)((copy == 2 ? HALF : 0) + u->units) * OD_BLOCK_SIZE, EIO,
				    fault == F_WRITE);
	cl->lost_served = total_files - fi_survivors(v, &total);
	wrote = put(v, w.name, w.seed, w.len) == 0;
	cl->acked_served = acked_lost(v, s, wrote ? &w : NULL);
	fs_get_counters(v, &fc);
	cl->det |= fc.healed || fc.unreadable || fc.recovery.healed || fc.recovery.damaged;
	cl->off = fc.chunks_needing_repair > 0;
	store_mem_bad_range(mem[s->chunk], 0, 0, 0, 0);
	fs_sync(v);
	after = malloc(IMG_SIZE);
	if (after) {
		take_bytes(after);
		cl->heal = copies_equal(after, s->chunk, u, type);
		free(after);
	}
	fs_close(v);
}

/* Repaired: fsck -n (detects?), fsck -y on the chunk, fsck -n on it
 * again, other chunks compared, then the volume opened and read. */
static void repaired(const struct state *s, const uint8_t *dmg, const struct unit *u, int type,
		     struct cell *cl)
{
	struct fs_volume *v;
	uint8_t *now;
	unsigned total = 0;
	size_t n;
	int rc;

	if (write_image(work, dmg) < 0) {
		fprintf(stderr, "fault_matrix: cannot write %s\n", work);
		cl->lost_fsck = total_files; /* (the cell fails) */
		return;
	}
	rc = fsck_run(work, -1, FSCK_CHECK_ONLY);
	cl->det |= rc != 0;
	fsck_run(work, (int)s->chunk, FSCK_YES);
	cl->fsck_again = fsck_run(work, (int)s->chunk, FSCK_CHECK_ONLY);
	now = fi_slurp(work, &n);
	if (now && n == IMG_SIZE) {
		for (uint32_t k = 0; k < FI_NCHUNKS; k++)
			if (k != s->chunk)
				for (size_t i = 0; i < FI_CHUNK_SIZE; i++)
					cl->other += now[(size_t)k * FI_CHUNK_SIZE + i] !=
						     dmg[(size_t)k * FI_CHUNK_SIZE + i];
	}
	free(now);
	if (fs_open(work, 0, &v) < 0) {
		cl->lost_fsck = total_files;
		cl->acked_fsck = s->nack;
		return;
	}
	cl->lost_fsck = total_files - fi_survivors(v, &total);
	cl->acked_fsck = acked_lost(v, s, NULL);
	fs_close(v);
	/* What fsck left for recovery (it never spends lists) is done now. */
	now = fi_slurp(work, &n);
	if (now && n == IMG_SIZE)
		cl->heal = copies_equal(now, s->chunk, u, type);
	free(now);
}

static int run_cell(const struct state *s, int type, int copy, int fault, struct cell *cl)
{
	uint8_t *dmg;
	struct unit u;

	memset(cl, 0, sizeof(*cl));
	if (find_unit(s->img, s->chunk, type, &u) < 0 || (type == U_LIST && fault == F_WRITE)) {
		cl->na = 1;
		return 0;
	}
	dmg = malloc(IMG_SIZE);
	if (!dmg)
		return -ENOMEM;
	memcpy(dmg, s->img, IMG_SIZE);
	if (fault != F_READ && fault != F_WRITE)
		for (int c = 0; c < 2; c++)
			if ((copy == 2 || copy == c) && apply_fault(dmg, s->chunk, &u, c, fault) < 0)
				cl->na = 1;
	if (cl->na) {
		free(dmg);
		return 0;
	}
	/* The crash state's two-fault cell: a unit the transaction in flight
	 * was writing, damaged in the copy it was not writing. */
	for (int i = 0; i < s->ninflight; i++)
		if (s->inflight_block[i] == u.block && copy != 2 && copy != s->inflight_copy[i])
			cl->two_faults = 1;
	cl->heal = 1;
	served(s, dmg, &u, type, copy, fault, cl);
	if (fault != F_READ && fault != F_WRITE) {
		cl->heal = 1;
		repaired(s, dmg, &u, type, cl);
	}
	free(dmg);
	if (copy != 2 && !cl->two_faults)
		cl->bad = cl->lost_served || cl->lost_fsck || cl->acked_served || cl->acked_fsck ||
			  cl->other || cl->fsck_again || !cl->heal;
	else
		/* Both copies (issue 20's salvage): the repair leaves a clean
		 * chunk, and a structure that others index or that is rebuilt
		 * from them (the header, the bitmap, the map, a dirty list)
		 * costs no file. A stale version in both copies is a consistent
		 * older state no check can tell from the current one. */
		cl->bad = cl->fsck_again != 0 ||
			  (copy == 2 && fault != F_STALE && cl->lost_fsck &&
			   (type == U_HEADER || type == U_BITMAP || type == U_MAP || type == U_LIST));
	return 0;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR"), *verb = getenv("FAULT_MATRIX_VERBOSE");
	int verbose = verb && *verb && strcmp(verb, "0") != 0;
	char image[256];
	struct fi_tree t;
	size_t n;

	snprintf(image, sizeof(image), "%s/fault_matrix.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	snprintf(work, sizeof(work), "%s/fault_matrix.%d.work", tmp ? tmp : "/tmp", (int)getpid());
	CHECK_EQ(fi_build(image, &t), 0);
	{
		/* settled: open and close once (lists spent) */
		struct fs_volume *v = NULL;
		CHECK_EQ(fs_open(image, 0, &v), 0);
		if (v) {
			fi_survivors(v, &total_files);
			fs_close(v);
		}
	}
	base_img = fi_slurp(image, &n);
	CHECK(base_img && n == IMG_SIZE);
	if (!base_img || n != IMG_SIZE)
		return test_done("fault_matrix");
	CHECK_EQ(make_states(), 0);
	printf("fault matrix: chunk %u of %u (1 MiB each), %u files in the tree\n",
	       states[ST_COMMITTED].chunk, FI_NCHUNKS, total_files);
	printf("%-9s %-7s %-4s %-9s  det heal off  lost(served/fsck) acked(served/fsck) other\n",
	       "state", "unit", "copy", "fault");
	for (int st = 0; st < NSTATES; st++) {
		unsigned cells = 0, one_ok = 0, one = 0, both_lost = 0, both_files = 0, two = 0, na = 0;
		for (int type = 0; type < NTYPES; type++)
			for (int copy = 0; copy < 3; copy++)
				for (int fault = 0; fault < NFAULTS; fault++) {
					struct cell cl;
					CHECK_EQ(run_cell(&states[st], type, copy, fault, &cl), 0);
					if (cl.na) {
						na++;
						continue;
					}
					cells++;
					two += cl.two_faults;
					if (copy != 2 && !cl.two_faults) {
						one++;
						one_ok += !cl.bad;
					}
					both_lost += copy == 2 && cl.lost_fsck;
					both_files += copy == 2 ? cl.lost_fsck : 0;
					CHECK(!cl.bad);
					if (verbose || cl.bad)
						printf("%-9s %-7s %-4s %-9s  %-3s %-4s %-3s  %5u/%-5u        %3d/%-3d            %zu%s%s\n",
						       state_name[st], type_name[type], copy_name[copy],
						       fault_name[fault], cl.det ? "yes" : "no",
						       cl.heal ? "yes" : "no", cl.off ? "yes" : "no",
						       cl.lost_served, cl.lost_fsck, cl.acked_served,
						       cl.acked_fsck, cl.other, cl.two_faults ? " 2f" : "",
						       cl.bad ? " FAILED" : "");
				}
		printf("fault matrix: %s: %u cells (%u not applicable); one copy: %u of %u lost "
		       "nothing and healed; both copies: %u cells lost %u files after fsck; %u "
		       "two-fault cells\n",
		       state_name[st], cells, na, one_ok, one, both_lost, both_files, two);
	}
	unlink(image);
	unlink(work);
	for (int st = 0; st < NSTATES; st++)
		if (st != ST_SETTLED || states[st].img != states[ST_COMMITTED].img)
			free(states[st].img);
	free(base_img);
	return test_done("fault_matrix");
}
