/* fsck: foster maps (evacuation, OD_FEATURE_INCOMPAT_FOSTER). A chunk
 * hosting the foster map of an evacuated chunk K holds K's stable-number
 * map in OD_MB_FOSTER units that its header names; a fostered chunk's own
 * map area is not read. This file owns both sides of the check:
 *   pass 1: a fostered chunk said so; the units hosted here read through
 *           both copies, their entries kept (c->fost[]); in chunk 0 the
 *           foster table (fostertab) walked, its units read through both
 *           copies, its records checked (PR_1_FTAB_BAD) and the maps it
 *           names hosted here read too;
 *   pass 3: those units, and the table's, claimed (both copies), as fixed
 *           metadata;
 *   pass 4: each used entry placing its inode in this chunk leads to an
 *           inode with its number and generation (else freed, as a map
 *           entry is); one placing it elsewhere is deferred (-x reads the
 *           inode there); a replaced unit's entries are rebuilt from the
 *           inodes found here.
 * Relies on the header checks (check_fosters in fs/format/header.c: each
 * record hosted here lies inside the data area). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fsck/fsck_int.h"

int fsck_fostered(const struct fsck_ctx *c)
{
	return (c->hdr.flags & OD_CHF_FOSTERED) != 0;
}

/* The foster map of record f, hosted here: its entries read (c->fost). */
int fsck_foster_hosted(struct fsck_ctx *c, const struct od_foster *f)
{
	struct fsck_foster *fo;

	if (c->nfost == c->capfost) {
		uint32_t cap = c->capfost ? 2 * c->capfost : 8;
		struct fsck_foster *n = realloc(c->fost, cap * sizeof(*n));
		if (!n)
			return fsck_oom(c);
		c->fost = n;
		c->capfost = cap;
	}
	fo = &c->fost[c->nfost++];
	fo->rec = *f;
	fo->map = calloc(f->entries ? f->entries : 1, sizeof(*fo->map));
	fo->lost = calloc(f->entries ? f->entries : 1, 1);
	if (!fo->map || !fo->lost)
		return fsck_oom(c);
	if (fsck_prefetch(c, f->start, f->nblocks) < 0)
		return -ENOMEM;
	for (uint32_t b = 0; b < f->nblocks; b++) {
		struct fsck_unit *u;
		int ret = fsck_unit_get(c, f->start + b, 1, OD_MB_FOSTER, f->home, &u);
		if (ret < 0)
			return ret;
		for (uint32_t k = 0; k < OD_MAP_PER_BLOCK; k++) {
			uint32_t idx = b * OD_MAP_PER_BLOCK + k;
			struct od_map_entry *e;
			if (idx >= f->entries)
				break;
			e = &fo->map[idx];
			if (!u->data) {
				fo->lost[idx] = 1;
				e->loc.chunk = OD_LOC_NONE;
				continue;
			}
			if (u->cur < 0)
				fo->lost[idx] = 2; /* replaced: rebuilt in pass 4 */
			od_get_map_entry(u->data + OD_MB_HEADER_SIZE + k * OD_MAP_ENTRY_SIZE, e);
			if (e->flags & ~OD_MAPF_USED) {
				struct fsck_pctx p = { .num = idx, .num2 = e->flags };
				fix_problem(c, PR_1_MAP_FLAGS, &p);
			}
		}
	}
	return 0;
}

/* Why unit k of chunk 0's foster table, at block, is not whole (why[0] ==
 * 0: it is; its records then checked, those hosted here read, and added to
 * have), with *next the unit after it. 0 or a negative errno. */
static int table_unit(struct fsck_ctx *c, uint32_t k, uint32_t block, uint32_t *next,
		      struct od_fosters *have, char *why, size_t wlen)
{
	const struct od_chunk_header *h = &c->hdr;
	uint32_t want = k + 1 < h->ftab_units ? OD_FTAB_PER_UNIT
					      : h->ftab_count - k * OD_FTAB_PER_UNIT;
	struct od_mb_header mh;
	struct fsck_unit *u;
	const uint8_t *p;
	int ret;

