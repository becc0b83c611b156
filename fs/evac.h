/* What fs/evacuate.c (the steps, the draining flag) and fs/evac_move.c (the
 * moves) share. Private to those two files. */
#ifndef CHUNKFS_FS_EVAC_H
#define CHUNKFS_FS_EVAC_H

#include <stdint.h>

#include "fs/internal.h"

/* The most data blocks an inode's move copies (2 MiB), as for a
 * continuation's piece. A file holding more in
 * its chunk first gives its tail away a piece at a time
 * (evac_move_head_tail). */
#define EVAC_INODE_BLOCKS 512u

/* The most data a step copies (2 MiB): a large continuation moves in
 * pieces, one step each. */
#define EVAC_STEP_BLOCKS 512u
/* Inodes one step moves at most, in one transaction: one a transaction
 * was its flushes' rate, 148 inodes/s (bench/evac-bench.sh --small). */
#define EVAC_STEP_INODES 16u

/* evacuate.c, the step's choices (shared with evac_plan.c): slot s of c's
 * inode area; is ino a regular file's continuation; the chunk a move out
 * of k goes to (one with data room outside its metadata zone, else any
 * with room, skipping those tried[]; never a draining one); what a step
 * does with the inode at loc, homed in k and placed there (*r: the inode
 * read), given max_blocks of the step's data left. */
enum { EV_NONE, EV_TAIL, EV_EMBEDDED, EV_LINKED };
struct od_loc evac_slot_at(const struct chunk *c, uint32_t slot);
int evac_is_file_cont(const struct od_inode *ino);
struct chunk *evac_pick_target(struct fs_volume *v, struct chunk *k, const uint8_t *tried);
/* evac_move.c: chunk i when a piece of max_blocks moved out of k may
 * extend a file's segment there (the moves' first choice, and the plan's:
 * the two must agree), else NULL. */
struct chunk *evac_segment_chunk(struct fs_volume *v, struct chunk *k, uint32_t i,
				 uint32_t max_blocks);

static inline int evac_loc_eq(struct od_loc a, struct od_loc b)
{
	return a.chunk == b.chunk && a.block == b.block && a.off == b.off;
}
int evac_move_kind(struct fs_volume *v, const struct od_loc *loc, uint32_t max_blocks,
		   struct iref *r);

/* evac_plan.c: the step's plan (phase (a), the lock held): what the step
 * of k will move found as the step finds it: k's map when it is not
 * fostered yet, else a foster map k hosts (their units, evac_pre_units),
 * else each object's data reserved in the chunk it will go to
 * (evac_pre_add); what it misses is only copied (or read) under the lock. */
void evac_plan(struct fs_volume *v, struct chunk *k, uint32_t max_blocks);

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

/* evac_move.c: the piece of el a continuation's move takes (its first
 * max_blocks mapped blocks) and the piece a head's tail move takes (its
 * last max_blocks), into *mv. 0 or -ENOMEM. */
int evac_cont_piece(const struct extlist *el, uint32_t max_blocks, struct extlist *mv);
int evac_tail_piece(const struct extlist *el, uint32_t max_blocks, struct extlist *mv);

/* evac_pre.c: a step's data copied without the volume lock (doc/design.md,
 * "Copying outside the lock"). begin: k's plan opened (-EBUSY: another
 * step's is pending); add: blocks of t reserved for every extent of el (of
 * k) for the object key (its head's stable number), -ENOSPC with nothing
 * reserved when t has no room outside its zone (-EBUSY: a reopen or
 * offline of t waits for its pins, and none is taken); copy: the lock released
 * (called locked, returns unlocked), the planned runs copied, the test's
 * hook run (-EINTR: stopped early, before a window or after the last, for
 * a waiter on a chunk it pins, chunk_wait_unpinned; another -errno: a copy
 * failed; the plan is then to be ended); target: the chunk planned for key, NULL none;
 * claim: the copied run holding k's blocks [src, src + len) taken in t
 * (*dst, *got: its part from src), 1, or 0 when none was planned there,
 * or -ECANCELED when it was spoilt (written or freed meanwhile: the
 * object is retried next step); end: what no move claimed released, the
 * plan closed, the claims it refused added to *dropped and the blocks the
 * moves took copied to *claimed. All but copy under the lock. */
