/* The scrub (fs/scrub.c) on a real volume: one copy of chosen units is
 * damaged in the image file, fs_scrub_step finds exactly those and queues
 * them for rewrite, the next transaction and the close leave both copies
 * equal byte for byte, a unit whose catch-up is pending is not taken for
 * damage, and fsck --both-copies finds the volume clean at the end. A unit
 * with no good copy is counted and its chunk marked needs-repair. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/format/ondisk.h"
#include "fs/fs.h"
#include "fs/fsck/fsck.h"
#include "tap.h"

#define CHUNK_SIZE (4u << 20)
#define NCHUNKS 2
#define NFILES 40

static char image[256];

struct unit {
	uint32_t chunk, block, units;
};

static uint64_t at(uint32_t chunk, uint32_t block)
{
	return (uint64_t)chunk * CHUNK_SIZE + (uint64_t)block * OD_BLOCK_SIZE;
}

static int read_header(int fd, uint32_t chunk, struct od_chunk_header *h)
{
	uint8_t blk[OD_BLOCK_SIZE];

	if (pread(fd, blk, sizeof(blk), (off_t)at(chunk, 0)) != (ssize_t)sizeof(blk))
		return -EIO;
	return od_get_chunk_header(blk, h);
}

/* Flip one payload byte of one copy: its checksum no longer matches. */
static void damage(int fd, const struct unit *u, int copy, uint32_t half)
{
	uint64_t off = at(u->chunk, u->block + (copy ? half : 0)) + 100;
	uint8_t byte;

	CHECK(pread(fd, &byte, 1, (off_t)off) == 1);
	byte ^= 0x5a;
	CHECK(pwrite(fd, &byte, 1, (off_t)off) == 1);
}

/* Are the unit's two copies identical, byte for byte? */
static int copies_identical(int fd, const struct unit *u, uint32_t half)
{
	size_t len = (size_t)u->units * OD_BLOCK_SIZE;
	uint8_t *a = malloc(len), *b = malloc(len);
	int same = 0;

	if (a && b && pread(fd, a, len, (off_t)at(u->chunk, u->block)) == (ssize_t)len &&
	    pread(fd, b, len, (off_t)at(u->chunk, u->block + half)) == (ssize_t)len)
		same = memcmp(a, b, len) == 0;
	free(a);
	free(b);
	return same;
}

/* The first directory unit of chunk 0's lower half. */
static int find_dir_unit(int fd, const struct od_chunk_header *h, struct unit *u)
{
	uint8_t blk[OD_BLOCK_SIZE];
	struct od_mb_header mh;

	for (uint32_t b = h->data_start; b < h->nblocks / 2; b++) {
		if (pread(fd, blk, sizeof(blk), (off_t)at(0, b)) != (ssize_t)sizeof(blk))
			return -EIO;
		od_get_mb_header(blk, &mh);
		if (mh.magic == OD_MB_MAGIC && mh.type == OD_MB_DIR && mh.chunk == 0 &&
		    mh.block == b) {
			u->chunk = 0;
			u->block = b;
			u->units = mh.units;
			return 0;
		}
	}
	return -ENOENT;
}

/* A whole pass from chunk 0, summed. */
static int scrub_all(struct fs_volume *v, struct fs_scrub_result *sum)
{
	struct fs_scrub_cursor cur = { 0, 0 };
	struct fs_scrub_result r;
	int ret, steps = 0;

	memset(sum, 0, sizeof(*sum));
	do {
		ret = fs_scrub_step(v, &cur, 7, &r);
		if (ret < 0)
			return ret;
		sum->units += r.units;
		sum->bad += r.bad;
		sum->healed += r.healed;
		sum->both_bad += r.both_bad;
		sum->pending += r.pending;
		sum->skipped += r.skipped;
		sum->lists_bad += r.lists_bad;
		sum->chunks_done += r.chunks_done;
		sum->bytes += r.bytes;
	} while (!r.wrapped && ++steps < 100000);
	return r.wrapped ? 0 : -ELOOP;
}

static void fsck_clean(void)
{
	struct fsck_opts o = { .mode = FSCK_CHECK_ONLY, .force = 1, .jobs = 1, .both_copies = 1 };
	struct fsck_result res;

	CHECK_EQ(fsck_volume_path(image, -1, &o, &res), 0);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(res.exit_code, 0);
}

