/* fs/realloc.c, reallocation on sequential rewrite, on a one-chunk volume:
 * a file written in 8 pieces (between another file's) and rewritten whole
 * from its start, UNSTABLE, ends in one extent at its commit, in blocks
 * none of its old pieces held, with the free count as before and the
 * counters moved; written out of order within the window it is too; the
 * same rewrite of a file in one extent, with reallocation off, of a file
 * below the threshold, or one that jumps past the window is written in
 * place (the same blocks); a file with a second link is reallocated and
 * reads the same through both names; when no free run outside the
 * metadata zones is long enough the rewrite is written in place and
 * counted; on two chunks, the first full outside its zones, the rewrite
 * goes to one run of the second (a continuation from block 0). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/layout.h"
#include "tests/tap.h"
#include "tests/vol_util.h"

#define KiB 1024u
#define PIECE (32 * KiB) /* 8 blocks */
#define MAXEXT 64

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

/* Does any block of a lie in b? */
static int overlaps(const struct exts *a, const struct exts *b)
{
	for (int i = 0; i < a->n && i < MAXEXT; i++)
		for (int j = 0; j < b->n && j < MAXEXT; j++)
			if (a->e[i].chunk == b->e[j].chunk && a->e[i].pblk < b->e[j].pblk + b->e[j].len &&
			    b->e[j].pblk < a->e[i].pblk + a->e[i].len)
				return 1;
	return 0;
}

static int same_layout(const struct exts *a, const struct exts *b)
{
	if (a->n != b->n)
		return 0;
	for (int i = 0; i < a->n && i < MAXEXT; i++)
		if (a->e[i].lblk != b->e[i].lblk || a->e[i].pblk != b->e[i].pblk ||
		    a->e[i].len != b->e[i].len || a->e[i].chunk != b->e[i].chunk)
			return 0;
	return 1;
}

static void fill(uint8_t *buf, size_t len, uint64_t off, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(((off + i) * 131 + seed * 7 + ((off + i) >> 12)) & 0xff);
}

static struct fs_ino make_file(struct fs_volume *v, const char *name)
{
	struct fs_ino root, f = { 0 };

	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_create(v, NULL, root, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	return f;
}

static int put(struct fs_volume *v, struct fs_ino f, uint64_t off, size_t len, unsigned seed,
	       enum fs_stable_how how)
{
	static uint8_t buf[4 << 20];

	fill(buf, len, off, seed);
	return fs_write(v, NULL, f, off, len, buf, how, NULL);
}

/* Does f read back as seed's bytes for [0, size), and exactly size? */
static int reads_back(struct fs_volume *v, struct fs_ino f, uint64_t size, unsigned seed)
{
	static uint8_t got[1 << 20], want[1 << 20];
	uint64_t off = 0;

	for (;;) {
		size_t n = 0;
		int eof = 0;
		if (fs_read(v, NULL, f, off, sizeof(got), got, &n, &eof) < 0)
			return 0;
		fill(want, n, off, seed);
		if (memcmp(got, want, n) != 0)
			return 0;
		off += n;
		if (eof || n == 0)
			break;
	}
	return off == size;
}

static struct fs_counters counters(struct fs_volume *v)
{
	struct fs_counters k;

