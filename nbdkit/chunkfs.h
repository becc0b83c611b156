/* nbdkit-chunkfs-plugin: what its files share. The plugin serves each
 * chunk of a chunkfs volume image as an NBD export named by its index,
 * the raw bytes of the chunk's range of the image, under the chunk's OFD
 * lock (fs/format/chunk_lock.h) for the connection's whole life. */
#ifndef CHUNKFS_NBDKIT_CHUNKFS_H
#define CHUNKFS_NBDKIT_CHUNKFS_H

#include <stdint.h>

#include "fs/format/vol_probe.h"

struct nbdkit_exports;

/* The configuration (chunkfs.c), fixed once .get_ready has returned. */
extern char *cf_volume;          /* volume=PATH, absolute */
extern int cf_readonly;          /* readonly=true: every connection reads only */
extern struct vol_probe cf_layout; /* where the chunks were at .get_ready */

/* chunkfs.c: where the chunks are now (chunk 0's header read again: a
 * chunk may have been added; when it cannot be read, the layout of
 * .get_ready); free it with vol_probe_free. 0, or -1 said to nbdkit_error. */
int chunkfs_probe(struct vol_probe *p);

/* One connection: its own descriptor, so its own open file description
 * and lock; nothing in it changes after .open (threads share it). */
struct chunk_handle {
	int fd;
	int write;                   /* open and locked for writing */
	uint32_t index;
	uint64_t base, size;         /* the chunk's byte range in the image */
};

/* chunkfs_io.c: the data callbacks; every one checks its range against
 * the chunk's before touching the image. */
int chunkfs_pread(void *handle, void *buf, uint32_t count, uint64_t offset, uint32_t flags);
int chunkfs_pwrite(void *handle, const void *buf, uint32_t count, uint64_t offset,
		   uint32_t flags);
int chunkfs_flush(void *handle, uint32_t flags);
int chunkfs_trim(void *handle, uint32_t count, uint64_t offset, uint32_t flags);
int chunkfs_zero(void *handle, uint32_t count, uint64_t offset, uint32_t flags);

/* chunkfs_list.c: .list_exports, and one chunk's state in words. */
int chunkfs_list_exports(int readonly, int is_tls, struct nbdkit_exports *exports);
const char *chunkfs_default_export(int readonly, int is_tls);
/* "in use, locked for writing by another process (...)" or "offline, ...":
 * holder is an enum chunk_lock_holder. */
const char *chunkfs_lock_words(int holder);

#endif
