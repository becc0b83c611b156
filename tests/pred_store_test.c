/* The learned predictor kept in the volume (fs/vol_pred_store.c) and its
 * check (fs/fsck/fsck_pred.c), on a volume of two small-file chunks and
 * one large-file chunk:
 * - a volume that never observed a file has no table: no ro_compat bit,
 *   pred_start 0 (an older volume is exactly that);
 * - 10 *.dat files of 2 MiB and 30 files of 30 suffixes are 62 entries,
 *   3 units (21 a unit); two removes are two lifetimes; the clean close
 *   saves them: the bit and pred_start set;
 * - reopened, the table is loaded with the same entries, counts and top
 *   list, and a new x.dat goes to the large-file chunk on what it read;
 *   fsck finds the volume clean (it claims the units);
 * - copy 0 of the first unit damaged: loaded all the same, and the close
 *   rewrites it (fsck --both-copies clean after);
 * - both copies of the last unit damaged: fsck -n reports 0x030009; the
 *   open does not fail, the table is dropped (counted) and learning starts
 *   again, and the next save reuses the chain's blocks (fsck clean);
 * - the same damage repaired by fsck -p instead: the chain cleared
 *   (pred_start 0), its 6 blocks free again, files untouched;
 * - the save policy: no save before PRED_SAVE_MIN changes, one at them;
 * - the scrub: one copy of a unit spoiled while the volume is open is
 *   healed from the other; both copies spoiled, the table is written
 *   again from memory, the chunk not marked for repair; fsck clean. */
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

static struct fs_volume *vol;
static struct fs_ino root;

static uint32_t home_chunk(struct fs_ino f)
{
	return (uint32_t)(f.num >> 32);
}

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

static int open_vol(const char *path)
{
	int ret = fs_open(path, 0, &vol);

	if (ret == 0)
		ret = fs_root(vol, &root);
	return ret;
}

/* Chunk 0's header, copy 0, from the image. */
static int header(const char *path, struct od_chunk_header *h)
{
	uint8_t b[OD_BLOCK_SIZE];
	int fd = open(path, O_RDONLY), ret = -1;

	if (fd >= 0 && pread(fd, b, sizeof(b), 0) == (ssize_t)sizeof(b))
		ret = od_get_chunk_header(b, h);
	if (fd >= 0)
		close(fd);
	return ret;
}

/* The chain's blocks from pred_start, by its units' next fields. */
static uint32_t chain(const char *path, uint32_t *units, uint32_t max)
{
	struct od_chunk_header h;
	uint8_t b[OD_BLOCK_SIZE];
	uint32_t n = 0, block;
	int fd;

	if (header(path, &h) < 0)
		return 0;
	fd = open(path, O_RDONLY);
	for (block = h.pred_start; fd >= 0 && block && n < max; n++) {
		struct od_mb_header mh;
		units[n] = block;
		if (pread(fd, b, sizeof(b), (off_t)block * OD_BLOCK_SIZE) != (ssize_t)sizeof(b))
			break;
		od_get_mb_header(b, &mh);
		block = mh.next;
	}
	if (fd >= 0)
		close(fd);
	return n;
}

/* Spoil copy (0, 1) of the unit at block: one byte of its payload. */
static void spoil(const char *path, uint32_t block, int copy)
{
	struct od_chunk_header h;
	uint8_t x;
	off_t at;
	int fd = open(path, O_RDWR);

	CHECK(fd >= 0 && header(path, &h) == 0);
	if (fd < 0)
		return;
	at = (off_t)(block + (copy ? h.nblocks / 2 : 0)) * OD_BLOCK_SIZE + 100;
	CHECK_EQ(pread(fd, &x, 1, at), 1);
	x ^= 0x5a;
	CHECK_EQ(pwrite(fd, &x, 1, at), 1);
	close(fd);
}

static char fsck_text[8192];

static void collect(void *ctx, const char *line)
{
	size_t n = strlen(fsck_text);

	(void)ctx;
	snprintf(fsck_text + n, sizeof(fsck_text) - n, "%s\n", line);
}

static int fsck(const char *path, int mode)
{
	struct fsck_opts o = { .mode = mode, .force = 1, .both_copies = 1, .out = collect };
	struct fsck_result r;

	fsck_text[0] = '\0';
	if (fsck_volume_path(path, -1, &o, &r) < 0)
		return -1;
	return r.exit_code;
}

