/* The chunk store over an NBD export (fs/store/store_nbd.c, through libnbd):
 * fsck.chunkfs checks a chunk served on another host, for instance by the
 * chunkfs nbdkit plugin while the rest of the volume stays online, and
 * chunkfsd serves chunks placed on NBD servers. libnbd is dlopen'ed when a
 * URI is first opened, so no program depends on it otherwise. */
#ifndef CHUNKFS_STORE_NBD_H
#define CHUNKFS_STORE_NBD_H

#include <stddef.h>
#include <stdint.h>

#include "fs/store/readahead.h"
#include "fs/store/store.h"

/* Is name an NBD URI (nbd://, nbds://, nbd+unix://, nbds+unix://, ...)? */
int store_nbd_is_uri(const char *name);

/* Connect to the export at uri (any URI nbd_connect_uri accepts). The
 * store's size is the export's. writable 0: the store refuses every write
 * (-EROFS), whatever the export allows. why gets libnbd's message when
 * the connection fails. */
int store_nbd_open(const char *uri, int writable, struct chunk_store **out, char *why,
		   size_t whylen);

/* How long connecting, or any one request, may take (milliseconds, for
 * every NBD store of the process; 10 s until set): a server that has not
 * answered by then counts as lost (store_lost). A connection that closes
 * is made again at once, and the command sent again, when every write
 * answered on it was flushed; with writes not yet flushed (a restarted
 * server may have lost them), or when the new connection fails, the store
 * is lost too. A lost store fails every call from then on; opening it
 * again is the way back. */
void store_nbd_set_timeout(int ms);

/* The most connections each NBD store opened from now on may make when
 * its server offers multi-conn: 1-16 (4 until set); -EINVAL else. */
int store_nbd_set_connections(int n);

/* The read-ahead cache of each NBD store opened from now on: at most bytes
 * of windows fetched ahead of sequential reads (fs/store/readahead.c), 0
 * for none (none until set). */
void store_nbd_set_readahead(size_t bytes);
#define NBD_STORE_HAS_READAHEAD 1

/* Tests: fn is called by a store's read-ahead fetcher when the read of the
 * window [off, off + len) was answered, before its bytes are taken in (a
 * write made then races the fetch). NULL: none. */
void store_nbd_set_fetch_hook(void (*fn)(struct chunk_store *st, uint64_t off, size_t len));

/* 1 when the server exports it read-only, 0 when writes are allowed. */
int store_nbd_export_read_only(struct chunk_store *st);

/* 1 when the server offers NBD_CMD_FLUSH. Without it, store_flush
 * returns 0 at once and says nothing about durability: chunkfsd refuses
 * such an export read-write (fs/place.c). */
int store_nbd_can_flush(struct chunk_store *st);

/* What an NBD store did: connections made (conns) and the most it may make
 * (max_conns: 1 unless the server offers multi-conn), commands in flight
 * now and the most ever at once, commands sent, flushes sent; its
 * read-ahead cache's size (0: none) and what it did. 0, or -EINVAL when st
 * is not an NBD store. */
struct store_nbd_stats {
	int conns, max_conns;
	int in_flight, max_in_flight;
	uint64_t commands, flushes;
	size_t ra_limit;
	struct ra_stats ra;
};
int store_nbd_stats(struct chunk_store *st, struct store_nbd_stats *s);

#endif
