/* The reply arena (proto/arena.c): allocations are 16-byte aligned and
 * distinct, a request larger than a block gets a block of its own, and
 * whole blocks are kept by the thread for the next reply: after a release
 * the next replies get the same blocks back (up to four of them), a fifth
 * is freed, and a large block is never kept. Under ASan the kept blocks
 * are freed when their thread ends (no leak), and anything wrong with the
 * reuse is an error there. */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "nfs_ctx.h"
#include "tap.h"

#define BLOCK (64u << 10)

/* nblocks allocations of a whole block each; their addresses in firsts. */
static void fill_blocks(struct arena *a, int nblocks, void **firsts)
{
	for (int i = 0; i < nblocks; i++) {
		/* each of these takes a whole block (the block's header aside) */
		firsts[i] = arena_alloc(a, BLOCK - 64);
		CHECK(firsts[i] != NULL);
		if (firsts[i])
			memset(firsts[i], 0x5a, BLOCK - 64);
	}
}

static void *thread_main(void *arg)
{
	struct arena a = { 0 };
	void *first[6], *again[6];
	char *p, *q, *big;
	int same = 0;

	(void)arg;
	p = arena_alloc(&a, 1);
	q = arena_alloc(&a, 17);
	CHECK(p && q && p != q);
	CHECK_EQ((uintptr_t)p % 16, 0);
	CHECK_EQ((uintptr_t)q % 16, 0);
	CHECK_EQ(q - p, 16);
	big = arena_alloc(&a, 3 * BLOCK);
	CHECK(big != NULL);
	if (big)
		memset(big, 1, 3 * BLOCK);
	arena_release(&a);
	CHECK(a.head == NULL);

	/* Six whole blocks, released: four are kept and come back. */
	fill_blocks(&a, 6, first);
	arena_release(&a);
	fill_blocks(&a, 6, again);
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < 6; j++)
			same += again[i] == first[j];
	CHECK(same >= 4); /* (the allocator may hand a freed one back too) */
	arena_release(&a);
	return NULL;
}

int main(void)
{
	pthread_t t;

	/* On a thread of its own, so that its kept blocks go with it. */
	CHECK_EQ(pthread_create(&t, NULL, thread_main, NULL), 0);
	pthread_join(t, NULL);
	thread_main(NULL); /* and on the main thread, kept until exit */
	return test_done("arena");
}
