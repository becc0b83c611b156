/* fs/prealloc.c, preallocation, with exact counts: a reservation takes
 * blocks from fs_statfs's free count at once and gives back exactly what
 * is not written when trimmed (at fs_commit and a stable write with
 * FS_PREALLOC_TRIM, after the timeout, at a truncate, a remove, a close);
 * without the flag a commit keeps it; two files appended by turns with a
 * commit after every 4 KiB piece are one extent each with reservations
 * (one extent per piece without); no other file is given a reserved block;
 * a reservation longer than any free run gets the longest run; when the
 * volume is full, FS_PREALLOC_TRIM reservations are given back (the oldest
 * first) before plain ones, and a write fails ENOSPC only when none is
 * left; nothing of a reservation is on disk (reopened, the free count is
 * the bitmap's); a draining chunk's reservation goes at the next
 * placement. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/layout.h"
#include "tests/tap.h"
#include "tests/vol_util.h"

#define KiB 1024u
#define MiB (1024u * KiB)
#define PIECES 64

static char image[256];

static int extents(struct fs_volume *v, struct fs_ino f)
{
	int n = 0;

	CHECK_EQ(fs_file_extents(v, f, count_ext, &n), 0);
	return n;
}

struct ext_list {
	struct fs_extent e[4096];
	int n;
};

static int list_ext(void *ctx, const struct fs_extent *e)
{
	struct ext_list *l = ctx;

	if (l->n < 4096)
		l->e[l->n++] = *e;
	return 0;
}

static struct fs_prealloc_info info(struct fs_volume *v)
{
	struct fs_prealloc_info i;

	CHECK_EQ(fs_prealloc_info(v, &i), 0);
	return i;
}

static uint64_t held(struct fs_volume *v, struct fs_ino f)
{
	uint64_t n = 0;

	return fs_prealloc_held(v, f, &n) == 0 ? n : 0;
}

static struct fs_ino make_file(struct fs_volume *v, const char *name)
{
	struct fs_ino root, f = { 0 };

	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_create(v, NULL, root, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	return f;
}

static int put(struct fs_volume *v, struct fs_ino f, uint64_t off, size_t len,
	       enum fs_stable_how how)
{
	static uint8_t buf[1 << 20];

	memset(buf, (int)(off >> 12) + 1, len);
	return fs_write(v, NULL, f, off, len, buf, how, NULL);
}

static struct fs_volume *fresh(uint64_t chunk_size)
{
	struct fs_mkfs_opts o = { .chunk_size = chunk_size, .chunk_count = 1, .force = 1 };
	struct fs_volume *v = NULL;

	CHECK_EQ(fs_mkfs(image, &o), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	return v;
}

/* Reserve, write part, trim at commit: exact free counts at each step. */
static void test_counts(void)
{
	struct fs_volume *v = fresh(64ull * MiB);
	struct fs_ino f, g;
	uint64_t got = 0, f0, f1;
	struct fs_prealloc_info i;

	if (!v)
		return;
	fs_set_dalloc_limit(v, 0); /* every write placed at once */
	f = make_file(v, "trimmed");
	g = make_file(v, "kept");
	CHECK_EQ(fs_sync(v), 0);
	f0 = free_blocks(v);
	CHECK_EQ(fs_prealloc(v, f, 256 * KiB, FS_PREALLOC_TRIM, &got), 0);
	CHECK_EQ(got, 64);
	CHECK_EQ(free_blocks(v), f0 - 64);
	CHECK_EQ(held(v, f), 64);
	i = info(v);
	CHECK_EQ(i.active, 1);
	CHECK_EQ(i.held_blocks, 64);
	CHECK_EQ(i.made, 1);
	CHECK_EQ(i.reserved_blocks, 64);
	/* 16 blocks written (the first piece inline, the second moves it
	 * out): taken from the reservation, the free count unchanged. */
	for (int p = 0; p < 16; p++)
		CHECK_EQ(put(v, f, (uint64_t)p * 4 * KiB, 4 * KiB, FS_UNSTABLE), 0);
	CHECK_EQ(free_blocks(v), f0 - 64);
	CHECK_EQ(held(v, f), 48);
	CHECK_EQ(info(v).taken_blocks, 16);
	CHECK_EQ(extents(v, f), 1);
	/* A commit trims what is not written. */
	CHECK_EQ(fs_commit(v, f), 0);
	CHECK_EQ(free_blocks(v), f0 - 16);
	CHECK_EQ(fs_prealloc_held(v, f, &got), -ENOENT);
	i = info(v);
	CHECK_EQ(i.active, 0);
	CHECK_EQ(i.trim_commit, 1);
	CHECK_EQ(i.trim_commit_blocks, 48);

	/* Without the flag a commit keeps it; a truncate releases it. */
	f1 = free_blocks(v);
	CHECK_EQ(fs_prealloc(v, g, 1 * MiB, 0, &got), 0);
	CHECK_EQ(got, 256);
	CHECK_EQ(free_blocks(v), f1 - 256);
	for (int p = 0; p < 8; p++)
		CHECK_EQ(put(v, g, (uint64_t)p * 4 * KiB, 4 * KiB, FS_FILE_SYNC), 0);
	CHECK_EQ(fs_commit(v, g), 0);
	CHECK_EQ(held(v, g), 248);
	CHECK_EQ(free_blocks(v), f1 - 256);
	{
		struct fs_setattr sa = { .valid = FS_SET_SIZE, .size = 4 * KiB };
		CHECK_EQ(fs_setattr(v, NULL, g, &sa, NULL), 0);
	}
	CHECK_EQ(fs_prealloc_held(v, g, &got), -ENOENT);
	i = info(v);
	CHECK_EQ(i.released, 1);
	CHECK_EQ(i.released_blocks, 248);
	CHECK_EQ(fs_sync(v), 0); /* the cut blocks are free once committed */
	CHECK_EQ(free_blocks(v), f1 - 1);

	/* A stable write with the flag trims too (nothing buffered). */
	CHECK_EQ(fs_prealloc(v, g, 64 * KiB, FS_PREALLOC_TRIM, &got), 0);
	CHECK_EQ(got, 15); /* blocks 1 .. 15: block 0 is the file's */
	CHECK_EQ(put(v, g, 4 * KiB, 4 * KiB, FS_FILE_SYNC), 0);
	CHECK_EQ(held(v, g), 0);
	CHECK_EQ(info(v).trim_commit, 2);
	CHECK_EQ(info(v).trim_commit_blocks, 48 + 14);
	CHECK_EQ(extents(v, g), 1);

	/* Timeout: only FS_PREALLOC_TRIM ones, not used for the timeout. */
	CHECK_EQ(fs_prealloc(v, f, 1 * MiB, FS_PREALLOC_TRIM, &got), 0);
	CHECK_EQ(got, 240);
	CHECK_EQ(fs_prealloc(v, g, 1 * MiB, 0, &got), 0);
	CHECK_EQ(got, 254);
	CHECK_EQ(info(v).timeout_ms, FS_PREALLOC_TIMEOUT_DEFAULT_MS);
	CHECK_EQ(fs_prealloc_expire(v), 0);
	fs_set_prealloc_timeout(v, 1);
	usleep(5000);
	CHECK_EQ(fs_prealloc_expire(v), 1);
	CHECK_EQ(info(v).trim_timeout, 1);
	CHECK_EQ(info(v).trim_timeout_blocks, 240);
	CHECK_EQ(held(v, g), 254);
	/* A remove releases it. */
	f1 = free_blocks(v);
	{
		struct fs_ino root;
		CHECK_EQ(fs_root(v, &root), 0);
		CHECK_EQ(extents(v, g), 1);
		CHECK_EQ(fs_remove(v, NULL, root, "kept"), 0);
	}
	/* (its two blocks and the reservation; the sync below takes a
	 * metadata pair of its own) */
	CHECK_EQ(free_blocks(v), f1 + 254 + 2);
	CHECK_EQ(info(v).released, 2);
	CHECK_EQ(info(v).released_blocks, 248 + 254);
	CHECK_EQ(fs_sync(v), 0);
	f1 = free_blocks(v);
	/* A close releases the rest (nothing on disk to undo). */
	CHECK_EQ(fs_prealloc(v, f, 2 * MiB, FS_PREALLOC_TRIM, &got), 0);
	CHECK_EQ(got, 496);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (v) {
		/* none of the 496 is gone: only the predictor's unit pair,
		 * saved at the clean close (the remove taught it a lifetime) */
		CHECK_EQ(free_blocks(v), f1 - 2);
		CHECK_EQ(info(v).active, 0);
		CHECK_EQ(fs_close(v), 0);
	}
}