	if (!fsck_meta_place(c, block, 1)) {
		snprintf(why, wlen, "unit %u at block %u, outside the metadata area", k, block);
		return 0;
	}
	for (uint32_t j = 0; j < c->nftab; j++)
		if (c->ftab[j] == block) {
			snprintf(why, wlen, "the chain loops at block %u", block);
			return 0;
		}
	/* (a unit with no good copy is lost, not replaced by an empty one:
	 * the records it held are in no other place but their hosts') */
	if (!fsck_any_copy_ok(c, block, OD_MB_FTAB)) {
		c->ftab[c->nftab++] = block; /* (kept from pass 5, as it is) */
		snprintf(why, wlen, "unit %u (block %u) has no good copy", k, block);
		return 0;
	}
	ret = fsck_unit_get(c, block, 1, OD_MB_FTAB, 0, &u);
	if (ret == -EUCLEAN) {
		snprintf(why, wlen, "unit %u (block %u) is read as another kind of unit", k, block);
		return 0;
	}
	if (ret < 0)
		return ret;
	c->ftab[c->nftab++] = block;
	if (!u->data) {
		snprintf(why, wlen, "unit %u (block %u) has no good copy", k, block);
		return 0;
	}
	od_get_mb_header(u->data, &mh);
	p = u->data + OD_MB_HEADER_SIZE;
	if (mh.seq != k || od_get_ftab_count(p) != want || (k + 1 < h->ftab_units) != !!mh.next) {
		snprintf(why, wlen, "unit %u (block %u): index %u, %u records, next %u; the header "
				    "says %u records", k, block, mh.seq, od_get_ftab_count(p), mh.next,
			 want);
		return 0;
	}
	for (uint32_t e = 0; e < want; e++) {
		struct od_foster f;
		uint32_t nb;
		od_get_ftab_entry(p, e, &f, &nb);
		if (od_foster_check(&f, nb, 0, h) < 0 || od_fosters_find(have, f.home) >= 0) {
			snprintf(why, wlen, "unit %u: bad record %u (home %u, chunk %u, blocks %u+%u, "
					    "%u entries, flags 0x%x)", k, e, f.home, f.chunk, f.start,
				 f.nblocks, f.entries, f.flags);
			return 0;
		}
	}
	/* (the unit is whole: its records kept, its maps hosted here read) */
	for (uint32_t e = 0; e < want; e++) {
		struct od_foster f;
		uint32_t nb;
		od_get_ftab_entry(p, e, &f, &nb);
		if (od_fosters_add(have, &f, nb) < 0)
			return fsck_oom(c);
		if (f.chunk == c->index && (ret = fsck_foster_hosted(c, &f)) < 0)
			return ret;
	}
	*next = mh.next;
	return 0;
}

/* Chunk 0's foster table (fostertab): each unit read through both copies
 * (a bad copy is healed from the other, PR_0_UNIT_COPY_BAD), its records
 * checked, the maps hosted here read; a table not whole is made again from
 * the records that survive and the other chunks' headers (fsck_ftab.c). */
static int read_table(struct fsck_ctx *c)
{
	const struct od_chunk_header *h = &c->hdr;
	uint32_t block = c->hdr.ftab_start;
	struct od_fosters have;
	char why[200] = "";
	int ret = 0;

	c->nftab = 0;
	if (!od_fosters_shape_ok(&c->hdr))
		snprintf(why, sizeof(why), "%u records in %u units", c->hdr.ftab_count,
			 c->hdr.ftab_units);
	memset(&have, 0, sizeof(have));
	for (uint32_t i = 0; i < h->nfosters && i < OD_MAX_FOSTERS && ret == 0; i++)
		ret = od_fosters_add(&have, &h->fosters[i], h->retired_nblocks[i]);
	if (ret < 0)
		ret = fsck_oom(c);
	for (uint32_t k = 0; k < c->hdr.ftab_units && !why[0] && ret == 0; k++)
		ret = table_unit(c, k, block, &block, &have, why, sizeof(why));
	if (ret == 0 && why[0])
		ret = fsck_ftab_recover(c, &have, why);
	od_fosters_free(&have);
	return ret;
}

int fsck_foster_read(struct fsck_ctx *c)
{
	const struct od_chunk_header *h = &c->hdr;

	if (fsck_fostered(c)) {
		const struct od_foster *f = NULL;
		for (uint32_t i = 0; i < h->nfosters; i++)
			if (h->fosters[i].home == c->index)
				f = &h->fosters[i];
		if (f)
			fsck_note(c, "the chunk is fostered: the map of its %u numbers is in chunk "
				     "%u, blocks %u-%u; its own map area is not read", f->entries,
				  f->chunk, f->start, f->start + f->nblocks - 1);
		else
			fsck_note(c, "the chunk is fostered: the map of its numbers is in another "
				     "chunk (chunk 0's header names it); its own map area is not read");
	}
	c->nfost = 0;
	for (uint32_t i = 0; i < h->nfosters; i++) {
		int ret = h->fosters[i].chunk == c->index ? fsck_foster_hosted(c, &h->fosters[i]) : 0;
		if (ret < 0)
			return ret;
	}
	/* a header made again: the records past its 32 (fsck_rebuild.c) */
	for (uint32_t i = OD_MAX_FOSTERS; c->index == 0 && c->ftab_make && i < c->ftab_new.n; i++) {
		int ret = c->ftab_new.rec[i].chunk == 0 ? fsck_foster_hosted(c, &c->ftab_new.rec[i])
							: 0;
		if (ret < 0)
			return ret;
	}
	return c->index == 0 && h->ftab_start ? read_table(c) : 0;
}

