/* Connections on the event loop: accepting (and deciding once which export
 * the client may use), ONC RPC record marking (RFC 5531 section 11) with
 * multi-fragment records and a maximum record size, handing complete
 * records to the request pipeline (request.c) and taking its replies back
 * through the hooks registered in each connection (conn_ops), and
 * backpressure: a connection with too many requests outstanding, or a
 * server with too many in all, stops reading until replies drain. A
 * request keeps its place in those limits until its reply has left for
 * the socket, so a client that does not read its replies is paused like
 * one that sends too much.
 *
 * Which connections are taken and kept is admission's (admit.c): conn.c
 * asks it at accept and closes what it names, there and once a second.
 *
 * Memory under hostile clients (doc/design.md, "Memory bounds"): at most
 * max_connections connections; each buffers at most one record being
 * assembled plus one record's worth of input (the read high watermark),
 * and a record not complete record_timeout seconds after it started closes
 * its connection; unsent replies are bounded by the request limits, and a
 * connection whose replies make no progress for record_timeout is closed. */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "server/admit.h"
#include "server/log.h"
#include "server/ratelog.h"
#include "server/recbuf.h"
#include "server/replybuf.h"
#include "server/request.h"
#include "server/server.h"

/* The warnings about peers, one line per kind every 10 s at most (a flood
 * of hostile connections would write one each). */
static struct ratelog log_too_large = RATELOG_INIT(LOG_LVL_WARN, "records over the size limit");
static struct ratelog log_partial =
	RATELOG_INIT(LOG_LVL_WARN, "records not complete within record_timeout");
static struct ratelog log_unread =
	RATELOG_INIT(LOG_LVL_WARN, "replies not read within record_timeout");
static struct ratelog log_no_memory =
	RATELOG_INIT(LOG_LVL_ERROR, "connections closed: out of memory or set-up failed");

/* A connection that held at least this much gives the heap back. */
#define TRIM_AFTER_BYTES (64u << 10)

static void release(struct conn *c, int n);
static void conn_done(struct conn *c);

/* glibc keeps freed heap memory: the buffers of closed hostile
 * connections would stay in the daemon's RSS (they come from many small
 * evbuffer chains, between live allocations). One malloc_trim, a second
 * after such closes, returns their pages. */
static void trim_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	srv->trim_pending = 0;
	rec_spares_free(srv);
	replybufs_trim();
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

/* The loop's thread: bytes a connection held were freed. */
static void freed(struct server *srv, size_t bytes)
{
	struct timeval tv = { 1, 0 };

	if (bytes < TRIM_AFTER_BYTES || srv->trim_pending)
		return;
	if (event_base_once(srv->base, -1, EV_TIMEOUT, trim_cb, srv, &tv) < 0) {
		log_error("cannot schedule returning freed memory");
		return;
	}
	srv->trim_pending = 1;
}

/* Replies that never left give their places back (the loop's thread, the
 * last reference gone). */
static void release_unsent(struct conn *c)
{
	int unsent;
	size_t queued;

	bufferevent_lock(c->bev);
	queued = evbuffer_get_length(bufferevent_get_output(c->bev));
	if (c->out_cb && evbuffer_remove_cb_entry(bufferevent_get_output(c->bev), c->out_cb) < 0)
		log_error("%s:%u: cannot remove the output callback", c->peer_name, c->peer_port);
	c->out_cb = NULL;
	unsent = c->npend;
	c->npend = 0;
	bufferevent_unlock(c->bev);
	if (unsent)
		release(c, unsent);
	freed(c->srv, queued);
}

static void free_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	release_unsent(c);
	if (c->rec_timer)
		event_free(c->rec_timer);
	bufferevent_free(c->bev);
	pthread_mutex_destroy(&c->lock);
	free(c->pend);
	free(c->rec);
	free(c);
}

static void conn_hold(struct conn *c)
{
	pthread_mutex_lock(&c->lock);
	c->refs++;
	pthread_mutex_unlock(&c->lock);
}

