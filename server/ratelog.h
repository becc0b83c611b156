/* Warnings about peers, rate-limited (ratelog.c): one line per kind every
 * RATELOG_INTERVAL_MS at most, so that a flood of hostile connections
 * cannot flood the log. The lines a kind did not log are counted and said
 * in its next line, or in a line of their own once the interval is over
 * (ratelog_flush, from the loop's once-a-second timer). */
#ifndef CHUNKFS_SERVER_RATELOG_H
#define CHUNKFS_SERVER_RATELOG_H

#include <pthread.h>
#include <stdint.h>

#include "server/log.h"

#define RATELOG_INTERVAL_MS 10000u

/* One kind of line. Define it static with RATELOG_INIT; any thread. */
struct ratelog {
	pthread_mutex_t lock;
	enum log_level level;
	const char *kind;              /* what its lines are about, for the summary */
	uint64_t last_ms;              /* its last line (monotonic); 0: none yet */
	unsigned long suppressed;      /* lines not logged since */
	int listed;                    /* on the list ratelog_flush walks */
	struct ratelog *next;
};

#define RATELOG_INIT(lvl, what) \
	{ .lock = PTHREAD_MUTEX_INITIALIZER, .level = (lvl), .kind = (what) }

/* A line of r's kind: logged when the last was RATELOG_INTERVAL_MS ago or
 * more (with the number left out since), else only counted. */
void ratelog_msg(struct ratelog *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Every kind whose interval is over with lines left out says how many. */
void ratelog_flush(void);

#endif