	CHECK_EQ(fs_get_counters(v, &k), 0);
	return k;
}

/* f and a spacer written by turns (the spacer appended to, 8 KiB at a
 * time), pieces of piece bytes, with delayed allocation off: f in n
 * extents of piece each. A spacer used before may have room after its
 * end (fs/chunk.c's fit) and stop cutting f: each call a fresh one. Small
 * files are not packed meanwhile (fs_set_small_pack): the spacer's first
 * 16 KiB go from the chunk's hint, beside f's pieces, not into a region
 * of their own with room for its appends after them. */
static void fragment(struct fs_volume *v, struct fs_ino f, struct fs_ino spacer, int n,
		     size_t piece, unsigned seed)
{
	struct fs_attr a;

	fs_set_dalloc_limit(v, 0);
	CHECK_EQ(fs_set_small_pack(v, 0), 0);
	CHECK_EQ(fs_getattr(v, spacer, &a), 0);
	if (a.size == 0) {
		/* (a fresh file's first write stays inline: out of the way) */
		CHECK_EQ(put(v, spacer, 0, 8 * KiB, 99, FS_UNSTABLE), 0);
		CHECK_EQ(put(v, spacer, 8 * KiB, 8 * KiB, 99, FS_UNSTABLE), 0);
		a.size = 16 * KiB;
	}
	for (int i = 0; i < n; i++) {
		CHECK_EQ(put(v, f, (uint64_t)i * piece, piece, seed, FS_UNSTABLE), 0);
		CHECK_EQ(put(v, spacer, a.size + (uint64_t)i * 8 * KiB, 8 * KiB, 99, FS_UNSTABLE),
			 0);
	}
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(fs_set_small_pack(v, FS_SMALL_PACK_DEFAULT), 0);
	fs_set_dalloc_limit(v, 64u << 20);
}

/* The whole file rewritten in order, UNSTABLE, in pieces of PIECE. */
static void rewrite(struct fs_volume *v, struct fs_ino f, uint64_t size, unsigned seed)
{
	for (uint64_t off = 0; off < size; off += PIECE)
		CHECK_EQ(put(v, f, off, size - off < PIECE ? (size_t)(size - off) : PIECE, seed,
			     FS_UNSTABLE),
			 0);
}

/* The direct case: 8 pieces, rewritten whole, one extent after. */
static void test_gathered(struct fs_volume *v)
{
	struct fs_ino f = make_file(v, "frag"), s = make_file(v, "spacer");
	struct fs_counters k0 = counters(v), k;
	struct exts before, after;
	uint64_t size = 8 * PIECE, free0;

	fragment(v, f, s, 8, PIECE, 1);
	before = layout(v, f);
	CHECK_EQ(before.n, 8);
	free0 = free_blocks(v);
	rewrite(v, f, size, 2);
	/* Held whole, nothing placed: the old blocks still map it. */
	k = counters(v);
	CHECK_EQ(k.dalloc_files, 1);
	CHECK_EQ(k.dalloc_bytes, size);
	after = layout(v, f);
	CHECK(same_layout(&before, &after));
	CHECK(reads_back(v, f, size, 2)); /* from the buffer */
	CHECK_EQ(fs_commit(v, f), 0);
	after = layout(v, f);
	CHECK_EQ(after.n, 1);
	CHECK_EQ(after.e[0].lblk, 0);
	CHECK_EQ(after.e[0].len, size / 4096);
	CHECK(!overlaps(&before, &after)); /* not one old block reused */
	k = counters(v);
	CHECK_EQ(k.reallocs - k0.reallocs, 1);
	CHECK_EQ(k.realloc_blocks - k0.realloc_blocks, size / 4096);
	CHECK_EQ(k.realloc_no_run - k0.realloc_no_run, 0);
	CHECK_EQ(k.dalloc_files, 0);
	/* 64 taken, the 64 old ones given back once the commit's
	 * transaction is done, and the extent unit (with its mirror) that
	 * 8 extents needed and 1 does not. */
	CHECK_EQ(free_blocks(v), free0 + 2);
	CHECK(reads_back(v, f, size, 2));
	CHECK(reads_back(v, s, 16 * KiB + 8 * 8 * KiB, 99));
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	/* Written over once more, now in one extent: in place. */
	before = after;
	rewrite(v, f, size, 3);
	CHECK_EQ(fs_commit(v, f), 0);
	after = layout(v, f);
	CHECK(same_layout(&before, &after));
	CHECK_EQ(counters(v).reallocs - k0.reallocs, 1);
	CHECK(reads_back(v, f, size, 3));
	CHECK_EQ(free_blocks(v), free0 + 2);
}

/* Pieces that arrive out of order within the window still make a whole
 * rewrite; one that starts past the window ends it (in place). */
static void test_order(struct fs_volume *v)
{
	struct fs_ino f = make_file(v, "order"), g = make_file(v, "jump"),
		      s = make_file(v, "spacer2");
	struct fs_counters k0 = counters(v);
	struct exts before, after;
	uint64_t size = 8 * PIECE;

	fragment(v, f, s, 8, PIECE, 4);
	CHECK_EQ(put(v, f, 0, PIECE, 5, FS_UNSTABLE), 0);
	CHECK_EQ(put(v, f, 2 * PIECE, PIECE, 5, FS_UNSTABLE), 0);
	CHECK_EQ(put(v, f, 1 * PIECE, PIECE, 5, FS_UNSTABLE), 0);
	for (int i = 7; i >= 3; i--)
		CHECK_EQ(put(v, f, (uint64_t)i * PIECE, PIECE, 5, FS_UNSTABLE), 0);
	CHECK_EQ(fs_commit(v, f), 0);
	CHECK_EQ(layout(v, f).n, 1);
	CHECK_EQ(counters(v).reallocs - k0.reallocs, 1);
	CHECK(reads_back(v, f, size, 5));

	/* 8 pieces of 3 MiB: a write 18 MiB on from the first piece is
	 * past the 16 MiB window. */
	fragment(v, g, s, 8, 3u << 20, 6);
	before = layout(v, g);
	CHECK_EQ(before.n, 8);
	CHECK_EQ(put(v, g, 0, PIECE, 7, FS_UNSTABLE), 0);
	CHECK_EQ(put(v, g, 18u << 20, 4u << 20, 7, FS_UNSTABLE), 0);
	CHECK_EQ(put(v, g, 22u << 20, 2u << 20, 7, FS_UNSTABLE), 0);
	for (uint64_t off = PIECE; off < (18u << 20); off += 2u << 20)
		CHECK_EQ(put(v, g, off, (18u << 20) - off < (2u << 20) ? (size_t)((18u << 20) - off)
									: 2u << 20,
			     7, FS_UNSTABLE),
			 0);
	CHECK_EQ(fs_commit(v, g), 0);
	after = layout(v, g);
	CHECK(same_layout(&before, &after));
	CHECK_EQ(counters(v).reallocs - k0.reallocs, 1);
	CHECK(reads_back(v, g, 24u << 20, 7));
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
}

/* Off, and below the threshold: in place. A second link: reallocated,
 * the same bytes through both names. */
static void test_threshold_links(struct fs_volume *v)
{
	struct fs_ino f = make_file(v, "off"), g = make_file(v, "two"), h = make_file(v, "linked"),
		      s = make_file(v, "spacer3"), s2 = make_file(v, "spacer3b"),
		      s3 = make_file(v, "spacer3c"), root, via;
	struct fs_counters k0 = counters(v);
	struct exts before, after;
	struct fs_attr a;
	uint64_t size = 8 * PIECE;

	fragment(v, f, s, 8, PIECE, 8);
	before = layout(v, f);
	fs_set_realloc(v, 0);
	CHECK_EQ(counters(v).realloc_min_extents, 0);
	rewrite(v, f, size, 9);
	CHECK_EQ(counters(v).dalloc_files, 0); /* not held: written in place at once */
	CHECK_EQ(fs_commit(v, f), 0);
	after = layout(v, f);
	CHECK(same_layout(&before, &after));
	CHECK(reads_back(v, f, size, 9));

	/* 2 extents against a threshold of 3 */
	fs_set_realloc(v, 3);
	fragment(v, g, s2, 2, PIECE, 10);
	before = layout(v, g);
	CHECK_EQ(before.n, 2);
	rewrite(v, g, 2 * PIECE, 11);
	CHECK_EQ(fs_commit(v, g), 0);
	after = layout(v, g);
	CHECK(same_layout(&before, &after));
	CHECK(reads_back(v, g, 2 * PIECE, 11));
	CHECK_EQ(counters(v).reallocs, k0.reallocs);
	fs_set_realloc(v, 2);
	CHECK_EQ(counters(v).realloc_min_extents, 2);

	fragment(v, h, s3, 4, PIECE, 12);
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_link(v, NULL, h, root, "linked2"), 0);
	before = layout(v, h);
	CHECK_EQ(before.n, 4);
	rewrite(v, h, 4 * PIECE, 13);
	CHECK_EQ(fs_commit(v, h), 0);
	after = layout(v, h);
	CHECK_EQ(after.n, 1);
	CHECK(!overlaps(&before, &after));
	CHECK_EQ(counters(v).reallocs - k0.reallocs, 1);
	CHECK_EQ(fs_lookup(v, NULL, root, "linked2", &via, &a), 0);
	CHECK_EQ(via.num, h.num);
	CHECK_EQ(a.nlink, 2);
	CHECK(reads_back(v, via, 4 * PIECE, 13));
	CHECK(reads_back(v, h, 4 * PIECE, 13));
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
}

