/* ra_bench: a file in pieces read in order from a cold page cache, with
 * read-ahead by the file's offsets and without (fs/read_ahead.c), below any
 * NFS layer. The volume is made once: file f written a piece at a time,
 * file g taking the blocks after each piece, so that f's extents do not
 * follow each other in the image (as on an aged volume), and file y
 * written whole (one extent, the young layout). Each round drops the page
 * cache (needs root: /proc/sys/vm/drop_caches), opens the volume and reads
 * one file in order, READ bytes a call, with one distance; the rounds turn
 * between {f, y} x {off, on}. Printed: each round, then the medians.
 * What is read is checked. Not a test.
 *
 *   ra_bench IMAGE [--size MiB] [--piece KiB] [--read KiB] [--distance KiB]
 *            [--rounds N] [--keep]
 *
 * IMAGE is made (or, with --keep and when it exists, reused). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fill(uint8_t *b, size_t len, uint64_t off, char tag)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = (off + i) ^ ((uint64_t)(uint8_t)tag << 56);
		memcpy(b + i, &w, 8);
	}
}

static int write_range(struct fs_volume *v, struct fs_ino f, uint64_t off, uint64_t len,
		       char tag, uint8_t *buf, size_t bufsz)
{
	int ret = 0;

	for (uint64_t o = off; ret == 0 && o < off + len; o += bufsz) {
		size_t n = off + len - o < bufsz ? (size_t)(off + len - o) : bufsz;
		fill(buf, n, o, tag);
		ret = fs_write(v, NULL, f, o, n, buf, FS_UNSTABLE, NULL);
	}
	return ret == 0 ? fs_sync(v) : ret;
}

static int make(const char *image, uint64_t size, uint64_t piece)
{
	struct fs_mkfs_opts o = { .chunk_size = 1ull << 30, .chunk_count = 0, .force = 1 };
	static uint8_t buf[1 << 20];
	struct fs_volume *v;
	struct fs_ino root, f, g, y;
	int ret;

	o.chunk_count = (uint32_t)((3 * size + (64ull << 20)) / o.chunk_size + 1);
	ret = fs_mkfs(image, &o);
	if (ret == 0)
		ret = fs_open(image, 0, &v);
	if (ret < 0)
		return ret;
	ret = fs_root(v, &root);
	if (ret == 0)
		ret = fs_create(v, NULL, root, "f", 0644, FS_CREATE_GUARDED, 0, &f, NULL);
	if (ret == 0)
		ret = fs_create(v, NULL, root, "g", 0644, FS_CREATE_GUARDED, 0, &g, NULL);
	/* g over 1 MiB first, so that no append moves it whole */
	if (ret == 0)
		ret = write_range(v, g, 0, 2u << 20, 'g', buf, sizeof(buf));
	for (uint64_t off = 0, i = 0; ret == 0 && off < size; off += piece, i++) {
		ret = write_range(v, f, off, size - off < piece ? size - off : piece, 'f', buf,
				  sizeof(buf));
		if (ret == 0)
			ret = write_range(v, g, (2u << 20) + i * 65536, 65536, 'g', buf, sizeof(buf));
	}
	if (ret == 0)
		ret = fs_create(v, NULL, root, "y", 0644, FS_CREATE_GUARDED, 0, &y, NULL);
	if (ret == 0)
		ret = write_range(v, y, 0, size, 'y', buf, sizeof(buf));
	{
		int c = fs_close(v);
		if (ret == 0)
			ret = c;
	}
	return ret;
}

static int drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	int ok;

	sync();
	if (fd < 0)
		return -errno;
	ok = write(fd, "3\n", 2) == 2;
	close(fd);
	return ok ? 0 : -EIO;
}

