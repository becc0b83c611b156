/* The on-disk format v1 (doc/format.md describes it byte by byte): sizes,
 * magic numbers and the in-memory forms of every on-disk structure. Only
 * fs/format/ondisk.c turns these into bytes and back; nothing casts a buffer. */
#ifndef CHUNKFS_ONDISK_H
#define CHUNKFS_ONDISK_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#define OD_BLOCK_SIZE 4096u
#define OD_BLOCK_SHIFT 12
#define OD_FORMAT_VERSION 1u
#define OD_CHUNK_MAGIC "CHUNKFS1"
#define OD_MIN_CHUNK_SIZE (1ull << 20)
#define OD_MAX_CHUNK_SIZE (16ull << 30)
#define OD_MAX_CHUNKS 65535u

/* Every metadata unit starts with this header. */
#define OD_MB_MAGIC 0x424d4b43u /* "CKMB" */
#define OD_MB_HEADER_SIZE 48u
#define OD_MB_PAYLOAD (OD_BLOCK_SIZE - OD_MB_HEADER_SIZE)
/* Blocks one block-bitmap block covers. */
#define OD_BITMAP_BITS_PER_BLOCK (OD_MB_PAYLOAD * 8u)

enum od_mb_type {
	OD_MB_CHUNK_HEADER = 1,
	OD_MB_DIRTY_LIST = 2,
	OD_MB_BITMAP = 3,
	OD_MB_MAP = 4,
	OD_MB_ITABLE = 5,
	OD_MB_DIR = 6,
	OD_MB_EXTENTS = 7,
	OD_MB_FOSTER = 8, /* a block of an evacuated chunk's foster map */
	/* predp: the learned predictor's table, a chain in chunk 0 named by
	 * od_chunk_header.pred_start (OD_FEATURE_RO_COMPAT_PREDICT). */
	OD_MB_PREDICT = 9,
	/* fostertab: chunk 0's foster records beyond its header's
	 * OD_MAX_FOSTERS, a chain named by od_chunk_header.ftab_start
	 * (OD_FEATURE_INCOMPAT_FTAB). */
	OD_MB_FTAB = 10,
};

struct od_mb_header {
	uint32_t magic;
	uint16_t type;
	uint16_t units;  /* blocks in this metadata unit (1, or the dir unit) */
	uint32_t crc;    /* CRC32C of the whole unit with this field zero */
	uint32_t chunk;  /* index of the chunk holding it */
	uint32_t block;  /* its own (primary) block number */
	uint32_t seq;    /* dir units: logical index in the directory part */
	uint64_t txid;   /* transaction that last wrote it */
	uint64_t owner;  /* dir/extent units: stable number of the owning file */
	uint32_t next;   /* extent units: next unit of the chain, 0 = none */
	uint32_t reserved;
};

/* Chunk states (od_chunk_header.state). */
enum od_chunk_state {
	OD_STATE_CLEAN = 0,
	OD_STATE_DIRTY = 1,
	OD_STATE_OFFLINE = 2,
	OD_STATE_NEEDS_REPAIR = 3,
};

/* Chunk kinds (od_chunk_header.kind): where allocation places files by
 * their expected size; fs.h's enum fs_chunk_kind has the same values. */
enum od_chunk_kind {
	OD_KIND_GENERAL = 0,
	OD_KIND_SMALL = 1,
	OD_KIND_LARGE = 2,
};

/* The name of the directory that fsck links orphans into; it has a part in
 * every chunk (fs/lostfound.c makes them, fs/fsck/ repairs them). */
#define OD_LF_NAME "lost+found"
#define OD_LF_NAME_LEN 10u

/* od_chunk_header.flags */
#define OD_CHF_BITMAP_UNINIT 0x1u /* bitmap not written yet: derive from geometry */
#define OD_CHF_SINGLE_COPY 0x2u   /* benchmark mode: mirrors not written */
/* Being evacuated (chunkfsctl evacuate): no new object, directory part,
 * continuation or data extent is placed here; what is here stays reachable
 * and may still change (an entry for a new link of an inode here, an
 * extent unit). A build that ignores the bit merely keeps allocating. */