int evac_pre_begin(struct fs_volume *v, struct chunk *k);
/* evac_pre.c: the one-block units [start, start + n) of k (a foster map the
 * step moves off k) read by the copy outside the lock, but those in the
 * cache now; evac_pre_fill (phase (c), locked, before the move): each read
 * whole and not taken into the cache since (a change goes through it) put
 * there, so that the move reads it from memory (k's evac_units_unlocked
 * counts them). */
int evac_pre_units(struct fs_volume *v, uint32_t start, uint32_t n);
void evac_pre_fill(struct fs_volume *v);
int evac_pre_add(struct fs_volume *v, uint64_t key, struct chunk *t, const struct extlist *el);
int evac_pre_copy(struct fs_volume *v);
struct chunk *evac_pre_target(struct fs_volume *v, uint64_t key);
int evac_pre_claim(struct fs_volume *v, struct chunk *k, uint32_t src, uint32_t len,
		   struct chunk *t, uint32_t *dst, uint32_t *got);
void evac_pre_end(struct fs_volume *v, uint64_t *dropped, uint64_t *claimed);

/* foster.c: k's map copied into a foster map in another chunk (chunk 0
 * when it has room) in the running transaction, named in chunk 0's header
 * and in the host's and k's; from then on map.c reads and changes k's
 * entries there. k must be draining and not fostered. *host: the chunk
 * taken. The caller commits. 0, or a negative errno with nothing changed
 * (-ENOSPC: no chunk has room, or chunk 0's table is full). */
int evac_foster(struct fs_volume *v, struct chunk *k, uint32_t *host);
/* A foster map that k (draining) hosts for another chunk, moved in the
 * caller's transaction into chunk 0 when it has room, else the
 * non-draining, non-fostered chunk with the most free blocks (its units
 * copied, k's freed; the record changed in chunk 0's header, dropped from
 * k's, added to the new host's and changed in the home's unless it is
 * retired): 1 when one moved, 0 when k hosts none, -ENOSPC when no chunk
 * has room, -EIO when the home is offline. */
int evac_foster_rehost(struct fs_volume *v, struct chunk *k);
/* Numbers homed in home that its foster map has in use (*used), and of
 * those, how many are located in chunk in (*here), by a scan. -ENOENT
 * when home has no foster map. */
int evac_foster_used(struct fs_volume *v, uint32_t home, uint32_t in, uint64_t *used,
		     uint64_t *here);
/* The first used entry of home's foster map at index from or above that
 * places its inode in chunk in: 1 with *idx and *loc, 0 when none is
 * left. */
int evac_foster_next(struct fs_volume *v, uint32_t home, uint32_t in, uint32_t from,
		     uint32_t *idx, struct od_loc *loc);
/* The evacuation's turn through K's own foster map: the next used entry
 * placing its inode in K, from *from on and then round from 0 up to start
 * (K's cursor), as evac_foster_next finds it: 1 with *idx and *loc (*from
 * past it), 0 when the turn is over, or a negative errno. *from starts at
 * the cursor (0 past the map's end), *wrapped at 0. The step's scan and
 * its plan both walk it, so that they meet the same entries. */
int evac_foster_turn(struct fs_volume *v, uint32_t k, uint32_t start, uint32_t *from,
		     int *wrapped, uint32_t *idx, struct od_loc *loc);
/* Does any foster map place an inode in chunk in? 1, 0, or -errno. */
int evac_foster_any_in(struct fs_volume *v, uint32_t in);
/* Inodes placed in chunk in whose numbers are homed in another fostered
 * chunk (moved there by its evacuation): *guests, by a scan (a map whose
 * host is offline is not counted). */
