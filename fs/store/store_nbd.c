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
 * Flushes and FUA. A flush can be sent and waited for in two halves
 * (flush_begin, flush_end), so that a commit sends every placed store's
 * flush before it waits for any and pays one round trip, not one per
 * store. The FUA rule: a write the caller follows with a flush and no
 * other write (store_pwrite_last) goes with NBD_CMD_FLAG_FUA when the
 * server offers it and nothing else answered on this store awaits a flush
 * (unflushed 0); it is durable once answered, unflushed stays 0, and the
 * flush then sends nothing. Durability is the same as write-then-flush:
 * the flush would have covered that write alone. Every other write is
 * plain and covered by the next flush. */
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
#include "fs/store/store_nbd.h"

/* Requests are cut to this size, or to the server's maximum if smaller. */
#define NBD_STORE_MAX_REQUEST (4u << 20)

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

struct nbd_store {
	struct chunk_store st;
	struct nbd_handle *h;
	char *uri;
	pthread_mutex_t lock; /* one command at a time on the handle */
	int unflushed;        /* a write or trim answered since the last flush */
	/* Which chunk of which volume the export held when opened (its header,
	 * copy 0), so that a new connection is refused when it reaches
	 * another: the volume's UUID and the chunk's index. */
	int have_ident;
	uint8_t ident_uuid[16];
	uint32_t ident_index;
	int writable;
	int export_ro;
	int can_flush;
	int can_fua;
	int can_trim;
	size_t max_req;
	/* A flush between ns_flush_begin and ns_flush_end (ns->lock held
	 * meanwhile): what begin did, and the command it sent. */
	enum { PEND_NONE, PEND_SENT, PEND_RETRY, PEND_LOST } pend;
	int64_t pend_cookie;
	int64_t pend_deadline;
};

