/* What the fsck passes share: the context of one chunk's check, the units
 * read through both copies, the inodes and entries found, the problem codes
 * and the functions that pass code calls (fix_problem() above all). Nothing
 * here is seen outside fs/fsck*.c. */
#ifndef CHUNKFS_FSCK_INT_H
#define CHUNKFS_FSCK_INT_H

#include <stddef.h>
#include <stdint.h>

#include "fs/fsck/fsck.h"
#include "fs/format/foster_table.h"
#include "fs/format/header.h"
#include "fs/format/ondisk.h"
#include "fs/store/store.h"

/* --- problems (fsck_problem.c) ------------------------------------------ */

/* Flags of a problem-table row. */
#define PR_PREEN_OK 0x01  /* safe to repair without asking (-p repairs it) */
#define PR_FATAL 0x02     /* the chunk cannot be checked further */
#define PR_NOFIX 0x04     /* no repair in this version: reported and left */
#define PR_COMPLETE 0x08  /* repair only when every block owner was seen */

struct fsck_problem {
	uint32_t code;
	const char *msg;  /* with % expansions (fsck.c, expand()) */
	const char *fix;  /* what the repair does, same expansions; NULL with PR_NOFIX/FATAL */
	uint32_t flags;
};

const struct fsck_problem *fsck_problem_find(uint32_t code);

/* 0x00: any pass, units read through their two copies */
#define PR_0_UNIT_COPY_BAD 0x000001
#define PR_0_UNIT_BOTH_BAD 0x000002
#define PR_0_UNIT_COPIES_DIFFER 0x000003
#define PR_0_BITMAP_BOTH_BAD 0x000004
#define PR_0_UNIT_CONFLICT 0x000005
#define PR_0_UNIT_LIST_MISMATCH 0x000006
#define PR_0_TXN_DAMAGED 0x000007
#define PR_0_UNIT_NO_OLDER 0x000008
/* 0x01: pass 1, the chunk header, fixed units and inode-area slots */
#define PR_1_HDR_COPY_BAD 0x010001
#define PR_1_HDR_BOTH_BAD 0x010002
#define PR_1_HDR_INVALID 0x010003
#define PR_1_HDR_SIZE 0x010004
#define PR_1_HDR_UUID 0x010005
#define PR_1_HDR_COPIES_DIFFER 0x010006
#define PR_1_HDR_INDEX 0x010007
#define PR_1_HDR_RO_COMPAT 0x010008
#define PR_1_HDR_REBUILD 0x010009
#define PR_1_SLOT_FREE_GARBAGE 0x010010
#define PR_1_SLOT_BAD_MODE 0x010011
#define PR_1_SLOT_BAD_IDENTITY 0x010012
#define PR_1_INO_FLAGS 0x010020
#define PR_1_INO_NEXTENTS 0x010021
#define PR_1_INO_INLINE 0x010022
#define PR_1_INO_NEXT_RANGE 0x010023
#define PR_1_INO_HEAD_RANGE 0x010024
#define PR_1_INO_DUP_STABLE 0x010025
#define PR_1_INO_INLINE_LEN 0x010026
#define PR_1_MAP_FLAGS 0x010030
#define PR_1_FTAB_BAD 0x010031
#define PR_1_FTAB_REC_LOST 0x010032
#define PR_1_FTAB_RECS_MISSING 0x010033
/* 0x02: pass 2, directory units and entries */
#define PR_2_DIR_EXTENT 0x020001
#define PR_2_DIR_SEQ 0x020002
#define PR_2_UNIT_OWNER 0x020003
#define PR_2_REC_LEN 0x020004
#define PR_2_KIND 0x020005
#define PR_2_USED 0x020006
#define PR_2_NAME 0x020007
#define PR_2_HASH 0x020008
#define PR_2_FREE_MIDDLE 0x020009
#define PR_2_EMBED_STABLE 0x02000a
#define PR_2_EMBED_BAD 0x02000b
#define PR_2_UNITS_ORPHAN 0x02000c
/* 0x03: pass 3, block ownership */
#define PR_3_RANGE 0x030001
#define PR_3_DUP 0x030002
#define PR_3_BLOCKS 0x030003
#define PR_3_EXT_ORDER 0x030004
#define PR_3_EXT_START 0x030005
#define PR_3_EXTU_BAD 0x030006
#define PR_3_EXT_NONFILE 0x030007
#define PR_3_DUP_CLONE 0x030008
#define PR_3_PRED_BAD 0x030009
/* 0x04: pass 4, link counts, the map, continuation chains */
#define PR_4_ENT_FREE 0x040001
#define PR_4_ENT_MISSING 0x040002
#define PR_4_ENT_ELSEWHERE 0x040003
#define PR_4_ENT_NOT_HERE 0x040004
#define PR_4_ENT_BAD_NUMBER 0x040005
#define PR_4_LINK_COUNT 0x040006
#define PR_4_ORPHAN 0x040007
#define PR_4_DIR_NAMES 0x040008
#define PR_4_DIR_PARENT 0x040009
#define PR_4_MAP_DANGLING 0x04000a
#define PR_4_MAP_GEN 0x04000b
#define PR_4_SLOT_UNMAPPED 0x04000c
#define PR_4_EMBED_UNMAPPED 0x04000d
#define PR_4_CONT_ORPHAN 0x04000e
#define PR_4_CONT_BAD_HEAD 0x04000f
#define PR_4_NEXT_BAD 0x040010
#define PR_4_CONT_TWICE 0x040011
#define PR_4_ROOT 0x040012
#define PR_4_WATERMARK 0x040013
#define PR_4_PART_HOME 0x040014
#define PR_4_ENT_FREE_KEEP 0x040016
#define PR_4_MAP_WRONG_LOC 0x040017
#define PR_4_ORPHAN_KEEP 0x040018
#define PR_4_ORPHAN_CLEAR 0x04001a
#define PR_4_LF_PART_LOST 0x04001b
#define PR_4_HEAD_REBUILT 0x04001c
#define PR_4_PART_BRIDGE 0x04001d
#define PR_4_ROOT_LOST 0x040019
#define PR_4_FOSTER_DANGLING 0x040020
#define PR_4_FOSTER_WRONG_LOC 0x040021
/* 0x05: pass 5, the bitmap and the header counters */
#define PR_5_USED_MARKED_FREE 0x050001
#define PR_5_FREE_MARKED_USED 0x050002
#define PR_5_BITMAP_TAIL 0x050003
#define PR_5_FREE_BLOCKS 0x050004
#define PR_5_USED_INODES 0x050005
#define PR_5_BITMAP_UNINIT 0x050006
/* 0x06: cross-chunk confirmations (-x) */
#define PR_6_HEAD 0x060001
#define PR_6_NEXT 0x060002
#define PR_6_MAP_LOC 0x060003
#define PR_6_MAP_HOME 0x060004
#define PR_6_ENTRY 0x060005
#define PR_6_LF_UNREACHED 0x060006
#define PR_6_HEAD_CLEAR 0x060007

