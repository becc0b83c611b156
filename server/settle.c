/* The settler: a transaction writes one copy of each unit it changes; the
 * other copy is caught up by the next transaction. Until then a bad sector
 * in a written copy cannot be told from a torn write, and recovery or fsck
 * would roll the whole transaction back. When the volume has been idle
 * for a second with catch-ups pending, this thread runs the catch-up
 * transaction (both copies equal again; rolling it back would lose
 * nothing). It shares the group commit's lock and never runs while a
 * group commit is syncing. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "server/log.h"
#include "server/server.h"

#define SETTLE_IDLE_MS 1000u

uint64_t settle_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void *settle_main(void *arg)
{
	struct server *srv = arg;

	pthread_mutex_lock(&srv->gclock);
	while (!srv->settler_stop) {
		struct timespec until;
		struct fs_counters fc;
		int ret;

		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += 1;
		pthread_cond_timedwait(&srv->settle_cond, &srv->gclock, &until);
		if (srv->settler_stop || srv->gc_syncing ||
		    settle_now_ms() - srv->gc_last_ms < SETTLE_IDLE_MS)
			continue;
		pthread_mutex_unlock(&srv->gclock);
		ret = fs_get_counters(srv->vol, &fc);
		if (ret == 0 && fc.catchup_units) {
			ret = fs_sync(srv->vol);
			if (ret < 0)
				log_warn("catch-up of %u units failed: %s (the next commit retries)",
					 fc.catchup_units, strerror(-ret));
			else
				log_debug("caught up %u units", fc.catchup_units);
		}
		pthread_mutex_lock(&srv->gclock);
		srv->gc_last_ms = settle_now_ms();
	}
	pthread_mutex_unlock(&srv->gclock);
	return NULL;
}

int settle_start(struct server *srv)
{
	pthread_condattr_t ca;
	int ret;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	ret = pthread_cond_init(&srv->settle_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (ret)
		return -ret;
	srv->gc_last_ms = settle_now_ms();
	ret = pthread_create(&srv->settler, NULL, settle_main, srv);
	if (ret) {
		pthread_cond_destroy(&srv->settle_cond);
		return -ret;
	}
	srv->settler_started = 1;
	return 0;
}

void settle_stop(struct server *srv)
{
	if (!srv->settler_started)
		return;
	pthread_mutex_lock(&srv->gclock);
	srv->settler_stop = 1;
	pthread_cond_broadcast(&srv->settle_cond);
	pthread_mutex_unlock(&srv->gclock);
	pthread_join(srv->settler, NULL);
	pthread_cond_destroy(&srv->settle_cond);
	srv->settler_started = 0;
}
