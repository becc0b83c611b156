/* The public API of the chunkfs library: a POSIX-shaped filesystem over a
 * chunked volume, used by chunkfsd, fsck.chunkfs and the tools. Every object
 * is named by its stable inode number and generation (struct fs_ino), never
 * by where its inode happens to live. No NFS types appear here.
 *
 * Every function returns 0 or a negative errno. Functions that take a
 * struct fs_cred check permissions for it; a NULL cred means "the
 * filesystem itself" (mkfs -d, fsck): no permission checks. */
#ifndef CHUNKFS_FS_H
#define CHUNKFS_FS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define FS_NAME_MAX 255
#define FS_SYMLINK_MAX 4095
#define FS_MAX_GROUPS 16
/* A readdir cookie or verifier the directory no longer honours (Linux's
 * internal EBADCOOKIE; userspace has no name for it). */
#define FS_EBADCOOKIE 523

struct fs_volume;

/* A stable identity: what NFS file handles and fileids are built on. */
struct fs_ino {
	uint64_t num;
	uint32_t gen;
};

struct fs_cred {
	uint32_t uid;
	uint32_t gid;
	uint32_t ngroups;
	uint32_t groups[FS_MAX_GROUPS];
	uint32_t flags;            /* FS_CRED_* */
};
/* A regular file's owner may read, write and truncate it whatever its
 * mode, as NFS servers allow: a client that creates a file read-only
 * (cp of a 0444 file) still writes its data. */
#define FS_CRED_OWNER_OVERRIDE 0x1u

struct fs_attr {
	uint32_t mode; /* S_IFMT type bits | permission bits */
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint64_t size;
	uint64_t used; /* bytes of storage held (blocks, inline data) */
	uint32_t rdev_major;
	uint32_t rdev_minor;
	uint64_t fileid; /* == the stable inode number */
	uint32_t gen;
	struct timespec atime;
	struct timespec mtime;
	struct timespec ctime;
};

/* fs_setattr: which fields of struct fs_setattr apply. */
#define FS_SET_MODE (1u << 0)
#define FS_SET_UID (1u << 1)
#define FS_SET_GID (1u << 2)
#define FS_SET_SIZE (1u << 3)
#define FS_SET_ATIME (1u << 4)     /* to .atime */
#define FS_SET_MTIME (1u << 5)     /* to .mtime */
#define FS_SET_ATIME_NOW (1u << 6) /* to the server's clock */
#define FS_SET_MTIME_NOW (1u << 7)

struct fs_setattr {
	uint32_t valid;
	uint32_t mode; /* permission bits only (07777) */
	uint32_t uid;
	uint32_t gid;
	uint64_t size;
	struct timespec atime;
	struct timespec mtime;
};

/* fs_create: how an existing name is treated (NFSv3's createmode3). */
enum fs_create_how {
	FS_CREATE_UNCHECKED = 0, /* existing regular file: open it (size untouched) */
	FS_CREATE_GUARDED = 1,   /* existing name: -EEXIST */
	FS_CREATE_EXCLUSIVE = 2, /* existing file with the same verifier: success */
};

/* fs_write: when the data must be durable. */
enum fs_stable_how {
	FS_UNSTABLE = 0,  /* durable at fs_commit() */
	FS_DATA_SYNC = 1, /* data and the metadata needed to read it, before return */
	FS_FILE_SYNC = 2, /* data and all metadata, before return */
};

/* fs_access: bits asked for and granted (NFSv3 ACCESS3_* values). */
#define FS_ACCESS_READ 0x01
#define FS_ACCESS_LOOKUP 0x02
#define FS_ACCESS_MODIFY 0x04
#define FS_ACCESS_EXTEND 0x08
#define FS_ACCESS_DELETE 0x10
#define FS_ACCESS_EXECUTE 0x20

/* Chunk kinds: where allocation places files by their expected size. */
enum fs_chunk_kind {
	FS_KIND_GENERAL = 0,
	FS_KIND_SMALL = 1,
	FS_KIND_LARGE = 2,
};

struct fs_mkfs_opts {
	uint64_t chunk_size;       /* bytes, power of two, 1 MiB .. 16 GiB; 0: 1 GiB */
	uint32_t chunk_count;      /* 0: from total_size */
	uint64_t total_size;       /* bytes; used when chunk_count == 0 */
	uint32_t bytes_per_inode;  /* inode density; 0: 16 KiB */
	enum fs_chunk_kind kind;   /* the kind of every chunk ... */
	const enum fs_chunk_kind *kinds; /* ... unless this gives one per chunk */
	const char *label;         /* up to 31 bytes; NULL: none */
	int force;                 /* overwrite a known filesystem signature */
	int single_copy;           /* benchmark only: metadata without its mirror */
	int preallocate;           /* a file image: write every byte now, so that no
	                            * commit later waits for the host file system
	                            * to allocate (or finds it full) */
};

#define FS_OPEN_RDONLY 0x1

struct fs_statfs {
	uint64_t block_size;
	uint64_t total_blocks;
	uint64_t free_blocks;
	uint64_t total_inodes;
	uint64_t free_inodes;
	uint32_t chunk_count;
	uint32_t chunks_online;
};

/* One directory entry as readdir reports it. attr and ino are filled for
 * fs_readdir(plus=1) only. Returning nonzero from the callback stops the
 * listing after this entry without error (the caller's buffer is full); the
 * entry it returned nonzero for is not consumed. */
struct fs_dirent {
	const char *name;
	size_t name_len;
	uint64_t fileid;
	uint64_t cookie; /* pass back to resume after this entry */
	struct fs_ino ino;
	struct fs_attr attr;
};
typedef int (*fs_readdir_fn)(void *ctx, const struct fs_dirent *ent);

/* What recovery at open did (txn.c). */
struct fs_recovery_stats {
	uint64_t newest_txid;   /* the last transaction found in a dirty list */
	int committed;          /* it had committed (rolled forward), or not (back) */
	uint32_t lists_read;
	uint32_t units_copied;  /* metadata copies rewritten */
	uint32_t damaged;       /* units whose surviving copy failed its checksum */
	uint32_t healed;        /* committed units taken from their second copy */
	int marked;             /* a second copy carried the newest transaction */
};

