/* Foster maps (evacuation): a draining chunk K's stable-number map copied,
 * in one transaction, into OD_MB_FOSTER units of another chunk T, and
 * named in chunk 0's header (with copies of the record in T's and K's), so
 * that the numbers homed in K, and the NFS handles built on them, outlive
 * K; and a foster map moved off a host that drains itself (rehost). Keeps:
 * a number's map entry is in one place map.c reads, K's own map area
 * before that transaction commits and the foster map from then on (both
 * in memory and on disk, since the headers and the copied units commit
 * together); a moved map is in its old host or its new one, the same way;
 * nothing is homed in K again. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "fs/evac.h"

/* Where home's foster map goes: chunk 0 when it has room (it is never
 * evacuated, so the map never has to move again, and its records have no
 * limit: it is the host of last resort), else the online chunk with the
 * most free blocks that is neither draining nor fostered, and whose
 * header has a record free besides the one kept for its own map, should
 * it be evacuated one day; not `tried` (a chunk whose free blocks make
 * no metadata pair: chunk 0 filled with data, say). */
static struct chunk *foster_target(struct fs_volume *v, struct chunk *home, uint32_t n,
				   const struct chunk *tried)
{
	struct chunk *best = NULL;

	for (uint32_t i = 0; i < v->nchunks; i++) {
		struct chunk *c = &v->chunks[i];
		if (c == home || c == tried || c->offline || chunk_draining(c) || chunk_fostered(c) ||
		    (i && c->hdr.nfosters >= OD_MAX_FOSTERS - 1) || chunk_load(c) < 0 ||
		    c->hdr.free_blocks < 2 * n + 2 * c->hdr.dir_unit)
			continue;
		if (i == 0)
			return c;
		if (!best || c->hdr.free_blocks > best->hdr.free_blocks)
			best = c;
	}
	return best;
}

/* rec appended to the records of chunk c's header, not chunk 0's (the
 * caller checked room). */
static void table_add(struct chunk *c, const struct od_foster *rec)
{
	c->hdr.fosters[c->hdr.nfosters++] = *rec;
	c->hdr.feature_incompat |= OD_FEATURE_INCOMPAT_FOSTER;
	c->header_dirty = 1;
}

/* n one-block OD_MB_FOSTER units of home's map made in t (*start), the
 * first ncopy of them copied from the units at src_start of src (from the
 * cache: with any change not yet committed, which commits with them), the
 * rest empty. Nothing is changed before every unit is secured: a failure
 * gives back what it took. */
static int units_copy(struct chunk *t, uint32_t n, uint32_t home, struct chunk *src,
		      uint32_t src_start, uint32_t ncopy, uint32_t *start)
{
	uint32_t i;
	int ret = alloc_meta(t, n, start);

	if (ret < 0)
		return ret;
	for (i = 0; i < n; i++) {
		struct buf *fb, *kb;
		ret = buf_fresh(t, *start + i, 1, OD_MB_FOSTER, home, &fb);
		if (ret < 0)
			break;
		if (i < ncopy) {
			/* (from memory when the step read it outside the lock) */
			src->evac_units_locked += !buf_peek(src, src_start + i);
			ret = buf_read(src, src_start + i, 1, &kb);
			if (ret < 0) {
				buf_put(fb);
				break;
			}
			memcpy(fb->data + OD_MB_HEADER_SIZE, kb->data + OD_MB_HEADER_SIZE,
			       OD_MB_PAYLOAD);
			buf_put(kb);
		}
		buf_dirty(fb);
		buf_put(fb);
	}
	if (ret < 0) {
		for (uint32_t j = 0; j <= i && j < n; j++)
			buf_forget(t, *start + j);
		free_blocks(t, *start, n);
		free_blocks(t, chunk_mirror(t, *start), n);
	}
	return ret;
}

/* home's map (n units, the first ncopy copied from src_start of src) made
 * in the target chunk (*out), a second one tried when the first has no
 * room for the run. */
