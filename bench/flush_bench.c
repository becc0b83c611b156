/* flush_bench: what a commit that touches several NBD stores costs. A
 * volume whose chunks 1..N are placed on NBD exports (fs_open_placed) gets
 * a directory in each of those chunks; then, ROUNDS times, one new file in
 * each directory and one fs_sync: every commit writes to every placed
 * store. Prints the median and 90th percentile of the commit's time and
 * the flushes per commit (the library's counters). Not a test: figures for
 * bench/flush-compare.sh, which runs it against two builds.
 *
 * usage: flush_bench IMAGE ROUNDS URI1 [URI2 ...]   (URIk: chunk k's store) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs.h"

#define MAX_PLACED 16

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *places[MAX_PLACED + 1] = { NULL };
	struct fs_ino root, dir[MAX_PLACED + 1], f;
	struct fs_counters c0, c1;
	struct fs_volume *v;
	int nplaced, rounds, have = 0, made = 0;
	double *t;
	char why[512], name[64];

	if (argc < 4 || (rounds = atoi(argv[2])) < 1 || argc - 3 > MAX_PLACED) {
		fprintf(stderr, "usage: flush_bench IMAGE ROUNDS URI1 [URI2 ...]\n");
		return 2;
	}
	nplaced = argc - 3;
	for (int i = 0; i < nplaced; i++)
		places[i + 1] = argv[3 + i];
	if (fs_open_placed(argv[1], places, (uint32_t)nplaced + 1, 0, &v, why, sizeof(why)) < 0) {
		fprintf(stderr, "flush_bench: open: %s\n", why);
		return 1;
	}
	fs_root(v, &root);
	/* A directory "cK" in each placed chunk K, made by the first run:
	 * directories until each placed chunk has one (new directories of the
	 * root go to the least loaded chunk), renamed. Later runs find them. */
	for (int c = 1; c <= nplaced; c++) {
		snprintf(name, sizeof(name), "c%d", c);
		if (fs_lookup(v, NULL, root, name, &dir[c], NULL) == 0)
			have |= 1 << (c - 1);
	}
	while (have != (1 << nplaced) - 1 && made < 64 * nplaced) {
		struct fs_ino d;
		uint32_t c;
		snprintf(name, sizeof(name), "d%d-%d", (int)getpid(), made++);
		if (fs_mkdir(v, NULL, root, name, 0755, &d, NULL) < 0) {
			fprintf(stderr, "flush_bench: mkdir %s failed\n", name);
			return 1;
		}
		c = (uint32_t)(d.num >> 32);
		if (c >= 1 && c <= (uint32_t)nplaced && !(have & (1 << (c - 1)))) {
			char to[16];
			snprintf(to, sizeof(to), "c%u", c);
			if (fs_rename(v, NULL, root, name, root, to) < 0) {
				fprintf(stderr, "flush_bench: rename %s failed\n", name);
				return 1;
			}
			dir[c] = d;
			have |= 1 << (c - 1);
		}
	}
	if (have != (1 << nplaced) - 1) {
		fprintf(stderr, "flush_bench: no directory landed in every placed chunk\n");
		return 1;
	}
	fs_sync(v);
	t = calloc((size_t)rounds, sizeof(*t));
	fs_get_counters(v, &c0);
	for (int r = 0; r < rounds; r++) {
		double a;
		for (int c = 1; c <= nplaced; c++) {
			snprintf(name, sizeof(name), "f%d-%d", (int)getpid(), r);
			if (fs_create(v, NULL, dir[c], name, 0644, FS_CREATE_GUARDED, 0, &f, NULL) < 0) {
				fprintf(stderr, "flush_bench: create failed\n");
				return 1;
			}
		}
		a = now_us();
		if (fs_sync(v) < 0) {
			fprintf(stderr, "flush_bench: sync failed\n");
			return 1;
		}
		t[r] = now_us() - a;
	}
	fs_get_counters(v, &c1);
	qsort(t, (size_t)rounds, sizeof(*t), cmp_double);
	printf("commits %d stores %d median_us %.0f p90_us %.0f flushes_per_commit %.2f\n", rounds,
	       nplaced, t[rounds / 2], t[rounds * 9 / 10],
	       (double)(c1.txn_flushes - c0.txn_flushes) / (double)(c1.txns - c0.txns));
	free(t);
	return fs_close(v) < 0;
}
