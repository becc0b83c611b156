/* Evacuation's scheduling in chunkfsd (evac.c): a thread that runs
 * fs_evac_step on the chunk being evacuated while no client call waits,
 * under a cap on the data it copies; started, paused, resumed and
 * cancelled through the control socket (chunkfsctl evacuate K ...). */
#ifndef CHUNKFS_SERVER_EVAC_H
#define CHUNKFS_SERVER_EVAC_H

#include <stdint.h>

#include "fs/fs.h"

struct server;
struct evacuator;

enum evac_run {
	EVAC_OFF = 0,     /* no chunk is being evacuated */
	EVAC_RUNNING = 1,
	EVAC_PAUSED = 2,
	EVAC_DONE = 3,    /* everything this build moves has moved; the chunk drains on */
	EVAC_FAILED = 4,  /* a step failed (error says why); resume tries again */
};

/* What status shows. */
struct evac_status {
	enum evac_run run;
	int chunk;                 /* -1: none */
	struct fs_evac_info info;  /* what is left, what moved since the volume opened */
	uint64_t steps;            /* since this process started or resumed it */
	double mb_per_s, conts_per_s, inodes_per_s; /* the same span */
	uint32_t rate_mb;          /* the cap */
	int64_t started;           /* time(2) */
	char error[160];
};

/* Start the thread; a chunk found draining at start (the flag is in its
 * header) goes on being evacuated. */
int evac_start(struct server *srv, struct evacuator **out);
void evac_stop(struct evacuator *e);
/* evacuate K: K drains (committed) and the steps begin; pause, resume,
 * cancel (K stops draining; what moved stays moved). 0 or -errno, why[]. */
int evac_begin(struct evacuator *e, uint32_t chunk, char *why, size_t whylen);
int evac_pause(struct evacuator *e, uint32_t chunk, char *why, size_t whylen);
int evac_resume(struct evacuator *e, uint32_t chunk, char *why, size_t whylen);
int evac_cancel(struct evacuator *e, uint32_t chunk, char *why, size_t whylen);
void evac_get_status(struct evacuator *e, struct evac_status *out);
const char *evac_run_name(enum evac_run r);

#endif
