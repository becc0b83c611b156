/* window_bench: one-copy damage in the window, at the seed's size (issue
 * 21). On a volume made with mkfs.chunkfs -d SRC (bench/window-damage.sh
 * builds both), a write load runs through the library, each operation
 * made durable (fs_sync, a group commit as chunkfsd's): creates with a
 * FILE_SYNC write of 8 KiB, UNSTABLE writes of 4 KiB then COMMIT over
 * files of the tree, renames and removes of files of the tree. Right after
 * the last commit the image is copied as it is (its dirty lists in place:
 * what a SIGKILL there leaves); then 1 MiB of random bytes lands on the
 * copy of the chunk that the last transaction wrote first, from the
 * lowest unit its list names; fsck -fy of the whole volume; the volume
 * opened and every acknowledged operation and every file of the tree
 * checked against SRC. Prints what was lost. Not a test.
 *
 * usage: window_bench SRC IMAGE [OPS [SEED]] */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs/format/ondisk.h"
#include "fs/fs.h"
#include "fs/fsck/fsck.h"

enum op_kind { OP_CREATE, OP_WRITE, OP_RENAME, OP_REMOVE };

/* A file of SRC, and what the load did to it. */
struct file {
	char *path;       /* relative to SRC */
	off_t size;
	int removed;      /* by an acknowledged remove */
	char *renamed;    /* its path since an acknowledged rename */
	int written;      /* an acknowledged 4 KiB write at offset 0 */
	unsigned wseed;
};

static struct file *files;
static size_t nfiles, capfiles;
static const char *src;
static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 7;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 23);
	}
}

static int collect(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)f;
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	if (nfiles == capfiles) {
		capfiles = capfiles ? capfiles * 2 : 4096;
		files = realloc(files, capfiles * sizeof(*files));
		if (!files)
			return -1;
	}
	memset(&files[nfiles], 0, sizeof(files[0]));
	files[nfiles].path = strdup(path + strlen(src) + 1);
	files[nfiles].size = st->st_size;
	nfiles++;
	return 0;
}

/* Look up the directory of path and its last name. */
static int walk(struct fs_volume *v, const char *path, struct fs_ino *dir, const char **name)
{
	char part[256];
	const char *p = path, *slash;
	int ret = fs_root(v, dir);

	while (ret == 0 && (slash = strchr(p, '/')) != NULL) {
		size_t n = (size_t)(slash - p);
		if (n >= sizeof(part))
			return -ENAMETOOLONG;
		memcpy(part, p, n);
		part[n] = '\0';
		ret = fs_lookup(v, NULL, *dir, part, dir, NULL);
		p = slash + 1;
	}
	*name = p;
	return ret;
}

static int read_all(struct fs_volume *v, const char *path, uint8_t **out, size_t *len)
{
	struct fs_ino dir, f;
	struct fs_attr a;
	const char *name;
	size_t n = 0;
	int eof = 0, ret = walk(v, path, &dir, &name);

	if (ret == 0)
		ret = fs_lookup(v, NULL, dir, name, &f, &a);
	if (ret < 0)
		return ret;
	*out = malloc(a.size + 1);
	if (!*out)
		return -ENOMEM;
	ret = fs_read(v, NULL, f, 0, a.size + 1, *out, &n, &eof);
	*len = n;
	return ret;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n)
		*len = (size_t)n;
	else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

#define NCREATED_MAX 100000
static char *created[NCREATED_MAX];
static unsigned created_seed[NCREATED_MAX];
static size_t ncreated;

