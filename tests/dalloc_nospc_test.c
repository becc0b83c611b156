/* Delayed allocation against a full volume (fs/dalloc.c,
 * fs/dalloc_room.c), on a one-chunk volume of 16 MiB: a file's 256 KiB
 * wait in memory while symbolic links made without a sync (each target in
 * a data block of its own) use up the chunk; the links meet ENOSPC while
 * the buffered pages' blocks are still free (promised to them), and so
 * does a stable write; the file's commit then places it, nothing failed
 * or given up, and a file committed before is untouched; FSSTAT had
 * counted the placement's blocks as used already; after a reopen every
 * byte is on disk. A rewrite in pieces with 100-odd blocks free is not
 * buffered. */
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
#define SIZE (256 * KiB)
#define MAXDIRS 8192

static char image[256];

static void fill(uint8_t *buf, size_t len, uint64_t off, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(((off + i) * 131 + seed * 7 + ((off + i) >> 12)) & 0xff);
}

static int reads_back(struct fs_volume *v, struct fs_ino f, uint64_t size, unsigned seed)
{
	static uint8_t got[SIZE + 1], want[SIZE + 1];
	size_t n = 0;
	int eof = 0;

	if (size > SIZE || fs_read(v, NULL, f, 0, sizeof(got), got, &n, &eof) < 0)
		return 0;
	fill(want, (size_t)size, 0, seed);
	return n == size && eof && memcmp(got, want, (size_t)size) == 0;
}

static struct fs_counters counters(struct fs_volume *v)
{
	struct fs_counters k;

	CHECK_EQ(fs_get_counters(v, &k), 0);
	return k;
}

