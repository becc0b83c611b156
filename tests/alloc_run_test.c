/* fs/chunk.c's data allocation on a volume in holes, with exact extent
 * counts: a file written whole takes a free run that holds it, past the
 * holes; a file appended past holes at its end fills the first (its
 * extent goes on) and takes one run for the rest, where first fit from
 * its end took a hole a piece; a file whose chunk has only holes shorter
 * than it continues in a chunk that has a run (a continuation from block
 * 0) instead of being cut into them; and 8 files each appended 64 KiB
 * per commit, 16 times by turns: each commit's piece finds its
 * neighbour's after the file's end, so the file is moved whole with its
 * append into one run (fs/realloc.c's reallocation at append): one
 * extent each, every byte as written, fsck clean; under alloc_policy
 * first-fit (fs_set_alloc_policy) 16 extents each, as before runs were
 * looked for; a reservation kept across commits (fs/prealloc.c) keeps
 * them whole either way. Small files packed (fs_set_small_pack): files of
 * two directories by turns fill a window's holes in order, a burst of one
 * directory's lies side by side in a free run, holes are filled when no
 * region is left, and off or under first fit they go from the hint. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/fsck/fsck.h"
#include "fs/layout.h"
#include "tests/tap.h"

#define KiB 1024u
#define MiB (1024u * KiB)
#define MAXEXT 256
/* The 8 appenders' moves at append: 15 appends each may move, some find
 * room after a run they moved into (measured; deterministic). */
#define APPEND_MOVES 91

static char image[256];

struct exts {
	int n;
	struct fs_extent e[MAXEXT];
};

static int note_ext(void *ctx, const struct fs_extent *e)
{
	struct exts *x = ctx;

	if (x->n < MAXEXT)
		x->e[x->n] = *e;
	x->n++;
	return 0;
}

static struct exts layout(struct fs_volume *v, struct fs_ino f)
{
	struct exts x = { 0 };

	CHECK_EQ(fs_file_extents(v, f, note_ext, &x), 0);
	return x;
}

static struct fs_ino make_file(struct fs_volume *v, const char *name)
{
	struct fs_ino root, f = { 0 };

	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_create(v, NULL, root, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	return f;
}

static void put(struct fs_volume *v, struct fs_ino f, uint64_t off, size_t len)
{
	static uint8_t buf[4 * MiB];

	memset(buf, (int)(off >> 12) + 7, len);
	CHECK_EQ(fs_write(v, NULL, f, off, len, buf, FS_UNSTABLE, NULL), 0);
}

/* A file of len bytes written whole (delayed allocation: one placement
 * at its commit). */
static struct fs_ino whole_file(struct fs_volume *v, const char *name, size_t len)
{
	struct fs_ino f = make_file(v, name);

	for (size_t off = 0; off < len; off += 4 * MiB)
		put(v, f, off, len - off < 4 * MiB ? len - off : 4 * MiB);
	CHECK_EQ(fs_commit(v, f), 0);
	return f;
}

static struct fs_counters counters(struct fs_volume *v)
{
	struct fs_counters k;

	CHECK_EQ(fs_get_counters(v, &k), 0);
	return k;
}

static struct fs_volume *fresh(uint64_t chunk_size, uint32_t chunks)
{
	struct fs_mkfs_opts o = { .chunk_size = chunk_size, .chunk_count = chunks, .force = 1 };
	struct fs_volume *v = NULL;

	CHECK_EQ(fs_mkfs(image, &o), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	return v;
}

/* n files of 8 blocks side by side from the chunk's hint (h000 ...),
 * then every other one from first on removed: holes of 8 blocks between
 * 8-block files. */
static void holes(struct fs_volume *v, int n, int first)
{
	char name[32];
	struct fs_ino root;

	CHECK_EQ(fs_root(v, &root), 0);
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "h%03d", i);
		whole_file(v, name, 32 * KiB);
	}
	for (int i = first; i < n; i += 2) {
		snprintf(name, sizeof(name), "h%03d", i);
		CHECK_EQ(fs_remove(v, NULL, root, name), 0);
	}
	CHECK_EQ(fs_sync(v), 0); /* the frees committed: free to take */
}

