/* Admission: which connections chunkfsd takes, which it keeps when a
 * newcomer finds every place taken, and which it ages out. The model is
 * Linux knfsd (svc_check_conn_limits, svc_age_temp_xprts), whose rules
 * protect clients that work over those that only connect:
 *
 *  - a peer that no export's clients= list matches is closed at accept
 *    (its calls, NULL included, would all be refused but NULL);
 *  - a peer with max_connections_per_client open has its newcomer closed,
 *    so one host cannot take every place;
 *  - at max_connections the newcomer is taken and room made by closing the
 *    connection quiet longest among those whose peer has not yet had a
 *    call pass an export check ("unproven"), else the quietest of all;
 *    a connection with a call in flight (or a reply unsent) is never
 *    chosen, and when every one has, the newcomer is closed instead;
 *  - a connection with no record begun, nothing in flight and no byte
 *    for idle_timeout seconds is closed (0: never).
 *
 * The connections are a list, oldest first; each decision walks it (at
 * most max_connections, 1024 by default: a few microseconds). All on the
 * loop's thread, but for admit_prove and admit_touch. */
#include "config.h"

#include <errno.h>
#include <event2/buffer.h>
#include <netinet/in.h>
#include <string.h>

#include "server/admit.h"
#include "server/ratelog.h"
#include "server/server.h"

static struct ratelog log_no_export =
	RATELOG_INIT(LOG_LVL_WARN, "connections closed at accept: no export allows the client");
static struct ratelog log_per_client =
	RATELOG_INIT(LOG_LVL_WARN, "connections closed at accept: max_connections_per_client");
static struct ratelog log_full =
	RATELOG_INIT(LOG_LVL_WARN, "connections closed at accept: max_connections, all busy");
static struct ratelog log_evicted =
	RATELOG_INIT(LOG_LVL_WARN, "connections closed to admit a newcomer");
static struct ratelog log_idle = RATELOG_INIT(LOG_LVL_INFO, "idle connections closed");