struct outside {
	uint64_t blocks, longest;
};

static int note_run(void *ctx, uint32_t chunk, uint32_t start, uint32_t len, int zone)
{
	struct outside *o = ctx;

	(void)chunk;
	(void)start;
	if (!zone) {
		o->blocks += len;
		if (len > o->longest)
			o->longest = len;
	}
	return 0;
}

static struct outside outside_free(struct fs_volume *v)
{
	struct outside o = { 0, 0 };

	CHECK_EQ(fs_chunk_free_runs(v, 0, note_run, &o), 0);
	return o;
}

/* blocks blocks of f, written a block at a time with delayed allocation
 * off: each allocation of one block takes a free block outside the
 * metadata zones first (one of more would take a run of the zones before
 * holes shorter than itself, fs/chunk.c), so they fill the holes there. */
static void fill_outside(struct fs_volume *v, struct fs_ino f, uint64_t blocks, unsigned seed)
{
	fs_set_dalloc_limit(v, 0);
	for (uint64_t b = 0; b < blocks; b++)
		CHECK_EQ(put(v, f, b * 4096, 4096, seed, FS_UNSTABLE), 0);
	CHECK_EQ(fs_commit(v, f), 0);
	fs_set_dalloc_limit(v, 64u << 20);
}

/* No run long enough: the free room outside the zones filled but for the
 * spacer's holes (4 blocks at most); the rewrite is written in place and counted. */