void store_nbd_set_timeout(int ms)
{
	__atomic_store_n(&nbd_timeout_ms, ms > 0 ? ms : 1, __ATOMIC_RELAXED);
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

/* The connection is gone for good: every call fails from now on. The
 * handle is not polled again, so a command left in flight never touches
 * its caller's buffer; it is closed with the store. */
static int ns_lose(struct nbd_store *ns, int err)
{
	store_set_lost(&ns->st, err);
	return -EIO;
}

/* Poll the handle until done() or the deadline: 0, or the store is lost. */
static int ns_poll_until(struct nbd_store *ns, int64_t deadline,
			 int (*done)(struct nbd_store *ns, int64_t cookie), int64_t cookie)
{
	for (;;) {
		int64_t left;
		int r = done(ns, cookie);
		if (r != 0)
			return r > 0 ? 0 : r;
		left = deadline - now_ms();
		if (left <= 0)
			return ns_lose(ns, -ETIMEDOUT);
		if (lib.poll(ns->h, (int)(left < INT32_MAX ? left : INT32_MAX)) < 0)
			return ns_lose(ns, nbd_err());
	}
}

/* What a command whose connection closed under it returns (not an errno
 * the server could answer): ns_io and ns_flush decide whether a new
 * connection may take the command again (ns_revive). */
#define NS_CLOSED (-ECONNRESET)

static int closed(struct nbd_store *ns)
{
	return lib.aio_is_dead(ns->h) || lib.aio_is_closed(ns->h);
}

/* 1 when the command finished well, 0 not yet; a failure the server
 * answered is its errno, a closed connection NS_CLOSED. */
static int command_done(struct nbd_store *ns, int64_t cookie)
{
	int r = lib.aio_command_completed(ns->h, (uint64_t)cookie);

	if (r >= 0)
		return r;
	r = nbd_err();
	return closed(ns) ? NS_CLOSED : r;
}

static int connect_done(struct nbd_store *ns, int64_t unused)
{
	(void)unused;
	if (lib.aio_is_connecting(ns->h))
		return 0;
	return lib.aio_is_ready(ns->h) ? 1 : -ECONNREFUSED;
}

static int64_t deadline_ms(void)
{
	return now_ms() + __atomic_load_n(&nbd_timeout_ms, __ATOMIC_RELAXED);
}

/* One command, started by the caller (its cookie, or -1 when libnbd
 * refused it), waited for until deadline. */
static int ns_wait_until(struct nbd_store *ns, int64_t cookie, int64_t deadline)
{
	if (cookie < 0) {
		int r = nbd_err();
		return closed(ns) ? NS_CLOSED : r;
	}
	return ns_poll_until(ns, deadline, command_done, cookie);
}

/* The same within the timeout from now. */
static int ns_wait(struct nbd_store *ns, int64_t cookie)
{
	return ns_wait_until(ns, cookie, deadline_ms());
}

static int ns_connect(struct nbd_store *ns, char *why, size_t whylen);

/* The chunk header at the start of the export, read on the connection in
 * ns->h: 0 and *h, or < 0 (unreadable, or no valid header there). */
static int ns_read_header(struct nbd_store *ns, struct od_chunk_header *h)
{
	uint8_t *blk = malloc(OD_BLOCK_SIZE);
	int ret = -ENOMEM;

	if (blk) {
		ret = ns_wait(ns, lib.aio_pread(ns->h, blk, OD_BLOCK_SIZE, 0, NBD_NULL_COMPLETION,
						0));
		if (ret == 0 && od_verify(blk, OD_BLOCK_SIZE) < 0)
			ret = -EUCLEAN;
		if (ret == 0)
			ret = od_get_chunk_header(blk, h);
		free(blk);
	}
	return ret;
}

/* The connection closed under a command. Every write answered on it was
 * flushed (unflushed 0): the server holds all of them, whatever happened
 * to it, so a new connection may take the command again (NBD commands are
 * idempotent): 0 when one is made (the old handle closed). Writes not yet
 * flushed may be gone with a server that restarted, and a flush on a new
 * connection would not cover them: the store is lost. A request that timed
 * out is never retried (the server may still carry it out). */
static int ns_revive(struct nbd_store *ns)
{
	struct nbd_handle *old = ns->h;
	uint64_t size = ns->st.size;
	struct od_chunk_header h;
	char why[256];

	if (ns->unflushed || !ns->have_ident)
		return ns_lose(ns, -ECONNRESET);
	if (ns_connect(ns, why, sizeof(why)) < 0) {
		/* lost by ns_connect; the old handle stays, closed with the store */
		if (ns->h)
			lib.close(ns->h);
		ns->h = old;
		return -EIO;
	}
	lib.close(old);
	/* The same export: its size, and a header naming the same chunk of
	 * the same volume (a server put back with another image is not). */
	if (lib.get_size(ns->h) != (int64_t)size || ns_read_header(ns, &h) < 0 ||
	    memcmp(h.volume_uuid, ns->ident_uuid, 16) != 0 || h.chunk_index != ns->ident_index)
		return ns_lose(ns, -ECONNRESET);
	return 0;
}

enum ns_cmd { NS_READ, NS_WRITE, NS_TRIM, NS_FLUSH };

/* fua: a write sent with NBD_CMD_FLAG_FUA (answered once durable). */
static int64_t ns_start(struct nbd_store *ns, enum ns_cmd cmd, void *p, size_t n, uint64_t off,
			int fua)
{
	switch (cmd) {
	case NS_READ:
		return lib.aio_pread(ns->h, p, n, off, NBD_NULL_COMPLETION, 0);
	case NS_WRITE:
		return lib.aio_pwrite(ns->h, p, n, off, NBD_NULL_COMPLETION,
				      fua ? LIBNBD_CMD_FLAG_FUA : 0);
	case NS_TRIM:
		return lib.aio_trim(ns->h, n, off, NBD_NULL_COMPLETION, 0);
	default:
		return lib.aio_flush(ns->h, NBD_NULL_COMPLETION, 0);
	}
}

/* A command already sent (cookie, or -1 when libnbd refused it), with
 * ns->lock held: waited for until deadline, and when the connection
 * closed under it, issued once more on a new one if that is safe
 * (ns_revive). A FUA write is durable once answered: it leaves unflushed
 * as it was. 0 or a negative errno. */
static int ns_complete(struct nbd_store *ns, enum ns_cmd cmd, void *p, size_t n, uint64_t off,
		       int fua, int64_t cookie, int64_t deadline)
{
	int ret = ns_wait_until(ns, cookie, deadline);

	if (ret == NS_CLOSED) {
		ret = ns_revive(ns);
		if (ret == 0)
			ret = ns_wait(ns, ns_start(ns, cmd, p, n, off, fua));
		if (ret == NS_CLOSED) /* a server that closes every connection */
			ret = ns_lose(ns, -ECONNRESET);
	}
	if (ret == 0 && ((cmd == NS_WRITE && !fua) || cmd == NS_TRIM))
		ns->unflushed = 1;
	if (ret == 0 && cmd == NS_FLUSH)
		ns->unflushed = 0;
	return ret;
}

/* One command, with ns->lock held: issued and completed (ns_complete). */
static int ns_command(struct nbd_store *ns, enum ns_cmd cmd, void *p, size_t n, uint64_t off,
		      int fua)
{
	if (store_lost(&ns->st))
		return -EIO;
	return ns_complete(ns, cmd, p, n, off, fua, ns_start(ns, cmd, p, n, off, fua),
			   deadline_ms());
}

/* A read, write or trim of [off, off + len), cut to the largest request. */
static int ns_io(struct chunk_store *st, enum ns_cmd cmd, void *buf, size_t len, uint64_t off)
{
	struct nbd_store *ns = to_ns(st);
	uint8_t *p = buf;
	int ret = 0;

	if (cmd != NS_READ && (!ns->writable || ns->export_ro))
		return -EROFS;
	if (off > st->size || len > st->size - off)
		return -EINVAL;
	if (cmd == NS_TRIM && !ns->can_trim)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&ns->lock);
	while (len && ret == 0) {
		size_t n = len < ns->max_req ? len : ns->max_req;
		ret = ns_command(ns, cmd, p, n, off, 0);
		if (p)
			p += n;
		off += n;
		len -= n;
	}
	pthread_mutex_unlock(&ns->lock);
	return ret;
}