/* 32 holes of 8 blocks before the free rest of the chunk: a file of 64
 * blocks written whole lands past them, in one extent; one of 8 blocks
 * next (the first run from the chunk's hint that holds it). */
static void test_run_not_holes(void)
{
	struct fs_volume *v = fresh(64ull * MiB, 1);
	struct exts big, small, h;

	if (!v)
		return;
	holes(v, 64, 0);
	{
		struct fs_ino root, last;
		CHECK_EQ(fs_root(v, &root), 0);
		CHECK_EQ(fs_lookup(v, NULL, root, "h063", &last, NULL), 0);
		h = layout(v, last);
		CHECK_EQ(h.n, 1);
	}
	big = layout(v, whole_file(v, "big", 256 * KiB));
	CHECK_EQ(big.n, 1);
	CHECK_EQ(big.e[0].len, 64);
	CHECK(big.e[0].pblk >= h.e[0].pblk + h.e[0].len); /* past every hole */
	small = layout(v, whole_file(v, "small", 32 * KiB));
	CHECK_EQ(small.n, 1);
	CHECK_EQ(small.e[0].len, 8);
	CHECK_EQ(small.e[0].pblk, big.e[0].pblk + 64); /* from the hint, past big */
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
}

/* A file of 8 blocks with holes of 8 blocks after its end, between other
 * files, appended 64 blocks: moved whole with its append into one run of
 * 72 past the holes (reallocation at append), its old blocks freed. Under
 * first fit, another such file fills the hole at its end and a hole a
 * piece after it: 8 extents. */
static void test_append_past_holes(void)
{
	struct fs_volume *v = fresh(64ull * MiB, 1);
	struct fs_ino root, f;
	struct exts x;
	uint32_t old;

	if (!v)
		return;
	CHECK_EQ(fs_root(v, &root), 0);
	holes(v, 64, 1);
	CHECK_EQ(fs_lookup(v, NULL, root, "h000", &f, NULL), 0);
	x = layout(v, f);
	CHECK_EQ(x.n, 1);
	old = x.e[0].pblk;
	put(v, f, 32 * KiB, 256 * KiB);
	CHECK_EQ(fs_commit(v, f), 0);
	x = layout(v, f);
	CHECK_EQ(x.n, 1);
	CHECK_EQ(x.e[0].len, 72);
	CHECK_EQ(x.e[0].pblk, old + 63 * 8); /* past the holes: h063's, the free rest */
	CHECK_EQ(counters(v).append_moves, 1);
	CHECK_EQ(counters(v).append_move_blocks, 72);
	fs_set_alloc_policy(v, FS_ALLOC_FIRST_FIT);
	CHECK_EQ(counters(v).alloc_first_fit, 1);
	CHECK_EQ(fs_lookup(v, NULL, root, "h002", &f, NULL), 0);
	put(v, f, 32 * KiB, 256 * KiB);
	CHECK_EQ(fs_commit(v, f), 0);
	CHECK_EQ(layout(v, f).n, 8);
	CHECK_EQ(counters(v).append_moves, 1);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
}

/* A chunk with only holes of 8 blocks outside its zones and a second
 * chunk with room: a file of 64 blocks continues in the second (one
 * extent there, a continuation from block 0), not cut into 8 holes. */