int evac_foster_guests(struct fs_volume *v, uint32_t in, uint32_t *guests);

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
/* evac_inode.c: what a moved inode takes to its new place: r's inode
 * without extents (*bare) and its inline bytes (*inl, malloc'd, NULL when
 * it has none; the caller frees it, on failure too). 0 or -errno. */
int evac_bare_copy(struct fs_volume *v, const struct iref *r, struct od_inode *bare,
		   uint8_t **inl);
int evac_move_embedded(struct fs_volume *v, uint64_t stable, struct chunk *t,
		       uint64_t *blocks);
/* evac_inode.c: the inline bytes of a moved inode (bare) that do not fit
 * beside its name (name_len bytes) in t's directory units, whose size may
 * differ from its chunk's: bare made a file of blocks (not inline) and
 * their count returned (the move writes them into blocks of t,
 * file_fill_new, once the entry is there), else 0. */
uint32_t evac_inline_spill(const struct chunk *t, size_t name_len, struct od_inode *bare);

/* evac_inode.c's pieces, shared with evac_linked.c: r's data (its extents,
 * all in k) copied into t and mapped by r2 (its extent units made in t,
 * r2 written); the segments after a head from next on checked to have
 * none in t (-ENOSPC), and with set, each one's head_chunk set to t; what
 * r held in k (data blocks, extent units) freed. */
int evac_move_data(struct fs_volume *v, struct chunk *k, const struct iref *r,
		   struct iref *r2, struct chunk *t, uint64_t *blocks);
int evac_rehead_chain(struct fs_volume *v, struct od_loc next, struct chunk *t, int set);
int evac_free_old(struct fs_volume *v, struct chunk *k, struct iref *r);

/* evac_move.c: the last max_blocks mapped blocks of the regular file head
 * (in a draining chunk K), or all of them, carried into t in the running
 * transaction: copied, then mapped by the segment after the head when that
 * is in t (it starts lower), else by a new continuation of t put right
 * after the head; the head's range ends where the piece began, and K's
 * copied blocks are freed. t NULL: the chunk of the segment after the
 * head, when it may take data (else -ENOSPC). The caller commits. 0 (m's
 * blocks counted), or a negative errno with the chain as it was. */
int evac_move_head_tail(struct fs_volume *v, const struct iref *head, struct chunk *t,
			uint32_t max_blocks, struct evac_moved *m);

/* evac_linked.c: may the inode at loc (in a draining chunk K) move with
 * every entry naming it (an inode in a slot of K, or embedded with more
 * than one link; not a directory, continuation or lost+found part; at
 * most EVAC_INODE_BLOCKS data blocks in K)? move: its data copied into t,
 * the inode put in a slot of t (an embedded one: embedded in its entry's
 * copy in t), every entry naming it (all in K: invariant 2) added to its
 * directory's part in t and removed from K, its map entry pointed there,
 * number and generation kept; a slot of K freed. The caller commits. 0, or
 * a negative errno with nothing changed (-ENOSPC: t has no room;
 * -EINVAL: not movable; -EUCLEAN: its entries do not add up to its link
 * count). */
int evac_linked_movable(struct fs_volume *v, const struct od_loc *loc);
int evac_move_linked(struct fs_volume *v, uint64_t stable, struct chunk *t, uint64_t *blocks);
/* evac_linked.c: the step's index of K's directory entries (made by the
 * step's first linked move) let go: before the step releases the lock,
 * after which clients may change K's entries. */
void evac_lindex_drop(struct fs_volume *v);

/* evac_linked.c: K's empty directory parts unlinked from their chains and
 * their slots freed, the first one found: lost+found's when lf (kept by
 * the library otherwise), the others when not. 1 when one went, 0 when
 * none is left. The caller commits. */
int evac_drop_empty_part(struct fs_volume *v, struct chunk *k, int lf);

#endif
