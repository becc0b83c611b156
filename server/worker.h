/* The worker pool (worker.c): threads that run queued jobs in order. It
 * knows nothing of what a job does: the job's own function runs it. */
#ifndef CHUNKFS_SERVER_WORKER_H
#define CHUNKFS_SERVER_WORKER_H

#include <stddef.h>
#include <stdint.h>

struct server;

/* One queued piece of work: run is called on a worker with that worker's
 * scratch buffer (size bytes) and owns the job from then on. */
struct job {
	void (*run)(struct server *srv, struct job *j, uint8_t *scratch, size_t size);
	struct job *next;
};

/* Each worker gets a scratch buffer of scratch_size bytes. */
int workers_start(struct server *srv, size_t scratch_size);
/* Drain: the workers finish every queued job, then exit. */
void workers_stop(struct server *srv);
void workers_submit(struct server *srv, struct job *j);

#endif