/* Two files appended by turns, 4 KiB at a time, each piece committed (so
 * delayed allocation cannot join them): one extent per piece without a
 * reservation, one extent each with one. */
static void appended_by_turns(struct fs_volume *v, const char *a, const char *b, int reserve,
			      int *ea, int *eb)
{
	struct fs_ino f[2] = { make_file(v, a), make_file(v, b) };
	uint64_t got;

	for (int i = 0; reserve && i < 2; i++) {
		CHECK_EQ(fs_prealloc(v, f[i], PIECES * 4 * KiB, 0, &got), 0);
		CHECK_EQ(got, PIECES);
	}
	for (int p = 0; p < PIECES; p++)
		for (int i = 0; i < 2; i++) {
			CHECK_EQ(put(v, f[i], (uint64_t)p * 4 * KiB, 4 * KiB, FS_UNSTABLE), 0);
			CHECK_EQ(fs_commit(v, f[i]), 0);
		}
	*ea = extents(v, f[0]);
	*eb = extents(v, f[1]);
}

static void test_by_turns(void)
{
	struct fs_volume *v = fresh(64ull * MiB);
	int a = 0, b = 0;

	if (!v)
		return;
	/* (without a reservation, the allocation alone: first fit, as
	 * alloc_policy = runs moves such small files whole at each append,
	 * fs/realloc.c, tested in alloc_run_test) */
	fs_set_alloc_policy(v, FS_ALLOC_FIRST_FIT);
	appended_by_turns(v, "plain-a", "plain-b", 0, &a, &b);
	printf("# by turns, no reservation: %d and %d extents\n", a, b);
	CHECK_EQ(a, PIECES - 1); /* (the first piece went inline, then out) */
	CHECK_EQ(b, PIECES - 1);
	fs_set_alloc_policy(v, FS_ALLOC_RUNS);
	appended_by_turns(v, "pa-a", "pa-b", 1, &a, &b);
	printf("# by turns, reserved: %d and %d extents\n", a, b);
	CHECK_EQ(a, 1);
	CHECK_EQ(b, 1);
	CHECK_EQ(info(v).taken_blocks, 2 * PIECES);
	CHECK_EQ(info(v).active, 0); /* used up */
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
}

