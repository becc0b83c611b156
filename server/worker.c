/* The worker pool: filesystem work happens here, never on the event loop.
 * Each worker takes queued jobs in order and runs each with its own
 * scratch buffer; what a job is (a request: request.c) is the job's. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "server/log.h"
#include "server/server.h"
#include "server/worker.h"

static void *worker_main(void *arg)
{
	struct server *srv = arg;
	size_t size = srv->scratch_size;
	uint8_t *scratch = malloc(size);

	if (!scratch) {
		log_error("worker: out of memory");
		return NULL;
	}
	for (;;) {
		struct job *j;

		pthread_mutex_lock(&srv->qlock);
		while (!srv->qhead && !srv->stopping)
			pthread_cond_wait(&srv->qcond, &srv->qlock);
		j = srv->qhead;
		if (!j) {
			pthread_mutex_unlock(&srv->qlock);
			break;
		}
		srv->qhead = j->next;
		if (!srv->qhead)
			srv->qtail = NULL;
		pthread_mutex_unlock(&srv->qlock);
		j->run(srv, j, scratch, size);
	}
	free(scratch);
	return NULL;
}

void workers_submit(struct server *srv, struct job *j)
{
	pthread_mutex_lock(&srv->qlock);
	j->next = NULL;
	if (srv->qtail)
		srv->qtail->next = j;
	else
		srv->qhead = j;
	srv->qtail = j;
	pthread_cond_signal(&srv->qcond);
	pthread_mutex_unlock(&srv->qlock);
}

int workers_start(struct server *srv, size_t scratch_size)
{
	srv->scratch_size = scratch_size;
	srv->threads = calloc((size_t)srv->cfg.workers, sizeof(*srv->threads));
	if (!srv->threads)
		return -ENOMEM;
	for (int i = 0; i < srv->cfg.workers; i++) {
		int ret = pthread_create(&srv->threads[i], NULL, worker_main, srv);
		if (ret) {
			workers_stop(srv);
			return -ret;
		}
		srv->nthreads++;
	}
	return 0;
}

void workers_stop(struct server *srv)
{
	pthread_mutex_lock(&srv->qlock);
	srv->stopping = 1;
	pthread_cond_broadcast(&srv->qcond);
	pthread_mutex_unlock(&srv->qlock);
	for (int i = 0; i < srv->nthreads; i++)
		pthread_join(srv->threads[i], NULL);
	free(srv->threads);
	srv->threads = NULL;
	srv->nthreads = 0;
}
