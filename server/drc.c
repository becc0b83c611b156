/* The duplicate request cache: the replies to non-idempotent calls (CREATE,
 * REMOVE, RENAME, ...) by client address, xid and a checksum of the
 * arguments, so that a retransmitted call gets the first reply instead of
 * a second execution (and a spurious EEXIST or ENOENT). The checksum keeps
 * apart two different calls that happen to carry the same xid: clients on
 * one host (two mounts, two processes, libnfs contexts made at the same
 * moment) do not share an xid counter, and taking the second for a
 * retransmission of the first would leave it without a reply. The same
 * call (same bytes) from another connection is a retransmission only once
 * the connection of the first has closed (a client retransmits on a new
 * connection after losing the old one); while it is open, it is another
 * client's call (two processes behind one address creating the same name
 * with the same xid must not both be told they made it).
 * A fixed number of entries, oldest replaced first, found through a hash
 * of the address and xid (a scan of all of them, twice per call under the
 * one lock, had cost more than the call's own work). */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

struct drc_entry {
	uint8_t addr[16];
	uint32_t xid, prog, proc, sum;
	uint64_t conn;                /* the connection it came on */
	int orphan;                   /* ... which has closed */
	int used;
	int in_progress;
	uint8_t *reply;
	size_t len;
	struct drc_entry *hnext;      /* hash chain (used entries only) */
};

struct drc {
	pthread_mutex_t lock;
	struct drc_entry *e;
	size_t n, next;
	struct drc_entry **hash;
	size_t hmask;                 /* buckets - 1: a power of two, at least 2n */
};

struct drc *drc_new(size_t entries)
{
	struct drc *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	if (entries == 0)
		entries = 1;
	d->hmask = 1;
	while (d->hmask < 2 * entries)
		d->hmask <<= 1;
	d->e = calloc(entries, sizeof(*d->e));
	d->hash = calloc(d->hmask, sizeof(*d->hash));
	d->hmask--;
	if (!d->e || !d->hash) {
		free(d->e);
		free(d->hash);
		free(d);
		return NULL;
	}
	d->n = entries;
	pthread_mutex_init(&d->lock, NULL);
	return d;
}

void drc_free(struct drc *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->e[i].reply);
	free(d->e);
	free(d->hash);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* The client's address without the port: a client may retransmit on a
 * new connection from another port. */
static void addr_key(const struct sockaddr *sa, uint8_t out[16])
{
	memset(out, 0, 16);
	if (sa->sa_family == AF_INET)
		memcpy(out, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else if (sa->sa_family == AF_INET6)
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

static struct drc_entry **bucket(struct drc *d, const uint8_t *addr, uint32_t xid)
{
	uint32_t h = xid * 0x9e3779b1u;

	for (int i = 0; i < 16; i += 4) {
		uint32_t w;
		memcpy(&w, addr + i, 4);
		h = (h ^ w) * 0x85ebca6bu;
	}
	return &d->hash[(h ^ (h >> 15)) & d->hmask];
}

/* The entry of this call for connection conn: its own, else (*other set)
 * one whose connection has closed or, for storing, one still in progress
 * (its call retransmitted on another connection meanwhile); or NULL. */
static struct drc_entry *find(struct drc *d, const uint8_t *addr, uint64_t conn, uint32_t xid,
			      uint32_t prog, uint32_t proc, uint32_t sum, int storing,
			      int *other)
{
	struct drc_entry *alt = NULL;

	for (struct drc_entry *e = *bucket(d, addr, xid); e; e = e->hnext) {
		if (e->xid != xid || e->prog != prog || e->proc != proc || e->sum != sum ||
		    memcmp(e->addr, addr, 16) != 0)
			continue;
		if (e->conn == conn && (!storing || e->in_progress)) {
			*other = 0;
			return e;
		}
		if (!alt && (storing ? e->in_progress : e->orphan))
			alt = e;
	}
	*other = alt != NULL;
	return alt;
}

/* A used entry leaves its chain and is free again. */
static void drc_entry_unlink(struct drc *d, struct drc_entry *e)
{
	struct drc_entry **pp = bucket(d, e->addr, e->xid);

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	free(e->reply);
	memset(e, 0, sizeof(*e));
}

int drc_lookup(struct drc *d, const struct sockaddr *peer, uint64_t conn, uint32_t xid,
	       uint32_t prog, uint32_t proc, uint32_t sum, uint8_t **reply, size_t *len)
{
	uint8_t addr[16];
	struct drc_entry *e;
	int ret = 0, adopt;

	addr_key(peer, addr);
	pthread_mutex_lock(&d->lock);
	e = find(d, addr, conn, xid, prog, proc, sum, 0, &adopt);
	if (e && adopt) {
		e->conn = conn; /* retransmitted here: this connection's now */
		e->orphan = 0;
	}
	if (e && e->in_progress) {
		ret = -EINPROGRESS;
	} else if (e) {
		*reply = malloc(e->len);
		if (*reply) {
			memcpy(*reply, e->reply, e->len);
			*len = e->len;
			ret = 1;
		}
	} else {
		struct drc_entry **b = bucket(d, addr, xid);
		e = &d->e[d->next];
		d->next = (d->next + 1) % d->n;
		if (e->used)
			drc_entry_unlink(d, e);
		memcpy(e->addr, addr, 16);
		e->xid = xid;
		e->prog = prog;
		e->proc = proc;
		e->sum = sum;
		e->conn = conn;
		e->used = 1;
		e->in_progress = 1;
		e->hnext = *b;
		*b = e;
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

void drc_store(struct drc *d, const struct sockaddr *peer, uint64_t conn, uint32_t xid,
	       uint32_t prog, uint32_t proc, uint32_t sum, const uint8_t *reply, size_t len)
{
	uint8_t addr[16];
	struct drc_entry *e;
	int other; /* stored wherever the call's entry is now */

	addr_key(peer, addr);
	pthread_mutex_lock(&d->lock);
	e = find(d, addr, conn, xid, prog, proc, sum, 1, &other);
	if (e) {
		free(e->reply);
		e->reply = malloc(len);
		if (e->reply) {
			memcpy(e->reply, reply, len);
			e->len = len;
			e->in_progress = 0;
		} else {
			drc_entry_unlink(d, e); /* no memory: forget it rather than block its xid */
		}
	}
	pthread_mutex_unlock(&d->lock);
}

void drc_conn_closed(struct drc *d, uint64_t conn)
{
	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->n; i++)
		if (d->e[i].used && d->e[i].conn == conn)
			d->e[i].orphan = 1;
	pthread_mutex_unlock(&d->lock);
}