static void test_continue_for_a_run(void)
{
	struct fs_volume *v = fresh(16ull * MiB, 2);
	struct fs_ino root, f;
	char name[32];
	struct exts x;
	int n = 0, in0;

	if (!v)
		return;
	CHECK_EQ(fs_root(v, &root), 0);
	/* 8-block files side by side until one lands in chunk 1 */
	do {
		snprintf(name, sizeof(name), "h%04d", n++);
		x = layout(v, whole_file(v, name, 32 * KiB));
		CHECK_EQ(x.n, 1);
	} while (x.e[0].chunk == 0 && n < 4096);
	in0 = n - 1;
	CHECK(in0 > 16);
	/* every other one of chunk 0's removed: holes of 8 blocks */
	for (int i = 0; i < in0; i += 2) {
		snprintf(name, sizeof(name), "h%04d", i);
		CHECK_EQ(fs_remove(v, NULL, root, name), 0);
	}
	CHECK_EQ(fs_sync(v), 0);
	f = whole_file(v, "wants-a-run", 256 * KiB);
	x = layout(v, f);
	CHECK_EQ(x.n, 1);
	CHECK_EQ(x.e[0].chunk, 1);
	CHECK_EQ(x.e[0].lblk, 0);
	CHECK_EQ(x.e[0].len, 64);
	/* one of 8 blocks fits a hole of chunk 0 */
	x = layout(v, whole_file(v, "fits-a-hole", 32 * KiB));
	CHECK_EQ(x.n, 1);
	CHECK_EQ(x.e[0].chunk, 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
}

/* The volume checks clean (fsck, both copies, across chunks). */
static void fsck_clean(void)
{
	struct fsck_opts fo = { .force = 1, .cross = 1, .both_copies = 1 };
	struct fsck_result res;

	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(res.exit_code, 0);
}

static int count_outside(void *ctx, uint32_t chunk, uint32_t start, uint32_t len, int zone)
{
	(void)chunk;
	(void)start;
	if (!zone)
		*(uint64_t *)ctx += len;
	return 0;
}

/* Chunk 0's free blocks outside its metadata zones. */
static uint64_t outside_free(struct fs_volume *v)
{
	uint64_t n = 0;

	CHECK_EQ(fs_chunk_free_runs(v, 0, count_outside, &n), 0);
	return n;
}

/* A file taking every free block outside chunk 0's zones, written a
 * block at a time with delayed allocation off: each block goes on from
 * the one before, else into the first free block from there. */
static void fill_outside(struct fs_volume *v, const char *name)
{
	struct fs_ino f = make_file(v, name);
	uint64_t n = outside_free(v);

	fs_set_dalloc_limit(v, 0);
	for (uint64_t b = 0; b < n; b++)
		put(v, f, b * 4096, 4096);
	CHECK_EQ(fs_commit(v, f), 0);
	fs_set_dalloc_limit(v, 64u << 20);
	CHECK_EQ(outside_free(v), 0);
}

/* The first block of the one extent of the file name. */
static uint32_t first_block(struct fs_volume *v, const char *name)
{
	struct fs_ino root, f;
	struct exts x;

	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_lookup(v, NULL, root, name, &f, NULL), 0);
	x = layout(v, f);
	CHECK_EQ(x.n, 1);
	return x.n ? x.e[0].pblk : 0;
}

/* A file of len bytes, more than a block, in the directory dir, written
 * whole and committed (one placement), its first block last: a first
 * write past 0 keeps it out of its directory entry (fs/file.c's
 * try_inline), which an entry's slack could hold. */