int main(void)
{
	struct fs_mkfs_opts o = { .chunk_size = CHUNK_SIZE, .chunk_count = NCHUNKS, .force = 1 };
	struct od_chunk_header h0, h1;
	struct fs_scrub_result r;
	struct fs_chunk_info ci;
	struct fs_ino root, d, f;
	struct fs_volume *v = NULL;
	static uint8_t data[20000];
	struct unit hdr1, dirunit, itable1, bitmap0, map1;
	char name[32];
	uint32_t half;
	int fd;

	snprintf(image, sizeof(image), "%s/scrub_test.%d.img",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	unlink(image);
	CHECK_EQ(fs_mkfs(image, &o), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v)
		return test_done("scrub");
	CHECK_EQ(fs_root(v, &root), 0);
	/* Directories spread over both chunks, files with data. */
	for (int k = 0; k < 2; k++) {
		snprintf(name, sizeof(name), "d%d", k);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &d, NULL), 0);
		for (int i = 0; i < NFILES; i++) {
			snprintf(name, sizeof(name), "f%02d", i);
			memset(data, 'a' + i % 26, sizeof(data));
			CHECK_EQ(fs_create(v, NULL, d, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
			CHECK_EQ(fs_write(v, NULL, f, 0, (size_t)(i * 500), data, FS_UNSTABLE, NULL),
				 0);
		}
	}
	CHECK_EQ(fs_close(v), 0);
	v = NULL;

	/* One copy of five units: chunk 1's header copy 1, a directory unit
	 * copy 1, chunk 1's first inode-area block copy 0, chunk 0's bitmap
	 * copy 1, chunk 1's first map block copy 0. */
	fd = open(image, O_RDWR);
	CHECK(fd >= 0);
	if (fd < 0)
		return test_done("scrub");
	CHECK_EQ(read_header(fd, 0, &h0), 0);
	CHECK_EQ(read_header(fd, 1, &h1), 0);
	half = h0.nblocks / 2;
	CHECK(h1.islot_watermark > 0);
	CHECK(h1.map_watermark > 0);
	hdr1 = (struct unit){ 1, 0, 1 };
	itable1 = (struct unit){ 1, h1.itable_start, 1 };
	bitmap0 = (struct unit){ 0, h0.bitmap_start, 1 };
	map1 = (struct unit){ 1, h1.map_start, 1 };
	CHECK_EQ(find_dir_unit(fd, &h0, &dirunit), 0);
	damage(fd, &hdr1, 1, half);
	damage(fd, &dirunit, 1, half);
	damage(fd, &itable1, 0, half);
	damage(fd, &bitmap0, 1, half);
	damage(fd, &map1, 0, half);
	CHECK(!copies_identical(fd, &dirunit, half));

	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v)
		return test_done("scrub");
	CHECK_EQ(scrub_all(v, &r), 0);
	CHECK_EQ(r.bad, 5);
	CHECK_EQ(r.healed, 5);
	CHECK_EQ(r.both_bad, 0);
	CHECK_EQ(r.pending, 0);
	CHECK_EQ(r.lists_bad, 0);
	CHECK_EQ(r.chunks_done, NCHUNKS);
	CHECK(r.units > 10);
	CHECK_EQ(fs_chunk_info(v, 0, &ci), 0);
	CHECK_EQ(ci.scrub_bad, 2);
	CHECK_EQ(ci.scrub_healed, 2);
	CHECK(ci.scrub_last > 0);
	CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
	CHECK_EQ(ci.scrub_bad, 3);
	CHECK_EQ(ci.scrub_healed, 3);
	CHECK_EQ(ci.scrub_both_bad, 0);
	/* The heals go out with the next transaction, both copies of each
	 * unit before it is answered: a second pass finds nothing. */
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(scrub_all(v, &r), 0);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.both_bad, 0);
	CHECK_EQ(r.pending, 0);
	CHECK_EQ(fs_close(v), 0);
	v = NULL;
	CHECK(copies_identical(fd, &hdr1, half));
	CHECK(copies_identical(fd, &dirunit, half));
	CHECK(copies_identical(fd, &itable1, half));
	CHECK(copies_identical(fd, &bitmap0, half));
	CHECK(copies_identical(fd, &map1, half));

	/* A change committed: both copies carry it, the scrub finds no copy
	 * behind, and a second change of the same units (the first copy
	 * written alternates) still shows no damage. */
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v)
		return test_done("scrub");
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_create(v, NULL, root, "late", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(scrub_all(v, &r), 0);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.both_bad, 0);
	CHECK_EQ(r.pending, 0);
	CHECK_EQ(fs_write(v, NULL, f, 0, 3000, data, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(scrub_all(v, &r), 0);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.pending, 0);
	CHECK_EQ(fs_close(v), 0);
	v = NULL;
	fsck_clean();

	/* Both copies of a map block: counted, not repaired, needs-repair. */
	damage(fd, &map1, 0, half);
	damage(fd, &map1, 1, half);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v)
		return test_done("scrub");
	CHECK_EQ(scrub_all(v, &r), 0);
	CHECK_EQ(r.both_bad, 1);
	CHECK_EQ(r.bad, 2);
	CHECK_EQ(r.healed, 0);
	CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
	CHECK_EQ(ci.scrub_both_bad, 1);
	CHECK_EQ(ci.state, OD_STATE_NEEDS_REPAIR);
	CHECK_EQ(fs_close(v), 0);
	close(fd);
	unlink(image);
	return test_done("scrub");
}