static void count(uint64_t *counter)
{
	__atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

/* The peer's address as 16 bytes, IPv4 as IPv4-mapped IPv6 (a dual-stack
 * socket's IPv4 peers are the same hosts as IPv4 ones); -EAFNOSUPPORT for
 * other families. */
static int host_of(const struct sockaddr *sa, uint8_t a[16])
{
	if (sa->sa_family == AF_INET) {
		memset(a, 0, 10);
		a[10] = a[11] = 0xff;
		memcpy(a + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(a, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

/* A call of c in flight, or a reply of it not yet sent. */
static int busy(struct conn *c)
{
	int n;

	pthread_mutex_lock(&c->lock);
	n = c->outstanding;
	pthread_mutex_unlock(&c->lock);
	return n > 0;
}

static uint64_t quiet_ms(const struct conn *c, uint64_t now)
{
	uint64_t last = __atomic_load_n(&c->last_active_ms, __ATOMIC_RELAXED);

	return now > last ? now - last : 0;
}

/* Over the open connections: how many come from host, and the quietest
 * one free to close, unproven and of all (the older first on a tie). */
struct scan {
	int same_host;
	struct conn *unproven, *any;
};

static void scan_conns(struct server *srv, const uint8_t host[16], uint64_t now, struct scan *s)
{
	uint64_t q_unproven = 0, q_any = 0;

	memset(s, 0, sizeof(*s));
	for (struct conn *c = srv->conns; c; c = c->next_open) {
		uint8_t h[16];
		uint64_t q;

		if (host_of((const struct sockaddr *)&c->peer, h) == 0 && !memcmp(h, host, 16))
			s->same_host++;
		if (busy(c))
			continue;
		q = quiet_ms(c, now);
		if (!s->any || q > q_any) {
			s->any = c;
			q_any = q;
		}
		if (!__atomic_load_n(&c->proven, __ATOMIC_RELAXED) &&
		    (!s->unproven || q > q_unproven)) {
			s->unproven = c;
			q_unproven = q;
		}
	}
}

static int allowed(struct server *srv, const struct sockaddr *sa)
{
	struct export_set *es = export_table_get(&srv->exports);
	int yes = export_for_client(es, sa) != NULL;

	export_set_put(es);
	return yes;
}

int admit_decide(struct server *srv, const struct sockaddr *sa, const char *name, uint16_t port,
		 struct conn **victim)
{
	uint64_t now = monotonic_ms();
	uint8_t host[16];
	struct scan s;
	struct conn *v;

	*victim = NULL;
	if (!allowed(srv, sa)) {
		count(&srv->admit.closed_no_export);
		ratelog_msg(&log_no_export, "%s:%u: no export allows this client: connection closed",
			    name, port);
		return -EACCES;
	}
	if (host_of(sa, host) < 0)
		memset(host, 0, sizeof(host));
	scan_conns(srv, host, now, &s);
	if (s.same_host >= srv->cfg.max_conns_per_client) {
		count(&srv->admit.closed_per_client_cap);
		ratelog_msg(&log_per_client,
			    "%s:%u: max_connections_per_client (%d) open from this address: "
			    "connection closed",
			    name, port, srv->cfg.max_conns_per_client);
		return -EDQUOT;
	}
	if (srv->nconns < srv->cfg.max_connections)
		return 0;
	v = s.unproven ? s.unproven : s.any;
	if (!v) {
		count(&srv->admit.refused_full);
		ratelog_msg(&log_full,
			    "max_connections (%d) reached and every connection has a call in "
			    "flight: closed the new connection from %s:%u",
			    srv->cfg.max_connections, name, port);
		return -EBUSY;
	}
	count(s.unproven ? &srv->admit.evicted_unproven : &srv->admit.evicted_idle_oldest);
	ratelog_msg(&log_evicted,
		    "max_connections (%d) reached: closing %s:%u (%s, quiet for %llu s) for a new "
		    "connection from %s:%u",
		    srv->cfg.max_connections, v->peer_name, v->peer_port,
		    s.unproven ? "no call of its peer has passed an export check yet"
			       : "the quietest, every peer proven",
		    (unsigned long long)(quiet_ms(v, now) / 1000), name, port);
	*victim = v;
	return 0;
}

void admit_join(struct server *srv, struct conn *c)
{
	admit_touch(c);
	c->next_open = NULL;
	c->prev_open = srv->conns_tail;
	if (srv->conns_tail)
		srv->conns_tail->next_open = c;
	else
		srv->conns = c;
	srv->conns_tail = c;
	__atomic_add_fetch(&srv->nconns, 1, __ATOMIC_RELAXED);
}

/* c is dead already (conn_close). */
void admit_leave(struct server *srv, struct conn *c)
{
	int proven;

	if (c->prev_open)
		c->prev_open->next_open = c->next_open;
	else
		srv->conns = c->next_open;
	if (c->next_open)
		c->next_open->prev_open = c->prev_open;
	else
		srv->conns_tail = c->prev_open;
	c->prev_open = c->next_open = NULL;
	__atomic_sub_fetch(&srv->nconns, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&c->lock);
	proven = c->proven;
	pthread_mutex_unlock(&c->lock);
	if (proven)
		__atomic_sub_fetch(&srv->nproven, 1, __ATOMIC_RELAXED);
}

void admit_touch(struct conn *c)
{
	__atomic_store_n(&c->last_active_ms, monotonic_ms(), __ATOMIC_RELAXED);
}

/* Under c->lock against admit_leave, which conn_close calls after marking
 * c dead: a connection is counted proven only while it is open. */
void admit_prove(struct conn *c)
{
	int now_proven;

	if (__atomic_load_n(&c->proven, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&c->lock);
	now_proven = !c->dead && !c->proven;
	if (now_proven) {
		__atomic_store_n(&c->proven, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&c->srv->nproven, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&c->lock);
}

/* Nothing of a record begun, nothing in flight, nothing unsent. */
static int idle(struct conn *c)
{
	return !c->rec_len && !c->frag_left &&
	       !evbuffer_get_length(bufferevent_get_input(c->bev)) && !busy(c);
}

void admit_sweep(struct server *srv, void (*close_idle)(struct conn *c))
{
	uint64_t now = monotonic_ms(), limit = (uint64_t)srv->cfg.idle_timeout * 1000u;
	struct conn *c, *next;

	if (!limit)
		return;
	for (c = srv->conns; c; c = next) {
		uint64_t q = quiet_ms(c, now);

		next = c->next_open;
		if (q < limit || !idle(c))
			continue;
		count(&srv->admit.closed_idle_timeout);
		ratelog_msg(&log_idle, "%s:%u: idle for %llu s (idle_timeout): connection closed",
			    c->peer_name, c->peer_port, (unsigned long long)(q / 1000));
		close_idle(c);
	}
}
