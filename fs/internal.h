/* What the fs/ and handles/ modules share and nobody else sees: the volume,
 * the chunk, the block cache and inode references, with prototypes grouped
 * by the file that owns them.
 *
 * Locking (v1): one mutex per volume serialises every library call; the
 * block cache, allocation state and maps are touched only under it. Data
 * block I/O of reads also runs under it. Finer locks (per chunk for
 * allocation, per inode for data) are the planned next step; the API does
 * not change when they arrive. */
#ifndef CHUNKFS_INTERNAL_H
#define CHUNKFS_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "fs/fs.h"
#include "fs/format/foster_table.h"
#include "fs/format/header.h"
#include "fs/format/ondisk.h"
#include "fs/store/store.h"

struct fs_volume;

/* One hold of the volume lock as a hold record's trace keeps it: where it
 * was taken, its wall time and the holding thread's CPU time over it. */
struct hold_trace {
	const char *site;
	uint64_t wall_ns, cpu_ns;
	uint32_t vcsw, ivcsw;  /* the thread's context switches meanwhile: it blocked, was preempted */
	uint64_t rq_ns;        /* its time waiting for a CPU meanwhile (schedstat's run_delay) */
};

#define HOLD_TRACE_MAX 16u

/* A record of volume lock holds (vol_lock.c's vol_hold_rec): how many,
 * the longest and where, those over 1 and 10 ms; with trace set, the
 * first HOLD_TRACE_MAX holds one by one, the thread's CPU clock read too
 * (an evacuation step's, for bench/evac-bench.sh). */
struct hold_rec {
	uint64_t holds, max_ns, over_1ms, over_10ms;
	const char *max_site;
	int trace;
	uint32_t ntrace;
	struct hold_trace t[HOLD_TRACE_MAX];
};

/* One buffered metadata unit (a block, or a multi-block dir unit). */
struct buf {
	struct chunk *c;
	uint32_t block;
	uint32_t units;
	uint8_t *data;
	int dirty;
	int refs;
	int heal_copy;                /* -1, or the copy found bad: the next write goes there */
	int pinned;                   /* in a transaction being written: not evicted */
	int fresh;                    /* on blocks free in the last committed state,
				       * not written since (fs/txn.c, one_flush_ok) */
	int32_t room;                 /* dir units: the largest slack of an entry, or
				       * -1: not known (every change forgets it) */
	struct buf *hnext;            /* hash chain */
	struct buf *lru_prev, *lru_next;
	struct buf *dirty_prev, *dirty_next; /* on the volume's dirty list while dirty */
};

/* A unit named by a dirty list, and the copy its transaction wrote first
 * (held: the copy named). age: transactions since one wrote it. */
struct dl_entry {
	uint32_t block;
	uint16_t units;
	uint8_t copy;
	uint8_t age;
};

/* Small files packed (chunk.c, fs_set_small_pack): the next block a new
 * file's small placement looks at, in the region [at, end) (at == end:
 * none yet): a free run or a window's holes, outside the zones or of the
 * zones' free pairs (pairs). In memory only. */
struct pack_cursor {
	uint32_t at, end;
	int pairs;
};

/* dir_fill.c: a directory's recent creates of regular files (a run of
 * them, each within a few of the volume's creates of the one before) and
 * the packing region of its last burst, in chunk (valid while the chunk's
 * allocation state is the one loaded then: unloads). */
#define DIR_FILL_SLOTS 16u
struct dir_fill {
	uint64_t dir;                 /* its stable number; 0: a free slot */
	uint64_t last;                /* fill_creates at its last create (or its mkdir) */
	uint32_t run;
	uint32_t chunk;
	uint64_t unloads;
	struct pack_cursor cur;
};

struct chunk {
	struct fs_volume *vol;
	uint32_t index;
	struct chunk_store *store;
	struct od_chunk_header hdr;
	uint32_t half;                /* nblocks / 2: mirror distance */
	int header_dirty;
	int header_heal;              /* -1, or the header copy found bad */
	int offline;
	int64_t offline_since;        /* time(2) it went offline (fs_chunk_offline), or 0 */
	struct od_inode *ghosts;      /* while offline: its directory parts, as they were */
	struct od_loc *ghost_locs;    /* ... and where, sorted */
	uint32_t nghosts;
	uint64_t base;                /* byte offset in the image (one-image volumes) */
	int locked;                   /* this volume holds the chunk's OFD lock (vol_chunk_lock.c) */
	char *place;                  /* its own store's name (path, NBD URI); NULL: the image's */
	char why_offline[160];        /* while offline: the reason, "" when none is known */
	int lost_store;               /* offline because its store lost its server: the errno */
	uint32_t pins;                /* reads using its store without the lock (pin.c) */
	uint32_t pin_waiters;         /* reopens waiting (unlocked) for the pins to go */

	/* Allocation state, loaded on first use. */
	int loaded;
	uint8_t *bitmap;              /* 1 bit per block, 1 = used */
	uint8_t *bitmap_dirty;        /* 1 byte per bitmap block */
	uint8_t *reserved;            /* freed since the last commit: not reusable yet */
	int any_reserved;
	uint8_t *frozen;              /* freed before a transaction being written */
	int any_frozen;
	uint32_t frozen_outside;
	uint32_t alloc_hint_meta;
	uint32_t alloc_hint_data;
	/* Small files packed (chunk.c): the cursor of small files one at a
	 * time, and that of bursts (always a free run, never a window). */
	struct pack_cursor pack, pack_burst;
	uint64_t pack_dir;            /* the directory of the small file placed last, and
				       * how many in a row were in it: a burst */
	uint32_t pack_streak;
	uint32_t free_outside;        /* free data blocks outside the metadata zone */
	uint32_t reserved_outside;    /* ... and those freed since the last commit */
	uint32_t *free_map;           /* free map indices below the watermark */
	uint32_t nfree_map, cap_free_map;
	uint8_t *pa_map;              /* reserved for a file (prealloc.c), not in the bitmap */
	uint32_t pa_blocks;           /* ... how many */
	uint8_t *hold_map;            /* held by a placement in flight (dalloc_place.c), apart
				       * from pa_map: a reservation's release never frees them */
	uint32_t hold_blocks;         /* ... how many */
	uint32_t pairs_low;           /* free pairs of the zones, at least (chunk_meta_room:
				       * counted, then one less per block made busy) */
	uint64_t unloads;             /* times this state was dropped (reservations with it) */
	uint32_t *free_slots;         /* free inode-area slots below the watermark */
	uint32_t nfree_slots, cap_free_slots;

	/* The newest list on disk here: every unit it names with the copy
	 * written first, sorted by block, from transaction
	 * ondisk_txid (0: not known, as after open, offline or a failed
	 * write). It decides whether a transaction may take one flush (txn.c). */
	struct dl_entry *ondisk;
	uint32_t nondisk;
	uint64_t ondisk_txid;

	/* Counters (self-healing reads and the like). */
	uint64_t healed;
	uint64_t bad_both;

	/* The scrub's record of this chunk since open (scrub.c). */
	uint64_t scrub_units, scrub_bad, scrub_healed, scrub_both_bad;
	int64_t scrub_last;           /* time(2) a pass over it last completed, or 0 */