/* No block of a reservation goes to another file; a reservation longer
 * than any free run gets the longest run outside the zone. */
struct longest {
	uint32_t len;
};

static int longest_run(void *ctx, uint32_t chunk, uint32_t start, uint32_t len, int zone)
{
	struct longest *l = ctx;

	(void)chunk;
	(void)start;
	if (!zone && len > l->len)
		l->len = len;
	return 0;
}

static void test_exclusive(void)
{
	struct fs_volume *v = fresh(64ull * MiB);
	struct fs_ino a, b;
	struct ext_list *la = calloc(1, sizeof(*la)), *lb = calloc(1, sizeof(*lb));
	struct longest l = { 0 };
	uint64_t got;

	if (!v || !la || !lb)
		goto out;
	fs_set_dalloc_limit(v, 0);
	a = make_file(v, "reserved");
	b = make_file(v, "other");
	CHECK_EQ(fs_chunk_free_runs(v, 0, longest_run, &l), 0);
	CHECK_EQ(fs_prealloc(v, a, 1ull << 40, 0, &got), 0);
	CHECK_EQ(got, l.len); /* best effort: the longest run */
	CHECK_EQ(fs_prealloc(v, a, 4 * MiB, 0, &got), 0); /* replaced */
	CHECK_EQ(got, 1024);
	CHECK_EQ(info(v).released, 1);
	/* The other file writes 8 MiB, then the reserved one 4 MiB. */
	for (int p = 0; p < 8; p++)
		CHECK_EQ(put(v, b, (uint64_t)p * MiB, MiB, FS_FILE_SYNC), 0);
	for (int p = 0; p < 4; p++)
		CHECK_EQ(put(v, a, (uint64_t)p * MiB, MiB, FS_FILE_SYNC), 0);
	CHECK_EQ(fs_file_extents(v, a, list_ext, la), 0);
	CHECK_EQ(fs_file_extents(v, b, list_ext, lb), 0);
	CHECK_EQ(la->n, 1);
	CHECK_EQ(la->e[0].len, 1024);
	for (int i = 0; i < lb->n; i++)
		CHECK(lb->e[i].pblk + lb->e[i].len <= la->e[0].pblk ||
		      lb->e[i].pblk >= la->e[0].pblk + la->e[0].len);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
out:
	free(la);
	free(lb);
}

/* A full volume: FS_PREALLOC_TRIM reservations go back first, the oldest
 * first, then plain ones; ENOSPC only when none is left. */
