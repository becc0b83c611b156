/* Delayed allocation's state, shared by fs/dalloc.c (the buffers, what
 * sees them, placement under the volume lock) and fs/dalloc_place.c
 * (placement with the data written outside the lock). Private to those
 * two files. */
#ifndef CHUNKFS_FS_DALLOC_H
#define CHUNKFS_FS_DALLOC_H

#include <pthread.h>
#include <stdint.h>

#include "fs/internal.h"

#define DA_HASH 256u
#define DA_PAGE OD_BLOCK_SIZE
/* Placements of at least this many pages (1 MiB) write their data
 * outside the volume lock when their caller allows it (dalloc_place.c). */
#define DA_UNLOCKED_MIN 256u
/* Free blocks kept beyond the pages' share before a write may be buffered
 * (fs/dalloc_room.c). */
#define DA_SLACK_BLOCKS 64u
/* A rewrite's write may start this many pages (16 MiB) past those
 * buffered in a row from the file's start (NFS clients send several
 * WRITEs at once, up to 1 MiB each, and they arrive out of order); one
 * further on ends the rewrite. */
#define DA_REWRITE_AHEAD 4096u
/* A failed placement is tried again after this, doubled per failure. */
#define DA_RETRY_FIRST_MS 250
#define DA_RETRY_MAX_MS 4000
/* Given up after this many failures over at least this long. */
#define DA_GIVE_UP_FAILS 4u
#define DA_GIVE_UP_MS 30000
/* A placement that gave way to a chunk's pin waiter waits at most this
 * long (ms) for it, and is made under the lock after this many. */
#define DA_GIVE_WAY_MS 1000
#define DA_GIVE_WAY_TRIES 8

struct da_page {
	uint64_t idx;                 /* file block */
	uint8_t *data;                /* DA_PAGE bytes, the block's whole content */
	int busy;                     /* data shared with a placement in flight: not
				       * written to (a write copies it first) */
};

struct da_file {
	uint64_t stable;
	uint32_t gen;
	uint64_t size;                /* the size clients see */
	struct da_page *pg;           /* sorted by idx */
	uint32_t n, cap;
	int64_t since;                /* CLOCK_MONOTONIC ms of its oldest buffered byte */
	int err;                      /* its last placement failed so (0: none since placed) */
	uint32_t fails;               /* placements failed in a row */
	int64_t first_fail;           /* ms of the first of them */
	int64_t retry_at;             /* ms: not tried by a sync or the timer before */
	uint64_t seq;                 /* its order of arrival (dalloc_step's bound) */
	uint64_t pass;                /* the last dalloc_step pass that tried it */
	int rewrite;                  /* a rewrite from its start (fs/realloc.c) */
	uint32_t lead;                /* ... pages buffered from page 0 on, in a row */
	int placing;                  /* a placement writes its data outside the lock */
	uint32_t epoch;               /* moves when it is placed under the lock meanwhile */
	int dead;                     /* freed while placing: the placement frees it */
	uint32_t held;                /* pages whose blocks that placement holds */
	int few;                      /* one segment, no extent unit, ext0 extents: */
	uint32_t ext0;                /* ... (as its inode was at the last write) */
	uint32_t units;               /* extent units its placement may need (v->da_units) */
	struct da_file *hnext;
	struct da_file *prev, *next;  /* age order: oldest at head.next */
};