int main(void)
{
	struct fs_mkfs_opts o = {
		.chunk_size = 16u << 20, .chunk_count = 1, .bytes_per_inode = 2048, .force = 1
	};
	static uint8_t buf[SIZE];
	struct fs_volume *v = NULL;
	struct fs_ino root, f, safe, d, g;
	struct fs_counters k;
	struct fs_attr a;
	struct fs_statfs st0, st1;
	uint64_t drops;
	int ndirs = 0, ret = 0, ext = 0;
	char name[32], target[2048] = "";

	ret = mkfs_temp(image, sizeof(image), "dalloc_nospc_test", &o);
	if (ret == -1)
		return 99;
	CHECK_EQ(ret, 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v)
		return test_done("dalloc_nospc");
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_create(v, NULL, root, "safe", 0644, FS_CREATE_GUARDED, 0, &safe, NULL), 0);
	CHECK_EQ(fs_create(v, NULL, root, "data", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	fill(buf, 64 * KiB, 0, 1);
	CHECK_EQ(fs_write(v, NULL, safe, 0, 64 * KiB, buf, FS_UNSTABLE, NULL), 0);
	CHECK_EQ(fs_commit(v, safe), 0); /* acknowledged */
	/* A file in 4 pieces (delayed allocation off, another file's blocks
	 * between), for reallocation on a nearly full volume below. */
	CHECK_EQ(fs_create(v, NULL, root, "frag", 0644, FS_CREATE_GUARDED, 0, &g, NULL), 0);
	fs_set_dalloc_limit(v, 0);
	fill(buf, 32 * KiB, 0, 3);
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(fs_write(v, NULL, g, (uint64_t)i * 32 * KiB, 32 * KiB, buf, FS_UNSTABLE,
				  NULL),
			 0);
		CHECK_EQ(fs_write(v, NULL, safe, 64 * KiB, 4 * KiB, buf, FS_UNSTABLE, NULL), 0);
		CHECK_EQ(fs_setattr(v, NULL, safe, &(struct fs_setattr){ .valid = FS_SET_SIZE,
									 .size = 64 * KiB },
				    NULL),
			 0);
	}
	fs_set_dalloc_limit(v, 64u << 20);
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(fs_file_extents(v, g, count_ext, &ext), 0);
	printf("dalloc_nospc: frag in %d extents\n", ext);
	drops = fs_drop_count(v);
	/* The file's data buffered: no block placed. */
	fill(buf, SIZE, 0, 2);
	CHECK_EQ(fs_write(v, NULL, f, 0, 4 * KiB, buf, FS_UNSTABLE, NULL), 0); /* (inline) */
	CHECK_EQ(fs_write(v, NULL, f, 4 * KiB, SIZE - 4 * KiB, buf + 4 * KiB, FS_UNSTABLE, NULL),
		 0);
	k = counters(v);
	CHECK_EQ(k.dalloc_files, 1);
	CHECK_EQ(k.dalloc_bytes, SIZE - 4 * KiB);
	/* Symbolic links until ENOSPC, each target too long for its entry
	 * (a data block each): nothing here syncs, so nothing places the
	 * buffer, and the links meet ENOSPC first: the buffered pages'
	 * blocks, and the extent unit their placement may need, are
	 * promised to them (fs/dalloc_room.c). The links took them before,
	 * and the file's commit answered -ENOSPC for data whose WRITE had
	 * been answered. */
	memset(target, 'x', sizeof(target) - 1);
	while (ndirs < MAXDIRS) {
		snprintf(name, sizeof(name), "l%05d", ndirs);
		ret = fs_symlink(v, NULL, root, name, target, 0777, &d, NULL);
		if (ret < 0)
			break;
		ndirs++;
	}
	CHECK_EQ(ret, -ENOSPC);
	printf("dalloc_nospc: %d links made before ENOSPC\n", ndirs);
	CHECK_EQ(counters(v).dalloc_files, 1);
	CHECK_EQ(fs_statfs(v, &st0), 0);
	/* A stable write of another file meets ENOSPC too. */
	CHECK_EQ(fs_write(v, NULL, safe, 64 * KiB, SIZE, buf, FS_FILE_SYNC, NULL), -ENOSPC);

	/* The commit places it; nothing failed, nothing given up. */
	CHECK_EQ(fs_commit(v, f), 0);
	k = counters(v);
	CHECK_EQ(k.dalloc_files, 0);
	CHECK_EQ(k.dalloc_failures, 0);
	CHECK_EQ(k.dalloc_gave_up_time + k.dalloc_gave_up_offline + k.dalloc_gave_up_memory +
			 k.dalloc_gave_up_close,
		 0);
	CHECK_EQ(fs_drop_count(v), drops);
	CHECK_EQ(fs_getattr(v, f, &a), 0);
	CHECK_EQ(a.size, SIZE);
	CHECK(reads_back(v, f, SIZE, 2));
	CHECK(reads_back(v, safe, 64 * KiB, 1));
	/* FSSTAT had promised none of the placement's blocks: its pages'
	 * and its unit's pair, less the block its first page took out of
	 * the entry. */
	CHECK_EQ(fs_statfs(v, &st1), 0);
	CHECK_EQ(st1.free_blocks, st0.free_blocks + 2 - 1);
	CHECK_EQ(fs_file_extents(v, f, count_ext, &ext), 0);
	CHECK(ext >= 1);

	/* Room made: 100 links go. */
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "l%05d", ndirs - 1 - i);
		CHECK_EQ(fs_remove(v, NULL, root, name), 0);
	}
	CHECK_EQ(fs_sync(v), 0);
	/* A rewrite of the file in pieces with 100-odd blocks free: not
	 * held (buffering keeps an eighth of the volume free), written in
	 * place at once; no reallocation, no error. */
	fill(buf, SIZE, 0, 4);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(fs_write(v, NULL, g, (uint64_t)i * 32 * KiB, 32 * KiB, buf + i * 32 * KiB,
				  FS_UNSTABLE, NULL),
			 0);
	CHECK_EQ(counters(v).dalloc_files, 0);
	CHECK_EQ(fs_commit(v, g), 0);
	ext = 0;
	CHECK_EQ(fs_file_extents(v, g, count_ext, &ext), 0);
	CHECK_EQ(ext, 4);
	CHECK(reads_back(v, g, 128 * KiB, 4));
	CHECK_EQ(counters(v).reallocs, 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);

	/* On disk: both files whole. */
	v = NULL;
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (v) {
		CHECK_EQ(fs_root(v, &root), 0);
		CHECK_EQ(fs_lookup(v, NULL, root, "data", &f, &a), 0);
		CHECK_EQ(a.size, SIZE);
		CHECK(reads_back(v, f, SIZE, 2));
		CHECK_EQ(fs_lookup(v, NULL, root, "safe", &safe, &a), 0);
		CHECK(reads_back(v, safe, 64 * KiB, 1));
		CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
		CHECK_EQ(fs_close(v), 0);
	}
	unlink(image);
	return test_done("dalloc_nospc");
}
