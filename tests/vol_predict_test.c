/* The learned predictor at work in a volume (fs/vol_predict.c): on a
 * volume of two small-file chunks and one large-file chunk,
 * - a removed 4 KiB first.dat and ten *.dat files of 2 MiB made durable by
 *   uid 1000 are eleven samples of "dat" (median class 22), the last three
 *   files already placed by them; a new x.dat, of that owner or
 *   another, is placed in the large-file chunk, which the name table alone
 *   would not do;
 * - a file committed again and again as it grows moves its one sample;
 * - eight tiny *.iso files teach it that here .iso is small: a new b.iso
 *   stays in a small-file chunk although the table calls .iso large;
 * - a suffix it has not seen enough of (.mp4) is placed by the table;
 * - fs_predictor_info reports exactly this. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "tap.h"

static struct fs_volume *vol;
static struct fs_ino root;

static uint32_t home_chunk(struct fs_ino f)
{
	return (uint32_t)(f.num >> 32);
}

/* Create name as uid, write size bytes UNSTABLE and COMMIT it. */
static int make(const char *name, uint32_t uid, uint64_t size, struct fs_ino *f)
{
	static uint8_t buf[1 << 20];
	struct fs_cred cred = { .uid = uid, .gid = uid };
	int ret = fs_create(vol, &cred, root, name, 0644, FS_CREATE_GUARDED, 0, f, NULL);

	memset(buf, 'd', sizeof(buf));
	for (uint64_t off = 0; ret == 0 && off < size; off += sizeof(buf)) {
		size_t n = size - off < sizeof(buf) ? (size_t)(size - off) : sizeof(buf);
		ret = fs_write(vol, &cred, *f, off, n, buf, FS_UNSTABLE, NULL);
	}
	return ret == 0 ? fs_commit(vol, *f) : ret;
}

static int find_top(const struct fs_predictor_info *pi, const char *suffix)
{
	for (uint32_t i = 0; i < pi->ntop; i++)
		if (strcmp(pi->top_suffix[i], suffix) == 0)
			return (int)i;
	return -1;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	const enum fs_chunk_kind kinds[3] = { FS_KIND_SMALL, FS_KIND_SMALL, FS_KIND_LARGE };
	struct fs_mkfs_opts o = { .chunk_size = 64u << 20, .chunk_count = 3, .kinds = kinds,
				  .force = 1 };
	struct fs_cred root_cred = { 0 };
	struct fs_predictor_info pi;
	struct fs_ino f, g;
	char path[256], name[32];
	int t;

	snprintf(path, sizeof(path), "%s/vol_predict_test.%d.img", tmp ? tmp : "/tmp",
		 (int)getpid());
	CHECK_EQ(fs_mkfs(path, &o), 0);
	CHECK_EQ(fs_open(path, 0, &vol), 0);
	if (!vol)
		return test_done("vol_predict");
	CHECK_EQ(fs_root(vol, &root), 0);
	CHECK_EQ(fs_setattr(vol, &root_cred, root,
			    &(struct fs_setattr){ .valid = FS_SET_MODE, .mode = 0777 }, NULL),
		 0);

	/* Nothing learned: .dat is not a name the table knows as large. */
	CHECK_EQ(make("first.dat", 1000, 4096, &f), 0);
	CHECK(home_chunk(f) != 2);
	CHECK_EQ(fs_remove(vol, NULL, root, "first.dat"), 0);

	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "f%d.dat", i);
		CHECK_EQ(make(name, 1000, 2u << 20, &f), 0);
	}
	CHECK_EQ(fs_predictor_info(vol, &pi), 0);
	CHECK_EQ(pi.observed, 11);
	t = find_top(&pi, "dat");
	CHECK(t >= 0);
	if (t >= 0) {
		CHECK_EQ(pi.top_samples[t], 11);
		CHECK_EQ(pi.top_median_class[t], 22);
		CHECK_EQ(pi.top_large_permille[t], 10 * 1000 / 11);
	}
	/* f7.dat to f9.dat came after 8 samples: placed by what it learned */
	CHECK_EQ(pi.answered, 3);
	CHECK_EQ(home_chunk(f), 2);

	CHECK_EQ(make("x.dat", 1000, 0, &f), 0);
	CHECK_EQ(home_chunk(f), 2);
	CHECK_EQ(make("y.DAT", 2000, 0, &f), 0); /* the suffix's entry answers */
	CHECK_EQ(home_chunk(f), 2);
	CHECK_EQ(fs_predictor_info(vol, &pi), 0);
	CHECK_EQ(pi.answered, 5);
	/* x.dat and y.DAT were observed empty: two more samples */
	t = find_top(&pi, "dat");
	CHECK(t >= 0 && pi.top_samples[t] == 13);

	/* One file, committed as it grows: one sample, at its last size. */
	CHECK_EQ(make("g.log", 1000, 100 << 10, &g), 0);
	{
		static uint8_t more[1 << 20];
		struct fs_cred cred = { .uid = 1000, .gid = 1000 };
		for (int k = 1; k <= 3; k++) {
			CHECK_EQ(fs_write(vol, &cred, g, (uint64_t)k << 20, sizeof(more), more,
					  FS_UNSTABLE, NULL),
				 0);
			CHECK_EQ(fs_commit(vol, g), 0);
		}
	}
	CHECK_EQ(fs_predictor_info(vol, &pi), 0);
	t = find_top(&pi, "log");
	CHECK(t >= 0);
	if (t >= 0) {
		CHECK_EQ(pi.top_samples[t], 1);
		CHECK_EQ(pi.top_median_class[t], 23); /* 4 MiB: [2^22, 2^23) is 23 */
	}

	/* Learned: .iso is small here, whatever the table says. */
	CHECK_EQ(make("big.iso", 0, 10, &f), 0); /* unlearned: the table */
	CHECK_EQ(home_chunk(f), 2);
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "a%d.iso", i);
		CHECK_EQ(make(name, 0, 10, &f), 0);
	}
	CHECK_EQ(make("b.iso", 0, 10, &f), 0);
	CHECK(home_chunk(f) != 2);
	CHECK_EQ(make("clip.mp4", 0, 10, &f), 0); /* unlearned: the table */
	CHECK_EQ(home_chunk(f), 2);

	CHECK_EQ(fs_predictor_info(vol, &pi), 0);
	CHECK_EQ(pi.ntop <= FS_PRED_TOP, 1);
	CHECK(pi.entries >= 6); /* dat, log, iso, mp4: a suffix entry and specific ones */
	for (uint32_t i = 1; i < pi.ntop; i++)
		CHECK(pi.top_samples[i - 1] >= pi.top_samples[i]);
	CHECK_EQ(find_top(&pi, "dat"), 0); /* the most sampled */

	CHECK_EQ(fs_close(vol), 0);
	unlink(path);
	return test_done("vol_predict");
}
