/* fsck.chunkfs on damaged images: a small volume with a known tree (inline
 * files, a file continued across chunks, hard links, a symlink, directories
 * with parts in other chunks) is damaged one way at a time, on a fresh copy,
 * and checked: -n reports the problem and writes nothing, -y (or -p)
 * repairs it, a second -n run is clean, the files read back intact, and
 * the check never writes outside the chunk it checks. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/fsck/fsck.h"
#include "fs/format/ondisk.h"
#include "fs/store/store.h"
#include "tap.h"
#include "tests/fsck_image.h"

#define CHUNK_SIZE FI_CHUNK_SIZE
#define NCHUNKS FI_NCHUNKS
#define NMANY FI_NMANY
#define BIG_SIZE FI_BIG_SIZE

static char image[200], pristine[256], work[256];
static int verbose;

/* What the build left, for the damage to aim at. */
static struct fi_tree tree;

#define slurp fi_slurp
#define fill fi_fill

static void copy_file(const char *from, const char *to)
{
	CHECK_EQ(fi_copy(from, to), 0);
}

/* --- running fsck --------------------------------------------------------------- */

struct out {
	char *text;
	size_t len, cap;
};

static void collect(void *ctx, const char *line)
{
	struct out *o = ctx;
	size_t n = strlen(line);

	if (verbose)
		fprintf(stderr, "  | %s\n", line);
	if (o->len + n + 2 > o->cap) {
		o->cap = (o->len + n + 2) * 2;
		o->text = realloc(o->text, o->cap);
	}
	memcpy(o->text + o->len, line, n);
	o->len += n;
	o->text[o->len++] = '\n';
	o->text[o->len] = '\0';
}

static struct out last;

/* fsck of chunk (-1: all) of path; the output is kept in `last`. */
static int run(const char *path, int chunk, int mode, int flags, struct fsck_result *res)
{
	struct fsck_opts o = { .mode = mode, .out = collect, .ctx = &last, .force = 1 };
	struct fsck_result r;

	if (flags & 1)
		o.cross = 1;
	if (flags & 2)
		o.force = 0;
	if (flags & 4)
		o.both_copies = 1;
	last.len = 0;
	if (last.text)
		last.text[0] = '\0';
	if (verbose)
		fprintf(stderr, "fsck %s chunk %d mode %d%s:\n", path, chunk, mode,
			o.cross ? " -x" : "");
	CHECK_EQ(fsck_volume_path(path, chunk, &o, &r), 0);
	if (res)
		*res = r;
	return r.exit_code;
}

static int reported(uint32_t code)
{
	char tag[16];

	snprintf(tag, sizeof(tag), "[0x%06x]", code);
	return last.text && strstr(last.text, tag) != NULL;
}

/* Are the bytes of every chunk but `except` the same in a and b? */
static int others_same(const char *a, const char *b, int except)
{
	size_t la, lb;
	uint8_t *x = slurp(a, &la), *y = slurp(b, &lb);
	int same = x && y && la == lb;

	for (size_t k = 0; same && k < la / CHUNK_SIZE; k++)
		if ((int)k != except && memcmp(x + k * CHUNK_SIZE, y + k * CHUNK_SIZE, CHUNK_SIZE))
			same = 0;
	free(x);
	free(y);
	return same;
}

static int files_same(const char *a, const char *b)
{
	size_t la, lb;
	uint8_t *x = slurp(a, &la), *y = slurp(b, &lb);
	int same = x && y && la == lb && memcmp(x, y, la) == 0;

	free(x);
	free(y);
	return same;
}

/* --- reading and patching units of the image --------------------------------- */

static int img_fd(const char *path)
{
	int fd = open(path, O_RDWR);

	CHECK(fd >= 0);
	return fd;
}

static uint64_t unit_txid(const uint8_t *b)
{
	struct od_mb_header h;

	od_get_mb_header(b, &h);
	return h.txid;
}

/* The current copy of a unit (the newer valid one) into buf. */
static int read_unit(int fd, uint32_t chunk, uint32_t block, uint32_t units, uint32_t half,
		     uint8_t *buf)
{
	size_t len = (size_t)units * OD_BLOCK_SIZE;
	uint8_t *other = malloc(len);
	int found = 0;

	for (int copy = 0; copy < 2; copy++) {
		off_t off = (off_t)chunk * CHUNK_SIZE + (off_t)(block + (copy ? half : 0)) * OD_BLOCK_SIZE;
		if (pread(fd, other, len, off) != (ssize_t)len || od_verify(other, len) < 0)
			continue;
		if (!found || unit_txid(other) > unit_txid(buf)) {
			memcpy(buf, other, len);
			found = 1;
		}
	}
	free(other);
	return found ? 0 : -1;
}

static struct od_chunk_header header_of(int fd, uint32_t chunk)
{
	uint8_t blk[OD_BLOCK_SIZE];
	struct od_chunk_header h;

	memset(&h, 0, sizeof(h));
	CHECK_EQ(read_unit(fd, chunk, 0, 1, CHUNK_SIZE / OD_BLOCK_SIZE / 2, blk), 0);
	od_get_chunk_header(blk, &h);
	return h;
}

/* Change both (valid) copies of a unit and seal them again. */
typedef void (*patch_fn)(uint8_t *unit, void *arg);
static void patch_unit(int fd, uint32_t chunk, uint32_t block, uint32_t units, patch_fn fn,
		       void *arg)
{
	size_t len = (size_t)units * OD_BLOCK_SIZE;
	uint8_t *buf = malloc(len);
	uint32_t half = CHUNK_SIZE / OD_BLOCK_SIZE / 2;
	int patched = 0;

	for (int copy = 0; copy < 2; copy++) {
		off_t off = (off_t)chunk * CHUNK_SIZE + (off_t)(block + (copy ? half : 0)) * OD_BLOCK_SIZE;
		if (pread(fd, buf, len, off) != (ssize_t)len || od_verify(buf, len) < 0)
			continue;
		fn(buf, arg);
		od_seal(buf, len);
		CHECK_EQ(pwrite(fd, buf, len, off), (long long)len);
		patched++;
	}
	CHECK(patched >= 1);
	free(buf);
}

static void flip(int fd, uint32_t chunk, uint32_t block, uint32_t at)
{
	uint8_t b[8];
	off_t off = (off_t)chunk * CHUNK_SIZE + (off_t)block * OD_BLOCK_SIZE + at;

	CHECK_EQ(pread(fd, b, sizeof(b), off), (long long)sizeof(b));
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] ^= 0x5a;
	CHECK_EQ(pwrite(fd, b, sizeof(b), off), (long long)sizeof(b));
}

/* Where the map places inode s. */
static struct od_loc where(int fd, uint64_t s)
{
	uint32_t chunk = OD_STABLE_CHUNK(s), idx = OD_STABLE_INDEX(s);
	struct od_chunk_header h = header_of(fd, chunk);
	uint8_t blk[OD_BLOCK_SIZE];
	struct od_map_entry e;

	memset(&e, 0, sizeof(e));
	CHECK_EQ(read_unit(fd, chunk, h.map_start + idx / OD_MAP_PER_BLOCK, 1, h.nblocks / 2, blk), 0);
	od_get_map_entry(blk + OD_MB_HEADER_SIZE + (idx % OD_MAP_PER_BLOCK) * OD_MAP_ENTRY_SIZE, &e);
	CHECK(e.flags & OD_MAPF_USED);
	return e.loc;
}

/* The entry called name in any directory unit of chunk: its unit and offset. */
static int find_entry(int fd, uint32_t chunk, const char *name, uint32_t *unit, uint32_t *off)
{
	struct od_chunk_header h = header_of(fd, chunk);
	size_t ulen = (size_t)h.dir_unit * OD_BLOCK_SIZE;
	uint8_t *buf = malloc(ulen);
	int found = -1;

	for (uint32_t b = h.data_start; b + h.dir_unit <= h.nblocks / 2 && found < 0; b++) {
		struct od_mb_header mh;
		if (read_unit(fd, chunk, b, h.dir_unit, h.nblocks / 2, buf) < 0)
			continue;
		od_get_mb_header(buf, &mh);
		if (mh.type != OD_MB_DIR || mh.block != b)
			continue;
		for (uint32_t o = OD_MB_HEADER_SIZE; o + OD_DIRENT_HEADER <= ulen;) {
			struct od_dirent de;
			od_get_dirent(buf + o, &de);
			if (de.rec_len < OD_DIRENT_HEADER)
				break;
			if (de.kind != OD_DE_FREE && de.name_len == strlen(name) &&
			    memcmp(buf + o + OD_DIRENT_HEADER, name, de.name_len) == 0) {
				*unit = b;
				*off = o;
				found = 0;
				break;
			}
			o += de.rec_len;
		}
	}
	free(buf);
	return found;
}

/* --- the tree --------------------------------------------------------------------- */

static struct fs_ino lookup(struct fs_volume *v, struct fs_ino dir, const char *name)
{
	struct fs_ino ino = { 0, 0 };

	CHECK_EQ(fs_lookup(v, NULL, dir, name, &ino, NULL), 0);
	return ino;
}

static void build(void)
{
	CHECK_EQ(fi_build(image, &tree), 0);
}

/* What a damage is expected to have cost. */
#define LOST_HL 1 /* the hard link d1/hl */
#define LOST_F2 2 /* d1/sub/f2 */
#define LOST_ORPH 4  /* d1/orph2: the file is in lost+found instead */
#define LOST_DATA2 8 /* d1/data2 holds orph's blocks (a copy of them) */

/* Bytes of big that are kept (the rest reads as zeros). */
static size_t big_keep = BIG_SIZE;

/* dir/name holds exactly want[0..len). */
static void check_file(struct fs_volume *v, struct fs_ino dir, const char *name,
		       const uint8_t *want, size_t len, uint32_t nlink)
{
	uint8_t *buf = malloc(len + 1);
	struct fs_attr a;
	struct fs_ino x = lookup(v, dir, name);
	size_t n = 0;
	int eof = 0;

	CHECK_EQ(fs_read(v, NULL, x, 0, len + 1, buf, &n, &eof), 0);
	CHECK_EQ(n, len);
	CHECK(n == len && memcmp(buf, want, len) == 0);
	CHECK_EQ(fs_getattr(v, x, &a), 0);
	CHECK_EQ(a.nlink, nlink);
	free(buf);
}