/* One round: MiB/s, or a negative errno. */
static double round_of(const char *image, const char *name, char tag, uint64_t size,
		       size_t rsize, uint32_t distance)
{
	struct fs_volume *v;
	struct fs_ino root, f;
	uint8_t *buf = malloc(rsize), *want = malloc(rsize);
	double t0, t1;
	int ret;

	if (!buf || !want)
		return -ENOMEM;
	ret = drop_caches();
	if (ret == 0)
		ret = fs_open(image, FS_OPEN_RDONLY, &v);
	if (ret < 0)
		goto out;
	fs_set_readahead(v, distance);
	ret = fs_root(v, &root);
	if (ret == 0)
		ret = fs_lookup(v, NULL, root, name, &f, NULL);
	t0 = now();
	for (uint64_t off = 0; ret == 0 && off < size; off += rsize) {
		size_t n;
		int eof;
		ret = fs_read(v, NULL, f, off, rsize, buf, &n, &eof);
		fill(want, n, off, tag);
		if (ret == 0 && (n != (size - off < rsize ? size - off : rsize) ||
				 memcmp(buf, want, n) != 0))
			ret = -EIO;
	}
	t1 = now();
	fs_close(v);
out:
	free(buf);
	free(want);
	return ret < 0 ? ret : (double)size / (1 << 20) / (t1 - t0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	uint64_t size = 256ull << 20, piece = 1u << 20;
	size_t rsize = 1u << 20;
	uint32_t distance = 8u << 20;
	int rounds = 5, keep = 0, opt;
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },  { "piece", required_argument, NULL, 'p' },
		{ "read", required_argument, NULL, 'r' },  { "distance", required_argument, NULL, 'd' },
		{ "rounds", required_argument, NULL, 'n' }, { "keep", no_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 }
	};
	const char *kinds[4] = { "pieces, read-ahead off", "pieces, read-ahead on",
				 "one extent, read-ahead off", "one extent, read-ahead on" };
	double *rate[4];
	const char *image;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 's': size = strtoull(optarg, NULL, 10) << 20; break;
		case 'p': piece = strtoull(optarg, NULL, 10) << 10; break;
		case 'r': rsize = strtoul(optarg, NULL, 10) << 10; break;
		case 'd': distance = (uint32_t)strtoul(optarg, NULL, 10) << 10; break;
		case 'n': rounds = atoi(optarg); break;
		case 'k': keep = 1; break;
		default: return 2;
		}
	}
	if (optind != argc - 1 || rounds < 1 || !size || !piece || !rsize) {
		fprintf(stderr, "usage: ra_bench IMAGE [--size MiB] [--piece KiB] [--read KiB] "
				"[--distance KiB] [--rounds N] [--keep]\n");
		return 2;
	}
	image = argv[optind];
	if (!keep || access(image, F_OK) != 0) {
		int ret = make(image, size, piece);
		if (ret < 0) {
			fprintf(stderr, "ra_bench: making %s: %s\n", image, strerror(-ret));
			return 1;
		}
	}
	for (int k = 0; k < 4; k++)
		rate[k] = calloc((size_t)rounds, sizeof(double));
	printf("ra_bench: %" PRIu64 " MiB read %zu KiB a call, cold; pieces of %" PRIu64
	       " KiB; read-ahead distance %u KiB\n",
	       size >> 20, rsize >> 10, piece >> 10, distance >> 10);
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < 4; i++) {
			int k = (i + r) % 4;
			double x = round_of(image, k < 2 ? "f" : "y", k < 2 ? 'f' : 'y', size, rsize,
					    k % 2 ? distance : 0);
			if (x < 0) {
				fprintf(stderr, "ra_bench: %s: %s\n", kinds[k], strerror((int)-x));
				return 1;
			}
			rate[k][r] = x;
			printf("round %d  %-28s %8.1f MiB/s\n", r + 1, kinds[k], x);
		}
	printf("medians of %d rounds:\n", rounds);
	for (int k = 0; k < 4; k++) {
		qsort(rate[k], (size_t)rounds, sizeof(double), cmp_double);
		printf("  %-28s %8.1f MiB/s  [%.1f-%.1f]\n", kinds[k], rate[k][rounds / 2],
		       rate[k][0], rate[k][rounds - 1]);
	}
	if (!keep)
		unlink(image);
	return 0;
}
