/* Units the cache lets go of between transactions: a unit changed in two
 * transactions in a row (first copies 0 then 1), evicted, read back and
 * changed again, must end with both copies equal after every sync. (Before
 * 72b7db3 the catch-up of such a unit, then written by the next
 * transaction, went over copy 0 again: mkfs -d of 200k files left bitmap
 * copies apart that no dirty list named. Since the commit mark, each
 * transaction writes both copies itself.) */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/format/ondisk.h"
#include "tap.h"

#define CHUNK_SIZE (4u << 20)
#define NCHUNKS 2
#define BIG_FILES 200 /* entries of a directory whose units the cache lets go */

static char image[256];

static int make_file(struct fs_volume *v, struct fs_ino dir, const char *name, size_t len)
{
	static uint8_t data[64 << 10];
	struct fs_ino f;
	int ret;

	memset(data, name[0], sizeof(data));
	ret = fs_create(v, NULL, dir, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL);
	if (ret == 0 && len)
		ret = fs_write(v, NULL, f, 0, len, data, FS_UNSTABLE, NULL);
	return ret;
}

/* Same version: equal but for the crc (bytes 8-11) and txid (24-31). */
static int same_unit(const uint8_t *a, const uint8_t *b)
{
	return memcmp(a, b, 8) == 0 && memcmp(a + 12, b + 12, 12) == 0 &&
	       memcmp(a + 32, b + 32, OD_BLOCK_SIZE - 32) == 0;
}

/* Units of the fixed region of chunk ci whose two copies differ. */
static int differing_fixed_units(int fd, uint32_t ci)
{
	uint64_t base = (uint64_t)ci * CHUNK_SIZE;
	uint8_t a[OD_BLOCK_SIZE], b[OD_BLOCK_SIZE];
	struct od_chunk_header h;
	uint32_t half;
	int n = 0;

	if (pread(fd, a, sizeof(a), (off_t)base) != (ssize_t)sizeof(a) ||
	    od_get_chunk_header(a, &h) < 0)
		return -EIO;
	half = h.nblocks / 2;
	for (uint32_t blk = h.bitmap_start; blk < h.data_start; blk++) {
		if (pread(fd, a, sizeof(a), (off_t)(base + (uint64_t)blk * OD_BLOCK_SIZE)) !=
			    (ssize_t)sizeof(a) ||
		    pread(fd, b, sizeof(b),
			  (off_t)(base + (uint64_t)(blk + half) * OD_BLOCK_SIZE)) != (ssize_t)sizeof(b))
			return -EIO;
		if (!same_unit(a, b)) {
			fprintf(stderr, "chunk %u block %u: the copies differ\n", ci, blk);
			n++;
		}
	}
	return n;
}

int main(void)
{
	struct fs_mkfs_opts o = { .chunk_size = CHUNK_SIZE, .chunk_count = NCHUNKS, .force = 1 };
	struct fs_ino root, big, got;
	struct fs_attr attr;
	struct fs_volume *v = NULL;
	char name[32];
	int fd;

	snprintf(image, sizeof(image), "%s/txn_catchup_test.%d.img",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	unlink(image);
	CHECK_EQ(fs_mkfs(image, &o), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v)
		return test_done("txn_catchup");
	CHECK_EQ(fs_root(v, &root), 0);

	/* A directory of many entries, on disk only after a reopen: reading
	 * its units later inserts them into a cache of no size. */
	CHECK_EQ(fs_mkdir(v, NULL, root, "big", 0755, &big, NULL), 0);
	for (int i = 0; i < BIG_FILES; i++) {
		snprintf(name, sizeof(name), "f%03d", i);
		CHECK_EQ(make_file(v, big, name, 0), 0);
	}
	CHECK_EQ(fs_close(v), 0);
	v = NULL;
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v)
		return test_done("txn_catchup");
	/* From here on every insert drops every clean unit. */
	fs_set_cache_limit(v, 0);

	/* T1 and T2 both allocate data blocks: the bitmap block is written to
	 * copy 1, then to copy 0. */
	CHECK_EQ(make_file(v, root, "a", sizeof(uint8_t) * (64 << 10)), 0);
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(make_file(v, root, "b", sizeof(uint8_t) * (64 << 10)), 0);
	CHECK_EQ(fs_sync(v), 0);
	/* Reads that insert units: every clean unit leaves the cache,
	 * the bitmap block among them. */
	for (int i = 0; i < BIG_FILES; i += 7) {
		snprintf(name, sizeof(name), "f%03d", i);
		CHECK_EQ(fs_lookup(v, NULL, big, name, &got, &attr), 0);
		CHECK_EQ(attr.size, 0);
	}
	/* T3: the catch-ups, from disk; then the close (the headers only). */
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(fs_close(v), 0);

	fd = open(image, O_RDONLY);
	CHECK(fd >= 0);
	if (fd >= 0) {
		for (uint32_t ci = 0; ci < NCHUNKS; ci++)
			CHECK_EQ(differing_fixed_units(fd, ci), 0);
		close(fd);
	}
	unlink(image);
	return test_done("txn_catchup");
}