/* The tree as built, read through the library, but for what was lost. */
static void verify_tree(const char *path, int lost)
{
	struct fs_volume *v = NULL;
	struct fs_ino root, d1, sub, x, many;
	struct fs_attr a;
	uint8_t *big = malloc(BIG_SIZE), *want = malloc(BIG_SIZE);
	char buf[64];
	size_t n = 0;
	int eof = 0;

	CHECK_EQ(fs_open(path, 0, &v), 0);
	if (!v)
		return;
	CHECK_EQ(fs_root(v, &root), 0);
	d1 = lookup(v, root, "d1");
	x = lookup(v, d1, "small");
	CHECK_EQ(fs_read(v, NULL, x, 0, sizeof(buf), buf, &n, &eof), 0);
	CHECK(n == 11 && memcmp(buf, "hello small", 11) == 0);
	CHECK_EQ(fs_getattr(v, x, &a), 0);
	CHECK_EQ(a.nlink, (lost & LOST_HL) ? 1 : 2);
	CHECK_EQ(fs_lookup(v, NULL, d1, "hl", NULL, NULL), (lost & LOST_HL) ? -ENOENT : 0);
	sub = lookup(v, d1, "sub");
	if (lost & LOST_F2) {
		CHECK_EQ(fs_lookup(v, NULL, sub, "f2", NULL, NULL), -ENOENT);
	} else {
		x = lookup(v, sub, "f2");
		CHECK_EQ(fs_read(v, NULL, x, 0, sizeof(buf), buf, &n, &eof), 0);
		CHECK(n == 9 && memcmp(buf, "second f2", 9) == 0);
	}
	fill(want, FI_ORPH_SIZE, 5);
	if (lost & LOST_ORPH) {
		struct fs_ino lf = lookup(v, root, "lost+found");
		char nm[32];
		snprintf(nm, sizeof(nm), "#%llu", (unsigned long long)tree.orph);
		CHECK_EQ(fs_lookup(v, NULL, d1, "orph2", NULL, NULL), -ENOENT);
		check_file(v, lf, nm, want, FI_ORPH_SIZE, 1);
		CHECK_EQ(fs_getattr(v, lf, &a), 0);
		CHECK_EQ(a.nlink, 2);
	} else {
		check_file(v, d1, "orph2", want, FI_ORPH_SIZE, 1);
	}
	if (lost & LOST_DATA2) {
		memset(want + FI_ORPH_SIZE, 0, FI_DATA2_SIZE - FI_ORPH_SIZE);
	} else {
		fill(want, FI_DATA2_SIZE, 6);
	}
	check_file(v, d1, "data2", want, FI_DATA2_SIZE, 1);
	x = lookup(v, root, "ln");
	CHECK_EQ(fs_readlink(v, x, buf, sizeof(buf), &n), 0);
	CHECK(n == 8 && memcmp(buf, "d1/small", 8) == 0);
	x = lookup(v, root, "big");
	fill(want, BIG_SIZE, 3);
	memset(want + big_keep, 0, BIG_SIZE - big_keep);
	CHECK_EQ(fs_read(v, NULL, x, 0, BIG_SIZE, big, &n, &eof), 0);
	CHECK(n == BIG_SIZE && memcmp(big, want, BIG_SIZE) == 0);
	many = lookup(v, root, "many");
	for (int i = 0; i < NMANY; i += 37) {
		char name[16];
		snprintf(name, sizeof(name), "f%03d", i);
		x = lookup(v, many, name);
		CHECK_EQ(fs_read(v, NULL, x, 0, sizeof(buf), buf, &n, &eof), 0);
		CHECK(n == 4 && memcmp(buf, name, 4) == 0);
	}
	CHECK_EQ(fs_getattr(v, many, &a), 0);
	CHECK_EQ(a.nlink, 3);
	x = lookup(v, root, "far_link");
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	free(big);
	free(want);
}

/* --- the cases ------------------------------------------------------------------- */

/* Every chunk of path checks clean, one by one. */
static void all_clean(const char *path, int flags)
{
	for (int k = 0; k < NCHUNKS; k++) {
		struct fsck_result r;
		CHECK_EQ(run(path, k, FSCK_CHECK_ONLY, flags, &r), 0);
		CHECK_EQ(r.problems, 0);
		CHECK_EQ(r.chunks, 1);
	}
}

static void case_clean(void)
{
	struct fsck_result r;

	/* Right after the build: the last transaction's catch-ups pending. */
	all_clean(image, 0);
	all_clean(image, 1);
	/* Settled (every copy caught up): a chunk that says clean and has no
	 * dirty list is skipped without -f. */
	all_clean(pristine, 0);
	all_clean(pristine, 1);
	CHECK_EQ(run(pristine, -1, FSCK_CHECK_ONLY, 2, &r), 0);
	CHECK_EQ(r.clean, NCHUNKS);
	CHECK(strstr(last.text, "chunk 2: clean") != NULL);
	/* A repair run over a clean volume writes nothing. */
	copy_file(pristine, work);
	CHECK_EQ(run(work, -1, FSCK_YES, 1, &r), 0);
	CHECK_EQ(r.chunks, NCHUNKS);
	CHECK(r.deferred > 0);
	CHECK(r.inodes > NMANY);
	CHECK(files_same(pristine, work));
	printf("whole-volume check of %u chunks (%llu inodes, %llu blocks used, %llu directory "
	       "units): %.3f ms\n", r.chunks, (unsigned long long)r.inodes,
	       (unsigned long long)r.blocks_used, (unsigned long long)r.dir_units,
	       (double)r.usec / 1000.0);
	{
		struct fsck_opts o = { .mode = FSCK_CHECK_ONLY };
		CHECK_EQ(fsck_volume_path(pristine, 7, &o, &r), -EINVAL);
		CHECK_EQ(r.exit_code, FSCK_EXIT_USAGE);
	}
}

/* The common shape: -n finds `code` and writes nothing, `mode` repairs,
 * a second -n is clean, other chunks untouched, the tree intact; every run
 * with run()'s flags 4 (both copies read) when `both`. */
static void expect_repair_both(const char *what, int chunk, uint32_t code, uint32_t code2,
			       int mode, int lost, int both)
{
	int bf = both ? 4 : 0;
	char before[300];
	struct fsck_result r;
	int rc;

	snprintf(before, sizeof(before), "%s.before", work);
	copy_file(work, before);
	rc = run(work, chunk, FSCK_CHECK_ONLY, bf, &r);
	CHECK_EQ(rc, FSCK_EXIT_UNCORRECTED);
	CHECK(r.problems > 0);
	CHECK(reported(code));
	CHECK(!code2 || reported(code2));
	if (!reported(code))
		fprintf(stderr, "%s: 0x%06x not reported; output:\n%s", what, code, last.text);
	CHECK(files_same(work, before));
	/* The repair, through the whole volume: only the damaged chunk changes. */
	rc = run(work, -1, mode, bf, &r);
	CHECK_EQ(rc, FSCK_EXIT_FIXED);
	CHECK(reported(code));
	CHECK_EQ(r.unfixed, 0);
	CHECK(others_same(work, before, chunk));
	CHECK(!files_same(work, before));
	rc = run(work, -1, FSCK_CHECK_ONLY, 1 | bf, &r);
	CHECK_EQ(rc, 0);
	CHECK_EQ(r.problems, 0);
	if (r.problems)
		fprintf(stderr, "%s: second run:\n%s", what, last.text);
	verify_tree(work, lost);
	unlink(before);
	printf("%s: found (0x%06x), repaired, clean on the second run\n", what, code);
}

static void expect_repair2(const char *what, int chunk, uint32_t code, uint32_t code2, int mode,
			   int lost)
{
	expect_repair_both(what, chunk, code, code2, mode, lost, 0);
}

static void expect_repair(const char *what, int chunk, uint32_t code, int mode, int lost)
{
	expect_repair2(what, chunk, code, 0, mode, lost);
}

static void case_bad_copy(void)
{
	int fd;
	struct od_loc l;

	copy_file(pristine, work);
	fd = img_fd(work);
	l = where(fd, tree.small);
	flip(fd, l.chunk, l.block, 300);
	close(fd);
	expect_repair("dir unit copy 0 damaged (-p)", (int)l.chunk, 0x000001, FSCK_PREEN, 0);

	/* The mirror of an inode-area block, repaired by -y: found when both
	 * copies are read (case_copies: not by default). */
	copy_file(pristine, work);
	fd = img_fd(work);
	{
		struct od_chunk_header h = header_of(fd, 0);
		flip(fd, 0, h.itable_start + h.nblocks / 2, 1000);
	}
	close(fd);
	expect_repair_both("inode-area block copy 1 damaged (both copies read)", 0, 0x000001, 0,
			   FSCK_YES, 0, 1);

	/* A copy of chunk 1's header. */
	copy_file(pristine, work);
	fd = img_fd(work);
	flip(fd, 1, 0, 100);
	close(fd);
	expect_repair("chunk header copy 0 damaged", 1, 0x010001, FSCK_YES, 0);
}

struct nlink_arg {
	uint16_t off;
	uint32_t nlink;
};

static void set_nlink(uint8_t *unit, void *arg)
{
	struct nlink_arg *a = arg;
	struct od_inode ino;

	od_get_inode(unit + a->off, &ino);
	ino.nlink = a->nlink;
	od_put_inode(unit + a->off, &ino);
}

static void case_link_count(void)
{
	struct od_chunk_header h;
	struct nlink_arg a;
	struct od_loc l;
	int fd;

	copy_file(pristine, work);
	fd = img_fd(work);
	l = where(fd, tree.small);
	h = header_of(fd, l.chunk);
	a.off = l.off;
	a.nlink = 7;
	patch_unit(fd, l.chunk, l.block, h.dir_unit, set_nlink, &a);
	close(fd);
	expect_repair("wrong link count of a file", (int)l.chunk, 0x040006, FSCK_YES, 0);

	/* A directory without parts elsewhere: 2 + its subdirectories. */
	copy_file(pristine, work);
	fd = img_fd(work);
	l = where(fd, tree.sub);
	h = header_of(fd, l.chunk);
	a.off = l.off;
	a.nlink = 5;
	patch_unit(fd, l.chunk, l.block, h.dir_unit, set_nlink, &a);
	close(fd);
	expect_repair("wrong link count of a directory", (int)l.chunk, 0x040006, FSCK_PREEN, 0);
}