static void conn_put(struct conn *c)
{
	int last;

	pthread_mutex_lock(&c->lock);
	last = --c->refs == 0;
	pthread_mutex_unlock(&c->lock);
	/* bufferevents are freed on the loop's thread. */
	if (last)
		event_base_once(c->srv->base, -1, EV_TIMEOUT, free_cb, c, NULL);
}

/* A closed connection leaves the paused list at once (its reference
 * there would keep its buffers until some other request finished):
 * 1 when it was on it, and the caller drops that reference. */
static int unpause_dead(struct conn *c)
{
	struct server *srv = c->srv;
	struct conn **pp;
	int was = 0;

	pthread_mutex_lock(&srv->qlock);
	pthread_mutex_lock(&c->lock);
	if (c->on_paused_list) {
		for (pp = &srv->paused; *pp && *pp != c; pp = &(*pp)->next_paused)
			;
		if (*pp) {
			*pp = c->next_paused;
			c->on_paused_list = 0;
			was = 1;
		}
	}
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&srv->qlock);
	return was;
}

/* The loop's own reference goes once, at EOF, error, a timeout or kill;
 * the record being assembled and the input not yet parsed go with it.
 * On the loop's thread. */
static void conn_close(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	size_t held;
	int drop;

	pthread_mutex_lock(&c->lock);
	drop = !c->dead;
	c->dead = 1;
	pthread_mutex_unlock(&c->lock);
	if (!drop)
		return;
	bufferevent_disable(c->bev, EV_READ);
	if (c->rec_timer)
		evtimer_del(c->rec_timer);
	held = c->rec_cap + evbuffer_get_length(in);
	if (evbuffer_drain(in, evbuffer_get_length(in)) < 0)
		log_error("%s:%u: cannot drain the input", c->peer_name, c->peer_port);
	free(c->rec);
	c->rec = NULL;
	c->rec_len = c->rec_cap = 0;
	c->frag_left = 0;
	admit_leave(c->srv, c);
	freed(c->srv, held);
	drc_conn_closed(c->srv->drc, c->serial);
	log_debug("%s:%u: connection closed", c->peer_name, c->peer_port);
	if (unpause_dead(c))
		conn_put(c);
	conn_put(c);
}

static void kill_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	conn_close(c);
	conn_put(c);
}

static void conn_kill(struct conn *c)
{
	pthread_mutex_lock(&c->lock);
	c->refs++;
	pthread_mutex_unlock(&c->lock);
	if (event_base_once(c->srv->base, -1, EV_TIMEOUT, kill_cb, c, NULL) < 0) {
		log_error("%s:%u: cannot schedule closing the connection", c->peer_name,
			  c->peer_port);
		conn_put(c);
	}
}

/* Under the bufferevent's lock: the unsent rest of a reply goes on the
 * output buffer, and on the list of replies the output callback follows. */
/* Replies this large are sent by the worker when nothing is queued. */
#define DIRECT_SEND_MIN (64u << 10)
/* The most the event loop writes to one connection in one turn: the
 * reply path's round robin. Each writable socket gets this much, then the
 * next one: a GETATTR's reply (or its request, read in the same turn)
 * waits for at most this much of each greedy reader's queued megabytes,
 * not all of them. 4 readers of 1 MiB each, a light client's p50: 6.8 ms
 * with whole replies per write, 1.0 ms with 128 KiB slices; with READ's
 * data read outside the volume lock, 0.91 ms at 128 KiB, 0.37 at 64, 0.22
 * at 32 and 0.16 at 16, the readers' throughput within the noise of a
 * busy machine down to 32 (doc/design.md, the fair queue). */
#define LOOP_WRITE_SLICE (32u << 10)

/* Queue len bytes of a reply: copied, or with base (the buffer they lie
 * in, a replybuf.c buffer) by reference, base given back once sent. */
