/* One chunk offline while the volume serves the rest (fs/offline.c): the
 * root's chunk refuses to go; with chunk K offline, files elsewhere read
 * back exactly, files in K fail with EIO, listings leave out K's entries,
 * names that may be in K cannot be created, new files go elsewhere, and
 * another process may lock K's range; online K checks it first, without
 * the volume lock (a call from inside the check is served), a failure
 * confirmed with it (a damaged copy is refused, fsck -y repairs it, then
 * it comes back) and every file reads back exactly again, across a reopen
 * too. A chunk changed just before it goes offline is left with a newest
 * dirty list that names nothing. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/format/chunk_lock.h"
#include "fs/fs.h"
#include "fs/fsck/fsck.h"
#include "fs/format/ondisk.h"
#include "tap.h"

#define CHUNK_SIZE (1u << 20)
#define NCHUNKS 6
#define NDIRS 8
#define NFILES 24

static char image[256];

struct file {
	char dir[16], name[16];
	uint64_t fileid;
	size_t len;
};
static struct file files[NDIRS * NFILES];
static int nfiles;

static void report(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "invariant: %s\n", msg);
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 8));
}

static uint32_t chunk_of(uint64_t fileid)
{
	return (uint32_t)(fileid >> 32);
}

static void build(struct fs_volume *v)
{
	struct fs_ino root, d, f;
	struct fs_attr a;
	uint8_t buf[6000];

	CHECK_EQ(fs_root(v, &root), 0);
	for (int i = 0; i < NDIRS; i++) {
		char dn[16];
		snprintf(dn, sizeof(dn), "d%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, dn, 0755, &d, NULL), 0);
		for (int k = 0; k < NFILES; k++) {
			struct file *fl = &files[nfiles];
			snprintf(fl->dir, sizeof(fl->dir), "%s", dn);
			snprintf(fl->name, sizeof(fl->name), "f%d", k);
			fl->len = (size_t)(k * 250) % sizeof(buf);
			fill(buf, fl->len, (unsigned)nfiles);
			CHECK_EQ(fs_create(v, NULL, d, fl->name, 0644, FS_CREATE_GUARDED, 0, &f, &a), 0);
			CHECK_EQ(fs_write(v, NULL, f, 0, fl->len, buf, FS_UNSTABLE, NULL), 0);
			fl->fileid = a.fileid;
			nfiles++;
		}
	}
}

/* 0 and the exact bytes, or the error on the way. */
static int read_file(struct fs_volume *v, const struct file *fl)
{
	struct fs_ino root, d, f;
	uint8_t want[6000], got[6000];
	size_t n;
	int eof, ret;

	if ((ret = fs_root(v, &root)) < 0 || (ret = fs_lookup(v, NULL, root, fl->dir, &d, NULL)) < 0 ||
	    (ret = fs_lookup(v, NULL, d, fl->name, &f, NULL)) < 0 ||
	    (ret = fs_read(v, NULL, f, 0, sizeof(got), got, &n, &eof)) < 0)
		return ret;
	fill(want, fl->len, (unsigned)(fl - files));
	return n == fl->len && memcmp(want, got, n) == 0 ? 0 : -EILSEQ;
}

/* Entries of chunk k's newest valid dirty list in the image, or -1 when
 * it has none. */
static int newest_list_entries(uint32_t k)
{
	uint32_t half = CHUNK_SIZE / OD_BLOCK_SIZE / 2;
	uint64_t best = 0;
	int fd = open(image, O_RDONLY), n = -1;

	CHECK(fd >= 0);
	for (uint32_t area = 0; area < 2; area++) {
		uint8_t blk[OD_BLOCK_SIZE];
		struct od_mb_header h;
		struct od_dl_head dh;
		off_t off = (off_t)k * CHUNK_SIZE + (off_t)(1 + area * half) * OD_BLOCK_SIZE;
		if (pread(fd, blk, sizeof(blk), off) != (ssize_t)sizeof(blk) ||
		    od_verify(blk, sizeof(blk)) < 0)
			continue;
		od_get_mb_header(blk, &h);
		od_get_dl_head(blk + OD_MB_HEADER_SIZE, &dh);
		if (h.type == OD_MB_DIRTY_LIST && h.txid > best) {
			best = h.txid;
			n = (int)dh.nentries;
		}
	}
	close(fd);
	return n;
}

/* Rewrite file fl with its own bytes, FILE_SYNC: a transaction in its
 * chunk, whose list names its units. */