static void test_no_run(struct fs_volume *v)
{
	struct fs_ino f = make_file(v, "norun"), s = make_file(v, "spacer4"),
		      fill_f = make_file(v, "filler"), root;
	struct fs_counters k0 = counters(v);
	struct exts before, after;
	struct outside o;
	uint64_t size = 8 * PIECE, free0;

	fragment(v, f, s, 8, PIECE, 14);
	before = layout(v, f);
	CHECK_EQ(before.n, 8);
	o = outside_free(v);
	CHECK(o.blocks > 0);
	/* the rest outside the zones, taken by one file */
	fill_outside(v, fill_f, o.blocks, 15);
	CHECK_EQ(outside_free(v).blocks, 0);
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_remove(v, NULL, root, "spacer4"), 0);
	CHECK_EQ(fs_sync(v), 0);
	o = outside_free(v);
	CHECK_EQ(o.blocks, 4 + 8 * 2); /* its first 16 KiB, then 8 KiB a time */
	CHECK_EQ(o.longest, 4);
	free0 = free_blocks(v);
	rewrite(v, f, size, 16);
	CHECK_EQ(counters(v).dalloc_files, 1); /* held: a candidate */
	CHECK_EQ(fs_commit(v, f), 0);
	after = layout(v, f);
	CHECK(same_layout(&before, &after));
	CHECK_EQ(counters(v).reallocs, k0.reallocs);
	CHECK_EQ(counters(v).realloc_no_run - k0.realloc_no_run, 1);
	CHECK_EQ(free_blocks(v), free0);
	CHECK(reads_back(v, f, size, 16));
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_remove(v, NULL, root, "filler"), 0);
	CHECK_EQ(fs_sync(v), 0);
}

/* Two chunks, the first full outside its metadata zones but for the
 * spacer's holes: the rewrite goes to one run of the second chunk, by a
 * continuation from block 0 (as a file growing in a full chunk continues
 * elsewhere); the pieces in the first are freed. Rewritten again: in
 * place (one extent). */