/* --- what the check holds ------------------------------------------------ */

#define FSCK_NONE 0xffffffffu
#define FSCK_PEND_HELD (1u << 24) /* c->pend: a held entry of the list */

/* A metadata unit as read through its two copies. */
struct fsck_unit {
	uint32_t block;
	uint16_t units;
	uint16_t type;
	uint8_t *data;      /* the current version; NULL: no valid copy */
	uint64_t txid;      /* of the current copy */
	int8_t cur;         /* the copy data came from, -1 none */
	uint8_t heal[2];    /* copies to rewrite with data, byte for byte: FSCK_HEAL_* */
	uint8_t modified;   /* a repair changed data: resealed, both copies written */
	uint8_t pending;    /* named by the chunk's newest dirty list */
	uint8_t no_older;   /* rolled back, but no valid copy before the transaction */
	uint8_t walked;     /* directory units: entries read (pass 2) */
	uint8_t pooled;     /* the record and data are the context's memory (not freed alone) */
	struct fsck_unit *hnext;
};

/* Blocks of one copy read ahead in one request (fsck_readahead.c); a unit that lies
 * wholly inside takes its bytes from there (taken[]: each block once). */
struct fsck_run {
	uint32_t start, n;
	uint8_t copy;
	uint8_t *buf;
	uint8_t *taken;
};

/* Memory that lives as long as the context: unit records and data
 * (fsck_mem.c). */
struct fsck_slab {
	struct fsck_slab *next;
	size_t used, cap;
	size_t maplen;      /* a mapping of that length; 0: malloc'd */
	uint8_t mem[];
};