/* Health counters of an open volume. */
struct fs_counters {
	uint64_t txid;               /* last committed transaction */
	uint64_t healed;             /* reads that found one bad copy and rewrote it */
	uint64_t unreadable;         /* reads that found both copies bad */
	uint32_t chunks_needing_repair;
	uint64_t txns;               /* transactions committed since open */
	uint64_t txns_one_flush;     /* ... of those, lists and first copies behind one flush */
	uint64_t txn_flushes;        /* flushes those took */
	uint64_t held_named;         /* units their lists named without writing them */
	uint64_t dalloc_bytes;       /* UNSTABLE data buffered, not placed yet */
	uint32_t dalloc_files;       /* ... in that many files */
	uint64_t dalloc_placed;      /* files whose buffer was placed since open */
	uint64_t dalloc_failures;    /* placements that failed (the buffer kept or given up) */
	uint64_t dalloc_retried;     /* files placed after failing */
	uint32_t dalloc_failing;     /* files buffered now whose last placement failed */
	uint64_t dalloc_gave_up_time;    /* buffers given up: failing for too long */
	uint64_t dalloc_gave_up_offline; /* ... the file's chunk offline */
	uint64_t dalloc_gave_up_memory;  /* ... failing buffers over the cap */
	uint64_t dalloc_gave_up_close;   /* ... failing at close */
	uint64_t dalloc_hold_max_us;     /* the longest placement under one lock hold */
	uint64_t dalloc_holds_over_10ms; /* placements under one lock hold over 10 ms */
	uint64_t dalloc_unlocked;        /* placements whose data was written outside the lock */
	uint64_t dalloc_unlocked_blocks; /* ... blocks so */
	uint64_t dalloc_unlocked_redone; /* ... placed again under it (the file changed meanwhile) */
	uint64_t dalloc_unlocked_stops;  /* ... stopped to give way to a chunk's pin waiter */
	uint64_t large_continues;    /* continuations the continuation policy made
				      * (fs_set_large_continue) since open */
	/* The volume lock since open: holds, the longest (and the function
	 * that took the lock for it), holds over 1 ms and over 10 ms. */
	uint64_t lock_holds;
	uint64_t lock_hold_max_us;
	char lock_hold_max_site[48];
	uint64_t lock_holds_over_1ms, lock_holds_over_10ms;
	uint32_t realloc_min_extents; /* reallocation on rewrite: files with this many
				       * extents or more (0: off; fs_set_realloc) */
	uint64_t reallocs;           /* files rewritten whole into new runs since open */
	uint64_t realloc_blocks;     /* ... blocks written into those runs */
	uint64_t realloc_no_run;     /* whole rewrites written in place: no run was free */
	uint32_t readahead;          /* read-ahead distance, bytes (fs_set_readahead) */
	uint64_t ra_hints;           /* pieces told to stores ahead of readers in order */
	uint64_t ra_hint_bytes;      /* ... their bytes */
	uint64_t realloc_append_max; /* reallocation at append: files of at most this
				      * many bytes (0: off; fs_set_realloc_append) */
	uint64_t append_moves;       /* small files moved whole with their append into one
				      * run since open */
	uint64_t append_move_blocks; /* ... blocks written into those runs */
	int alloc_first_fit;         /* fs_set_alloc_policy: FS_ALLOC_FIRST_FIT */
	uint64_t small_pack;         /* small files packed: a region's size, bytes
				      * (0: off; fs_set_small_pack) */
	uint64_t small_packs;        /* placements packed at a chunk's cursor since open */
	uint64_t pack_regions;       /* ... regions taken for them */
	struct fs_recovery_stats recovery;
	uint64_t image_cut;          /* bytes the image file was shortened by since open:
				      * retired chunks at its end (fs/shorten.c) */
	int image_cut_err;           /* the last failed try's negative errno, 0 */
	int read_only;               /* the volume serves reads only (FS_OPEN_RDONLY, or
				      * ftab_lost) */
	int ftab_lost;               /* chunk 0's foster table was not whole at open: its
				      * records found again elsewhere, read-only until
				      * fsck makes it again */
	int ftab_rebuilt;            /* chunk 0's foster table was not whole at open, every
				      * record was found again, and the open made it again
				      * (read-write) */
	uint64_t store_reads;        /* reads the chunks' stores answered since they were
				      * opened (metadata and data), and their bytes */
	uint64_t store_read_bytes;
};

/* volume.c */
int fs_get_counters(struct fs_volume *vol, struct fs_counters *out);
int fs_mkfs(const char *path, const struct fs_mkfs_opts *opts);
int fs_open(const char *path, int flags, struct fs_volume **out);
/* fs_open, and on failure a sentence saying what is wrong in why[]. */
int fs_open_ex(const char *path, int flags, struct fs_volume **out, char *why, size_t whylen);
/* fs_open_ex, with chunks placed outside the image: places[i] (i < nplaces),
 * when neither NULL nor "", names chunk i's own store, a path (a file or
 * block device holding that chunk alone) or an NBD URI; the image's region
 * for it is then not used. Each placed chunk's header must be this
 * volume's, with its index and the size of the image's copy; a chunk whose
 * store is another chunk, another volume's, or cannot be reached (or, over
 * NBD read-write, offers no flush) is offline with the reason in why[] and
 * in fs_chunk_info, and the rest serves. Chunk 0 cannot be placed
 * (-EINVAL). */
int fs_open_placed(const char *path, const char *const *places, uint32_t nplaces, int flags,
		   struct fs_volume **out, char *why, size_t whylen);
/* How long a chunk's NBD server may take to connect or to answer one
 * request, in milliseconds, for every volume of the process (10 s until
 * set): past it the store is lost, and so it is when the connection closes
 * with writes not yet flushed or cannot be made again (store_nbd.h). */