static struct fs_ino small_file(struct fs_volume *v, struct fs_ino dir, const char *name,
				size_t len)
{
	struct fs_ino f = { 0 };

	CHECK_EQ(fs_create(v, NULL, dir, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	put(v, f, 4 * KiB, len - 4 * KiB);
	put(v, f, 0, 4 * KiB);
	CHECK_EQ(fs_commit(v, f), 0);
	return f;
}

/* n small files (2, 3, 4, 2, ... blocks) written one after another, file
 * i in dirs[i % ndirs]: the number of them that lie right after the one
 * before (the first at *at, its pblk; the i-th at pos[i] when pos), all in
 * one extent of chunk 0. */
static int small_files(struct fs_volume *v, const struct fs_ino *dirs, int ndirs,
		       const char *prefix, int n, uint32_t *at, uint32_t *pos)
{
	uint32_t next = 0;
	int side_by_side = 0;
	char name[32];

	for (int i = 0; i < n; i++) {
		struct exts x;
		snprintf(name, sizeof(name), "%s%02d", prefix, i);
		x = layout(v, small_file(v, dirs[i % ndirs], name, (2 + i % 3) * 4 * KiB));
		CHECK_EQ(x.n, 1);
		CHECK_EQ(x.e[0].chunk, 0);
		CHECK_EQ(x.e[0].len, (uint32_t)(2 + i % 3));
		if (i == 0)
			*at = x.e[0].pblk;
		else
			side_by_side += x.e[0].pblk == next;
		if (pos)
			pos[i] = x.e[0].pblk;
		next = x.e[0].pblk + x.e[0].len;
	}
	return side_by_side;
}

/* Small files packed (fs_set_small_pack, regions of 1 MiB: 256 blocks).
 * A chunk whose room outside its zones is 16 holes of 8 blocks (in one
 * window of 256, half free) and, after them, one run of 264. Files from
 * two old directories by turns (3 creates each: not yet a burst) fill the
 * window's holes in order; a new directory's 20 files lie side by side
 * from the run's first block, from its first file on (fs/dir_fill.c); a
 * lone file into an old directory goes on in the holes, and the new
 * directory's next files go on in its region after its last. 8 files in
 * a row of one old directory, each made long after the one before: a
 * burst from the 8th (the placements in a row). Without packing (and
 * under first fit) small files go from the chunk's hint into the first
 * holes; once no region is left, a small file fills a hole again. */
static void test_small_packed(void)
{
	struct fs_volume *v = fresh(16ull * MiB, 1);
	struct fs_ino root, dirs[3];
	struct fs_counters k0;
	uint32_t hole, run, at, pos[20];
	char name[32];
	struct exts x;

	if (!v)
		return;
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(counters(v).small_pack, FS_SMALL_PACK_DEFAULT);
	/* (d0 and d1 made first: old directories by the time their files
	 * come, 34 creates later) */
	for (int i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &dirs[i], NULL), 0);
	}
	for (int i = 0; i < 32; i++) {
		snprintf(name, sizeof(name), "h%03d", i);
		whole_file(v, name, 32 * KiB);
	}
	whole_file(v, "big", 1 * MiB);
	fill_outside(v, "filler");
	hole = first_block(v, "h001");
	run = first_block(v, "h031");
	CHECK_EQ(first_block(v, "big"), run + 8);
	for (int i = 1; i < 32; i += 2) {
		snprintf(name, sizeof(name), "h%03d", i);
		CHECK_EQ(fs_remove(v, NULL, root, name), 0);
	}
	CHECK_EQ(fs_remove(v, NULL, root, "big"), 0);
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(outside_free(v), 16 * 8 + 256);
	/* (every cursor starts again, as at open: the h files took them) */
	CHECK_EQ(fs_set_small_pack(v, FS_SMALL_PACK_DEFAULT), 0);

	/* by turns: 2 + 3 blocks in h001's hole, 4 + 2 in h003's, 3 + 4 in
	 * h005's */
	k0 = counters(v);
	CHECK_EQ(small_files(v, dirs, 2, "t", 6, &at, pos), 3);
	CHECK_EQ(at, hole);
	CHECK_EQ(pos[5], hole + 2 * 16 + 3);
	CHECK_EQ(counters(v).small_packs - k0.small_packs, 6);
	CHECK_EQ(counters(v).pack_regions - k0.pack_regions, 1);

	/* a new directory: its 20 files side by side from the run's first
	 * block, from the first; one region taken */
	CHECK_EQ(fs_mkdir(v, NULL, root, "d2", 0755, &dirs[2], NULL), 0);
	k0 = counters(v);
	CHECK_EQ(small_files(v, &dirs[2], 1, "p", 20, &at, pos), 19);
	CHECK_EQ(at, run);
	CHECK_EQ(pos[19], run + 59 - 3);
	CHECK_EQ(counters(v).small_packs - k0.small_packs, 20);
	CHECK_EQ(counters(v).pack_regions - k0.pack_regions, 1);
	printf("# 20 small files of a new directory: from block %u (the run), side by side\n",
	       at);

	/* a lone file into an old directory (d1: 20 creates since its last):
	 * the next hole that holds it, h007's; then d2's next files after its
	 * last (no region taken) */
	k0 = counters(v);
	CHECK_EQ(small_files(v, &dirs[1], 1, "l", 1, &at, NULL), 0);
	CHECK_EQ(at, hole + 3 * 16);
	CHECK_EQ(small_files(v, &dirs[2], 1, "p2", 3, &at, NULL), 2);
	CHECK_EQ(at, run + 59);
	CHECK_EQ(counters(v).small_packs - k0.small_packs, 4);
	CHECK_EQ(counters(v).pack_regions - k0.pack_regions, 0);

	/* an old directory's files each long after the one before (a file
	 * made in root between them, 4 creates: no run of creates): the
	 * holes after l00 (h007's, ...), then from the 8th in a row in d0 a
	 * burst (the placements in a row), in the run after d2's files */
	k0 = counters(v);
	for (int i = 0; i < 8; i++) {
		for (int k = 0; k < 4; k++) {
			snprintf(name, sizeof(name), "e%d%d", i, k);
			CHECK_EQ(fs_create(v, NULL, root, name, 0644, FS_CREATE_GUARDED, 0, NULL, NULL),
				 0);
		}
		snprintf(name, sizeof(name), "o%02d", i);
		x = layout(v, small_file(v, dirs[0], name, (2 + i % 3) * 4 * KiB));
		CHECK_EQ(x.n, 1);
		pos[i] = x.n ? x.e[0].pblk : 0;
	}
	CHECK_EQ(pos[0], hole + 3 * 16 + 2);
	CHECK_EQ(pos[1], hole + 3 * 16 + 4);
	CHECK_EQ(pos[7], run + 59 + 9);
	CHECK_EQ(counters(v).small_packs - k0.small_packs, 8);

	/* packing off: from the hint (the filler's end, round to the
	 * start), each into the first hole from there that holds it: the
	 * rest of h001's, of h013's, h015's */
	k0 = counters(v);
	CHECK_EQ(fs_set_small_pack(v, 0), 0);
	CHECK_EQ(counters(v).small_pack, 0);
	CHECK_EQ(small_files(v, dirs, 1, "q", 3, &at, pos), 0);
	CHECK_EQ(at, hole + 5);
	CHECK_EQ(pos[1], hole + 6 * 16 + 2);
	CHECK_EQ(pos[2], hole + 7 * 16);
	/* first fit, packing on: no packing, the first free blocks from
	 * the hint (after q02) */
	fs_set_alloc_policy(v, FS_ALLOC_FIRST_FIT);
	CHECK_EQ(fs_set_small_pack(v, FS_SMALL_PACK_DEFAULT), 0);
	x = layout(v, small_file(v, root, "f00", 8 * KiB));
	CHECK_EQ(x.n, 1);
	CHECK_EQ(x.e[0].pblk, hole + 7 * 16 + 4);
	CHECK_EQ(counters(v).small_packs, k0.small_packs);
	fs_set_alloc_policy(v, FS_ALLOC_RUNS);

	/* no region left: the hole t02 leaves (in h003's) is filled */
	fill_outside(v, "filler2");
	CHECK_EQ(fs_remove(v, NULL, dirs[0], "t02"), 0);
	CHECK_EQ(fs_sync(v), 0);
	k0 = counters(v);
	CHECK_EQ(small_files(v, dirs, 1, "r", 1, &at, NULL), 0);
	CHECK_EQ(at, hole + 16);
	CHECK_EQ(counters(v).small_packs, k0.small_packs);
	CHECK_EQ(counters(v).pack_regions, k0.pack_regions);
	CHECK_EQ(fs_set_small_pack(v, 60 * KiB), -EINVAL);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	fsck_clean();
}