/* An inode found in this chunk: in an inode-area slot or embedded. */
struct fsck_ino {
	struct od_inode ino;
	uint32_t block;     /* unit holding it */
	uint16_t off;       /* byte offset in that unit */
	uint32_t slot;      /* inode-area slot, or FSCK_NONE when embedded */
	uint32_t dent;      /* embedded: the entry holding it, else FSCK_NONE */
	uint32_t links;     /* entries here naming it */
	uint32_t subdirs;   /* directories: subdirectory entries in its units here */
	uint32_t preds;     /* inodes here whose next pointer names it */
	uint8_t dead;       /* garbage, or cleared by a repair: not counted */
	uint8_t ext_done;   /* extent list checked (problems reported once) */
	uint8_t walked;     /* directory units walked (pass 2) */
	uint8_t orphan;     /* no entry names it: for lost+found (pass 4) */
	uint8_t salvaged;   /* made by the salvage of units found (fsck_salvage.c):
	                     * 1, 2 a directory to be numbered (1: its owner
	                     * homed here), 3 a part made again in its chain */
	uint64_t salv_owner; /* salvaged: the owner its units' headers name */
};

/* A directory entry found in a unit of this chunk. */
struct fsck_dent {
	uint32_t unit;      /* first block of the unit */
	uint32_t off;       /* entry offset in the unit */
	uint64_t stable;
	uint32_t dir;       /* record of the head or part listing the unit */
	uint32_t target;    /* record of the inode it names, or FSCK_NONE */
	uint8_t kind;
	uint8_t name_len;
	uint8_t cleared;
};

/* A u64 -> u32 table (open addressing; key 0 is never stored). */
struct fsck_hmap {
	uint64_t *keys;
	uint32_t *vals;
	uint32_t cap, n;
};

/* Checks of references that leave the chunk: printed at the end, and
 * confirmed with -x. */
enum fsck_def_kind {
	DEF_HEAD,      /* a continuation here: its head (and the chain reaching it) */
	DEF_NEXT,      /* an inode here: the continuation its next pointer names */
	DEF_MAP_LOC,   /* a map entry here: the inode at its location elsewhere */
	DEF_MAP_HOME,  /* an inode here homed elsewhere: its map entry there */
	DEF_DIR_LINKS, /* a directory head here with parts elsewhere: its link count */
	DEF_ENTRY,     /* an entry naming an inode homed elsewhere and not found here */
	DEF_FOSTER_LOC, /* a foster map entry here: the inode at its location elsewhere */
};

struct fsck_deferred {
	int kind;
	uint32_t rec;       /* record here (FSCK_NONE for DEF_MAP_LOC, DEF_ENTRY) */
	uint32_t idx;       /* DEF_MAP_LOC: map index; DEF_ENTRY: entry */
	uint64_t stable;    /* the number involved */
	struct od_loc loc;  /* the far end, when known */
	uint32_t gen;       /* DEF_FOSTER_LOC: the generation the entry says */
};

/* A foster map hosted by the chunk checked (fsck_foster.c): its record in
 * the header, its entries, and per entry 1 (its unit is lost) or 2 (its
 * unit was replaced with an empty one: rebuilt from the inodes found). */
struct fsck_foster {
	struct od_foster rec;
	struct od_map_entry *map;
	uint8_t *lost;
};

/* The whole volume, for locating chunks and for -x reads (fsck_cross.c). */
struct fsck_vol {
	int fd;
	int dfd;                      /* the image opened O_DIRECT for bulk reads, or -1 */
	uint32_t nchunks;
	uint64_t *base;               /* byte offset of each chunk */
	uint64_t *size;               /* its size in bytes */
	struct od_chunk_header *hdr;  /* its header, when hdr_ok */
	uint8_t *hdr_ok;
	uint8_t uuid[16];             /* chunk 0's */
	int have_uuid;
	/* Only chunk 0 and chunk `one` located (fsck_vol_locate_one(): the
	 * others' entries are where chunk 0's size puts them, headers not
	 * read); fsck_vol_complete() locates the rest. */
	int partial;
	uint32_t one;
	uint64_t total;               /* the image's size */
	/* Chunks in stores of their own (fsck_opts.placed): read through
	 * those, not the image. */
	struct chunk_store *const *placed;
	uint32_t nplaced;
	/* Chunk 0's foster records, its header's and its table's, as read
	 * when the chunks were located (with hdr_ok[0]). */
	struct od_fosters fost0;
};

/* Chunk i's own store, or NULL when it is a region of the image. */
static inline struct chunk_store *fsck_vol_placed(const struct fsck_vol *v, uint32_t i)
{
	return i < v->nplaced ? v->placed[i] : NULL;
}

/* fsck_volume.c: every chunk of a partly located volume located (a no-op
 * otherwise). Not for several threads at once: a volume is only partly
 * located when one chunk is checked. 0, or -EUCLEAN when the chunk that
 * was checked is not where the whole walk puts it (said to no one: the
 * caller says it). */
int fsck_vol_complete(struct fsck_vol *v);