static int place_map(struct fs_volume *v, struct chunk *homec, uint32_t n, struct chunk *src,
		     uint32_t src_start, uint32_t ncopy, struct chunk **out, uint32_t *start)
{
	struct chunk *t = foster_target(v, homec, n, NULL);
	int ret = t ? units_copy(t, n, homec->index, src, src_start, ncopy, start) : -ENOSPC;

	if (ret == -ENOSPC && t) {
		t = foster_target(v, homec, n, t);
		ret = t ? units_copy(t, n, homec->index, src, src_start, ncopy, start) : -ENOSPC;
	}
	*out = t;
	return ret;
}

int evac_foster(struct fs_volume *v, struct chunk *k, uint32_t *host)
{
	struct chunk *c0 = &v->chunks[0], *t;
	uint32_t wm = k->hdr.map_watermark, n, start;
	struct od_foster rec;
	int ret;

	if (k->index == 0 || !chunk_draining(k) || chunk_fostered(k) || vol_foster(v, k->index))
		return -EINVAL;
	if (c0->offline)
		return -EIO;
	/* K's own header keeps its record: a full one (32 maps hosted,
	 * possible only in a volume made before the host rule) moves one
	 * away first (evac_foster_rehost, by the caller). */
	if (k->hdr.nfosters >= OD_MAX_FOSTERS)
		return -ENOSPC;
	n = wm ? (wm + OD_MAP_PER_BLOCK - 1) / OD_MAP_PER_BLOCK : 1;
	/* chunk 0's table unit for the record, before anything moves (made
	 * empty, it stays so if what follows fails) */
	ret = ftab_room(v);
	if (ret < 0)
		return ret;
	ret = place_map(v, k, n, k, k->hdr.map_start,
			(wm + OD_MAP_PER_BLOCK - 1) / OD_MAP_PER_BLOCK, &t, &start);
	if (ret < 0)
		return ret;
	rec = (struct od_foster){ .home = k->index, .chunk = t->index, .start = start,
				  .nblocks = n, .entries = wm, .flags = 0 };
	/* Chunk 0's record decides; T's lets a check of T claim the units,
	 * K's tells a check of K that its own map area is not read. */
	ret = ftab_append(v, &rec);
	if (ret < 0)
		return ret; /* (-ENOMEM: the units copied stay unnamed until fsck) */
	if (t != c0)
		table_add(t, &rec);
	table_add(k, &rec);
	k->hdr.flags |= OD_CHF_FOSTERED;
	k->hdr.used_inodes = 0; /* K's own map holds nothing any more */
	k->nfree_map = 0;
	*host = t->index;
	return 0;
}

/* The record of home's map in c's table, or NULL. */
static struct od_foster *table_find(struct chunk *c, uint32_t home)
{
	for (uint32_t i = 0; i < c->hdr.nfosters && i < OD_MAX_FOSTERS; i++)
		if (c->hdr.fosters[i].home == home)
			return &c->hdr.fosters[i];
	return NULL;
}

int evac_foster_rehost(struct fs_volume *v, struct chunk *k)
{
	struct chunk *c0 = &v->chunks[0], *h, *t;
	struct od_foster *f, *hf, rec;
	uint32_t start, r;
	int ret;

	for (r = 0; r < v->fost.n && v->fost.rec[r].chunk != k->index; r++)
		;
	if (r == v->fost.n)
		return 0;
	f = &v->fost.rec[r];
	/* The home keeps a copy of its record: it is written too, unless the
	 * home is retired (never read again). */
	h = vol_chunk(v, f->home);
	if (!h || (h->offline && !h->retired))
		return -EIO;
	ret = place_map(v, h, f->nblocks, k, f->start, f->nblocks, &t, &start);
	if (ret < 0)
		return ret;
	for (uint32_t b = 0; b < f->nblocks; b++)
		free_meta(k, f->start + b, 1);
	rec = *f;
	rec.chunk = t->index;
	rec.start = start;
	*f = rec;
	ret = ftab_put(v, r);
	if (ret < 0)
		return ret;
	/* k's copy goes (its units are free now), t's comes. */
	hf = table_find(k, rec.home);
	if (hf) {
		*hf = k->hdr.fosters[--k->hdr.nfosters];
		memset(&k->hdr.fosters[k->hdr.nfosters], 0, sizeof(*hf));
		k->header_dirty = 1;
	}
	if (t != c0)
		table_add(t, &rec);
	if (!h->retired && (hf = table_find(h, rec.home))) {
		*hf = rec;
		h->header_dirty = 1;
	}
	return 1;
}

