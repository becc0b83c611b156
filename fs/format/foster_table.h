/* Chunk 0's foster records as every program that touches an image reads
 * them (fostertab): the header's OD_MAX_FOSTERS, then those of its table
 * of OD_MB_FTAB units, in one list; read through any byte source, one copy
 * or the newer of the two; and the unit of the list a writer puts back.
 * Nothing here knows of volumes, caches or repairs. */
#ifndef CHUNKFS_FORMAT_FOSTER_TABLE_H
#define CHUNKFS_FORMAT_FOSTER_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "fs/format/header.h"
#include "fs/format/ondisk.h"

/* Every record chunk 0 names, in order: rec[i] for i < OD_MAX_FOSTERS in
 * the header's fosters[i], the others in table unit (i - 32) / 144, whose
 * blocks are units[] (nunits of them, in chain order). retired[i]: the
 * record's retired_nblocks. */
struct od_fosters {
	uint32_t n, cap;
	struct od_foster *rec;
	uint32_t *retired;
	uint32_t nunits;
	uint32_t units[OD_FTAB_MAX_UNITS];
	uint32_t lost_block; /* od_fosters_read: the block of the unit it stopped at
			      * (no good copy, or records that disagree with the
			      * header), 0: whole, or not known */
};

/* Are chunk 0's table fields (ftab_units, ftab_count) of a possible shape? */
int od_fosters_shape_ok(const struct od_chunk_header *h0);

/* out (overwritten, to be freed with od_fosters_free) from chunk 0's
 * header h0 and its table at byte base of src: copy 0 or 1 of each unit,
 * or the newer valid one (copy -1); copy 0 in a SINGLE_COPY chunk.
 * 0; -EUCLEAN and why[] when the table is not whole (a unit without that
 * copy, a chain or count that disagrees with the header, a bad record, a
 * home twice), out then holding the records read before; -ENOMEM. */
int od_fosters_read(const struct od_header_src *src, uint64_t base,
		    const struct od_chunk_header *h0, int copy, struct od_fosters *out, char *why,
		    size_t n);
void od_fosters_free(struct od_fosters *l);
/* rec (with retired) appended: 0 or -ENOMEM. */
int od_fosters_add(struct od_fosters *l, const struct od_foster *rec, uint32_t retired);
/* The index of home's record, or -1. */
int od_fosters_find(const struct od_fosters *l, uint32_t home);
/* The size in blocks of retired chunk home, or 0: it is not retired. */
uint32_t od_fosters_retired(const struct od_fosters *l, uint32_t home);
/* Where od_fosters_recover looks for maps that moved into chunk 0: its
 * bytes at base of src and its header h0 (src NULL: not looked for);
 * allocated(ctx, b), when not NULL, says whether block b of chunk 0 is in
 * use (its bitmap). */
struct od_fosters_chunk0 {
	const struct od_header_src *src;
	uint64_t base;
	const struct od_chunk_header *h0;
	int (*allocated)(void *ctx, uint32_t b);
	void *ctx;
};

/* Chunk 0's records that a table not whole lost, found again in the other
 * chunks' headers (doc/format.md §6, "A lost table"): l holds chunk 0's
 * records that survive and gets, for each home it lacks, the record of
 * that home's host (a header j that lists {home, chunk j}: every move
 * writes it), else the home's own record when the home is not retired (a
 * move writes it too) or names chunk 0 as host (chunk 0 is never
 * evacuated: its maps never move). A retired home's own record naming
 * another host that does not list it is stale (the map moved after the
 * home retired: its host was evacuated): the map is then looked for in
 * chunk 0 (c0), the one run of its nblocks foster units owned by the home
 * (in use), and taken with the home's entries. hdr[j] for 0 < j < n where
 * ok[j]. A retired record's size is its home's nblocks when that header is
 * at hand, else fallback_nb. lost[] (room for n) gets each home whose own
 * header names a record that cannot be found, *nlost their count. 0 or
 * -ENOMEM. */
int od_fosters_recover(struct od_fosters *l, const struct od_chunk_header *hdr,
		       const uint8_t *ok, uint32_t n, uint32_t fallback_nb,
		       const struct od_fosters_chunk0 *c0, uint32_t *lost, uint32_t *nlost);
/* The table units the records need (0 while the header holds them all). */
uint32_t od_fosters_units_needed(uint32_t n);
/* Table unit k's payload (OD_MB_PAYLOAD bytes: its count and records,
 * zeros after) made from l. */
void od_fosters_put_unit(const struct od_fosters *l, uint32_t k, uint8_t *payload);
/* Chunk 0's header h set to hold l (its table, when l needs one, from
 * block start): its first OD_MAX_FOSTERS records, ftab_start, ftab_units,
 * ftab_count, and the FTAB, FOSTER and RETIRED bits the records want (a
 * table made again: fsck -fy, or the open, fs/ftab_rebuild.c). */
void od_fosters_put_header(const struct od_fosters *l, uint32_t start, struct od_chunk_header *h);

#endif
