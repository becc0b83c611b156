/* The volume's predictor as vol_predict.c (learning, answering) and
 * vol_pred_store.c (keeping it in chunk 0) share it. Everything in it is
 * touched under the volume lock. */
#ifndef CHUNKFS_FS_VOL_PRED_H
#define CHUNKFS_FS_VOL_PRED_H

#include <stdint.h>

#include "fs/format/ondisk.h"
#include "fs/predict.h"

#define PRED_RECENT 1024u /* recently observed files, by stable number */
/* Units a whole table takes: PRED_SLOTS entries, OD_PRED_PER_UNIT a unit
 * (the format's bound, which fsck checks chains against). */
#define PRED_MAX_UNITS OD_PRED_MAX_UNITS
_Static_assert(PRED_SLOTS <= OD_PRED_MAX_ENTRIES, "the table outgrows the format's chain");
/* A save waits for this many changes and this many seconds since the last
 * (a clean close saves whatever changed). */
#define PRED_SAVE_MIN 64u
#define PRED_SAVE_INTERVAL 60u

struct pred_recent {
	uint64_t stable;              /* 0: none */
	uint32_t generation;          /* (a number is used again after a remove) */
	uint32_t uid, mode, cls;
	char suffix[PRED_SUFFIX_MAX + 1];
};

struct vol_pred {
	struct predictor p;
	struct pred_recent recent[PRED_RECENT];

	/* Kept in chunk 0 (vol_pred_store.c): the chain's blocks as this
	 * session knows them, in order (a damaged chain: the units before
	 * the damage, reused by the next save). */
	uint32_t units[PRED_MAX_UNITS];
	uint32_t nunits;
	uint64_t saved_changes;       /* p.changes at the last save (or load) */
	int64_t last_save;            /* time(2) of the last save (the one read at open), 0 none */
	int64_t save_clock;           /* time(2) of the open or of this session's last save:
				       * the interval counts from it */
	uint32_t save_min, save_interval;
	int loaded;                   /* the table came from the volume at open */
	int heal;                     /* a copy read at open was bad or older: save */
	uint32_t loaded_entries;
	uint64_t saves;               /* saves staged since open */
	uint64_t save_failed;         /* saves given up (no room for its units) */
	uint64_t dropped;             /* tables dropped at open: a unit with no good copy
				       * or that could not be ours */
};

#endif