static void case_link_count_cross(void)
{
	struct od_chunk_header h;
	struct fsck_result r;
	struct nlink_arg a;
	struct od_loc l;
	int fd;

	/* "many" has parts in other chunks: only -x can count its links. */
	copy_file(pristine, work);
	fd = img_fd(work);
	l = where(fd, tree.many);
	h = header_of(fd, l.chunk);
	a.off = l.off;
	a.nlink = 9;
	patch_unit(fd, l.chunk, l.block, h.dir_unit, set_nlink, &a);
	close(fd);
	CHECK_EQ(run(work, (int)l.chunk, FSCK_CHECK_ONLY, 0, &r), 0);
	CHECK(strstr(last.text, "deferred: inode") != NULL);
	CHECK_EQ(run(work, (int)l.chunk, FSCK_CHECK_ONLY, 1, &r), FSCK_EXIT_UNCORRECTED);
	CHECK(reported(0x040006));
	CHECK_EQ(run(work, (int)l.chunk, FSCK_YES, 1, &r), FSCK_EXIT_FIXED);
	CHECK_EQ(run(work, -1, FSCK_CHECK_ONLY, 1, &r), 0);
	verify_tree(work, 0);
	printf("link count of a directory with parts: deferred without -x, repaired with -x\n");
}

struct bit_arg {
	uint32_t bit;
};

static void clear_bit(uint8_t *unit, void *arg)
{
	struct bit_arg *a = arg;

	unit[OD_MB_HEADER_SIZE + a->bit / 8] &= (uint8_t)~(1u << (a->bit % 8));
}

static void case_bitmap(void)
{
	struct od_chunk_header h;
	struct bit_arg a;
	struct od_loc l;
	int fd;

	copy_file(pristine, work);
	fd = img_fd(work);
	l = where(fd, tree.small);
	h = header_of(fd, l.chunk);
	a.bit = l.block + 1; /* the second block of the unit holding small */
	patch_unit(fd, l.chunk, h.bitmap_start, 1, clear_bit, &a);
	close(fd);
	expect_repair("bitmap marks a used block free", (int)l.chunk, 0x050001, FSCK_YES, 0);
}

struct stable_arg {
	uint32_t off;
	uint64_t stable;
};

static void set_stable(uint8_t *unit, void *arg)
{
	struct stable_arg *a = arg;
	struct od_dirent de;

	od_get_dirent(unit + a->off, &de);
	de.stable = a->stable;
	od_put_dirent(unit + a->off, &de);
}

static void case_free_inode(void)
{
	struct od_chunk_header h;
	struct stable_arg a;
	uint32_t chunk = OD_STABLE_CHUNK(tree.small), unit = 0;
	int fd;

	copy_file(pristine, work);
	fd = img_fd(work);
	h = header_of(fd, chunk);
	CHECK_EQ(find_entry(fd, chunk, "hl", &unit, &a.off), 0);
	a.stable = tree.gone;
	patch_unit(fd, chunk, unit, h.dir_unit, set_stable, &a);
	close(fd);
	/* The file it named loses one link with it. */
	expect_repair2("entry naming a free inode", (int)chunk, 0x040001, 0x040006, FSCK_YES,
		       LOST_HL);
}

static void case_header(void)
{
	struct fsck_result r;
	char before[300];
	int fd, rc;

	copy_file(pristine, work);
	fd = img_fd(work);
	flip(fd, 2, 0, 60);
	flip(fd, 2, CHUNK_SIZE / OD_BLOCK_SIZE / 2, 60);
	close(fd);
	snprintf(before, sizeof(before), "%s.before", work);
	copy_file(work, before);
	/* -n: reported, nothing written. */
	rc = run(work, 2, FSCK_CHECK_ONLY, 0, &r);
	CHECK(rc & FSCK_EXIT_UNCORRECTED);
	CHECK(reported(0x010009));
	CHECK(files_same(work, before));
	/* -y: made again from another chunk's header of its size and chunk 2's
	 * own blocks; the counters recounted; the volume clean after. */
	rc = run(work, 2, FSCK_YES, 0, &r);
	CHECK(rc & FSCK_EXIT_FIXED);
	CHECK(!(rc & (FSCK_EXIT_UNCORRECTED | FSCK_EXIT_OPERATIONAL)));
	CHECK(reported(0x010009));
	rc = run(work, -1, FSCK_CHECK_ONLY, 0, &r);
	CHECK_EQ(rc, 0);
	CHECK_EQ(r.chunks, NCHUNKS);
	/* Chunk 0's: made again from chunk 1's, in a whole-volume run. */
	copy_file(pristine, work);
	fd = img_fd(work);
	flip(fd, 0, 0, 60);
	flip(fd, 0, CHUNK_SIZE / OD_BLOCK_SIZE / 2, 60);
	close(fd);
	rc = run(work, -1, FSCK_YES, 0, &r);
	CHECK(rc & FSCK_EXIT_FIXED);
	CHECK(!(rc & (FSCK_EXIT_UNCORRECTED | FSCK_EXIT_OPERATIONAL)));
	CHECK_EQ(r.chunks, NCHUNKS);
	CHECK(reported(0x010009));
	rc = run(work, -1, FSCK_CHECK_ONLY, 0, &r);
	CHECK_EQ(rc, 0);
	unlink(before);
	printf("both header copies bad: made again from another chunk's (exit %d)\n", rc);
}

/* Both copies of the unit holding d1/sub/f2: replaced by an empty one, and
 * what it held (f2) goes: its map entry, the counters. */
static void case_both_bad(void)
{
	struct od_chunk_header h;
	uint32_t chunk = OD_STABLE_CHUNK(tree.sub), unit = 0, off = 0;
	int fd;

	copy_file(pristine, work);
	fd = img_fd(work);
	h = header_of(fd, chunk);
	CHECK_EQ(find_entry(fd, chunk, "f2", &unit, &off), 0);
	flip(fd, chunk, unit, 2000);
	flip(fd, chunk, unit + h.nblocks / 2, 2000);
	close(fd);
	expect_repair2("both copies of a directory unit bad", (int)chunk, 0x000002, 0x04000a,
		       FSCK_YES, LOST_F2);
}

static void set_used_inodes(uint8_t *unit, void *arg)
{
	struct od_chunk_header h;

	od_get_chunk_header(unit, &h);
	h.used_inodes += 3;
	h.free_blocks -= 2;
	od_put_chunk_header(unit, &h);
}

static void case_counters(void)
{
	int fd;

	copy_file(pristine, work);
	fd = img_fd(work);
	patch_unit(fd, 1, 0, 1, set_used_inodes, NULL);
	close(fd);
	expect_repair2("header counters wrong", 1, 0x050005, 0x050004, FSCK_PREEN, 0);
}

struct slot_arg {
	uint32_t at;
};

static void garbage_slot(uint8_t *unit, void *arg)
{
	struct slot_arg *a = arg;

	memset(unit + a->at + 40, 0xab, 8); /* a time field of a free slot */
}

static void case_slot(void)
{
	struct od_chunk_header h;
	struct slot_arg a;
	int fd;

	copy_file(pristine, work);
	fd = img_fd(work);
	h = header_of(fd, 0);
	CHECK(h.islot_watermark < OD_ISLOTS_PER_BLOCK);
	/* A slot below the watermark that is free: the root is slot 0, so
	 * look for a zero one. */
	{
		uint8_t blk[OD_BLOCK_SIZE];
		CHECK_EQ(read_unit(fd, 0, h.itable_start, 1, h.nblocks / 2, blk), 0);
		a.at = 0;
		for (uint32_t k = 0; k < h.islot_watermark; k++) {
			struct od_inode ino;
			od_get_inode(blk + OD_MB_HEADER_SIZE + k * OD_INODE_SIZE, &ino);
			if (ino.mode == 0)
				a.at = OD_MB_HEADER_SIZE + k * OD_INODE_SIZE;
		}
		if (!a.at) /* none free: the one past the last used, made used */
			a.at = 0;
	}
	if (a.at) {
		patch_unit(fd, 0, h.itable_start, 1, garbage_slot, &a);
		close(fd);
		expect_repair("garbage in a free slot", 0, 0x010010, FSCK_PREEN, 0);
	} else {
		close(fd);
		printf("garbage in a free slot: no free slot below the watermark (skipped)\n");
	}
}

struct head_arg {
	uint16_t off;
	uint64_t head;
};

static void set_head(uint8_t *unit, void *arg)
{
	struct head_arg *a = arg;
	struct od_inode ino;

	od_get_inode(unit + a->off, &ino);
	ino.head_stable = a->head;
	od_put_inode(unit + a->off, &ino);
}

/* A continuation's back pointer: deferred alone, wrong with -x. */
static void case_cross(void)
{
	struct fsck_result r;
	struct head_arg a;
	uint8_t blk[OD_BLOCK_SIZE];
	struct od_chunk_header h;
	struct od_inode ino;
	int fd, found = -1;

	copy_file(pristine, work);
	fd = img_fd(work);
	for (uint32_t k = 1; k < NCHUNKS && found < 0; k++) {
		h = header_of(fd, k);
		if (read_unit(fd, k, h.itable_start, 1, h.nblocks / 2, blk) < 0)
			continue;
		for (uint32_t s = 0; s < h.islot_watermark && s < OD_ISLOTS_PER_BLOCK; s++) {
			od_get_inode(blk + OD_MB_HEADER_SIZE + s * OD_INODE_SIZE, &ino);
			if ((ino.flags & OD_INF_CONT) && ino.head_stable == tree.big) {
				found = (int)k;
				a.off = (uint16_t)(OD_MB_HEADER_SIZE + s * OD_INODE_SIZE);
				break;
			}
		}
	}
	CHECK(found > 0);
	if (found > 0) {
		a.head = tree.small;
		patch_unit(fd, (uint32_t)found, h.itable_start, 1, set_head, &a);
	}
	close(fd);
	if (found <= 0)
		return;
	CHECK_EQ(run(work, found, FSCK_CHECK_ONLY, 0, &r), 0);
	CHECK(r.deferred > 0);
	CHECK_EQ(run(work, found, FSCK_CHECK_ONLY, 1, &r), FSCK_EXIT_UNCORRECTED);
	CHECK(reported(0x060001));
	CHECK_EQ(run(work, -1, FSCK_CHECK_ONLY, 1, &r), FSCK_EXIT_UNCORRECTED);
	CHECK(reported(0x060002));
	printf("continuation with a wrong back pointer: deferred alone, found by -x\n");
}