/* A chunk's newest dirty list and what becomes of it (fsck_txn.c). */
struct fsck_txlist {
	uint8_t loaded;     /* looked for */
	uint8_t present;    /* a valid list was found */
	uint8_t decided, rollback;
	uint64_t txid;
	uint32_t nparts;
	uint32_t n;         /* entries */
	uint32_t bad;       /* ... whose written copy does not carry txid */
	uint8_t marked;     /* some unit's other copy carries txid: committed */
	struct od_dl_entry *e;
};

struct fsck_ctx {
	const struct fsck_opts *o;
	struct fsck_result res;
	struct chunk_store *st;
	struct fsck_vol *vol;         /* NULL for a lone store */
	uint32_t index;
	struct od_chunk_header hdr;
	uint32_t half;
	int single_copy;
	int both;                     /* read both copies of every unit (fsck_unit_get) */
	int fatal;                    /* the check cannot go on */
	int oper;                     /* an operational error (negative errno) */
	int incomplete;               /* some owner of blocks may not have been seen */
	int clean_skip;               /* clean, no dirty list, no -f: not checked */
	uint32_t lost_units;          /* units found with no valid copy (salvage) */
	int lf_tried;                 /* lost+found's part looked for (fsck_lf_remake) */
	int salvage_walk;             /* walking units found (a number twice: told later) */
	struct fsck_far_part *farp;   /* the other chunks' pieces (fsck_farparts.c) */
	uint32_t nfarp;
	int farp_built;
	uint32_t expect;              /* the index asked for, UINT32_MAX: any */
	char line[1024];

	/* Units, by block. */
	struct fsck_unit **uhash;
	uint32_t uhash_size;
	struct fsck_unit *hdr_unit;
	struct fsck_run *runs;        /* read ahead, sorted by (copy, start) */
	uint32_t nruns, capruns;
	struct fsck_slab *slabs;

	/* The newest dirty list: units whose copies may differ. */
	struct fsck_hmap pend;        /* block + 1 -> copy written | units << 8 |
	                               * FSCK_PEND_HELD (fsck_txn.c) */
	int lists_present;
	uint64_t pend_txid;           /* the transaction of that list */
	int rollback;                 /* ... rolled back: the other copies are current */
	int force_write;              /* a repair run writes even if nothing else changed */
	int txn_report;               /* rolled back alone: bad written copies are problems */
	int restart;                  /* a repair needs another round of the check (fsck.c) */
	struct fsck_txlist tx_own;    /* this chunk's list */
	struct fsck_txlist *tx_far;   /* the volume's other chunks' (with vol), lazily */
	uint64_t tx_newest;           /* the volume's newest transaction (with vol) */
	int tx_newest_known, tx_newest_committed;

	/* Inodes and entries. */
	struct fsck_ino *recs;
	uint32_t nrecs, caprecs;
	struct fsck_hmap by_loc;      /* (block << 16 | off) -> record */
	struct fsck_hmap by_stable;   /* stable -> first record with it */
	struct fsck_dent *dents;
	uint32_t ndents, capdents;

	/* The stable-number map entries below the watermark. */
	struct od_map_entry *map;
	uint32_t nmap;
	uint8_t *map_lost;            /* its block was unreadable */
	/* The foster maps this chunk hosts (fsck_foster.c). */
	struct fsck_foster *fost;
	uint32_t nfost, capfost;
	/* Chunk 0: its foster table's units, in chain order (claimed in
	 * pass 3). */
	uint32_t ftab[OD_FTAB_MAX_UNITS];
	uint32_t nftab;
	/* Chunk 0: its records to be written again, header and table
	 * (fsck_ftab.c), when ftab_make. */
	struct od_fosters ftab_new;
	int ftab_make;

	/* Blocks: owner record + 1 of each (OWNER_FIXED for fixed metadata),
	 * and a bit per block, set when it has an owner (pass 5 compares it
	 * with the bitmap 64 blocks at a time). Written only through
	 * fsck_set_owner(). */
	uint32_t *owner;
	uint64_t *owned;
	uint8_t *disk_bitmap;         /* as read (implied by BITMAP_UNINIT) */
	uint8_t *bitmap_unknown;      /* per bitmap block: no valid copy */

	struct fsck_deferred *defs;
	uint32_t ndefs, capdefs;

	/* Header changes the repairs make. */
	int hdr_changed;
	int clear_uninit;
	uint32_t used_map;            /* USED map entries counted */
};

#define OWNER_FIXED 0xffffffffu