#define OD_CHF_DRAINING 0x4u
/* Fostered (evacuation): the numbers homed here are mapped by a foster map
 * in another chunk (od_chunk_header.fosters); this chunk's own map area is
 * no longer read, and nothing new is homed here. Set with
 * OD_FEATURE_INCOMPAT_FOSTER. */
#define OD_CHF_FOSTERED 0x8u

/* Feature flags: a reader refuses unknown incompat bits, opens read-only
 * with unknown ro_compat bits, ignores unknown compat bits. */
/* evac2: a draining chunk's header keeps its evacuation's state and
 * cursors (od_chunk_header.evac_*): a build that ignores them only scans
 * from the start again and runs a paused evacuation. */
#define OD_FEATURE_COMPAT_EVAC 0x1u
#define OD_FEATURE_COMPAT_SUPP OD_FEATURE_COMPAT_EVAC
/* Dirty lists may hold held entries (OD_DLE_HELD). */
#define OD_FEATURE_INCOMPAT_HELD_ENTRIES 0x1u
/* The header carries foster maps (od_chunk_header.fosters): a build that
 * reads numbers through a chunk's own map only would find stale entries
 * there, and a check unaware of them would free the foster map's blocks. */
#define OD_FEATURE_INCOMPAT_FOSTER 0x2u
/* evac2: a foster record says its home chunk is retired (OD_FOSTER_RETIRED,
 * its size in od_chunk_header.retired_nblocks): a build that does not know
 * it would open the retired chunk, whose store may be gone. */
#define OD_FEATURE_INCOMPAT_RETIRED 0x4u
/* fostertab: chunk 0's foster records go on past its header's 32 in a
 * chain of OD_MB_FTAB units (od_chunk_header.ftab_*): a build that reads
 * only the header would lose the maps, and the retired chunks, named in
 * the table. */
#define OD_FEATURE_INCOMPAT_FTAB 0x8u
#define OD_FEATURE_INCOMPAT_SUPP                                                     \
	(OD_FEATURE_INCOMPAT_HELD_ENTRIES | OD_FEATURE_INCOMPAT_FOSTER |             \
	 OD_FEATURE_INCOMPAT_RETIRED | OD_FEATURE_INCOMPAT_FTAB)
/* predp: chunk 0 keeps the learned predictor's table (pred_start): a
 * chunkfs that does not know it would free its units as unowned. */
#define OD_FEATURE_RO_COMPAT_PREDICT 0x1u
#define OD_FEATURE_RO_COMPAT_SUPP OD_FEATURE_RO_COMPAT_PREDICT

#define OD_DIRTY_LIST_BLOCKS 16u
#define OD_DEFAULT_DIR_UNIT 4u /* blocks per directory unit: 16 KiB */
#define OD_MAX_DIR_UNIT 8u     /* the largest a header may give */

/* A foster map: home chunk `home`'s stable-number map, moved in one
 * transaction into `nblocks` blocks (one OD_MB_FOSTER unit each, owner =
 * home, mirrored at + half) from block `start` of chunk `chunk`; it holds
 * `entries` entries (the home's map watermark then: it never grows, no
 * number is homed in a fostered chunk again). */
#define OD_MAX_FOSTERS 32u
#define OD_FOSTER_RETIRED 0x1u /* the home chunk is retired: never opened, never read */
#define OD_FOSTER_SIZE 24u
struct od_foster {
	uint32_t home;
	uint32_t chunk;
	uint32_t start;
	uint32_t nblocks;
	uint32_t entries;
	uint32_t flags;          /* OD_FOSTER_* */
};

