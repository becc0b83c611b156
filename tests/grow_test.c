/* Chunks added to an open volume (fs/grow.c): a volume of two 1 MiB chunks
 * with files takes chunk 2, a new 2 MiB region at the image's end (the
 * image grows), and chunk 3, a small-file chunk on a file of its own made
 * by fs_mkfs_chunk; new directories go to the new chunks at once and
 * files written there read back. Refused, each leaving the count as it
 * was: a store made for another index, another volume's chunk, a store
 * whose record fails, fs_mkfs_chunk over a chunk header without force. A
 * reopen (chunk 3 named as a placed chunk) finds four chunks and every
 * file; with chunk 3's bytes put back into its region of the image, the
 * whole volume checks clean with cross-chunk references confirmed. A
 * chunk whose count never committed (the volume closed after the header
 * was written, before the count: simulated by writing the header alone)
 * is not part of the volume. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/fsck/fsck.h"
#include "tap.h"

#define MB (1u << 20)

static char image[200], other[256], c3[256], c5[256], bad3[256];

struct file {
	char dir[16];
	char name[16];
	size_t len;
};
static struct file files[64];
static int nfiles;

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 10));
}

/* Directory dn under the root with four files; returns its chunk. */
static uint32_t populate(struct fs_volume *v, const char *dn)
{
	struct fs_ino root, d, f;
	static uint8_t buf[20000];

	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_mkdir(v, NULL, root, dn, 0755, &d, NULL), 0);
	for (int k = 0; k < 4; k++) {
		struct file *fl = &files[nfiles];
		snprintf(fl->dir, sizeof(fl->dir), "%s", dn);
		snprintf(fl->name, sizeof(fl->name), "f%d", k);
		fl->len = 3000 + (size_t)k * 5000;
		fill(buf, fl->len, (unsigned)nfiles);
		CHECK_EQ(fs_create(v, NULL, d, fl->name, 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
		CHECK_EQ(fs_write(v, NULL, f, 0, fl->len, buf, FS_FILE_SYNC, NULL), 0);
		nfiles++;
	}
	CHECK_EQ(fs_sync(v), 0);
	return (uint32_t)(d.num >> 32);
}

static void check_files(struct fs_volume *v, const char *when)
{
	static uint8_t want[20000], got[20000];
	struct fs_ino root, d, f;
	int bad = 0;

	CHECK_EQ(fs_root(v, &root), 0);
	for (int i = 0; i < nfiles; i++) {
		struct file *fl = &files[i];
		size_t n = 0;
		int eof = 0;
		fill(want, fl->len, (unsigned)i);
		if (fs_lookup(v, NULL, root, fl->dir, &d, NULL) != 0 ||
		    fs_lookup(v, NULL, d, fl->name, &f, NULL) != 0 ||
		    fs_read(v, NULL, f, 0, sizeof(got), got, &n, &eof) != 0 || n != fl->len ||
		    memcmp(got, want, n) != 0) {
			fprintf(stderr, "%s: %s/%s does not read back\n", when, fl->dir, fl->name);
			bad++;
		}
	}
	CHECK_EQ(bad, 0);
}

static int record_calls, record_fail, region_records;
static uint32_t recorded_index;
static char recorded[256];

static int record(void *ctx, uint32_t index, const char *where, char *why, size_t whylen)
{
	CHECK(ctx == &record_calls);
	if (!where) { /* a region chunk: nothing to record but the index */
		region_records++;
		recorded_index = index;
		return 0;
	}
	record_calls++;
	if (record_fail) {
		snprintf(why, whylen, "the test refuses to record");
		return -EIO;
	}
	recorded_index = index;
	snprintf(recorded, sizeof(recorded), "%s", where);
	return 0;
}

static uint64_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts mo = { .chunk_size = MB, .chunk_count = 2, .force = 1 };
	struct fs_chunk_opts co = { 0 };
	struct fs_chunk_info ci;
	struct fs_volume *v;
	struct fsck_opts fo = { .force = 1, .cross = 1, .both_copies = 1 };
	struct fsck_result res;
	const char *places[4] = { NULL, NULL, NULL, c3 };
	char why[256];
	uint32_t idx = 0;

	snprintf(image, sizeof(image), "%s/grow_test.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	snprintf(other, sizeof(other), "%s.other", image);
	snprintf(c3, sizeof(c3), "%s.c3", image);
	snprintf(c5, sizeof(c5), "%s.c5", image);
	snprintf(bad3, sizeof(bad3), "%s.bad3", image);
	CHECK_EQ(fs_mkfs(image, &mo), 0);
	CHECK_EQ(fs_mkfs(other, &mo), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	populate(v, "a");
	populate(v, "b");

	/* Chunk 2: a 2 MiB region at the image's end. */
	co.chunk_size = 2 * MB;
	co.record = record;
	co.record_ctx = &record_calls;
	CHECK_EQ(fs_add_chunk(v, &co, NULL, &idx, why, sizeof(why)), 0);
	CHECK_EQ(idx, 2);
	CHECK_EQ(region_records, 1); /* told, so that a stale place for 2 goes */
	CHECK_EQ(recorded_index, 2);
	CHECK_EQ(fs_chunk_count(v), 3);
	CHECK_EQ(file_size(image), 4 * MB);
	CHECK_EQ(populate(v, "c"), 2); /* the emptiest chunk takes the new directory */

	/* Chunk 3 on a file of its own: fs_mkfs_chunk makes it (index 3, the
	 * count, by default), a small-file chunk of 1 MiB. */
	memset(&co, 0, sizeof(co));
	co.kind = FS_KIND_SMALL;
	CHECK_EQ(fs_mkfs_chunk(image, &co, c3, &idx, why, sizeof(why)), 0);
	CHECK_EQ(idx, 3);
	CHECK_EQ(file_size(c3), MB);
	CHECK_EQ(fs_mkfs_chunk(image, &co, c3, &idx, why, sizeof(why)), -EEXIST);
	CHECK(strstr(why, "holds chunk 3 of this volume") != NULL);
	/* Made for index 5, another volume's, or an unrecorded place: refused. */
	co.index = 5;
	CHECK_EQ(fs_mkfs_chunk(image, &co, c5, &idx, why, sizeof(why)), 0);
	co.index = 0;
	CHECK_EQ(fs_add_chunk(v, &co, c5, &idx, why, sizeof(why)), -EUCLEAN);
	CHECK(strstr(why, "header says chunk 5") != NULL);
	CHECK_EQ(fs_mkfs_chunk(other, &co, bad3, &idx, why, sizeof(why)), 0);
	CHECK_EQ(idx, 2);
	CHECK_EQ(fs_add_chunk(v, &co, bad3, &idx, why, sizeof(why)), -EUCLEAN);
	CHECK(strstr(why, "another volume") != NULL);
	co.record = record;
	co.record_ctx = &record_calls;
	record_fail = 1;
	CHECK_EQ(fs_add_chunk(v, &co, c3, &idx, why, sizeof(why)), -EIO);
	CHECK(strstr(why, "refuses to record") != NULL);
	CHECK_EQ(fs_chunk_count(v), 3);
	record_fail = 0;
	CHECK_EQ(fs_add_chunk(v, &co, c3, &idx, why, sizeof(why)), 0);
	CHECK_EQ(idx, 3);
	CHECK_EQ(record_calls, 2);
	CHECK_EQ(recorded_index, 3);
	CHECK(strcmp(recorded, c3) == 0);
	CHECK_EQ(fs_chunk_count(v), 4);
	CHECK_EQ(fs_chunk_info(v, 3, &ci), 0);
	CHECK(ci.placed);
	CHECK(ci.online);
	CHECK_EQ(ci.kind, FS_KIND_SMALL);
	CHECK_EQ(file_size(image), 5 * MB); /* its region keeps a copy of its header */
	CHECK_EQ(populate(v, "d"), 3);
	check_files(v, "while open");
	CHECK_EQ(fs_close(v), 0);

	/* Reopened: four chunks, chunk 3 from its file. */
	CHECK_EQ(fs_open_placed(image, places, 4, 0, &v, why, sizeof(why)), 0);
	CHECK_EQ(fs_chunk_count(v), 4);
	CHECK_EQ(fs_chunk_info(v, 3, &ci), 0);
	CHECK(ci.online);
	check_files(v, "after a reopen");
	CHECK_EQ(fs_close(v), 0);

	/* Chunk 3's bytes into its region: the whole volume checks clean. */
	{
		static uint8_t buf[MB];
		int in = open(c3, O_RDONLY), out = open(image, O_WRONLY);
		CHECK(in >= 0 && out >= 0);
		CHECK_EQ(pread(in, buf, MB, 0), MB);
		CHECK_EQ(pwrite(out, buf, MB, 4 * MB), MB);
		close(in);
		close(out);
	}
	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.chunks, 4);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(res.exit_code, 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_chunk_count(v), 4);
	check_files(v, "from one image");

	/* A header written past the end, its count never committed: fs_mkfs_chunk
	 * for index 4 into a copy of the region is what a crash between the
	 * header and the count leaves; the volume still has four chunks. */
	CHECK_EQ(fs_close(v), 0);
	memset(&co, 0, sizeof(co));
	CHECK_EQ(fs_mkfs_chunk(image, &co, c5, &idx, why, sizeof(why)), -EEXIST); /* (index 5's) */
	co.force = 1;
	CHECK_EQ(fs_mkfs_chunk(image, &co, c5, &idx, why, sizeof(why)), 0);
	CHECK_EQ(idx, 4);
	{
		static uint8_t buf[MB];
		int in = open(c5, O_RDONLY), out = open(image, O_WRONLY);
		CHECK(in >= 0 && out >= 0);
		CHECK_EQ(pread(in, buf, MB, 0), MB);
		CHECK_EQ(pwrite(out, buf, MB, 5 * MB), MB);
		close(in);
		close(out);
	}
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_chunk_count(v), 4);
	check_files(v, "with an uncounted chunk after the end");
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.problems, 0);

	unlink(image);
	unlink(other);
	unlink(c3);
	unlink(c5);
	unlink(bad3);
	return test_done("grow_test");
}