/* Damage found while the last transaction's catch-ups are still pending:
 * the repair makes them too, and recovery at the next open agrees. */
static void case_unsettled(void)
{
	int fd;

	copy_file(image, work);
	fd = img_fd(work);
	patch_unit(fd, 1, 0, 1, set_used_inodes, NULL);
	close(fd);
	expect_repair2("counters wrong, catch-ups pending", 1, 0x050005, 0x050004, FSCK_YES, 0);
}

/* The API on a store of one chunk's bytes, any index accepted. */
static void case_store(void)
{
	struct fsck_opts o = { .mode = FSCK_CHECK_ONLY, .force = 1 };
	struct chunk_store *st = NULL;
	struct fsck_result r;
	int fd = open(pristine, O_RDONLY);

	CHECK(fd >= 0);
	CHECK_EQ(store_file_region(fd, 3ull * CHUNK_SIZE, CHUNK_SIZE, &st), 0);
	CHECK_EQ(fsck_chunk_store(st, UINT32_MAX, &o, &r), 0);
	CHECK_EQ(r.exit_code, 0);
	CHECK_EQ(r.chunks, 1);
	CHECK(r.deferred > 0);
	CHECK_EQ(fsck_chunk_store(st, 2, &o, &r), 0);
	CHECK(r.exit_code & FSCK_EXIT_UNCORRECTED); /* not chunk 2 */
	store_close(st);
	close(fd);
}

/* --- the damage cases added with the random test ------------------------------ */

/* Change one copy of a unit (0: at block, 1: at block + H) and seal it. */
static void patch_copy(int fd, uint32_t chunk, uint32_t block, uint32_t units, int copy,
		       patch_fn fn, void *arg)
{
	size_t len = (size_t)units * OD_BLOCK_SIZE;
	uint8_t *buf = malloc(len);
	off_t off = (off_t)chunk * CHUNK_SIZE +
		    (off_t)(block + (copy ? CHUNK_SIZE / OD_BLOCK_SIZE / 2 : 0)) * OD_BLOCK_SIZE;

	CHECK_EQ(pread(fd, buf, len, off), (long long)len);
	CHECK_EQ(od_verify(buf, len), 0);
	fn(buf, arg);
	od_seal(buf, len);
	CHECK_EQ(pwrite(fd, buf, len, off), (long long)len);
	free(buf);
}

/* Remove the entry at off as the library would: merged into the one
 * before it, or made the free first entry. */
static void drop_entry(uint8_t *unit, void *arg)
{
	uint32_t at = *(uint32_t *)arg, prev = 0;
	struct od_dirent de, pd;

	for (uint32_t o = OD_MB_HEADER_SIZE; o < at;) {
		od_get_dirent(unit + o, &pd);
		prev = o;
		o += pd.rec_len;
	}
	od_get_dirent(unit + at, &de);
	memset(unit + at, 0, OD_DIRENT_HEADER);
	if (prev) {
		od_get_dirent(unit + prev, &pd);
		pd.rec_len = (uint16_t)(pd.rec_len + de.rec_len);
		od_put_dirent(unit + prev, &pd);
	} else {
		struct od_dirent fr = { .rec_len = de.rec_len, .kind = OD_DE_FREE };
		od_put_dirent(unit + at, &fr);
	}
}

/* (b) The only entry naming a file whose inode lives in a slot is lost:
 * the file goes to lost+found, whole, in its own chunk (the root's, or
 * lost+found's part that mkfs made there). */
static void case_orphan(void)
{
	uint32_t chunk = OD_STABLE_CHUNK(tree.orph), unit = 0, off = 0;
	struct od_chunk_header h;
	int fd;

	copy_file(pristine, work);
	fd = img_fd(work);
	h = header_of(fd, chunk);
	CHECK_EQ(find_entry(fd, chunk, "orph2", &unit, &off), 0);
	patch_unit(fd, chunk, unit, h.dir_unit, drop_entry, &off);
	close(fd);
	expect_repair("orphan inode (no entry names it) -> lost+found", (int)chunk, 0x040007,
		      FSCK_YES, LOST_ORPH);
	/* -p does not make that repair. */
	copy_file(pristine, work);
	fd = img_fd(work);
	patch_unit(fd, chunk, unit, h.dir_unit, drop_entry, &off);
	close(fd);
	{
		struct fsck_result r;
		CHECK_EQ(run(work, (int)chunk, FSCK_PREEN, 0, &r), FSCK_EXIT_UNCORRECTED);
		CHECK(reported(0x040007));
		CHECK_EQ(r.fixed, 0);
	}
}

/* In work (a copy of pristine): dir/name gets a second name and loses its
 * first, so that its inode moves to a slot; then the second name's entry
 * is dropped from the image, leaving the inode an orphan. Its number. */
static uint64_t make_orphan(const char *dirname, const char *name)
{
	struct fs_volume *v = NULL;
	struct fs_ino root, dir, x = { 0, 0 };
	uint32_t chunk, unit = 0, off = 0;
	int fd;

	CHECK_EQ(fs_open(work, 0, &v), 0);
	if (!v)
		return 0;
	CHECK_EQ(fs_root(v, &root), 0);
	dir = dirname ? lookup(v, root, dirname) : root;
	x = lookup(v, dir, name);
	CHECK_EQ(fs_link(v, NULL, x, dir, "alias"), 0);
	CHECK_EQ(fs_remove(v, NULL, dir, name), 0);
	CHECK_EQ(fs_close(v), 0);
	chunk = OD_STABLE_CHUNK(x.num);
	fd = img_fd(work);
	CHECK_EQ(find_entry(fd, chunk, "alias", &unit, &off), 0);
	patch_unit(fd, chunk, unit, header_of(fd, chunk).dir_unit, drop_entry, &off);
	close(fd);
	return x.num;
}

/* work opened, with its root, lost+found and the name "#num" there
 * (NULL: it did not open). */
static struct fs_volume *open_adopted(uint64_t num, struct fs_ino *root, struct fs_ino *lf,
				      char *nm, size_t nmlen)
{
	struct fs_volume *v = NULL;

	CHECK_EQ(fs_open(work, 0, &v), 0);
	if (!v)
		return NULL;
	CHECK_EQ(fs_root(v, root), 0);
	*lf = lookup(v, *root, "lost+found");
	snprintf(nm, nmlen, "#%llu", (unsigned long long)num);
	return v;
}

/* lost+found/#num in work holds exactly want[0..len), with one link; the
 * directory name is gone; lost+found keeps its count (2). */
static void check_adopted(const char *dirname, const char *name, uint64_t num, const void *want,
			  size_t len)
{
	struct fs_volume *v;
	struct fs_ino root, lf;
	struct fs_attr a;
	char nm[32];

	v = open_adopted(num, &root, &lf, nm, sizeof(nm));
	if (!v)
		return;
	check_file(v, lf, nm, want, len, 1);
	CHECK_EQ(lookup(v, lf, nm).num, num);
	CHECK_EQ(fs_lookup(v, NULL, dirname ? lookup(v, root, dirname) : root, name, NULL, NULL),
		 -ENOENT);
	CHECK_EQ(fs_getattr(v, lf, &a), 0);
	CHECK_EQ(a.nlink, 2);
	CHECK_EQ(a.mode, S_IFDIR | 0700);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
}

/* (b2) An orphan in a chunk other than the root's: linked into lost+found's
 * part there, only that chunk written. Then one in the root's chunk. */
static void case_orphan_chunks(void)
{
	char name[16];
	uint64_t num = 0;
	uint32_t far;
	int i;

	/* many/f<i>, in a chunk other than 0 and not among those
	 * verify_tree reads (every 37th). */
	for (i = 1; i < NMANY && !num; i++) {
		struct fs_volume *v = NULL;
		struct fs_ino root;
		if (i % 37 == 0)
			continue;
		snprintf(name, sizeof(name), "f%03d", i);
		CHECK_EQ(fs_open(pristine, FS_OPEN_RDONLY, &v), 0);
		if (!v)
			return;
		CHECK_EQ(fs_root(v, &root), 0);
		if (OD_STABLE_CHUNK(lookup(v, lookup(v, root, "many"), name).num) != 0)
			num = 1;
		CHECK_EQ(fs_close(v), 0);
	}
	CHECK(num != 0);
	copy_file(pristine, work);
	num = make_orphan("many", name);
	CHECK(OD_STABLE_CHUNK(num) != 0);
	expect_repair("orphan in a chunk other than the root's -> lost+found's part there",
		      (int)OD_STABLE_CHUNK(num), 0x040007, FSCK_YES, 0);
	CHECK(!reported(0x040018));
	check_adopted("many", name, num, name, 4);
	far = OD_STABLE_CHUNK(num);
	/* And one in the root's chunk (the root's files stay there). */
	copy_file(pristine, work);
	num = make_orphan(NULL, "ln");
	CHECK_EQ(OD_STABLE_CHUNK(num), 0);
	{
		char before[300];
		struct fsck_result r;
		snprintf(before, sizeof(before), "%s.before", work);
		copy_file(work, before);
		CHECK_EQ(run(work, -1, FSCK_YES, 0, &r), FSCK_EXIT_FIXED);
		CHECK(reported(0x040007));
		CHECK(others_same(work, before, 0));
		CHECK_EQ(run(work, -1, FSCK_CHECK_ONLY, 1, &r), 0);
		CHECK_EQ(r.problems, 0);
		unlink(before);
	}
	{
		struct fs_volume *v = NULL;
		struct fs_ino root, lf;
		char buf[16], nm[32];
		size_t n = 0;
		CHECK_EQ(fs_open(work, 0, &v), 0);
		if (v) {
			CHECK_EQ(fs_root(v, &root), 0);
			lf = lookup(v, root, "lost+found");
			snprintf(nm, sizeof(nm), "#%llu", (unsigned long long)num);
			CHECK_EQ(fs_readlink(v, lookup(v, lf, nm), buf, sizeof(buf), &n), 0);
			CHECK(n == 8 && memcmp(buf, "d1/small", 8) == 0);
			CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
			CHECK_EQ(fs_close(v), 0);
		}
	}
	printf("orphans of chunk %u and of the root's chunk: in lost+found\n", far);
}

/* --- an orphan directory ------------------------------------------------------- */

#define ODIR_B_SIZE 6000u

