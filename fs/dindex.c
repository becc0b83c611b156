/* In-memory name indexes of directories, so that a lookup in a directory of
 * 100,000 entries reads one unit, not all of them. Built from the entries
 * on a directory's first lookup, kept current by every add and removal,
 * dropped least recently used first when the entries indexed pass a bound.
 * Only memory: nothing here is on disk, and losing an index costs a scan. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/internal.h"

#define DINDEX_MAX_ENTRIES (4u << 20) /* about 64 MiB of slots over all indexes */

struct dslot {
	uint32_t hash;
	uint32_t chunk;  /* OD_LOC_NONE: empty; DSLOT_GONE: removed */
	uint32_t block;
	uint32_t off;
};

#define DSLOT_GONE 0xfffffffeu

struct dindex {
	uint64_t dir;
	struct dslot *slot;
	uint32_t cap, used, live;
	struct dindex *hnext;
	struct dindex *prev, *next; /* LRU, most recent first */
};

struct dindex_set {
	struct dindex **hash;
	uint32_t hsize;
	struct dindex lru;
	uint64_t entries;
};

int dindex_init(struct fs_volume *v)
{
	struct dindex_set *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->hsize = 4096;
	s->hash = calloc(s->hsize, sizeof(*s->hash));
	if (!s->hash) {
		free(s);
		return -ENOMEM;
	}
	s->lru.next = s->lru.prev = &s->lru;
	v->dindex = s;
	return 0;
}

static uint32_t dir_hash(const struct dindex_set *s, uint64_t dir)
{
	return (uint32_t)((dir * 0x9E3779B97F4A7C15ull) >> 40) & (s->hsize - 1);
}

static void unlink_index(struct dindex_set *s, struct dindex *d)
{
	struct dindex **pp = &s->hash[dir_hash(s, d->dir)];

	while (*pp != d)
		pp = &(*pp)->hnext;
	*pp = d->hnext;
	d->prev->next = d->next;
	d->next->prev = d->prev;
	s->entries -= d->cap;
	free(d->slot);
	free(d);
}

void dindex_destroy(struct fs_volume *v)
{
	struct dindex_set *s = v->dindex;

	if (!s)
		return;
	while (s->lru.next != &s->lru)
		unlink_index(s, s->lru.next);
	free(s->hash);
	free(s);
	v->dindex = NULL;
}

static struct dindex *find_index(struct dindex_set *s, uint64_t dir)
{
	struct dindex *d = s->hash[dir_hash(s, dir)];

	while (d && d->dir != dir)
		d = d->hnext;
	if (d) {
		d->prev->next = d->next;
		d->next->prev = d->prev;
		d->next = s->lru.next;
		d->prev = &s->lru;
		s->lru.next->prev = d;
		s->lru.next = d;
	}
	return d;
}

void dindex_drop(struct fs_volume *v, uint64_t dir)
{
	struct dindex *d = find_index(v->dindex, dir);

	if (d)
		unlink_index(v->dindex, d);
}

static int slot_insert(struct dindex *d, uint32_t hash, const struct od_loc *unit, uint32_t off);

static int grow(struct dindex_set *s, struct dindex *d)
{
	struct dslot *old = d->slot;
	uint32_t oldcap = d->cap;
	uint32_t ncap = oldcap ? oldcap * 2 : 64;

	d->slot = malloc(ncap * sizeof(*d->slot));
	if (!d->slot) {
		d->slot = old;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < ncap; i++)
		d->slot[i].chunk = OD_LOC_NONE;
	d->cap = ncap;
	d->used = d->live = 0;
	s->entries += ncap - oldcap;
	for (uint32_t i = 0; i < oldcap; i++)
		if (old[i].chunk != OD_LOC_NONE && old[i].chunk != DSLOT_GONE) {
			struct od_loc u = { .chunk = old[i].chunk, .block = old[i].block };
			slot_insert(d, old[i].hash, &u, old[i].off);
		}
	free(old);
	return 0;
}