static int run_load(struct fs_volume *v, unsigned ops, unsigned *done)
{
	uint8_t buf[8192];
	unsigned refused = 0;

	for (unsigned i = 0; i < ops; i++) {
		struct file *fl = &files[rnd() % nfiles];
		struct fs_ino dir, f;
		const char *name;
		char path[512], nn[64];
		int ret, kind = (int)(rnd() % 4);
		/* (a full chunk answers ENOSPC: that operation is not acknowledged
		 * and the load goes on; any other error ends it) */

		if (fl->removed || fl->renamed)
			continue;
		if ((ret = walk(v, fl->path, &dir, &name)) < 0)
			return ret;
		switch (kind) {
		case OP_CREATE:
			if (ncreated == NCREATED_MAX)
				continue;
			snprintf(nn, sizeof(nn), "wb_new_%u", i);
			fill(buf, sizeof(buf), i);
			if ((ret = fs_create(v, NULL, dir, nn, 0644, FS_CREATE_GUARDED, 0, &f, NULL)) < 0 ||
			    (ret = fs_write(v, NULL, f, 0, sizeof(buf), buf, FS_FILE_SYNC, NULL)) < 0 ||
			    (ret = fs_sync(v)) < 0)
				goto failed;
			snprintf(path, sizeof(path), "%.*s%s", (int)(name - fl->path), fl->path, nn);
			created[ncreated] = strdup(path);
			created_seed[ncreated++] = i;
			break;
		case OP_WRITE:
			fill(buf, 4096, i);
			if ((ret = fs_lookup(v, NULL, dir, name, &f, NULL)) < 0 ||
			    (ret = fs_write(v, NULL, f, 0, 4096, buf, FS_UNSTABLE, NULL)) < 0 ||
			    (ret = fs_commit(v, f)) < 0 || (ret = fs_sync(v)) < 0)
				goto failed;
			fl->written = 1;
			fl->wseed = i;
			break;
		case OP_RENAME:
			snprintf(nn, sizeof(nn), "wb_ren_%u", i);
			if ((ret = fs_rename(v, NULL, dir, name, dir, nn)) < 0 || (ret = fs_sync(v)) < 0)
				goto failed;
			snprintf(path, sizeof(path), "%.*s%s", (int)(name - fl->path), fl->path, nn);
			fl->renamed = strdup(path);
			break;
		case OP_REMOVE:
			if ((ret = fs_remove(v, NULL, dir, name)) < 0 || (ret = fs_sync(v)) < 0)
				goto failed;
			fl->removed = 1;
			break;
		}
		(*done)++;
		continue;
failed:
		if (ret != -ENOSPC)
			return ret;
		refused++;
	}
	if (refused)
		printf("load: %u operations refused with ENOSPC (not acknowledged)\n", refused);
	return 0;
}

/* The chunk whose newest list has the greatest txid, and where in the
 * image the lowest unit that list names after the header lies, at the
 * copy its transaction wrote first. */
static int window_target(int fd, uint32_t *chunk, uint64_t *off)
{
	uint8_t blk[OD_BLOCK_SIZE];
	struct od_chunk_header h0;
	uint64_t best = 0;

	if (pread(fd, blk, sizeof(blk), 0) != (ssize_t)sizeof(blk) ||
	    od_get_chunk_header(blk, &h0) < 0)
		return -EINVAL;
	for (uint32_t k = 0; k < h0.chunk_count; k++) {
		uint64_t base = (uint64_t)k * h0.nblocks * OD_BLOCK_SIZE;
		struct od_chunk_header h;
		if (pread(fd, blk, sizeof(blk), (off_t)base) != (ssize_t)sizeof(blk) ||
		    od_get_chunk_header(blk, &h) < 0)
			continue;
		for (int a = 0; a < 2; a++) {
			uint64_t at = base + (uint64_t)(h.dirty_start + (a ? h.nblocks / 2 : 0)) * OD_BLOCK_SIZE;
			struct od_mb_header mh;
			struct od_dl_head dh;
			uint32_t lowest = UINT32_MAX;
			uint8_t copy = 0;
			if (pread(fd, blk, sizeof(blk), (off_t)at) != (ssize_t)sizeof(blk))
				continue;
			od_get_mb_header(blk, &mh);
			if (od_verify(blk, OD_BLOCK_SIZE) < 0 || mh.type != OD_MB_DIRTY_LIST || mh.txid <= best)
				continue;
			od_get_dl_head(blk + OD_MB_HEADER_SIZE, &dh);
			for (uint32_t e = 0; e < dh.nentries && e < (OD_MB_PAYLOAD - 16) / 8; e++) {
				struct od_dl_entry de;
				od_get_dl_entry(blk + OD_MB_HEADER_SIZE + 16 + 8 * e, &de);
				if (de.block > 0 && de.block < lowest && !(de.flags & OD_DLE_HELD)) {
					lowest = de.block;
					copy = de.copy;
				}
			}
			if (lowest == UINT32_MAX)
				continue;
			best = mh.txid;
			*chunk = k;
			*off = base + ((uint64_t)lowest + (copy ? h.nblocks / 2 : 0)) * OD_BLOCK_SIZE;
		}
	}
	return best ? 0 : -ENOENT;
}

static void quiet(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
}

