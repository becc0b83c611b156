/* The chunk-store interface: how a chunk's bytes are reached. A region of
 * the volume image, a file or block device of its own, an NBD export, or in
 * tests a recording or fault-injecting store: everything above uses only
 * these operations. Offsets are relative to the start of the chunk. */
#ifndef CHUNKFS_STORE_H
#define CHUNKFS_STORE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/format/header.h"

struct chunk_store;

struct chunk_store_ops {
	int (*pread)(struct chunk_store *st, void *buf, size_t len, uint64_t off);
	int (*pwrite)(struct chunk_store *st, const void *buf, size_t len, uint64_t off);
	int (*flush)(struct chunk_store *st);
	int (*trim)(struct chunk_store *st, size_t len, uint64_t off);
	void (*close)(struct chunk_store *st);
	/* Optional: pread from what is in memory already (the page cache),
	 * -EAGAIN when any of it would wait for the device. */
	int (*pread_nowait)(struct chunk_store *st, void *buf, size_t len, uint64_t off);
	/* Optional: a flush in two halves, so that the flushes of several
	 * stores travel at once (vol_flush): flush_begin sends it and cannot
	 * fail, flush_end waits for the answer and says how it went. Every
	 * begin is followed by its end, from the same thread, with no other
	 * call on the store between them. A store may hold a lock from begin
	 * to end (the NBD store does): vol_flush begins its stores in chunk
	 * order, so flushes of one volume never wait on each other in a
	 * circle. */
	void (*flush_begin)(struct chunk_store *st);
	int (*flush_end)(struct chunk_store *st);
	/* Optional: a write that the caller follows with a flush of this
	 * store and no other write (store_pwrite_last). A store may make it
	 * durable by itself when nothing else it answered awaits a flush
	 * (NBD: NBD_CMD_FLAG_FUA), so that the flush has nothing left to do. */
	int (*pwrite_last)(struct chunk_store *st, const void *buf, size_t len, uint64_t off);
	/* Optional: [off, off + len) will be read soon; the store may fetch
	 * it meanwhile (a file's page cache: POSIX_FADV_WILLNEED). A hint: it
	 * neither waits for the bytes nor fails the caller. */
	void (*willneed)(struct chunk_store *st, size_t len, uint64_t off);
	/* Optional: pread of a file's bytes that more of it follows, which
	 * the caller has told (willneed) or will: the store reads them and
	 * nothing past them (a file store: through a second descriptor
	 * without the kernel's read-ahead, which would read past a piece's
	 * end into other files' bytes); nowait: only what is in memory, as
	 * pread_nowait. Used when the store sets told (below). */
	int (*pread_told)(struct chunk_store *st, void *buf, size_t len, uint64_t off,
			  int nowait);
};

struct chunk_store {
	const struct chunk_store_ops *ops;
	uint64_t size; /* bytes */
	/* 0, or the negative errno with which the store's connection to its
	 * server was lost (closed, or a request not answered in time): every
	 * operation fails at once with -EIO from then on. An error the
	 * server answers (a bad sector) is not a loss. Set by the store
	 * (only an NBD store has a connection), read by anyone. */
	int lost;
	/* Reads answered since the store was made, and their bytes: every
	 * pread and pread_nowait that succeeded (store_pread and
	 * store_pread_nowait count them; fs_get_counters sums them). */
	uint64_t reads, read_bytes;
	/* Set by a store whose pread_told reads told bytes apart: every piece
	 * ahead of a reader in order is told to it, not only the jumps
	 * (read_unlocked.c). */
	int told;
};

/* 0, or why the store lost its server (see lost above). */
static inline int store_lost(const struct chunk_store *st)
{
	return __atomic_load_n(&st->lost, __ATOMIC_ACQUIRE);
}

/* The store's server is gone (err: why, a negative errno): from now on
 * every operation fails with -EIO (the NBD store, and tests). */
static inline void store_set_lost(struct chunk_store *st, int err)
{
	__atomic_store_n(&st->lost, err < 0 ? err : -EIO, __ATOMIC_RELEASE);
}

/* ret, a read's answer; a success counted in st's reads. */
static inline int store_count_read(struct chunk_store *st, int ret, size_t len)
{
	if (ret == 0) {
		__atomic_add_fetch(&st->reads, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&st->read_bytes, len, __ATOMIC_RELAXED);
	}
	return ret;
}

static inline int store_pread(struct chunk_store *st, void *buf, size_t len, uint64_t off)
{
	if (store_lost(st))
		return -EIO;
	return store_count_read(st, st->ops->pread(st, buf, len, off), len);
}

static inline int store_pread_nowait(struct chunk_store *st, void *buf, size_t len,
				     uint64_t off)
{
	if (store_lost(st))
		return -EIO;
	if (!st->ops->pread_nowait)
		return -EAGAIN;
	return store_count_read(st, st->ops->pread_nowait(st, buf, len, off), len);
}

/* A read of bytes told ahead (pread_told above); a plain pread on a store
 * without it. */
static inline int store_pread_told(struct chunk_store *st, void *buf, size_t len, uint64_t off)
{
	if (store_lost(st))
		return -EIO;
	if (!st->told)
		return store_pread(st, buf, len, off);
	return store_count_read(st, st->ops->pread_told(st, buf, len, off, 0), len);
}

