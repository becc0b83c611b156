/* The stable-number map: every file's user-visible inode number (home chunk,
 * index) maps to its current internal location and generation. Each chunk
 * hosts the numbers allocated in it, so numbers are handed out without a
 * volume-wide lock and the map of a chunk is checked with that chunk. A
 * fostered chunk's map (evacuation, fs/foster.c) lives in a foster map in
 * another chunk: its entries are read and changed there, and no number is
 * homed in it again. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/internal.h"

/* Where entry idx sits in its map block b. */
static uint8_t *entry_at(const struct buf *b, uint32_t idx)
{
	return b->data + OD_MB_HEADER_SIZE + (idx % OD_MAP_PER_BLOCK) * OD_MAP_ENTRY_SIZE;
}

/* The map entry idx of chunk c's own map area (a chunk never fostered). */
static int map_entry_buf(struct chunk *c, uint32_t idx, struct buf **b, uint8_t **p)
{
	int ret = buf_read(c, c->hdr.map_start + idx / OD_MAP_PER_BLOCK, 1, b);

	if (ret < 0)
		return ret;
	*p = entry_at(*b, idx);
	return 0;
}

int map_load_free(struct chunk *c, uint32_t **arr, uint32_t *n, uint32_t *cap,
		  int (*push)(uint32_t **, uint32_t *, uint32_t *, uint32_t))
{
	int ret = 0;

	for (uint32_t i = c->hdr.map_watermark; i-- > 0 && ret == 0;) {
		struct od_map_entry e;
		struct buf *b;
		uint8_t *p;
		ret = map_entry_buf(c, i, &b, &p);
		if (ret < 0)
			break;
		od_get_map_entry(p, &e);
		buf_put(b);
		if (!(e.flags & OD_MAPF_USED))
			ret = push(arr, n, cap, i);
	}
	return ret;
}

int map_alloc(struct chunk *home, struct od_loc loc, uint64_t *stable, uint32_t *gen)
{
	struct od_map_entry e;
	struct buf *b;
	uint8_t *p = NULL;
	uint32_t idx;
	int ret = chunk_load(home);

	if (ret < 0)
		return ret;
	if (chunk_draining(home) || chunk_fostered(home))
		return -ENOSPC; /* nothing new is homed in a chunk being evacuated */
	if (home->nfree_map) {
		idx = home->free_map[--home->nfree_map];
		ret = map_entry_buf(home, idx, &b, &p);
		if (ret < 0) {
			home->nfree_map++;
			return ret;
		}
		od_get_map_entry(p, &e);
	} else {
		if (home->hdr.map_watermark >= home->hdr.max_inodes)
			return -ENOSPC;
		idx = home->hdr.map_watermark;
		if (idx % OD_MAP_PER_BLOCK == 0) {
			ret = buf_fresh(home, home->hdr.map_start + idx / OD_MAP_PER_BLOCK, 1,
					OD_MB_MAP, 0, &b);
			if (ret == 0)
				p = entry_at(b, idx);
		} else {
			ret = map_entry_buf(home, idx, &b, &p);
		}
		if (ret < 0)
			return ret;
		memset(&e, 0, sizeof(e));
		home->hdr.map_watermark++;
	}
	e.loc = loc;
	e.flags = OD_MAPF_USED;
	e.generation++;
	if (e.generation == 0)
		e.generation = 1;
	od_put_map_entry(p, &e);
	buf_dirty(b);
	buf_put(b);
	home->hdr.used_inodes++;
	home->header_dirty = 1;
	*stable = OD_STABLE(home->index, idx);
	*gen = e.generation;
	return 0;
}

/* The home chunk of stable (*c) and its index, checked against the
 * watermark (a foster map's entry count for a fostered home). */
static int map_locate(struct fs_volume *v, uint64_t stable, struct chunk **c, uint32_t *idx)
{
	const struct od_foster *f;

	*c = vol_chunk(v, OD_STABLE_CHUNK(stable));
	*idx = OD_STABLE_INDEX(stable);
	if (!*c || (uint32_t)stable == 0)
		return -ESTALE;
	f = vol_foster(v, (*c)->index);
	if (*idx >= (f ? f->entries : (*c)->hdr.map_watermark))
		return -ESTALE;
	if (!f && (*c)->offline)
		return -EIO;
	return 0;
}

/* The map entry of stable: its home chunk, index, buffer and bytes (in
 * the foster map when the home is fostered). */
static int map_open(struct fs_volume *v, uint64_t stable, struct chunk **c, uint32_t *idx,
		    struct buf **b, uint8_t **p, struct od_map_entry *e)
{
	int ret = map_locate(v, stable, c, idx);
	const struct od_foster *f = ret == 0 ? vol_foster(v, (*c)->index) : NULL;

	if (ret == 0 && f) {
		struct chunk *t = vol_chunk(v, f->chunk);
		if (!t || t->offline)
			return -EIO;
		ret = buf_read(t, f->start + *idx / OD_MAP_PER_BLOCK, 1, b);
		if (ret == 0)
			*p = entry_at(*b, *idx);
	} else if (ret == 0) {
		ret = map_entry_buf(*c, *idx, b, p);
	}
	if (ret == 0)
		od_get_map_entry(*p, e);
	return ret;
}

int map_lookup(struct fs_volume *v, uint64_t stable, struct od_map_entry *e)
{
	struct chunk *c;
	struct buf *b;
	uint8_t *p;
	uint32_t idx;
	int ret = map_open(v, stable, &c, &idx, &b, &p, e);

	if (ret < 0)
		return ret;
	buf_put(b);
	return (e->flags & OD_MAPF_USED) ? 0 : -ESTALE;
}

int map_set_loc(struct fs_volume *v, uint64_t stable, struct od_loc loc)
{
	struct od_map_entry e;
	struct chunk *c;
	struct buf *b;
	uint8_t *p;
	uint32_t idx;
	int ret = map_open(v, stable, &c, &idx, &b, &p, &e);

	if (ret < 0)
		return ret;
	e.loc = loc;
	od_put_map_entry(p, &e);
	buf_dirty(b);
	buf_put(b);
	return 0;
}

int map_free(struct fs_volume *v, uint64_t stable)
{
	struct od_map_entry e;
	struct chunk *c;
	struct buf *b;
	uint8_t *p;
	uint32_t idx;
	int ret;

	dalloc_drop(v, stable); /* the number's buffered data goes with it */
	prealloc_drop(v, stable); /* ... and its reservation */
	ret = map_open(v, stable, &c, &idx, &b, &p, &e);

	if (ret == 0 && !chunk_fostered(c) && (ret = chunk_load(c)) < 0)
		buf_put(b);
	if (ret < 0)
		return ret;
	/* The generation stays: the next owner of this number gets gen + 1. */
	e.flags = 0;
	e.loc.chunk = OD_LOC_NONE;
	od_put_map_entry(p, &e);
	buf_dirty(b);
	buf_put(b);
	if (chunk_fostered(c))
		return 0; /* a foster map is counted by a scan, never handed out again */
	c->hdr.used_inodes--;
	c->header_dirty = 1;
	if (c->nfree_map == c->cap_free_map) {
		uint32_t ncap = c->cap_free_map ? c->cap_free_map * 2 : 64;
		uint32_t *np = realloc(c->free_map, ncap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		c->free_map = np;
		c->cap_free_map = ncap;
	}
	c->free_map[c->nfree_map++] = idx;
	return 0;
}

uint32_t map_free_count(struct chunk *c)
{
	if (chunk_draining(c) || chunk_fostered(c))
		return 0;
	return c->hdr.max_inodes - c->hdr.used_inodes;
}
