/* The worker pool: filesystem work happens here, never on the event loop.
 * Each worker takes a complete RPC record, runs it, and hands the reply to
 * its connection; the reply of a call that changed the volume goes through
 * group commit (commit.c). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/commit.h"
#include "server/dispatch.h"
#include "server/log.h"
#include "server/recbuf.h"
#include "server/server.h"

/* commit_reply's answer: the committed reply (made NFS3ERR_IO when its
 * sync failed, and recorded for retransmissions) goes to its connection,
 * and the request's reference to it is dropped. */
static void reply_committed(struct server *srv, struct conn *c, const struct commit_call *cc,
			    int failed, uint8_t *buf, size_t len, size_t cap)
{
	dispatch_committed(srv, c, cc, failed, buf, cap, &len);
	conn_reply(c, buf, len, 1);
	conn_put(c);
}

static void *worker_main(void *arg)
{
	struct server *srv = arg;
	size_t cap = dispatch_reply_cap(srv);
	uint8_t *out = malloc(cap);

	if (!out) {
		log_error("worker: out of memory");
		return NULL;
	}
	for (;;) {
		struct request *rq;
		size_t len = 0;
		struct commit_call cc;
		int ret;

		pthread_mutex_lock(&srv->qlock);
		while (!srv->qhead && !srv->stopping)
			pthread_cond_wait(&srv->qcond, &srv->qlock);
		rq = srv->qhead;
		if (!rq) {
			pthread_mutex_unlock(&srv->qlock);
			break;
		}
		srv->qhead = rq->next;
		if (!srv->qhead)
			srv->qtail = NULL;
		pthread_mutex_unlock(&srv->qlock);

		memset(&cc, 0, sizeof(cc));
		ret = dispatch_call(srv, rq->conn, rq->rec, rq->len, out, cap, &len, 0, &cc);
		__atomic_add_fetch(&srv->calls_workers, 1, __ATOMIC_RELAXED);
		if (ret == 0 && cc.changed) {
			cc.ticket = commit_ticket(srv);
			/* takes the reference */
			commit_reply(srv, rq->conn, out, len, cap, &cc, reply_committed);
			rq->conn = NULL;
		} else if (ret == 0) {
			conn_reply(rq->conn, out, len, 0); /* conn_done once it has left */
		} else {
			if (ret < 0)
				conn_kill(rq->conn);
			conn_done(rq->conn);
		}
		if (rq->conn)
			conn_put(rq->conn);
		rec_give(srv, rq->rec, rq->cap);
		free(rq);
	}
	free(out);
	return NULL;
}

void workers_submit(struct server *srv, struct request *rq)
{
	pthread_mutex_lock(&srv->qlock);
	rq->next = NULL;
	if (srv->qtail)
		srv->qtail->next = rq;
	else
		srv->qhead = rq;
	srv->qtail = rq;
	pthread_cond_signal(&srv->qcond);
	pthread_mutex_unlock(&srv->qlock);
}

int workers_start(struct server *srv)
{
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

/* Drain: the workers finish every queued request, then exit. */
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
