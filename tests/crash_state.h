/* Crash states of a recorded workload and how they are judged: namespace
 * snapshots and their comparison, the log cut at its barriers, the states
 * made from it, and a store over memory the harness keeps. */
#ifndef CHUNKFS_TESTS_CRASH_STATE_H
#define CHUNKFS_TESTS_CRASH_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "fs/fs.h"
#include "fs/store/store.h"
#include "fs/store/store_mem.h"

/* Bytes shared by the snapshots that saw them unchanged. */
struct blob {
	int refs;
	size_t len;
	uint8_t data[];
};

/* One name in the tree; a file with two links appears twice. */
struct snap_ent {
	char *path;           /* "/" for the root, "/a/b" below it */
	uint32_t type;        /* the S_IFMT bits */
	uint32_t perm;        /* mode & 07777 */
	uint64_t size;
	uint32_t nlink;
	uint64_t fileid;
	struct blob *bytes;   /* regular files: the content; symlinks: the target */
};

/* Entries in walk order: depth first, each directory's names sorted, so two
 * snapshots of the same namespace list the same paths at the same indices. */
struct snap {
	struct snap_ent *e;
	size_t n, cap;
};

/* Walk vol from its root. prev (may be NULL) lends the bytes of files it
 * holds unchanged. 0, or a negative errno with what failed in why[]. */
int snap_take(struct fs_volume *vol, const struct snap *prev, struct snap *out, char *why,
	      size_t whylen);
void snap_free(struct snap *s);
/* 0 when a and b hold the same names with the same types, modes, sizes,
 * link counts, identities and symlink targets; else 1, the first
 * difference in why[]. */
int snap_same_meta(const struct snap *got, const struct snap *want, char *why, size_t whylen);
/* Given equal metadata: 0 when every file byte of got equals want's, or
 * (when alt is not NULL) the byte at that offset of the same file (by
 * fileid) in alt, a version whose in-place data writes may have landed. */
int snap_same_bytes(const struct snap *got, const struct snap *want, const struct snap *alt,
		    char *why, size_t whylen);

/* Where the barriers of a log are: bar[0] = 0, and bar[j] (j > 0) the
 * record just after the j-th run of consecutive flushes. A run of flushes
 * is one barrier for every chunk (vol_flush flushes them in turn). */
struct barriers {
	size_t *bar;
	size_t n;
};
int barriers_find(const struct io_log *log, struct barriers *out);
void barriers_free(struct barriers *b);

/* An acknowledged state: the tree, and the log length when it was. */
struct ckpt {
	size_t pos;
	struct snap tree;
};

/* One workload's run: the image its log starts from (chunk i at
 * i * chunk_size), the log, and the checkpoints, the first at position 0
 * (before any operation), the last after fs_close. */
struct recording {
	const char *name;
	uint32_t nchunks;
	uint64_t chunk_size;
	uint8_t *init;
	struct io_log log;
	struct ckpt *ck;
	size_t nck, capck;
};
/* Append a checkpoint; it takes over tree. */
int recording_push(struct recording *r, size_t pos, struct snap *tree);
void recording_free(struct recording *r);

/* Which states to make and look at. */
struct crash_opts {
	uint64_t seed;        /* the states of a recording depend only on it */
	size_t nsub;          /* random write subsets per interval */
	size_t ntorn;         /* torn writes per interval */
	long only;            /* check state #only alone, verbosely; -1: all */
	const char *dump;     /* with only: write its image here before opening */
	int table_lost;       /* the log starts from an image whose chunk 0 foster
			       * table is lost: a crashed image may show that alone
			       * (0x010031) to fsck before its open makes it again
			       * (fsck -y must then make it too, and -n be clean) */
};

struct crash_result {
	size_t barriers, states, failed;
};

/* Every prefix of r's log at a barrier, and subsets and torn writes of the
 * interval after each: each must open (recovering), pass the invariants,
 * show the last checkpoint at or before its barrier (or one its interval
 * may commit) and reopen the same. On a sample of the states (every 8th;
 * CRASH_FSCK_EVERY=N), fsck -n of each chunk alone must find no problem,
 * both on the crashed image and after recovery and close. Failures are described on stderr; 0, or
 * a negative errno when checking could not run. */
int crash_check(const struct recording *r, const struct crash_opts *o, struct crash_result *out);

/* A store over size bytes at mem, which stays the caller's: closing the
 * store (fs_close does) leaves it in place for the next open. */
int crash_store_new(uint8_t *mem, uint64_t size, struct chunk_store **out);

#endif
