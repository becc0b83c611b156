/* fsck's records: the inodes and directory entries the passes found,
 * indexed by location and stable number, the deferred cross-chunk checks,
 * and where units and extents may lie. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fsck/fsck_int.h"

static uint64_t loc_key(uint32_t block, uint16_t off)
{
	return ((uint64_t)block << 16) | off;
}

int fsck_reserve(struct fsck_ctx *c, uint32_t nrecs)
{
	if (fsck_grow(c, &c->recs, &c->caprecs, sizeof(*c->recs), nrecs) < 0 ||
	    fsck_grow(c, &c->dents, &c->capdents, sizeof(*c->dents), nrecs) < 0)
		return -ENOMEM;
	if (fsck_hmap_reserve(&c->by_loc, nrecs) < 0 || fsck_hmap_reserve(&c->by_stable, nrecs) < 0)
		return fsck_oom(c);
	return 0;
}

int fsck_add_rec(struct fsck_ctx *c, const struct od_inode *ino, uint32_t block, uint16_t off,
		 uint32_t slot, uint32_t dent, uint32_t *idx)
{
	struct fsck_ino *r;
	int ret;

	if (fsck_grow(c, &c->recs, &c->caprecs, sizeof(*c->recs), c->nrecs + 1) < 0)
		return -ENOMEM;
	r = &c->recs[c->nrecs];
	memset(r, 0, sizeof(*r));
	r->ino = *ino;
	r->block = block;
	r->off = off;
	r->slot = slot;
	r->dent = dent;
	*idx = c->nrecs++;
	if (fsck_hmap_put(&c->by_loc, loc_key(block, off), *idx) < 0)
		return fsck_oom(c);
	if ((ino->flags & OD_INF_CONT) || !ino->stable)
		return 0;
	ret = fsck_hmap_put(&c->by_stable, ino->stable, *idx);
	if (ret < 0)
		return fsck_oom(c);
	if (ret == 1 && !c->salvage_walk) {
		struct fsck_pctx p = { .rec = r, .ino = ino->stable,
				       .rec2 = &c->recs[fsck_hmap_get(&c->by_stable, ino->stable)] };
		fix_problem(c, PR_1_INO_DUP_STABLE, &p);
	}
	return 0;
}

int fsck_slot_put(struct fsck_ctx *c, uint32_t block, uint16_t off, uint32_t slot,
		  const struct od_inode *ino, uint32_t *out)
{
	struct fsck_unit *u = fsck_unit_find(c, block);
	uint32_t ri = fsck_rec_at(c, block, off);
	int ret;

	if (!u || !u->data)
		return -EUCLEAN;
	od_put_inode(u->data + off, ino);
	u->modified = 1;
	if (ri != FSCK_NONE) {
		/* a dead record in that place: it is this inode now */
		memset(&c->recs[ri], 0, sizeof(c->recs[ri]));
		c->recs[ri].ino = *ino;
		c->recs[ri].block = block;
		c->recs[ri].off = off;
		c->recs[ri].dent = FSCK_NONE;
	} else if ((ret = fsck_add_rec(c, ino, block, off, slot, FSCK_NONE, &ri)) < 0) {
		return ret;
	}
	c->recs[ri].slot = slot;
	*out = ri;
	return 0;
}

uint32_t fsck_rec_at(const struct fsck_ctx *c, uint32_t block, uint16_t off)
{
	return fsck_hmap_get(&c->by_loc, loc_key(block, off));
}

uint32_t fsck_rec_by_stable(const struct fsck_ctx *c, uint64_t s)
{
	uint32_t idx = OD_STABLE_INDEX(s), ri;

	if (OD_STABLE_CHUNK(s) == c->index && (uint32_t)s != 0) {
		const struct od_map_entry *e;
		if (idx >= c->nmap || c->map_lost[idx])
			return fsck_hmap_get(&c->by_stable, s);
		e = &c->map[idx];
		if (!(e->flags & OD_MAPF_USED) || e->loc.chunk != c->index)
			return FSCK_NONE;
		ri = fsck_rec_at(c, e->loc.block, e->loc.off);
		if (ri == FSCK_NONE || c->recs[ri].ino.stable != s || c->recs[ri].dead)
			return FSCK_NONE;
		return ri;
	}
	ri = fsck_hmap_get(&c->by_stable, s);
	return ri != FSCK_NONE && !c->recs[ri].dead ? ri : FSCK_NONE;
}

int fsck_defer(struct fsck_ctx *c, int kind, uint32_t rec, uint32_t idx, uint64_t stable,
	       struct od_loc loc)
{
	struct fsck_deferred *d;

	if (c->ndefs == c->capdefs) {
		uint32_t ncap = c->capdefs ? c->capdefs * 2 : 64;
		struct fsck_deferred *p = realloc(c->defs, ncap * sizeof(*p));
		if (!p)
			return fsck_oom(c);
		c->defs = p;
		c->capdefs = ncap;
	}
	d = &c->defs[c->ndefs++];
	d->kind = kind;
	d->rec = rec;
	d->idx = idx;
	d->stable = stable;
	d->loc = loc;
	return 0;
}

/* Blocks a data extent may use: outside both fixed regions, inside the chunk. */
int fsck_in_data_area(const struct fsck_ctx *c, uint32_t start, uint32_t len)
{
	uint64_t end = (uint64_t)start + len;
	uint32_t ds = c->hdr.data_start, h = c->half;

	if (len == 0 || end > c->hdr.nblocks || start < ds)
		return 0;
	return end <= h || start >= h + ds;
}

/* Where copy 0 of a metadata unit may start: [data_start, H - units]. */
int fsck_meta_place(const struct fsck_ctx *c, uint32_t start, uint32_t units)
{
	return start >= c->hdr.data_start && (uint64_t)start + units <= c->half;
}