/* The longest free run of chunk 0's metadata zone in its lower half. */
struct zone_run {
	uint32_t half, start, len;
};

static int longest_zone_run(void *ctx, uint32_t chunk, uint32_t start, uint32_t len, int zone)
{
	struct zone_run *z = ctx;

	if (chunk == 0 && zone && start < z->half && len > z->len) {
		z->start = start;
		z->len = len;
	}
	return 0;
}

/* A burst with no free run outside the zones (all of it taken): a new
 * directory's 100 files (299 blocks) go side by side into the zone's run
 * of free pairs, one region, from halfway between the run's start and
 * its last 256 blocks (its units grow from the start up). */
static void test_small_packed_pairs(void)
{
	struct fs_volume *v = fresh(64ull * MiB, 1);
	struct zone_run z = { .half = 64 * MiB / 4096 / 2 };
	struct fs_ino root, d;
	struct fs_counters k0;
	uint32_t at, pos[100];

	if (!v)
		return;
	CHECK_EQ(fs_root(v, &root), 0);
	fill_outside(v, "filler");
	CHECK_EQ(fs_mkdir(v, NULL, root, "d", 0755, &d, NULL), 0);
	CHECK_EQ(fs_chunk_free_runs(v, 0, longest_zone_run, &z), 0);
	k0 = counters(v);
	CHECK_EQ(small_files(v, &d, 1, "p", 100, &at, pos), 99);
	/* (d's first unit, made with its first entry, takes the run's
	 * first 4 blocks) */
	CHECK_EQ(at, z.start + 4 + (z.len - 4 - 256) / 2);
	CHECK(pos[99] + 3 <= z.start + z.len);
	CHECK_EQ(counters(v).small_packs - k0.small_packs, 100);
	CHECK_EQ(counters(v).pack_regions - k0.pack_regions, 1);
	printf("# 100 small files of a new directory, nothing free outside the zones: from "
	       "block %u, the zone's free run [%u, %u)\n", at, z.start, z.start + z.len);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	fsck_clean();
}