struct odir_slot {
	uint16_t off;
	const uint8_t *ino;
};

static void put_slot(uint8_t *unit, void *arg)
{
	struct odir_slot *a = arg;

	memcpy(unit + a->off, a->ino, OD_INODE_SIZE);
}

struct map_arg {
	uint32_t k;
	struct od_loc loc;
};

static void set_map_loc(uint8_t *unit, void *arg)
{
	struct map_arg *a = arg;
	uint8_t *at = unit + OD_MB_HEADER_SIZE + a->k * OD_MAP_ENTRY_SIZE;
	struct od_map_entry e;

	od_get_map_entry(at, &e);
	e.loc = a->loc;
	od_put_map_entry(at, &e);
}

static void dec_nlink(uint8_t *unit, void *arg)
{
	uint16_t off = *(uint16_t *)arg;
	struct od_inode ino;

	od_get_inode(unit + off, &ino);
	ino.nlink--;
	od_put_inode(unit + off, &ino);
}

/* In work: many/late/odir, a directory of late's chunk (not the root's)
 * holding a (inline) and b (in blocks), is moved by hand into a free slot
 * of its chunk's inode area (its map entry following it), and its entry in
 * late is dropped, late's link count with it: a directory no entry names.
 * Its number; *chunk its chunk. 0 when the library placed it elsewhere. */
static uint64_t make_orphan_dir(uint32_t *chunk)
{
	struct fs_volume *v = NULL;
	struct fs_ino root, late, od = { 0, 0 }, x, t;
	uint8_t want[ODIR_B_SIZE], *unit, ino[OD_INODE_SIZE];
	struct od_chunk_header h;
	struct od_dirent de;
	uint32_t k, ublk = 0, uoff = 0, lblk = 0, loff = 0, slot = UINT32_MAX;
	uint16_t at;
	int fd;

	CHECK_EQ(fs_open(work, 0, &v), 0);
	if (!v)
		return 0;
	CHECK_EQ(fs_root(v, &root), 0);
	late = lookup(v, lookup(v, root, "many"), "late");
	CHECK_EQ(fs_mkdir(v, NULL, late, "odir", 0750, &od, NULL), 0);
	CHECK_EQ(fs_create(v, NULL, od, "a", 0644, FS_CREATE_GUARDED, 0, &x, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, x, 0, 13, "orphan dir a\n", FS_UNSTABLE, NULL), 0);
	fill(want, ODIR_B_SIZE, 9);
	CHECK_EQ(fs_create(v, NULL, od, "b", 0600, FS_CREATE_GUARDED, 0, &x, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, x, 0, ODIR_B_SIZE, want, FS_UNSTABLE, NULL), 0);
	/* A slot used once and freed in odir's chunk: room below the watermark. */
	CHECK_EQ(fs_create(v, NULL, od, "t", 0644, FS_CREATE_GUARDED, 0, &t, NULL), 0);
	CHECK_EQ(fs_link(v, NULL, t, od, "t2"), 0);
	CHECK_EQ(fs_remove(v, NULL, od, "t"), 0);
	CHECK_EQ(fs_remove(v, NULL, od, "t2"), 0);
	CHECK_EQ(fs_close(v), 0);
	*chunk = k = OD_STABLE_CHUNK(od.num);
	if (k == 0 || OD_STABLE_CHUNK(late.num) != k || OD_STABLE_CHUNK(x.num) != k ||
	    OD_STABLE_CHUNK(t.num) != k) {
		fprintf(stderr, "orphan directory: late %llx, odir %llx, b %llx, t %llx: not all "
				"in one chunk other than 0\n",
			(unsigned long long)late.num, (unsigned long long)od.num,
			(unsigned long long)x.num, (unsigned long long)t.num);
		CHECK(0);
		return 0;
	}
	fd = img_fd(work);
	h = header_of(fd, k);
	unit = malloc((size_t)h.dir_unit * OD_BLOCK_SIZE);
	/* The inode, from odir's entry. */
	CHECK_EQ(find_entry(fd, k, "odir", &ublk, &uoff), 0);
	CHECK_EQ(read_unit(fd, k, ublk, h.dir_unit, h.nblocks / 2, unit), 0);
	od_get_dirent(unit + uoff, &de);
	CHECK_EQ(de.kind, OD_DE_EMBEDDED);
	memcpy(ino, unit + uoff + OD_DIRENT_HEADER + od_align8(de.name_len), OD_INODE_SIZE);
	/* A free slot below the watermark. */
	for (uint32_t s = 0; s < h.islot_watermark && slot == UINT32_MAX; s++) {
		uint8_t blk[OD_BLOCK_SIZE], zero[OD_INODE_SIZE] = { 0 };
		uint32_t at_s = OD_MB_HEADER_SIZE + (s % OD_ISLOTS_PER_BLOCK) * OD_INODE_SIZE;
		if (read_unit(fd, k, h.itable_start + s / OD_ISLOTS_PER_BLOCK, 1, h.nblocks / 2,
			      blk) == 0 &&
		    memcmp(blk + at_s, zero, OD_INODE_SIZE) == 0)
			slot = s;
	}
	CHECK(slot != UINT32_MAX);
	if (slot != UINT32_MAX) {
		struct odir_slot sa = { .ino = ino };
		struct map_arg ma;
		uint32_t idx = OD_STABLE_INDEX(od.num);
		sa.off = (uint16_t)(OD_MB_HEADER_SIZE +
				    (slot % OD_ISLOTS_PER_BLOCK) * OD_INODE_SIZE);
		patch_unit(fd, k, h.itable_start + slot / OD_ISLOTS_PER_BLOCK, 1, put_slot, &sa);
		ma.k = idx % OD_MAP_PER_BLOCK;
		ma.loc.chunk = k;
		ma.loc.block = h.itable_start + slot / OD_ISLOTS_PER_BLOCK;
		ma.loc.off = sa.off;
		patch_unit(fd, k, h.map_start + idx / OD_MAP_PER_BLOCK, 1, set_map_loc, &ma);
		CHECK(where(fd, od.num).block == ma.loc.block && where(fd, od.num).off == sa.off);
	}
	/* No entry names it; late counts one subdirectory less. */
	patch_unit(fd, k, ublk, h.dir_unit, drop_entry, &uoff);
	CHECK_EQ(find_entry(fd, k, "late", &lblk, &loff), 0);
	read_unit(fd, k, lblk, h.dir_unit, h.nblocks / 2, unit);
	od_get_dirent(unit + loff, &de);
	at = (uint16_t)(loff + OD_DIRENT_HEADER + od_align8(de.name_len));
	patch_unit(fd, k, lblk, h.dir_unit, dec_nlink, &at);
	free(unit);
	close(fd);
	return od.num;
}

/* (b3) An orphan directory in a chunk other than the root's: reported
 * (-n: 4, nothing written), linked by -y into lost+found's part in its own
 * chunk as #<number> with its parent set to lost+found (1, no other chunk
 * written), a second run clean (0); its files read back whole. lost+found's
 * link count lives in chunk 0: a -x run of the volume finds it one short
 * and sets it. */
static void case_orphan_dir(void)
{
	char before[300], nm[32];
	struct fsck_result r;
	uint32_t k = 0;
	uint64_t num;
	int rc;

	copy_file(pristine, work);
	num = make_orphan_dir(&k);
	if (!num)
		return;
	snprintf(before, sizeof(before), "%s.before", work);
	copy_file(work, before);
	rc = run(work, (int)k, FSCK_CHECK_ONLY, 0, &r);
	CHECK_EQ(rc, FSCK_EXIT_UNCORRECTED);
	CHECK(reported(0x040007));
	CHECK_EQ(r.problems, 1);
	if (r.problems != 1 || !reported(0x040007))
		fprintf(stderr, "orphan directory, -n:\n%s", last.text);
	CHECK(files_same(work, before));
	rc = run(work, (int)k, FSCK_YES, 0, &r);
	CHECK_EQ(rc, FSCK_EXIT_FIXED);
	CHECK(reported(0x040007));
	CHECK_EQ(r.problems, 1);
	CHECK_EQ(r.fixed, 1);
	CHECK_EQ(r.unfixed, 0);
	CHECK(strstr(last.text, "deferred: lost+found") != NULL);
	CHECK(others_same(work, before, (int)k));
	CHECK(!files_same(work, before));
	rc = run(work, (int)k, FSCK_CHECK_ONLY, 0, &r);
	CHECK_EQ(rc, 0);
	CHECK_EQ(r.problems, 0);
	if (r.problems)
		fprintf(stderr, "orphan directory, second run:\n%s", last.text);
	/* lost+found gained a subdirectory its head (chunk 0) does not count. */
	copy_file(work, before);
	rc = run(work, -1, FSCK_CHECK_ONLY, 1, &r);
	CHECK_EQ(rc, FSCK_EXIT_UNCORRECTED);
	CHECK(reported(0x040006));
	CHECK_EQ(r.problems, 1);
	rc = run(work, -1, FSCK_YES, 1, &r);
	CHECK_EQ(rc, FSCK_EXIT_FIXED);
	CHECK(others_same(work, before, 0));
	rc = run(work, -1, FSCK_CHECK_ONLY, 1, &r);
	CHECK_EQ(rc, 0);
	CHECK_EQ(r.problems, 0);
	unlink(before);
	{
		struct fs_volume *v;
		struct fs_ino root, lf, od, late;
		struct fs_attr a;
		uint8_t want[ODIR_B_SIZE];
		v = open_adopted(num, &root, &lf, nm, sizeof(nm));
		if (!v)
			return;
		od = lookup(v, lf, nm);
		CHECK_EQ(od.num, num);
		CHECK_EQ(fs_getattr(v, od, &a), 0);
		CHECK_EQ(a.mode, S_IFDIR | 0750);
		CHECK_EQ(a.nlink, 2);
		check_file(v, od, "a", (const uint8_t *)"orphan dir a\n", 13, 1);
		fill(want, ODIR_B_SIZE, 9);
		check_file(v, od, "b", want, ODIR_B_SIZE, 1);
		CHECK_EQ(fs_lookup(v, NULL, od, "t", NULL, NULL), -ENOENT);
		CHECK_EQ(fs_getattr(v, lf, &a), 0);
		CHECK_EQ(a.nlink, 3);
		late = lookup(v, lookup(v, root, "many"), "late");
		CHECK_EQ(fs_lookup(v, NULL, late, "odir", NULL, NULL), -ENOENT);
		CHECK_EQ(fs_getattr(v, late, &a), 0);
		CHECK_EQ(a.nlink, 3);
		CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
		CHECK_EQ(fs_close(v), 0);
	}
	printf("orphan directory of chunk %u: in lost+found's part there as %s, its files whole\n",
	       k, nm);
}

