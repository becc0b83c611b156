/* Evacuating a chunk (fs/evacuate.c), the layer built so far: draining. A
 * volume of three 2 MiB chunks with a directory and a file in chunk 1;
 * chunk 1 starts draining: the file's appended data lands in other chunks
 * (a continuation), and no new file, directory or data block lands in
 * chunk 1, nor after a reopen (the flag is in the header); chunk 0 and a
 * chunk past the count are refused; once draining stops, chunk 1 takes new
 * files again. Every file reads back and the volume checks clean with
 * cross-chunk references confirmed. */
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

#define MB (1u << 20)

static char image[200];

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 10));
}

/* Extents counted by chunk. */
struct ext_count {
	uint32_t in[4];
};

static int count_ext(void *ctx, const struct fs_extent *e)
{
	struct ext_count *c = ctx;

	if (e->chunk < 4)
		c->in[e->chunk] += e->len;
	return 0;
}

static struct ext_count extents_of(struct fs_volume *v, struct fs_ino f)
{
	struct ext_count c = { { 0 } };

	CHECK_EQ(fs_file_extents(v, f, count_ext, &c), 0);
	return c;
}

static void check_bytes(struct fs_volume *v, struct fs_ino f, size_t len, unsigned seed)
{
	static uint8_t want[256 * 1024], got[256 * 1024];
	size_t n = 0;
	int eof = 0;

	fill(want, len, seed);
	memset(got, 0, len);
	CHECK_EQ(fs_read(v, NULL, f, 0, len, got, &n, &eof), 0);
	CHECK_EQ(n, len);
	CHECK(memcmp(want, got, len) == 0);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts mo = { .chunk_size = 2 * MB, .chunk_count = 3, .force = 1 };
	struct fsck_opts fo = { .force = 1, .cross = 1, .both_copies = 1 };
	struct fsck_result res;
	struct fs_chunk_info ci;
	struct fs_volume *v;
	struct fs_ino root, d[6], dk = { 0 }, big, f;
	static uint8_t buf[256 * 1024];
	struct ext_count ec;
	char why[256], name[32];
	int found = 0;

	snprintf(image, sizeof(image), "%s/evac_test.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	CHECK_EQ(fs_mkfs(image, &mo), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	/* Directories under the root spread over the chunks: one lands in 1. */
	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &d[i], NULL), 0);
		if (!found && (d[i].num >> 32) == 1) {
			dk = d[i];
			found = 1;
		}
	}
	CHECK(found);
	CHECK_EQ(fs_create(v, NULL, dk, "big", 0644, FS_CREATE_GUARDED, 0, &big, NULL), 0);
	CHECK_EQ(big.num >> 32, 1);
	fill(buf, sizeof(buf), 1);
	CHECK_EQ(fs_write(v, NULL, big, 0, 16384, buf, FS_FILE_SYNC, NULL), 0);
	ec = extents_of(v, big);
	CHECK_EQ(ec.in[1], 4);

	/* Refused: chunk 0 names the volume; no chunk 3. */
	CHECK_EQ(fs_chunk_drain(v, 0, 1, why, sizeof(why)), -EINVAL);
	CHECK_EQ(fs_chunk_drain(v, 3, 1, why, sizeof(why)), -EINVAL);
	CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
	CHECK_EQ(ci.draining, 0);
	CHECK_EQ(fs_chunk_drain(v, 1, 1, why, sizeof(why)), 0);
	CHECK_EQ(fs_chunk_drain(v, 1, 1, why, sizeof(why)), 0); /* already */
	CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
	CHECK_EQ(ci.draining, 1);

	/* The file grows: its new blocks go to another chunk. */
	CHECK_EQ(fs_write(v, NULL, big, 16384, sizeof(buf) - 16384, buf + 16384, FS_FILE_SYNC,
			  NULL),
		 0);
	ec = extents_of(v, big);
	CHECK_EQ(ec.in[1], 4);
	CHECK_EQ(ec.in[0] + ec.in[2], sizeof(buf) / 4096 - 4);
	check_bytes(v, big, sizeof(buf), 1);
	/* New files in a directory of chunk 1, and new directories: elsewhere. */
	for (int i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		CHECK_EQ(fs_create(v, NULL, dk, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
		CHECK(f.num >> 32 != 1);
		fill(buf, 20000, (unsigned)(100 + i));
		CHECK_EQ(fs_write(v, NULL, f, 0, 20000, buf, FS_UNSTABLE, NULL), 0);
		snprintf(name, sizeof(name), "e%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &f, NULL), 0);
		CHECK(f.num >> 32 != 1);
	}
	CHECK_EQ(fs_sync(v), 0);
	for (int i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		CHECK_EQ(fs_lookup(v, NULL, dk, name, &f, NULL), 0);
		ec = extents_of(v, f);
		CHECK_EQ(ec.in[1], 0);
		CHECK_EQ(ec.in[0] + ec.in[2], 5);
		check_bytes(v, f, 20000, (unsigned)(100 + i));
	}
	CHECK_EQ(fs_close(v), 0);

	/* The flag survives a reopen. */
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
	CHECK_EQ(ci.draining, 1);
	CHECK_EQ(fs_create(v, NULL, dk, "after-reopen", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	CHECK(f.num >> 32 != 1);
	check_bytes(v, big, sizeof(buf), 1);
	/* Draining stops: chunk 1 takes the directory's new files again. */
	CHECK_EQ(fs_chunk_drain(v, 1, 0, why, sizeof(why)), 0);
	CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
	CHECK_EQ(ci.draining, 0);
	CHECK_EQ(fs_create(v, NULL, dk, "undrained", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	CHECK_EQ(f.num >> 32, 1);
	CHECK_EQ(fs_close(v), 0);

	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.chunks, 3);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(res.exit_code, 0);
	unlink(image);
	return test_done("evac_test");
}