struct dalloc {
	struct fs_volume *vol;
	struct da_file *hash[DA_HASH];
	struct da_file head;          /* list head of the age order */
	uint64_t bytes;               /* buffered page bytes */
	uint32_t files;
	uint64_t placed;              /* files placed since open */
	uint64_t limit;               /* the byte cap; 0: no buffering */
	uint64_t failures;            /* placements that failed (buffer kept or not) */
	uint64_t retried;             /* files placed after failing */
	uint64_t gave_up[DA_GAVE_UP_N]; /* buffers given up, by why */
	int64_t give_up_ms;           /* the time bound of retrying */
	uint32_t give_up_fails;       /* ... and the failures before giving up */
	uint64_t seq;                 /* the next file's seq */
	uint64_t passes;              /* dalloc_step passes begun */
	uint64_t hold_max_us;         /* the longest placement under one lock hold */
	uint64_t holds_over_10ms;     /* placements under one lock hold over 10 ms */
	uint64_t unlocked;            /* placements whose data was written outside the lock */
	uint64_t unlocked_blocks;     /* ... blocks so */
	uint64_t unlocked_redone;     /* ... whose plan did not hold: placed again locked */
	uint64_t unlocked_stops;      /* ... that gave way to a chunk's pin waiter */
	uint32_t gave_way_chunk;      /* ... the last one's chunk */
	uint64_t held_pages;          /* buffered pages whose blocks placements in flight
				       * hold (counted there, as held blocks) */
	/* Placements in flight: done_gen moves (under wait_lock) as each
	 * ends; a call that needs one ended waits for it on wait_cond. */
	pthread_mutex_t wait_lock;
	pthread_cond_t wait_cond;
	uint64_t done_gen;
	void (*written_hook)(void *arg); /* fs_dalloc_set_written_hook */
	void *written_arg;
	void (*window_hook)(void *arg);  /* fs_dalloc_set_window_hook */
	void *window_arg;
};

void dalloc_file_free(struct dalloc *d, struct da_file *f);
int64_t dalloc_now_ms(void);
int64_t dalloc_now_us(void);
/* A placement of f under the lock (fs/dalloc.c): unlock allows its data
 * to be written outside it (dalloc_place_unlocked); *t0: when the hold
 * being timed began (moved when the lock is taken again). */
int dalloc_place_file(struct fs_volume *v, struct da_file *f, int last, int unlock,
		      int64_t *t0);
/* fs/dalloc_place.c: f's runs of pages data[0..n) placed with their data
 * written outside the lock (f->n pages, none inline, no rewrite): 0 or
 * the error of the placement, as dalloc_place_file's; -EAGAIN when it
 * must be placed under the lock after all (nothing changed); -EINTR when
 * it gave way to a pin waiter of a chunk it writes to (d->gave_way_chunk:
 * nothing placed, the pages still buffered, f not to be used: the lock
 * may have been left). Called and returning with the lock held, left
 * while the data is written. */
int dalloc_place_unlocked(struct fs_volume *v, struct da_file *f, uint8_t **data, int64_t *t0);
/* The end of f's placement, its runs placed with ret: the size set past
 * the data stored (when grow: nothing of f is left buffered), or, failed,
 * the file cut back to before; the inode written. *cut (0 at the call):
 * the cut, or the write after a failure, failed. */
int dalloc_place_finish(struct fs_volume *v, struct iref *r, const struct da_file *f, int ret,
			uint64_t before, int grow, int *cut);
/* A placement counted as under one hold that began at t0. */
void dalloc_note_hold(struct dalloc *d, int64_t t0);
/* The end of a placement in flight told to those waiting for it. */
void dalloc_placed_wake(struct dalloc *d);
/* f's placement failed with err (kept, retried or given up). */
void dalloc_failed(struct fs_volume *v, struct da_file *f, int err, int last);

/* fs/dalloc_room.c. May n more pages of the file of r (f: its
 * buffer, or NULL) be buffered, their placement sure to find blocks and
 * extent units? (f and r NULL: of any file, with no more units.) */
int dalloc_room_for(struct fs_volume *v, const struct da_file *f, const struct iref *r,
		    uint64_t n);
/* f's pages changed in number (r: its inode now, or NULL): the units its
 * placement may need counted again, in v->da_units. */
void dalloc_units_note(struct fs_volume *v, struct da_file *f, const struct iref *r);
/* A page of f shared with its placement in flight no longer is (copied
 * for a write, or f freed): held counted so no more. */
void dalloc_unhold(struct dalloc *d, struct da_file *f, uint32_t pages);

#endif
