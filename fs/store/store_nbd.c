/* A chunk store on an NBD export, through libnbd: pread, pwrite, flush and
 * trim become NBD commands, split to the server's largest request; the
 * size is the export's. Opened read-only (for fsck -n) it refuses writes
 * itself. Part of libchunkfs_store (fsck.chunkfs checks a chunk over NBD,
 * chunkfsd serves chunks placed on NBD servers); libnbd itself (and the
 * ~20 libraries it pulls in) is loaded with dlopen only when an NBD URI is
 * opened, so nothing that never opens one depends on it. Every call has a
 * deadline (store_nbd_set_timeout) and a closed connection is made again
 * only where that is safe (ns_revive).
 *
 * Connections. A store holds a small pool of connections to its export
 * (struct ns_conn), each with its own libnbd handle, used by one caller at
 * a time (ns_take, ns_give): several threads each have a request in
 * flight, and the pieces of one large request are sent together on its
 * connection, not one after another. A second connection is made only
 * when every one is busy, and only to a server that offers multi-conn (the
 * NBD protocol: without it a client should use one connection, as reads on
 * one need not see writes answered on another) and to an export whose
 * chunk header was read at open (every new connection must find the same
 * volume's same chunk there, as a reconnection must).
 *
 * Flushes. NBD_CMD_FLUSH covers the writes the server completed before it
 * on its connection, and with multi-conn those of every connection. The
 * store numbers (seq) every connection made, every batch of writes sent,
 * every write answer and every flush sent: a flush answered on connection
 * F covers each connection's writes sent after F was made and answered
 * before the flush was sent (a connection made again after a server
 * restart covers nothing the old server may have answered, since lost). A
 * flush is sent on one connection (a free one with writes of its own if
 * there is one), and on each dirty connection it would not cover (rare:
 * after a reconnection). A flush can be sent and waited for in two halves
 * (flush_begin, flush_end), so that a commit sends every placed store's
 * flush before it waits for any and pays one round trip, not one per
 * store; flushes of one store go one at a time (flush_lock, held from
 * begin to end), reads and writes go on beside them on the other
 * connections.
 *
 * The FUA rule: a write the caller follows with a flush and no other write
 * (store_pwrite_last) goes with NBD_CMD_FLAG_FUA when the server offers it
 * and nothing else answered on this store awaits a flush (no connection
 * dirty); it is durable once answered, leaves nothing dirty, and the flush
 * then sends nothing. Durability is the same as write-then-flush: the flush
 * would have covered that write alone. Every other write is plain and
 * covered by the next flush.
 *
 * Read-ahead. A store opened with store_nbd_set_readahead > 0 has a cache
 * (fs/store/readahead.c) and a fetcher thread: reads go to the cache first,
 * windows it queues ahead of sequential readers are fetched on a pool
 * connection taken for a turn, and every write and trim drops the windows
 * over its range before it is sent and after it is answered. A hint
 * (store_willneed: a file read in order whose bytes jump in the store)
 * queues windows over the hinted range for the fetchers, sequential or
 * not; without a cache a hint is ignored. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <libnbd.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/format/ondisk.h"
#include "fs/store/readahead.h"
#include "fs/store/store_nbd.h"

/* Requests are cut to this size, or to the server's maximum if smaller. */
#define NBD_STORE_MAX_REQUEST (4u << 20)

/* The most connections a store may be given (store_nbd_set_connections):
 * the pool's size when the server offers multi-conn. */
#define NS_CONN_LIMIT 16
static int ns_max_conns = 4;

/* Bytes of read-ahead cache per store, 0 for none
 * (store_nbd_set_readahead), and its windows' largest size. */
static size_t ns_ra_limit;
#define NS_RA_WIN (2u << 20)

/* Fetcher threads per store (each on a connection of its own, at most
 * the pool's size), the windows each keeps in flight on its connection,
 * and how many it sends before giving the connection back for a turn. */
#define NS_RA_FETCHERS 2
#define NS_RA_DEPTH 8
#define NS_RA_TURN 32

/* How long a connection beyond the first may take to be made (ms). */
#define NS_GROW_WAIT 1000

/* Pieces of one request sent together on its connection. */
#define NS_BATCH 16

/* How often a caller waiting for its answer looks whether another lost
 * the store meanwhile (ms). */
#define NS_POLL_SLICE 100

/* How long a connection or one request may take before the server counts
 * as lost (store_nbd_set_timeout). */
static int nbd_timeout_ms = 10000;

/* The libnbd calls used, resolved from libnbd.so.0 by load_libnbd(). */
static struct {
	void *dl;
	__typeof__(nbd_create) *create;
	__typeof__(nbd_aio_connect_uri) *aio_connect_uri;
	__typeof__(nbd_aio_is_connecting) *aio_is_connecting;
	__typeof__(nbd_aio_is_ready) *aio_is_ready;
	__typeof__(nbd_aio_is_dead) *aio_is_dead;
	__typeof__(nbd_aio_is_closed) *aio_is_closed;
	__typeof__(nbd_get_size) *get_size;
	__typeof__(nbd_is_read_only) *is_read_only;
	__typeof__(nbd_can_flush) *can_flush;
	__typeof__(nbd_can_fua) *can_fua;
	__typeof__(nbd_can_trim) *can_trim;
	__typeof__(nbd_can_multi_conn) *can_multi_conn;
	__typeof__(nbd_get_block_size) *get_block_size;
	__typeof__(nbd_aio_pread) *aio_pread;
	__typeof__(nbd_aio_pwrite) *aio_pwrite;
	__typeof__(nbd_aio_flush) *aio_flush;
	__typeof__(nbd_aio_trim) *aio_trim;
	__typeof__(nbd_aio_command_completed) *aio_command_completed;
	__typeof__(nbd_poll) *poll;
	__typeof__(nbd_shutdown) *shutdown;
	__typeof__(nbd_close) *close;
	__typeof__(nbd_get_errno) *get_errno;
	__typeof__(nbd_get_error) *get_error;
} lib;

/* One connection of a store. h is used only by the caller that took the
 * connection (busy); the other fields are under the store's lock. */