/* A chunk whose room outside its zones is in holes of 2 MiB and a second
 * chunk with room: a file of 16 MiB written whole continues in the second
 * in one extent (a long write takes runs of 8 MiB anywhere before runs of
 * 1 MiB, which took the first chunk's holes, 2 MiB a piece); under first
 * fit, the holes from the hint on: 9 extents. */
static void test_long_run(enum fs_alloc_policy policy, int want_n)
{
	struct fs_volume *v = fresh(64ull * MiB, 2);
	struct fs_ino root;
	char name[32];
	struct exts x;
	int n = 0;

	if (!v)
		return;
	CHECK_EQ(fs_root(v, &root), 0);
	do {
		snprintf(name, sizeof(name), "m%03d", n++);
		x = layout(v, whole_file(v, name, 2 * MiB));
	} while (x.n == 1 && x.e[0].chunk == 0 && n < 64);
	for (int i = 0; i < n - 1; i += 2) {
		snprintf(name, sizeof(name), "m%03d", i);
		CHECK_EQ(fs_remove(v, NULL, root, name), 0);
	}
	CHECK_EQ(fs_sync(v), 0);
	fs_set_alloc_policy(v, policy);
	x = layout(v, whole_file(v, "long", 16 * MiB));
	printf("# 16 MiB past holes of 2 MiB (%s): %d extents, the first %u blocks in chunk %u\n",
	       policy == FS_ALLOC_RUNS ? "runs" : "first fit", x.n, x.e[0].len, x.e[0].chunk);
	CHECK_EQ(x.n, want_n);
	if (want_n == 1) {
		CHECK_EQ(x.e[0].chunk, 1);
		CHECK_EQ(x.e[0].lblk, 0);
		CHECK_EQ(x.e[0].len, 4096);
	}
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	fsck_clean();
}