	/* Evacuation (evacuate.c): the next inode-area slot a step looks at,
	 * and what steps carried out since open. */
	uint32_t evac_slot;
	uint64_t evac_conts, evac_blocks;
	uint32_t evac_map;            /* the next foster map entry a step looks at */
	uint64_t evac_inodes;         /* inodes moved since open */
	uint64_t evac_dropped;        /* copies made outside the lock spoilt since open */
	uint64_t evac_pre_blocks;     /* ... and blocks moved whose copy was made so */
	uint32_t evac_drop_run;       /* steps in a row that dropped and moved nothing */
	int evac_rehost_stuck;        /* the last step could not move a map it hosts */
	struct hold_rec evac_holds;   /* the volume lock's holds of its steps, since open */
	uint64_t evac_entry_scans;    /* scans of its directory units for linked moves */
	uint64_t evac_copy_stops;     /* unlocked copies stopped early for a pin waiter */
	uint64_t evac_units_unlocked; /* foster map units a step read outside the lock */
	uint64_t evac_units_locked;   /* ... and read under it (not in the cache) */
	int retired;                  /* evacuated and retired: no store, never read
				       * (OD_FOSTER_RETIRED in chunk 0's record) */
};

#define TXN_SPARE_PER_SIZE 64 /* spare copy buffers kept per unit size */

/* A file lately read (read_ahead.c): where its last read in order ended,
 * and how far its stores were told it will be read. */
#define FS_RA_SLOTS 64
struct ra_slot {
	uint64_t stable; /* 0: free */
	uint64_t next, told;
};

struct fs_volume {
	pthread_mutex_t lock;
	/* vol_lock.c: light threads waiting for the lock and their turns
	 * taken; bulk threads giving way wait on gate_cond. */
	pthread_mutex_t gate_lock;
	pthread_cond_t gate_cond;
	uint32_t light_waiting, gate_waiters;
	uint64_t light_turns;
	/* vol_lock.c: how long the lock is held, under the lock: since when
	 * and by which function now, and the record since open (the longest
	 * hold and where, holds over 1 ms and over 10 ms). */
	uint64_t lock_since_ns;
	uint64_t lock_since_cpu_ns;   /* the holder's CPU clock then, when its record traces, */
	uint64_t lock_since_vcsw, lock_since_ivcsw, lock_since_rq_ns; /* and its switches, waits */
	const char *lock_site;
	struct hold_rec lock_rec;
	int fd;
	int tfd;                      /* fd's file again, for told reads (store_file_told_fd), or -1 */
	int rdonly;
	int ftab_lost;                /* chunk 0's foster table was not whole at open: rdonly */
	int ftab_rebuilt;             /* ... and was made again at open (ftab_rebuild.c) */
	uint32_t nchunks;
	struct chunk *chunks;
	uint64_t txid;
	uint64_t root;
	int shared_fd;                /* every chunk is a region of fd */
	uint8_t uuid[16];
	uint8_t secret[32];

	/* Block cache. */
	struct buf **hash;
	uint32_t hash_size;
	struct buf lru;               /* list head: most recent at lru.lru_next */
	uint64_t cache_bytes;
	uint64_t cache_limit;
	struct buf dirty;             /* list head of dirty units, in the order they became so */
	uint32_t ndirty;
	struct fs_recovery_stats recovery;
	uint64_t image_cut;           /* bytes the image was shortened by (fs/shorten.c) */
	int image_cut_err;            /* the last failed try's negative errno, 0 */
	struct dindex_set *dindex;    /* name indexes of directories (dindex.c) */

	/* Data blocks were written since the last transaction was prepared:
	 * the next one flushes them before its units (txn.c). */
	int data_written;
	uint64_t txns, txns_one_flush; /* committed, and of those with one flush */
	uint64_t txn_flushes;          /* flushes the committed ones took */
	uint64_t held_named;           /* held entries they named */
	uint64_t drops;               /* chunks forced offline with changes dropped,
				       * and buffers of UNSTABLE data given up */
	uint64_t change_drops;        /* ... the first alone */

	/* Spare buffers for the copies a transaction writes, by unit size in
	 * blocks (txn.c; under the lock). */
	uint8_t *unit_spare[OD_MAX_DIR_UNIT][TXN_SPARE_PER_SIZE];
	uint32_t nunit_spare[OD_MAX_DIR_UNIT];

	/* The transaction being written without the lock (fs_sync), if any. */
	struct txn *inflight;
	pthread_mutex_t commit_lock;
	pthread_cond_t commit_cond;

	/* Reads without the lock (pin.c): a pin's end is signalled on
	 * pin_cond; reuse_gen moves when freed blocks become reusable. */
	pthread_mutex_t pin_lock;
	pthread_cond_t pin_cond;
	uint64_t reuse_gen;

	/* Read-ahead by files' offsets (read_ahead.c; under the lock): how
	 * far ahead of a reader in order (bytes, 0: none; fs_set_readahead),
	 * the readers lately seen, and the pieces told to stores since open
	 * (read_unlocked.c) and their bytes. */
	uint32_t readahead;
	struct ra_slot ra[FS_RA_SLOTS];
	uint64_t ra_hints, ra_hint_bytes;

	/* The learned size predictor (vol_predict.c), and how many new
	 * files it placed (it had enough samples). */
	struct vol_pred *pred;
	uint64_t pred_answered;

	/* Chunk 0's foster records, its header's and its table's
	 * (foster_tab.c): every one, in order. */
	struct od_fosters fost;

	/* Preallocation: files' reservations, in memory only (prealloc.c). */
	struct prealloc *pa;

	/* Delayed allocation: files' buffered data (dalloc.c). */
	struct dalloc *da;
	/* Extent units its placement may need in any one chunk
	 * (fs/dalloc_room.c): other metadata leaves that many of a chunk's
	 * free pairs alone (alloc_meta). */
	uint64_t da_units;

	/* Evacuation: the step's data copied outside the lock, and what it
	 * planned (evac_pre.c); a test's call between the copy and the move
	 * (fs_evac_set_copied_hook). */
	struct evac_pre *evac_pre;
	int evac_copy_locked;         /* fs_set_evac_copy_locked */
	void (*evac_copied_hook)(void *arg);
	void *evac_copied_arg;
	void (*evac_window_hook)(void *arg); /* after each window of the copy (tests) */
	unsigned ino_write_fault;     /* fs_fault_ino_write: the nth ino_write fails */
	int ino_write_fault_err;
	void *evac_window_arg;
	struct evac_lindex *evac_lindex; /* evac_linked.c: K's entries, for one step's hold */
	int evac_trace_fd;            /* fs_evac_set_trace: each step's holds, a line each (-1) */
	uint64_t evac_trace_steps;

	/* The continuation policy: file blocks from which a file in a
	 * small-file or general chunk continues in a large-file chunk (0:
	 * never); fs_set_large_continue. */
	uint64_t large_continue_blocks;
	uint64_t large_continues;     /* continuations it made since open */

	/* Reallocation on rewrite (realloc.c): files with at least this many
	 * extents, rewritten whole, are gathered into one run a segment (0:
	 * never); fs_set_realloc. What it did since open. */
	uint32_t realloc_min_extents;
	uint64_t reallocs;            /* files reallocated */
	uint64_t realloc_blocks;      /* blocks they were written into anew */
	uint64_t realloc_no_run;      /* whole rewrites written in place: no run */
	/* Reallocation at append (realloc.c): files of at most this many
	 * blocks with their append (0: never; fs_set_realloc_append); those
	 * moved whole into one run with their append, and the blocks written
	 * into those runs. */
	uint32_t realloc_append_blocks;
	uint64_t append_moves, append_move_blocks;