struct od_chunk_header {
	uint32_t version;
	uint32_t feature_compat;
	uint32_t feature_incompat;
	uint32_t feature_ro_compat;
	uint8_t volume_uuid[16];
	uint32_t chunk_index;
	uint32_t chunk_count;
	uint32_t block_size;
	uint32_t nblocks;        /* blocks in this chunk; the mirror half is nblocks / 2 */
	uint32_t kind;           /* enum od_chunk_kind */
	uint32_t state;          /* enum od_chunk_state */
	uint32_t flags;          /* OD_CHF_* */
	uint32_t dir_unit;       /* blocks per directory unit */
	uint32_t max_inodes;     /* stable-number map entries */
	uint32_t islots;         /* inode-area slots */
	uint32_t dirty_start, dirty_blocks;
	uint32_t bitmap_start, bitmap_blocks;
	uint32_t map_start, map_blocks;
	uint32_t itable_start, itable_blocks;
	uint32_t data_start;     /* first block after the fixed metadata */
	uint32_t map_watermark;  /* map entries ever initialised */
	uint32_t islot_watermark; /* inode slots ever initialised */
	uint32_t free_blocks;    /* counters: hints, recomputed by fsck */
	uint32_t used_inodes;
	uint64_t root_stable;    /* the volume's root directory */
	uint64_t mkfs_time;
	uint64_t last_check_time;
	uint64_t txid;           /* last committed transaction */
	char label[32];
	uint8_t secret[32];      /* per-volume key of the file-handle HMAC */

	/* Foster maps (evacuation; OD_FEATURE_INCOMPAT_FOSTER). Chunk 0
	 * names every one and decides (its first 32 records here, the others
	 * in its foster table, ftab_* below); the header of the chunk
	 * hosting one and that of its home chunk carry its record too, so
	 * that each can be checked alone. Encoded at byte 1024 of the
	 * payload, apart from other features' fields. */
	uint32_t nfosters;
	struct od_foster fosters[OD_MAX_FOSTERS];
	/* predp (the learned predictor kept in the volume): chunk 0 only, the
	 * first unit of its OD_MB_PREDICT chain, 0 = none. */
	uint32_t pred_start;
	/* evac2 (retiring a chunk, an evacuation kept across restarts),
	 * encoded at byte 2048 of the payload. retired_nblocks[i]: chunk 0's,
	 * the size in blocks of the home chunk of fosters[i] once that record
	 * is OD_FOSTER_RETIRED (an image's layout needs it, and the retired
	 * chunk is never read again), 0 otherwise; with
	 * OD_FEATURE_INCOMPAT_RETIRED. evac_*: a draining chunk's own, its
	 * evacuation's state (OD_EVAC_*) and where its scans go on (the next
	 * inode-area slot, the next foster map entry), with
	 * OD_FEATURE_COMPAT_EVAC. */
	uint32_t retired_nblocks[OD_MAX_FOSTERS];
	uint32_t evac_state;
	uint32_t evac_slot;
	uint32_t evac_map;
	/* fostertab, chunk 0 only, with OD_FEATURE_INCOMPAT_FTAB (payload
	 * byte 2192): chunk 0's records after the header's (which is then
	 * full), in a chain of ftab_units OD_MB_FTAB units from block
	 * ftab_start (0 = none), ftab_count records in all. */
	uint32_t ftab_start;
	uint32_t ftab_count;
	uint32_t ftab_units;
};

/* A foster table unit (OD_MB_FTAB): mb header seq = its index in the
 * chain, next = the next unit's block (0 = the last), owner 0; payload: a
 * u32 count of the records in it, 4 bytes zero, then count entries of a
 * record (OD_FOSTER_SIZE bytes, as in the header) and its u32
 * retired_nblocks. Every unit but the last holds OD_FTAB_PER_UNIT. */
#define OD_FTAB_HEAD_SIZE 8u
#define OD_FTAB_ENTRY_SIZE (OD_FOSTER_SIZE + 4u)
#define OD_FTAB_PER_UNIT ((OD_MB_PAYLOAD - OD_FTAB_HEAD_SIZE) / OD_FTAB_ENTRY_SIZE)
#define OD_FTAB_MAX_UNITS ((OD_MAX_CHUNKS + OD_FTAB_PER_UNIT - 1) / OD_FTAB_PER_UNIT)

#define OD_EVAC_NONE 0u
#define OD_EVAC_RUNNING 1u
#define OD_EVAC_PAUSED 2u

/* Locations of inodes: a slot in the inode area or an entry in a dir unit. */
#define OD_LOC_NONE 0xffffffffu
struct od_loc {
	uint32_t chunk;
	uint32_t block;  /* first block of the unit holding the inode */
	uint16_t off;    /* byte offset of the inode in that unit */
};

