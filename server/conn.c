/* Connections on the event loop: accepting (and deciding once which export
 * the client may use), ONC RPC record marking (RFC 5531 section 11) with
 * multi-fragment records and a maximum record size, handing complete
 * records to the workers, and backpressure: a connection with too many
 * requests outstanding, or a server with too many in all, stops reading
 * until replies drain. */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "server/log.h"
#include "server/server.h"

static size_t max_record(const struct server *srv)
{
	return srv->cfg.max_io + (64u << 10);
}

static void free_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	bufferevent_free(c->bev);
	pthread_mutex_destroy(&c->lock);
	free(c->rec);
	free(c);
}

void conn_put(struct conn *c)
{
	int last;

	pthread_mutex_lock(&c->lock);
	last = --c->refs == 0;
	pthread_mutex_unlock(&c->lock);
	/* bufferevents are freed on the loop's thread. */
	if (last)
		event_base_once(c->srv->base, -1, EV_TIMEOUT, free_cb, c, NULL);
}

/* The loop's own reference goes once, at EOF, error or kill. */
static void conn_close(struct conn *c)
{
	int drop;

	pthread_mutex_lock(&c->lock);
	drop = !c->dead;
	c->dead = 1;
	pthread_mutex_unlock(&c->lock);
	if (drop) {
		bufferevent_disable(c->bev, EV_READ);
		log_debug("%s:%u: connection closed", c->peer_name, c->peer_port);
		conn_put(c);
	}
}

static void kill_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	conn_close(c);
	conn_put(c);
}

void conn_kill(struct conn *c)
{
	pthread_mutex_lock(&c->lock);
	c->refs++;
	pthread_mutex_unlock(&c->lock);
	event_base_once(c->srv->base, -1, EV_TIMEOUT, kill_cb, c, NULL);
}

/* Lock order: the loop thread holds a bufferevent's lock while its
 * callbacks run and takes srv->qlock and c->lock inside it; so nobody may
 * call into a bufferevent while holding either of those. */
void conn_reply(struct conn *c, const uint8_t *buf, size_t len)
{
	int dead;

	pthread_mutex_lock(&c->lock);
	dead = c->dead;
	pthread_mutex_unlock(&c->lock);
	/* (the request's reference keeps the bufferevent alive) */
	if (dead)
		return;
	/* Nothing queued before it: the reply goes to the socket from here,
	 * without waking the loop; what the socket does not take now is
	 * queued and sent by the loop. Under the bufferevent's lock, so the
	 * loop never writes at the same time and the order is kept. */
	bufferevent_lock(c->bev);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
		ssize_t n = send(bufferevent_getfd(c->bev), buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		}
		/* An error other than a full socket is the loop's to see. */
	}
	if (len)
		bufferevent_write(c->bev, buf, len);
	bufferevent_unlock(c->bev);
}