	/* fs_set_alloc_policy: 1 for FS_ALLOC_FIRST_FIT (no runs looked for,
	 * no move at append). */
	int alloc_first_fit;
	/* Small files packed (chunk.c): the size of a chunk's packing region
	 * (a window of holes, or the least free run), blocks (0: no packing;
	 * fs_set_small_pack); placements packed and regions taken since open. */
	uint32_t pack_region;
	uint64_t small_packs, pack_regions;
	/* Directories being filled (dir_fill.c): the regular files created
	 * since open, and the directories that had the latest creates. */
	uint64_t fill_creates;
	struct dir_fill fill[DIR_FILL_SLOTS];
};

/* A loaded inode: where it lives and its decoded form. */
struct iref {
	struct od_loc loc;
	struct od_inode ino;
};

static inline struct chunk *vol_chunk(struct fs_volume *v, uint32_t i)
{
	return i < v->nchunks ? &v->chunks[i] : NULL;
}

/* Being evacuated: nothing new is placed in c (OD_CHF_DRAINING). */
static inline int chunk_draining(const struct chunk *c)
{
	return (c->hdr.flags & OD_CHF_DRAINING) != 0;
}

/* Fostered: the numbers homed in c are mapped by a foster map elsewhere. */
static inline int chunk_fostered(const struct chunk *c)
{
	return (c->hdr.flags & OD_CHF_FOSTERED) != 0;
}

/* The foster map of home chunk `home` (chunk 0's records name every one),
 * or NULL when it has none. */
static inline const struct od_foster *vol_foster(const struct fs_volume *v, uint32_t home)
{
	int i = od_fosters_find(&v->fost, home);

	return i < 0 ? NULL : &v->fost.rec[i];
}

static inline uint32_t chunk_mirror(const struct chunk *c, uint32_t block)
{
	return block + c->half;
}

/* cache.c */
int cache_init(struct fs_volume *v, uint64_t limit);
void cache_destroy(struct fs_volume *v);
/* Read a metadata unit through the cache, verifying its checksum and
 * healing from the mirror copy. */
int buf_read(struct chunk *c, uint32_t block, uint32_t units, struct buf **out);
/* A one-block unit of c read from st without the volume lock (c pinned;
 * single: c keeps one copy) into data (other: a block of scratch): 1 when
 * it is what buf_read would serve without healing (both copies whole with
 * one txid), 0 when not (buf_read decides), or a negative errno. */
int unit_read_unlocked(struct chunk *c, struct chunk_store *st, uint32_t block, int single,
		       uint8_t *data, uint8_t *other);
/* data, so read, put in the cache as c's unit at block, clean, unless the
 * cache holds the unit (it is newer there): 1 put, 0 not. The caller
 * knows no change to the unit was made since it was read (evac_pre.c). */
int buf_prefill(struct chunk *c, uint32_t block, const uint8_t *data);
/* A unit that has never been written: zero-filled, header set, not read. */
int buf_fresh(struct chunk *c, uint32_t block, uint32_t units, uint16_t type, uint64_t owner,
	      struct buf **out);
void buf_dirty(struct buf *b);
void buf_undirty(struct buf *b);
void buf_put(struct buf *b);
void buf_forget(struct chunk *c, uint32_t block);
/* Forget every cached unit of chunk c, dirty ones included (their changes
 * are lost); -EBUSY when one is still referenced or being written. */
int cache_drop_chunk(struct chunk *c);
/* The cached unit at block, without taking a reference, or NULL. */
struct buf *buf_peek(struct chunk *c, uint32_t block);

/* txn.c */
/* One transaction from prepare to finish. Prepare (volume locked) takes a
 * copy of every dirty unit and cleans the buffers; write (unlocked: other
 * operations go on, their changes are the next transaction's) writes the
 * lists and the units with their flushes; finish (locked) records the
 * outcome. io_done is set, under the volume's commit mutex, when write
 * has returned. */
struct chunk_txn;
struct txn {
	uint64_t txid;
	struct chunk_txn *ct;
	uint32_t nchunks, nparts; /* nparts 0: nothing to write */
	int one_flush;            /* lists and first copies behind a single flush */
	uint32_t flushes;         /* taken so far */
	int io_done, io_ret, finished;
};
int txn_prepare(struct fs_volume *v, struct txn *t);
int txn_write(struct fs_volume *v, struct txn *t);
int txn_finish(struct fs_volume *v, struct txn *t, int result);
int txn_recover(struct fs_volume *v, struct fs_recovery_stats *st);
/* A chunk coming back online, still offline: the last transaction's list
 * there (no newer than vol_txid, the volume's last commit) is rolled
 * forward and spent, so both copies of every unit agree. -EUCLEAN when the
 * list is newer than the volume (not this volume's doing: the chunk needs
 * fsck). Runs without the volume lock: nothing else reads or writes an
 * offline chunk's blocks or its list state. */
int txn_settle_chunk(struct chunk *c, uint64_t vol_txid);
/* A chunk about to go offline, everything committed: a transaction of its
 * own whose list there names nothing, so that nothing on it is pending and
 * a check finds both copies of every unit equal. */
int txn_empty_list(struct fs_volume *v, struct chunk *c);
/* c's newest list on disk is no longer known (spent, or c went offline). */
void txn_forget_ondisk(struct chunk *c);
void txn_free_spares(struct fs_volume *v);
/* At a clean close, after the last transaction: every list is cleared, so
 * nothing is left to replay and fsck finds every chunk clean. */
int txn_settle_all(struct fs_volume *v);
/* The chunk's newest list on disk, as this session wrote it, read back:
 * 0 it verifies, 1 none is known (nothing to check), -EBADMSG damaged
 * (forgotten then: the chunk's next transaction takes two flushes). */
int txn_check_ondisk_list(struct chunk *c);

/* chunk.c */
int chunk_load(struct chunk *c);
/* Forget the allocation state (loaded again on first use). */
void chunk_unload(struct chunk *c);
int chunk_write_header(struct chunk *c);
int chunk_write_bitmap(struct chunk *c);
int bitmap_test(const struct chunk *c, uint32_t block);
/* Where a data allocation may go (fs/chunk.c): DATA_RUNS a run that
 * holds the data (or DATA_PIECE of it) outside the metadata zones, else
 * of zone blocks whose twin is busy, else -ENOSPC; DATA_PAIR_RUNS such a
 * run of the zones' free pairs while half of them stay free; DATA_OUTSIDE
 * any free block outside the zones; DATA_ANY the DATA_RUNS runs, then
 * pieces outside, then of the zones (free pairs last). DATA_LONG and
 * DATA_LONG_PAIRS as DATA_RUNS and DATA_PAIR_RUNS with runs of
 * DATA_LONG_RUN (or all the data): a large write takes long runs
 * wherever they are before the runs of DATA_PIECE (fs/chain.c). */
