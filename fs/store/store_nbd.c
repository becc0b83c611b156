/* A chunk store on an NBD export, through libnbd: pread, pwrite, flush and
 * trim become NBD commands, split to the server's largest request; the
 * size is the export's. Opened read-only (for fsck -n) it refuses writes
 * itself. Part of libchunkfs_store (fsck.chunkfs checks a chunk over NBD,
 * chunkfsd serves chunks placed on NBD servers); libnbd itself (and the
 * ~20 libraries it pulls in) is loaded with dlopen only when an NBD URI is
 * opened, so nothing that never opens one depends on it. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <libnbd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/store/store_nbd.h"

/* Requests are cut to this size, or to the server's maximum if smaller. */
#define NBD_STORE_MAX_REQUEST (4u << 20)

/* The libnbd calls used, resolved from libnbd.so.0 by load_libnbd(). */
static struct {
	void *dl;
	__typeof__(nbd_create) *create;
	__typeof__(nbd_connect_uri) *connect_uri;
	__typeof__(nbd_get_size) *get_size;
	__typeof__(nbd_is_read_only) *is_read_only;
	__typeof__(nbd_can_flush) *can_flush;
	__typeof__(nbd_can_trim) *can_trim;
	__typeof__(nbd_get_block_size) *get_block_size;
	__typeof__(nbd_pread) *pread;
	__typeof__(nbd_pwrite) *pwrite;
	__typeof__(nbd_flush) *flush;
	__typeof__(nbd_trim) *trim;
	__typeof__(nbd_shutdown) *shutdown;
	__typeof__(nbd_close) *close;
	__typeof__(nbd_get_errno) *get_errno;
	__typeof__(nbd_get_error) *get_error;
} lib;

struct nbd_store {
	struct chunk_store st;
	struct nbd_handle *h;
	int writable;
	int export_ro;
	int can_flush;
	int can_trim;
	size_t max_req;
};

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

static int range_ok(struct chunk_store *st, size_t len, uint64_t off)
{
	return off <= st->size && len <= st->size - off;
}

static int ns_pread(struct chunk_store *st, void *buf, size_t len, uint64_t off)
{
	struct nbd_store *ns = to_ns(st);
	uint8_t *p = buf;

	if (!range_ok(st, len, off))
		return -EINVAL;
	while (len) {
		size_t n = len < ns->max_req ? len : ns->max_req;
		if (lib.pread(ns->h, p, n, off, 0) < 0)
			return nbd_err();
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static int ns_pwrite(struct chunk_store *st, const void *buf, size_t len, uint64_t off)
{
	struct nbd_store *ns = to_ns(st);
	const uint8_t *p = buf;

	if (!ns->writable || ns->export_ro)
		return -EROFS;
	if (!range_ok(st, len, off))
		return -EINVAL;
	while (len) {
		size_t n = len < ns->max_req ? len : ns->max_req;
		if (lib.pwrite(ns->h, p, n, off, 0) < 0)
			return nbd_err();
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

/* A server that cannot flush says its writes are durable when answered
 * (the NBD protocol's meaning of no flush support). */
static int ns_flush(struct chunk_store *st)
{
	struct nbd_store *ns = to_ns(st);

	if (!ns->can_flush)
		return 0;
	return lib.flush(ns->h, 0) < 0 ? nbd_err() : 0;
}

static int ns_trim(struct chunk_store *st, size_t len, uint64_t off)
{
	struct nbd_store *ns = to_ns(st);

	if (!ns->writable || ns->export_ro)
		return -EROFS;
	if (!range_ok(st, len, off))
		return -EINVAL;
	if (!ns->can_trim)
		return -EOPNOTSUPP;
	while (len) {
		size_t n = len < ns->max_req ? len : ns->max_req;
		if (lib.trim(ns->h, n, off, 0) < 0)
			return nbd_err();
		off += n;
		len -= n;
	}
	return 0;
}

static void ns_close(struct chunk_store *st)
{
	struct nbd_store *ns = to_ns(st);

	/* Every write was flushed by the check; a failed shutdown changes
	 * nothing then, and the handle goes either way. */
	lib.shutdown(ns->h, 0);
	lib.close(ns->h);
	free(ns);
}

static const struct chunk_store_ops nbd_store_ops = {
	.pread = ns_pread,
	.pwrite = ns_pwrite,
	.flush = ns_flush,
	.trim = ns_trim,
	.close = ns_close,
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
	static const char *const names[] = { "nbd_create", "nbd_connect_uri", "nbd_get_size", "nbd_is_read_only", "nbd_can_flush", "nbd_can_trim", "nbd_get_block_size", "nbd_pread", "nbd_pwrite", "nbd_flush", "nbd_trim", "nbd_shutdown", "nbd_close", "nbd_get_errno", "nbd_get_error" };
	void **slots[] = { (void **)&lib.create, (void **)&lib.connect_uri, (void **)&lib.get_size, (void **)&lib.is_read_only, (void **)&lib.can_flush, (void **)&lib.can_trim, (void **)&lib.get_block_size, (void **)&lib.pread, (void **)&lib.pwrite, (void **)&lib.flush, (void **)&lib.trim, (void **)&lib.shutdown, (void **)&lib.close, (void **)&lib.get_errno, (void **)&lib.get_error };

	if (lib.dl)
		return 0;
	lib.dl = dlopen("libnbd.so.0", RTLD_NOW | RTLD_LOCAL);
	if (!lib.dl) {
		snprintf(why, whylen, "NBD needs libnbd (libnbd.so.0), which cannot be loaded: %s"
			 " (install libnbd0)", dlerror());
		return -ENOPKG;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		*slots[i] = dlsym(lib.dl, names[i]);
		if (!*slots[i]) {
			snprintf(why, whylen, "libnbd.so.0 has no %s: libnbd too old",
				 names[i]);
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

static int fail(struct nbd_store *ns, char *why, size_t whylen)
{
	int ret = nbd_err();

	snprintf(why, whylen, "%s", lib.get_error() ? lib.get_error() : strerror(-ret));
	if (ns->h)
		lib.close(ns->h);
	free(ns);
	return ret;
}

int store_nbd_open(const char *uri, int writable, struct chunk_store **out, char *why,
		   size_t whylen)
{
	struct nbd_store *ns;
	int64_t size, maxblk;
	int ro, fl, tr, ret;

	ret = load_libnbd(why, whylen);
	if (ret < 0)
		return ret;
	ns = calloc(1, sizeof(*ns));
	if (!ns) {
		snprintf(why, whylen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	ns->h = lib.create();
	if (!ns->h)
		return fail(ns, why, whylen);
	if (lib.connect_uri(ns->h, uri) < 0)
		return fail(ns, why, whylen);
	size = lib.get_size(ns->h);
	ro = lib.is_read_only(ns->h);
	fl = lib.can_flush(ns->h);
	tr = lib.can_trim(ns->h);
	maxblk = lib.get_block_size(ns->h, LIBNBD_SIZE_MAXIMUM);
	if (size < 0 || ro < 0 || fl < 0 || tr < 0 || maxblk < 0)
		return fail(ns, why, whylen);
	ns->st.ops = &nbd_store_ops;
	ns->st.size = (uint64_t)size;
	ns->writable = writable;
	ns->export_ro = ro;
	ns->can_flush = fl;
	ns->can_trim = tr;
	ns->max_req = NBD_STORE_MAX_REQUEST;
	if (maxblk > 0 && (uint64_t)maxblk < ns->max_req)
		ns->max_req = (size_t)maxblk;
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