static int over_limits(struct server *srv, struct conn *c)
{
	return c->outstanding >= srv->cfg.max_conn_requests ||
	       srv->outstanding >= srv->cfg.max_requests;
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

void conn_done(struct conn *c)
{
	struct server *srv = c->srv;
	struct conn *wake = NULL, *still = NULL;
	int self;

	pthread_mutex_lock(&srv->qlock);
	srv->outstanding--;
	pthread_mutex_lock(&c->lock);
	c->outstanding--;
	self = may_resume(srv, c);
	pthread_mutex_unlock(&c->lock);
	/* Connections paused by the server-wide limit: those that may read
	 * again are resumed below, the others stay on the list. */
	while (srv->paused) {
		struct conn *p = srv->paused;
		int keep;
		srv->paused = p->next_paused;
		pthread_mutex_lock(&p->lock);
		p->wake_go = may_resume(srv, p);
		keep = !p->wake_go && p->paused && !p->dead;
		p->on_paused_list = keep;
		pthread_mutex_unlock(&p->lock);
		if (keep) {
			p->next_paused = still;
			still = p;
		} else {
			p->next_paused = wake;
			wake = p;
		}
	}
	srv->paused = still;
	pthread_mutex_unlock(&srv->qlock);
	if (self)
		resume(c);
	while (wake) {
		struct conn *next = wake->next_paused;
		if (wake->wake_go)
			resume(wake);
		conn_put(wake); /* the paused list's reference */
		wake = next;
	}
}

/* A complete record goes to the workers. */
static void submit(struct conn *c)
{
	struct server *srv = c->srv;
	struct request *rq = malloc(sizeof(*rq));

	if (!rq) {
		log_error("%s: out of memory for a request", c->peer_name);
		conn_close(c);
		return;
	}
	rq->conn = c;
	rq->rec = c->rec;
	rq->len = c->rec_len;
	c->rec = NULL;
	c->rec_len = c->rec_cap = 0;
	pthread_mutex_lock(&srv->qlock);
	srv->outstanding++;
	pthread_mutex_lock(&c->lock);
	c->refs++;
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
	workers_submit(srv, rq);
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	for (;;) {
		uint8_t hdr[4];
		uint32_t mark, flen;
		int paused;

		pthread_mutex_lock(&c->lock);
		paused = c->paused || c->dead;
		pthread_mutex_unlock(&c->lock);
		if (paused || evbuffer_get_length(in) < 4)
			return;
		evbuffer_copyout(in, hdr, 4);
		memcpy(&mark, hdr, 4);
		mark = ntohl(mark);
		flen = mark & 0x7fffffffu;
		if (c->rec_len + flen > max_record(c->srv)) {
			log_warn("%s:%u: record of %zu bytes or more exceeds %zu: closing",
				 c->peer_name, c->peer_port, c->rec_len + flen, max_record(c->srv));
			conn_close(c);
			return;
		}
		if (evbuffer_get_length(in) < 4 + (size_t)flen)
			return;
		if (c->rec_len + flen > c->rec_cap) {
			size_t ncap = c->rec_len + flen;
			uint8_t *p = realloc(c->rec, ncap ? ncap : 1);
			if (!p) {
				conn_close(c);
				return;
			}
			c->rec = p;
			c->rec_cap = ncap;
		}
		evbuffer_drain(in, 4);
		evbuffer_remove(in, c->rec + c->rec_len, flen);
		c->rec_len += flen;
		if (mark & 0x80000000u)
			submit(c);
	}
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		conn_close(arg);
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
		      void *arg)
{
	struct server *srv = arg;
	struct conn *c;

	if (srv->stopping) {
		evutil_closesocket(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		evutil_closesocket(fd);
		return;
	}
	c->srv = srv;
	c->refs = 1;
	pthread_mutex_init(&c->lock, NULL);
	memcpy(&c->peer, sa, (size_t)salen < sizeof(c->peer) ? (size_t)salen : sizeof(c->peer));
	if (sa->sa_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &in->sin_addr, c->peer_name, sizeof(c->peer_name));
		c->peer_port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, c->peer_name, sizeof(c->peer_name));
		c->peer_port = ntohs(in6->sin6_port);
	}
	{
		/* Each call looks its export up again (a reload may change it):
		 * this is only the warning. */
		struct export_set *es = export_table_get(&srv->exports);
		if (!export_for_client(es, sa))
			log_warn("%s:%u: connected, but no export allows this client",
				 c->peer_name, c->peer_port);
		export_set_put(es);
	}
	c->bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_THREADSAFE);
	if (!c->bev) {
		evutil_closesocket(fd);
		pthread_mutex_destroy(&c->lock);
		free(c);
		return;
	}
	/* Replies are whole records: no waiting for the client's delayed ACK
	 * (Nagle held every reply over 16 KiB for ~40 ms), and a 1 MiB READ
	 * reply goes out in one write, not 64. */
	{
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	bufferevent_set_max_single_write(c->bev, max_record(srv));
	bufferevent_set_max_single_read(c->bev, max_record(srv));
	bufferevent_setcb(c->bev, read_cb, NULL, event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	log_debug("%s:%u: connected", c->peer_name, c->peer_port);
}

int conn_listen(struct server *srv)
{
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
	return 0;
}