enum data_zone { DATA_OUTSIDE, DATA_ANY, DATA_RUNS, DATA_PAIR_RUNS, DATA_LONG, DATA_LONG_PAIRS };
#define DATA_PIECE 256u      /* 1 MiB */
#define DATA_LONG_RUN 2048u  /* 8 MiB */
#define PACK_MAX 16u         /* 64 KiB: the most a packed placement takes */
#define PACK_BURST 8u        /* small files in a row from one directory: a burst */
/* Allocate up to want contiguous data blocks (*got of them): from goal
 * when that block is free (the file's previous block ends there), else
 * the first free run from goal (0: the chunk's hint) that holds them,
 * else the longest, where zone says. */
int alloc_data(struct chunk *c, uint32_t goal, uint32_t want, enum data_zone zone,
	       uint32_t *start, uint32_t *got);
/* Small files packed (fs_set_small_pack): want blocks (at most PACK_MAX)
 * of a file whose data starts here, in the directory dir (its stable
 * number; 0: not known) whose unit holding the file's inode is at block
 * near of c (0: not known), at c's packing cursor (a burst's: the
 * directory's region): -ENOSPC when packing is off or finds no region
 * (the caller places them as any data). */
int alloc_packed(struct chunk *c, uint32_t want, uint64_t dir, uint32_t near, uint32_t *start,
		 uint32_t *got);
/* Has c a free run of at least run blocks outside its zones? */
int chunk_has_run(struct chunk *c, uint32_t run);
/* Allocate want data blocks in one run outside the metadata zones, the
 * smallest free run that holds them (reallocation), or -ENOSPC. */
int alloc_data_run(struct chunk *c, uint32_t want, uint32_t *start);
/* Free blocks data may take from b on (outside the zones, in b's half),
 * counted up to want: 0 when b is busy. */
uint32_t chunk_free_after(struct chunk *c, uint32_t b, uint32_t want);
/* Allocate one metadata unit of units blocks with its mirror. */
int alloc_meta(struct chunk *c, uint32_t units, uint32_t *start);
void free_blocks(struct chunk *c, uint32_t start, uint32_t len);
void free_meta(struct chunk *c, uint32_t start, uint32_t units);
uint32_t chunk_free_blocks(const struct chunk *c);
/* The end of the lower half's metadata zone (where units are placed first). */
uint32_t chunk_meta_zone_end(const struct chunk *c);
/* Blocks freed so far wait for the transaction being written (freeze);
 * when it ends they are free (thaw, committed) or wait for the next. */
void chunk_freeze_frees(struct chunk *c);
void chunk_thaw_frees(struct chunk *c, int committed);

/* chunk.c: preallocation's blocks (fs/prealloc.c). avail: free blocks
 * less those reserved. pa_find: reserve the first run of want blocks free
 * outside the metadata zone from goal, else the longest such run (*got),
 * -ENOSPC when there is none. pa_take: the reserved blocks from start on
 * (at most want, while reserved) allocated: how many. pa_release: the
 * blocks of [start, start + len) still reserved released: how many. */
uint32_t chunk_avail_blocks(const struct chunk *c);
/* Has c's metadata zone want free pairs (a unit each)? Data leaves the
 * pairs promised to buffered data's units (v->da_units, or the zone's
 * reserve when more) to metadata. The allocation state loaded. */
int chunk_meta_room(struct chunk *c, uint64_t want);
/* The pairs of c's zones that data leaves free (for metadata units). */
uint32_t chunk_zone_reserve(const struct chunk *c);
int chunk_pa_find(struct chunk *c, uint32_t goal, uint32_t want, uint32_t *start, uint32_t *got);
uint32_t chunk_pa_take(struct chunk *c, uint32_t start, uint32_t want);
uint32_t chunk_pa_release(struct chunk *c, uint32_t start, uint32_t len);
/* The same reservation for an evacuation's copy (fs/evac_pre.c): up to
 * want blocks near goal where alloc_data would take them (the metadata
 * zone too once outside it is full), *got of them. */
int chunk_pa_reserve_data(struct chunk *c, uint32_t goal, uint32_t want, uint32_t *start,
			  uint32_t *got);
/* Delayed allocation's placement outside the lock (fs/dalloc_place.c):
 * hold: blocks [start, start + len) that the running operation allocated
 * (in the bitmap, not committed) held instead, in hold_map (busy as a
 * reservation is, but no reservation's: pa_release leaves them);
 * hold_take: as pa_take for held blocks, without moving the chunk's data
 * hint (the allocation that chose them moved it already); hold_release:
 * as pa_release for held blocks. */
void chunk_hold(struct chunk *c, uint32_t start, uint32_t len);
uint32_t chunk_hold_take(struct chunk *c, uint32_t start, uint32_t want);
uint32_t chunk_hold_release(struct chunk *c, uint32_t start, uint32_t len);

/* prealloc.c: per file reservations, keyed by stable number. take: data
 * for file blocks [lblk, lblk + want) of the file in chunk c from its
 * reservation (*start, *got: -ENOENT when it has none there); drop: the
 * file's reservation released (truncate, remove); give_back: the next
 * other file's reservation released for an allocation that found no room
 * (FS_PREALLOC_TRIM ones first, the oldest first; except's own last):
 * the blocks released (at least 1 when one ended), 0 when none is left; chunk_gone: c's reservations forgotten (its
 * allocation state unloaded); close: every reservation released. */
int prealloc_init(struct fs_volume *v);
void prealloc_destroy(struct fs_volume *v);
int prealloc_take(struct fs_volume *v, uint64_t stable, struct chunk *c, uint64_t lblk,
		  uint64_t want, uint32_t *start, uint32_t *got);
void prealloc_drop(struct fs_volume *v, uint64_t stable);
/* Does the file hold a reservation? */
int prealloc_held(struct fs_volume *v, uint64_t stable);
uint32_t prealloc_give_back(struct fs_volume *v, uint64_t except);
void prealloc_chunk_gone(struct chunk *c);
/* Every reservation given back (a name operation found no room): how many. */
uint32_t prealloc_give_back_all(struct fs_volume *v);
void prealloc_close(struct fs_volume *v);
/* A file made durable (fs_commit, a stable write): trimmed when flagged. */
void prealloc_committed(struct fs_volume *v, uint64_t stable);

/* offline_parts.c: the directory parts of an offline chunk. record: keep
 * the chunk's (a block that cannot be read is left out: walks through it
 * fail instead); 0 or -ENOMEM. ghost_part: the part the chunk held at loc,
 * as it was when the chunk went offline; -EIO when there is none. */
int chunk_record_ghosts(struct chunk *c);
int chunk_ghost_part(const struct chunk *c, struct od_loc loc, struct iref *out);
void chunk_free_ghosts(struct chunk *c);

/* map.c: stable number <-> location */
int map_alloc(struct chunk *home, struct od_loc loc, uint64_t *stable, uint32_t *gen);
int map_lookup(struct fs_volume *v, uint64_t stable, struct od_map_entry *e);
int map_set_loc(struct fs_volume *v, uint64_t stable, struct od_loc loc);
int map_free(struct fs_volume *v, uint64_t stable);
uint32_t map_free_count(struct chunk *c);
/* The chunk's free map indices below its watermark, pushed highest first
 * (so that the lowest is handed out first). 0 or a negative errno. */
