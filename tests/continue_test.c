/* The continuation policy (fs/chain.c's chain_alloc with
 * vol_pick_large_chunk, fs/volume.c): on a volume of two small-file
 * chunks and one large-file chunk, the exact chunk of every extent of
 * files written past the threshold:
 * - a file of a name nothing knows, homed in small-file chunk 0, written
 *   stable 64 KiB at a time to 3 MiB: blocks 0-255 in chunk 0, 256-767 in
 *   large-file chunk 2 (one continuation);
 * - the same written UNSTABLE and committed (delayed allocation places it
 *   in one run, which stops at the threshold and goes on in chunk 2);
 * - a rewrite from the start moves nothing;
 * - a file sparse past the threshold continues in chunk 2 where its data
 *   starts; the hole below it is filled in chunk 0, where its segment is;
 * - at 2 MiB: blocks 0-511 stay; policy off (0): everything stays;
 * - a file placed in the large-file chunk (*.iso) makes no continuation;
 * - invariants and fsck clean after all of it. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/fsck/fsck.h"
#include "fs/layout.h"
#include "tap.h"

static struct fs_volume *vol;
static struct fs_ino root;
static uint8_t buf[3 << 20];

struct segs {
	struct fs_extent e[64];
	uint32_t n;
};

static int got_extent(void *ctx, const struct fs_extent *e)
{
	struct segs *s = ctx;

	if (s->n < 64)
		s->e[s->n] = *e;
	s->n++;
	return 0;
}

/* The blocks of file f in chunk ch within [lo, hi), and in all. */
static uint64_t blocks_in(struct fs_ino f, uint32_t ch, uint64_t lo, uint64_t hi, uint64_t *all)
{
	struct segs s = { .n = 0 };
	uint64_t n = 0;

	*all = 0;
	CHECK_EQ(fs_file_extents(vol, f, got_extent, &s), 0);
	for (uint32_t i = 0; i < s.n && i < 64; i++) {
		*all += s.e[i].len;
		if (s.e[i].chunk == ch && s.e[i].lblk >= lo && s.e[i].lblk + s.e[i].len <= hi)
			n += s.e[i].len;
	}
	return n;
}

static int put(const char *name, uint64_t off, size_t len, enum fs_stable_how how,
	       struct fs_ino *f)
{
	int ret = fs_lookup(vol, NULL, root, name, f, NULL);

	if (ret == -ENOENT)
		ret = fs_create(vol, NULL, root, name, 0644, FS_CREATE_GUARDED, 0, f, NULL);
	for (size_t at = 0; ret == 0 && at < len; at += 65536)
		ret = fs_write(vol, NULL, *f, off + at, len - at < 65536 ? len - at : 65536,
			       buf + at, how, NULL);
	if (ret == 0 && how == FS_UNSTABLE)
		ret = fs_commit(vol, *f);
	return ret;
}

static uint64_t continues(void)
{
	struct fs_counters fc;

	CHECK_EQ(fs_get_counters(vol, &fc), 0);
	return fc.large_continues;
}

static void report(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "invariant: %s\n", msg);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	const enum fs_chunk_kind kinds[3] = { FS_KIND_SMALL, FS_KIND_SMALL, FS_KIND_LARGE };
	struct fs_mkfs_opts o = { .chunk_size = 32u << 20, .chunk_count = 3, .kinds = kinds,
				  .force = 1 };
	struct fsck_opts fo = { .mode = FSCK_CHECK_ONLY, .force = 1, .both_copies = 1 };
	struct fsck_result fr;
	struct fs_ino f;
	uint64_t all;
	char path[256];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + (i >> 12));
	snprintf(path, sizeof(path), "%s/continue_test.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	CHECK_EQ(fs_mkfs(path, &o), 0);
	CHECK_EQ(fs_open(path, 0, &vol), 0);
	CHECK_EQ(fs_root(vol, &root), 0);

	/* stable writes, 64 KiB at a time */
	CHECK_EQ(put("a.bin", 0, 3 << 20, FS_FILE_SYNC, &f), 0);
	CHECK_EQ((uint32_t)(f.num >> 32), 0);
	CHECK_EQ(blocks_in(f, 0, 0, 256, &all), 256);
	CHECK_EQ(blocks_in(f, 2, 256, 768, &all), 512);
	CHECK_EQ(all, 768);
	CHECK_EQ(continues(), 1);
	/* rewritten from the start: nothing moves */
	CHECK_EQ(put("a.bin", 0, 3 << 20, FS_FILE_SYNC, &f), 0);
	CHECK_EQ(blocks_in(f, 0, 0, 256, &all), 256);
	CHECK_EQ(blocks_in(f, 2, 256, 768, &all), 512);
	CHECK_EQ(continues(), 1);

	/* UNSTABLE, placed in one run at the commit */
	CHECK_EQ(put("b.bin", 0, 3 << 20, FS_UNSTABLE, &f), 0);
	CHECK_EQ(blocks_in(f, 0, 0, 256, &all), 256);
	CHECK_EQ(blocks_in(f, 2, 256, 768, &all), 512);
	CHECK_EQ(all, 768);
	CHECK_EQ(continues(), 2);

	/* sparse past the threshold, then the hole below it */
	CHECK_EQ(put("e.bin", 0, 4096, FS_FILE_SYNC, &f), 0);
	CHECK_EQ(put("e.bin", 2 << 20, 1 << 20, FS_FILE_SYNC, &f), 0);
	CHECK_EQ(blocks_in(f, 2, 512, 768, &all), 256);
	CHECK_EQ(all, 257);
	CHECK_EQ(continues(), 3);
	CHECK_EQ(put("e.bin", 3 << 19, 1 << 19, FS_FILE_SYNC, &f), 0); /* blocks 384-511 */
	CHECK_EQ(blocks_in(f, 0, 0, 512, &all), 129);
	CHECK_EQ(all, 385);
	CHECK_EQ(continues(), 3);

	/* at 2 MiB */
	fs_set_large_continue(vol, 2 << 20);
	CHECK_EQ(put("c.bin", 0, 3 << 20, FS_FILE_SYNC, &f), 0);
	CHECK_EQ(blocks_in(f, 0, 0, 512, &all), 512);
	CHECK_EQ(blocks_in(f, 2, 512, 768, &all), 256);
	CHECK_EQ(continues(), 4);
	/* off */
	fs_set_large_continue(vol, 0);
	CHECK_EQ(put("d.bin", 0, 3 << 20, FS_FILE_SYNC, &f), 0);
	CHECK_EQ(blocks_in(f, 0, 0, 768, &all), 768);
	CHECK_EQ(continues(), 4);
	fs_set_large_continue(vol, FS_LARGE_CONTINUE_DEFAULT);

	/* started in the large-file chunk: no continuation */
	CHECK_EQ(put("x.iso", 0, 3 << 20, FS_FILE_SYNC, &f), 0);
	CHECK_EQ((uint32_t)(f.num >> 32), 2);
	CHECK_EQ(blocks_in(f, 2, 0, 768, &all), 768);
	CHECK_EQ(continues(), 4);

	CHECK_EQ(fs_check_invariants(vol, report, NULL), 0);
	CHECK_EQ(fs_close(vol), 0);
	CHECK_EQ(fsck_volume_path(path, -1, &fo, &fr), 0);
	CHECK_EQ(fr.exit_code, 0);
	unlink(path);
	return test_done("continue");
}
