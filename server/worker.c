/* The worker pool: filesystem work happens here, never on the event loop.
 * Jobs wait in the fair queue (fairq.c, under srv->qlock), one queue per
 * client, taken by deficit round robin weighted by what each job moves, so
 * a client with one call waits behind about one call of each busy client
 * and not behind their whole queues; each worker runs a job with its own
 * scratch buffer, and tells the queue when it is done (the client's
 * budget). What a job is (a request: request.c) is the job's.
 *
 * fair_queue = no (tests and benchmarks only: the FIFO the fair queue
 * replaced, to compare with): every job is queued as one client's, so the
 * queue is one FIFO, and there are no budgets. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server/log.h"
#include "server/replybuf.h"
#include "server/server.h"
#include "server/worker.h"

/* Wake the workers: all of them (a budget or the stop changed what may
 * run), or one that may run a call of bytes. */
static void wake_all(struct server *srv)
{
	pthread_cond_broadcast(&srv->qcond);
	pthread_cond_broadcast(&srv->qcond_light);
}

static void wake_one(struct server *srv, uint64_t bytes)
{
	if (bytes < FAIRQ_BULK_BYTES && srv->idle_light)
		pthread_cond_signal(&srv->qcond_light);
	else
		pthread_cond_signal(&srv->qcond);
}

/* A bulk worker runs bulk_nice steps below the server's priority: light
 * workers and the event loop come first for the CPU, as light calls do at
 * the volume lock. */
static void worker_set_priority(struct server *srv, int bulk)
{
	id_t tid = (id_t)syscall(SYS_gettid);
	int nice;

	if (!bulk || !srv->cfg.bulk_nice)
		return;
	errno = 0;
	nice = getpriority(PRIO_PROCESS, tid);
	if (errno == 0) {
		nice += srv->cfg.bulk_nice;
		if (setpriority(PRIO_PROCESS, tid, nice < 19 ? nice : 19) == 0)
			return;
	}
	log_warn("worker: bulk_nice %d: %s (the worker runs at the server's priority)",
		 srv->cfg.bulk_nice, strerror(errno));
}

static void *worker_main(void *arg)
{
	struct server *srv = arg;
	size_t size = srv->scratch_size;
	uint8_t *scratch = replybuf_get();
	struct fairq_flow *ran = NULL; /* the client of the job just run */
	uint64_t ran_bytes = 0;
	int bulk = __atomic_fetch_add(&srv->nbulk, 1, __ATOMIC_RELAXED) <
		   config_bulk_workers(&srv->cfg);

	if (!scratch) {
		log_error("worker: out of memory");
		return NULL;
	}
	worker_set_priority(srv, bulk);
	for (;;) {
		struct fairq_item *it;
		struct job *j;

		pthread_mutex_lock(&srv->qlock);
		/* The job just run leaves its client's budget: a client that
		 * waited for it may send again, and at stop, workers waiting
		 * for such a client's calls must see the queue empty. */
		if (ran && (fairq_done(&srv->fq, ran, ran_bytes) || srv->stopping))
			wake_all(srv);
		ran = NULL;
		while (!(it = fairq_pop(&srv->fq, bulk)) && !(srv->stopping && !srv->fq.queued)) {
			if (bulk) {
				pthread_cond_wait(&srv->qcond, &srv->qlock);
				continue;
			}
			srv->idle_light++;
			pthread_cond_wait(&srv->qcond_light, &srv->qlock);
			srv->idle_light--;
		}
		/* A worker woken for one call may have taken another (the round's
		 * next): one more waker keeps no call waiting beside an idle
		 * worker that may run it. */
		if (it && srv->fq.queued)
			pthread_cond_signal(&srv->qcond);
		pthread_mutex_unlock(&srv->qlock);
		if (!it)
			break;
		ran = it->flow;
		ran_bytes = it->bytes;
		j = (struct job *)((char *)it - offsetof(struct job, fq));
		fs_thread_set_bulk(it->bytes >= FAIRQ_BULK_BYTES);
		j->run(srv, j, &scratch, size); /* j may be gone */
	}
	replybuf_put(scratch);
	return NULL;
}

int workers_submit(struct server *srv, struct job *j, const struct sockaddr *who)
{
	struct fairq_key k;
	int ret = -ESHUTDOWN;

	if (srv->cfg.fair_queue)
		fairq_key_of(who, &k);
	else
		memset(&k, 0, sizeof(k)); /* one client: first come, first served */
	pthread_mutex_lock(&srv->qlock);
	if (!srv->stopping)
		ret = fairq_push(&srv->fq, &k, &j->fq);
	if (ret == 0)
		wake_one(srv, j->fq.bytes);
	pthread_mutex_unlock(&srv->qlock);
	return ret;
}

void workers_set_limits(struct server *srv, uint32_t max_calls, uint64_t max_bytes)
{
	if (!srv->cfg.fair_queue)
		return; /* a budget would be the whole server's */
	pthread_mutex_lock(&srv->qlock);
	if (fairq_set_limits(&srv->fq, max_calls, max_bytes))
		wake_all(srv);
	pthread_mutex_unlock(&srv->qlock);
}

int workers_start(struct server *srv, size_t scratch_size)
{
	int ret = fairq_init(&srv->fq, FAIRQ_QUANTUM);

	if (ret < 0)
		return ret;
	if (srv->cfg.fair_queue)
		fairq_set_limits(&srv->fq, srv->cfg.max_calls_per_client,
				 srv->cfg.max_bytes_per_client);
	else
		log_warn("fair_queue = no: the workers take calls first come, first served "
			 "(for tests and benchmarks)");
	srv->scratch_size = scratch_size;
	srv->nbulk = 0; /* the first config_bulk_workers threads to start are bulk */
	replybufs_init(scratch_size, 2 * (unsigned)srv->cfg.workers);
	srv->threads = calloc((size_t)srv->cfg.workers, sizeof(*srv->threads));
	if (!srv->threads) {
		fairq_destroy(&srv->fq);
		return -ENOMEM;
	}
	for (int i = 0; i < srv->cfg.workers; i++) {
		ret = pthread_create(&srv->threads[i], NULL, worker_main, srv);
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
	wake_all(srv);
	pthread_mutex_unlock(&srv->qlock);
	for (int i = 0; i < srv->nthreads; i++)
		pthread_join(srv->threads[i], NULL);
	free(srv->threads);
	srv->threads = NULL;
	replybufs_free(); /* (a reply still queued frees its buffer when it goes) */
	srv->nthreads = 0;
	/* Every queued job ran, and none is taken from now (workers_submit). */
	pthread_mutex_lock(&srv->qlock);
	fairq_destroy(&srv->fq);
	pthread_mutex_unlock(&srv->qlock);
}