int map_load_free(struct chunk *c, uint32_t **arr, uint32_t *n, uint32_t *cap,
		  int (*push)(uint32_t **, uint32_t *, uint32_t *, uint32_t));

/* inode.c */
int ino_read(struct fs_volume *v, struct od_loc loc, struct iref *out);
int ino_write(struct fs_volume *v, const struct iref *r);
int ino_get(struct fs_volume *v, struct fs_ino id, struct iref *out);
int ino_get_stable(struct fs_volume *v, uint64_t stable, struct iref *out);
/* A free inode-area slot of c (a chunk's first makes lost+found's part
 * there first); slot_take: the same without that, for the part itself. */
int slot_alloc(struct chunk *c, struct od_loc *loc);
int slot_take(struct chunk *c, struct od_loc *loc);
int slot_free(struct fs_volume *v, struct od_loc loc);
uint32_t slot_free_count(struct chunk *c);
void ino_touch(struct od_inode *ino, int a, int m, int c);
void ino_to_attr(const struct od_inode *ino, struct fs_attr *a);
/* The time now, as inodes store it. */
void fs_now(int64_t *sec, uint32_t *nsec);

/* extent.c */
/* The whole extent list of one inode (ext[] plus its overflow chain). */
struct extlist {
	struct od_extent *e;
	uint32_t n, cap;
};
int ext_load(struct fs_volume *v, const struct iref *r, struct extlist *out);
int ext_store(struct fs_volume *v, struct iref *r, const struct extlist *el);
struct ext_plan {
	uint32_t *units;
	uint32_t have, need;
};
int ext_prepare(struct fs_volume *v, const struct iref *r, const struct extlist *el,
		struct ext_plan *plan);
int ext_commit(struct fs_volume *v, struct iref *r, const struct extlist *el,
	       struct ext_plan *plan);
void ext_abort(struct fs_volume *v, const struct iref *r, struct ext_plan *plan);
void ext_release(struct extlist *el);

/* dir.c */
struct dirpos {
	struct od_loc unit;           /* chunk and first block of the unit */
	uint32_t off;                 /* entry offset in the unit */
	struct od_dirent de;
};
int dir_find(struct fs_volume *v, const struct iref *dir, const char *name, size_t len,
	     struct dirpos *pos);
/* The entry at off of unit: 0 with its name (FS_NAME_MAX + 1 bytes) and
 * *pos, or -ENOENT when it is free. */
int dir_entry_at(struct fs_volume *v, const struct od_loc *unit, uint32_t off, char *name,
		 struct dirpos *pos);
/* Does the entry at off of unit carry name? 0 and *pos, or -ENOENT. */
int dir_entry_matches(struct fs_volume *v, const struct od_loc *unit, uint32_t off,
		      const char *name, size_t len, struct dirpos *pos);
int dir_add(struct fs_volume *v, struct iref *dir, struct chunk *c, const char *name,
	    size_t len, uint64_t stable, const struct od_inode *embed, const void *inl,
	    uint32_t inl_len, struct dirpos *pos);
int dir_remove_entry(struct fs_volume *v, struct iref *dir, const struct dirpos *pos);
struct od_loc dir_embedded_loc(const struct dirpos *pos);
uint32_t dir_inline_max(const struct chunk *c, size_t name_len);
int dir_part_for(struct fs_volume *v, struct iref *dir, struct chunk *c, int create,
		 struct iref *part);
int dir_is_empty(struct fs_volume *v, const struct iref *dir);
int dir_free_all(struct fs_volume *v, struct iref *dir);
struct dir_walk_ent {
	struct dirpos pos;
	const char *name;
	uint32_t part;                /* ordinal of the part in the chain */
	uint32_t unit_seq;
};
typedef int (*dir_walk_fn)(struct fs_volume *v, void *ctx, const struct dir_walk_ent *e);
/* Every entry from from_cookie on, part after part. A part in an offline
 * chunk is stepped over (its continuation is known from when the chunk
 * went offline, offline.c) and *skipped set: its entries are not seen.
 * dir_walk: the same, but a walk that had to step over a part and did not
 * stop early fails with -EIO (its answer would be incomplete). */
int dir_walk_skipping(struct fs_volume *v, const struct iref *dir, uint64_t from_cookie,
		      dir_walk_fn fn, void *ctx, int *skipped);
int dir_walk(struct fs_volume *v, const struct iref *dir, uint64_t from_cookie, dir_walk_fn fn,
	     void *ctx);
uint64_t dir_cookie(uint32_t part, uint32_t unit_seq, uint32_t off);
/* Evacuation: every entry naming stable (DIR_ALL_ENTRIES: every entry) in
 * the units of the directory segment seg (a head or a part, its units in
 * its own chunk), fn called for each as dir_walk calls it (a non-zero
 * return stops); and an empty
 * directory part (lost+found's too) unlinked from its chain, its slot
 * freed (-ENOTEMPTY while it has units). */
#define DIR_ALL_ENTRIES UINT64_MAX /* (no number: its chunk would be OD_LOC_NONE) */
int dir_seg_entries_of(struct fs_volume *v, const struct iref *seg, uint64_t stable,
		       dir_walk_fn fn, void *ctx);
int dir_part_drop_empty(struct fs_volume *v, const struct iref *part);

int dir_read_inline(struct fs_volume *v, const struct iref *r, void *buf, uint32_t len);
/* The name of the entry embedding r's inode (name: FS_NAME_MAX + 1 bytes);
 * -ENOENT for an inode in a slot. _pos: and the entry's place (pos may be
 * NULL), read from r's unit: no lookup in the directory (so no name index
 * of it is built). */
int dir_embedded_name(struct fs_volume *v, const struct iref *r, char *name, size_t *len);
int dir_embedded_pos(struct fs_volume *v, const struct iref *r, char *name, size_t *len,
		     struct dirpos *pos);
int dir_set_inline(struct fs_volume *v, struct iref *r, const void *data, uint32_t len);
/* The directory (its stable number) whose unit embeds r's inode, read
 * from the unit's header; -ENOENT for an inode in a slot. */
int dir_embedded_owner(struct fs_volume *v, const struct iref *r, uint64_t *owner);

/* attr.c: permission checks; mask is a combination of 4 (r), 2 (w), 1 (x). */
int perm_check(const struct fs_cred *cred, const struct od_inode *ino, int mask);
/* The owner, group and set-id bits of a new object ino (its type and
 * requested mode in ino->mode) made by cred in dir, as Linux makes them:
 * the caller's uid and gid, or dir's gid when dir is setgid, where new
 * directories also become setgid and a file's S_ISGID (with group
 * execute) is dropped for a caller outside that group; mkdir keeps only
 * the permission and sticky bits asked for. */
void attr_init_owner(const struct fs_cred *cred, const struct od_inode *dir, struct od_inode *ino);
/* A write or a size change by anyone but root takes S_ISUID from a
 * regular file, and S_ISGID when group execute is set or the caller is
 * not in the file's group: Linux's file_remove_privs. */
void attr_kill_priv(const struct fs_cred *cred, struct od_inode *ino);
/* perm_check for a regular file's data, with the owner override. */
int data_perm_check(const struct fs_cred *cred, const struct od_inode *ino, int mask);
int dir_sticky_ok(const struct fs_cred *cred, const struct od_inode *dir,
		  const struct od_inode *victim);

