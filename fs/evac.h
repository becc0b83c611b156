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

/* evac_move.c: the regular file continuation cont (a slot of a draining
 * chunk) moved into chunk t, in the running transaction: its data copied
 * into blocks of t, a new continuation in a slot of t with the same range,
 * the previous segment pointing at it, the old one's blocks, extent units
 * and slot freed. The caller commits. 0 (m counted), or a negative errno
 * with the chain as it was (-ENOSPC: t has no room). */
int evac_move_cont(struct fs_volume *v, const struct iref *cont, struct chunk *t,
		   struct evac_moved *m);

#endif
