/* The request pipeline: a complete record from a connection is run by
 * dispatch (decode, execute, encode); the reply of a call that changed the
 * volume then waits for the group commit; the reply goes back to the
 * connection through its hooks (c->ops). A call the event loop can answer
 * without waiting (dispatch's nowait) is run on the loop: that saves a
 * hand-off to a worker and back; any other is queued for the workers, in
 * its client's queue of the fair queue (worker.c, fairq.c), weighted by
 * the bytes dispatch says it will move. A client is its peer address:
 * every connection of one host shares its queue and its turn.
 *
 * Calls go one way: conn.c calls request_start; this file calls
 * dispatch.c, commit.c and worker.c, which call nothing above them (the
 * group commit and the pool call back only through the hooks given here).
 * A call that dispatch says passed its export check marks its connection
 * proven, through the connection's hook, for admission (admit.c). */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "server/commit.h"
#include "server/dispatch.h"
#include "server/log.h"
#include "server/recbuf.h"
#include "server/request.h"
#include "server/server.h"
#include "server/worker.h"

/* A record a worker runs, with the request's reference to its connection. */
struct request {
	struct job job;
	struct conn *conn;
	uint8_t *rec;
	size_t len, cap;
};

void request_loop_init(struct server *srv)
{
	srv->loop_out = malloc(dispatch_reply_cap(srv));
	if (!srv->loop_out)
		log_warn("no memory for the loop's reply buffer: every call goes to the workers");
}

/* commit_reply's answer: the committed reply (made NFS3ERR_IO when its
 * sync failed, and recorded for retransmissions) goes to its connection,
 * and the request's reference to it is dropped. */
static void reply_committed(struct server *srv, struct conn *c, const struct commit_call *cc,
			    int failed, uint8_t *buf, size_t len, size_t cap)
{
	dispatch_committed(srv, c, cc, failed, buf, cap, &len);
	c->ops->reply(c, buf, len, 1);
	c->ops->put(c);
}

/* A worker runs the request, its reply built in the worker's buffer. */
static void run_on_worker(struct server *srv, struct job *j, uint8_t **outp, size_t cap)
{
	uint8_t *out = *outp;
	struct request *rq = (struct request *)((char *)j - offsetof(struct request, job));
	struct conn *c = rq->conn;
	struct commit_call cc;
	size_t len = 0;
	int ret;

	memset(&cc, 0, sizeof(cc));
	ret = dispatch_call(srv, c, rq->rec, rq->len, out, cap, &len, 0, &cc);
	__atomic_add_fetch(&srv->calls_workers, 1, __ATOMIC_RELAXED);
	if (j->fq.bytes >= FAIRQ_BULK_BYTES)
		__atomic_add_fetch(&srv->calls_bulk, 1, __ATOMIC_RELAXED);
	if (cc.admitted)
		c->ops->proven(c);
	if (ret == 0 && cc.changed) {
		cc.ticket = commit_ticket(srv);
		/* takes the reference */
		commit_reply(srv, c, out, len, cap, &cc, reply_committed);
		c = NULL;
	} else if (ret == 0) {
		c->ops->reply_take(c, outp, len); /* done once it has left */
	} else {
		if (ret < 0)
			c->ops->kill(c);
		c->ops->done(c);
	}
	if (c)
		c->ops->put(c);
	rec_give(srv, rq->rec, rq->cap);
	free(rq);
}

/* The loop answers a call itself when it can without waiting: a cache
 * hit of a small read-only call. 1: answered, 0: a worker must run it,
 * < 0: the record was not an RPC call. */
static int run_on_loop(struct server *srv, struct conn *c, const uint8_t *rec, size_t len)
{
	struct commit_call cc;
	size_t outlen = 0;
	int ret;

	if (!srv->loop_out || srv->stopping)
		return 0;
	memset(&cc, 0, sizeof(cc));
	ret = dispatch_call(srv, c, rec, len, srv->loop_out, dispatch_reply_cap(srv), &outlen, 1,
			    &cc);
	if (ret == -EAGAIN)
		return 0;
	if (cc.admitted)
		c->ops->proven(c);
	__atomic_add_fetch(&srv->calls_loop, 1, __ATOMIC_RELAXED);
	if (ret < 0)
		return ret;
	if (ret == 0)
		c->ops->reply(c, srv->loop_out, outlen, 1); /* done once it has left */
	else
		c->ops->done(c);
	return 1;
}

int request_start(struct server *srv, struct conn *c, uint8_t *rec, size_t len, size_t cap)
{
	struct request *rq;
	int ret = run_on_loop(srv, c, rec, len);

	if (ret != 0)
		return ret;
	rq = malloc(sizeof(*rq));
	if (!rq)
		return -ENOMEM;
	rq->job.run = run_on_worker;
	rq->job.fq.bytes = dispatch_call_bytes(srv, rec, len);
	rq->conn = c;
	rq->rec = rec;
	rq->len = len;
	rq->cap = cap;
	c->ops->hold(c); /* the request's, dropped by its worker */
	ret = workers_submit(srv, &rq->job, (const struct sockaddr *)&c->peer);
	if (ret < 0) {
		c->ops->put(c);
		free(rq); /* rec stays the caller's */
	}
	return ret;
}