/* The stable-number map: one 16-byte entry per number homed in the chunk. */
#define OD_MAP_ENTRY_SIZE 16u
#define OD_MAP_PER_BLOCK (OD_MB_PAYLOAD / OD_MAP_ENTRY_SIZE)
#define OD_MAPF_USED 0x1u
struct od_map_entry {
	struct od_loc loc;
	uint16_t flags;
	uint32_t generation;
};

/* Stable numbers: the home chunk in the high 32 bits, the map index + 1 low. */
#define OD_STABLE(chunk, idx) (((uint64_t)(chunk) << 32) | ((uint64_t)(idx) + 1))
#define OD_STABLE_CHUNK(s) ((uint32_t)((s) >> 32))
#define OD_STABLE_INDEX(s) ((uint32_t)(s) - 1)

/* Inodes: 256 bytes, in an inode-area slot or embedded in a dir entry. */
#define OD_INODE_SIZE 256u
#define OD_INODE_EXTENTS 7u
#define OD_ISLOTS_PER_BLOCK (OD_MB_PAYLOAD / OD_INODE_SIZE)

#define OD_INF_INLINE 0x01u     /* data inline after the embedded inode */
#define OD_INF_FRESH 0x02u      /* created and not yet changed: may go inline */
#define OD_INF_CONT 0x04u       /* a continuation of the file head_stable */
#define OD_INF_EXCL 0x08u       /* created EXCLUSIVE: verifier is valid */
#define OD_INF_LOSTFOUND 0x10u  /* lost+found's head and parts: kept even when empty */

struct od_extent {
	uint64_t lblk;   /* logical block in the file (or dir unit index) */
	uint32_t pblk;   /* first block in the chunk */
	uint32_t len;    /* blocks */
};

struct od_inode {
	uint64_t stable;
	uint32_t generation;
	uint32_t mode;
	uint32_t nlink;
	uint32_t uid, gid;
	uint32_t flags;
	uint64_t size;
	int64_t atime, mtime, ctime;
	uint32_t atime_ns, mtime_ns, ctime_ns;
	uint32_t rdev;
	uint64_t verifier;
	uint64_t parent;        /* directories: the parent's stable number */
	struct od_loc next;     /* forward pointer: next continuation */
	uint16_t nextents;      /* extents in ext[] */
	uint32_t head_chunk;    /* back pointer (continuations): head's chunk */
	uint64_t head_stable;   /* back pointer: head's stable number */
	uint64_t cont_start;    /* first logical block this continuation covers */
	uint32_t ext_block;     /* extent overflow chain, 0 = none */
	uint32_t inline_len;
	uint64_t blocks;        /* data blocks held in this chunk */
	struct od_extent ext[OD_INODE_EXTENTS];
};

#define OD_EXT_PER_UNIT (OD_MB_PAYLOAD / 16u)

/* Directory entries inside a dir unit, after the unit header:
 * rec_len covers the entry and any free space after it. */
#define OD_DIRENT_HEADER 16u
enum od_dirent_kind {
	OD_DE_FREE = 0,
	OD_DE_EMBEDDED = 1, /* the inode (and inline data) follows the name */
	OD_DE_REF = 2,      /* the inode lives elsewhere in this chunk */
};
struct od_dirent {
	uint16_t rec_len;
	uint8_t name_len;
	uint8_t kind;
	uint32_t hash;      /* CRC32C of the name */
	uint64_t stable;
};

static inline uint32_t od_align8(uint32_t n)
{
	return (n + 7u) & ~7u;
}

/* Bytes an entry needs: header, name, and an embedded inode + inline data. */
static inline uint32_t od_dirent_size(uint32_t name_len, int embedded, uint32_t inline_len)
{
	uint32_t n = OD_DIRENT_HEADER + od_align8(name_len);

	if (embedded)
		n += OD_INODE_SIZE + od_align8(inline_len);
	return n;
}

/* Dirty lists: the first block's payload starts with this head, then
 * 8-byte entries; later blocks hold entries only. */