/* dindex.c: in-memory name indexes of directories */
int dindex_init(struct fs_volume *v);
void dindex_destroy(struct fs_volume *v);
int dindex_find(struct fs_volume *v, const struct iref *dir, const char *name, size_t len,
		uint32_t hash, struct dirpos *pos);
void dindex_added(struct fs_volume *v, uint64_t dir, const struct dirpos *pos);
void dindex_removed(struct fs_volume *v, uint64_t dir, const struct dirpos *pos);
void dindex_drop(struct fs_volume *v, uint64_t dir);

/* file.c */
int file_truncate(struct fs_volume *v, struct iref *r, uint64_t size);
int file_release(struct fs_volume *v, struct iref *r);
int file_uninline(struct fs_volume *v, struct iref *r);
/* len bytes of data written from offset 0 into new blocks of r's chain
 * (r not inline, holding no block yet): what file_uninline does with the
 * bytes it took out of the entry. r (its extents, blocks) updated, not
 * written: the caller writes it; on failure nothing taken. */
int file_fill_new(struct fs_volume *v, struct iref *r, const uint8_t *data, uint32_t len);
int file_write(struct fs_volume *v, struct iref *r, uint64_t off, size_t len, const void *buf);
/* told: a reader in order's bytes (read_ahead.c), read told (store_pread_told). */
int file_read(struct fs_volume *v, const struct iref *r, uint64_t off, size_t len, void *buf,
	      int told);

/* file.c: delayed allocation's placement of n whole pages at file block
 * first, in one allocation; the size raised to end when below it. */
int file_place_run(struct fs_volume *v, struct iref *r, uint8_t *const *pages, uint64_t first,
		   uint32_t n, uint64_t end);

/* realloc.c: reallocation on sequential rewrite. candidate: is r worth
 * holding a rewrite from its start for (enabled, a regular file placed
 * in blocks, no hole, at least realloc_min_extents extents, no segment
 * in a chunk offline or draining)? rewrite: pages[0..n) are the whole
 * file's new blocks (n: its placed size in blocks); each segment in
 * pieces whose chunk has a run that long is written into it, the others
 * over their blocks, the extents stored and the old blocks freed, for
 * the next transaction: *done 1; *done 0 and nothing written when it
 * does not apply or no segment found a run (counted: the caller writes
 * in place). */
int realloc_candidate(struct fs_volume *v, const struct iref *r);
int realloc_rewrite(struct fs_volume *v, struct iref *r, uint8_t *const *pages, uint32_t n,
		    int *done);
/* realloc.c: reallocation at append (fs_set_realloc_append). pages[0..n)
 * are file blocks [first, first + n), with first at most the placed
 * blocks and first + n past them; end the size they bring. When it
 * applies, the file's blocks before first are read back and written with
 * the pages into one new run of its chunk, the extent stored with the
 * size raised to end and the old blocks freed, for the next transaction:
 * *done 1. *done 0 and nothing changed: the caller places the pages. */
int realloc_append(struct fs_volume *v, struct iref *r, uint8_t *const *pages, uint64_t first,
		   uint32_t n, uint64_t end, int *done);
void realloc_counters(struct fs_volume *v, struct fs_counters *out);

/* dalloc.c: delayed allocation, keyed by stable number. write: buffer
 * the bytes (-EAGAIN: not buffered, write them now: buffering is off or
 * the free blocks would not cover every buffered page with room to
 * spare); read: the file's bytes as clients see them (size from
 * dalloc_size); place: the file's pages to disk, then its size (0 when
 * nothing is buffered; failed: the buffer is kept to be tried again, and
 * given up, counted in fs_drop_count, only after failing for long enough,
 * with its chunk offline, at close, or when failing buffers fill the
 * cap); place_all: every file, DA_SYNC skipping those waiting out the
 * backoff of a failed placement, DA_FORCE trying them too, DA_LAST giving
 * up what fails (close); the first error is returned; offline: give up
 * the buffers of files whose chunk is offline; drop: forget the file's
 * buffer (its number is freed, or its size cut to 0); relieve (called
 * without the lock, one file per hold of it): place the oldest files
 * until the buffer is at half its cap, then give up failing buffers
 * while over it. vol_attr: a loaded
 * inode's attributes with its buffered size and blocks. */
#define DALLOC_DEFAULT_LIMIT (64ull << 20)
enum da_mode { DA_SYNC, DA_FORCE, DA_LAST };
enum da_gave_up { DA_GAVE_UP_TIME, DA_GAVE_UP_OFFLINE, DA_GAVE_UP_MEMORY, DA_GAVE_UP_CLOSE,
		  DA_GAVE_UP_N };
int dalloc_init(struct fs_volume *v);
void dalloc_destroy(struct fs_volume *v);
void dalloc_set_limit(struct fs_volume *v, uint64_t bytes);
int dalloc_write(struct fs_volume *v, const struct iref *r, uint64_t off, size_t len,
		 const void *buf);
int dalloc_read(struct fs_volume *v, const struct iref *r, uint64_t off, size_t len, void *buf,
		int told);
uint64_t dalloc_size(struct fs_volume *v, const struct iref *r);
int dalloc_has(struct fs_volume *v, uint64_t stable);
int dalloc_place(struct fs_volume *v, uint64_t stable);
/* As dalloc_place, for a caller that may leave the lock inside (fs_place,
 * fs_commit): a placement of it in flight is waited for, and a large one
 * writes its data outside the lock (fs/dalloc_place.c). */
int dalloc_place_wait(struct fs_volume *v, uint64_t stable);
int dalloc_place_all(struct fs_volume *v, enum da_mode mode);
void dalloc_offline(struct fs_volume *v);
void dalloc_set_give_up(struct fs_volume *v, uint32_t fails, int64_t ms);
/* Placement in slices, one file per hold of the volume lock, so that a
 * light call waits for one file's placement at most, not for all of
 * them: seq: the bound of a pass (files that arrive later are not its);
 * new_pass: a pass's stamp; step: under the lock, place the oldest file
 * before upto not tried in the pass and not waiting out a backoff (with
 * max_age_ms >= 0, only one that old or whose backoff has passed): 1, or
 * 0 when none is left (a large file's data written with the lock left
 * meanwhile: fs/dalloc_place.c; one another call is placing is skipped);
 * place_sliced: every such file, taking and leaving the lock per file
 * (called without it), then (wait) waits for those of the pass another
 * call was placing. */
uint64_t dalloc_seq(struct fs_volume *v);
uint64_t dalloc_new_pass(struct fs_volume *v);
int dalloc_step(struct fs_volume *v, uint64_t upto, uint64_t pass, int64_t max_age_ms,
		uint32_t *placed);
int dalloc_place_sliced(struct fs_volume *v, int64_t max_age_ms, int wait, uint32_t *placed);
/* What is buffered placed a file per lock hold and committed, called
 * without the lock: before a call that must place everything under one
 * hold (offline, drain), so that the hold has only what came meanwhile
 * (a failure here is met again there). A placement in flight is not
 * waited for. */
void dalloc_settle_unlocked(struct fs_volume *v);
void dalloc_drop(struct fs_volume *v, uint64_t stable);
int dalloc_over_limit(struct fs_volume *v);
/* Is anything buffered while the free blocks, less blocks about to be
 * written, no longer keep dalloc_room_for's margin? Then it is placed before
 * more data is written, while the blocks it was promised are there. */
