/* What fs/evacuate.c (the steps, the draining flag) and fs/evac_move.c (the
 * moves) share. Private to those two files. */
#ifndef CHUNKFS_FS_EVAC_H
#define CHUNKFS_FS_EVAC_H

#include <stdint.h>

#include "fs/internal.h"

/* What moves carried out of a chunk. */
struct evac_moved {
	uint64_t conts;  /* continuations */
	uint64_t blocks; /* data blocks copied */
};

/* evac_move.c: the first max_blocks mapped blocks of the regular file
 * continuation cont (a slot of a draining chunk K), or all of it, carried
 * into chunk t in the running transaction: the data copied into blocks of
 * t, then mapped by the segment before cont when that is in t (its range
 * grows), else by a new continuation of t put in front of cont; cont then
 * starts where the piece ended, or goes whole (its extent units and slot
 * freed); K's copied blocks are freed. t NULL: the chunk of the segment
 * before, when it may take data (else -ENOSPC). The caller commits. 0 (m
 * counted: conts when cont went whole), or a negative errno with the chain
 * as it was (-ENOSPC: t has no room). */
int evac_move_cont(struct fs_volume *v, const struct iref *cont, struct chunk *t,
		   uint32_t max_blocks, struct evac_moved *m);

/* foster.c: k's map copied into a foster map in another chunk (chunk 0
 * when it has room) in the running transaction, named in chunk 0's header
 * and in the host's and k's; from then on map.c reads and changes k's
 * entries there. k must be draining and not fostered. *host: the chunk
 * taken. The caller commits. 0, or a negative errno with nothing changed
 * (-ENOSPC: no chunk has room, or chunk 0's table is full). */
int evac_foster(struct fs_volume *v, struct chunk *k, uint32_t *host);
/* Numbers homed in home that its foster map has in use (*used), and of
 * those, how many are still located in home (*here), by a scan. -ENOENT
 * when home has no foster map. */
int evac_foster_used(struct fs_volume *v, uint32_t home, uint64_t *used, uint64_t *here);

#endif