static int queue_reply(struct conn *c, const uint8_t *buf, size_t len, uint8_t *base)
{
	int cap = c->srv->cfg.max_conn_requests;

	/* Each entry is a request still inside its connection's limit. */
	if (c->npend >= cap)
		return -EOVERFLOW;
	if (base ? evbuffer_add_reference(bufferevent_get_output(c->bev), buf, len,
					  replybuf_sent, base) < 0
		 : bufferevent_write(c->bev, buf, len) < 0)
		return -ENOMEM;
	c->pend[(c->pend_head + c->npend) % cap] = len;
	c->npend++;
	pthread_mutex_lock(&c->lock);
	c->out_queued += len;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* Lock order: the loop thread holds a bufferevent's lock while its
 * callbacks run and takes srv->qlock and c->lock inside it; so nobody may
 * call into a bufferevent while holding either of those. A worker holds
 * one bufferevent's lock at a time and releases its request's place
 * (which may resume other connections) only after unlocking it. */
/* take: the worker's buffer holding buf, which a large reply's queued
 * part keeps (by reference, no copy) when another can take its place. */
static void reply_to(struct conn *c, const uint8_t *buf, size_t len, int direct, uint8_t **take)
{
	int dead, ret = 0;

	pthread_mutex_lock(&c->lock);
	dead = c->dead;
	pthread_mutex_unlock(&c->lock);
	/* (the request's reference keeps the bufferevent alive) */
	if (dead) {
		conn_done(c);
		return;
	}
	/* A large reply, one that waited for a commit, or one the loop
	 * answered itself, with nothing queued before it, goes to the socket
	 * from here, under the bufferevent's lock (the loop never writes at
	 * the same time, the order is kept). From a worker it saves the loop a
	 * copy and a wake-up (1 MiB READs at one in flight: 1.0x ganesha
	 * against 0.8x; CREATE at one in flight: p50 about 20 us less); on
	 * the loop, the two epoll_ctl calls and the extra turn of the loop of
	 * a queued write. Other small replies from workers are left to the
	 * loop: sent from there they were slower (12.5k against 19k
	 * GETATTRs/s), the loop, woken by the client's next request while
	 * loopback delivered the reply, waiting for the lock; after a commit
	 * of hundreds of microseconds the loop has long been idle. What the
	 * socket does not take now is queued. */
	bufferevent_lock(c->bev);
	if ((len >= DIRECT_SEND_MIN || direct) &&
	    evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
		ssize_t n = send(bufferevent_getfd(c->bev), buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		}
		/* An error other than a full socket is the loop's to see. */
	}
	if (len) {
		uint8_t *base = NULL, *fresh;
		/* (only for a reply of at least half the buffer: the queue's
		 * byte limit counts replies, and so holds at most twice its
		 * bytes in buffers) */
		if (take && len >= c->srv->scratch_size / 2 && (fresh = replybuf_get()) != NULL) {
			base = *take;
			*take = fresh;
		}
		ret = queue_reply(c, buf, len, base);
		if (ret < 0 && base) {
			replybuf_put(*take);
			*take = base; /* (still the worker's) */
		}
	}
	bufferevent_unlock(c->bev);
	if (ret < 0) {
		ratelog_msg(&log_no_memory, "%s:%u: cannot queue a reply of %zu bytes: %s: closing",
			    c->peer_name, c->peer_port, len, strerror(-ret));
		conn_kill(c);
	}
	if (!len || ret < 0)
		conn_done(c);
}

static void conn_reply(struct conn *c, const uint8_t *buf, size_t len, int direct)
{
	reply_to(c, buf, len, direct, NULL);
}

static void conn_reply_take(struct conn *c, uint8_t **take, size_t len)
{
	reply_to(c, *take, len, 0, take);
}

static int over_limits(struct server *srv, struct conn *c)
{
	return c->outstanding >= srv->cfg.max_conn_requests ||
	       srv->outstanding >= srv->cfg.max_requests ||
	       c->out_queued > srv->cfg.max_reply_queue;
}

static void resume(struct conn *c)
{
	bufferevent_enable(c->bev, EV_READ);
	/* Records already buffered are parsed without waiting for more bytes. */
	bufferevent_trigger(c->bev, EV_READ, BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

/* Under c->lock: may a paused connection read again? Clears paused. */
static int may_resume(struct server *srv, struct conn *c)
{
	if (!c->paused || c->dead || over_limits(srv, c))
		return 0;
	c->paused = 0;
	return 1;
}

/* Connections a release looks at in one go; the rest stay on the paused
 * list for the next release (any request finishing makes one). */
#define RELEASE_BATCH 64

/* n of c's requests leave the limits (0: its reply queue shrank); c and
 * the connections paused by the server-wide limit read again when they
 * may. Those taken off the paused list are kept in a local array, never
 * linked through their next_paused: once qlock is released, the loop may
 * put such a connection on the paused list again (submit), which rewrites
 * next_paused, and a list walked through it would then run into the
 * paused list itself and drop references that are not its own (a
 * connection freed while open: a crash under many greedy readers). */
static void release(struct conn *c, int n)
{
	struct server *srv = c->srv;
	struct conn *still = NULL;
	struct {
		struct conn *c;
		int go;
	} wake[RELEASE_BATCH];
	int nwake = 0, self;

	pthread_mutex_lock(&srv->qlock);
	srv->outstanding -= n;
	pthread_mutex_lock(&c->lock);
	c->outstanding -= n;
	if (n && !c->outstanding)
		admit_touch(c); /* quiet from now, not from its last bytes in */
	self = may_resume(srv, c);
	pthread_mutex_unlock(&c->lock);
	/* Connections paused by the server-wide limit: those that may read
	 * again are resumed below, the others stay on the list. */
	while (n && srv->paused && nwake < RELEASE_BATCH) {
		struct conn *p = srv->paused;
		int go, keep;
		srv->paused = p->next_paused;
		pthread_mutex_lock(&p->lock);
		go = may_resume(srv, p);
		keep = !go && p->paused && !p->dead;
		p->on_paused_list = keep;
		pthread_mutex_unlock(&p->lock);
		if (keep) {
			p->next_paused = still;
			still = p;
		} else {
			wake[nwake].c = p;
			wake[nwake].go = go;
			nwake++;
		}
	}
	while (still) { /* back in front of those not looked at */
		struct conn *p = still;
		still = p->next_paused;
		p->next_paused = srv->paused;
		srv->paused = p;
	}
	pthread_mutex_unlock(&srv->qlock);
	if (self)
		resume(c);
	for (int i = 0; i < nwake; i++) {
		if (wake[i].go)
			resume(wake[i].c);
		conn_put(wake[i].c); /* the paused list's reference */
	}
}

static void conn_done(struct conn *c)
{
	release(c, 1);
}

/* The request pipeline's way back to a connection. */
static const struct conn_ops conn_ops = {
	.reply = conn_reply,
	.reply_take = conn_reply_take,
	.done = conn_done,
	.kill = conn_kill,
	.hold = conn_hold,
	.put = conn_put,
	.proven = admit_prove,
};

/* The output buffer changed (the loop's thread, under the bufferevent's
 * lock): replies whose last byte has left release their requests. */
static void output_cb(struct evbuffer *out, const struct evbuffer_cb_info *info, void *arg)
{
	struct conn *c = arg;
	int cap = c->srv->cfg.max_conn_requests, sent = 0, paused;
	size_t left = info->n_deleted;

	if (!left)
		return;
	while (left && c->npend) {
		size_t *front = &c->pend[c->pend_head];
		size_t take = *front < left ? *front : left;
		*front -= take;
		left -= take;
		if (*front)
			break;
		c->pend_head = (c->pend_head + 1) % cap;
		c->npend--;
		sent++;
	}
	if (left)
		log_error("%s:%u: %zu bytes left the output that no reply accounts for",
			  c->peer_name, c->peer_port, left);
	pthread_mutex_lock(&c->lock);
	c->out_queued -= info->n_deleted - left;
	paused = c->paused;
	pthread_mutex_unlock(&c->lock);
	if (sent || paused)
		release(c, sent);
}

/* A complete record goes to the request pipeline, which answers it on the
 * loop or gives it to a worker; it takes its place in the limits either
 * way. */
static void submit(struct conn *c)
{
	struct server *srv = c->srv;
	int ret;

	pthread_mutex_lock(&srv->qlock);
	srv->outstanding++;
	pthread_mutex_lock(&c->lock);
	c->outstanding++;
	if (over_limits(srv, c)) {
		c->paused = 1;
		bufferevent_disable(c->bev, EV_READ);
		/* On the paused list too, whichever limit it hit: a reply to
		 * any connection may be what lets it read again. */
		if (!c->on_paused_list) {
			c->refs++;
			c->on_paused_list = 1;
			c->next_paused = srv->paused;
			srv->paused = c;
		}
	}
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&srv->qlock);
	ret = request_start(srv, c, c->rec, c->rec_len, c->rec_cap);
	if (ret > 0) {
		c->rec_len = 0; /* the buffer is kept for the next record */
		return;
	}
	if (ret == 0) {
		c->rec = NULL; /* the request's now */
		c->rec_len = c->rec_cap = 0;
		return;
	}
	if (ret == -ENOMEM)
		ratelog_msg(&log_no_memory, "%s:%u: out of memory for a request: closing",
			    c->peer_name, c->peer_port);
	conn_close(c);
	conn_done(c);
}

/* Room for need bytes of record: the first fragment gets its exact size,
 * later ones double it (up to the maximum record), so a record of many
 * small fragments costs no quadratic copying; a large first fragment gets
 * a spare buffer of the maximum size. */
static int rec_reserve(struct conn *c, size_t need)
{
	size_t ncap = c->rec_cap;
	uint8_t *p;

	if (need <= c->rec_cap)
		return 0;
	if (!c->rec && need >= REC_SPARE_MIN) {
		c->rec = rec_take(c->srv, &c->rec_cap);
		if (!c->rec) {
			c->rec_cap = 0;
			return -ENOMEM;
		}
		return 0;
	}
	if (!ncap)
		ncap = need ? need : 1;
	while (ncap < need)
		ncap *= 2;
	if (ncap > rec_max(c->srv))
		ncap = rec_max(c->srv); /* need is never more */
	p = realloc(c->rec, ncap);
	if (!p)
		return -ENOMEM;
	c->rec = p;
	c->rec_cap = ncap;
	return 0;
}

/* A fragment's rest of at least this many bytes is read from the socket
 * straight into the record: libevent 2.1 reads at most 4 KiB a call, so a
 * 1 MiB WRITE took 256 wake-ups of the loop and copies through its buffer. */
#define DIRECT_RECV_MIN (16u << 10)

/* Fragments from the input: the header (the record's room is reserved
 * then), then the body as it comes, from the input buffer and for large
 * fragments from the socket itself. 1 when a fragment was completed, 0
 * when more bytes are needed (or the connection is paused), < 0 when the
 * connection was closed. */
static int take_fragment(struct conn *c, struct evbuffer *in)
{
	uint8_t hdr[4];
	uint32_t mark, flen;
	size_t n;
	int paused, ret;

	pthread_mutex_lock(&c->lock);
	paused = c->paused || c->dead;
	pthread_mutex_unlock(&c->lock);
	if (paused)
		return 0;
	if (!c->frag_left) {
		if (evbuffer_get_length(in) < 4)
			return 0;
		evbuffer_copyout(in, hdr, 4);
		memcpy(&mark, hdr, 4);
		mark = ntohl(mark);
		flen = mark & 0x7fffffffu;
		if (c->rec_len + flen > rec_max(c->srv)) {
			ratelog_msg(&log_too_large,
				    "%s:%u: record of %zu bytes or more exceeds %zu: closing",
				    c->peer_name, c->peer_port, c->rec_len + flen, rec_max(c->srv));
			conn_close(c);
			return -EMSGSIZE;
		}
		ret = rec_reserve(c, c->rec_len + flen);
		if (ret < 0) {
			ratelog_msg(&log_no_memory,
				    "%s:%u: out of memory for a record of %zu bytes: closing",
				    c->peer_name, c->peer_port, c->rec_len + flen);
			conn_close(c);
			return ret;
		}
		evbuffer_drain(in, 4);
		c->frag_left = flen;
		c->frag_last = !!(mark & 0x80000000u);
	}
	n = evbuffer_get_length(in);
	if (n > c->frag_left)
		n = c->frag_left;
	if (n) {
		evbuffer_remove(in, c->rec + c->rec_len, n);
		c->rec_len += n;
		c->frag_left -= (uint32_t)n;
	}
	if (c->frag_left >= DIRECT_RECV_MIN) {
		/* The input buffer is empty: what the socket holds now. End of
		 * file and errors are the bufferevent's to see on its next read. */
		ssize_t got = recv(bufferevent_getfd(c->bev), c->rec + c->rec_len, c->frag_left,
				   MSG_DONTWAIT);
		if (got > 0) {
			c->rec_len += (size_t)got;
			c->frag_left -= (uint32_t)got;
		}
	}
	if (c->frag_left)
		return 0;
	if (c->frag_last) {
		evtimer_del(c->rec_timer); /* the next record gets its own time */
		submit(c);
	}
	return 1;
}

/* After parsing: a record started and not complete must be whole within
 * record_timeout; none is timed while the connection is paused (the
 * server, not the client, holds it up then) or between records. */
static int time_record(struct conn *c, struct evbuffer *in)
{
	struct timeval tv = { c->srv->cfg.record_timeout, 0 };
	int paused, partial;

	pthread_mutex_lock(&c->lock);
	paused = c->paused || c->dead;
	pthread_mutex_unlock(&c->lock);
	partial = c->rec_len > 0 || c->frag_left > 0 || evbuffer_get_length(in) > 0;
	if (paused || !partial)
		return evtimer_del(c->rec_timer) < 0 ? -EINVAL : 0;
	if (evtimer_pending(c->rec_timer, NULL))
		return 0;
	return evtimer_add(c->rec_timer, &tv) < 0 ? -EINVAL : 0;
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	int ret;

	admit_touch(c);
	while ((ret = take_fragment(c, in)) > 0)
		;
	if (ret < 0)
		return;
	if (time_record(c, in) < 0) {
		log_error("%s:%u: cannot set the record timer: closing", c->peer_name, c->peer_port);
		conn_close(c);
	}
}

static void record_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	ratelog_msg(&log_partial,
		    "%s:%u: a record is not complete after %d s (%zu bytes of it received): "
		    "closing",
		    c->peer_name, c->peer_port, c->srv->cfg.record_timeout,
		    c->rec_len + evbuffer_get_length(bufferevent_get_input(c->bev)));
	conn_close(c);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	if (what & BEV_EVENT_TIMEOUT) {
		/* Only writing has a timeout: replies queued and none of their
		 * bytes taken by the client for record_timeout. */
		ratelog_msg(&log_unread, "%s:%u: %zu bytes of replies not read for %d s: closing",
			    c->peer_name, c->peer_port,
			    evbuffer_get_length(bufferevent_get_output(bev)),
			    c->srv->cfg.record_timeout);
		conn_close(c);
	} else if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		conn_close(c);
	}
}