int dalloc_tight(struct fs_volume *v, uint64_t blocks);
/* dalloc_room.c: set while this thread places buffered data: its extent
 * units may take the pairs promised to it (v->da_units). */
extern __thread int dalloc_placing;
/* (called without the lock) */
void dalloc_relieve(struct fs_volume *v);
/* Set the size of a buffered file to size, at least its buffered size:
 * -ENOENT when nothing of it is buffered. */
int dalloc_extend(struct fs_volume *v, uint64_t stable, uint64_t size);
/* dalloc_room.c: blocks promised to buffered data, not free to promise
 * again (FSSTAT): its pages not held yet, and the pairs of the extent
 * units its placement may need. */
uint64_t dalloc_promised_blocks(struct fs_volume *v);
/* May an allocation other than a placement of buffered data take blocks
 * more? Only while the blocks that data may take keep room for the
 * buffered pages not held yet (a placement may take any). */
int dalloc_may_take(struct fs_volume *v, uint64_t blocks);
void dalloc_counters(struct fs_volume *v, struct fs_counters *out);
void vol_attr(struct fs_volume *v, const struct od_inode *ino, struct fs_attr *a);

/* dir_fill.c: a regular file made in dir, a directory made (its first
 * files a burst); is dir being filled (a run of DIR_FILL_BURST creates)?
 * Its record (NULL: none). All under the volume lock. */
void dir_fill_create(struct fs_volume *v, uint64_t dir);
void dir_fill_mkdir(struct fs_volume *v, uint64_t dir);
int dir_fill_busy(struct fs_volume *v, uint64_t dir);
struct dir_fill *dir_fill_find(struct fs_volume *v, uint64_t dir);

/* namei.c */
int name_check(const char *name, size_t *len);

/* vol_predict.c: the volume's predictor made and freed; a file observed as
 * it is made durable; the kind of chunk a new file of this name, owner
 * and mode goes to (table_kind, the name table's, while it cannot say). */
int vol_pred_new(struct fs_volume *v);
void vol_pred_free(struct fs_volume *v);
void vol_pred_observe(struct fs_volume *v, const struct iref *r);
int vol_pred_kind(struct fs_volume *v, const char *name, size_t len, uint32_t uid, uint32_t mode,
		  int table_kind);
/* A regular file's last link, name, went: its lifetime (from its ctime:
 * the inode keeps no birth time) is learned. Anything else: nothing. */
void vol_pred_removed(struct fs_volume *v, const struct od_inode *ino, const char *name,
		      size_t len);
/* foster_tab.c: chunk 0's foster records (v->fost). vol_fosters_load:
 * read from chunk 0's header and table (0, or -EUCLEAN and why[] when the
 * table is not whole). ftab_room: the table unit the next record goes in
 * made now, empty, when it does not exist yet (0, -ENOSPC, -ENOMEM);
 * ftab_append: rec appended after ftab_room; ftab_put: record r of
 * v->fost, changed, staged where it lives (the header or its table unit).
 * All in the caller's transaction. */
int vol_fosters_load(struct fs_volume *v, char *why, size_t n);
/* A table not whole at open (vol_fosters_load's -EUCLEAN, fwhy why): the
 * records it lacks taken from the online chunks' headers
 * (od_fosters_recover); all of them found on a read-write open
 * (ftab_complete): the table made again (ftab_rebuild, v->ftab_rebuilt),
 * else the volume made read-only (v->ftab_lost); a sentence appended to
 * why[]. 0 or -ENOMEM. */
int vol_fosters_degraded(struct fs_volume *v, const char *fwhy, char *why, size_t whylen);
int ftab_room(struct fs_volume *v);
int ftab_append(struct fs_volume *v, const struct od_foster *rec);
int ftab_put(struct fs_volume *v, uint32_t r);
/* ftab_unit_index: the index in the chain of the table unit at block of
 * chunk 0, or -1. ftab_rewrite: that unit written again, whole, from the
 * list in memory (the scrub found both its copies bad): 0, -ENOENT. */
int ftab_unit_index(const struct fs_volume *v, uint32_t block);
int ftab_rewrite(struct fs_volume *v, uint32_t block);

/* ftab_rebuild.c: chunk 0's table lost at a read-write open.
 * ftab_complete: are the records found again (v->fost, nlost homes lost)
 * all of them, every chunk online, so that the table may be made from
 * them? ftab_rebuild: the
 * table made again from v->fost (the old chain's blocks first, then free
 * metadata pairs, the rest freed), chunk 0's header with it, the chunks
 * the records name retired taken out of service, committed (vol_sync);
 * v->ftab_rebuilt and what was done in msg[]. 0 or a negative errno. */
int ftab_complete(const struct fs_volume *v, uint32_t nlost);
int ftab_rebuild(struct fs_volume *v, char *msg, size_t len);

/* vol_pred_store.c: the table read from chunk 0 at open (a damaged chain
 * drops it, counted; only -ENOMEM fails); staged into the transaction
 * being prepared when due (PRED_SAVE_MIN changes and PRED_SAVE_INTERVAL
 * seconds since the last, or closing with any change): its units in
 * chunk 0 rewritten, pred_start and the ro_compat bit set. No room for
 * the units: the save waits for a later one (counted), the sync goes on. */
int vol_pred_load(struct fs_volume *v);
void vol_pred_save(struct fs_volume *v, int closing);
/* The chain's blocks in chunk 0 as this session knows them (*units), and
 * how many (0: none). */
uint32_t vol_pred_units(struct fs_volume *v, const uint32_t **units);
/* Both copies of the chain's unit at block are bad (the scrub found it):
 * the table in memory is whole, so the next transaction writes the whole
 * chain again (a table holding nothing, dropped at open, gives the chain
 * up: its blocks freed, pred_start 0). -ENOENT: not a unit of the chain as
 * this session knows it (fsck's to mend). */
int vol_pred_damaged(struct fs_volume *v, uint32_t block);

/* evac_pre.c: blocks [start, start + len) of chunk were written or freed
 * (the volume locked): a pending evacuation copy of any of them is spoilt. */
void evac_pre_hit(struct fs_volume *v, uint32_t chunk, uint32_t start, uint32_t len);
/* evac_pre.c: c's unit at block taken into the cache (the volume locked):
 * a read of it made outside the lock for the pending step may be stale. */
void evac_pre_unit_hit(struct fs_volume *v, struct chunk *c, uint32_t block);

/* pin.c: a chunk pinned (the volume locked) keeps its store until unpinned
 * (from any thread). chunk_wait_unpinned, called and returning with the
 * volume locked, waits with the lock released until no pin is left (a
 * reopen, a retirement: their chunk is offline, so nothing pins it anew),
 * then holds the lock with none left. vol_reuse_gen moves
 * (vol_blocks_reusable) when freed blocks may be allocated again. */
void chunk_pin(struct chunk *c);
void chunk_unpin(struct chunk *c);
void chunk_wait_unpinned(struct chunk *c);
void vol_blocks_reusable(struct fs_volume *v);
uint64_t vol_reuse_gen(const struct fs_volume *v);

