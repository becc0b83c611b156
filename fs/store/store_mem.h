/* A chunk store in memory, optionally recording every write and flush in a
 * log shared by all chunks of a volume (the crash-state harness replays
 * prefixes and subsets of it), optionally failing I/O on demand, and
 * optionally telling a test of each read, and optionally reading told
 * bytes apart as a file store does (store_pread_told). */
#ifndef CHUNKFS_STORE_MEM_H
#define CHUNKFS_STORE_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "fs/store/store.h"

enum io_kind {
	IO_WRITE = 1,
	IO_FLUSH = 2,
};

struct io_rec {
	enum io_kind kind;
	uint32_t chunk;
	uint64_t off;
	size_t len;
	uint8_t *data;  /* IO_WRITE: a copy of what was written */
};

struct io_log {
	struct io_rec *rec;
	size_t n, cap;
	int enabled;
};

/* A zero-filled store of size bytes, or one holding a copy of init. */
int store_mem_new(uint64_t size, const void *init, struct chunk_store **out);
/* The store's bytes (valid until it is closed). */
uint8_t *store_mem_bytes(struct chunk_store *st);
/* Record this store's writes and flushes in log as chunk index. */
void store_mem_record(struct chunk_store *st, struct io_log *log, uint32_t chunk);
/* Fail every read and write from now on with err (0: stop failing). */
void store_mem_fail(struct chunk_store *st, int err);
/* Fail reads touching [off, off + len) with err, and writes too when
 * writes is set: a bad sector (len 0: none). */
void store_mem_bad_range(struct chunk_store *st, uint64_t off, uint64_t len, int err, int writes);

/* Call fn(arg, off, len) at the start of every read (NULL: none): a test
 * looking at what holds which lock while the store is read. */
void store_mem_on_read(struct chunk_store *st, void (*fn)(void *arg, uint64_t off, size_t len),
		       void *arg);

/* Call fn(arg, off, len) at every read-ahead hint (store_willneed; NULL:
 * none). */
void store_mem_on_willneed(struct chunk_store *st,
			   void (*fn)(void *arg, uint64_t off, size_t len), void *arg);

/* From now on the store reads told bytes (store_pread_told) as a file
 * store with its second descriptor does, and calls fn(arg, off, len) at
 * each such read (NULL: a store without told reads again). */
void store_mem_on_told(struct chunk_store *st, void (*fn)(void *arg, uint64_t off, size_t len),
		       void *arg);

/* Nowait reads (store_pread_nowait) answered from the store's bytes, as
 * a page cache holding them would (on), or -EAGAIN, as if none were in
 * memory (off, the default). */
void store_mem_nowait_hits(struct chunk_store *st, int on);

void io_log_free(struct io_log *log);

#endif
