/* The room promised to buffered data (fs/dalloc_room.c), on a one-chunk
 * volume of 8 MiB whose free blocks are all single blocks whose mirror is
 * used (one-block files written until ENOSPC, every other one of the
 * lower half removed): blocks enough, but no metadata pair left for an
 * extent unit. A file's pages written one by one, UNSTABLE: buffered
 * while its inode holds every extent their placement can make (7), then
 * placed with the write that would need a unit, and the next write, which
 * needs one, is answered -ENOSPC at once. Before, every page was buffered
 * and the close placed them into 8 and more extents and answered -ENOSPC:
 * data whose WRITE had been answered was lost (model_test, seed
 * 1796586095610699, sequence 149). (That a placement's held pages are
 * counted once, review F2, is dalloc_place_test's test_held_once.) */
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
#define MAXFILES 8192

static char image[256];

static struct fs_counters counters(struct fs_volume *v)
{
	struct fs_counters k;

	CHECK_EQ(fs_get_counters(v, &k), 0);
	return k;
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((i * 131 + seed * 7 + (i >> 12)) & 0xff);
}

/* The block of a one-block file (its only extent's), 0 if none. */
static int first_pblk(void *ctx, const struct fs_extent *e)
{
	*(uint32_t *)ctx = e->pblk;
	return 0;
}

static int page_is(struct fs_volume *v, struct fs_ino f, uint32_t page, unsigned seed)
{
	static uint8_t got[4 * KiB], want[4 * KiB];
	size_t n = 0;
	int eof = 0;

	fill(want, sizeof(want), seed);
	return fs_read(v, NULL, f, (uint64_t)page * 4 * KiB, sizeof(got), got, &n, &eof) == 0 &&
	       n == sizeof(got) && memcmp(got, want, sizeof(got)) == 0;
}

int main(void)
{
	struct fs_mkfs_opts o = {
		.chunk_size = 16u << 20, .chunk_count = 1, .bytes_per_inode = 2048, .force = 1
	};
	static uint8_t buf[4 * KiB];
	static struct fs_ino small[MAXFILES];
	static uint32_t where[MAXFILES];
	struct fs_volume *v = NULL;
	struct fs_ino root, f, d;
	struct fs_attr a;
	char name[32];
	int nsmall = 0, removed = 0, nunit = 0, ret = 0, ext = 0;
	uint32_t half = (16u << 20) / 4096 / 2, lower = 0;

	ret = mkfs_temp(image, sizeof(image), "dalloc_room_test", &o);
	if (ret == -1)
		return 99;
	CHECK_EQ(ret, 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v)
		return test_done("dalloc_room");
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_create(v, NULL, root, "data", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	/* The volume filled with one-block files (written at once). */
	fs_set_dalloc_limit(v, 0);
	fill(buf, sizeof(buf), 1);
	while (nsmall < MAXFILES) {
		snprintf(name, sizeof(name), "s%05d", nsmall);
		ret = fs_create(v, NULL, root, name, 0644, FS_CREATE_GUARDED, 0, &small[nsmall],
				NULL);
		if (ret == 0)
			ret = fs_write(v, NULL, small[nsmall], 4 * KiB, 4 * KiB, buf, FS_UNSTABLE,
				       NULL);
		if (ret < 0)
			break;
		nsmall++;
	}
	CHECK_EQ(ret, -ENOSPC);
	CHECK_EQ(fs_sync(v), 0);
	/* Every other one of the files in the lower half removed: single
	 * free blocks whose mirror in the upper half holds data. */
	for (int i = 0; i < nsmall; i++) {
		where[i] = 0;
		CHECK_EQ(fs_file_extents(v, small[i], first_pblk, &where[i]), 0);
		if (where[i] && where[i] < half && lower++ % 2 == 0) {
			snprintf(name, sizeof(name), "s%05d", i);
			CHECK_EQ(fs_remove(v, NULL, root, name), 0);
			removed++;
		}
	}
	CHECK_EQ(fs_sync(v), 0);
	/* Files of 8 extents (pages 1, 3, ..., 15), an extent unit each,
	 * until no pair is left for one. */
	ret = 0;
	while (ret == 0 && nunit < MAXFILES) {
		snprintf(name, sizeof(name), "u%05d", nunit);
		ret = fs_create(v, NULL, root, name, 0644, FS_CREATE_GUARDED, 0, &d, NULL);
		for (uint32_t p = 1; ret == 0 && p < 16; p += 2)
			ret = fs_write(v, NULL, d, (uint64_t)p * 4 * KiB, 4 * KiB, buf,
				       FS_FILE_SYNC, NULL);
		nunit++;
	}
	CHECK_EQ(ret, -ENOSPC);
	CHECK_EQ(fs_sync(v), 0);
	printf("dalloc_room: %d one-block files, %d removed, %d of 8 extents, %llu blocks free\n",
	       nsmall, removed, nunit, (unsigned long long)free_blocks(v));

	/* The file's pages 1, 2, ... (page 0 a hole: nothing inline). Six
	 * wait: their extents, one each, fit in the inode whatever comes
	 * (and one for data moved out of its entry). */
	fs_set_dalloc_limit(v, 64 * MiB);
	for (uint32_t p = 1; p <= 6; p++) {
		fill(buf, sizeof(buf), p);
		CHECK_EQ(fs_write(v, NULL, f, (uint64_t)p * 4 * KiB, 4 * KiB, buf, FS_UNSTABLE,
				  NULL),
			 0);
		CHECK_EQ(counters(v).dalloc_bytes, p * 4 * KiB);
	}
	/* The seventh could need an extent unit: not buffered, the six
	 * placed and it written (7 extents, all in the inode). */
	fill(buf, sizeof(buf), 7);
	CHECK_EQ(fs_write(v, NULL, f, 7 * 4 * KiB, 4 * KiB, buf, FS_UNSTABLE, NULL), 0);
	CHECK_EQ(counters(v).dalloc_bytes, 0);
	CHECK_EQ(fs_file_extents(v, f, count_ext, &ext), 0);
	CHECK_EQ(ext, 7);
	/* The eighth needs one: ENOSPC now, not at the commit. */
	fill(buf, sizeof(buf), 8);
	CHECK_EQ(fs_write(v, NULL, f, 8 * 4 * KiB, 4 * KiB, buf, FS_UNSTABLE, NULL), -ENOSPC);
	CHECK_EQ(counters(v).dalloc_bytes, 0);
	CHECK_EQ(fs_commit(v, f), 0);
	CHECK_EQ(fs_getattr(v, f, &a), 0);
	CHECK_EQ(a.size, 8 * 4 * KiB);
	for (uint32_t p = 1; p <= 7; p++)
		CHECK(page_is(v, f, p, p));
	CHECK_EQ(counters(v).dalloc_gave_up_close, 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);

	/* On disk: every page answered. */
	v = NULL;
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (v) {
		CHECK_EQ(fs_root(v, &root), 0);
		CHECK_EQ(fs_lookup(v, NULL, root, "data", &f, &a), 0);
		CHECK_EQ(a.size, 8 * 4 * KiB);
		for (uint32_t p = 1; p <= 7; p++)
			CHECK(page_is(v, f, p, p));
		CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
		CHECK_EQ(fs_close(v), 0);
	}
	unlink(image);
	return test_done("dalloc_room");
}