static void touch_file(struct fs_volume *v, const struct file *fl)
{
	struct fs_ino root, d, f;
	uint8_t buf[6000];

	fill(buf, fl->len, (unsigned)(fl - files));
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_lookup(v, NULL, root, fl->dir, &d, NULL), 0);
	CHECK_EQ(fs_lookup(v, NULL, d, fl->name, &f, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, f, 0, fl->len, buf, FS_FILE_SYNC, NULL), 0);
}

/* The gate, watched: how often it ran without and with the volume lock, and
 * whether a call that takes the volume lock works from inside the first
 * run (with the lock held it would never return: the alarm fails it). */
struct watched_gate {
	struct fsck_gate *gate;
	struct fs_volume *v;
	int unlocked_runs, locked_runs, calls_ok;
};

static int watched_gate_check(void *ctx, uint32_t chunk, int unlocked, char *why, size_t whylen)
{
	struct watched_gate *w = ctx;

	if (unlocked) {
		struct fs_ino root;
		struct fs_attr a;
		w->unlocked_runs++;
		alarm(60);
		w->calls_ok += fs_root(w->v, &root) == 0 && fs_getattr(w->v, root, &a) == 0;
		alarm(0);
	} else {
		w->locked_runs++;
	}
	return fsck_gate_chunk(w->gate, chunk, unlocked, why, whylen);
}

static int count_fn(void *ctx, const struct fs_dirent *e)
{
	(void)e;
	(*(int *)ctx)++;
	return 0;
}

/* Entries listed in directory name (".", ".." included), or an error. */
static int listed(struct fs_volume *v, const char *name)
{
	struct fs_ino root, d;
	uint64_t verf = 0;
	int n = 0, eof = 0, ret;

	if ((ret = fs_root(v, &root)) < 0 || (ret = fs_lookup(v, NULL, root, name, &d, NULL)) < 0 ||
	    (ret = fs_readdir(v, NULL, d, 0, &verf, 1, count_fn, &n, &eof)) < 0)
		return ret;
	CHECK_EQ(eof, 1);
	return n;
}

/* The chunk holding the most files, not the root's. */
static uint32_t busiest(uint32_t root_chunk)
{
	int count[NCHUNKS] = { 0 };
	uint32_t best = root_chunk == 0 ? 1 : 0;

	for (int i = 0; i < nfiles; i++)
		count[chunk_of(files[i].fileid)]++;
	for (uint32_t c = 0; c < NCHUNKS; c++)
		if (c != root_chunk && count[c] > count[best])
			best = c;
	return best;
}

static void check_offline_view(struct fs_volume *v, uint32_t k)
{
	int in_k[NDIRS] = { 0 }, elsewhere_ok = 0, in_k_eio = 0;

	for (int i = 0; i < nfiles; i++) {
		int ret = read_file(v, &files[i]);
		if (chunk_of(files[i].fileid) == k) {
			in_k[files[i].dir[1] - '0']++;
			in_k_eio += ret == -EIO;
		} else {
			elsewhere_ok += ret == 0;
		}
	}
	CHECK_EQ(elsewhere_ok, nfiles - (in_k[0] + in_k[1] + in_k[2] + in_k[3] + in_k[4] + in_k[5] +
					 in_k[6] + in_k[7]));
	CHECK_EQ(in_k_eio, in_k[0] + in_k[1] + in_k[2] + in_k[3] + in_k[4] + in_k[5] + in_k[6] +
				   in_k[7]);
	CHECK(in_k_eio > 0);
	/* Listings leave out what K holds (a directory living in K fails). */
	for (int d = 0; d < NDIRS; d++) {
		char name[16];
		int n;
		snprintf(name, sizeof(name), "d%d", d);
		n = listed(v, name);
		if (n == -EIO)
			continue; /* the directory itself is in K */
		CHECK_EQ(n, 2 + NFILES - in_k[d]);
	}
}