static void test_other_chunk(void)
{
	struct fs_mkfs_opts o = { .chunk_size = 16u << 20, .chunk_count = 2, .force = 1 };
	char img2[300];
	struct fs_volume *v = NULL;
	struct fs_ino f, s, fill_f, root;
	struct exts before, after;
	struct outside out;
	uint64_t size = 8 * PIECE, free0;

	snprintf(img2, sizeof(img2), "%s.two", image);
	CHECK_EQ(fs_mkfs(img2, &o), 0);
	CHECK_EQ(fs_open(img2, 0, &v), 0);
	if (!v)
		return;
	f = make_file(v, "frag");
	s = make_file(v, "spacer");
	fill_f = make_file(v, "filler");
	fragment(v, f, s, 8, PIECE, 20);
	before = layout(v, f);
	CHECK_EQ(before.n, 8);
	CHECK_EQ(before.e[0].chunk, 0);
	out = outside_free(v);
	fill_outside(v, fill_f, out.blocks, 21);
	CHECK_EQ(outside_free(v).blocks, 0);
	CHECK_EQ(fs_root(v, &root), 0);
	free0 = free_blocks(v);
	rewrite(v, f, size, 22);
	CHECK_EQ(fs_commit(v, f), 0);
	after = layout(v, f);
	CHECK_EQ(after.n, 1);
	CHECK_EQ(after.e[0].chunk, 1);
	CHECK_EQ(after.e[0].lblk, 0);
	CHECK_EQ(after.e[0].len, size / 4096);
	CHECK_EQ(counters(v).reallocs, 1);
	CHECK_EQ(counters(v).realloc_blocks, size / 4096);
	/* the pieces back, the extent unit of 8 extents too; the new
	 * continuation's slot is in an inode area, not in blocks */
	CHECK_EQ(free_blocks(v), free0 + 2);
	CHECK(reads_back(v, f, size, 22));
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	before = after;
	rewrite(v, f, size, 23);
	CHECK_EQ(fs_commit(v, f), 0);
	after = layout(v, f);
	CHECK(same_layout(&before, &after));
	CHECK_EQ(counters(v).reallocs, 1);
	CHECK_EQ(fs_close(v), 0);
	v = NULL;
	CHECK_EQ(fs_open(img2, 0, &v), 0);
	if (v) {
		CHECK_EQ(fs_root(v, &root), 0);
		CHECK_EQ(fs_lookup(v, NULL, root, "frag", &f, NULL), 0);
		after = layout(v, f);
		CHECK(same_layout(&before, &after));
		CHECK(reads_back(v, f, size, 23));
		CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
		CHECK_EQ(fs_close(v), 0);
	}
	unlink(img2);
}

/* Reopened: what the commits wrote is what the disk holds. */
static void test_reopen(struct fs_volume **vp)
{
	struct fs_ino root, f;
	struct fs_attr a;

	CHECK_EQ(fs_close(*vp), 0);
	*vp = NULL;
	CHECK_EQ(fs_open(image, 0, vp), 0);
	if (!*vp)
		return;
	CHECK_EQ(fs_root(*vp, &root), 0);
	CHECK_EQ(fs_lookup(*vp, NULL, root, "frag", &f, &a), 0);
	CHECK_EQ(layout(*vp, f).n, 1);
	CHECK(reads_back(*vp, f, 8 * PIECE, 3));
	CHECK_EQ(fs_lookup(*vp, NULL, root, "linked", &f, &a), 0);
	CHECK_EQ(layout(*vp, f).n, 1);
	CHECK(reads_back(*vp, f, 4 * PIECE, 13));
	CHECK_EQ(fs_lookup(*vp, NULL, root, "norun", &f, &a), 0);
	CHECK_EQ(layout(*vp, f).n, 8);
	CHECK(reads_back(*vp, f, 8 * PIECE, 16));
	CHECK_EQ(fs_check_invariants(*vp, NULL, NULL), 0);
}

int main(void)
{
	struct fs_mkfs_opts o = { .chunk_size = 64u << 20, .chunk_count = 1, .force = 1 };
	struct fs_volume *v = NULL;
	int ret;

	ret = mkfs_temp(image, sizeof(image), "realloc_test", &o);
	if (ret == -1)
		return 99;
	CHECK_EQ(ret, 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v)
		return test_done("realloc");
	CHECK_EQ(counters(v).realloc_min_extents, 3);
	test_gathered(v);
	test_order(v);
	test_threshold_links(v);
	test_no_run(v);
	test_reopen(&v);
	if (v)
		CHECK_EQ(fs_close(v), 0);
	test_other_chunk();
	unlink(image);
	return test_done("realloc");
}
