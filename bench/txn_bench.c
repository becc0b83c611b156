/* The cost of doubled metadata: create, rename and remove throughput on a
 * volume with two copies of every metadata unit against the same volume
 * made --single-copy, in the same run, alternating rounds, medians printed
 * with the ratio. Every SYNC_EVERY operations end in fs_sync() (a group
 * commit, as the NFS server does), so the figures include durability. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs.h"

#define ROUNDS 3

static int sync_every = 64;

enum { PH_CREATE, PH_RENAME, PH_REMOVE, PHASES };
static const char *const phase_name[PHASES] = { "create", "rename", "remove" };

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int die(const char *what, int ret)
{
	fprintf(stderr, "txn_bench: %s: %s\n", what, strerror(-ret));
	exit(1);
}

static void maybe_sync(struct fs_volume *v, int i)
{
	int ret;

	if ((i + 1) % sync_every == 0 && (ret = fs_sync(v)) < 0)
		die("fs_sync", ret);
}

/* One round on an open volume: rates[phase] in operations per second. */
static void round_once(struct fs_volume *v, struct fs_ino dir, int files, double rates[PHASES])
{
	char a[32], b[32];
	double t;
	int ret;

	t = now();
	for (int i = 0; i < files; i++) {
		snprintf(a, sizeof(a), "file-%d", i);
		if ((ret = fs_create(v, NULL, dir, a, 0644, FS_CREATE_GUARDED, 0, NULL, NULL)) < 0)
			die("fs_create", ret);
		maybe_sync(v, i);
	}
	fs_sync(v);
	rates[PH_CREATE] = files / (now() - t);
	t = now();
	for (int i = 0; i < files; i++) {
		snprintf(a, sizeof(a), "file-%d", i);
		snprintf(b, sizeof(b), "renamed-%d", i);
		if ((ret = fs_rename(v, NULL, dir, a, dir, b)) < 0)
			die("fs_rename", ret);
		maybe_sync(v, i);
	}
	fs_sync(v);
	rates[PH_RENAME] = files / (now() - t);
	t = now();
	for (int i = 0; i < files; i++) {
		snprintf(b, sizeof(b), "renamed-%d", i);
		if ((ret = fs_remove(v, NULL, dir, b)) < 0)
			die("fs_remove", ret);
		maybe_sync(v, i);
	}
	fs_sync(v);
	rates[PH_REMOVE] = files / (now() - t);
}

/* A volume of each kind, each warmed by one unmeasured round so that the
 * image file's blocks are allocated (steady state, not first writes). */
static struct fs_volume *setup(const char *image, int single, int files, struct fs_ino *dir)
{
	struct fs_mkfs_opts o = { .chunk_size = 64 << 20, .chunk_count = 16, .force = 1,
				  .single_copy = single };
	double warm[PHASES];
	struct fs_volume *v;
	struct fs_ino root;
	int ret;

	if ((ret = fs_mkfs(image, &o)) < 0)
		die("fs_mkfs", ret);
	if ((ret = fs_open(image, 0, &v)) < 0)
		die("fs_open", ret);
	if ((ret = fs_root(v, &root)) < 0 || (ret = fs_mkdir(v, NULL, root, "d", 0755, dir, NULL)) < 0)
		die("setup", ret);
	round_once(v, *dir, files, warm);
	return v;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	int files = argc > 1 ? atoi(argv[1]) : 10000;
	double rates[2][ROUNDS][PHASES], col[ROUNDS];
	char image[2][256];
	struct fs_volume *v[2];
	struct fs_ino dir[2];

	if (argc > 2)
		sync_every = atoi(argv[2]);
	if (files <= 0 || sync_every <= 0) {
		fprintf(stderr, "usage: txn_bench [FILES [SYNC_EVERY]]\n");
		return 1;
	}
	for (int mode = 0; mode < 2; mode++) {
		snprintf(image[mode], sizeof(image[mode]), "%s/txn_bench.%d.%d.img",
			 tmp ? tmp : "/tmp", (int)getpid(), mode);
		v[mode] = setup(image[mode], mode, files, &dir[mode]);
	}
	for (int r = 0; r < ROUNDS; r++)
		for (int mode = 0; mode < 2; mode++)
			round_once(v[mode], dir[mode], files, rates[mode][r]);
	for (int mode = 0; mode < 2; mode++) {
		fs_close(v[mode]);
		unlink(image[mode]);
	}
	printf("%d files, a sync every %d operations, medians of %d alternating rounds\n", files,
	       sync_every, ROUNDS);
	printf("%-8s %14s %14s %8s\n", "op", "doubled/s", "single/s", "cost");
	for (int p = 0; p < PHASES; p++) {
		double d, s;
		for (int r = 0; r < ROUNDS; r++)
			col[r] = rates[0][r][p];
		d = median(col, ROUNDS);
		for (int r = 0; r < ROUNDS; r++)
			col[r] = rates[1][r][p];
		s = median(col, ROUNDS);
		printf("%-8s %14.0f %14.0f %7.1f%%\n", phase_name[p], d, s, 100.0 * (1 - d / s));
	}
	return 0;
}