int evac_foster_used(struct fs_volume *v, uint32_t home, uint32_t in, uint64_t *used,
		     uint64_t *here)
{
	const struct od_foster *f = vol_foster(v, home);
	struct chunk *t;
	int ret = 0;

	*used = *here = 0;
	if (!f)
		return -ENOENT;
	t = vol_chunk(v, f->chunk);
	if (!t || t->offline)
		return -EIO;
	for (uint32_t b = 0; ret == 0 && b < f->nblocks; b++) {
		struct buf *fb;
		ret = buf_read(t, f->start + b, 1, &fb);
		if (ret < 0)
			break;
		for (uint32_t k = 0; k < OD_MAP_PER_BLOCK; k++) {
			struct od_map_entry e;
			if ((uint64_t)b * OD_MAP_PER_BLOCK + k >= f->entries)
				break;
			od_get_map_entry(fb->data + OD_MB_HEADER_SIZE + k * OD_MAP_ENTRY_SIZE, &e);
			if (!(e.flags & OD_MAPF_USED))
				continue;
			(*used)++;
			if (e.loc.chunk == in)
				(*here)++;
		}
		buf_put(fb);
	}
	return ret;
}

int evac_foster_next(struct fs_volume *v, uint32_t home, uint32_t in, uint32_t from,
		     uint32_t *idx, struct od_loc *loc)
{
	const struct od_foster *f = vol_foster(v, home);
	struct chunk *t;

	if (!f)
		return -ENOENT;
	t = vol_chunk(v, f->chunk);
	if (!t || t->offline)
		return -EIO;
	for (uint32_t i = from; i < f->entries;) {
		struct buf *fb;
		uint32_t b = i / OD_MAP_PER_BLOCK;
		int ret = buf_read(t, f->start + b, 1, &fb);
		if (ret < 0)
			return ret;
		for (; i < f->entries && i / OD_MAP_PER_BLOCK == b; i++) {
			struct od_map_entry e;
			od_get_map_entry(fb->data + OD_MB_HEADER_SIZE +
						 (i % OD_MAP_PER_BLOCK) * OD_MAP_ENTRY_SIZE,
					 &e);
			if ((e.flags & OD_MAPF_USED) && e.loc.chunk == in) {
				*idx = i;
				*loc = e.loc;
				buf_put(fb);
				return 1;
			}
		}
		buf_put(fb);
	}
	return 0;
}

int evac_foster_turn(struct fs_volume *v, uint32_t k, uint32_t start, uint32_t *from,
		     int *wrapped, uint32_t *idx, struct od_loc *loc)
{
	for (;;) {
		int ret = evac_foster_next(v, k, k, *from, idx, loc);

		if (ret <= 0 && (ret < 0 || *wrapped || *from == 0))
			return ret;
		if (ret == 0) {
			*wrapped = 1;
			*from = 0;
			continue;
		}
		if (*wrapped && *idx >= start)
			return 0;
		*from = *idx + 1;
		return 1;
	}
}

int evac_foster_any_in(struct fs_volume *v, uint32_t in)
{
	for (uint32_t r = 0; r < v->fost.n; r++) {
		uint32_t idx;
		struct od_loc loc;
		int ret = evac_foster_next(v, v->fost.rec[r].home, in, 0, &idx, &loc);
		if (ret != 0)
			return ret;
	}
	return 0;
}

int evac_foster_guests(struct fs_volume *v, uint32_t in, uint32_t *guests)
{
	*guests = 0;
	for (uint32_t r = 0; r < v->fost.n; r++) {
		uint64_t used, here;
		int ret;
		if (v->fost.rec[r].home == in)
			continue;
		ret = evac_foster_used(v, v->fost.rec[r].home, in, &used, &here);
		if (ret == -EIO)
			continue; /* its host is offline: not counted */
		if (ret < 0)
			return ret;
		*guests += (uint32_t)here;
	}
	return 0;
}
