/* Data in the metadata zones spoils as few pairs as it can (fs/chunk.c,
 * alloc_data): a volume churned at 80% full by creates, writes and removes
 * of files from 1 byte to 4 MiB, a sync every 8 operations, never refuses
 * a write for want of a metadata pair while a tenth of it is free (before,
 * data filled a zone in block order and spoiled every pair: a write was
 * refused at 80% full with 100 MiB free); every file reads back its bytes,
 * and fsck finds the volume clean. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/fsck/fsck.h"
#include "tap.h"

#define CHUNK_SIZE (16u << 20)
#define NCHUNKS 3
#define OPS 4000
#define MAXFILES 4000

struct file {
	struct fs_ino ino;
	char name[16];
	uint64_t size;
	uint8_t fill;
};

static struct file files[MAXFILES];
static uint8_t buf[1 << 20], back[1 << 20];

static uint64_t next_size(unsigned *seed)
{
	/* Mostly small, one in ten up to 4 MiB. */
	if (rand_r(seed) % 10 == 0)
		return (uint64_t)(rand_r(seed) % (4 << 20)) + 1;
	return (uint64_t)(rand_r(seed) % 65536) + 1;
}

static int write_file(struct fs_volume *v, struct file *f)
{
	uint64_t off = 0;

	memset(buf, f->fill, sizeof(buf));
	while (off < f->size) {
		size_t n = f->size - off < sizeof(buf) ? (size_t)(f->size - off) : sizeof(buf);
		int ret = fs_write(v, NULL, f->ino, off, n, buf, FS_UNSTABLE, NULL);
		if (ret < 0)
			return ret;
		off += n;
	}
	return 0;
}

static int reads_back(struct fs_volume *v, const struct file *f)
{
	uint64_t off = 0;

	while (off < f->size) {
		size_t n = f->size - off < sizeof(back) ? (size_t)(f->size - off) : sizeof(back), got;
		int eof;
		if (fs_read(v, NULL, f->ino, off, n, back, &got, &eof) < 0 || got != n)
			return 0;
		for (size_t i = 0; i < n; i++)
			if (back[i] != f->fill)
				return 0;
		off += n;
	}
	return 1;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts o = { .chunk_size = CHUNK_SIZE, .chunk_count = NCHUNKS, .force = 1 };
	struct fsck_opts fo = { .mode = FSCK_CHECK_ONLY, .force = 1, .jobs = 1, .both_copies = 1 };
	struct fsck_result res;
	struct fs_volume *v = NULL;
	struct fs_statfs st;
	struct fs_ino root;
	unsigned seed = 12345;
	int nf = 0, id = 0, refused = 0, removes = 0, bad = 0;
	double used = 0, top = 0;
	char path[256];

	snprintf(path, sizeof(path), "%s/zone_pairs_test.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	CHECK_EQ(fs_mkfs(path, &o), 0);
	CHECK_EQ(fs_open(path, 0, &v), 0);
	if (!v)
		return test_done("zone_pairs");
	CHECK_EQ(fs_root(v, &root), 0);
	for (int op = 0; op < OPS; op++) {
		CHECK_EQ(fs_statfs(v, &st), 0);
		used = 1.0 - (double)st.free_blocks / (double)st.total_blocks;
		if (used > top)
			top = used;
		if ((used > 0.80 && nf > 0) || nf == MAXFILES) {
			int i = rand_r(&seed) % nf;
			CHECK_EQ(fs_remove(v, NULL, root, files[i].name), 0);
			files[i] = files[--nf];
			removes++;
		} else {
			struct file *f = &files[nf];
			int ret;
			snprintf(f->name, sizeof(f->name), "f%d", id++);
			f->size = next_size(&seed);
			f->fill = (uint8_t)(id * 7 + 1);
			ret = fs_create(v, NULL, root, f->name, 0644, FS_CREATE_GUARDED, 0, &f->ino,
					NULL);
			if (ret == 0)
				ret = write_file(v, f);
			if (ret < 0) {
				/* Only a volume nearly full may refuse (a large file
				 * drawn at 80% may not fit). */
				fprintf(stderr, "# op %d: %s at %.1f%% used\n", op, strerror(-ret),
					used * 100);
				if (used < 0.90)
					refused++;
				fs_remove(v, NULL, root, f->name);
				continue;
			}
			nf++;
		}
		if (op % 8 == 7)
			CHECK_EQ(fs_sync(v), 0);
	}
	fprintf(stderr, "# %d files, %d removed, at most %.1f%% used\n", nf, removes, top * 100);
	CHECK_EQ(refused, 0);
	CHECK(removes > 500); /* the churn did run at 80% */
	for (int i = 0; i < nf; i++)
		bad += !reads_back(v, &files[i]);
	CHECK_EQ(bad, 0);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fsck_volume_path(path, -1, &fo, &res), 0);
	CHECK_EQ(res.problems, 0);
	CHECK_EQ(res.exit_code, 0);
	unlink(path);
	return test_done("zone_pairs");
}
