/* The public API of fsck.chunkfs: check (and repair) one chunk from that
 * chunk's bytes alone, through the chunk-store interface (invariants 1 and
 * 2 are what make that possible). Cross-chunk references are recorded as
 * deferred checks, or confirmed with the cross option by reading the one
 * inode (or map entry) at the other end. */
#ifndef CHUNKFS_FSCK_H
#define CHUNKFS_FSCK_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct chunk_store;

/* fsck_opts.mode */
enum fsck_mode {
	FSCK_CHECK_ONLY = 0, /* -n: report, write nothing */
	FSCK_PREEN = 1,      /* -p: repair what is safe without asking */
	FSCK_YES = 2,        /* -y: every repair this version knows */
};

/* Exit codes, as fsck(8) combines them (a bit set). */
#define FSCK_EXIT_OK 0
#define FSCK_EXIT_FIXED 1        /* errors corrected */
#define FSCK_EXIT_UNCORRECTED 4  /* errors left */
#define FSCK_EXIT_OPERATIONAL 8  /* could not check: I/O, memory, not a chunk */
#define FSCK_EXIT_USAGE 16       /* usage or syntax error */
#define FSCK_EXIT_CANCELLED 32   /* cancelled by request */

struct fsck_opts {
	int mode;      /* enum fsck_mode */
	int cross;     /* -x: confirm cross-chunk references (fsck_volume_path only) */
	int force;     /* -f: check a chunk even when it says it is clean */
	/* Every line of output (no trailing newline); NULL: silent. */
	void (*out)(void *ctx, const char *line);
	void *ctx;
	/* When not NULL and set nonzero (a signal handler), the check stops
	 * at the next step, writes nothing more, and returns CANCELLED. */
	volatile sig_atomic_t *cancel;
	/* Fields added later; zero keeps the old behaviour (but both_copies). */
	/* fsck_volume_path: chunks checked at once, each by its own thread
	 * with its own store and context (0 or 1: one after another). out()
	 * and progress() are then called one at a time, never concurrently. */
	int jobs;
	/* Called with 0 before the first chunk and after each chunk is done
	 * (done of total chunks to check); NULL: none. */
	void (*progress)(void *progress_ctx, uint32_t done, uint32_t total);
	void *progress_ctx;
	/* Nonzero (--both-copies): both copies of every metadata unit are
	 * read and verified. 0, the default since both_copies was added: the
	 * current copy of each unit is read (copy 0, or the copy the chunk's
	 * newest dirty list makes current), and the other copy only when the
	 * first fails its checks, when that list names the unit (its copies
	 * may differ) or when the chunk is marked needs-repair; a bad copy
	 * that is not current is then not found. Chunk headers: both always. */
	int both_copies;
	/* fsck_volume_path: chunks that live in stores of their own (chunkfsd's
	 * `chunk N = WHERE`), placed[i] for chunk i, NULL (or i >= nplaced)
	 * for a region of the image. Each is checked, and read by the other
	 * chunks' cross-chunk checks, through its store (which must hold chunk
	 * i of this volume); its region of the image, unused, is not read. The
	 * caller opens and closes them. */
	struct chunk_store *const *placed;
	uint32_t nplaced;
};

struct fsck_result {
	uint32_t chunks;      /* chunks checked (summed over a volume) */
	uint32_t clean;       /* of those, skipped as clean */
	uint32_t problems;    /* problems found */
	uint32_t fixed;       /* ... of which repaired */
	uint32_t unfixed;     /* ... of which left */
	uint32_t deferred;    /* cross-chunk checks recorded (and, with cross, done) */
	uint64_t inodes;      /* head inodes found (files, directories, ...) */
	uint64_t blocks_used; /* blocks in use, fixed metadata included */
	uint64_t dir_units;   /* directory units walked */
	uint64_t usec;        /* time taken */
	int exit_code;        /* FSCK_EXIT_* bits */
};

/* Check the chunk whose bytes are st (its size is the chunk's size). The
 * header must say chunk expect_index (UINT32_MAX: any). Writes only in
 * FSCK_PREEN and FSCK_YES modes, and only through st. Returns 0 when the
 * check ran (res->exit_code says what it found), or a negative errno when
 * it could not run at all. res may be NULL. */
int fsck_chunk_store(struct chunk_store *st, uint32_t expect_index, const struct fsck_opts *o,
		     struct fsck_result *res);

/* Check chunk `chunk` (-1: every chunk, one after another) of the volume
 * image or device at path; each chunk is read through a region store
 * covering only its own bytes. res sums the chunks checked. Returns 0 or a
 * negative errno as above. */
int fsck_volume_path(const char *path, int chunk, const struct fsck_opts *o,
		     struct fsck_result *res);

/* Check an image that holds one chunk (pulled with dd or nbdcopy, or a
 * raw chunk export over NBD), reached through st: the chunk's header (copy
 * 0, else copy 1 at half the image) gives its index and size; st may be
 * longer than the chunk. chunk >= 0 insists on that index. An image whose
 * header is chunk 0 of a volume of several chunks, with room for more than
 * one chunk, is a whole volume and refused (-EMEDIUMTYPE, exit code 8: use
 * fsck_volume_path on a file). After repairs st is flushed once more.
 * fsck_volume_path() comes here by itself when its path is such an image. */
int fsck_image_store(struct chunk_store *st, int chunk, const struct fsck_opts *o,
		     struct fsck_result *res);

/* --estimate: predict the time a check of chunk `chunk` (-1: every chunk)
 * would take, from the counters in each chunk's header alone (used inodes,
 * free blocks; see fs/fsck/fsck_estimate.c for the model and its calibration).
 * One line per chunk and a total go to o->out; res->chunks, inodes,
 * blocks_used and usec (predicted, one job) are filled in. Nothing else is
 * read and nothing is written. */
int fsck_estimate_path(const char *path, int chunk, const struct fsck_opts *o,
		       struct fsck_result *res);
int fsck_estimate_store(struct chunk_store *st, int chunk, const struct fsck_opts *o,
			struct fsck_result *res);

/* The check that gates an offline chunk's return to service: give
 * fsck_gate_chunk as fs_chunk_online's check with a struct fsck_gate as its
 * context. It checks chunk `chunk` of the volume image at image: check
 * only, both copies of every unit, its cross-chunk pointers confirmed
 * (opts' output callback and cancel flag are kept, the rest set so); the
 * figures land in res. 0 when the chunk is clean; else a negative errno
 * (-EUCLEAN: problems found) and why[] in a sentence. */
struct fsck_gate {
	const char *image;
	/* When not NULL, the chunk is checked through this store instead
	 * (fsck_chunk_store: a chunk placed on its own store, or any chunk of
	 * a volume with chunks placed elsewhere, whose image regions for them
	 * are stale); its cross-chunk references are then only recorded. */
	struct chunk_store *store;
	struct fsck_opts opts;
	struct fsck_result res;
};
int fsck_gate_chunk(void *gate, uint32_t chunk, int unlocked, char *why, size_t whylen);

/* The code, message and repair of a problem, for documentation and tests:
 * fsck_problem_info(i) for i = 0, 1, ... until it returns nonzero. */
int fsck_problem_info(unsigned i, uint32_t *code, const char **msg, const char **fix,
		      uint32_t *flags);

#endif