static void damage_copy0(uint32_t k, struct od_chunk_header *h)
{
	int fd = open(image, O_RDWR);
	uint8_t blk[4096];
	uint64_t base = (uint64_t)k * CHUNK_SIZE;

	CHECK(fd >= 0);
	CHECK_EQ(pread(fd, blk, sizeof(blk), (off_t)base), (long long)sizeof(blk));
	CHECK_EQ(od_get_chunk_header(blk, h), 0);
	/* Copy 0 of the first map block: the other copy is good. */
	CHECK_EQ(pread(fd, blk, sizeof(blk), (off_t)(base + (uint64_t)h->map_start * 4096)),
		 (long long)sizeof(blk));
	blk[200] ^= 0x5a;
	CHECK_EQ(pwrite(fd, blk, sizeof(blk), (off_t)(base + (uint64_t)h->map_start * 4096)),
		 (long long)sizeof(blk));
	close(fd);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts o = { .chunk_size = CHUNK_SIZE, .chunk_count = NCHUNKS, .force = 1,
				  .bytes_per_inode = 16384 };
	struct fs_volume *v = NULL;
	struct fs_chunk_info ci;
	struct fs_statfs sf;
	struct fsck_gate gate = { .image = image };
	struct od_chunk_header h;
	struct fs_ino root, d, f;
	char why[512];
	uint32_t k, root_chunk;
	int fd, ret, made = 0;

	snprintf(image, sizeof(image), "%s/offline_test.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	CHECK_EQ(fs_mkfs(image, &o), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	build(v);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	root_chunk = chunk_of(root.num);
	k = busiest(root_chunk);

	/* The root's chunk stays. */
	CHECK_EQ(fs_chunk_offline(v, root_chunk, 0, why, sizeof(why)), -EBUSY);
	CHECK(strstr(why, "root directory") != NULL);
	CHECK_EQ(fs_chunk_offline(v, NCHUNKS, 0, why, sizeof(why)), -EINVAL);

	for (int i = 0; i < nfiles; i++)
		if (chunk_of(files[i].fileid) == k && files[i].len > 0) {
			touch_file(v, &files[i]);
			break;
		}
	CHECK_EQ(fs_chunk_offline(v, k, 0, why, sizeof(why)), 0);
	CHECK_EQ(newest_list_entries(k), 0);
	CHECK_EQ(fs_chunk_offline(v, k, 0, why, sizeof(why)), 0); /* already */
	CHECK_EQ(fs_chunk_info(v, k, &ci), 0);
	CHECK_EQ(ci.online, 0);
	CHECK(ci.offline_since > 0);
	CHECK_EQ(fs_statfs(v, &sf), 0);
	CHECK_EQ(sf.chunks_online, NCHUNKS - 1);
	check_offline_view(v, k);

	/* Another process may now have K, not the others. */
	fd = open(image, O_RDWR);
	CHECK(fd >= 0);
	CHECK_EQ(chunk_lock_try(fd, (uint64_t)k * CHUNK_SIZE, CHUNK_SIZE, 1), 0);
	CHECK_EQ(chunk_lock_try(fd, (uint64_t)root_chunk * CHUNK_SIZE, CHUNK_SIZE, 1), -EAGAIN);
	/* ... and while it holds K, K cannot come back. */
	ret = fs_chunk_online(v, k, fsck_gate_chunk, &gate, why, sizeof(why));
	CHECK(ret < 0);
	CHECK_EQ(fs_chunk_info(v, k, &ci), 0);
	CHECK_EQ(ci.online, 0);
	close(fd);

	/* A name that may live in K cannot be made in the root (it has a part
	 * there: d* entries name directories in many chunks) ... */
	CHECK_EQ(fs_mkdir(v, NULL, root, "new", 0755, &d, NULL), -EIO);
	/* ... but in a directory of a chunk that is online and has no part in
	 * K it can, and it does not go to K. */
	for (int i = 0; i < NDIRS; i++) {
		char name[16];
		struct fs_attr a;
		int all_elsewhere = 1;
		snprintf(name, sizeof(name), "d%d", i);
		for (int j = 0; j < nfiles; j++)
			if (!strcmp(files[j].dir, name) && chunk_of(files[j].fileid) == k)
				all_elsewhere = 0;
		if (!all_elsewhere || fs_lookup(v, NULL, root, name, &d, NULL) < 0)
			continue;
		CHECK_EQ(fs_create(v, NULL, d, "made-offline", 0644, FS_CREATE_GUARDED, 0, &f, &a), 0);
		CHECK(chunk_of(a.fileid) != k);
		made = 1;
		break;
	}
	CHECK(made);
	CHECK_EQ(fs_sync(v), 0);

	/* Damaged while offline: the check refuses it (first without the
	 * volume lock, then, confirming, with it), fsck -y repairs it. */
	damage_copy0(k, &h);
	{
		struct watched_gate w = { .gate = &gate, .v = v };
		CHECK_EQ(fs_chunk_online(v, k, watched_gate_check, &w, why, sizeof(why)), -EUCLEAN);
		CHECK_EQ(w.unlocked_runs, 1);
		CHECK_EQ(w.locked_runs, 1);
		CHECK_EQ(w.calls_ok, 1);
	}
	CHECK(strstr(why, "still fails its check") != NULL);
	CHECK(gate.res.problems >= 1);
	CHECK_EQ(fs_chunk_info(v, k, &ci), 0);
	CHECK_EQ(ci.online, 0);
	{
		struct fsck_opts y = { .mode = FSCK_YES, .force = 1 };
		struct fsck_result yr;
		CHECK_EQ(fsck_volume_path(image, (int)k, &y, &yr), 0);
		CHECK_EQ(yr.exit_code, FSCK_EXIT_FIXED);
	}
	{
		/* Clean: the one run without the volume lock decides; the
		 * clients of the other chunks were served meanwhile. */
		struct watched_gate w = { .gate = &gate, .v = v };
		CHECK_EQ(fs_chunk_online(v, k, watched_gate_check, &w, why, sizeof(why)), 0);
		CHECK_EQ(w.unlocked_runs, 1);
		CHECK_EQ(w.locked_runs, 0);
		CHECK_EQ(w.calls_ok, 1);
	}
	CHECK_EQ(gate.res.exit_code, FSCK_EXIT_OK);
	CHECK_EQ(fs_chunk_info(v, k, &ci), 0);
	CHECK_EQ(ci.online, 1);
	CHECK_EQ(ci.offline_since, 0);

	for (int i = 0; i < nfiles; i++)
		CHECK_EQ(read_file(v, &files[i]), 0);
	for (int i = 0; i < NDIRS; i++) {
		char name[16];
		snprintf(name, sizeof(name), "d%d", i);
		CHECK(listed(v, name) >= 2 + NFILES);
	}
	CHECK_EQ(fs_mkdir(v, NULL, root, "new", 0755, &d, NULL), 0);
	CHECK_EQ(fs_check_invariants(v, report, NULL), 0);
	CHECK_EQ(fs_close(v), 0);

	CHECK_EQ(fs_open(image, 0, &v), 0);
	for (int i = 0; i < nfiles; i++)
		CHECK_EQ(read_file(v, &files[i]), 0);
	CHECK_EQ(fs_check_invariants(v, report, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	{
		struct fsck_opts n = { .mode = FSCK_CHECK_ONLY, .force = 1, .cross = 1 };
		struct fsck_result nr;
		CHECK_EQ(fsck_volume_path(image, -1, &n, &nr), 0);
		CHECK_EQ(nr.exit_code, FSCK_EXIT_OK);
	}

	/* A volume open read-only does not bring a chunk back: that settles
	 * its last transaction and may heal its header, which writes (it had
	 * done so). K's header pair spoilt, so K is offline at the open, then
	 * put back: online is refused with EROFS and K's bytes do not move. */
	{
		uint64_t base = (uint64_t)k * CHUNK_SIZE, copy1 = base + CHUNK_SIZE / 2;
		static uint8_t hdr[2][4096], bad[4096], before[CHUNK_SIZE], after[CHUNK_SIZE];

		fd = open(image, O_RDWR);
		CHECK(fd >= 0);
		CHECK_EQ(pread(fd, hdr[0], 4096, (off_t)base), 4096);
		CHECK_EQ(pread(fd, hdr[1], 4096, (off_t)copy1), 4096);
		memset(bad, 0x6b, sizeof(bad));
		CHECK_EQ(pwrite(fd, bad, 4096, (off_t)base), 4096);
		CHECK_EQ(pwrite(fd, bad, 4096, (off_t)copy1), 4096);
		CHECK_EQ(fs_open(image, FS_OPEN_RDONLY, &v), 0);
		CHECK_EQ(fs_chunk_info(v, k, &ci), 0);
		CHECK_EQ(ci.online, 0);
		CHECK_EQ(pwrite(fd, hdr[0], 4096, (off_t)base), 4096);
		CHECK_EQ(pwrite(fd, hdr[1], 4096, (off_t)copy1), 4096);
		CHECK_EQ(pread(fd, before, CHUNK_SIZE, (off_t)base), CHUNK_SIZE);
		why[0] = '\0';
		CHECK_EQ(fs_chunk_online(v, k, fsck_gate_chunk, &gate, why, sizeof(why)), -EROFS);
		CHECK(strstr(why, "read-only") != NULL);
		CHECK_EQ(pread(fd, after, CHUNK_SIZE, (off_t)base), CHUNK_SIZE);
		CHECK(memcmp(before, after, CHUNK_SIZE) == 0);
		CHECK_EQ(fs_chunk_info(v, k, &ci), 0);
		CHECK_EQ(ci.online, 0);
		CHECK_EQ(fs_close(v), 0);
		close(fd);
	}
	unlink(image);
	return test_done("offline");
}