void fsck_foster_claim(struct fsck_ctx *c)
{
	for (uint32_t k = 0; k < c->nftab; k++) {
		fsck_set_owner(c, c->ftab[k], OWNER_FIXED);
		fsck_set_owner(c, c->ftab[k] + c->half, OWNER_FIXED);
	}
	for (uint32_t i = 0; i < c->nfost; i++) {
		const struct od_foster *f = &c->fost[i].rec;
		for (uint32_t b = f->start; b < f->start + f->nblocks; b++) {
			fsck_set_owner(c, b, OWNER_FIXED);
			fsck_set_owner(c, b + c->half, OWNER_FIXED);
		}
	}
}

static void write_entry(struct fsck_ctx *c, const struct fsck_foster *fo, uint32_t idx)
{
	struct fsck_unit *u = fsck_unit_find(c, fo->rec.start + idx / OD_MAP_PER_BLOCK);

	if (!u || !u->data)
		return;
	od_put_map_entry(u->data + OD_MB_HEADER_SIZE + (idx % OD_MAP_PER_BLOCK) * OD_MAP_ENTRY_SIZE,
			 &fo->map[idx]);
	fsck_unit_modified(c, u);
}

/* The live record of a head inode here with number s, or FSCK_NONE. */
static uint32_t head_here(struct fsck_ctx *c, uint64_t s)
{
	uint32_t ri = fsck_rec_by_stable(c, s);

	if (ri == FSCK_NONE || c->recs[ri].dead || (c->recs[ri].ino.flags & OD_INF_CONT))
		return FSCK_NONE;
	return ri;
}

void fsck_foster_check(struct fsck_ctx *c)
{
	uint32_t count = fsck_chunk_count(c);

	for (uint32_t i = 0; i < c->nfost; i++) {
		struct fsck_foster *fo = &c->fost[i];
		uint32_t home = fo->rec.home, rebuilt = 0;
		for (uint32_t idx = 0; idx < fo->rec.entries; idx++) {
			struct od_map_entry *e = &fo->map[idx];
			uint64_t s = OD_STABLE(home, idx);
			struct fsck_pctx p = { .num = idx, .num2 = home, .ino = s, .blk = e->loc.block };
			uint32_t ri;
			if (fo->lost[idx] == 1)
				continue;
			if (fo->lost[idx] == 2 && !(e->flags & OD_MAPF_USED)) {
				/* A replaced unit: the inodes found here give their entries. */
				ri = head_here(c, s);
				if (ri != FSCK_NONE) {
					e->loc.chunk = c->index;
					e->loc.block = c->recs[ri].block;
					e->loc.off = c->recs[ri].off;
					e->flags = OD_MAPF_USED;
					e->generation = c->recs[ri].ino.generation;
					write_entry(c, fo, idx);
					rebuilt++;
				}
				continue;
			}
			if (!(e->flags & OD_MAPF_USED))
				continue;
			if (e->loc.chunk != c->index && e->loc.chunk < count) {
				if (fsck_defer(c, DEF_FOSTER_LOC, FSCK_NONE, idx, s, e->loc) == 0)
					c->defs[c->ndefs - 1].gen = e->generation;
				continue;
			}
			if (fsck_map_entry_found(c, s, e, &p))
				continue;
			ri = head_here(c, s);
			if (ri != FSCK_NONE) {
				p.rec2 = &c->recs[ri];
				if (fix_problem(c, PR_4_FOSTER_WRONG_LOC, &p)) {
					e->loc.chunk = c->index;
					e->loc.block = c->recs[ri].block;
					e->loc.off = c->recs[ri].off;
					write_entry(c, fo, idx);
				}
				continue;
			}
			if (fix_problem(c, PR_4_FOSTER_DANGLING, &p)) {
				e->flags = 0;
				e->loc.chunk = OD_LOC_NONE;
				write_entry(c, fo, idx);
			}
		}
		if (rebuilt)
			fsck_note(c, "%u entries of chunk %u's foster map rebuilt from the inodes found",
				  rebuilt, home);
	}
}

/* The entry of number s in the foster map hosted here, when there is one:
 * 1 and *e, 0 when s's home has no foster map here. */
int fsck_foster_entry_here(const struct fsck_ctx *c, uint64_t s, struct od_map_entry *e)
{
	uint32_t home = OD_STABLE_CHUNK(s), idx = OD_STABLE_INDEX(s);

	for (uint32_t i = 0; i < c->nfost; i++) {
		const struct fsck_foster *fo = &c->fost[i];
		if (fo->rec.home != home)
			continue;
		if (idx >= fo->rec.entries || fo->lost[idx] == 1)
			return -ESTALE;
		*e = fo->map[idx];
		return 1;
	}
	return 0;
}

void fsck_foster_free(struct fsck_ctx *c)
{
	for (uint32_t i = 0; i < c->nfost; i++) {
		free(c->fost[i].map);
		free(c->fost[i].lost);
	}
	free(c->fost);
	c->fost = NULL;
	c->nfost = c->capfost = 0;
	c->nftab = 0;
	od_fosters_free(&c->ftab_new);
}
