/* Buffered data and the free space promised to it (fs/dalloc_room.c)
 * against a drain (helper-46's review): two
 * chunks of 16 MiB, chunk 0 filled by a stable file a until about 1,300
 * blocks are free, two 1 MiB files in chunk 1; then a file F in chunk 0's
 * root written UNSTABLE, 64 KiB a write, up to 100 pages short of what
 * admission allows (every write answered and buffered).
 * - draining chunk 1 places F's buffer first (its blocks were counted
 *   among chunk 1's free ones), so the drain answers 0 with nothing left
 *   buffered, F's COMMIT answers 0, and after a reopen F holds every
 *   byte written. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "tap.h"
#include "vol_util.h"

#define MB (1u << 20)
#define KiB 1024u

static uint8_t buf[MB];

static uint64_t chunk_free(struct fs_volume *v, uint32_t i)
{
	struct fs_chunk_info ci;

	CHECK_EQ(fs_chunk_info(v, i, &ci), 0);
	return ci.free_blocks;
}

static struct fs_counters counters(struct fs_volume *v)
{
	struct fs_counters k;

	CHECK_EQ(fs_get_counters(v, &k), 0);
	return k;
}

int main(void)
{
	struct fs_mkfs_opts o = { .chunk_size = 16u << 20, .chunk_count = 2, .force = 1 };
	struct fs_volume *v = NULL;
	struct fs_ino root, d, dk = { 0 }, a, f, b;
	struct fs_attr at;
	static uint8_t back[64 * KiB];
	char image[256], why[256], name[32];
	uint64_t off = 0, want;
	int ret, bad = 0;

	ret = mkfs_temp(image, sizeof(image), "dalloc_drain_test", &o);
	if (ret == -1)
		return 99;
	CHECK_EQ(ret, 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v)
		return test_done("dalloc_drain");
	CHECK_EQ(fs_root(v, &root), 0);
	/* a directory homed in chunk 1 */
	for (int i = 0; i < 200 && !dk.num; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &d, NULL), 0);
		if ((d.num >> 32) == 1)
			dk = d;
	}
	CHECK(dk.num != 0);
	fs_set_dalloc_limit(v, 0);
	memset(buf, 0x5a, sizeof(buf));
	CHECK_EQ(fs_create(v, NULL, root, "a", 0644, FS_CREATE_GUARDED, 0, &a, NULL), 0);
	while (chunk_free(v, 0) > 1300 && off < 64 * MB) {
		CHECK_EQ(fs_write(v, NULL, a, off, 256 * KiB, buf, FS_FILE_SYNC, NULL), 0);
		off += 256 * KiB;
	}
	for (int i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "b%d", i);
		CHECK_EQ(fs_create(v, NULL, dk, name, 0644, FS_CREATE_GUARDED, 0, &b, NULL), 0);
		CHECK_EQ(fs_write(v, NULL, b, 0, MB, buf, FS_FILE_SYNC, NULL), 0);
	}
	CHECK_EQ(fs_sync(v), 0);

	/* F buffered to 100 pages short of the edge */
	fs_set_dalloc_limit(v, 64 * MB);
	CHECK_EQ(fs_create(v, NULL, root, "F", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	memset(buf, 0xa7, sizeof(buf));
	want = (free_blocks(v) - 1024 - 64) / 2 - 100;
	for (off = 0; off < want * 4096; off += 64 * KiB) {
		uint64_t before = counters(v).dalloc_bytes;
		bad |= fs_write(v, NULL, f, off, 64 * KiB, buf, FS_UNSTABLE, NULL) != 0;
		bad |= counters(v).dalloc_bytes != before + 64 * KiB;
	}
	CHECK(!bad);
	CHECK(off >= 2 * MB);
	printf("# %llu KiB buffered, %llu blocks free\n", (unsigned long long)off / KiB,
	       (unsigned long long)free_blocks(v));

	/* the drain places the buffer first */
	CHECK_EQ(fs_chunk_drain(v, 1, 1, why, sizeof(why)), 0);
	CHECK_EQ(counters(v).dalloc_bytes, 0);
	CHECK_EQ(fs_commit(v, f), 0);
	CHECK_EQ(counters(v).dalloc_gave_up_close, 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);

	v = NULL;
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (v) {
		size_t n;
		int eof;
		CHECK_EQ(fs_root(v, &root), 0);
		CHECK_EQ(fs_lookup(v, NULL, root, "F", &f, &at), 0);
		CHECK_EQ(at.size, off);
		bad = 0;
		for (uint64_t p = 0; p < off; p += sizeof(back)) {
			bad |= fs_read(v, NULL, f, p, sizeof(back), back, &n, &eof) != 0 ||
			       n != sizeof(back) || memcmp(back, buf, sizeof(back)) != 0;
		}
		CHECK(!bad);
		CHECK_EQ(fs_close(v), 0);
	}
	unlink(image);
	return test_done("dalloc_drain");
}