struct ns_conn {
	struct nbd_handle *h; /* NULL until made */
	int busy;	      /* taken by a caller (ns_take, ns_take_conn) */
	int wanted;	      /* flushers waiting for it: ns_take passes it by */
	uint64_t made;	      /* seq when this connection was made */
	/* Writes and trims answered on it that no flush covered yet: the seq
	 * taken before the oldest was sent, and the seq of the last answer
	 * (0 0: nothing awaits a flush). */
	uint64_t dirty_first, dirty_last;
	/* its flush between flush_begin and flush_end (under flush_lock) */
	enum { PEND_NONE, PEND_SENT, PEND_RETRY } pend;
	int64_t pend_cookie;
	int64_t pend_deadline;
	uint64_t pend_seq; /* seq just before the flush was sent */
	int pend_err;	   /* PEND_RETRY: why libnbd refused the send */
};

struct nbd_store {
	struct chunk_store st;
	char *uri;
	pthread_mutex_t lock;	    /* the pool: ns_conn but h; nconn, max_conn, growing, seq */
	pthread_cond_t freed;	    /* a connection given back or made */
	pthread_mutex_t flush_lock; /* one flush at a time: held from begin to end */
	struct ns_conn conn[NS_CONN_LIMIT];
	int nconn;	/* conn[0 .. nconn) made */
	int max_conn;	/* 1, or ns_max_conns with multi-conn */
	int growing;	/* a caller is making conn[nconn] */
	uint64_t seq;	/* numbers connections made, writes sent and answered, flushes */
	int flush_lost; /* flush_begin found the store lost */
	/* Which chunk of which volume the export held when opened (its header,
	 * copy 0), so that a new connection is refused when it reaches
	 * another: the volume's UUID and the chunk's index. */
	int have_ident;
	/* The export's size at open: st.size is the caller's to narrow (fsck
	 * checks a lone chunk's part of an image) while fetchers run. */
	uint64_t export_size;
	uint8_t ident_uuid[16];
	uint32_t ident_index;
	int writable;
	int export_ro;
	int can_flush;
	int can_fua;
	int can_trim;
	size_t max_req;
	/* store_nbd_stats (atomics) */
	int in_flight, max_in_flight;
	uint64_t commands, flushes;
	/* The read-ahead cache (NULL: none) and the threads that fetch its
	 * windows (ns_ra_main). */
	struct ra_cache *ra;
	size_t ra_limit;
	int readers; /* ns_pread calls under way (atomic) */
	pthread_t fetcher[NS_RA_FETCHERS];
	int nfetchers;
};

void store_nbd_set_timeout(int ms)
{
	__atomic_store_n(&nbd_timeout_ms, ms > 0 ? ms : 1, __ATOMIC_RELAXED);
}

int store_nbd_set_connections(int n)
{
	if (n < 1 || n > NS_CONN_LIMIT)
		return -EINVAL;
	__atomic_store_n(&ns_max_conns, n, __ATOMIC_RELAXED);
	return 0;
}

void store_nbd_set_readahead(size_t bytes)
{
	__atomic_store_n(&ns_ra_limit, bytes, __ATOMIC_RELAXED);
}

static struct nbd_store *to_ns(struct chunk_store *st)
{
	return (struct nbd_store *)st;
}