static void peer_format(const struct sockaddr *sa, char *name, size_t len, uint16_t *port)
{
	*port = 0;
	snprintf(name, len, "?");
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &in->sin_addr, name, (socklen_t)len);
		*port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, name, (socklen_t)len);
		*port = ntohs(in6->sin6_port);
	}
}

/* The new connection's buffers, timers and limits. */
static int conn_setup(struct server *srv, struct conn *c, evutil_socket_t fd)
{
	struct timeval wtv = { srv->cfg.record_timeout, 0 };
	int one = 1;

	c->pend = calloc((size_t)srv->cfg.max_conn_requests, sizeof(*c->pend));
	c->rec_timer = evtimer_new(srv->base, record_timeout_cb, c);
	c->bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_THREADSAFE);
	if (!c->pend || !c->rec_timer || !c->bev)
		return -ENOMEM;
	c->out_cb = evbuffer_add_cb(bufferevent_get_output(c->bev), output_cb, c);
	if (!c->out_cb)
		return -ENOMEM;
	/* Replies are whole records: no waiting for the client's delayed ACK
	 * (Nagle held every reply over 16 KiB for ~40 ms). A queued reply
	 * goes out in slices of LOOP_WRITE_SLICE, the other connections' in
	 * between (libevent's own default, 16 KiB, took 64 writes a MiB). */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		return -errno;
	if (bufferevent_set_max_single_write(c->bev, LOOP_WRITE_SLICE) < 0 ||
	    bufferevent_set_max_single_read(c->bev, rec_max(srv)) < 0)
		return -EINVAL;
	/* Input is read up to one largest fragment with its mark beyond what
	 * is parsed: a connection never buffers more than that. */
	bufferevent_setwatermark(c->bev, EV_READ, 0, rec_max(srv) + 4);
	if (bufferevent_set_timeouts(c->bev, NULL, &wtv) < 0)
		return -EINVAL;
	bufferevent_setcb(c->bev, read_cb, NULL, event_cb, c);
	if (bufferevent_enable(c->bev, EV_READ | EV_WRITE) < 0)
		return -EINVAL;
	return 0;
}

