/* The worker pool (worker.c): threads that run queued jobs, taken from the
 * fair queue (fairq.c) client by client, each client's in the order they
 * came. It knows nothing of what a job does: the job's own function runs
 * it. */
#ifndef CHUNKFS_SERVER_WORKER_H
#define CHUNKFS_SERVER_WORKER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "server/fairq.h"

struct server;

/* One queued piece of work: run is called on a worker with that worker's
 * scratch buffer (size bytes) and owns the job from then on. fq.bytes, set
 * by the submitter, is what the job will move: its weight in the fair
 * queue and its share of its client's byte budget. */
struct job {
	/* scratch: the worker's buffer of size bytes; run may hand it on
	 * (replybuf.c) and leave another in its place. */
	void (*run)(struct server *srv, struct job *j, uint8_t **scratch, size_t size);
	struct fairq_item fq;
};

/* Each worker gets a scratch buffer of scratch_size bytes. */
int workers_start(struct server *srv, size_t scratch_size);
/* Drain: the workers finish every queued job, then exit; no job is taken
 * afterwards. */
void workers_stop(struct server *srv);
/* j queued behind the earlier jobs of its client, the peer address who
 * (any port): 0; -ENOMEM; -ESHUTDOWN once the pool is stopping. */
int workers_submit(struct server *srv, struct job *j, const struct sockaddr *who);
/* Each client's budget at the workers (0: no limit): jobs running, and
 * their bytes. A client over it waits in its own queue. */
void workers_set_limits(struct server *srv, uint32_t max_calls, uint64_t max_bytes);

#endif