void fs_set_store_timeout(int ms);
/* The NBD stores opened from now on: at most conns connections each when
 * the server offers multi-conn (1-16, 4 until set; -EINVAL else, nothing
 * changed for the pool) and a read-ahead cache of readahead bytes each (0:
 * none, until set). */
int fs_set_store_pool(int conns, size_t readahead);
/* The bound of the metadata block cache (default 256 MiB). */
void fs_set_cache_limit(struct fs_volume *vol, uint64_t bytes);
int fs_close(struct fs_volume *vol);
/* Commit every change made so far: 0 once durable. Buffered data
 * (delayed allocation) is placed first; a file whose placement fails
 * stays buffered to be tried again and does not fail this sync (its
 * fs_place or fs_commit reports it; see fs_place). When it fails because
 * a chunk's store lost its server, that chunk is taken offline with its
 * uncommitted changes (fs_offline_lost_stores) and the other chunks'
 * changes are committed, but the error is still returned: what the caller
 * wanted durable may have been in the lost chunk. */
int fs_sync(struct fs_volume *vol);
int fs_root(struct fs_volume *vol, struct fs_ino *out);
int fs_statfs(struct fs_volume *vol, struct fs_statfs *out);
/* The 16-byte volume UUID and the 32-byte per-volume handle secret. */
void fs_volume_uuid(struct fs_volume *vol, uint8_t uuid[16]);
void fs_volume_secret(struct fs_volume *vol, uint8_t secret[32]);

/* volume.c: the continuation policy (the seed's small-file and large-file
 * chunks): a file whose last segment is in a small-file or general chunk
 * continues in a large-file chunk once it grows past bytes (a new
 * continuation from that block on), when a large-file chunk has room
 * outside its metadata zone. FS_LARGE_CONTINUE_DEFAULT until set; 0: off.
 * Rounded down to whole blocks. */
#define FS_LARGE_CONTINUE_DEFAULT (1ull << 20)
void fs_set_large_continue(struct fs_volume *vol, uint64_t bytes);

/* realloc.c: reallocation on sequential rewrite (BSD FFS). A file with
 * at least min_extents extents (FS_REALLOC_DEFAULT_EXTENTS until set; 0:
 * off) that is rewritten FS_UNSTABLE from its first byte on, in order,
 * (a write may start up to 16 MiB past the pages received in a row from
 * the start; one further on ends the rewrite, which then goes in place)
 * has the rewrite held by delayed allocation; placed whole, each of its
 * segments in pieces is written into one new run of its chunk (the
 * smallest free one that holds it, outside the metadata zones) and its
 * old blocks are freed, in the transaction that commits the data. No run:
 * written in place, as without it. */
#define FS_REALLOC_DEFAULT_EXTENTS 3u
void fs_set_realloc(struct fs_volume *vol, uint32_t min_extents);

/* read_ahead.c: read-ahead by a file's own offsets. Of a file read in
 * order (each read beginning within 4 MiB of where the last one ended: a
 * client's reads in flight arrive out of order), the next `bytes` are
 * looked at half a distance at a time, and the pieces there that do not
 * follow on from the file's bytes before them in their store are told to
 * it (store_willneed: a file store's page cache fetches them meanwhile).
 * The kernel's read-ahead of an image goes by the image's offsets, and
 * large reads go past it anyway (store_file.c): where a file's extent
 * ends, its next one is found cold. 0: none. FS_READAHEAD_DEFAULT at
 * open. */
#define FS_READAHEAD_DEFAULT (16u << 20)
void fs_set_readahead(struct fs_volume *vol, uint32_t bytes);

/* Reallocation at append (realloc.c, FFS's reallocation applied to
 * appends): a file in one segment with no hole, whose buffered append
 * does not fit in the free blocks after its last extent, and which with
 * the append holds at most bytes (FS_REALLOC_APPEND_DEFAULT until set;
 * 0: off; whole blocks), is written whole (its old blocks read back, then
 * the append) into one new run of its chunk at its placement, and its
 * old blocks are freed in the same transaction. Not when the file holds
 * a reservation (fs/prealloc.c), nor under FS_ALLOC_FIRST_FIT. */
#define FS_REALLOC_APPEND_DEFAULT (1ull << 20)
void fs_set_realloc_append(struct fs_volume *vol, uint64_t bytes);

/* chunk.c, chain.c, realloc.c: how data finds blocks. FS_ALLOC_RUNS (the
 * default): a free run that holds the write (or 1 MiB of it; 8 MiB first
 * for a longer write) before any hole, another chunk's run before this
 * one's holes, a small file moved with its append
 * (fs_set_realloc_append); FS_ALLOC_FIRST_FIT: the first free blocks from the
 * file's goal, whatever their length (the allocation before issue 24),
 * for comparison. Reallocation on rewrite is set apart (fs_set_realloc). */
enum fs_alloc_policy { FS_ALLOC_RUNS, FS_ALLOC_FIRST_FIT };
void fs_set_alloc_policy(struct fs_volume *vol, enum fs_alloc_policy policy);

/* chunk.c: small files packed (with FS_ALLOC_RUNS). A new file's first
 * placement of at most 64 KiB goes to its chunk's cursor: the next free
 * blocks of the region the small files placed before it took. A region is
 * a window of bytes (whole blocks; FS_SMALL_PACK_DEFAULT until set) with
 * a quarter of it free in holes, or a free run of at least bytes. A
 * burst (a directory being filled: 4 creates in a row there, or made
 * just before its first; or 8 small files in a row from one directory)
 * has a cursor of its own, in a run: outside the metadata zones, else of
 * their free pairs while half stay free; a directory's next burst goes on
 * in its region. With no region, the first free run from the chunk's
 * hint, as before. 0: off;
 * else at least 64 KiB (-EINVAL). In memory only; not under first fit. */
#define FS_SMALL_PACK_DEFAULT (1ull << 20)
int fs_set_small_pack(struct fs_volume *vol, uint64_t bytes);

