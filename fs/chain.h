/* A regular file's chain of continuation inodes as one operation holds it
 * (fs/chain.c): its segments, each an inode with its extent list, what the
 * operation allocated and what it lets go of. Private to fs/chain.c,
 * fs/file.c, fs/evac_move.c, fs/realloc.c and fs/dalloc_place.c. */
#ifndef CHUNKFS_FS_CHAIN_H
#define CHUNKFS_FS_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "fs/internal.h"

/* One inode of the chain with its extent list; dirty: to be written back. */
struct seg {
	struct iref r;
	struct extlist el;
	int dirty;
};

/* Blocks allocated by the running operation, so that a failure part way
 * (ENOSPC in the third chunk) returns every one of them. */
struct newrange {
	uint32_t chunk, pblk, len;
};

/* File blocks [lblk, lblk + len) held at [pblk, pblk + len) of a chunk
 * for a placement whose data is written outside the volume lock
 * (fs/dalloc_place.c). */
struct held_run {
	uint64_t lblk;
	uint32_t chunk, pblk, len;
};

struct fchain {
	struct seg *s;
	uint32_t n;
	uint32_t n_orig;              /* segments before this operation */
	struct newrange *nr;
	uint32_t n_nr, cap_nr;
	/* What a cut lets go of, freed only once the chain is stored (a
	 * failed store then leaves everything as it was). */
	struct newrange *gone;
	uint32_t n_gone, cap_gone;
	struct iref *gone_conts;      /* continuations that go whole */
	uint32_t n_gone_conts;
	/* Blocks held for the file (set after chain_load): chain_alloc
	 * takes them before any other choice, making a continuation in
	 * their chunk at the file's end when they lie in another. */
	const struct held_run *held;
	uint32_t n_held;
};

/* Load the chain of head (the head inode itself is segment 0). */
int chain_load(struct fs_volume *v, const struct iref *head, struct fchain *fc);
/* Free the chain in memory (nothing on disk changes). */
void chain_release(struct fchain *fc);
/* Write back changed segments; *head gets the head's merged inode. */
int chain_store(struct fs_volume *v, struct fchain *fc, struct iref *head);
/* Give back what this operation allocated; the chain is then discarded. */
void chain_undo(struct fs_volume *v, struct fchain *fc);
/* What this operation allocated held instead (chunk_hold), as runs of
 * file blocks in *out (malloc'd, *n of them), and the continuations it
 * made given back; the chain is then discarded. On failure nothing is
 * held (chain_undo is the caller's). */
int chain_hold_new(struct fs_volume *v, struct fchain *fc, struct held_run **out, uint32_t *n);
/* After a successful chain_store: free what chain_cut let go of. */
int chain_free_gone(struct fs_volume *v, struct fchain *fc);
/* Map [lblk, lblk + n) to blocks, allocating what is missing (in other
 * chunks, by new continuations, when the file's last chunk is full). */
int chain_alloc(struct fs_volume *v, struct fchain *fc, uint64_t lblk, uint64_t n);
/* Walk file bytes [off, off + len): fn gets each piece lying in one run of
 * blocks of one chunk (pblk 0: a hole), in order; a negative return stops. */
typedef int (*chain_piece_fn)(void *ctx, uint32_t chunk, uint32_t pblk, uint32_t inoff, size_t n);
int chain_walk(const struct fchain *fc, uint64_t off, size_t len, chain_piece_fn fn, void *ctx);
/* Copy file bytes [off, off + len) in or out of mapped blocks: write is
 * 1 for a write, 0 for a read, CHAIN_READ_TOLD for a read of a reader in
 * order's bytes (store_pread_told: no read-ahead past a piece's end). */
#define CHAIN_READ_TOLD 2
int chain_rw(struct fs_volume *v, struct fchain *fc, uint64_t off, size_t len, uint8_t *buf,
	     int write);
/* Let go of every block at or after lblk, and continuations that become
 * empty (freed by chain_free_gone once the chain is stored). */
int chain_cut(struct fs_volume *v, struct fchain *fc, uint64_t lblk);
/* Before a cut to size: the block size ends in, copied with its tail zeroed. */
int chain_cow_tail(struct fs_volume *v, struct fchain *fc, uint64_t size);
/* Zero the block at lblk when this operation allocated it. */
int chain_zero_new_partial(struct fs_volume *v, struct fchain *fc, uint64_t lblk);

/* file.c: the chain's new extents stored, before any data goes to the
 * blocks they map, with the size raised to end when below it; on failure
 * the size is as it was and what the operation allocated is given back. */
int file_store_grown(struct fs_volume *v, struct fchain *fc, struct iref *r, uint64_t end);

/* Reallocation: segment si's extents (no hole between them) let go of
 * and replaced by one extent from pblk of its chunk, grow blocks longer
 * (the blocks after them: an append), allocated by the caller (-EINVAL:
 * no extent, or a hole). */
int chain_seg_replace(struct fchain *fc, uint32_t si, uint32_t pblk, uint32_t grow);
/* Reallocation: the file's blocks from lblk on (its last segment's
 * range) let go of and mapped by a new continuation in chunk t, one
 * extent [pblk, pblk + len) the caller allocated there. */
int chain_move_tail(struct fs_volume *v, struct fchain *fc, uint64_t lblk, struct chunk *t,
		    uint32_t pblk, uint32_t len);

#endif
