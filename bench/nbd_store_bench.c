/* nbd_store_bench: one NBD chunk store (fs/store/store_nbd.c) read by T
 * threads at once, random aligned reads of BYTES each, for SECONDS; prints
 * reads a second. Built in every tree (bench/nbd_store_bench); against
 * another build tree's store library, to compare two builds in one run
 * (alternate them):
 *   gcc -O2 -pthread -I BUILD -I SRC -o nbd_store_bench SRC/bench/nbd_store_bench.c \
 *       BUILD/.libs/libchunkfs_store.a BUILD/.libs/libchunkfs_format.a -ldl
 *   nbd_store_bench URI THREADS SECONDS BYTES
 * The export needs a chunk header (a chunk copied out of a volume) for the
 * store to make more than one connection. Not a test: it prints a figure. */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fs/store/store.h"
#include "fs/store/store_nbd.h"

#define MAX_THREADS 64

static struct chunk_store *st;
static volatile int stop;
static size_t bytes;
static long reads[MAX_THREADS];

static void *reader(void *arg)
{
	long id = (long)arg;
	unsigned s = (unsigned)id * 7919u + 1;
	char *buf = malloc(bytes);

	while (buf && !stop) {
		s = s * 1103515245u + 12345u;
		uint64_t off = ((uint64_t)(s >> 4) % (st->size / bytes)) * bytes;
		if (store_pread(st, buf, bytes, off) != 0) {
			fprintf(stderr, "nbd_store_bench: a read failed\n");
			exit(1);
		}
		reads[id]++;
	}
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[MAX_THREADS];
	char why[256];
	long total = 0;
	int t, secs;

	if (argc != 5) {
		fprintf(stderr, "usage: nbd_store_bench URI THREADS SECONDS BYTES\n");
		return 2;
	}
	t = atoi(argv[2]);
	secs = atoi(argv[3]);
	bytes = (size_t)atol(argv[4]);
	if (t < 1 || t > MAX_THREADS || secs < 1 || bytes < 512) {
		fprintf(stderr, "nbd_store_bench: 1-%d threads, 1 s or more, 512 bytes or more\n",
			MAX_THREADS);
		return 2;
	}
	if (store_nbd_open(argv[1], 0, &st, why, sizeof(why)) != 0) {
		fprintf(stderr, "nbd_store_bench: %s: %s\n", argv[1], why);
		return 1;
	}
	if (st->size < bytes) {
		fprintf(stderr, "nbd_store_bench: the export is smaller than one read\n");
		return 1;
	}
	for (long i = 0; i < t; i++)
		pthread_create(&th[i], NULL, reader, (void *)i);
	sleep((unsigned)secs);
	stop = 1;
	for (int i = 0; i < t; i++) {
		pthread_join(th[i], NULL);
		total += reads[i];
	}
	printf("%.0f\n", (double)total / secs);
	store_close(st);
	return 0;
}
