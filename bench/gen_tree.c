/* gen_tree: writes a deterministic, realistic file tree for the fsck and
 * mkfs -d benchmarks (bench/fsck-compare.sh). Directories hold ~50 entries
 * (about 45 files, and 6-10 subdirectories in the upper levels), made
 * breadth first, so the tree is 3-5 levels deep for 50k-800k files. File
 * sizes: 96% small (log-normal, median 2 KiB, below 64 KiB), 3.9% medium
 * (log-uniform 64 KiB-1 MiB), 0.1% large (2-8 MiB), by default; about
 * 22 KB a file on average. Same N and seed, same tree.
 *
 * usage: gen_tree [-s SEED] [-m MEDIUM_PERMILLE] [-l LARGE_PERMILLE] DIR N
 * DIR must not exist. Prints a one-line summary on stdout. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 5
#define PATTERN (1u << 20) /* bytes of random content files are cut from */

static uint64_t rng_state;

/* splitmix64: small, fast, and the same sequence on every machine. */
static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static double rnd_unit(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0; /* [0, 1) */
}

static uint64_t rnd_range(uint64_t lo, uint64_t hi)
{
	return lo + rnd() % (hi - lo + 1);
}

static double rnd_normal(void)
{
	double u1 = rnd_unit(), u2 = rnd_unit();

	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static unsigned int medium_pm = 39, large_pm = 1; /* per mille of files */

/* The size of the next file, and which class it is in (0 small, 1, 2). */
static uint64_t file_size(int *cls)
{
	uint64_t r = rnd() % 1000;

	if (r < large_pm) {
		*cls = 2;
		return rnd_range(2u << 20, 8u << 20);
	}
	if (r < large_pm + medium_pm) {
		*cls = 1;
		return (uint64_t)exp(log(65536.0) + rnd_unit() * log(16.0));
	}
	*cls = 0;
	for (;;) {
		double s = exp(log(2048.0) + 1.0 * rnd_normal());
		if (s < 65536.0)
			return (uint64_t)s;
	}
}

static unsigned char *pattern;

static int write_file(int dfd, const char *name, uint64_t size)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
	uint64_t done = 0, off = rnd() % PATTERN;

	if (fd < 0)
		return -errno;
	while (done < size) {
		size_t n = PATTERN - off;
		ssize_t w;
		if (n > size - done)
			n = size - done;
		w = write(fd, pattern + off, n);
		if (w <= 0) {
			close(fd);
			return w < 0 ? -errno : -EIO;
		}
		done += (uint64_t)w;
		off = (off + (uint64_t)w) % PATTERN;
	}
	return close(fd) < 0 ? -errno : 0;
}

/* A directory waiting for its entries: its path from DIR and its depth. */
struct pending {
	char *path;
	int depth;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	uint64_t seed = 1, nfiles, files_left, dirs_left, bytes = 0, cls_n[3] = { 0, 0, 0 };
	uint64_t *small_sizes, nsmall = 0, ndirs = 1;
	struct pending *q;
	size_t qhead = 0, qtail = 0, qcap;
	int opt, maxdepth = 0, root;

	while ((opt = getopt(argc, argv, "s:m:l:")) != -1) {
		switch (opt) {
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'm':
			medium_pm = (unsigned int)atoi(optarg);
			break;
		case 'l':
			large_pm = (unsigned int)atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind != 2 || medium_pm + large_pm > 1000)
		goto usage;
	nfiles = strtoull(argv[optind + 1], NULL, 0);
	if (nfiles == 0)
		goto usage;
	if (mkdir(argv[optind], 0755) < 0) {
		fprintf(stderr, "gen_tree: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	root = open(argv[optind], O_RDONLY | O_DIRECTORY);
	rng_state = seed;
	pattern = malloc(PATTERN);
	small_sizes = malloc(nfiles * sizeof(*small_sizes));
	/* ~45 files a directory: this many directories besides the root. */
	dirs_left = nfiles / 45;
	qcap = dirs_left + 2;
	q = calloc(qcap, sizeof(*q));
	if (root < 0 || !pattern || !small_sizes || !q) {
		fprintf(stderr, "gen_tree: out of memory or cannot open %s\n", argv[optind]);
		return 1;
	}
	for (size_t i = 0; i < PATTERN; i += 8) {
		uint64_t v = rnd();
		memcpy(pattern + i, &v, 8);
	}
	q[qtail++] = (struct pending){ strdup("."), 0 };
	files_left = nfiles;
	while (qhead < qtail) {
		struct pending d = q[qhead++];
		uint64_t nsub = 0, nf, share, left_dirs = qtail - qhead + 1 + dirs_left;
		int dfd = openat(root, d.path, O_RDONLY | O_DIRECTORY);

		if (dfd < 0) {
			fprintf(stderr, "gen_tree: %s: %s\n", d.path, strerror(errno));
			return 1;
		}
		if (d.depth > maxdepth)
			maxdepth = d.depth;
		if (dirs_left && d.depth < MAX_DEPTH) {
			nsub = rnd_range(6, 10);
			if (nsub > dirs_left)
				nsub = dirs_left;
		}
		/* An even share of the files left, +-20%; the last directory
		 * queued takes whatever is left. */
		share = (files_left + left_dirs - 1) / left_dirs;
		nf = share * 4 / 5 + rnd() % (share * 2 / 5 + 1);
		if (qhead == qtail && nsub == 0)
			nf = files_left;
		if (nf > files_left)
			nf = files_left;
		for (uint64_t i = 0; i < nf; i++) {
			char name[64];
			int cls, ret;
			uint64_t sz = file_size(&cls);
			snprintf(name, sizeof(name), "f%06llu_%llx.dat",
				 (unsigned long long)(nfiles - files_left), (unsigned long long)(rnd() & 0xffff));
			ret = write_file(dfd, name, sz);
			if (ret < 0) {
				fprintf(stderr, "gen_tree: %s/%s: %s\n", d.path, name, strerror(-ret));
				return 1;
			}
			files_left--;
			bytes += sz;
			cls_n[cls]++;
			if (cls == 0)
				small_sizes[nsmall++] = sz;
		}
		for (uint64_t i = 0; i < nsub; i++) {
			char name[32], *path;
			snprintf(name, sizeof(name), "d%llu", (unsigned long long)i);
			if (mkdirat(dfd, name, 0755) < 0) {
				fprintf(stderr, "gen_tree: %s/%s: %s\n", d.path, name, strerror(errno));
				return 1;
			}
			path = malloc(strlen(d.path) + strlen(name) + 2);
			sprintf(path, "%s/%s", d.path, name);
			q[qtail++] = (struct pending){ path, d.depth + 1 };
			dirs_left--;
			ndirs++;
		}
		close(dfd);
		free(d.path);
	}
	qsort(small_sizes, nsmall, sizeof(*small_sizes), cmp_u64);
	printf("files %llu dirs %llu bytes %llu depth %d small %.1f%% (median %llu B) medium %llu "
	       "large %llu seed %llu\n",
	       (unsigned long long)nfiles, (unsigned long long)ndirs, (unsigned long long)bytes,
	       maxdepth + 1, 100.0 * (double)cls_n[0] / (double)nfiles,
	       (unsigned long long)(nsmall ? small_sizes[nsmall / 2] : 0),
	       (unsigned long long)cls_n[1], (unsigned long long)cls_n[2],
	       (unsigned long long)seed);
	return 0;
usage:
	fprintf(stderr, "usage: gen_tree [-s SEED] [-m MEDIUM_PERMILLE] [-l LARGE_PERMILLE] DIR N\n");
	return 2;
}
