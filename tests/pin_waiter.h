/* What tests/evac_yield_test and tests/dalloc_yield_test share: a thread
 * that takes chunk 1 offline (its wait for the chunk's pins timed), started
 * from a hook run after each window of an unlocked copy or write, which
 * makes each window last WIN_MS. Header only, so that its CHECKs count in
 * the including test's own tap.h counters; include it after tests/tap.h,
 * with WIN_MS defined. */
#ifndef CHUNKFS_TESTS_PIN_WAITER_H
#define CHUNKFS_TESTS_PIN_WAITER_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs.h"

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 12));
}

struct waiter {
	struct fs_volume *v;
	pthread_t th;
	int started, seen_waiting, offline_ret;
	uint32_t windows, windows_at_wait; /* windows made, and when it was seen */
	uint64_t t_call, t_done;           /* the offline called and returned, ms */
};

static void *offline_thread(void *arg)
{
	struct waiter *w = arg;
	char why[256];

	w->t_call = now_ms();
	w->offline_ret = fs_chunk_offline(w->v, 1, 0, why, sizeof(why));
	w->t_done = now_ms();
	return NULL;
}

/* After each window of an unlocked copy or write (its chunks pinned, the
 * lock free): the first starts the offline and waits until it waits for
 * the pins; each then takes WIN_MS, as from a slow store. */
static void window_hook(void *arg)
{
	struct waiter *w = arg;
	struct fs_chunk_info ci;

	w->windows++;
	if (!w->started) {
		w->started = 1;
		CHECK_EQ(pthread_create(&w->th, NULL, offline_thread, w), 0);
		for (int i = 0; i < 10000 && !w->seen_waiting; i++) {
			if (fs_chunk_info(w->v, 1, &ci) == 0)
				w->seen_waiting = ci.pin_waiters == 1;
			if (!w->seen_waiting)
				usleep(1000);
		}
		w->windows_at_wait = w->windows;
	}
	usleep(WIN_MS * 1000); /* the window's copy, from a slow store */
}

#endif