int main(int argc, char **argv)
{
	unsigned ops = argc > 3 ? (unsigned)atoi(argv[3]) : 2000, done = 0;
	unsigned lost = 0, acked_lost = 0, compared = 0;
	char crash[4096];
	struct fs_volume *v = NULL;
	struct fsck_opts fo = { .mode = FSCK_YES, .force = 1, .out = quiet };
	struct fsck_result fr;
	uint8_t *img;
	uint32_t chunk = 0;
	uint64_t off = 0;
	double t0;
	int ret, fd;

	if (argc < 3) {
		fprintf(stderr, "usage: window_bench SRC IMAGE [OPS [SEED]]\n");
		return 2;
	}
	if (argc > 4)
		rng ^= (uint64_t)atoll(argv[4]) * 0x9E3779B97F4A7C15ull;
	src = argv[1];
	if (nftw(src, collect, 64, FTW_PHYS) != 0 || nfiles == 0) {
		fprintf(stderr, "window_bench: cannot walk %s\n", src);
		return 1;
	}
	if ((ret = fs_open(argv[2], 0, &v)) < 0) {
		fprintf(stderr, "window_bench: open %s: %s\n", argv[2], strerror(-ret));
		return 1;
	}
	t0 = now();
	ret = run_load(v, ops, &done);
	if (ret < 0) {
		fprintf(stderr, "window_bench: load: %s\n", strerror(-ret));
		return 1;
	}
	printf("load: %u operations acknowledged in %.1f s\n", done, now() - t0);
	/* The image right after the last commit, lists in place. */
	snprintf(crash, sizeof(crash), "cp --sparse=always '%s' '%s.crash'", argv[2], argv[2]);
	if (system(crash) != 0) {
		fprintf(stderr, "window_bench: %s failed\n", crash);
		return 1;
	}
	fs_close(v);
	snprintf(crash, sizeof(crash), "%s.crash", argv[2]);
	fd = open(crash, O_RDWR);
	if (fd < 0 || window_target(fd, &chunk, &off) < 0) {
		fprintf(stderr, "window_bench: no dirty list after the load\n");
		return 1;
	}
	img = malloc(1u << 20);
	for (size_t i = 0; img && i < (1u << 20); i++)
		img[i] = (uint8_t)rnd();
	if (!img || pwrite(fd, img, 1u << 20, (off_t)off) != (ssize_t)(1u << 20) || fsync(fd) < 0 ||
	    close(fd) < 0) {
		fprintf(stderr, "window_bench: damaging %s failed\n", crash);
		return 1;
	}
	free(img);
	printf("damage: 1 MiB of random bytes in chunk %u at byte %llu of the image (the copy "
	       "its newest transaction wrote first)\n",
	       chunk, (unsigned long long)off);
	t0 = now();
	ret = fsck_volume_path(crash, -1, &fo, &fr);
	printf("fsck -fy: exit %d in %.2f s\n", ret < 0 ? ret : fr.exit_code, now() - t0);
	fo.mode = FSCK_CHECK_ONLY;
	ret = fsck_volume_path(crash, -1, &fo, &fr);
	printf("fsck -fn again: exit %d\n", ret < 0 ? ret : fr.exit_code);
	if ((ret = fs_open(crash, 0, &v)) < 0) {
		fprintf(stderr, "window_bench: the repaired volume does not open: %s\n", strerror(-ret));
		return 1;
	}
	for (size_t i = 0; i < nfiles; i++) {
		struct file *fl = &files[i];
		char p[4096];
		uint8_t *want, *got = NULL;
		size_t wl = 0, gl = 0;
		int bad;
		if (fl->removed) {
			struct fs_ino dir, f;
			const char *name;
			if (walk(v, fl->path, &dir, &name) == 0 &&
			    fs_lookup(v, NULL, dir, name, &f, NULL) == 0)
				acked_lost++;
			continue;
		}
		snprintf(p, sizeof(p), "%s/%s", src, fl->path);
		want = slurp(p, &wl);
		if (want && fl->written) {
			uint8_t w[4096];
			fill(w, sizeof(w), fl->wseed);
			if (wl < sizeof(w)) {
				want = realloc(want, sizeof(w));
				wl = sizeof(w);
			}
			memcpy(want, w, sizeof(w));
		}
		bad = !want || read_all(v, fl->renamed ? fl->renamed : fl->path, &got, &gl) < 0 ||
		      gl != wl || memcmp(got, want, wl) != 0;
		compared++;
		if (bad && (fl->renamed || fl->written))
			acked_lost++;
		else
			lost += bad;
		free(want);
		free(got);
	}
	for (size_t i = 0; i < ncreated; i++) {
		uint8_t want[8192], *got = NULL;
		size_t gl = 0;
		fill(want, sizeof(want), created_seed[i]);
		if (read_all(v, created[i], &got, &gl) < 0 || gl != sizeof(want) ||
		    memcmp(got, want, gl) != 0)
			acked_lost++;
		free(got);
	}
	fs_close(v);
	printf("result: %zu files of the tree compared, %u lost; %u acknowledged operations "
	       "lost of %u\n",
	       (size_t)compared, lost, acked_lost, done);
	return lost || acked_lost ? 3 : 0;
}
