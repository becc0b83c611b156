/* nbd_store_bench: one NBD chunk store (fs/store/store_nbd.c) read by T
 * threads at once, random aligned reads of BYTES each, for SECONDS; prints
 * reads a second. Built in every tree (bench/nbd_store_bench); against
 * another build tree's store library, to compare two builds in one run
 * (alternate them):
 *   gcc -O2 -pthread -I BUILD -I SRC -o nbd_store_bench SRC/bench/nbd_store_bench.c \
 *       BUILD/.libs/libchunkfs_store.a BUILD/.libs/libchunkfs_format.a -ldl
 *   nbd_store_bench URI THREADS SECONDS BYTES [seq|shared|pieces [RA_KB [HINT_KB]]]
 * seq: each thread reads its own 1/THREADS of the export in order instead
 * (wrapping round); shared: the threads read one stream together, each
 * taking the next read (as NFS READs of one file in flight at once); with a read-ahead cache of RA_KB (8192 unless given;
 * 0: none; a build before the read-ahead ignores it); pieces: each thread
 * reads its own part as a file in pieces of BYTES would be read on an aged
 * volume (piece n at n * stride modulo the part's pieces: never the next
 * one in the store), telling the store of the piece HINT_KB ahead after
 * each read (store_willneed, as fs/read_ahead.c does; 0 unless given: no
 * hints). The export needs a chunk header (a chunk copied out of a volume) for the
 * store to make more than one connection. Not a test: it prints a figure. */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/store/store.h"
#include "fs/store/store_nbd.h"

#define MAX_THREADS 64

static struct chunk_store *st;
static volatile int stop;
static size_t bytes;
static int seq; /* 1: a part each; 2: one stream shared (the next read to any);
		 * 3: a part each, in pieces */
static uint64_t hint_pieces; /* pieces ahead told to the store (seq 3) */
static uint64_t shared_next;
static int nthreads;
static long reads[MAX_THREADS];

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Where piece n of thread id's part lies (mode pieces). */
static uint64_t piece_off(long id, uint64_t part, uint64_t n, uint64_t stride)
{
	return ((uint64_t)id * part + n * stride % part) * bytes;
}

static void *reader(void *arg)
{
	long id = (long)arg;
	unsigned s = (unsigned)id * 7919u + 1;
	char *buf = malloc(bytes);
	uint64_t part = st->size / (uint64_t)nthreads / bytes; /* reads in its part */
	uint64_t n = 0, stride = part / 3 | 1;

	while (seq == 3 && part > 1 && gcd(stride, part) != 1)
		stride++;
	for (uint64_t h = 1; seq == 3 && h <= hint_pieces; h++)
		store_willneed(st, bytes, piece_off(id, part, h, stride));

	while (buf && !stop) {
		uint64_t off;
		s = s * 1103515245u + 12345u;
		if (seq == 2)
			off = __atomic_fetch_add(&shared_next, 1, __ATOMIC_RELAXED) %
			      (st->size / bytes) * bytes;
		else if (seq == 3)
			off = piece_off(id, part, n++, stride);
		else if (seq)
			off = ((uint64_t)id * part + n++ % part) * bytes;
		else
			off = ((uint64_t)(s >> 4) % (st->size / bytes)) * bytes;
		if (store_pread(st, buf, bytes, off) != 0) {
			fprintf(stderr, "nbd_store_bench: a read failed\n");
			exit(1);
		}
		reads[id]++;
		if (seq == 3 && hint_pieces) /* after the read, as fs_read tells */
			store_willneed(st, bytes, piece_off(id, part, n + hint_pieces - 1, stride));
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

	if (argc < 5 || argc > 8) {
		fprintf(stderr, "usage: nbd_store_bench URI THREADS SECONDS BYTES "
				"[seq|shared|pieces [RA_KB [HINT_KB]]]\n");
		return 2;
	}
	seq = argc < 6 ? 0 : !strcmp(argv[5], "shared") ? 2 : !strcmp(argv[5], "pieces") ? 3 : 1;
	t = atoi(argv[2]);
	secs = atoi(argv[3]);
	bytes = (size_t)atol(argv[4]);
	if (t < 1 || t > MAX_THREADS || secs < 1 || bytes < 512) {
		fprintf(stderr, "nbd_store_bench: 1-%d threads, 1 s or more, 512 bytes or more\n",
			MAX_THREADS);
		return 2;
	}
	nthreads = t;
#ifdef NBD_STORE_HAS_READAHEAD
	store_nbd_set_readahead((size_t)(argc >= 7 ? atol(argv[6]) : 8192) << 10);
#endif
	if (argc == 8)
		hint_pieces = ((uint64_t)atol(argv[7]) << 10) / bytes;
	if (store_nbd_open(argv[1], 0, &st, why, sizeof(why)) != 0) {
		fprintf(stderr, "nbd_store_bench: %s: %s\n", argv[1], why);
		return 1;
	}
	if (st->size / (uint64_t)t < bytes) {
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
#ifdef NBD_STORE_HAS_READAHEAD
	if (getenv("NBD_STORE_BENCH_STATS")) {
		struct store_nbd_stats ns;
		if (store_nbd_stats(st, &ns) == 0)
			fprintf(stderr, "%ld reads, %llu from the cache, %llu windows fetched, "
					"%llu hinted, %llu dropped unread\n",
				total, (unsigned long long)ns.ra.hits,
				(unsigned long long)ns.ra.fetched, (unsigned long long)ns.ra.hinted,
				(unsigned long long)ns.ra.discarded);
	}
#endif
	store_close(st);
	return 0;
}