/* read_ahead.c: a read of [off, off + len) of the file numbered stable,
 * size bytes long, was planned (the volume locked). 1 when the file is
 * read in order (or this read begins it near its start and leaves some of
 * it), else 0. With wlen, the range to tell its stores ahead in *start,
 * *wlen (wlen 0: none, the range told so far reaching far enough); a
 * caller that cannot tell (a nowait read) passes NULL and only has the
 * read noted. */
int file_ra_window(struct fs_volume *v, uint64_t stable, uint64_t off, size_t len, uint64_t size,
		   uint64_t *start, size_t *wlen);
/* 1 when the reader of the file numbered stable (size bytes) is due to
 * tell its stores the range ahead: the next read that can tell should. */
int file_ra_due(struct fs_volume *v, uint64_t stable, uint64_t size);

/* read_unlocked.c: read file bytes [off, off + len) of r (not inline): the
 * blocks are found under the volume lock, which this releases for the
 * reads themselves. Returns with the lock released: 0, a negative errno,
 * or -ESTALE when blocks may have been reused meanwhile (read again,
 * locked). */
int file_read_unlocked(struct fs_volume *v, const struct iref *r, uint64_t off, size_t len,
		       void *buf);

/* nowait.c: inside fs_nowait_begin/end on this thread, vol_nowait(v) is
 * true: the lock is held already, and what would wait returns
 * vol_would_wait() (-EAGAIN, remembered for fs_nowait_end) instead. */
extern __thread struct fs_volume *vol_nowait_owner;
static inline int vol_nowait(const struct fs_volume *v)
{
	return vol_nowait_owner == v;
}
int vol_would_wait(void);

/* vol_lock.c: the volume lock; bulk threads give way to light ones. Each
 * hold is timed, under the name of the function that took the lock. */
void vol_lock_init(struct fs_volume *v);
void vol_lock_destroy(struct fs_volume *v);
void vol_lock_at(struct fs_volume *v, const char *site);
#define vol_lock(v) vol_lock_at((v), __func__)
void vol_unlock(struct fs_volume *v);
/* The holds of a piece of work (an evacuation's step) also counted apart:
 * every hold this thread lets go of until vol_hold_rec is called again
 * goes into r too (NULL: none); the record before is returned. */
struct hold_rec *vol_hold_rec(struct hold_rec *r);
/* The lock just taken (by site): its hold starts now. */
void vol_lock_held(struct fs_volume *v, const char *site);
/* The hold ends now: counted (before the lock is let go). */
void vol_lock_releasing(struct fs_volume *v);

/* volume.c */
int vol_flush(struct fs_volume *v);
/* Write every change out and make it durable (the volume lock held). */
int vol_sync(struct fs_volume *v, int closing);
/* The same without the lock held: only the transaction's prepare and
 * finish take it, operations go on while it is written (fs_sync's way). */
int vol_sync_unlocked(struct fs_volume *v);
/* After -ENOSPC: 1 if committing made freed blocks available, or
 * reservations were given back (retry). */
int vol_enospc_retry(struct fs_volume *v);
struct chunk *vol_pick_chunk(struct fs_volume *v, struct chunk *prefer, int kind_hint,
			     int need_inode, const uint8_t *exclude);
/* A chunk other than except with data room outside its metadata zone. */
struct chunk *vol_pick_data_chunk(struct fs_volume *v, struct chunk *except);
/* The same among chunks with a free run of at least run blocks
 * (chunk_has_run; first fit: any chunk with room):
 * where a file continues rather than be cut into its chunk's holes. */
struct chunk *vol_pick_run_chunk(struct fs_volume *v, struct chunk *except, uint32_t run);
/* The continuation policy's chunk: the large-file chunk (online, not
 * draining) with the most free blocks outside its zone, when that is at
 * least want (or all the volume's large_continue_blocks, whichever is
 * less); NULL: none. */
struct chunk *vol_pick_large_chunk(struct fs_volume *v, uint64_t want);
/* Room for a directory unit (and a map entry when need_inode). */
int vol_chunk_has_room(struct chunk *c, int need_inode);
/* The header at base of st (od_header_read with any index: the newer
 * valid copy; *healed 0, or 1/2: copy 0/1 needs rewriting). 0, or
 * -EUCLEAN when neither is valid. */
int vol_read_header(struct chunk_store *st, uint64_t base, uint32_t guess_nblocks,
		    struct od_chunk_header *h, int *healed);
/* vol_spread.c: the chunk's load (the larger of its used inode and block
 * fractions, in 1/65536); whether c's load is above the average of the
 * chunks best suiting kind_hint by a margin; the least loaded of those
 * with room for an inode (exclude[] skipped when given; prefer instead
 * when it is one of them and within 1/64 of that load), NULL: none. */
uint32_t vol_chunk_load(const struct chunk *c);
int vol_chunk_crowded(struct fs_volume *v, struct chunk *c, int kind_hint);
struct chunk *vol_pick_spread(struct fs_volume *v, struct chunk *prefer, int kind_hint,
			      const uint8_t *exclude);

/* volume.c: the header a retired chunk's entry carries (it is never read):
 * chunk 0's volume, index i, nblocks blocks, draining and fostered, nothing
 * free, nothing in use. */
void vol_retired_header(const struct od_chunk_header *h0, uint32_t i, uint32_t nblocks,
			struct od_chunk_header *h);

/* grow.c: the chunks from count on are no longer part of the volume (a
 * chunk added whose count did not commit): their stores closed, their
 * entries cleared. */
void vol_drop_chunks_from(struct fs_volume *v, uint32_t count);

/* place.c: the store of a chunk placed outside the image, by its name (an
 * NBD URI or a path). Read-write unless rdonly: an NBD export that is read-
 * only or offers no flush is refused then. why[] says why on failure. */
int vol_place_open(const char *name, int rdonly, struct chunk_store **out, char *why,
		   size_t whylen);

/* vol_chunk_lock.c: the volume's OFD lock on each chunk's range of the
 * image (chunk_lock.h), write lock, or read lock for FS_OPEN_RDONLY.
 * vol_chunk_lock_open: at open, before anything is written (-EBUSY and
 * why[] when another process holds it). vol_chunk_release: drop chunk i's
 * lock, so that the nbdkit plugin or fsck.chunkfs may open it; the caller
 * (the offline state machine, volume lock held) has made sure nothing of
 * the chunk is in flight or dirty. vol_chunk_reacquire: take it again
 * before the chunk comes back online (-EBUSY while someone else holds it;
 * why[] says so when given). Both return 0 and do nothing when the lock
 * is already in that state, and on volumes opened from stores, which hold
 * no locks (their stores are the caller's). */
int vol_chunk_lock_open(struct fs_volume *v, struct chunk *c, char *why, size_t whylen);
int vol_chunk_release(struct fs_volume *v, uint32_t i);
int vol_chunk_reacquire(struct fs_volume *v, uint32_t i, char *why, size_t whylen);

/* shorten.c: the image cut after its last chunk not retired, when the
 * chunks past it are retired on both copies of chunk 0's header and
 * nobody else holds their range: 1 cut (v->image_cut counts the bytes),
 * 0 nothing to do (or not safe now), or a negative errno. */
int vol_shorten_image(struct fs_volume *v);
/* volume.c: the same, its failure kept in v->image_cut_err. */
void vol_try_shorten(struct fs_volume *v);

#endif
