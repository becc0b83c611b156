/* A file-size predictor learned from the files a volume has seen
 * (fs/predict.c): per name suffix, and per suffix with owner and mode, a
 * count and a decaying histogram of log2 sizes, in a fixed-size table.
 * Files are observed with the size they have when committed; a new
 * file's expectation comes from the most specific entry with enough
 * samples. A second histogram per entry holds lifetimes (log2 seconds
 * from create to remove). Entries pack into PRED_ENTRY_BYTES each for the
 * volume to keep (fs/vol_pred_store.c). Pure computation: no locks (the
 * caller serialises), no I/O. */
#ifndef CHUNKFS_FS_PREDICT_H
#define CHUNKFS_FS_PREDICT_H

#include <stddef.h>
#include <stdint.h>

/* Size classes: 0 an empty file, b >= 1 sizes in [2^(b-1), 2^b). */
#define PRED_CLASSES 42
#define PRED_SLOTS 1024u          /* entries in the table */
#define PRED_PROBE 8u             /* slots an entry may sit in from its hash */
#define PRED_MIN_SAMPLES 8u       /* fewer: no expectation from that entry */
#define PRED_DECAY_AT 1024u       /* an entry reaching this many halves its counts */
#define PRED_SUFFIX_MAX 15u       /* longer suffixes count as none */
/* Lifetime classes: 0 under a second, b >= 1 [2^(b-1), 2^b) seconds. */
#define PRED_LIFE_CLASSES 32
/* A file of at least this many bytes belongs in a large-file chunk. */
#define PRED_LARGE_BYTES (1ull << 20)

struct pred_entry {
	uint64_t key;             /* 0: a free slot */
	uint32_t samples;         /* sum of hist[] */
	uint16_t hist[PRED_CLASSES];
	uint32_t life_samples;    /* sum of life[] */
	uint16_t life[PRED_LIFE_CLASSES];
	uint8_t specific;         /* the suffix+owner+mode entry */
	char suffix[PRED_SUFFIX_MAX + 1];
};

struct predictor {
	struct pred_entry slot[PRED_SLOTS];
	uint64_t observed;        /* observations taken */
	uint64_t evicted;         /* entries replaced to make room */
	uint64_t lives;           /* lifetimes observed */
	uint64_t changes;         /* observations, lifetimes and take-backs: moves
				   * whenever the table changes (a keeper's cue) */
};

/* What the predictor expects of a new file. */
struct pred_expect {
	uint32_t samples;         /* of the entry that answered */
	int specific;             /* 1: the suffix+owner+mode entry, 0: the suffix's */
	uint32_t median_class;    /* the size class half the samples are at or below */
	uint32_t large_permille;  /* share of samples of at least PRED_LARGE_BYTES */
	uint32_t life_samples;    /* lifetimes the entry holds */
	uint32_t life_median;     /* the lifetime class half of them are at or below */
};

void pred_init(struct predictor *p);
/* The size class of a size. */
uint32_t pred_class(uint64_t size);
/* The suffix a name is learned under: after its last '.', lowercased;
 * none ("") for a name without one, a name whose only '.' leads it, or a
 * suffix longer than PRED_SUFFIX_MAX. Writes it NUL-terminated into
 * out[PRED_SUFFIX_MAX + 1]. */
void pred_suffix(const char *name, size_t len, char *out);
/* A file of this name, owner and mode (permission bits) had size. */
void pred_observe(struct predictor *p, const char *name, size_t len, uint32_t uid, uint32_t mode,
		  uint64_t size);
/* The same by suffix (as pred_suffix gives it) and size class; and one
 * sample taken back (a file observed again with another size, owner or
 * name: its earlier sample goes). */
void pred_add(struct predictor *p, const char *suffix, uint32_t uid, uint32_t mode, uint32_t cls);
void pred_remove(struct predictor *p, const char *suffix, uint32_t uid, uint32_t mode,
		 uint32_t cls);
/* The lifetime class of a number of seconds (negative: 0). */
uint32_t pred_life_class(int64_t seconds);
/* A file of this suffix, owner and mode lived seconds from create to
 * remove (lifetime class cls): both entries learn it. */
void pred_add_life(struct predictor *p, const char *suffix, uint32_t uid, uint32_t mode,
		   uint32_t cls);
/* The expectation for a new file: 0 and *out, or -ENOENT when neither
 * entry has PRED_MIN_SAMPLES samples. */
int pred_lookup(const struct predictor *p, const char *name, size_t len, uint32_t uid,
		uint32_t mode, struct pred_expect *out);
/* 1 when the file is expected to be large (more than half its entry's
 * samples at least PRED_LARGE_BYTES), 0 when small, -ENOENT unknown. */
int pred_large(const struct predictor *p, const char *name, size_t len, uint32_t uid,
	       uint32_t mode);
/* Entries in use. */
uint32_t pred_entries(const struct predictor *p);
/* The suffix entries with the most samples, most first: up to n of them
 * into out (their expectations) and suffix[i] (their suffixes); returns
 * how many. */
uint32_t pred_top(const struct predictor *p, struct pred_expect *out,
		  char (*suffix)[PRED_SUFFIX_MAX + 1], uint32_t n);

/* The table kept as bytes: each entry in use as PRED_ENTRY_BYTES
 * (doc/format.md, the predictor unit), with the slot it sits in so that a
 * table read back answers exactly as the one written. put: entry of slot
 * into b. get: the entry in b into the table at its slot; -EBADMSG when
 * it cannot be one (a free key, a slot outside its probe window or taken,
 * counts that do not add up, a suffix without its end). */
#define PRED_ENTRY_BYTES 184u
void pred_entry_put(const struct predictor *p, uint32_t slot, uint8_t *b);
int pred_entry_get(struct predictor *p, const uint8_t *b);

#endif