/* File f holds pieces of 64 KiB as put() wrote them. */
static void check_bytes(struct fs_volume *v, struct fs_ino f, int pieces)
{
	static uint8_t buf[64 * KiB];
	size_t got;
	int eof, bad = 0;

	for (int r = 0; r < pieces; r++) {
		uint64_t off = (uint64_t)r * 64 * KiB;

		CHECK_EQ(fs_read(v, NULL, f, off, sizeof(buf), buf, &got, &eof), 0);
		CHECK_EQ(got, sizeof(buf));
		for (size_t i = 0; i < got; i++)
			bad += buf[i] != (uint8_t)(r * 16 + 7);
	}
	CHECK_EQ(bad, 0);
}

/* 8 files, each appended 64 KiB and committed, by turns, 16 times. */
static void appenders(struct fs_volume *v, const char *prefix, int reserve, int *ext)
{
	struct fs_ino f[8];
	char name[32];
	uint64_t got;

	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "%s%d", prefix, i);
		f[i] = make_file(v, name);
		if (reserve) {
			CHECK_EQ(fs_prealloc(v, f[i], 16 * 64 * KiB, 0, &got), 0);
			CHECK_EQ(got, 256);
		}
	}
	for (int r = 0; r < 16; r++)
		for (int i = 0; i < 8; i++) {
			put(v, f[i], (uint64_t)r * 64 * KiB, 64 * KiB);
			CHECK_EQ(fs_commit(v, f[i]), 0);
		}
	for (int i = 0; i < 8; i++) {
		ext[i] = layout(v, f[i]).n;
		check_bytes(v, f[i], 16);
	}
}

/* The appenders on a fresh volume under policy, with or without a
 * reservation each: their extents, the moves at append. */
static void appenders_on_fresh(enum fs_alloc_policy policy, uint64_t append_max, int reserve,
			       int want_ext, uint64_t want_moves)
{
	struct fs_volume *v = fresh(64ull * MiB, 1);
	int ext[8];

	if (!v)
		return;
	fs_set_alloc_policy(v, policy);
	fs_set_realloc_append(v, append_max);
	CHECK_EQ(counters(v).realloc_append_max, append_max);
	appenders(v, "a", reserve, ext);
	printf("# appended by turns (%s, moves up to %" PRIu64 " KiB%s): %d %d %d %d %d %d %d %d"
	       " extents, %" PRIu64 " moves at append, %" PRIu64 " blocks\n",
	       policy == FS_ALLOC_RUNS ? "runs" : "first fit", append_max >> 10,
	       reserve ? ", reserved" : "", ext[0], ext[1], ext[2], ext[3], ext[4], ext[5], ext[6],
	       ext[7], counters(v).append_moves, counters(v).append_move_blocks);
	printf("# ... the longest placement under one hold of the lock: %" PRIu64 " us\n",
	       counters(v).dalloc_hold_max_us);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(ext[i], want_ext);
	CHECK_EQ(counters(v).append_moves, want_moves);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	fsck_clean();
}

static void test_appenders(void)
{
	appenders_on_fresh(FS_ALLOC_RUNS, FS_REALLOC_APPEND_DEFAULT, 0, 1, APPEND_MOVES);
	appenders_on_fresh(FS_ALLOC_RUNS, FS_REALLOC_APPEND_DEFAULT, 1, 1, 0);
	appenders_on_fresh(FS_ALLOC_RUNS, 0, 0, 16, 0); /* (the move off) */
	appenders_on_fresh(FS_ALLOC_FIRST_FIT, FS_REALLOC_APPEND_DEFAULT, 0, 16, 0);
}

int main(void)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(image, sizeof(image), "%s/alloc_run_test.XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(image);
	if (fd < 0)
		return 99;
	close(fd);
	test_run_not_holes();
	test_append_past_holes();
	test_continue_for_a_run();
	test_small_packed();
	test_small_packed_pairs();
	test_appenders();
	test_long_run(FS_ALLOC_RUNS, 1);
	test_long_run(FS_ALLOC_FIRST_FIT, 9);
	unlink(image);
	return test_done("alloc_run");
}