/* dalloc.c: delayed allocation. Data written FS_UNSTABLE waits in memory
 * without blocks until it must reach the disk: fs_commit of the file, a
 * stable write to it, fs_sync, fs_close, a rename or link of it, a chunk going
 * offline, the byte cap (the oldest files first), fs_place_old. Then each
 * run of its buffered pages is placed in one allocation. Every call sees
 * the buffered data (reads, sizes, truncates). A crash loses what was
 * not placed and committed (NFS's rule for UNSTABLE data). */
/* The cap on buffered bytes per volume (64 MiB until set); 0: writes are
 * placed at once, as without delayed allocation. */
void fs_set_dalloc_limit(struct fs_volume *vol, uint64_t bytes);
/* Place the file's buffered data (durable at the next sync): 0, or the
 * error of the placement (-EIO, -ENOSPC, ...), tried now even when an
 * earlier one failed. A placement that fails keeps the buffer (the file
 * as it was before on disk) to be tried again: by fs_sync and
 * fs_place_old once a backoff has passed (250 ms, doubled per failure up
 * to 4 s), or by the next call that needs the file (fs_place, fs_commit,
 * a stable write, a rename, a link), which returns the error if it fails
 * again. fs_sync does not fail for it. The buffer is given up, and
 * fs_drop_count moves, only when the file's placement has failed `fails`
 * times over at least `ms` (fs_set_dalloc_give_up; 4 and 30 s until
 * set), when its chunk is offline, when failing buffers hold more than
 * the cap, or at fs_close; fs_counters counts each. */
int fs_place(struct fs_volume *vol, struct fs_ino ino);
void fs_set_dalloc_give_up(struct fs_volume *vol, uint32_t fails, unsigned ms);
/* For tests: fn(arg) runs in each placement whose data is written outside
 * the volume lock (fs_place, fs_commit of a file of 1 MiB or more
 * buffered), after the data was written and before the lock is taken
 * again to store the extents (NULL: none). */
void fs_dalloc_set_written_hook(struct fs_volume *vol, void (*fn)(void *arg), void *arg);
/* For tests: fn(arg) runs after each 1 MiB write of a placement whose data
 * is written outside the volume lock (its chunks pinned, the lock free;
 * NULL: none). */
void fs_dalloc_set_window_hook(struct fs_volume *vol, void (*fn)(void *arg), void *arg);
/* For tests: the nth inode write from now on (1: the next; 0: none) fails
 * with err (a negative errno), once. */
void fs_fault_ino_write(struct fs_volume *vol, unsigned nth, int err);
/* Place every file whose oldest buffered byte is max_age_ms old or more,
 * and commit them: the number of files placed, or a negative errno. */
int fs_place_old(struct fs_volume *vol, unsigned max_age_ms);

/* prealloc.c: preallocation. fs_prealloc reserves for a regular file,
 * in memory only (nothing on disk changes; a crash forgets it and leaves
 * nothing to trim), one run of free blocks for its file blocks from its
 * current end (from 0 for a file whose data is inline) up to size bytes:
 * the first run of that length outside the metadata zone from where the
 * file's next block would go in the chunk of its last segment, else the
 * longest run there (best effort; *reserved says how many blocks, 0 when
 * nothing is left to reserve). No other file and no metadata unit is
 * given those blocks; data later placed for the file at those file blocks
 * (a direct write, delayed allocation's placement) takes them first, so
 * they form one extent. A file holds one reservation: a second call
 * replaces it. Reserved blocks count as used (fs_statfs, every free
 * count), and when an allocation finds no room elsewhere, other files'
 * reservations are given back first (with FS_PREALLOC_TRIM before those
 * without, the oldest first), one at a time until it fits. With
 * FS_PREALLOC_TRIM, what is not written is released when the file is
 * made durable (fs_commit, a stable fs_write, fs_prealloc_committed),
 * when it has not been used for the timeout (fs_prealloc_expire), at
 * fs_close, when its chunk goes offline (or drains: at its next
 * placement), and when it is truncated or
 * removed; without the flag only the last four (and fs_prealloc_release).
 * -ENOSPC: no free block outside the zone in that chunk; -EINVAL: not a
 * regular file, or unknown flags. */
#define FS_PREALLOC_TRIM 0x1u
#define FS_PREALLOC_TIMEOUT_DEFAULT_MS 30000u
int fs_prealloc(struct fs_volume *vol, struct fs_ino ino, uint64_t size, unsigned flags,
		uint64_t *reserved);
/* Release what the file's reservation still holds (0, or -ENOENT when it
 * has none). */
int fs_prealloc_release(struct fs_volume *vol, struct fs_ino ino);
/* The blocks the file's reservation still holds (0, or -ENOENT: none). */
int fs_prealloc_held(struct fs_volume *vol, struct fs_ino ino, uint64_t *blocks);
/* A server's COMMIT or stable WRITE of the file (its group commit makes it
 * durable, not fs_commit): a FS_PREALLOC_TRIM reservation is trimmed. */
void fs_prealloc_committed(struct fs_volume *vol, struct fs_ino ino);
/* Release the FS_PREALLOC_TRIM reservations not used (made, or data placed
 * in them) for the timeout: how many were released. */
uint32_t fs_prealloc_expire(struct fs_volume *vol);
void fs_set_prealloc_timeout(struct fs_volume *vol, unsigned ms);
/* A new file name was made by a server: when its name (the name table's
 * files that grow by appends, *.log) or the learned predictor (enough
 * samples, more than half of them large) says it will grow, reserve its
 * expected size (the learned median class's upper bound, else
 * FS_PREALLOC_APPEND_BYTES for appending names), at most max_bytes, with
 * FS_PREALLOC_TRIM. *reserved: blocks reserved (0: no hint, or none). */
#define FS_PREALLOC_APPEND_BYTES (1ull << 20)
int fs_prealloc_hinted(struct fs_volume *vol, struct fs_ino ino, const char *name,
		       uint64_t max_bytes, uint64_t *reserved);
/* Reservations now (how many, blocks still held) and since open:
 * made, blocks reserved, blocks taken by the files' data, released by
 * cause (the file made durable, unused for the timeout, close or its chunk
 * offline or draining, truncate or remove or an explicit release; count and blocks),
 * given back for another file's allocation (count, blocks), and refused
 * (no room). */