static inline void fsck_set_owner(struct fsck_ctx *c, uint32_t b, uint32_t owner)
{
	uint64_t bit = 1ull << (b & 63);

	c->owner[b] = owner;
	if (owner)
		c->owned[b >> 6] |= bit;
	else
		c->owned[b >> 6] &= ~bit;
}

/* Problem context: what a message's % expansions print. */
struct fsck_pctx {
	const struct fsck_ino *rec, *rec2; /* %i %j: an inode described */
	uint64_t ino, ino2;                /* %I %J: stable numbers */
	uint64_t num, num2;                /* %n %N: numbers */
	uint32_t blk;                      /* %b: a block */
	int copy;                          /* %c: a copy, %C: the other one */
	uint32_t slot;                     /* %S: an inode-area slot */
	const char *str;                   /* %s */
	const char *str2;                  /* %t */
	const uint8_t *name;               /* %e: an entry name, quoted */
	uint32_t name_len;
	uint64_t onum;                     /* %o: a number in octal */
};

/* The check was asked to stop (fsck_opts.cancel). */
static inline int fsck_cancelled(const struct fsck_ctx *c)
{
	return c->o->cancel && *c->o->cancel;
}

/* fsck_problem.c: report a problem; 1 when its repair is to be made now */
int fix_problem(struct fsck_ctx *c, uint32_t code, const struct fsck_pctx *pc);

/* fsck_message.c: a line of output; an inode described; fmt with the %
 * expansions of the problem table */
