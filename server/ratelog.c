/* Rate-limited lines about peers: each kind logs at most one line every
 * RATELOG_INTERVAL_MS and counts the ones it leaves out; the next line, or
 * a summary once the interval is over, says how many there were. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "server/ratelog.h"

/* The kinds that have logged, for ratelog_flush. */
static pthread_mutex_t kinds_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ratelog *kinds;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u + 1;
}

static void list_kind(struct ratelog *r)
{
	pthread_mutex_lock(&kinds_lock);
	r->next = kinds;
	kinds = r;
	pthread_mutex_unlock(&kinds_lock);
}

/* "N more like it in the last S s". */
static void more(char *buf, size_t len, unsigned long n, uint64_t since_ms)
{
	snprintf(buf, len, "%lu more like it in the last %llu s", n,
		 (unsigned long long)((since_ms + 500) / 1000));
}

void ratelog_msg(struct ratelog *r, const char *fmt, ...)
{
	uint64_t now = now_ms(), since;
	unsigned long left_out;
	char line[768], tail[96];
	int first;
	va_list ap;

	if (!log_enabled(r->level))
		return;
	pthread_mutex_lock(&r->lock);
	if (r->last_ms && now - r->last_ms < RATELOG_INTERVAL_MS) {
		r->suppressed++;
		pthread_mutex_unlock(&r->lock);
		return;
	}
	since = r->last_ms ? now - r->last_ms : 0;
	left_out = r->suppressed;
	first = !r->listed;
	r->listed = 1;
	r->suppressed = 0;
	r->last_ms = now;
	pthread_mutex_unlock(&r->lock);
	if (first)
		list_kind(r);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (!left_out) {
		log_msg(r->level, "%s", line);
		return;
	}
	more(tail, sizeof(tail), left_out, since);
	log_msg(r->level, "%s (and %s)", line, tail);
}

void ratelog_flush(void)
{
	uint64_t now = now_ms();
	struct ratelog *r;

	pthread_mutex_lock(&kinds_lock);
	for (r = kinds; r; r = r->next) {
		unsigned long left_out = 0;
		uint64_t since = 0;
		char tail[96];

		pthread_mutex_lock(&r->lock);
		if (r->suppressed && now - r->last_ms >= RATELOG_INTERVAL_MS) {
			left_out = r->suppressed;
			since = now - r->last_ms;
			r->suppressed = 0;
			r->last_ms = now;
		}
		pthread_mutex_unlock(&r->lock);
		if (!left_out)
			continue;
		more(tail, sizeof(tail), left_out, since);
		log_msg(r->level, "%s: %s", r->kind, tail);
	}
	pthread_mutex_unlock(&kinds_lock);
}