struct fs_prealloc_info {
	uint32_t active;
	uint64_t held_blocks;
	uint64_t made, reserved_blocks, taken_blocks;
	uint64_t trim_commit, trim_commit_blocks;
	uint64_t trim_timeout, trim_timeout_blocks;
	uint64_t trim_close, trim_close_blocks;
	uint64_t released, released_blocks;
	uint64_t given_back, given_back_blocks;
	uint64_t refused;
	uint32_t timeout_ms;
};
int fs_prealloc_info(struct fs_volume *vol, struct fs_prealloc_info *out);

/* nowait.c: a thread that must not block (an event loop) runs read-only
 * calls between these two. begin: 0, or -EAGAIN when the volume is busy
 * (its lock held elsewhere). end: 0, or -EAGAIN when a call inside would
 * have waited (disk I/O, a sync): those calls failed with -EAGAIN having
 * changed nothing, so their results are dropped and the calls run again
 * where they may wait. Only fs_getattr, fs_access, fs_lookup, fs_readlink,
 * fs_read, fs_readdir and fs_statfs belong inside; sections do not nest. */
int fs_nowait_begin(struct fs_volume *vol);
int fs_nowait_end(struct fs_volume *vol);

/* vol_lock.c: the calls this thread makes from now on are bulk work (a
 * long READ, WRITE or listing) or not: at the volume lock, bulk calls give
 * way to the other calls already waiting for it (each time they take it,
 * to those waiting when they came). Threads start not bulk. */
void fs_thread_set_bulk(int bulk);
/* vol_lock.c: the calling thread runs at background priority from now on
 * (SCHED_IDLE, and the idle I/O class where the kernel has it), except
 * while it holds the volume lock: then it runs at normal priority, so that
 * a thread holding what every call needs is never starved of the CPU by
 * the calls waiting for it (priority inversion). 1: SCHED_IDLE taken; 0:
 * the thread runs at normal priority (the reason in errno). *raises: the
 * way back to normal priority is open (CAP_SYS_NICE, or an RLIMIT_NICE of
 * 20 or more); when it is not, the thread stays idle under the lock too. */
int fs_thread_set_background(int *raises);

/* vol_predict.c: what the learned size predictor has seen (kept in the
 * volume: counts since it was first learned, but answered since open):
 * files observed, lifetimes observed (at a regular file's last remove),
 * table entries in use and replaced, new files it placed, and the most
 * sampled name suffixes with their median size class (0 empty, b:
 * [2^(b-1), 2^b) bytes), share of files of 1 MiB or more, lifetimes held
 * and median lifetime class (0 under a second, b: [2^(b-1), 2^b)
 * seconds). Keeping: loaded (the table was read at open, with
 * loaded_entries), dropped (tables found damaged at open and dropped),
 * saves staged since open, saves given up for want of room, last_save
 * (time(2) of the newest save, the one read at open when none since; 0
 * never) and the units the table takes in chunk 0. */
#define FS_PRED_TOP 8
struct fs_predictor_info {
	uint64_t observed, evicted, answered, lives;
	uint32_t entries;
	uint32_t ntop;
	char top_suffix[FS_PRED_TOP][16];
	uint32_t top_samples[FS_PRED_TOP];
	uint32_t top_median_class[FS_PRED_TOP];
	uint32_t top_large_permille[FS_PRED_TOP];
	uint32_t top_life_samples[FS_PRED_TOP];
	uint32_t top_life_median[FS_PRED_TOP];
	int loaded;
	uint32_t loaded_entries, units;
	uint64_t dropped, saves, save_failed;
	int64_t last_save;
};
int fs_predictor_info(struct fs_volume *vol, struct fs_predictor_info *out);
/* The predictor's save policy (tests, benchmarks): a save waits for
 * min_changes changes and interval seconds since the last (defaults 64
 * and 60). */
void fs_predictor_save_policy(struct fs_volume *vol, uint32_t min_changes, uint32_t interval);
/* A client made this file durable (a server's COMMIT or stable WRITE that
 * its group commit, not fs_commit, makes so): the predictor learns its
 * size. fs_commit and stable fs_writes observe by themselves. */
void fs_observe(struct fs_volume *vol, struct fs_ino ino);

/* offline.c: one chunk out of service while the volume serves the rest. */
struct fs_chunk_info {
	uint32_t index;
	int online;
	int holds_root;            /* the root directory needs it: cannot go offline */
	int64_t offline_since;     /* time(2), 0 when online */
	uint32_t kind;             /* enum fs_chunk_kind */
	uint32_t state;            /* the header's: clean, dirty, needs repair */
	uint64_t nblocks, free_blocks;
	uint64_t max_inodes, used_inodes;
	uint64_t healed;           /* reads that found one bad copy and rewrote it */
	uint64_t unreadable;       /* reads that found both copies bad */
	/* The scrub's record since open (fs_scrub_step). */
	uint64_t scrub_units;      /* units whose copies it verified */
	uint64_t scrub_bad;        /* bad copies it found */
	uint64_t scrub_healed;     /* ... of those, queued for rewrite from the good copy */
	uint64_t scrub_both_bad;   /* units with no good copy */
	int64_t scrub_last;        /* time(2) a pass over the chunk last completed, 0: never */
	int placed;                /* it has its own store (fs_open_placed) */
	int lost_store;            /* offline because its store lost its server (the
				    * negative errno: closed, or -ETIMEDOUT), 0 else */
	char why_offline[160];     /* offline: why, when known ("" else) */
	int draining;              /* being evacuated: nothing new is placed in it */
	int retired;               /* evacuated and retired: no store, never read */
	uint32_t pin_waiters;      /* reopens (or its retirement) waiting, unlocked, for reads
				    * of its store begun without the lock to end */
	/* Its store is on an NBD server (online chunks): connections made,
	 * the most commands it had in flight at once, commands sent. */
	int nbd;
	int nbd_conns, nbd_max_in_flight;
	uint64_t nbd_commands;
	/* its read-ahead cache (fs/store/readahead.c): reads served from it
	 * and their bytes, windows fetched, windows queued for hints (a file's
	 * read-ahead by its offsets), windows dropped unread; its bytes now and
	 * the most ever (nbd_ra_kb: its bound, 0 when it has none). */
	uint64_t nbd_ra_hits, nbd_ra_hit_bytes, nbd_ra_fetched, nbd_ra_hinted, nbd_ra_discarded;
	uint64_t nbd_ra_kb, nbd_ra_bytes, nbd_ra_max_bytes;
};
uint32_t fs_chunk_count(struct fs_volume *vol);
int fs_chunk_info(struct fs_volume *vol, uint32_t chunk, struct fs_chunk_info *out);
/* Commit, forget the chunk's cached state and release its lock; from then
 * on what needs it fails with -EIO. force: when the commit fails, the
 * chunk's uncommitted changes are dropped and it goes anyway. Refused
 * (-EBUSY) for the chunk the root directory needs. why[] says why on
 * failure. */