void fsck_note(struct fsck_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fsck_describe(const struct fsck_ctx *c, const struct fsck_ino *r, char *buf, size_t n);
void fsck_expand(const struct fsck_ctx *c, const char *fmt, const struct fsck_pctx *pc,
		 char *out, size_t room);

/* fsck_foster.c: foster maps (evacuation). fostered: the chunk's numbers
 * are mapped by a foster map elsewhere (its own map area is not read).
 * read (pass 1): the units of the foster maps hosted here; claim (pass 3):
 * their blocks; check (pass 4): their entries against the inodes here.
 * entry_here: number s's entry in a foster map hosted here (1), none (0),
 * -ESTALE beyond it or lost. */
int fsck_fostered(const struct fsck_ctx *c);
int fsck_foster_read(struct fsck_ctx *c);
/* the foster map of record f, hosted here, read into c->fost */
int fsck_foster_hosted(struct fsck_ctx *c, const struct od_foster *f);
void fsck_foster_claim(struct fsck_ctx *c);
void fsck_foster_check(struct fsck_ctx *c);
int fsck_foster_entry_here(const struct fsck_ctx *c, uint64_t s, struct od_map_entry *e);
void fsck_foster_free(struct fsck_ctx *c);

/* fsck_ftab.c: chunk 0's foster table made again. recover (pass 1, a
 * table not whole): have (the records that survive) and those the other
 * chunks' headers give back, to be written when PR_1_FTAB_BAD is fixed
 * (c->ftab_new); make (after pass 4): c->ftab_new written, the header's
 * records and the table's units, in the old chain's blocks and free
 * metadata pairs. 0 or a negative errno. */
int fsck_ftab_recover(struct fsck_ctx *c, const struct od_fosters *have, const char *why);
/* found: l (chunk 0's records, h0 its header) given the other headers'
 * records it lacks, and the maps that moved into chunk 0 that a retired
 * home's own record no longer names (od_fosters_recover); each home that
 * cannot be taken reported (PR_1_FTAB_REC_LOST, the table at block, why it
 * is not whole). 0, -1 when a home could not be taken, -ENOMEM. */
int fsck_ftab_found(struct fsck_ctx *c, struct od_fosters *l, const struct od_chunk_header *h0,
		    uint32_t block, const char *why);
int fsck_ftab_make(struct fsck_ctx *c);
/* plan: l (taken over, left empty) to be written as chunk 0's records */
void fsck_ftab_plan(struct fsck_ctx *c, struct od_fosters *l);

/* fsck_unit.c: metadata units through both copies */
/* A unit through both copies; problems about its copies are reported the
 * first time. *out always set on 0; (*out)->data is NULL when no copy is
 * valid and the repair was not made. owner: header owner of a replacement. */
int fsck_unit_get(struct fsck_ctx *c, uint32_t block, uint16_t units, uint16_t type,
		  uint64_t owner, struct fsck_unit **out);
struct fsck_unit *fsck_unit_find(struct fsck_ctx *c, uint32_t block);
/* A unit written anew, empty (a directory unit: one free entry), kept
 * with the others; both copies are written at the end. 0 or -ENOMEM. */
int fsck_unit_new(struct fsck_ctx *c, uint32_t block, uint16_t units, uint16_t type,
		  uint64_t owner, struct fsck_unit **out);
void fsck_unit_add(struct fsck_ctx *c, struct fsck_unit *u);
void fsck_unit_modified(struct fsck_ctx *c, struct fsck_unit *u);
/* Choose the current copy of u (u->cur, -1: none) from the two read and
 * report what is wrong with the other; u->data is not set. Used for the
 * chunk header by pass 1. */
int fsck_unit_decide(struct fsck_ctx *c, struct fsck_unit *u, uint8_t *raw[2], const int valid[2],
		     const char *why[2]);
/* What a unit's heal[] asks for a copy. */
#define FSCK_HEAL_FIX 1    /* a repair: rewrite the copy from the current one */
#define FSCK_HEAL_SETTLE 2 /* a pending catch-up: done only when the run writes anyway */
/* One copy read from the chunk's store (why[] on failure), and whether it
 * passes as the unit at block of type (0: any type). */
int fsck_read_copy(struct fsck_ctx *c, uint8_t *buf, size_t len, uint64_t off, char *why,
		   size_t n);
int fsck_copy_ok(struct fsck_ctx *c, const uint8_t *buf, size_t len, uint32_t block,
		 uint16_t type, char *why, size_t n);

/* fsck_readahead.c */
/* Read blocks [start, start + n) of copy 0 (and of copy 1 with c->both)
 * in requests of up to FSCK_RUN_BLOCKS, for fsck_unit_get to take its
 * units from. Only a shortcut: a range that cannot be read is left to be
 * read unit by unit. 0 or -ENOMEM. Requests of 4 MiB: a cold check is
 * bound by its reads, one at a time, and these take a quarter of the
 * per-request cost of 1 MiB ones. */
#define FSCK_RUN_BLOCKS 1024u
int fsck_prefetch(struct fsck_ctx *c, uint32_t start, uint32_t n);
/* The copy-0 blocks of the lower metadata zone that the bitmap read says
 * are in use in both halves (directory and extent units, mostly), read
 * ahead before pass 2. */
int fsck_prefetch_zone(struct fsck_ctx *c);
/* The bytes of [block, block + units) of a copy from a run read ahead,
 * each block handed out once (units that overlap get their own reads), or
 * NULL when no run holds them. */
uint8_t *fsck_run_take(struct fsck_ctx *c, uint8_t copy, uint32_t block, uint16_t units);

/* fsck_write.c: the repaired units to both copies, then the header */
int fsck_write_out(struct fsck_ctx *c);

/* fsck_mem.c: len bytes that live as long as the context, or NULL; all
 * of them given back at once. */
void *fsck_alloc(struct fsck_ctx *c, size_t len);
void fsck_mem_free(struct fsck_ctx *c);
/* An array of context memory (*arr, *cap elements of elem bytes) with room
 * for need: moved to a larger one when it has not (the old one stays until
 * the context goes). 0 or -ENOMEM (through fsck_oom()). */
int fsck_grow(struct fsck_ctx *c, void *arr, uint32_t *cap, size_t elem, uint32_t need);
/* Out of memory: the check stops (fatal, operational error); -ENOMEM. */
int fsck_oom(struct fsck_ctx *c);

/* fsck_hmap.c */
static inline uint64_t fsck_hkey(uint64_t k)
{
	return k * 0x9E3779B97F4A7C15ull;
}
/* 0 put, 1 the key was there (left as it was); set: replaced. -ENOMEM */
int fsck_hmap_put(struct fsck_hmap *m, uint64_t key, uint32_t val);
int fsck_hmap_set(struct fsck_hmap *m, uint64_t key, uint32_t val);
uint32_t fsck_hmap_get(const struct fsck_hmap *m, uint64_t key);
void fsck_hmap_free(struct fsck_hmap *m);
/* Room for n keys without growing. 0 or -ENOMEM. */
int fsck_hmap_reserve(struct fsck_hmap *m, uint32_t n);

/* fsck_rec.c: records, deferred checks, places */
/* Room for nrecs records and entries, and their tables, up front (pass 1,
 * from the header's counters): no growth while the passes run. */
int fsck_reserve(struct fsck_ctx *c, uint32_t nrecs);
int fsck_add_rec(struct fsck_ctx *c, const struct od_inode *ino, uint32_t block, uint16_t off,
		 uint32_t slot, uint32_t dent, uint32_t *idx);
uint32_t fsck_rec_at(const struct fsck_ctx *c, uint32_t block, uint16_t off);
/* ino written into inode-area slot `slot` (at block, off, its unit read)
 * and its record: the dead one in that place, or a new one. */
int fsck_slot_put(struct fsck_ctx *c, uint32_t block, uint16_t off, uint32_t slot,
		  const struct od_inode *ino, uint32_t *ri);
/* The record of the inode numbered s in this chunk: where the map says
 * when the number is homed here, else the first one found with it. */
uint32_t fsck_rec_by_stable(const struct fsck_ctx *c, uint64_t s);
int fsck_defer(struct fsck_ctx *c, int kind, uint32_t rec, uint32_t idx, uint64_t stable,
	       struct od_loc loc);
int fsck_in_data_area(const struct fsck_ctx *c, uint32_t start, uint32_t len);
int fsck_meta_place(const struct fsck_ctx *c, uint32_t start, uint32_t units);
/* Has the one-block unit at block a copy that passes as a unit of type?
 * (fsck_pred.c; a chain's unit with none is reported lost, not replaced
 * by an empty one) */
int fsck_any_copy_ok(struct fsck_ctx *c, uint32_t block, uint16_t type);

/* fsck_pass3.c: an extent list and the blocks of its chain of extent
 * units: arrays the caller keeps from one inode to the next
 * (fsck_exts_free() at the end). */
struct fsck_exts {
	struct od_extent *ext;
	uint32_t n, cap;
	uint32_t *units;
	uint32_t nunits, ucap;
};

/* The extent list of r (ext[] and its chain of extent units, read here)
 * into x, replacing what x held. Problems reported once per inode. */
int fsck_extents(struct fsck_ctx *c, uint32_t ri, struct fsck_exts *x);
void fsck_exts_free(struct fsck_exts *x);

/* The passes. Each returns 0 or a negative errno (operational error);
 * problems go through fix_problem(). */
int fsck_pass1(struct fsck_ctx *c);
int fsck_pass2(struct fsck_ctx *c);
int fsck_pass3(struct fsck_ctx *c);
int fsck_pass4(struct fsck_ctx *c);
int fsck_pass5(struct fsck_ctx *c);

/* fsck_pass1.c: 1 when the chunk says clean and has no dirty list (no -f:
 * skipped); the checks every inode gets, wherever it lives; the number of
 * chunks of the volume; a mode of a known type; a slot zeroed (its record
 * dead) */
int fsck_pass1_clean(const struct fsck_ctx *c);
void fsck_check_inode(struct fsck_ctx *c, uint32_t ri);
uint32_t fsck_chunk_count(const struct fsck_ctx *c);
int fsck_mode_ok(uint32_t mode);
void fsck_zero_slot(struct fsck_ctx *c, uint32_t ri);

/* fsck_pred.c (from pass 3): the predictor's chain in chunk 0, checked
 * and claimed for the volume, or cleared. 0 or a negative errno. */
int fsck_pred(struct fsck_ctx *c);

/* fsck_pass3.c: forget the blocks claimed by r (its inode is going away) */
void fsck_unclaim(struct fsck_ctx *c, uint32_t ri);

/* fsck_pass4.c: clear the entry (a repair), and its embedded inode with
 * it; a link count set; end r's chain (its next pointer leads nowhere);
 * map entry idx (c->map[idx]) written into its map unit */
void fsck_clear_entry(struct fsck_ctx *c, uint32_t di);
void fsck_set_nlink(struct fsck_ctx *c, uint32_t ri, uint32_t nlink);
void fsck_cut_chain(struct fsck_ctx *c, uint32_t ri);
void fsck_write_map_entry(struct fsck_ctx *c, uint32_t idx);

/* fsck_pass4_lost.c: link the orphans into lost+found; a lost root made
 * anew, empty, in *slot; the inode of record ri back into its unit; ri
 * linked into lost+found as name */
int fsck_lost_found(struct fsck_ctx *c);
const char *fsck_root_place(struct fsck_ctx *c, uint32_t *slot);
int fsck_make_root(struct fsck_ctx *c, uint32_t slot);
void fsck_store_inode(struct fsck_ctx *c, uint32_t ri);
int fsck_link_orphan(struct fsck_ctx *c, uint32_t ri, const char *name);
/* orphan ri linked into lost+found as #<number>, or reported and kept (or
 * cleared); why ri, cut off from its head, could not be made an inode of
 * its own and linked there (NULL: it can) */
int fsck_adopt_orphan(struct fsck_ctx *c, uint32_t ri);
const char *fsck_adopt_blocker(struct fsck_ctx *c, uint32_t ri);
/* a map index for a new number, its generation, and the entry claimed
 * for record r (its map block made when it is the first) */
int fsck_map_slot(const struct fsck_ctx *c, uint32_t *idx);
uint32_t fsck_map_next_gen(const struct fsck_ctx *c, uint32_t idx);
int fsck_map_claim(struct fsck_ctx *c, uint32_t idx, const struct fsck_ino *r);

/* fsck_farparts.c: the other chunks' continuations and directory parts
 * (read once per check, by head); lost+found's number from one of its
 * parts; where the chain from head h (inode *head) expects a piece in this
 * chunk (*want) and the piece that came after it (*next), OD_LOC_NONE
 * chunks when there is none. */
struct fsck_far_part {
	uint64_t head;
	struct od_loc at, next;
	uint32_t flags, head_chunk;
	uint8_t dir;
};
/* read them (once; the whole volume located first) */
int fsck_far_build(struct fsck_ctx *c);
/* the pieces of head h, c->farp[*first ..] (built when first asked for);
 * the first of n of them that no other names (FSCK_NONE: a loop) */
int fsck_far_pieces(struct fsck_ctx *c, uint64_t h, uint32_t *first, uint32_t *n);
uint32_t fsck_chain_start(const struct fsck_ctx *c, uint32_t first, uint32_t n);
int fsck_far_lf_head(struct fsck_ctx *c, uint64_t *lf);
/* every chunk of the volume located (a check of one chunk located two) */
int fsck_vol_ready(struct fsck_ctx *c);
int fsck_chain_gap(struct fsck_ctx *c, uint64_t h, const struct od_inode *head,
		   struct od_loc *want, struct od_loc *next);

/* fsck_rebuild.c: a header for chunk index made again from another chunk
 * of its size (*donor) and this chunk's bytes; -ENOENT with *why when it
 * cannot be */
int fsck_header_rebuild(struct fsck_ctx *c, uint32_t index, struct od_chunk_header *out,
			uint32_t *donor, const char **why);

/* fsck_salvage.c: directory units no inode reaches made directories
 * (pass 2: the number made, then numbered once every inode is known);
 * record ri given a number of this chunk; lost+found's part here made
 * anew (pass 4); a part or continuation cut off from its head adopted
 * (the cross-chunk step) */
int fsck_salvage_units(struct fsck_ctx *c);
int fsck_salvage_finish(struct fsck_ctx *c);
int fsck_salvage_number(struct fsck_ctx *c, uint32_t ri);
int fsck_lf_remake(struct fsck_ctx *c, uint32_t *lf);
int fsck_adopt_far(struct fsck_ctx *c, uint32_t ri);

/* fsck_txn.c: this chunk's newest dirty list into c->pend, and whether
 * it is rolled back (c->rollback); the copy of a unit of chunk `chunk` to
 * read for its current version (*copy -1: the newer valid one). */
int fsck_txn_read(struct fsck_ctx *c);
int fsck_txn_far_copy(struct fsck_ctx *c, uint32_t chunk, uint32_t block, int *copy);
void fsck_txn_free(struct fsck_ctx *c);

/* fsck_cross.c: the deferred checks, printed or (with -x) confirmed */
int fsck_cross(struct fsck_ctx *c);
/* The inode at loc in another chunk; the map entry of number s in its
 * home chunk (this one or another). 0 or a negative errno. */
int fsck_far_inode(struct fsck_ctx *c, struct od_loc loc, struct od_inode *ino);
int fsck_far_unit(struct fsck_ctx *c, uint32_t chunk, uint32_t block, uint16_t units,
		  uint16_t type, uint8_t *buf);
int fsck_map_entry_of(struct fsck_ctx *c, uint64_t s, struct od_map_entry *e);
int fsck_vol_pread(const struct fsck_vol *v, uint32_t chunk, void *buf, size_t len, uint64_t off);
int fsck_vol_read_header(struct fsck_vol *v, uint32_t i, uint64_t base, uint64_t avail,
			 uint32_t guess_nblocks);

/* fsck.c: one chunk's check, its result added to *out (vol: NULL for a
 * lone store); results summed. The volume level is fsck_volume.c. */
int fsck_check_chunk(struct chunk_store *st, uint32_t expect, const struct fsck_opts *o,
		     struct fsck_vol *vol, struct fsck_result *out);
void fsck_add_result(struct fsck_result *to, const struct fsck_result *r);

/* fsck_pass4.c: does map entry e of number s place a live head inode of
 * this chunk where it says? 1 (a generation that differs reported to
 * p), else 0. */
int fsck_map_entry_found(struct fsck_ctx *c, uint64_t s, const struct od_map_entry *e,
			 struct fsck_pctx *p);

#endif