static int ns_pread(struct chunk_store *st, void *buf, size_t len, uint64_t off)
{
	return ns_io(st, NS_READ, buf, len, off);
}

static int ns_pwrite(struct chunk_store *st, const void *buf, size_t len, uint64_t off)
{
	/* libnbd's pwrite takes the buffer const; it is only read. */
	return ns_io(st, NS_WRITE, (void *)(uintptr_t)buf, len, off);
}

/* The write before a flush (store_pwrite_last). When nothing answered
 * on this store awaits a flush and the server offers FUA, it goes with
 * NBD_CMD_FLAG_FUA: durable once answered, unflushed stays 0 and the
 * flush that follows has nothing to send. Otherwise a plain write. The
 * rule, for durability: FUA is used only where the flush would have had
 * this write alone to cover, so what is durable after the flush is the
 * same, one round trip sooner. */
static int ns_pwrite_last(struct chunk_store *st, const void *buf, size_t len, uint64_t off)
{
	struct nbd_store *ns = to_ns(st);
	int ret;

	if (!ns->can_fua || !ns->can_flush || len > ns->max_req)
		return ns_pwrite(st, buf, len, off);
	if (!ns->writable || ns->export_ro)
		return -EROFS;
	if (off > st->size || len > st->size - off)
		return -EINVAL;
	pthread_mutex_lock(&ns->lock);
	if (ns->unflushed) {
		pthread_mutex_unlock(&ns->lock);
		return ns_pwrite(st, buf, len, off);
	}
	ret = ns_command(ns, NS_WRITE, (void *)(uintptr_t)buf, len, off, 1);
	pthread_mutex_unlock(&ns->lock);
	return ret;
}

/* A server that cannot flush says its writes are durable when answered
 * (the NBD protocol's meaning of no flush support). Nothing written since
 * the last flush: nothing to make durable, and no round trip (every
 * commit flushes every placed store, most of which it did not write). */
static int ns_flush(struct chunk_store *st)
{
	struct nbd_store *ns = to_ns(st);
	int ret = 0;

	if (!ns->can_flush)
		return 0;
	pthread_mutex_lock(&ns->lock);
	if (ns->unflushed)
		ret = ns_command(ns, NS_FLUSH, NULL, 0, 0, 0);
	pthread_mutex_unlock(&ns->lock);
	return ret;
}

/* The flush in two halves (vol_flush sends every store's before waiting
 * for any): begin takes ns->lock, which end releases, and sends the flush
 * when there is something to flush; its deadline runs from the send, so
 * flushes sent together are waited for within about one timeout. A send
 * libnbd refused (a connection closed) is left to end, which takes the
 * way of any command (ns_command: a new connection where that is safe). */
static void ns_flush_begin(struct chunk_store *st)
{
	struct nbd_store *ns = to_ns(st);

	pthread_mutex_lock(&ns->lock);
	ns->pend = PEND_NONE;
	if (store_lost(st)) {
		ns->pend = PEND_LOST;
		return;
	}
	if (!ns->can_flush || !ns->unflushed)
		return;
	ns->pend_deadline = deadline_ms();
	ns->pend_cookie = ns_start(ns, NS_FLUSH, NULL, 0, 0, 0);
	ns->pend = ns->pend_cookie < 0 ? PEND_RETRY : PEND_SENT;
}

static int ns_flush_end(struct chunk_store *st)
{
	struct nbd_store *ns = to_ns(st);
	int ret = 0;

	switch (ns->pend) {
	case PEND_NONE:
		break;
	case PEND_LOST:
		ret = -EIO;
		break;
	case PEND_RETRY:
		ret = ns_command(ns, NS_FLUSH, NULL, 0, 0, 0);
		break;
	case PEND_SENT:
		ret = ns_complete(ns, NS_FLUSH, NULL, 0, 0, 0, ns->pend_cookie, ns->pend_deadline);
		break;
	}
	ns->pend = PEND_NONE;
	pthread_mutex_unlock(&ns->lock);
	return ret;
}

static int ns_trim(struct chunk_store *st, size_t len, uint64_t off)
{
	return ns_io(st, NS_TRIM, NULL, len, off);
}

