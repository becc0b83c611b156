/* A store's read-ahead cache (fs/store/readahead.c): windows of the store
 * fetched ahead of sequential readers, served from memory, dropped on
 * every write or trim that touches them. The cache decides what to fetch;
 * the store fetches it (the NBD store's fetcher thread) and reports. */
#ifndef CHUNKFS_READAHEAD_H
#define CHUNKFS_READAHEAD_H

#include <stddef.h>
#include <stdint.h>

struct ra_cache;
struct ra_win;

struct ra_stats {
	uint64_t hits;	    /* reads served wholly from the cache */
	uint64_t hit_bytes; /* their bytes */
	uint64_t fetched;   /* windows fetched (answered well) */
	uint64_t hinted;    /* windows queued for hints (ra_hint) */
	uint64_t discarded; /* windows dropped unserved: a write touched them, a
			     * reconnection, an error */
	size_t bytes, max_bytes; /* window memory now, and the most ever */
};

/* A cache of at most limit bytes for a store of size bytes, fetched in
 * windows of win bytes (at most limit / 2). 0 and *out, or -ENOMEM. */
int ra_new(size_t limit, size_t win, uint64_t size, struct ra_cache **out);
/* Every window freed: no fetch may be outstanding (the fetcher stopped). */
void ra_free(struct ra_cache *ra);

/* A window a reader fetches itself (ra_read's -EAGAIN). */
struct ra_claim {
	struct ra_win *w;
	uint64_t off;
	size_t len;
	void *buf;
};

/* A read of [off, off + len): 0 when served into buf from the cache
 * (waiting for windows being fetched), -ENOENT when the caller must read
 * the store itself, -EAGAIN when a window it needs was queued but no
 * fetcher took it yet: *claim is that window, now the caller's to fetch
 * (ra_done), and then to call ra_read again. Either way the read counts
 * for the sequential detection, and windows ahead of a sequential reader
 * are queued for the fetchers when may_queue; *queued says whether any
 * was. */
int ra_read(struct ra_cache *ra, void *buf, size_t len, uint64_t off, int may_queue,
	    int *queued, struct ra_claim *claim);

/* [off, off + len) will be read soon (store_willneed: the file's
 * read-ahead by its own offsets, fs/read_ahead.c): windows queued for the
 * parts no window holds yet, at most win bytes each, while there is room
 * without dropping a window over the range; how many were queued. */
int ra_hint(struct ra_cache *ra, size_t len, uint64_t off);

/* [off, off + len) is being written or trimmed: called before the command
 * is sent and again after it is answered. Each drops every window over
 * the range, and a window being fetched is discarded when it lands: a
 * fetch sent before the write's answer may hold the old bytes. */
void ra_invalidate(struct ra_cache *ra, size_t len, uint64_t off);

/* Every window dropped (a connection made again, the store lost). */
void ra_drop(struct ra_cache *ra);

/* The fetcher: the next queued window, now being fetched (its range in
 * *off, *len, its buffer in *buf), or NULL: when wait, it waits for one
 * and returns NULL only once ra_stop was called; else NULL when none is
 * queued. */
struct ra_win *ra_take(struct ra_cache *ra, int wait, uint64_t *off, size_t *len,
		       void **buf);
/* The window's fetch ended: err 0 (its bytes are in its buffer) or < 0. */
void ra_done(struct ra_cache *ra, struct ra_win *w, int err);
/* ra_take(wait) returns NULL from now on. */
void ra_stop(struct ra_cache *ra);

void ra_get_stats(struct ra_cache *ra, struct ra_stats *s);

#endif