static void test_enospc_order(void)
{
	struct fs_volume *v = fresh(16ull * MiB);
	struct fs_ino plain, t1, t2, w;
	uint64_t got, off = 0;
	int gone_t1 = -1, gone_t2 = -1, gone_plain = -1, step = 0, ret;

	if (!v)
		return;
	fs_set_dalloc_limit(v, 0);
	plain = make_file(v, "plain");
	t1 = make_file(v, "trim-old");
	t2 = make_file(v, "trim-new");
	w = make_file(v, "filler");
	CHECK_EQ(fs_prealloc(v, plain, 1 * MiB, 0, &got), 0);
	CHECK_EQ(got, 256);
	CHECK_EQ(fs_prealloc(v, t1, 1 * MiB, FS_PREALLOC_TRIM, &got), 0);
	CHECK_EQ(got, 256);
	CHECK_EQ(fs_prealloc(v, t2, 1 * MiB, FS_PREALLOC_TRIM, &got), 0);
	CHECK_EQ(got, 256);
	while ((ret = put(v, w, off, 64 * KiB, FS_UNSTABLE)) == 0) {
		off += 64 * KiB;
		step++;
		if (gone_t1 < 0 && held(v, t1) == 0)
			gone_t1 = step;
		if (gone_t2 < 0 && held(v, t2) == 0)
			gone_t2 = step;
		if (gone_plain < 0 && held(v, plain) == 0)
			gone_plain = step;
	}
	printf("# filler: %d writes of 64 KiB, reservations given back at writes %d, %d, %d\n",
	       step, gone_t1, gone_t2, gone_plain);
	CHECK_EQ(ret, -ENOSPC);
	CHECK(gone_t1 > 0);
	CHECK(gone_t2 > gone_t1);
	CHECK(gone_plain > gone_t2);
	CHECK_EQ(info(v).given_back, 3);
	CHECK_EQ(info(v).given_back_blocks, 3 * 256);
	CHECK_EQ(info(v).active, 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
}

/* A chunk drained (evacuation): its reservation is given back at the
 * file's next placement, and the data goes to another chunk. */
static void test_draining(void)
{
	struct fs_mkfs_opts o = { .chunk_size = 16ull * MiB, .chunk_count = 2, .force = 1 };
	struct fs_volume *v = NULL;
	struct ext_list *l = calloc(1, sizeof(*l));
	struct fs_ino root, d, f;
	uint64_t got;
	char why[256];

	CHECK_EQ(fs_mkfs(image, &o), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v || !l)
		goto out;
	fs_set_dalloc_limit(v, 0);
	CHECK_EQ(fs_root(v, &root), 0);
	/* (a directory of the root goes to the least loaded chunk: 1, once
	 * chunk 0 holds 2 MiB) */
	CHECK_EQ(fs_create(v, NULL, root, "load", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	CHECK_EQ(put(v, f, 0, MiB, FS_FILE_SYNC), 0);
	CHECK_EQ(put(v, f, MiB, MiB, FS_FILE_SYNC), 0);
	CHECK_EQ(fs_mkdir(v, NULL, root, "d", 0755, &d, NULL), 0);
	CHECK_EQ(fs_create(v, NULL, d, "f", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	CHECK_EQ(put(v, f, 0, 64 * KiB, FS_FILE_SYNC), 0);
	CHECK_EQ(fs_file_extents(v, f, list_ext, l), 0);
	CHECK_EQ(l->n, 1);
	CHECK_EQ(l->e[0].chunk, 1);
	CHECK_EQ(fs_prealloc(v, f, 1 * MiB, 0, &got), 0);
	CHECK_EQ(got, 240);
	CHECK_EQ(fs_chunk_drain(v, 1, 1, why, sizeof(why)), 0);
	CHECK_EQ(put(v, f, 64 * KiB, 8 * KiB, FS_FILE_SYNC), 0);
	CHECK_EQ(fs_prealloc_held(v, f, &got), -ENOENT);
	CHECK_EQ(info(v).trim_close, 1);
	CHECK_EQ(info(v).trim_close_blocks, 240);
	l->n = 0;
	CHECK_EQ(fs_file_extents(v, f, list_ext, l), 0);
	CHECK_EQ(l->n, 2);
	CHECK_EQ(l->e[1].chunk, 0); /* continued outside the draining chunk */
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
out:
	free(l);
}

int main(void)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(image, sizeof(image), "%s/prealloc_test.XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(image);
	if (fd < 0)
		return 99;
	close(fd);
	test_counts();
	test_by_turns();
	test_exclusive();
	test_enospc_order();
	test_draining();
	unlink(image);
	return test_done("prealloc");
}