/* One whole pass of the scrub over the volume, summed. */
static int scrub_pass(struct fs_scrub_result *sum)
{
	struct fs_scrub_cursor cur = { 0, 0 };
	struct fs_scrub_result r;
	int ret, steps = 0;

	memset(sum, 0, sizeof(*sum));
	do {
		ret = fs_scrub_step(vol, &cur, 16, &r);
		if (ret < 0)
			return ret;
		sum->units += r.units;
		sum->bad += r.bad;
		sum->healed += r.healed;
		sum->both_bad += r.both_bad;
	} while (!r.wrapped && ++steps < 100000);
	return r.wrapped ? 0 : -ELOOP;
}

static int copy_file(const char *from, const char *to)
{
	static uint8_t b[1 << 20];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t n;
	off_t at = 0;

	while (in >= 0 && out >= 0 && (n = pread(in, b, sizeof(b), at)) > 0) {
		int zero = 1;
		for (ssize_t i = 0; i < n && zero; i++)
			zero = b[i] == 0;
		if (!zero && pwrite(out, b, (size_t)n, at) != n)
			break;
		at += n;
	}
	if (out >= 0 && ftruncate(out, at) < 0)
		at = -1;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return at > 0 ? 0 : -1;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	const enum fs_chunk_kind kinds[3] = { FS_KIND_SMALL, FS_KIND_SMALL, FS_KIND_LARGE };
	struct fs_mkfs_opts o = { .chunk_size = 64u << 20, .chunk_count = 3, .kinds = kinds,
				  .force = 1 };
	struct fs_cred root_cred = { 0 };
	struct fs_predictor_info pi, pj;
	struct od_chunk_header h;
	struct fs_statfs sa, sb;
	struct fs_ino f;
	uint32_t units[64], n, m;
	char path[256], path2[300], name[32];

	snprintf(path, sizeof(path), "%s/pred_store_test.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	snprintf(path2, sizeof(path2), "%s.2", path);
	CHECK_EQ(fs_mkfs(path, &o), 0);

	/* Nothing observed: nothing kept, no bit. */
	CHECK_EQ(open_vol(path), 0);
	CHECK_EQ(fs_predictor_info(vol, &pi), 0);
	CHECK_EQ(pi.loaded, 0);
	CHECK_EQ(pi.last_save, 0);
	CHECK_EQ(fs_close(vol), 0);
	CHECK_EQ(header(path, &h), 0);
	CHECK_EQ(h.feature_ro_compat, 0);
	CHECK_EQ(h.pred_start, 0);

	CHECK_EQ(open_vol(path), 0);
	CHECK_EQ(fs_setattr(vol, &root_cred, root,
			    &(struct fs_setattr){ .valid = FS_SET_MODE, .mode = 0777 }, NULL),
		 0);
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "f%d.dat", i);
		CHECK_EQ(make(name, 1000, 2u << 20, &f), 0);
	}
	for (int i = 0; i < 30; i++) {
		snprintf(name, sizeof(name), "n.s%d", i);
		CHECK_EQ(make(name, 1000, 10, &f), 0);
	}
	CHECK_EQ(fs_remove(vol, NULL, root, "n.s0"), 0);
	CHECK_EQ(fs_remove(vol, NULL, root, "n.s1"), 0);
	CHECK_EQ(fs_predictor_info(vol, &pi), 0);
	CHECK_EQ(pi.entries, 62);
	CHECK_EQ(pi.observed, 40);
	CHECK_EQ(pi.lives, 2);
	CHECK_EQ(pi.saves, 0); /* 42 changes: under PRED_SAVE_MIN */
	CHECK_EQ(fs_close(vol), 0);
	CHECK_EQ(header(path, &h), 0);
	CHECK_EQ(h.feature_ro_compat, OD_FEATURE_RO_COMPAT_PREDICT);
	CHECK(h.pred_start >= h.data_start && h.pred_start < h.nblocks / 2);
	n = chain(path, units, 64);
	CHECK_EQ(n, 3);
	CHECK_EQ(fsck(path, FSCK_CHECK_ONLY), 0);

	/* Read back: the same table. */
	CHECK_EQ(open_vol(path), 0);
	CHECK_EQ(fs_predictor_info(vol, &pj), 0);
	CHECK_EQ(pj.loaded, 1);
	CHECK_EQ(pj.loaded_entries, 62);
	CHECK_EQ(pj.entries, 62);
	CHECK_EQ(pj.observed, 40);
	CHECK_EQ(pj.lives, 2);
	CHECK_EQ(pj.units, 3);
	CHECK_EQ(pj.dropped, 0);
	CHECK(pj.last_save > 0);
	CHECK_EQ(pj.ntop, pi.ntop);
	CHECK_EQ(memcmp(pj.top_suffix, pi.top_suffix, sizeof(pi.top_suffix)), 0);
	CHECK_EQ(memcmp(pj.top_samples, pi.top_samples, sizeof(pi.top_samples)), 0);
	CHECK_EQ(memcmp(pj.top_median_class, pi.top_median_class, sizeof(pi.top_median_class)), 0);
	CHECK_EQ(memcmp(pj.top_life_samples, pi.top_life_samples, sizeof(pi.top_life_samples)),
		 0);
	CHECK_EQ(make("x.dat", 1000, 0, &f), 0);
	CHECK_EQ(home_chunk(f), 2);
	CHECK_EQ(fs_predictor_info(vol, &pj), 0);
	CHECK_EQ(pj.answered, 1);
	CHECK_EQ(fs_close(vol), 0);
	CHECK_EQ(chain(path, units, 64), 3);
	CHECK_EQ(fsck(path, FSCK_CHECK_ONLY), 0);

	/* One bad copy: read from the other, rewritten at the next sync. */
	spoil(path, units[0], 0);
	CHECK_EQ(fsck(path, FSCK_CHECK_ONLY), FSCK_EXIT_UNCORRECTED);
	CHECK(strstr(fsck_text, "[0x000001]") != NULL);
	CHECK_EQ(open_vol(path), 0);
	CHECK_EQ(fs_predictor_info(vol, &pj), 0);
	CHECK_EQ(pj.loaded, 1);
	CHECK_EQ(pj.entries, 62);
	CHECK_EQ(pj.dropped, 0);
	CHECK_EQ(fs_close(vol), 0);
	CHECK_EQ(fsck(path, FSCK_CHECK_ONLY), 0);

	/* Both copies of the last unit bad. */
	n = chain(path, units, 64);
	CHECK_EQ(n, 3);
	spoil(path, units[2], 0);
	spoil(path, units[2], 1);
	CHECK_EQ(copy_file(path, path2), 0);
	CHECK_EQ(fsck(path, FSCK_CHECK_ONLY), FSCK_EXIT_UNCORRECTED);
	CHECK(strstr(fsck_text, "[0x030009]") != NULL);
	CHECK_EQ(open_vol(path), 0);
	CHECK_EQ(fs_predictor_info(vol, &pj), 0);
	CHECK_EQ(pj.loaded, 0);
	CHECK_EQ(pj.dropped, 1);
	CHECK_EQ(pj.entries, 0);
	CHECK_EQ(pj.units, 3); /* the chain's blocks, for the next save */
	CHECK_EQ(make("y.dat", 1000, 0, &f), 0);
	CHECK(home_chunk(f) != 2); /* learning starts again */
	CHECK_EQ(fs_close(vol), 0);
	CHECK_EQ(fsck(path, FSCK_CHECK_ONLY), 0);
	m = chain(path, units + 8, 8);
	CHECK_EQ(m, 1);
	CHECK_EQ(units[8], units[0]); /* reused; the other two freed */
	CHECK_EQ(open_vol(path), 0);
	CHECK_EQ(fs_predictor_info(vol, &pj), 0);
	CHECK_EQ(pj.loaded, 1);
	CHECK_EQ(pj.entries, 2);
	CHECK_EQ(fs_close(vol), 0);

	/* The same damage, repaired by fsck: the chain cleared, its blocks
	 * free, every file still there. */
	CHECK_EQ(open_vol(path2), 0);
	CHECK_EQ(fs_statfs(vol, &sa), 0);
	CHECK_EQ(fs_close(vol), 0);
	CHECK_EQ(fsck(path2, FSCK_PREEN), FSCK_EXIT_FIXED);
	CHECK(strstr(fsck_text, "[0x030009]") != NULL);
	CHECK_EQ(header(path2, &h), 0);
	CHECK_EQ(h.pred_start, 0);
	CHECK_EQ(fsck(path2, FSCK_CHECK_ONLY), 0);
	CHECK_EQ(open_vol(path2), 0);
	CHECK_EQ(fs_statfs(vol, &sb), 0);
	CHECK_EQ(sb.free_blocks, sa.free_blocks + 6);
	CHECK_EQ(sb.free_inodes, sa.free_inodes);
	CHECK_EQ(fs_lookup(vol, &root_cred, root, "f9.dat", &f, NULL), 0);
	CHECK_EQ(fs_predictor_info(vol, &pj), 0);
	CHECK_EQ(pj.loaded, 0);
	CHECK_EQ(pj.dropped, 0);

	/* The policy: PRED_SAVE_MIN changes (interval 0 here), then a save
	 * at the next sync. */
	fs_predictor_save_policy(vol, 64, 0);
	for (int i = 0; i < 63; i++) {
		snprintf(name, sizeof(name), "p%d.t", i);
		CHECK_EQ(make(name, 0, 10, &f), 0);
	}
	CHECK_EQ(fs_sync(vol), 0);
	CHECK_EQ(fs_predictor_info(vol, &pj), 0);
	CHECK_EQ(pj.saves, 0);
	CHECK_EQ(make("p63.t", 0, 10, &f), 0);
	CHECK_EQ(fs_sync(vol), 0);
	CHECK_EQ(fs_predictor_info(vol, &pj), 0);
	CHECK_EQ(pj.saves, 1);
	CHECK_EQ(fs_close(vol), 0);
	CHECK_EQ(fsck(path2, FSCK_CHECK_ONLY), 0);

	/* The scrub judges the chain's units: one copy spoiled while the
	 * volume serves is healed from the other; both copies spoiled, the
	 * table (whole in memory) is written again, the chunk not marked for
	 * repair; fsck clean after, and the table read back whole. */
	n = chain(path2, units, 64);
	CHECK(n >= 1);
	CHECK_EQ(open_vol(path2), 0);
	CHECK_EQ(fs_predictor_info(vol, &pi), 0);
	CHECK_EQ(pi.loaded, 1);
	{
		struct fs_scrub_result sr, clean;
		struct fs_chunk_info ci;
		CHECK_EQ(scrub_pass(&clean), 0);
		CHECK_EQ(clean.bad, 0);
		spoil(path2, units[0], 1);
		CHECK_EQ(scrub_pass(&sr), 0);
		CHECK_EQ(sr.units, clean.units);
		CHECK_EQ(sr.bad, 1);
		CHECK_EQ(sr.healed, 1);
		CHECK_EQ(sr.both_bad, 0);
		CHECK_EQ(fs_sync(vol), 0);
		spoil(path2, units[n - 1], 0);
		spoil(path2, units[n - 1], 1);
		CHECK_EQ(scrub_pass(&sr), 0);
		CHECK_EQ(sr.units, clean.units);
		CHECK_EQ(sr.bad, 2);
		CHECK_EQ(sr.healed, 1);
		CHECK_EQ(sr.both_bad, 0);
		CHECK_EQ(fs_chunk_info(vol, 0, &ci), 0);
		CHECK_EQ(ci.scrub_both_bad, 0);
		CHECK(ci.state != OD_STATE_NEEDS_REPAIR);
		CHECK_EQ(fs_sync(vol), 0);
		CHECK_EQ(fs_predictor_info(vol, &pj), 0);
		CHECK_EQ(pj.saves, pi.saves + 1);
		CHECK_EQ(scrub_pass(&sr), 0);
		CHECK_EQ(sr.bad, 0);
	}
	CHECK_EQ(fs_close(vol), 0);
	CHECK_EQ(fsck(path2, FSCK_CHECK_ONLY), 0);
	CHECK_EQ(open_vol(path2), 0);
	CHECK_EQ(fs_predictor_info(vol, &pj), 0);
	CHECK_EQ(pj.loaded, 1);
	CHECK_EQ(pj.dropped, 0);
	CHECK_EQ(pj.entries, pi.entries);
	CHECK_EQ(fs_close(vol), 0);

	unlink(path);
	unlink(path2);
	return test_done("pred_store");
}