/* The same from memory only (store_pread_nowait). */
static inline int store_pread_told_nowait(struct chunk_store *st, void *buf, size_t len,
					  uint64_t off)
{
	if (store_lost(st))
		return -EIO;
	if (!st->told)
		return store_pread_nowait(st, buf, len, off);
	return store_count_read(st, st->ops->pread_told(st, buf, len, off, 1), len);
}

/* 1 when st reads told bytes without read-ahead of its own (pread_told). */
static inline int store_reads_told(const struct chunk_store *st)
{
	return st->told;
}

static inline int store_pwrite(struct chunk_store *st, const void *buf, size_t len,
			       uint64_t off)
{
	return store_lost(st) ? -EIO : st->ops->pwrite(st, buf, len, off);
}

static inline int store_flush(struct chunk_store *st)
{
	return store_lost(st) ? -EIO : st->ops->flush(st);
}

/* The flush of st in two halves (see flush_begin above): begin sends it,
 * end waits for it (0 or a negative errno). A store without the halves
 * flushes in store_flush_end. Every begin must be followed by its end. */
static inline void store_flush_begin(struct chunk_store *st)
{
	if (st->ops->flush_begin)
		st->ops->flush_begin(st);
}

static inline int store_flush_end(struct chunk_store *st)
{
	if (st->ops->flush_begin)
		return st->ops->flush_end(st);
	return store_flush(st);
}

/* A write followed by a flush of st and no other write in between: as
 * store_pwrite, but the store may make it durable at once (pwrite_last
 * above). Durability never rests on the promise: a store only does so
 * when nothing else written to it awaits a flush. */
static inline int store_pwrite_last(struct chunk_store *st, const void *buf, size_t len,
				    uint64_t off)
{
	if (store_lost(st))
		return -EIO;
	return st->ops->pwrite_last ? st->ops->pwrite_last(st, buf, len, off)
				    : st->ops->pwrite(st, buf, len, off);
}

/* A hint that [off, off + len) will be read soon (willneed above). */
static inline void store_willneed(struct chunk_store *st, size_t len, uint64_t off)
{
	if (!store_lost(st) && st->ops->willneed)
		st->ops->willneed(st, len, off);
}

static inline int store_trim(struct chunk_store *st, size_t len, uint64_t off)
{
	return store_lost(st) ? -EIO : st->ops->trim(st, len, off);
}

static inline void store_close(struct chunk_store *st)
{
	st->ops->close(st);
}

static inline int store_src_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	return store_pread(ctx, buf, len, off);
}

/* st as a source of chunk headers (od_header_read). */
static inline struct od_header_src store_header_src(struct chunk_store *st)
{
	return (struct od_header_src){ .pread = store_src_pread, .ctx = st, .size = st->size };
}

/* store_file.c: the byte range [base, base + size) of an open fd (the fd is
 * shared and not closed by the store). */
int store_file_region(int fd, uint64_t base, uint64_t size, struct chunk_store **out);
/* The same, with dfd the same file opened O_DIRECT (or -1): reads of 64 KiB
 * or more whose buffer, length and offset are multiples of 4096 and whose
 * pages are not all in the page cache go through it, past the cache (a
 * check that reads each block once); the rest, and every write, through
 * fd. */
int store_file_region_direct(int fd, int dfd, uint64_t base, uint64_t size,
			     struct chunk_store **out);
/* The same, with tfd the same file opened again with POSIX_FADV_RANDOM
 * (store_file_told_fd), or -1: reads of told bytes (store_pread_told) go
 * through it, so that the kernel reads no further than they ask. */
int store_file_region_told(int fd, int tfd, uint64_t base, uint64_t size,
			   struct chunk_store **out);
/* fd's file opened again read-only for told reads (through /proc/self/fd,
 * checked to be the same file; POSIX_FADV_RANDOM: no read-ahead by the
 * kernel for reads through it): the descriptor, or a negative errno. */
int store_file_told_fd(int fd);

/* A whole regular file or block device of its own (a chunk placed outside
 * the volume image): opened read-write unless rdonly, closed with the store.
 * -EINVAL for anything else than a file or a block device. */
int store_file_open(const char *path, int rdonly, struct chunk_store **out);

/* store_dead.c: the store of a chunk whose own store could not be reached:
 * size 0, every read, write and trim fails with -EIO, flush succeeds (the
 * chunk is offline and nothing of it is written). NULL when out of memory. */
struct chunk_store *store_dead_new(void);

/* volume.c: open a volume whose chunk i is stores[i]. The volume takes
 * over every store it reached (the entry becomes NULL) and closes them at
 * fs_close(); on failure the remaining ones are still the caller's. */
struct fs_volume;
int fs_open_stores(struct chunk_store **stores, uint32_t n, int flags, struct fs_volume **out,
		   char *why, size_t whylen);
/* fs/grow.c: a volume opened from stores takes st as its next chunk
 * (fs_add_chunk's checks and commit; st holds a chunk header made for that
 * index): 0, the volume owning st from then on, or a negative errno and
 * why[], st still the caller's. */
struct fs_chunk_opts;
int fs_add_chunk_store(struct fs_volume *v, const struct fs_chunk_opts *o, struct chunk_store *st,
		       uint32_t *index, char *why, size_t whylen);

#endif