int fs_chunk_offline(struct fs_volume *vol, uint32_t chunk, int force, char *why, size_t whylen);
/* Every online chunk whose store has lost its server (store_lost: an NBD
 * server gone or not answering in time) is taken offline, forced: its
 * changes not yet committed are dropped (nobody was told they were
 * durable) and the other chunks' are committed without it. fs_sync does
 * this itself when a commit fails; chunkfsd also calls it once a second,
 * for losses that only reads saw. fs_chunk_info says which chunk went
 * and why (lost_store, why_offline). The number taken, or a negative
 * errno (the root's chunk cannot go). */
int fs_offline_lost_stores(struct fs_volume *vol);
/* How many times a chunk went offline dropping changes not yet committed
 * (fs_chunk_offline forced, fs_offline_lost_stores), or a file's buffered
 * UNSTABLE data was given up (delayed allocation, see fs_place): a
 * change made before the count moved may be gone although no commit
 * failed for it. fs_change_drop_count counts the first kind alone: the
 * buffers given up held written data, not other calls' changes. */
uint64_t fs_drop_count(struct fs_volume *vol);
uint64_t fs_change_drop_count(struct fs_volume *vol);
/* The check that decides whether an offline chunk may serve again
 * (chunkfsd gives fsck_gate_chunk, fs/fsck/fsck.h), called by
 * fs_chunk_online with every other chunk committed on disk: first with
 * unlocked set, the volume not locked (the other chunks may change while
 * it reads them; it may answer -EAGAIN to be run locked only), then, when
 * that fails, again with the volume locked, which decides. 0 when the
 * chunk may return; else a negative errno and why[]. */
typedef int (*fs_chunk_check_fn)(void *ctx, uint32_t chunk, int unlocked, char *why,
				 size_t whylen);
/* Run check on the chunk and only when it passes take the chunk's lock
 * again, settle its last transaction and serve it. The volume is locked
 * but while the first check runs: the clients of the other chunks are not
 * held up by it (the chunk, offline, is written by nothing of the volume
 * meanwhile). 0 at once when the chunk is online already. */
int fs_chunk_online(struct fs_volume *vol, uint32_t chunk, fs_chunk_check_fn check, void *ctx,
		    char *why, size_t whylen);

/* scrub.c: verify both copies of every metadata unit, a bounded step at a
 * time. A cursor names the next unit by chunk and copy-0 block, in block
 * order: the header, the newest dirty list, the bitmap, the map and the
 * inode area up to their watermarks, then the directory and extent units
 * of the metadata zone (found through the bitmap and their headers). Each
 * unit's copies are checked (checksum, magic, type, units, chunk, block)
 * and held against the transaction rule: every unit has both copies
 * equal (a transaction writes both before it is answered). A bad copy is
 * queued for rewrite from the good one through the cache, so it goes out
 * with the next transaction; a unit without a good copy is counted and
 * its chunk marked needs-repair. Offline and single-copy chunks are
 * stepped over. */
struct fs_scrub_cursor {
	uint32_t chunk;
	uint32_t block;            /* next copy-0 block of the chunk to look at */
};
struct fs_scrub_result {
	uint32_t units;            /* units whose copies were read and judged */
	uint32_t bad;              /* copies found bad (checksum, header, stale) */
	uint32_t healed;           /* ... of those, queued for rewrite */
	uint32_t both_bad;         /* units without a good copy */
	uint32_t pending;          /* (always 0: no answered transaction leaves copies apart;
				    * kept for the cursor file and status fields) */
	uint32_t skipped;          /* units changed in memory: not judged this pass */
	uint32_t lists_bad;        /* newest dirty lists that no longer verify */
	uint32_t probed;           /* zone blocks read that were data, not units */
	uint64_t bytes;            /* metadata bytes read */
	uint32_t chunks_done;      /* chunks the cursor finished in this step */
	uint32_t span;             /* blocks the scrub covers in the cursor's chunk now */
	int wrapped;               /* the cursor went past the last chunk: back to 0 */
};
/* One step of at most max_units units (and a bounded scan of free blocks),
 * under the volume lock, from *cur, which it advances. 0; -EAGAIN when a
 * transaction is being written (nothing done: try again later); -EROFS on a
 * read-only volume; other negative errnos for I/O failures. */
int fs_scrub_step(struct fs_volume *vol, struct fs_scrub_cursor *cur, uint32_t max_units,
		  struct fs_scrub_result *res);
/* grow.c: a chunk added to a volume. chunk_size 0: chunk 0's size; kind
 * and bytes_per_inode (0: 16 KiB) as for mkfs; index 0: the next one
 * (the volume's chunk count); force: fs_mkfs_chunk overwrites a chunk
 * header found there. record (fs_add_chunk): called under the volume lock
 * once the chunk is checked, before the new count commits, to record
 * durably where chunk index lives, where NULL for a region of the image
 * (any place recorded for that index before, by an add that did not
 * commit, is to go); 0, or a negative errno and why[]: nothing is added. */