struct ext_arg {
	uint16_t off;
	uint32_t pblk;
};

static void set_ext0(uint8_t *unit, void *arg)
{
	struct ext_arg *a = arg;
	struct od_inode ino;

	od_get_inode(unit + a->off, &ino);
	ino.ext[0].pblk = a->pblk;
	od_put_inode(unit + a->off, &ino);
}

/* The inode at map location l (read from its unit). */
static struct od_inode inode_at(int fd, struct od_loc l)
{
	struct od_chunk_header h = header_of(fd, l.chunk);
	uint32_t units = l.block < h.data_start ? 1 : h.dir_unit;
	uint8_t *buf = malloc((size_t)units * OD_BLOCK_SIZE);
	struct od_inode ino;

	memset(&ino, 0, sizeof(ino));
	CHECK_EQ(read_unit(fd, l.chunk, l.block, units, h.nblocks / 2, buf), 0);
	od_get_inode(buf + l.off, &ino);
	free(buf);
	return ino;
}

/* (a) data2's extent made to claim orph's two blocks: data2 (checked
 * after orph) gets a copy of them, its own blocks are freed. */
static void case_dup(void)
{
	struct od_loc lo, ld;
	struct od_inode io, id;
	struct ext_arg a;
	int fd;

	copy_file(pristine, work);
	fd = img_fd(work);
	lo = where(fd, tree.orph);
	ld = where(fd, tree.data2);
	CHECK_EQ(lo.chunk, ld.chunk);
	io = inode_at(fd, lo);
	id = inode_at(fd, ld);
	CHECK(lo.block < header_of(fd, lo.chunk).data_start); /* orph: a slot */
	CHECK_EQ(io.nextents, 1);
	CHECK_EQ(id.nextents, 1);
	CHECK_EQ(io.ext[0].len, 2);
	CHECK_EQ(id.ext[0].len, 2);
	a.off = ld.off;
	a.pblk = io.ext[0].pblk;
	patch_unit(fd, ld.chunk, ld.block, header_of(fd, ld.chunk).dir_unit, set_ext0, &a);
	close(fd);
	expect_repair2("block claimed by two inodes", (int)lo.chunk, 0x030008, 0x050002, FSCK_YES,
		       LOST_DATA2);
	fd = img_fd(work);
	id = inode_at(fd, where(fd, tree.data2));
	CHECK(id.ext[0].pblk != io.ext[0].pblk);
	close(fd);
}

/* A continuation of big: the last one (greatest cont_start), its chunk,
 * slot offset and the location of the inode pointing to it. */
static int last_cont(int fd, uint32_t *chunk, uint16_t *off, struct od_inode *cont,
		     struct od_loc *pred)
{
	struct od_loc l = { 0 };
	struct od_inode ino;
	int found = 0;

	for (uint32_t k = 0; k < NCHUNKS; k++) {
		struct od_chunk_header h = header_of(fd, k);
		uint8_t blk[OD_BLOCK_SIZE];
		for (uint32_t b = 0; b * OD_ISLOTS_PER_BLOCK < h.islot_watermark; b++) {
			if (read_unit(fd, k, h.itable_start + b, 1, h.nblocks / 2, blk) < 0)
				continue;
			for (uint32_t s = 0; s < OD_ISLOTS_PER_BLOCK; s++) {
				od_get_inode(blk + OD_MB_HEADER_SIZE + s * OD_INODE_SIZE, &ino);
				if (!(ino.flags & OD_INF_CONT) || ino.head_stable != tree.big)
					continue;
				if (!found || ino.cont_start > cont->cont_start) {
					*cont = ino;
					*chunk = k;
					*off = (uint16_t)(OD_MB_HEADER_SIZE + s * OD_INODE_SIZE);
					l.chunk = k;
					l.block = h.itable_start + b;
					l.off = *off;
					found = 1;
				}
			}
		}
	}
	if (!found)
		return -1;
	/* Who points at it: the head or another continuation. */
	ino = inode_at(fd, where(fd, tree.big));
	*pred = where(fd, tree.big);
	while (ino.next.chunk != OD_LOC_NONE &&
	       !(ino.next.chunk == l.chunk && ino.next.block == l.block && ino.next.off == l.off)) {
		*pred = ino.next;
		ino = inode_at(fd, ino.next);
	}
	return ino.next.chunk == OD_LOC_NONE ? -1 : 0;
}

static void zero_inode(uint8_t *unit, void *arg)
{
	memset(unit + *(uint16_t *)arg, 0, OD_INODE_SIZE);
}

/* (c) The last continuation of big is lost (its slot zeroed): the forward
 * pointer to it dangles. With -x the chain is ended where it points (the
 * rest of the file reads as zeros), and the lost continuation's blocks are
 * freed in its own chunk. */
static void case_dangling_next(void)
{
	struct od_inode cont = { 0 };
	struct od_loc pred = { 0 };
	struct fsck_result r;
	char before[300];
	uint32_t chunk = 0;
	uint16_t off = 0;
	size_t la, lb;
	uint8_t *x, *y;
	int fd, rc;

	copy_file(pristine, work);
	fd = img_fd(work);
	CHECK_EQ(last_cont(fd, &chunk, &off, &cont, &pred), 0);
	CHECK(pred.chunk != chunk);
	patch_unit(fd, chunk, header_of(fd, chunk).itable_start + (off - OD_MB_HEADER_SIZE) /
		   OD_INODE_SIZE / OD_ISLOTS_PER_BLOCK, 1, zero_inode, &off);
	close(fd);
	snprintf(before, sizeof(before), "%s.before", work);
	copy_file(work, before);
	/* Alone, the chunk of the pointer sees nothing wrong: deferred. */
	CHECK_EQ(run(work, (int)pred.chunk, FSCK_CHECK_ONLY, 0, &r), 0);
	CHECK(r.deferred > 0);
	CHECK_EQ(run(work, -1, FSCK_CHECK_ONLY, 1, &r), FSCK_EXIT_UNCORRECTED);
	CHECK(reported(0x060002));
	CHECK(reported(0x050002));
	CHECK(files_same(work, before));
	CHECK_EQ(run(work, -1, FSCK_YES, 1, &r), FSCK_EXIT_FIXED);
	CHECK_EQ(r.unfixed, 0);
	/* Only the two chunks involved were written. */
	x = slurp(work, &la);
	y = slurp(before, &lb);
	CHECK(x && y && la == lb);
	for (uint32_t k = 0; x && y && k < NCHUNKS; k++)
		if (k != chunk && k != pred.chunk)
			CHECK(memcmp(x + (size_t)k * CHUNK_SIZE, y + (size_t)k * CHUNK_SIZE,
				     CHUNK_SIZE) == 0);
	free(x);
	free(y);
	rc = run(work, -1, FSCK_CHECK_ONLY, 1, &r);
	CHECK_EQ(rc, 0);
	CHECK_EQ(r.problems, 0);
	big_keep = (size_t)cont.cont_start * OD_BLOCK_SIZE;
	CHECK(big_keep < BIG_SIZE);
	verify_tree(work, 0);
	big_keep = BIG_SIZE;
	unlink(before);
	printf("dangling forward pointer: found by -x (0x060002), chain ended, clean on the "
	       "second run\n");
}

struct inl_arg {
	uint16_t off;
	uint32_t len;
};

static void set_inline_len(uint8_t *unit, void *arg)
{
	struct inl_arg *a = arg;
	struct od_inode ino;

	od_get_inode(unit + a->off, &ino);
	ino.inline_len = a->len;
	od_put_inode(unit + a->off, &ino);
}

/* (d) Inline data longer than the inode's size: cut to the size. */
static void case_inline(void)
{
	struct inl_arg a;
	struct od_loc l;
	int fd;

	copy_file(pristine, work);
	fd = img_fd(work);
	l = where(fd, tree.small);
	a.off = l.off;
	a.len = 13; /* 11 bytes: still within the entry's 16 */
	patch_unit(fd, l.chunk, l.block, header_of(fd, l.chunk).dir_unit, set_inline_len, &a);
	close(fd);
	expect_repair("inline data longer than the size", (int)l.chunk, 0x010026, FSCK_YES, 0);
}

static void bad_geometry(uint8_t *unit, void *arg)
{
	struct od_chunk_header h;

	(void)arg;
	od_get_chunk_header(unit, &h);
	h.bitmap_start = 5; /* the 4-block list area of an old layout */
	od_put_chunk_header(unit, &h);
}

static void bad_dir_unit(uint8_t *unit, void *arg)
{
	struct od_chunk_header h;

	(void)arg;
	od_get_chunk_header(unit, &h);
	h.dir_unit = 9;
	od_put_chunk_header(unit, &h);
}

/* (e) One header copy with a valid checksum but an invalid layout: the
 * other copy is current and rewrites it. */
static void case_header_geometry(void)
{
	int fd;

	copy_file(pristine, work);
	fd = img_fd(work);
	patch_copy(fd, 1, 0, 1, 0, bad_geometry, NULL);
	close(fd);
	expect_repair("header copy 0 with an inconsistent layout", 1, 0x010001, FSCK_PREEN, 0);
	copy_file(pristine, work);
	fd = img_fd(work);
	patch_copy(fd, 3, 0, 1, 1, bad_dir_unit, NULL);
	close(fd);
	expect_repair("header copy 1 with dir_unit 9", 3, 0x010001, FSCK_YES, 0);
}

/* --- the reading strategy: current copies by default -------------------------- */

/* A store that counts what is read from the copy-0 side of the metadata
 * ([17, H): bitmap onwards) and from the copy-1 side ([H + 17, N)). */
struct counting {
	struct chunk_store st;
	struct chunk_store *in;
	uint64_t lo, hi;
	unsigned preads;
};

static int cnt_pread(struct chunk_store *st, void *buf, size_t len, uint64_t off)
{
	struct counting *k = (struct counting *)st;
	uint64_t b = off / OD_BLOCK_SIZE, half = CHUNK_SIZE / OD_BLOCK_SIZE / 2;

	k->preads++;
	if (b >= half + 17)
		k->hi += len;
	else if (b >= 17 && b < half)
		k->lo += len;
	return store_pread(k->in, buf, len, off);
}