static int slot_insert(struct dindex *d, uint32_t hash, const struct od_loc *unit, uint32_t off)
{
	uint32_t i = hash & (d->cap - 1);

	while (d->slot[i].chunk != OD_LOC_NONE && d->slot[i].chunk != DSLOT_GONE)
		i = (i + 1) & (d->cap - 1);
	if (d->slot[i].chunk == OD_LOC_NONE)
		d->used++;
	d->slot[i].hash = hash;
	d->slot[i].chunk = unit->chunk;
	d->slot[i].block = unit->block;
	d->slot[i].off = off;
	d->live++;
	return 0;
}

static int index_add(struct dindex_set *s, struct dindex *d, uint32_t hash,
		     const struct od_loc *unit, uint32_t off)
{
	if ((d->used + 1) * 4 > d->cap * 3) {
		int ret = grow(s, d);
		if (ret < 0)
			return ret;
	}
	return slot_insert(d, hash, unit, off);
}

struct build_ctx {
	struct dindex_set *s;
	struct dindex *d;
};

static int build_fn(struct fs_volume *v, void *vctx, const struct dir_walk_ent *e)
{
	struct build_ctx *bc = vctx;

	return index_add(bc->s, bc->d, e->pos.de.hash, &e->pos.unit, e->pos.off);
}

/* The index of dir, built now if there is none. NULL: not enough memory
 * (the caller scans instead). */
static struct dindex *get_index(struct fs_volume *v, const struct iref *dir)
{
	struct dindex_set *s = v->dindex;
	struct dindex *d = find_index(s, dir->ino.stable);
	struct build_ctx bc;
	uint32_t h;

	if (d)
		return d;
	while (s->entries > DINDEX_MAX_ENTRIES && s->lru.prev != &s->lru)
		unlink_index(s, s->lru.prev);
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->dir = dir->ino.stable;
	h = dir_hash(s, d->dir);
	d->hnext = s->hash[h];
	s->hash[h] = d;
	d->next = s->lru.next;
	d->prev = &s->lru;
	s->lru.next->prev = d;
	s->lru.next = d;
	bc.s = s;
	bc.d = d;
	if (grow(s, d) < 0 || dir_walk(v, dir, 0, build_fn, &bc) != 0) {
		unlink_index(s, d);
		return NULL;
	}
	return d;
}

/* Look name up through the index: 0 and *pos, -ENOENT, or another error;
 * -EAGAIN when there is no index to use. */
int dindex_find(struct fs_volume *v, const struct iref *dir, const char *name, size_t len,
		uint32_t hash, struct dirpos *pos)
{
	struct dindex *d = get_index(v, dir);

	if (!d)
		return -EAGAIN;
	for (uint32_t i = hash & (d->cap - 1); d->slot[i].chunk != OD_LOC_NONE;
	     i = (i + 1) & (d->cap - 1)) {
		struct dslot *sl = &d->slot[i];
		struct od_loc unit;
		int ret;
		if (sl->chunk == DSLOT_GONE || sl->hash != hash)
			continue;
		unit.chunk = sl->chunk;
		unit.block = sl->block;
		unit.off = 0;
		ret = dir_entry_matches(v, &unit, sl->off, name, len, pos);
		if (ret != -ENOENT)
			return ret;
	}
	return -ENOENT;
}

void dindex_added(struct fs_volume *v, uint64_t dir, const struct dirpos *pos)
{
	struct dindex_set *s = v->dindex;
	struct dindex *d = find_index(s, dir);

	if (d && index_add(s, d, pos->de.hash, &pos->unit, pos->off) < 0)
		unlink_index(s, d); /* better no index than a wrong one */
}

void dindex_removed(struct fs_volume *v, uint64_t dir, const struct dirpos *pos)
{
	struct dindex *d = find_index(v->dindex, dir);

	if (!d)
		return;
	for (uint32_t i = pos->de.hash & (d->cap - 1); d->slot[i].chunk != OD_LOC_NONE;
	     i = (i + 1) & (d->cap - 1)) {
		struct dslot *sl = &d->slot[i];
		if (sl->chunk == pos->unit.chunk && sl->block == pos->unit.block &&
		    sl->off == pos->off) {
			sl->chunk = DSLOT_GONE;
			d->live--;
			return;
		}
	}
	unlink_index(v->dindex, d); /* not found: the index is wrong, rebuild */
}