struct fs_chunk_opts {
	uint64_t chunk_size;
	enum fs_chunk_kind kind;
	uint32_t bytes_per_inode;
	uint32_t index;
	int force;
	int (*record)(void *ctx, uint32_t index, const char *where, char *why, size_t whylen);
	void *record_ctx;
};
/* The header of a new chunk of the volume whose image is volume, written
 * on where (a path, created when missing, or an NBD URI) with its
 * dirty-list areas zeroed: what fs_add_chunk takes. *index: the chunk it
 * is made for. 0, or a negative errno and why[]. */
int fs_mkfs_chunk(const char *volume, const struct fs_chunk_opts *o, const char *where,
		  uint32_t *index, char *why, size_t whylen);
/* A chunk added to the open volume while it serves, as chunk *index (the
 * count so far): where NULL, a new region at the image's end (a file
 * image grows; its header made here); else the chunk on its own store,
 * made by fs_mkfs_chunk for that index, checked as open checks a placed
 * chunk. The new count is committed before this returns, and allocation
 * may use the chunk at once. 0, or a negative errno and why[]. */
int fs_add_chunk(struct fs_volume *vol, const struct fs_chunk_opts *o, const char *where,
		 uint32_t *index, char *why, size_t whylen);
/* evacuate.c: chunk i starts (on) or stops (off) draining, the first step
 * of an evacuation: from then on no new object, directory part,
 * continuation or data extent is placed in it (a file whose last segment
 * is there continues in another chunk; only a hole inside a segment there
 * is filled there, a segment mapping its own chunk's blocks). The flag is in the chunk's header, committed
 * before this returns, so a restart keeps it. Refused for chunk 0 (it
 * names the volume), an offline chunk, a read-only volume. 0 (also when
 * the chunk already was so), or a negative errno and why[]. */
int fs_chunk_drain(struct fs_volume *vol, uint32_t chunk, int on, char *why, size_t whylen);
/* What an evacuation has done and what is left in the chunk. */
struct fs_evac_info {
	uint32_t chunk;
	int draining;
	uint64_t conts_moved;      /* file continuations carried out since open */
	uint64_t blocks_moved;     /* data blocks copied out since open */
	uint32_t conts_left;       /* file continuations still in the chunk */
	uint32_t slots_left;       /* other inodes in its inode area (directory
				    * parts, inodes whose first link went) */
	uint32_t inodes_homed;     /* numbers homed in it (its map's used entries,
				    * or its foster map's, counted by a scan) */
	uint64_t blocks_used;      /* blocks in use besides the fixed metadata */
	int fostered;              /* its map is a foster map in chunk foster_chunk */
	uint32_t foster_chunk;
	uint32_t homed_here;       /* fostered: numbers homed in it whose inode is still in it */
	uint64_t inodes_moved;     /* inodes carried out with their entries since open */
	int retired;               /* emptied and retired: offline for good, never read */
	int paused;                /* paused (kept in its header across restarts) */
	uint32_t maps_hosted;      /* foster maps of other chunks it holds (moved off first) */
	uint32_t guests_here;      /* inodes in it homed in another fostered chunk (moved
				    * into it by that chunk's evacuation), by a scan of
				    * the foster maps whose host is online */
	uint64_t copies_dropped;   /* objects whose copy made outside the lock was
				    * spoilt (written, cut, removed meanwhile) and
				    * retried, since open */
	uint64_t blocks_copied_unlocked; /* of blocks_moved, those copied outside
				    * the volume lock */
	uint64_t entry_scans;      /* scans of its directory units for the entries of
				    * inodes with several (or in a slot) that moved:
				    * one a step at most, since open */
	uint64_t copy_stops;       /* steps whose copy outside the lock stopped early
				    * for a reopen, offline or retirement waiting for
				    * its chunks' pins (retried), since open */
	uint64_t map_units_unlocked; /* foster map units (its own, or those it hosts)
				    * read for their move outside the volume lock */
	uint64_t map_units_locked; /* ... and read under it, since open */
	/* The volume lock's holds by its steps since open (their commits'
	 * included): the longest, where, and those over 1 and 10 ms. */
	uint64_t holds, hold_max_us, holds_over_1ms, holds_over_10ms;
	char hold_max_site[48];
};
/* Pause or resume chunk i's evacuation: the state goes in its header in a
 * transaction of its own, so a restart finds it paused (a paused chunk's
 * steps answer -EAGAIN). Its scan cursors are kept there by every step. 0
 * or a negative errno with why[]. */
int fs_evac_pause(struct fs_volume *vol, uint32_t chunk, int paused, char *why, size_t whylen);
/* One step of chunk i's evacuation (draining first: -EINVAL otherwise):
 * a piece of one object moved into another chunk, committed before this
 * returns. Built so far: file continuations, at most max_blocks of data a
 * step (0: 2 MiB; copied before the volume lock is taken to move it, a
 * copy spoilt meanwhile by a write, cut or remove dropped and made again
 * at the next step, which then answers 1 without moving it): the data
 * copied into another chunk and mapped there by the segment before (or a
 * new continuation in front), the chunk's blocks freed, and its
 * continuation with them once empty. The first step fosters the chunk's
 * map (copied into a foster map in another chunk, fs/foster.c) so that
 * its numbers outlive it. Then inodes embedded in its entries, with one
 * link and no directory unit there, move with their entries into their
 * directory's part in another chunk (a file's data there, up to 2 MiB,
 * copied with it: fs/evac_inode.c). Slot inodes, directories with units
 * there and directory parts stay (not built yet). 1: something moved; 0:
 * nothing left that
 * this build moves; or a negative errno (-ENOSPC: no other chunk has
 * room), the volume as before the step. info (may be NULL): afterwards. */
int fs_evac_step(struct fs_volume *vol, uint32_t chunk, uint32_t max_blocks,
		 struct fs_evac_info *info);
/* Steps copy their data under the volume lock (locked 1, as before issue
 * 23: for comparison) or outside it (0, the default). */
void fs_set_evac_copy_locked(struct fs_volume *vol, int locked);
/* For tests: fn(arg) runs in each step after its data was copied outside
 * the lock and before the lock is taken to move it, the chunks copied
 * from and to still pinned (NULL: none). */