struct od_dl_head {
	uint32_t nblocks;   /* blocks of this list */
	uint32_t nentries;
	uint32_t nparts;    /* chunks taking part in the transaction */
};
struct od_dl_entry {
	uint32_t block;     /* first block of the unit (primary numbering) */
	uint16_t units;     /* its length in blocks */
	uint8_t copy;       /* the copy the transaction writes: 0 first, 1 mirror */
	uint8_t flags;      /* OD_DLE_* */
};
/* A held entry names a unit the transaction does not write: an earlier
 * committed transaction changed it, and its copy `copy` holds the current
 * version (today both copies do; lists of older versions may name one
 * whose other copy is still older). Recovery copies `copy` over the other
 * whatever became of the transaction; a held entry takes no part in
 * deciding whether it committed. Only in chunks with
 * OD_FEATURE_INCOMPAT_HELD_ENTRIES. */
#define OD_DLE_HELD 0x1u
#define OD_DLE_KNOWN OD_DLE_HELD

/* predp: a predictor unit's payload starts with this head, then `count`
 * entries of PRED_ENTRY_BYTES (fs/predict.c gives their bytes). Every unit
 * of the chain carries the same head but for count; the unit header's seq
 * is the unit's index in the chain, next the next unit's block. */
#define OD_PRED_HEAD_SIZE 48u
#define OD_PRED_ENTRY_SIZE 184u
#define OD_PRED_PER_UNIT ((OD_MB_PAYLOAD - OD_PRED_HEAD_SIZE) / OD_PRED_ENTRY_SIZE)
/* The table holds at most this many entries (fs/predict.h's PRED_SLOTS),
 * so a chain has at most OD_PRED_MAX_UNITS units. */
#define OD_PRED_MAX_ENTRIES 1024u
#define OD_PRED_MAX_UNITS ((OD_PRED_MAX_ENTRIES + OD_PRED_PER_UNIT - 1) / OD_PRED_PER_UNIT)
struct od_pred_head {
	uint32_t count;     /* entries in this unit */
	uint32_t total;     /* entries in the chain */
	uint32_t nunits;    /* units in the chain */
	uint32_t reserved;
	uint64_t observed;  /* sizes observed, lifetimes observed, entries replaced */
	uint64_t lives;
	uint64_t evicted;
	int64_t saved;      /* time(2) of the save */
};

/* ondisk.c */
void od_put_pred_head(uint8_t *buf, const struct od_pred_head *h);
/* Entry k of a foster table unit's payload p (its count: od_*_ftab_count). */
void od_put_ftab_entry(uint8_t *p, uint32_t k, const struct od_foster *f, uint32_t retired);
void od_get_ftab_entry(const uint8_t *p, uint32_t k, struct od_foster *f, uint32_t *retired);
void od_put_ftab_count(uint8_t *p, uint32_t count);
uint32_t od_get_ftab_count(const uint8_t *p);
void od_get_pred_head(const uint8_t *buf, struct od_pred_head *h);
void od_put_mb_header(uint8_t *buf, const struct od_mb_header *h);
void od_get_mb_header(const uint8_t *buf, struct od_mb_header *h);
/* Stamp the CRC of a unit of len bytes; check returns 0 or -EBADMSG. */
void od_seal(uint8_t *buf, size_t len);
int od_verify(const uint8_t *buf, size_t len);
void od_put_chunk_header(uint8_t *buf, const struct od_chunk_header *ch);
int od_get_chunk_header(const uint8_t *buf, struct od_chunk_header *ch);
void od_put_inode(uint8_t *buf, const struct od_inode *ino);
void od_get_inode(const uint8_t *buf, struct od_inode *ino);
void od_put_map_entry(uint8_t *buf, const struct od_map_entry *e);
void od_get_map_entry(const uint8_t *buf, struct od_map_entry *e);
void od_put_extent(uint8_t *buf, const struct od_extent *e);
void od_get_extent(const uint8_t *buf, struct od_extent *e);
void od_put_dirent(uint8_t *buf, const struct od_dirent *d);
void od_get_dirent(const uint8_t *buf, struct od_dirent *d);
/* Bytes the entry at buf really uses (its rec_len may cover slack too). */
uint32_t od_dirent_used(const uint8_t *buf, const struct od_dirent *d);
void od_put_dl_head(uint8_t *buf, const struct od_dl_head *h);
void od_get_dl_head(const uint8_t *buf, struct od_dl_head *h);
void od_put_dl_entry(uint8_t *buf, const struct od_dl_entry *e);
void od_get_dl_entry(const uint8_t *buf, struct od_dl_entry *e);

#endif