/* libnbd's errno for the call that just failed (EIO when it has none). */
static int nbd_err(void)
{
	int e = lib.get_errno();

	return e > 0 ? -e : -EIO;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t deadline_ms(void)
{
	return now_ms() + __atomic_load_n(&nbd_timeout_ms, __ATOMIC_RELAXED);
}

/* The server is gone for good: every call fails from now on. A handle
 * with a command left in flight is not polled again, so that command never
 * touches its caller's buffer; it is closed with the store. */
static int ns_lose(struct nbd_store *ns, int err)
{
	store_set_lost(&ns->st, err);
	if (ns->ra)
		ra_drop(ns->ra);
	return -EIO;
}

/* What a command whose connection closed under it returns (not an errno
 * the server could answer): the caller decides whether a new connection
 * may take the command again (ns_revive). */
#define NS_CLOSED (-ECONNRESET)

static int closed(struct nbd_handle *h)
{
	return lib.aio_is_dead(h) || lib.aio_is_closed(h);
}

/* 1 when the command finished well, 0 not yet; a failure the server
 * answered is its errno, a closed connection NS_CLOSED. */
static int command_done(struct nbd_handle *h, int64_t cookie)
{
	int r = lib.aio_command_completed(h, (uint64_t)cookie);

	if (r >= 0)
		return r;
	r = nbd_err();
	return closed(h) ? NS_CLOSED : r;
}

static int connect_done(struct nbd_handle *h, int64_t unused)
{
	(void)unused;
	if (lib.aio_is_connecting(h))
		return 0;
	return lib.aio_is_ready(h) ? 1 : -ECONNREFUSED;
}

/* Poll h until done() or the deadline: 0 or done()'s error; -ETIMEDOUT or
 * the poll's error (the store lost when lose is set); -EIO once another
 * caller lost the store (h is then left alone): looked at every
 * NS_POLL_SLICE ms, so that every caller of a store whose server went
 * silent fails soon after the first one's deadline, not at its own. */
static int ns_poll_until(struct nbd_store *ns, struct nbd_handle *h, int64_t deadline,
			 int (*done)(struct nbd_handle *h, int64_t cookie), int64_t cookie,
			 int lose)
{
	for (;;) {
		int64_t left;
		int r = done(h, cookie);
		if (r != 0)
			return r > 0 ? 0 : r;
		if (store_lost(&ns->st))
			return -EIO;
		left = deadline - now_ms();
		if (left <= 0)
			return lose ? ns_lose(ns, -ETIMEDOUT) : -ETIMEDOUT;
		if (lib.poll(h, (int)(left < NS_POLL_SLICE ? left : NS_POLL_SLICE)) < 0) {
			r = nbd_err();
			return lose ? ns_lose(ns, r) : r;
		}
	}
}

/* One command on h, started by the caller (its cookie, or -1 when libnbd
 * refused it), waited for until deadline. */
static int ns_wait_until(struct nbd_store *ns, struct nbd_handle *h, int64_t cookie,
			 int64_t deadline)
{
	if (cookie < 0) {
		int r = nbd_err();
		return closed(h) ? NS_CLOSED : r;
	}
	return ns_poll_until(ns, h, deadline, command_done, cookie, 1);
}

enum ns_cmd { NS_READ, NS_WRITE, NS_TRIM, NS_FLUSH };

/* fua: a write sent with NBD_CMD_FLAG_FUA (answered once durable). The
 * cookie, counted in flight (ns_landed takes it off), or -1. */
static int64_t ns_send(struct nbd_store *ns, struct nbd_handle *h, enum ns_cmd cmd, void *p,
		       size_t n, uint64_t off, int fua)
{
	int64_t cookie;
	int now, max;

	switch (cmd) {
	case NS_READ:
		cookie = lib.aio_pread(h, p, n, off, NBD_NULL_COMPLETION, 0);
		break;
	case NS_WRITE:
		cookie = lib.aio_pwrite(h, p, n, off, NBD_NULL_COMPLETION,
					fua ? LIBNBD_CMD_FLAG_FUA : 0);
		break;
	case NS_TRIM:
		cookie = lib.aio_trim(h, n, off, NBD_NULL_COMPLETION, 0);
		break;
	default:
		cookie = lib.aio_flush(h, NBD_NULL_COMPLETION, 0);
		break;
	}
	if (cookie < 0)
		return cookie;
	__atomic_add_fetch(&ns->commands, 1, __ATOMIC_RELAXED);
	if (cmd == NS_FLUSH)
		__atomic_add_fetch(&ns->flushes, 1, __ATOMIC_RELAXED);
	now = __atomic_add_fetch(&ns->in_flight, 1, __ATOMIC_RELAXED);
	max = __atomic_load_n(&ns->max_in_flight, __ATOMIC_RELAXED);
	while (now > max && !__atomic_compare_exchange_n(&ns->max_in_flight, &max, now, 0,
							 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return cookie;
}

/* A command sent by ns_send answered (or given up). */
static void ns_landed(struct nbd_store *ns, int64_t cookie)
{
	if (cookie >= 0)
		__atomic_sub_fetch(&ns->in_flight, 1, __ATOMIC_RELAXED);
}

/* A whole command on h within the timeout (header reads). */
static int ns_command(struct nbd_store *ns, struct nbd_handle *h, enum ns_cmd cmd, void *p,
		      size_t n, uint64_t off)
{
	int64_t cookie = ns_send(ns, h, cmd, p, n, off, 0);
	int ret = ns_wait_until(ns, h, cookie, deadline_ms());

	ns_landed(ns, cookie);
	return ret;
}

/* The chunk header at the start of the export, read on h: 0 and *hd, or
 * < 0 (unreadable, or no valid header there). */
static int ns_read_header(struct nbd_store *ns, struct nbd_handle *h, struct od_chunk_header *hd)
{
	uint8_t *blk = malloc(OD_BLOCK_SIZE);
	int ret = -ENOMEM;

	if (blk) {
		ret = ns_command(ns, h, NS_READ, blk, OD_BLOCK_SIZE, 0);
		if (ret == 0 && od_verify(blk, OD_BLOCK_SIZE) < 0)
			ret = -EUCLEAN;
		if (ret == 0)
			ret = od_get_chunk_header(blk, hd);
		free(blk);
	}
	return ret;
}

/* A new connection to ns->uri by deadline: 0 and *out, or the error with
 * why[] (nothing left open). A host that does not answer must not hold the
 * caller for TCP's minutes. */
static int ns_dial_by(struct nbd_store *ns, int64_t deadline, struct nbd_handle **out, char *why,
		      size_t whylen)
{
	struct nbd_handle *h = lib.create();
	int ret;

	if (!h) {
		ret = nbd_err();
		snprintf(why, whylen, "%s", lib.get_error() ? lib.get_error() : strerror(-ret));
		return ret;
	}
	if (lib.aio_connect_uri(h, ns->uri) < 0)
		ret = nbd_err();
	else
		ret = ns_poll_until(ns, h, deadline, connect_done, 0, 0);
	if (ret == 0) {
		*out = h;
		return 0;
	}
	if (ret == -ETIMEDOUT)
		snprintf(why, whylen, "no answer from %s within %d ms", ns->uri,
			 __atomic_load_n(&nbd_timeout_ms, __ATOMIC_RELAXED));
	else
		snprintf(why, whylen, "%s", lib.get_error() ? lib.get_error() : strerror(-ret));
	lib.close(h);
	return ret;
}

/* The same within the timeout. */
static int ns_dial(struct nbd_store *ns, struct nbd_handle **out, char *why, size_t whylen)
{
	return ns_dial_by(ns, deadline_ms(), out, why, whylen);
}

/* A connection made after the first reaches the same export: its size,
 * and a header naming the same chunk of the same volume (a server put back
 * with another image does not). 0 or -ECONNRESET. */
static int ns_same_export(struct nbd_store *ns, struct nbd_handle *h)
{
	struct od_chunk_header hd;

	if (!ns->have_ident || lib.get_size(h) != (int64_t)ns->export_size ||
	    ns_read_header(ns, h, &hd) < 0 || memcmp(hd.volume_uuid, ns->ident_uuid, 16) != 0 ||
	    hd.chunk_index != ns->ident_index)
		return -ECONNRESET;
	return 0;
}

/* Does any connection hold writes that await a flush? Under ns->lock. */
static int ns_dirty(struct nbd_store *ns)
{
	for (int i = 0; i < ns->nconn; i++)
		if (ns->conn[i].dirty_first)
			return 1;
	return 0;
}

/* The next number of ns->seq. */
static uint64_t ns_next_seq(struct nbd_store *ns)
{
	uint64_t seq;

	pthread_mutex_lock(&ns->lock);
	seq = ++ns->seq;
	pthread_mutex_unlock(&ns->lock);
	return seq;
}

/* Writes or trims sent on c after seq sent were answered: they await a
 * flush. */
static void ns_mark_dirty(struct nbd_store *ns, struct ns_conn *c, uint64_t sent)
{
	pthread_mutex_lock(&ns->lock);
	c->dirty_last = ++ns->seq;
	if (!c->dirty_first)
		c->dirty_first = sent;
	pthread_mutex_unlock(&ns->lock);
}

/* The connection c closed under a command. When no connection holds a
 * write not yet flushed, the server holds every write it answered,
 * whatever happened to it, so a new connection may take the command again
 * (NBD commands are idempotent): 0 when one is made (the old handle
 * closed). Writes not yet flushed, on any connection, may be gone with a
 * server that restarted, and a flush on a new connection would not cover
 * them: the store is lost. A request that timed out is never retried (the
 * server may still carry it out). */
static int ns_revive(struct nbd_store *ns, struct ns_conn *c)
{
	struct nbd_handle *h;
	char why[256];
	int dirty, ret;

	pthread_mutex_lock(&ns->lock);
	dirty = ns_dirty(ns);
	pthread_mutex_unlock(&ns->lock);
	if (dirty || !ns->have_ident)
		return ns_lose(ns, -ECONNRESET);
	ret = ns_dial(ns, &h, why, sizeof(why));
	if (ret < 0)
		return ns_lose(ns, ret); /* the old handle is closed with the store */
	lib.close(c->h);
	c->h = h;
	c->made = ns_next_seq(ns);
	if (ns_same_export(ns, h) < 0)
		return ns_lose(ns, -ECONNRESET);
	if (ns->ra) /* the server may have been put back: fetch anew */
		ra_drop(ns->ra);
	return 0;
}

/* Make conn[nconn], with ns->lock held (dropped meanwhile): the new
 * connection, taken, or NULL when it could not be made within
 * NS_GROW_WAIT ms (then the pool stays as large as it is). A server may
 * take fewer connections than it offers multi-conn for (qemu-nbd -e N
 * leaves the next one unanswered): that is no loss, the store goes on with
 * the connections it has; a server silent altogether is lost by the
 * commands on them. */
static struct ns_conn *ns_grow(struct nbd_store *ns)
{
	struct nbd_handle *h = NULL;
	struct ns_conn *c = NULL;
	char why[256];
	int ret;

	ns->growing = 1;
	pthread_mutex_unlock(&ns->lock);
	ret = ns_dial_by(ns, now_ms() + NS_GROW_WAIT, &h, why, sizeof(why));
	if (ret == 0)
		ret = ns_same_export(ns, h);
	pthread_mutex_lock(&ns->lock);
	ns->growing = 0;
	if (ret < 0) {
		if (h)
			lib.close(h);
		ns->max_conn = ns->nconn;
	} else {
		c = &ns->conn[ns->nconn++];
		c->h = h;
		c->busy = 1;
		c->made = ++ns->seq;
	}
	pthread_cond_broadcast(&ns->freed);
	return c;
}

/* A connection of the store for the caller alone: a free one, or a new
 * one when every one is busy and the pool may grow (and grow is set: not
 * for the read-ahead fetchers, so that the pool grows as the callers'
 * requests need, as before; a server that takes fewer connections than it
 * offers multi-conn for, qemu-nbd -e 2, leaves a new connection
 * unanswered and the store would be lost), or the first given back. NULL
 * once the store is lost. */
static struct ns_conn *ns_take(struct nbd_store *ns, int grow)
{
	struct ns_conn *c = NULL;

	pthread_mutex_lock(&ns->lock);
	while (!c && !store_lost(&ns->st)) {
		for (int i = 0; i < ns->nconn && !c; i++)
			if (!ns->conn[i].busy && !ns->conn[i].wanted)
				c = &ns->conn[i];
		if (c)
			c->busy = 1;
		else if (grow && !ns->growing && ns->nconn < ns->max_conn)
			c = ns_grow(ns);
		else
			pthread_cond_wait(&ns->freed, &ns->lock);
	}
	pthread_mutex_unlock(&ns->lock);
	return c;
}

/* Connection c in particular (a flush of its writes), with ns->lock
 * held: 0 once taken, -EIO when the store was lost meanwhile. */
static int ns_take_conn(struct nbd_store *ns, struct ns_conn *c)
{
	c->wanted++;
	while (c->busy && !store_lost(&ns->st))
		pthread_cond_wait(&ns->freed, &ns->lock);
	c->wanted--;
	if (c->busy)
		return -EIO;
	c->busy = 1;
	return 0;
}

static void ns_give(struct nbd_store *ns, struct ns_conn *c)
{
	pthread_mutex_lock(&ns->lock);
	c->busy = 0;
	pthread_cond_broadcast(&ns->freed);
	pthread_mutex_unlock(&ns->lock);
}

/* [off, off + len) on connection c, the caller's: cut to the largest
 * request, up to NS_BATCH pieces, sent together and then waited for. When
 * the connection closed under them, those not answered are sent once
 * more on a new one if that is safe (ns_revive). Writes answered are
 * marked dirty before that (a reconnection must see them); a FUA write is
 * durable once answered and leaves c clean. 0 or the first piece's
 * error. */
static int ns_batch(struct nbd_store *ns, struct ns_conn *c, enum ns_cmd cmd, uint8_t *p,
		    size_t len, uint64_t off, int fua)
{
	int64_t cookie[NS_BATCH];
	int res[NS_BATCH];
	size_t n = (len + ns->max_req - 1) / ns->max_req;
	int dirties = (cmd == NS_WRITE && !fua) || cmd == NS_TRIM;
	int ret = 0;

	for (int round = 0; round < 2; round++) {
		uint64_t sent = ns_next_seq(ns);
		int64_t deadline = deadline_ms();
		int again = 0, done = 0;

		for (size_t i = 0; i < n; i++) {
			size_t at = i * ns->max_req;
			size_t sz = len - at < ns->max_req ? len - at : ns->max_req;
			if (round == 0 || res[i] == NS_CLOSED)
				cookie[i] =
				    ns_send(ns, c->h, cmd, p ? p + at : NULL, sz, off + at, fua);
			else
				cookie[i] = -2; /* settled in round 0 */
		}
		for (size_t i = 0; i < n; i++) {
			if (cookie[i] == -2)
				continue;
			/* a lost store's handle is not polled again */
			res[i] = store_lost(&ns->st) ? -EIO
						     : ns_wait_until(ns, c->h, cookie[i], deadline);
			ns_landed(ns, cookie[i]);
			again |= res[i] == NS_CLOSED;
			done |= res[i] == 0;
		}
		if (done && dirties)
			ns_mark_dirty(ns, c, sent);
		if (!again)
			break;
		if (store_lost(&ns->st))
			return -EIO;
		if (round == 1) /* a server that closes every connection */
			return ns_lose(ns, -ECONNRESET);
		if (ns_revive(ns, c) < 0)
			return -EIO;
	}
	for (size_t i = 0; i < n && ret == 0; i++)
		ret = res[i];
	return store_lost(&ns->st) ? -EIO : ret;
}

/* A read, write or trim of [off, off + len) on one connection. */
static int ns_io(struct chunk_store *st, enum ns_cmd cmd, void *buf, size_t len, uint64_t off)
{
	struct nbd_store *ns = to_ns(st);
	struct ns_conn *c;
	uint8_t *p = buf;
	int ret = 0;

	if (cmd != NS_READ && (!ns->writable || ns->export_ro))
		return -EROFS;
	if (off > st->size || len > st->size - off)
		return -EINVAL;
	if (cmd == NS_TRIM && !ns->can_trim)
		return -EOPNOTSUPP;
	if (cmd != NS_READ && ns->ra)
		ra_invalidate(ns->ra, len, off); /* before it is sent ... */
	c = ns_take(ns, 1);
	if (!c)
		return -EIO;
	for (size_t done = 0; done < len && ret == 0;) {
		size_t n = len - done < NS_BATCH * ns->max_req ? len - done : NS_BATCH * ns->max_req;
		ret = ns_batch(ns, c, cmd, p ? p + done : NULL, n, off + done, 0);
		done += n;
	}
	ns_give(ns, c);
	if (cmd != NS_READ && ns->ra)
		ra_invalidate(ns->ra, len, off); /* ... and once answered */
	return ret;
}

/* A read served from the read-ahead cache when it holds every byte;
 * otherwise from the server. A window the read needs that no fetcher took
 * yet is fetched by the reader itself (the fetchers' connections are not
 * the limit then: each reader brings its own). Windows are queued ahead
 * only while a read is alone on the store: readers in parallel already
 * hide the round trips, and there fetching ahead costs (two threads
 * reading one stream on loopback: 0.3-0.5x, and no gain 1 ms away). */
static int ns_pread(struct chunk_store *st, void *buf, size_t len, uint64_t off)
{
	struct nbd_store *ns = to_ns(st);
	struct ra_claim cl;
	int queued, r, alone;

	if (!ns->ra || off > st->size || len > st->size - off)
		return ns_io(st, NS_READ, buf, len, off);
	alone = __atomic_add_fetch(&ns->readers, 1, __ATOMIC_RELAXED) == 1;
	while ((r = ra_read(ns->ra, buf, len, off, alone, &queued, &cl)) == -EAGAIN)
		ra_done(ns->ra, cl.w, ns_io(st, NS_READ, cl.buf, cl.len, cl.off));
	if (r != 0)
		r = ns_io(st, NS_READ, buf, len, off);
	else if (store_lost(st))
		r = -EIO;
	__atomic_sub_fetch(&ns->readers, 1, __ATOMIC_RELAXED);
	return r;
}

static void (*ns_fetch_hook)(struct chunk_store *st, uint64_t off, size_t len);

void store_nbd_set_fetch_hook(void (*fn)(struct chunk_store *st, uint64_t off, size_t len))
{
	__atomic_store_n(&ns_fetch_hook, fn, __ATOMIC_RELEASE);
}

/* The windows the fetcher has sent on its connection, oldest first. */
struct ns_fetch {
	struct ra_win *w;
	uint64_t off;
	size_t len;
	int64_t cookie, deadline;
};

/* Fetch w and the windows queued after it on connection c (the
 * fetcher's), up to NS_RA_DEPTH in flight and NS_RA_TURN in all, fewer when
 * a flush wants c. A window whose read failed is dropped. A connection
 * closed under them drops the whole cache (the server may come back with
 * other bytes) but is not made again here: the next command sent on it
 * does that (ns_revive). A fetch must not lose a store whose server is
 * restarting, which no reader asked anything of meanwhile. */
static void ns_ra_fetch(struct nbd_store *ns, struct ns_conn *c, struct ra_win *w, uint64_t off,
			size_t len, void *buf)
{
	struct ns_fetch f[NS_RA_DEPTH];
	int n = 0, sent = 0;

	for (;;) {
		void (*hook)(struct chunk_store *st, uint64_t off, size_t len);
		int r, wanted;

		if (w) {
			f[n].w = w;
			f[n].off = off;
			f[n].len = len;
			f[n].cookie = ns_send(ns, c->h, NS_READ, buf, len, off, 0);
			f[n].deadline = deadline_ms();
			n++;
			sent++;
			w = NULL;
		}
		pthread_mutex_lock(&ns->lock);
		wanted = c->wanted;
		pthread_mutex_unlock(&ns->lock);
		if (n < NS_RA_DEPTH && sent < NS_RA_TURN && !wanted && !store_lost(&ns->st) &&
		    (w = ra_take(ns->ra, 0, &off, &len, &buf)) != NULL)
			continue;
		if (n == 0)
			return;
		r = store_lost(&ns->st) ? -EIO : ns_wait_until(ns, c->h, f[0].cookie, f[0].deadline);
		ns_landed(ns, f[0].cookie);
		if (r == NS_CLOSED) {
			for (int i = 1; i < n; i++)
				ns_landed(ns, f[i].cookie);
			ra_drop(ns->ra);
			for (int i = 0; i < n; i++)
				ra_done(ns->ra, f[i].w, -EIO);
			return;
		}
		hook = __atomic_load_n(&ns_fetch_hook, __ATOMIC_ACQUIRE);
		if (r == 0 && hook)
			hook(&ns->st, f[0].off, f[0].len);
		ra_done(ns->ra, f[0].w, r);
		memmove(&f[0], &f[1], (size_t)(n - 1) * sizeof(f[0]));
		n--;
	}
}

/* A fetcher thread of a store with read-ahead: windows as they are
 * queued, on a connection of the pool taken for a turn. */
static void *ns_ra_main(void *arg)
{
	struct nbd_store *ns = arg;
	struct ra_win *w;
	uint64_t off;
	size_t len;
	void *buf;

	while ((w = ra_take(ns->ra, 1, &off, &len, &buf)) != NULL) {
		struct ns_conn *c = store_lost(&ns->st) ? NULL : ns_take(ns, 0);
		if (!c) {
			ra_done(ns->ra, w, -EIO);
			continue;
		}
		ns_ra_fetch(ns, c, w, off, len, buf);
		ns_give(ns, c);
	}
	return NULL;
}

/* The read-ahead cache and its fetchers (NS_RA_FETCHERS, no more than
 * the pool may hold), when store_nbd_set_readahead asks for one: windows of up to NS_RA_WIN, a quarter of the cache, and no
 * larger than the server's largest request. */
static int ns_ra_start(struct nbd_store *ns)
{
	size_t limit = __atomic_load_n(&ns_ra_limit, __ATOMIC_RELAXED);
	size_t win = limit / 4 < NS_RA_WIN ? limit / 4 : NS_RA_WIN;
	int ret;

	if (limit == 0)
		return 0;
	if (win > ns->max_req)
		win = ns->max_req;
	ret = ra_new(limit, win, ns->export_size, &ns->ra);
	if (ret < 0)
		return ret;
	ns->ra_limit = limit;
	while (ns->nfetchers < NS_RA_FETCHERS && ns->nfetchers < ns->max_conn) {
		ret = -pthread_create(&ns->fetcher[ns->nfetchers], NULL, ns_ra_main, ns);
		if (ret < 0)
			return ret;
		ns->nfetchers++;
	}
	return 0;
}

/* The fetchers stopped (their windows dropped) and joined. */
static void ns_ra_stop(struct nbd_store *ns)
{
	if (!ns->nfetchers)
		return;
	ra_stop(ns->ra);
	while (ns->nfetchers)
		pthread_join(ns->fetcher[--ns->nfetchers], NULL);
}

static int ns_pwrite(struct chunk_store *st, const void *buf, size_t len, uint64_t off)
{
	/* libnbd's pwrite takes the buffer const; it is only read. */
	return ns_io(st, NS_WRITE, (void *)(uintptr_t)buf, len, off);
}

/* The write before a flush (store_pwrite_last). When nothing answered
 * on this store awaits a flush (no connection dirty) and the server offers
 * FUA, it goes with NBD_CMD_FLAG_FUA: durable once answered, nothing
 * becomes dirty and the flush that follows has nothing to send. Otherwise
 * a plain write. The rule, for durability: FUA is used only where the
 * flush would have had this write alone to cover, so what is durable
 * after the flush is the same, one round trip sooner. */
static int ns_pwrite_last(struct chunk_store *st, const void *buf, size_t len, uint64_t off)
{
	struct nbd_store *ns = to_ns(st);
	struct ns_conn *c;
	int ret, dirty;

	if (!ns->can_fua || !ns->can_flush || len > ns->max_req)
		return ns_pwrite(st, buf, len, off);
	if (!ns->writable || ns->export_ro)
		return -EROFS;
	if (off > st->size || len > st->size - off)
		return -EINVAL;
	c = ns_take(ns, 1);
	if (!c)
		return -EIO;
	pthread_mutex_lock(&ns->lock);
	dirty = ns_dirty(ns);
	pthread_mutex_unlock(&ns->lock);
	if (ns->ra)
		ra_invalidate(ns->ra, len, off);
	ret = ns_batch(ns, c, NS_WRITE, (void *)(uintptr_t)buf, len, off, !dirty);
	ns_give(ns, c);
	if (ns->ra)
		ra_invalidate(ns->ra, len, off);
	return ret;
}

/* The flush on c (taken by the flusher), sent: after every write answer
 * numbered before pend_seq. */
static void ns_flush_send(struct nbd_store *ns, struct ns_conn *c)
{
	c->pend_seq = ns_next_seq(ns);
	c->pend_deadline = deadline_ms();
	c->pend_cookie = ns_send(ns, c->h, NS_FLUSH, NULL, 0, 0, 0);
	c->pend = PEND_SENT;
	if (c->pend_cookie < 0) {
		c->pend = PEND_RETRY;
		c->pend_err = closed(c->h) ? NS_CLOSED : nbd_err();
	}
}

/* A free connection with writes awaiting a flush, taken, or NULL; under
 * ns->lock. The flush goes there first: on a connection that has
 * something of its own to cover. */
static struct ns_conn *ns_free_dirty(struct nbd_store *ns)
{
	for (int i = 0; i < ns->nconn; i++) {
		struct ns_conn *c = &ns->conn[i];
		if (c->dirty_first && !c->busy && !c->wanted) {
			c->busy = 1;
			return c;
		}
	}
	return NULL;
}

/* The flush in two halves (vol_flush sends every store's before waiting
 * for any): begin takes flush_lock, which end releases, and when some
 * connection holds writes not yet flushed, takes a connection F (a free
 * dirty one, else any: ns_take) and sends the flush on it, and on every
 * dirty connection with writes sent before F was made (a flush on F
 * does not cover them: ns_covered); its deadline runs from the send, so flushes
 * sent together are waited for within about one timeout. A send libnbd
 * refused (a connection closed) is left to end, which takes the way of any
 * command (ns_revive). */
static void ns_flush_begin(struct chunk_store *st)
{
	struct nbd_store *ns = to_ns(st);
	struct ns_conn *f;
	int dirty;

	pthread_mutex_lock(&ns->flush_lock);
	ns->flush_lost = store_lost(st) != 0;
	if (ns->flush_lost || !ns->can_flush)
		return;
	pthread_mutex_lock(&ns->lock);
	f = ns_free_dirty(ns);
	dirty = ns_dirty(ns);
	pthread_mutex_unlock(&ns->lock);
	if (!dirty)
		return;
	if (!f)
		f = ns_take(ns, 1);
	if (!f) {
		ns->flush_lost = 1;
		return;
	}
	ns_flush_send(ns, f);
	pthread_mutex_lock(&ns->lock);
	for (int i = 0; i < ns->nconn; i++) {
		struct ns_conn *c = &ns->conn[i];
		if (c == f || !c->dirty_first || c->dirty_first > f->made)
			continue;
		if (ns_take_conn(ns, c) < 0)
			break; /* lost: end says so */
		pthread_mutex_unlock(&ns->lock);
		ns_flush_send(ns, c);
		pthread_mutex_lock(&ns->lock);
	}
	pthread_mutex_unlock(&ns->lock);
}

/* The flush on c was answered: with ns->lock held, every connection's
 * writes sent after c was made and answered before the flush was sent are
 * durable (with one connection, or multi-conn). A connection with a write
 * sent before c was made, or answered after the send, stays as it was. */
static void ns_covered(struct nbd_store *ns, struct ns_conn *c)
{
	for (int i = 0; i < ns->nconn; i++) {
		struct ns_conn *k = &ns->conn[i];
		if (k->dirty_first > c->made && k->dirty_last < c->pend_seq)
			k->dirty_first = k->dirty_last = 0;
	}
}

/* Connection c's flush, sent by begin: waited for, sent again on a new
 * connection where ns_revive allows. */
static int ns_flush_wait(struct nbd_store *ns, struct ns_conn *c)
{
	int ret = c->pend_err;

	if (c->pend == PEND_SENT) {
		ret = ns_wait_until(ns, c->h, c->pend_cookie, c->pend_deadline);
		ns_landed(ns, c->pend_cookie);
	}
	if (ret == NS_CLOSED) {
		ret = ns_revive(ns, c);
		if (ret == 0) {
			int64_t cookie;
			c->pend_seq = ns_next_seq(ns);
			cookie = ns_send(ns, c->h, NS_FLUSH, NULL, 0, 0, 0);
			ret = ns_wait_until(ns, c->h, cookie, deadline_ms());
			ns_landed(ns, cookie);
		}
		if (ret == NS_CLOSED)
			ret = ns_lose(ns, -ECONNRESET);
	}
	if (ret == 0) {
		pthread_mutex_lock(&ns->lock);
		ns_covered(ns, c);
		pthread_mutex_unlock(&ns->lock);
	}
	return ret;
}

static int ns_flush_end(struct chunk_store *st)
{
	struct nbd_store *ns = to_ns(st);
	int ret = ns->flush_lost ? -EIO : 0;

	for (int i = 0; i < NS_CONN_LIMIT; i++) {
		struct ns_conn *c = &ns->conn[i];
		int r;
		if (c->pend == PEND_NONE)
			continue;
		r = ns_flush_wait(ns, c);
		if (ret == 0)
			ret = r;
		c->pend = PEND_NONE;
		ns_give(ns, c);
	}
	pthread_mutex_unlock(&ns->flush_lock);
	return store_lost(st) ? -EIO : ret;
}

/* A server that cannot flush says its writes are durable when answered
 * (the NBD protocol's meaning of no flush support). Nothing written since
 * the last flush: nothing to make durable, and no round trip (every
 * commit flushes every placed store, most of which it did not write). */
static int ns_flush(struct chunk_store *st)
{
	ns_flush_begin(st);
	return ns_flush_end(st);
}

static int ns_trim(struct chunk_store *st, size_t len, uint64_t off)
{
	return ns_io(st, NS_TRIM, NULL, len, off);
}

/* Every handle closed, everything freed. */
static void ns_free(struct nbd_store *ns)
{
	ns_ra_stop(ns);
	ra_free(ns->ra);
	for (int i = 0; i < NS_CONN_LIMIT; i++)
		if (ns->conn[i].h)
			lib.close(ns->conn[i].h);
	pthread_cond_destroy(&ns->freed);
	pthread_mutex_destroy(&ns->flush_lock);
	pthread_mutex_destroy(&ns->lock);
	free(ns->uri);
	free(ns);
}

static void ns_close(struct chunk_store *st)
{
	struct nbd_store *ns = to_ns(st);

	/* Every write was flushed by the check; a failed shutdown changes
	 * nothing then, and the handles go either way. */
	ns_ra_stop(ns);
	if (!store_lost(st))
		for (int i = 0; i < ns->nconn; i++)
			lib.shutdown(ns->conn[i].h, 0);
	ns_free(ns);
}

static void ns_willneed(struct chunk_store *st, size_t len, uint64_t off)
{
	struct nbd_store *ns = to_ns(st);

	if (ns->ra && off <= st->size && len <= st->size - off)
		ra_hint(ns->ra, len, off);
}

static const struct chunk_store_ops nbd_store_ops = {
    .pread = ns_pread,
    .pwrite = ns_pwrite,
    .flush = ns_flush,
    .trim = ns_trim,
    .close = ns_close,
    .flush_begin = ns_flush_begin,
    .flush_end = ns_flush_end,
    .pwrite_last = ns_pwrite_last,
    .willneed = ns_willneed,
};

int store_nbd_is_uri(const char *name)
{
	return strncmp(name, "nbd://", 6) == 0 || strncmp(name, "nbds://", 7) == 0 ||
	       strncmp(name, "nbd+", 4) == 0 || strncmp(name, "nbds+", 5) == 0;
}

/* dlopen libnbd and resolve every call above, once (chunkfsd may open a
 * store from its control thread while workers run: under a lock). */
static int load_libnbd_locked(char *why, size_t whylen)
{
	static const struct {
		const char *name;
		void **slot;
	} calls[] = {
		{ "nbd_create", (void **)&lib.create },
		{ "nbd_aio_connect_uri", (void **)&lib.aio_connect_uri },
		{ "nbd_aio_is_connecting", (void **)&lib.aio_is_connecting },
		{ "nbd_aio_is_ready", (void **)&lib.aio_is_ready },
		{ "nbd_aio_is_dead", (void **)&lib.aio_is_dead },
		{ "nbd_aio_is_closed", (void **)&lib.aio_is_closed },
		{ "nbd_get_size", (void **)&lib.get_size },
		{ "nbd_is_read_only", (void **)&lib.is_read_only },
		{ "nbd_can_flush", (void **)&lib.can_flush },
		{ "nbd_can_fua", (void **)&lib.can_fua },
		{ "nbd_can_trim", (void **)&lib.can_trim },
		{ "nbd_can_multi_conn", (void **)&lib.can_multi_conn },
		{ "nbd_get_block_size", (void **)&lib.get_block_size },
		{ "nbd_aio_pread", (void **)&lib.aio_pread },
		{ "nbd_aio_pwrite", (void **)&lib.aio_pwrite },
		{ "nbd_aio_flush", (void **)&lib.aio_flush },
		{ "nbd_aio_trim", (void **)&lib.aio_trim },
		{ "nbd_aio_command_completed", (void **)&lib.aio_command_completed },
		{ "nbd_poll", (void **)&lib.poll },
		{ "nbd_shutdown", (void **)&lib.shutdown },
		{ "nbd_close", (void **)&lib.close },
		{ "nbd_get_errno", (void **)&lib.get_errno },
		{ "nbd_get_error", (void **)&lib.get_error },
	};

	if (lib.dl)
		return 0;
	lib.dl = dlopen("libnbd.so.0", RTLD_NOW | RTLD_LOCAL);
	if (!lib.dl) {
		snprintf(why, whylen, "NBD needs libnbd (libnbd.so.0), which cannot be loaded: %s"
			 " (install libnbd0)", dlerror());
		return -ENOPKG;
	}
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		*calls[i].slot = dlsym(lib.dl, calls[i].name);
		if (!*calls[i].slot) {
			snprintf(why, whylen, "libnbd.so.0 has no %s: libnbd too old",
				 calls[i].name);
			dlclose(lib.dl);
			memset(&lib, 0, sizeof(lib));
			return -ENOPKG;
		}
	}
	return 0;
}

static int load_libnbd(char *why, size_t whylen)
{
	static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
	int ret;

	pthread_mutex_lock(&load_lock);
	ret = load_libnbd_locked(why, whylen);
	pthread_mutex_unlock(&load_lock);
	return ret;
}

int store_nbd_open(const char *uri, int writable, struct chunk_store **out, char *why,
		   size_t whylen)
{
	struct od_chunk_header h;
	struct nbd_store *ns;
	struct nbd_handle *nh;
	int64_t size, maxblk;
	int ro, fl, fua, tr, mc, ret;

	ret = load_libnbd(why, whylen);
	if (ret < 0)
		return ret;
	ns = calloc(1, sizeof(*ns));
	if (!ns) {
		snprintf(why, whylen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	pthread_mutex_init(&ns->lock, NULL);
	pthread_mutex_init(&ns->flush_lock, NULL);
	pthread_cond_init(&ns->freed, NULL);
	ns->uri = strdup(uri);
	if (!ns->uri) {
		snprintf(why, whylen, "%s", strerror(ENOMEM));
		ns_free(ns);
		return -ENOMEM;
	}
	ret = ns_dial(ns, &nh, why, whylen);
	if (ret < 0) {
		ns_free(ns);
		return ret;
	}
	ns->conn[0].h = nh;
	ns->conn[0].made = ++ns->seq;
	ns->nconn = 1;
	size = lib.get_size(nh);
	ro = lib.is_read_only(nh);
	fl = lib.can_flush(nh);
	fua = lib.can_fua(nh);
	tr = lib.can_trim(nh);
	mc = lib.can_multi_conn(nh);
	maxblk = lib.get_block_size(nh, LIBNBD_SIZE_MAXIMUM);
	if (size < 0 || ro < 0 || fl < 0 || fua < 0 || tr < 0 || mc < 0 || maxblk < 0) {
		ret = nbd_err();
		snprintf(why, whylen, "%s", lib.get_error() ? lib.get_error() : strerror(-ret));
		ns_free(ns);
		return ret;
	}
	ns->st.ops = &nbd_store_ops;
	ns->st.size = ns->export_size = (uint64_t)size;
	ns->writable = writable;
	ns->export_ro = ro;
	ns->can_flush = fl;
	ns->can_fua = fua;
	ns->can_trim = tr;
	ns->max_req = NBD_STORE_MAX_REQUEST;
	if (maxblk > 0 && (uint64_t)maxblk < ns->max_req)
		ns->max_req = (size_t)maxblk;
	if ((uint64_t)size >= OD_BLOCK_SIZE && ns_read_header(ns, nh, &h) == 0) {
		ns->have_ident = 1;
		memcpy(ns->ident_uuid, h.volume_uuid, 16);
		ns->ident_index = h.chunk_index;
	}
	/* More connections only where the server says they see each other's
	 * writes and flushes, and where each can be checked to reach the same
	 * chunk (its header). */
	ns->max_conn = mc && ns->have_ident ? __atomic_load_n(&ns_max_conns, __ATOMIC_RELAXED) : 1;
	if (store_lost(&ns->st)) { /* its first read was not answered in time */
		snprintf(why, whylen, "no answer from %s within %d ms", uri,
			 __atomic_load_n(&nbd_timeout_ms, __ATOMIC_RELAXED));
		ns_free(ns);
		return -ETIMEDOUT;
	}
	ret = ns_ra_start(ns);
	if (ret < 0) {
		snprintf(why, whylen, "read-ahead: %s", strerror(-ret));
		ns_free(ns);
		return ret;
	}
	*out = &ns->st;
	return 0;
}

int store_nbd_export_read_only(struct chunk_store *st)
{
	return to_ns(st)->export_ro;
}

int store_nbd_can_flush(struct chunk_store *st)
{
	return to_ns(st)->can_flush;
}

int store_nbd_stats(struct chunk_store *st, struct store_nbd_stats *s)
{
	struct nbd_store *ns = to_ns(st);

	if (st->ops != &nbd_store_ops)
		return -EINVAL;
	pthread_mutex_lock(&ns->lock);
	s->conns = ns->nconn;
	s->max_conns = ns->max_conn;
	pthread_mutex_unlock(&ns->lock);
	s->in_flight = __atomic_load_n(&ns->in_flight, __ATOMIC_RELAXED);
	s->max_in_flight = __atomic_load_n(&ns->max_in_flight, __ATOMIC_RELAXED);
	s->commands = __atomic_load_n(&ns->commands, __ATOMIC_RELAXED);
	s->flushes = __atomic_load_n(&ns->flushes, __ATOMIC_RELAXED);
	memset(&s->ra, 0, sizeof(s->ra));
	s->ra_limit = 0;
	if (ns->ra) {
		ra_get_stats(ns->ra, &s->ra);
		s->ra_limit = ns->ra_limit;
	}
	return 0;
}