void fs_evac_set_copied_hook(struct fs_volume *vol, void (*fn)(void *arg), void *arg);
/* For tests: fn(arg) runs after each window (256 KiB) of a step's copy
 * outside the lock, the chunks pinned (NULL: none). */
void fs_evac_set_window_hook(struct fs_volume *vol, void (*fn)(void *arg), void *arg);
/* For benchmarks (bench/evac-bench.sh): each step's holds of the volume
 * lock written to fd, a line each (the step's number and kind, what it
 * moved, the hold's site, wall and CPU time in us); -1: none. The caller
 * keeps fd open while steps run. */
void fs_evac_set_trace(struct fs_volume *vol, int fd);
/* What is left in chunk i (a scan of its inode area) and what steps moved. */
int fs_evac_info(struct fs_volume *vol, uint32_t chunk, struct fs_evac_info *info);
/* place.c: is any chunk placed outside the image (on its own store)?
 * Chunk i's place (its store's name), or NULL for a region of the image
 * (or no chunk i); the string lives as long as the volume. Both without
 * the volume lock: a chunk's place never changes. */
int fs_any_placed(struct fs_volume *vol);
const char *fs_chunk_place(struct fs_volume *vol, uint32_t chunk);
/* An offline chunk placed outside the image (fs_open_placed): its store is
 * opened again by its name, the old one closed (an NBD server back after a
 * restart, a file put back); fs_chunk_online checks it after. 0 at once for
 * a chunk that is online or not placed. why[] says why on failure. */
int fs_chunk_reopen(struct fs_volume *vol, uint32_t chunk, char *why, size_t whylen);
/* Does a placed chunk's store answer? It is opened by its name and closed
 * again, nothing else: no lock is taken, so that a connect that waits for
 * the timeout holds up nobody (chunkfsd probes a lost store this way
 * before fs_chunk_reopen). 0, -EINVAL for a chunk not placed, or the
 * error with why[]. */
int fs_chunk_probe(struct fs_volume *vol, uint32_t chunk, char *why, size_t whylen);
/* Chunk i's store, for a check of an offline chunk through it
 * (fsck_chunk_store): the volume keeps it, and while the chunk is offline
 * the volume neither reads nor writes it. NULL when there is no chunk i. */
struct chunk_store *fs_chunk_store(struct fs_volume *vol, uint32_t chunk);

/* attr.c */
int fs_getattr(struct fs_volume *vol, struct fs_ino ino, struct fs_attr *out);
int fs_setattr(struct fs_volume *vol, const struct fs_cred *cred, struct fs_ino ino,
	       const struct fs_setattr *sa, struct fs_attr *out);
int fs_access(struct fs_volume *vol, const struct fs_cred *cred, struct fs_ino ino,
	      uint32_t want, uint32_t *granted);

/* namei.c: name operations. attr outputs may be NULL. */
int fs_lookup(struct fs_volume *vol, const struct fs_cred *cred, struct fs_ino dir,
	      const char *name, struct fs_ino *out, struct fs_attr *attr);
int fs_create(struct fs_volume *vol, const struct fs_cred *cred, struct fs_ino dir,
	      const char *name, uint32_t mode, enum fs_create_how how, uint64_t verifier,
	      struct fs_ino *out, struct fs_attr *attr);
int fs_mkdir(struct fs_volume *vol, const struct fs_cred *cred, struct fs_ino dir,
	     const char *name, uint32_t mode, struct fs_ino *out, struct fs_attr *attr);
int fs_symlink(struct fs_volume *vol, const struct fs_cred *cred, struct fs_ino dir,
	       const char *name, const char *target, uint32_t mode, struct fs_ino *out,
	       struct fs_attr *attr);
/* mode carries the type: S_IFCHR, S_IFBLK, S_IFIFO or S_IFSOCK. */
int fs_mknod(struct fs_volume *vol, const struct fs_cred *cred, struct fs_ino dir,
	     const char *name, uint32_t mode, uint32_t rdev_major, uint32_t rdev_minor,
	     struct fs_ino *out, struct fs_attr *attr);
int fs_remove(struct fs_volume *vol, const struct fs_cred *cred, struct fs_ino dir,
	      const char *name);
int fs_rmdir(struct fs_volume *vol, const struct fs_cred *cred, struct fs_ino dir,
	     const char *name);
int fs_rename(struct fs_volume *vol, const struct fs_cred *cred, struct fs_ino from_dir,
	      const char *from_name, struct fs_ino to_dir, const char *to_name);
int fs_link(struct fs_volume *vol, const struct fs_cred *cred, struct fs_ino ino,
	    struct fs_ino dir, const char *name);
int fs_readlink(struct fs_volume *vol, struct fs_ino ino, char *buf, size_t bufsize,
		size_t *len);

/* readdir.c: cookie 0 starts the listing ("." and ".." come first).
 * *verifier is in/out: pass 0 with cookie 0, then the value returned. A
 * cookie that no longer names a position, or a verifier that no longer
 * matches the directory, gives -FS_EBADCOOKIE. */
int fs_readdir(struct fs_volume *vol, const struct fs_cred *cred, struct fs_ino dir,
	       uint64_t cookie, uint64_t *verifier, int plus, fs_readdir_fn fn, void *ctx,
	       int *eof);

/* file.c */
int fs_read(struct fs_volume *vol, const struct fs_cred *cred, struct fs_ino ino,
	    uint64_t offset, size_t len, void *buf, size_t *nread, int *eof);
int fs_write(struct fs_volume *vol, const struct fs_cred *cred, struct fs_ino ino,
	     uint64_t offset, size_t len, const void *buf, enum fs_stable_how stable,
	     struct fs_attr *post);
int fs_commit(struct fs_volume *vol, struct fs_ino ino);

/* invariants.c: returns the number of problems found (0: both invariants
 * hold), each also printed through report() when it is not NULL. */
int fs_check_invariants(struct fs_volume *vol, void (*report)(void *ctx, const char *msg),
			void *ctx);

#endif