static int cnt_pwrite(struct chunk_store *st, const void *buf, size_t len, uint64_t off)
{
	return store_pwrite(((struct counting *)st)->in, buf, len, off);
}

static int cnt_flush(struct chunk_store *st)
{
	return store_flush(((struct counting *)st)->in);
}

static int cnt_trim(struct chunk_store *st, size_t len, uint64_t off)
{
	return store_trim(((struct counting *)st)->in, len, off);
}

static void cnt_close(struct chunk_store *st)
{
	(void)st;
}

static const struct chunk_store_ops cnt_ops = {
	.pread = cnt_pread,
	.pwrite = cnt_pwrite,
	.flush = cnt_flush,
	.trim = cnt_trim,
	.close = cnt_close,
};

/* Check chunk `chunk` of path through a counting store (mode, both). */
static int counted(const char *path, uint32_t chunk, int mode, int both, struct counting *k,
		   struct fsck_result *r)
{
	struct fsck_opts o = { .mode = mode, .force = 1, .both_copies = both, .out = collect,
			       .ctx = &last };
	int fd = open(path, mode == FSCK_CHECK_ONLY ? O_RDONLY : O_RDWR);

	CHECK(fd >= 0);
	memset(k, 0, sizeof(*k));
	CHECK_EQ(store_file_region(fd, (uint64_t)chunk * CHUNK_SIZE, CHUNK_SIZE, &k->in), 0);
	k->st.ops = &cnt_ops;
	k->st.size = CHUNK_SIZE;
	last.len = 0;
	if (last.text)
		last.text[0] = '\0';
	CHECK_EQ(fsck_chunk_store(&k->st, chunk, &o, r), 0);
	store_close(k->in);
	close(fd);
	return r->exit_code;
}

static void set_needs_repair(uint8_t *unit, void *arg)
{
	struct od_chunk_header h;

	(void)arg;
	od_get_chunk_header(unit, &h);
	h.state = OD_STATE_NEEDS_REPAIR;
	od_put_chunk_header(unit, &h);
}

/* Two copies of inode-area block b of chunk 0 the same? */
static int copies_same(const char *path, uint32_t b)
{
	uint8_t x[OD_BLOCK_SIZE], y[OD_BLOCK_SIZE];
	int fd = img_fd(path);
	off_t half = CHUNK_SIZE / 2;

	CHECK_EQ(pread(fd, x, sizeof(x), (off_t)b * OD_BLOCK_SIZE), (long long)sizeof(x));
	CHECK_EQ(pread(fd, y, sizeof(y), half + (off_t)b * OD_BLOCK_SIZE), (long long)sizeof(y));
	close(fd);
	return memcmp(x, y, sizeof(x)) == 0;
}

static void case_copies(void)
{
	struct counting k;
	struct fsck_result r;
	struct od_chunk_header h;
	unsigned p_default;
	int fd;

	/* Settled volume: by default nothing past the second header and list
	 * area is read; with both copies, exactly as much as of the first. */
	CHECK_EQ(counted(pristine, 0, FSCK_CHECK_ONLY, 0, &k, &r), 0);
	CHECK_EQ(k.hi, 0);
	CHECK(k.lo > 0);
	p_default = k.preads;
	CHECK_EQ(counted(pristine, 0, FSCK_CHECK_ONLY, 1, &k, &r), 0);
	CHECK(k.hi > 0);
	CHECK_EQ(k.hi, k.lo);
	CHECK(k.preads > p_default);
	printf("chunk 0: %u reads by default, %u with both copies\n", p_default, k.preads);

	/* Damage in copy 1 only: not seen by default, found with both. */
	copy_file(pristine, work);
	fd = img_fd(work);
	h = header_of(fd, 0);
	flip(fd, 0, h.itable_start + h.nblocks / 2, 1000);
	close(fd);
	CHECK_EQ(run(work, 0, FSCK_CHECK_ONLY, 0, &r), 0);
	CHECK_EQ(r.problems, 0);
	CHECK_EQ(run(work, 0, FSCK_YES, 0, &r), 0);
	CHECK(!copies_same(work, h.itable_start)); /* left as it was */
	CHECK_EQ(run(work, 0, FSCK_CHECK_ONLY, 4, &r), FSCK_EXIT_UNCORRECTED);
	CHECK_EQ(r.problems, 1);
	CHECK(reported(0x000001));
	CHECK(strstr(last.text, "inode-area block") != NULL);

	/* ... and by default in a chunk marked needs-repair. */
	fd = img_fd(work);
	patch_unit(fd, 0, 0, 1, set_needs_repair, NULL);
	close(fd);
	CHECK_EQ(run(work, 0, FSCK_CHECK_ONLY, 0, &r), FSCK_EXIT_UNCORRECTED);
	CHECK_EQ(r.problems, 1);
	CHECK(reported(0x000001));
	CHECK(strstr(last.text, "marked needs-repair: both copies of every unit are read") != NULL);
	CHECK_EQ(run(work, 0, FSCK_YES, 0, &r), FSCK_EXIT_FIXED);
	CHECK(copies_same(work, h.itable_start));
	CHECK_EQ(header_of(fd = img_fd(work), 0).state, OD_STATE_CLEAN);
	close(fd);
	CHECK_EQ(run(work, 0, FSCK_CHECK_ONLY, 4, &r), 0);
	CHECK_EQ(r.problems, 0);

	/* Damage in copy 0: found by default, repaired from copy 1. */
	copy_file(pristine, work);
	fd = img_fd(work);
	flip(fd, 0, h.itable_start, 1000);
	close(fd);
	CHECK_EQ(counted(work, 0, FSCK_CHECK_ONLY, 0, &k, &r), FSCK_EXIT_UNCORRECTED);
	CHECK_EQ(r.problems, 1);
	CHECK(reported(0x000001));
	CHECK_EQ(k.hi, OD_BLOCK_SIZE); /* the other copy of that block, no more */
	CHECK_EQ(counted(work, 0, FSCK_YES, 0, &k, &r), FSCK_EXIT_FIXED);
	CHECK_EQ(r.problems, 1);
	CHECK(copies_same(work, h.itable_start));
	CHECK(others_same(work, pristine, 0));
	CHECK_EQ(run(work, 0, FSCK_CHECK_ONLY, 4, &r), 0);
	CHECK_EQ(r.problems, 0);
	printf("copy 1 damage: found with both copies (or needs-repair) only; copy 0 damage: "
	       "found by default, repaired from copy 1\n");
}

/* --- foster maps (evacuation) ------------------------------------------------ */

struct foster_arg {
	uint32_t k; /* the entry's place in its unit */
	struct od_map_entry e;
};

static void put_foster_entry(uint8_t *unit, void *arg)
{
	struct foster_arg *a = arg;

	od_put_map_entry(unit + OD_MB_HEADER_SIZE + a->k * OD_MAP_ENTRY_SIZE, &a->e);
}

static struct od_map_entry foster_entry(int fd, const struct od_foster *f, uint32_t idx)
{
	uint8_t blk[OD_BLOCK_SIZE];
	struct od_map_entry e;

	memset(&e, 0, sizeof(e));
	CHECK_EQ(read_unit(fd, f->chunk, f->start + idx / OD_MAP_PER_BLOCK, 1,
			   CHUNK_SIZE / OD_BLOCK_SIZE / 2, blk), 0);
	od_get_map_entry(blk + OD_MB_HEADER_SIZE + (idx % OD_MAP_PER_BLOCK) * OD_MAP_ENTRY_SIZE,
			 &e);
	return e;
}

static void patch_foster_entry(int fd, const struct od_foster *f, uint32_t idx,
			       const struct od_map_entry *e)
{
	struct foster_arg a = { .k = idx % OD_MAP_PER_BLOCK, .e = *e };

	patch_unit(fd, f->chunk, f->start + idx / OD_MAP_PER_BLOCK, 1, put_foster_entry, &a);
}

/* work made a volume of three chunks, opened: *dk a directory of chunk 1. */
static struct fs_volume *foster_setup(struct fs_ino *dk)
{
	struct fs_mkfs_opts mo = { .chunk_size = CHUNK_SIZE, .chunk_count = 3, .force = 1 };
	struct fs_volume *v = NULL;
	struct fs_ino root, d;
	char name[32];