static void ns_close(struct chunk_store *st)
{
	struct nbd_store *ns = to_ns(st);

	/* Every write was flushed by the check; a failed shutdown changes
	 * nothing then, and the handle goes either way. */
	if (!store_lost(st))
		lib.shutdown(ns->h, 0);
	lib.close(ns->h);
	pthread_mutex_destroy(&ns->lock);
	free(ns->uri);
	free(ns);
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

/* A store that did not open: its handle closed, everything freed. */
static void ns_free(struct nbd_store *ns)
{
	if (ns->h)
		lib.close(ns->h);
	pthread_mutex_destroy(&ns->lock);
	free(ns->uri);
	free(ns);
}

static int fail(struct nbd_store *ns, char *why, size_t whylen)
{
	int ret = nbd_err();

	snprintf(why, whylen, "%s", lib.get_error() ? lib.get_error() : strerror(-ret));
	ns_free(ns);
	return ret;
}

/* A new handle in ns->h connected to ns->uri within the timeout: 0, or the
 * error with why[] (the store is lost then, ns->h the failed handle or
 * NULL). A host that does not answer must not hold the caller for TCP's
 * minutes. */
static int ns_connect(struct nbd_store *ns, char *why, size_t whylen)
{
	int ret, lost;

	ns->h = lib.create();
	if (!ns->h) {
		ret = nbd_err();
		snprintf(why, whylen, "%s", lib.get_error() ? lib.get_error() : strerror(-ret));
		ns_lose(ns, ret);
		return ret;
	}
	if (lib.aio_connect_uri(ns->h, ns->uri) < 0) {
		ret = nbd_err();
		snprintf(why, whylen, "%s", lib.get_error() ? lib.get_error() : strerror(-ret));
		ns_lose(ns, ret);
		return ret;
	}
	ret = ns_poll_until(ns, now_ms() + __atomic_load_n(&nbd_timeout_ms, __ATOMIC_RELAXED),
			    connect_done, 0);
	if (ret == 0)
		return 0;
	lost = store_lost(&ns->st);
	if (lost == -ETIMEDOUT)
		snprintf(why, whylen, "no answer from %s within %d ms", ns->uri,
			 __atomic_load_n(&nbd_timeout_ms, __ATOMIC_RELAXED));
	else
		snprintf(why, whylen, "%s",
			 lib.get_error() ? lib.get_error() : strerror(lost ? -lost : -ret));
	if (!lost)
		ns_lose(ns, ret);
	return lost ? lost : ret;
}

int store_nbd_open(const char *uri, int writable, struct chunk_store **out, char *why,
		   size_t whylen)
{
	struct od_chunk_header h;
	struct nbd_store *ns;
	int64_t size, maxblk;
	int ro, fl, fua, tr, ret;

	ret = load_libnbd(why, whylen);
	if (ret < 0)
		return ret;
	ns = calloc(1, sizeof(*ns));
	if (!ns) {
		snprintf(why, whylen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	pthread_mutex_init(&ns->lock, NULL);
	ns->uri = strdup(uri);
	if (!ns->uri) {
		snprintf(why, whylen, "%s", strerror(ENOMEM));
		ns_free(ns);
		return -ENOMEM;
	}
	ret = ns_connect(ns, why, whylen);
	if (ret < 0) {
		ns_free(ns);
		return ret;
	}
	size = lib.get_size(ns->h);
	ro = lib.is_read_only(ns->h);
	fl = lib.can_flush(ns->h);
	fua = lib.can_fua(ns->h);
	tr = lib.can_trim(ns->h);
	maxblk = lib.get_block_size(ns->h, LIBNBD_SIZE_MAXIMUM);
	if (size < 0 || ro < 0 || fl < 0 || fua < 0 || tr < 0 || maxblk < 0)
		return fail(ns, why, whylen);
	ns->st.ops = &nbd_store_ops;
	ns->st.size = (uint64_t)size;
	ns->writable = writable;
	ns->export_ro = ro;
	ns->can_flush = fl;
	ns->can_fua = fua;
	ns->can_trim = tr;
	ns->max_req = NBD_STORE_MAX_REQUEST;
	if (maxblk > 0 && (uint64_t)maxblk < ns->max_req)
		ns->max_req = (size_t)maxblk;
	if ((uint64_t)size >= OD_BLOCK_SIZE && ns_read_header(ns, &h) == 0) {
		ns->have_ident = 1;
		memcpy(ns->ident_uuid, h.volume_uuid, 16);
		ns->ident_index = h.chunk_index;
	}
	if (store_lost(&ns->st)) { /* its first read was not answered in time */
		snprintf(why, whylen, "no answer from %s within %d ms", uri,
			 __atomic_load_n(&nbd_timeout_ms, __ATOMIC_RELAXED));
		ns_free(ns);
		return -ETIMEDOUT;
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