static void conn_free_new(struct conn *c, evutil_socket_t fd)
{
	if (c->rec_timer)
		event_free(c->rec_timer);
	if (c->bev)
		bufferevent_free(c->bev); /* closes fd */
	else
		evutil_closesocket(fd);
	pthread_mutex_destroy(&c->lock);
	free(c->pend);
	free(c);
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
		      void *arg)
{
	struct server *srv = arg;
	struct conn *c, *victim;
	char name[64];
	uint16_t port;
	int ret;

	if (srv->stopping) {
		evutil_closesocket(fd);
		return;
	}
	peer_format(sa, name, sizeof(name), &port);
	if (admit_decide(srv, sa, name, port, &victim) < 0) {
		evutil_closesocket(fd);
		return;
	}
	if (victim)
		conn_close(victim); /* its place is the newcomer's */
	c = calloc(1, sizeof(*c));
	if (!c) {
		ratelog_msg(&log_no_memory, "%s:%u: out of memory for a new connection: closing it",
			    name, port);
		evutil_closesocket(fd);
		return;
	}
	c->srv = srv;
	c->ops = &conn_ops;
	c->refs = 1;
	c->serial = ++srv->conn_serial;
	pthread_mutex_init(&c->lock, NULL);
	memcpy(&c->peer, sa, (size_t)salen < sizeof(c->peer) ? (size_t)salen : sizeof(c->peer));
	peer_format(sa, c->peer_name, sizeof(c->peer_name), &c->peer_port);
	ret = conn_setup(srv, c, fd);
	if (ret < 0) {
		ratelog_msg(&log_no_memory, "%s:%u: cannot set the connection up: %s: closing",
			    c->peer_name, c->peer_port, strerror(-ret));
		conn_free_new(c, fd);
		return;
	}
	admit_join(srv, c);
	log_debug("%s:%u: connected", c->peer_name, c->peer_port);
}

/* Once a second on the loop: idle connections closed, and the rate-limited
 * warnings' counts of lines left out said. */
static void conns_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	admit_sweep(srv, conn_close);
	ratelog_flush();
}

int conn_listen(struct server *srv)
{
	struct timeval second = { 1, 0 };
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, srv->cfg.listen, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(srv->cfg.port);
		len = sizeof(*in);
	} else if (inet_pton(AF_INET6, srv->cfg.listen, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(srv->cfg.port);
		len = sizeof(*in6);
	} else {
		return -EINVAL;
	}
	srv->listener = evconnlistener_new_bind(srv->base, accept_cb, srv,
						LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE |
							LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_THREADSAFE,
						128, (struct sockaddr *)&ss, (int)len);
	if (!srv->listener)
		return errno ? -errno : -EADDRINUSE;
	len = sizeof(ss);
	if (getsockname(evconnlistener_get_fd(srv->listener), (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	srv->port = ntohs(ss.ss_family == AF_INET ? in->sin_port : in6->sin6_port);
	srv->conns_timer = event_new(srv->base, -1, EV_PERSIST, conns_timer_cb, srv);
	if (!srv->conns_timer || event_add(srv->conns_timer, &second) < 0)
		return -ENOMEM;
	return 0;
}