	memset(dk, 0, sizeof(*dk));
	CHECK_EQ(fs_mkfs(work, &mo), 0);
	CHECK_EQ(fs_open(work, 0, &v), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	for (int i = 0; i < 8 && !dk->num; i++) {
		snprintf(name, sizeof(name), "k%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &d, NULL), 0);
		if (OD_STABLE_CHUNK(d.num) == 1)
			*dk = d;
	}
	CHECK(dk->num != 0);
	return v;
}

/* A volume of its own (three chunks): a directory of chunk 1 holding an
 * inline file, a file with data and a symlink, and a number freed; chunk
 * 1 drains (chunk 2 too, for a while, so that everything lands in chunk
 * 0) and steps until every inode moved: chunk 1's foster map is in chunk
 * 0 and places them there. Then in both copies of the foster map's unit:
 * the freed number's entry made used at a place of chunk 0 holding no
 * inode (0x040020: freed), and the inline file's entry pointed 8 bytes
 * past its inode (0x040021: pointed back at it). -n reports exactly those
 * two and writes nothing, -y repairs both and writes only chunk 0, a
 * second -n -x is clean, every file reads back, the freed number is
 * stale. */
static void case_foster(void)
{
	struct fs_ino dk, in, dt, sl, gone, x;
	struct fs_evac_info ei;
	struct fs_volume *v;
	struct fs_attr a;
	struct fsck_result r;
	struct od_map_entry e;
	struct od_chunk_header h0;
	struct od_foster f;
	uint8_t data[20000], got[20001];
	char why[256], before[300], target[32];
	size_t n = 0, tl = 0;
	int eof = 0, fd, steps = 0;

	v = foster_setup(&dk);
	CHECK_EQ(fs_create(v, NULL, dk, "gone", 0644, FS_CREATE_GUARDED, 0, &gone, NULL), 0);
	CHECK_EQ(fs_create(v, NULL, dk, "inline", 0644, FS_CREATE_GUARDED, 0, &in, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, in, 0, 11, "hello inode", FS_FILE_SYNC, NULL), 0);
	fill(data, sizeof(data), 31);
	CHECK_EQ(fs_create(v, NULL, dk, "data", 0644, FS_CREATE_GUARDED, 0, &dt, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, dt, 0, sizeof(data), data, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(fs_symlink(v, NULL, dk, "sl", "in/line", 0777, &sl, NULL), 0);
	CHECK_EQ(fs_remove(v, NULL, dk, "gone"), 0);
	CHECK_EQ(OD_STABLE_CHUNK(gone.num), 1);
	CHECK_EQ(OD_STABLE_CHUNK(in.num), 1);
	CHECK_EQ(OD_STABLE_CHUNK(dt.num), 1);
	CHECK_EQ(OD_STABLE_CHUNK(sl.num), 1);
	CHECK_EQ(fs_chunk_drain(v, 2, 1, why, sizeof(why)), 0);
	CHECK_EQ(fs_chunk_drain(v, 1, 1, why, sizeof(why)), 0);
	CHECK_EQ(fs_evac_step(v, 1, 0, &ei), 1);
	CHECK_EQ(ei.fostered, 1);
	CHECK_EQ(ei.foster_chunk, 0);
	while (ei.homed_here && fs_evac_step(v, 1, 0, &ei) == 1 && steps < 50)
		steps++;
	CHECK_EQ(ei.homed_here, 0);
	CHECK_EQ(ei.retired, 0);
	CHECK_EQ(fs_chunk_drain(v, 2, 0, why, sizeof(why)), 0);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(run(work, -1, FSCK_CHECK_ONLY, 1 | 4, &r), 0);
	CHECK_EQ(r.problems, 0);

	fd = img_fd(work);
	h0 = header_of(fd, 0);
	CHECK_EQ(h0.nfosters, 1);
	f = h0.fosters[0];
	CHECK_EQ(f.home, 1);
	CHECK_EQ(f.chunk, 0);
	e = foster_entry(fd, &f, OD_STABLE_INDEX(in.num));
	CHECK(e.flags & OD_MAPF_USED);
	CHECK_EQ(e.loc.chunk, 0);
	e.loc.off += 8;
	patch_foster_entry(fd, &f, OD_STABLE_INDEX(in.num), &e);
	e = foster_entry(fd, &f, OD_STABLE_INDEX(gone.num));
	CHECK(!(e.flags & OD_MAPF_USED));
	e.flags = OD_MAPF_USED;
	e.generation = gone.gen;
	e.loc = (struct od_loc){ .chunk = 0, .block = h0.data_start, .off = 0 };
	patch_foster_entry(fd, &f, OD_STABLE_INDEX(gone.num), &e);
	close(fd);

	snprintf(before, sizeof(before), "%s.before", work);
	copy_file(work, before);
	CHECK_EQ(run(work, 0, FSCK_CHECK_ONLY, 4, &r), FSCK_EXIT_UNCORRECTED);
	CHECK_EQ(r.problems, 2);
	CHECK(reported(0x040020));
	CHECK(reported(0x040021));
	CHECK(files_same(work, before));
	CHECK_EQ(run(work, -1, FSCK_YES, 4, &r), FSCK_EXIT_FIXED);
	CHECK_EQ(r.problems, 2);
	CHECK_EQ(r.fixed, 2);
	CHECK_EQ(r.unfixed, 0);
	CHECK(others_same(work, before, 0));
	CHECK_EQ(run(work, -1, FSCK_CHECK_ONLY, 1 | 4, &r), 0);
	CHECK_EQ(r.problems, 0);
	fd = img_fd(work);
	e = foster_entry(fd, &f, OD_STABLE_INDEX(gone.num));
	CHECK_EQ(e.flags, 0);
	e = foster_entry(fd, &f, OD_STABLE_INDEX(in.num));
	CHECK_EQ(e.flags, OD_MAPF_USED);
	CHECK_EQ(inode_at(fd, e.loc).stable, in.num);
	close(fd);

	CHECK_EQ(fs_open(work, 0, &v), 0);
	CHECK_EQ(fs_read(v, NULL, in, 0, 12, got, &n, &eof), 0);
	CHECK_EQ(n, 11);
	CHECK(memcmp(got, "hello inode", 11) == 0);
	n = 0;
	CHECK_EQ(fs_read(v, NULL, dt, 0, sizeof(got), got, &n, &eof), 0);
	CHECK_EQ(n, sizeof(data));
	CHECK(memcmp(got, data, sizeof(data)) == 0);
	CHECK_EQ(fs_readlink(v, sl, target, sizeof(target), &tl), 0);
	CHECK_EQ(tl, 7);
	CHECK(memcmp(target, "in/line", 7) == 0);
	CHECK_EQ(fs_getattr(v, gone, &a), -ESTALE);
	x = lookup(v, dk, "inline");
	CHECK_EQ(x.num, in.num);
	CHECK_EQ(x.gen, in.gen);
	CHECK_EQ(fs_close(v), 0);
	unlink(before);
	printf("foster map: 0x%06x and 0x%06x found, repaired, clean on the second run\n",
	       0x040020, 0x040021);
}

/* An orphan in a chunk being evacuated (fostered): a file of chunk 1 with
 * 6000 bytes whose inode is in a slot (its first name removed) loses its
 * last entry in the image after chunk 1's map was fostered. fsck links it
 * into lost+found's part in chunk 1 (which the evacuation keeps until
 * nothing else is left), writing only chunk 1; a second -n -x is clean;
 * then the evacuation moves it out with its entry and chunk 1 retires:
 * lost+found/#num keeps its number, generation and bytes, and fsck -x is
 * clean. */
static void case_foster_orphan(void)
{
	struct fs_ino dk, f, root, lf, x;
	struct fs_evac_info ei;
	struct fs_volume *v;
	struct fs_attr a;
	struct fsck_result r;
	uint8_t data[6000];
	char why[256], before[300], nm[32];
	uint32_t unit = 0, off = 0;
	int fd, steps = 0, ret;

	v = foster_setup(&dk);
	fill(data, sizeof(data), 33);
	CHECK_EQ(fs_create(v, NULL, dk, "orph", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, f, 0, sizeof(data), data, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(fs_link(v, NULL, f, dk, "alias"), 0);
	CHECK_EQ(fs_remove(v, NULL, dk, "orph"), 0);
	CHECK_EQ(fs_create(v, NULL, dk, "keep", 0644, FS_CREATE_GUARDED, 0, &x, NULL), 0);
	CHECK_EQ(OD_STABLE_CHUNK(f.num), 1);
	CHECK_EQ(fs_chunk_drain(v, 1, 1, why, sizeof(why)), 0);
	CHECK_EQ(fs_evac_step(v, 1, 0, &ei), 1);
	CHECK_EQ(ei.fostered, 1);
	CHECK_EQ(ei.homed_here, ei.inodes_homed);
	CHECK_EQ(fs_close(v), 0);
	fd = img_fd(work);
	CHECK_EQ(find_entry(fd, 1, "alias", &unit, &off), 0);
	patch_unit(fd, 1, unit, header_of(fd, 1).dir_unit, drop_entry, &off);
	close(fd);

	snprintf(before, sizeof(before), "%s.before", work);
	copy_file(work, before);
	CHECK_EQ(run(work, 1, FSCK_CHECK_ONLY, 4, &r), FSCK_EXIT_UNCORRECTED);
	CHECK(reported(0x040007));
	CHECK(files_same(work, before));
	CHECK_EQ(run(work, -1, FSCK_YES, 4, &r), FSCK_EXIT_FIXED);
	CHECK(reported(0x040007));
	CHECK_EQ(r.unfixed, 0);
	CHECK(others_same(work, before, 1));
	CHECK_EQ(run(work, -1, FSCK_CHECK_ONLY, 1 | 4, &r), 0);
	CHECK_EQ(r.problems, 0);
	unlink(before);

	v = open_adopted(f.num, &root, &lf, nm, sizeof(nm));
	if (!v)
		return;
	check_file(v, lf, nm, data, sizeof(data), 1);
	while ((ret = fs_evac_step(v, 1, 0, &ei)) == 1 && steps < 100)
		steps++;
	CHECK_EQ(ret, 0);
	CHECK_EQ(ei.retired, 1);
	x = lookup(v, lf, nm);
	CHECK_EQ(x.num, f.num);
	CHECK_EQ(x.gen, f.gen);
	CHECK_EQ(fs_getattr(v, x, &a), 0);
	CHECK_EQ(a.nlink, 1);
	check_file(v, lf, nm, data, sizeof(data), 1);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(run(work, -1, FSCK_CHECK_ONLY, 1 | 4, &r), 0);
	CHECK_EQ(r.problems, 0);
	printf("orphan of a fostered chunk: in lost+found's part there, moved out by %d steps, "
	       "the chunk retired\n", steps);
}

static void case_table(void)
{
	uint32_t code, flags, prev = 0;
	const char *msg, *fix;
	unsigned i;

	for (i = 0; fsck_problem_info(i, &code, &msg, &fix, &flags) == 0; i++) {
		CHECK(i == 0 || code > prev);
		CHECK(msg && *msg);
		CHECK(fix || (flags & 0x06)); /* a repair, or FATAL / NOFIX */
		prev = code;
	}
	CHECK(i > 40);
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");

	verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
	snprintf(image, sizeof(image), "%s/fsck_test.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	snprintf(pristine, sizeof(pristine), "%s.pristine", image);
	snprintf(work, sizeof(work), "%s.work", image);
	case_table();
	build();
	/* One open and close rolls the last transaction forward: every copy of
	 * every unit agrees, the dirty lists are spent. */
	copy_file(image, pristine);
	{
		struct fs_volume *v = NULL;
		CHECK_EQ(fs_open(pristine, 0, &v), 0);
		CHECK_EQ(fs_close(v), 0);
	}
	case_clean();
	case_bad_copy();
	case_link_count();
	case_link_count_cross();
	case_bitmap();
	case_free_inode();
	case_header();
	case_both_bad();
	case_counters();
	case_unsettled();
	case_store();
	case_slot();
	case_cross();
	case_orphan();
	case_orphan_chunks();
	case_orphan_dir();
	case_dup();
	case_dangling_next();
	case_inline();
	case_header_geometry();
	case_copies();
	case_foster();
	case_foster_orphan();
	unlink(image);
	unlink(pristine);
	unlink(work);
	free(last.text);
	return test_done("fsck");
}
