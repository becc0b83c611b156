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

/* evac_move.c: blocks of t for every extent of el (extents of chunk k),
 * the data copied (v->data_written set: durable before the metadata): *out
 * maps the same file blocks in t, *moved counts the blocks. On failure
 * everything taken in t is given back. */
int evac_copy_extents(struct fs_volume *v, struct chunk *k, const struct extlist *el,
		      struct chunk *t, struct extlist *out, uint64_t *moved);

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
/* The first used entry of home's foster map at index from or above that
 * places its inode in home: 1 with *idx and *loc, 0 when none is left. */
int evac_foster_next(struct fs_volume *v, uint32_t home, uint32_t from, uint32_t *idx,
		     struct od_loc *loc);

/* evac_inode.c: may the inode at loc (in a draining chunk) move with its
 * entry (an embedded inode with one link and no continuation or directory
 * unit, holding at most EVAC_INODE_BLOCKS data blocks)? move: its data
 * copied into t first (*blocks counts them), then the
 * inode of number stable carried with its entry into its directory's part
 * in t (made when there is none), its map entry (the foster map's) pointed
 * there, number and generation kept; the old entry removed, and its unit
 * and part with it once empty. The caller commits. 0, or a negative errno
 * with nothing changed (-ENOSPC: t has no room; -EINVAL: not movable). */
int evac_inode_movable(struct fs_volume *v, const struct od_loc *loc);
int evac_move_embedded(struct fs_volume *v, uint64_t stable, struct chunk *t,
		       uint64_t *blocks);

#endif
