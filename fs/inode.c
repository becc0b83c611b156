/* Inodes by location: reading and writing the 256-byte inode wherever it
 * lives (an inode-area slot or a directory entry), resolving stable
 * identities through the map, inode-area slots, and each inode's extent
 * list (seven in the inode, the rest in a chain of extent units). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/internal.h"

static int loc_units(const struct chunk *c, uint32_t block, uint32_t *units)
{
	const struct od_chunk_header *h = &c->hdr;

	if (block >= h->itable_start && block < h->itable_start + h->itable_blocks)
		*units = 1;
	else if (block >= h->data_start && block + h->dir_unit <= c->half)
		*units = h->dir_unit;
	else
		return -EUCLEAN;
	return 0;
}

static int loc_buf(struct fs_volume *v, struct od_loc loc, struct buf **b)
{
	struct chunk *c = vol_chunk(v, loc.chunk);
	uint32_t units;
	int ret;

	if (!c)
		return -EUCLEAN;
	ret = loc_units(c, loc.block, &units);
	if (ret < 0)
		return ret;
	if (loc.off < OD_MB_HEADER_SIZE || loc.off + OD_INODE_SIZE > units * OD_BLOCK_SIZE)
		return -EUCLEAN;
	return buf_read(c, loc.block, units, b);
}

int ino_read(struct fs_volume *v, struct od_loc loc, struct iref *out)
{
	struct buf *b;
	int ret = loc_buf(v, loc, &b);

	if (ret < 0)
		return ret;
	od_get_inode(b->data + loc.off, &out->ino);
	out->loc = loc;
	buf_put(b);
	return 0;
}

int ino_write(struct fs_volume *v, const struct iref *r)
{
	struct buf *b;
	int ret = loc_buf(v, r->loc, &b);

	if (ret < 0)
		return ret;
	od_put_inode(b->data + r->loc.off, &r->ino);
	buf_dirty(b);
	buf_put(b);
	return 0;
}

int ino_get_stable(struct fs_volume *v, uint64_t stable, struct iref *out)
{
	struct od_map_entry e;
	int ret = map_lookup(v, stable, &e);

	if (ret < 0)
		return ret;
	ret = ino_read(v, e.loc, out);
	if (ret < 0)
		return ret;
	if (out->ino.stable != stable || out->ino.mode == 0 || (out->ino.flags & OD_INF_CONT))
		return -EUCLEAN;
	return 0;
}

int ino_get(struct fs_volume *v, struct fs_ino id, struct iref *out)
{
	int ret = ino_get_stable(v, id.num, out);

	if (ret < 0)
		return ret;
	return out->ino.generation == id.gen ? 0 : -ESTALE;
}

static struct od_loc slot_loc(const struct chunk *c, uint32_t slot)
{
	struct od_loc loc = {
		.chunk = c->index,
		.block = c->hdr.itable_start + slot / OD_ISLOTS_PER_BLOCK,
		.off = (uint16_t)(OD_MB_HEADER_SIZE + (slot % OD_ISLOTS_PER_BLOCK) * OD_INODE_SIZE),
	};
	return loc;
}

int slot_alloc(struct chunk *c, struct od_loc *loc)
{
	uint32_t slot;
	struct buf *b;
	int ret = chunk_load(c);

	if (ret < 0)
		return ret;
	if (c->nfree_slots) {
		slot = c->free_slots[--c->nfree_slots];
	} else {
		if (c->hdr.islot_watermark >= c->hdr.islots)
			return -ENOSPC;
		slot = c->hdr.islot_watermark;
		if (slot % OD_ISLOTS_PER_BLOCK == 0) {
			ret = buf_fresh(c, c->hdr.itable_start + slot / OD_ISLOTS_PER_BLOCK, 1,
					OD_MB_ITABLE, 0, &b);
			if (ret < 0)
				return ret;
			b->fresh = 1; /* above the committed watermark */
			buf_put(b);
		}
		c->hdr.islot_watermark++;
		c->header_dirty = 1;
	}
	*loc = slot_loc(c, slot);
	return 0;
}

int slot_free(struct fs_volume *v, struct od_loc loc)
{
	struct chunk *c = vol_chunk(v, loc.chunk);
	struct iref r = { .loc = loc };
	uint32_t slot;
	int ret;

	if (!c)
		return -EUCLEAN;
	/* Loaded first: a load after the free would list the slot again. */
	ret = chunk_load(c);
	if (ret < 0)
		return ret;
	slot = (loc.block - c->hdr.itable_start) * OD_ISLOTS_PER_BLOCK +
	       (loc.off - OD_MB_HEADER_SIZE) / OD_INODE_SIZE;
	ret = ino_write(v, &r); /* all zero: mode 0 marks the slot free */
	if (ret < 0)
		return ret;
	if (c->nfree_slots == c->cap_free_slots) {
		uint32_t ncap = c->cap_free_slots ? c->cap_free_slots * 2 : 64;
		uint32_t *p = realloc(c->free_slots, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		c->free_slots = p;
		c->cap_free_slots = ncap;
	}
	c->free_slots[c->nfree_slots++] = slot;
	return 0;
}

uint32_t slot_free_count(struct chunk *c)
{
	return c->nfree_slots + (c->hdr.islots - c->hdr.islot_watermark);
}

void fs_now(int64_t *sec, uint32_t *nsec)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	*sec = ts.tv_sec;
	*nsec = (uint32_t)ts.tv_nsec;
}

void ino_touch(struct od_inode *ino, int a, int m, int c)
{
	int64_t s;
	uint32_t ns;

	fs_now(&s, &ns);
	if (a) {
		ino->atime = s;
		ino->atime_ns = ns;
	}
	if (m) {
		ino->mtime = s;
		ino->mtime_ns = ns;
	}
	if (c) {
		ino->ctime = s;
		ino->ctime_ns = ns;
	}
}

void ino_to_attr(const struct od_inode *ino, struct fs_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->mode = ino->mode;
	a->nlink = ino->nlink;
	a->uid = ino->uid;
	a->gid = ino->gid;
	a->size = ino->size;
	a->used = ino->blocks * OD_BLOCK_SIZE + ino->inline_len;
	if (S_ISCHR(ino->mode) || S_ISBLK(ino->mode)) {
		a->rdev_major = ino->rdev >> 20;
		a->rdev_minor = ino->rdev & 0xfffff;
	}
	a->fileid = ino->stable;
	a->gen = ino->generation;
	a->atime.tv_sec = ino->atime;
	a->atime.tv_nsec = ino->atime_ns;
	a->mtime.tv_sec = ino->mtime;
	a->mtime.tv_nsec = ino->mtime_ns;
	a->ctime.tv_sec = ino->ctime;
	a->ctime.tv_nsec = ino->ctime_ns;
}

/* --- extent lists ------------------------------------------------------- */

static int ext_push(struct extlist *el, const struct od_extent *e)
{
	if (el->n == el->cap) {
		uint32_t ncap = el->cap ? el->cap * 2 : 16;
		struct od_extent *p = realloc(el->e, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		el->e = p;
		el->cap = ncap;
	}
	el->e[el->n++] = *e;
	return 0;
}

void ext_release(struct extlist *el)
{
	free(el->e);
	el->e = NULL;
	el->n = el->cap = 0;
}

int ext_load(struct fs_volume *v, const struct iref *r, struct extlist *out)
{
	struct chunk *c = vol_chunk(v, r->loc.chunk);
	uint32_t next = r->ino.ext_block, hops = 0;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (r->ino.nextents > OD_INODE_EXTENTS)
		return -EUCLEAN;
	for (uint32_t i = 0; i < r->ino.nextents && ret == 0; i++)
		ret = ext_push(out, &r->ino.ext[i]);
	while (next && ret == 0) {
		struct od_mb_header h;
		struct buf *b;
		if (++hops > c->hdr.nblocks) {
			ret = -EUCLEAN;
			break;
		}
		ret = buf_read(c, next, 1, &b);
		if (ret < 0)
			break;
		od_get_mb_header(b->data, &h);
		if (h.type != OD_MB_EXTENTS || h.seq > OD_EXT_PER_UNIT ||
		    h.owner != r->ino.stable) {
			buf_put(b);
			ret = -EUCLEAN;
			break;
		}
		for (uint32_t i = 0; i < h.seq && ret == 0; i++) {
			struct od_extent e;
			od_get_extent(b->data + OD_MB_HEADER_SIZE + 16 * i, &e);
			ret = ext_push(out, &e);
		}
		next = h.next;
		buf_put(b);
	}
	if (ret < 0)
		ext_release(out);
	return ret;
}

/* The units of an inode's extent chain, in order. */
static int chain_units(struct chunk *c, uint32_t first, uint32_t **units, uint32_t *n)
{
	uint32_t cap = 0;

	*units = NULL;
	*n = 0;
	while (first) {
		struct od_mb_header h;
		struct buf *b;
		int ret;
		if (*n == cap) {
			uint32_t *p = realloc(*units, (cap = cap * 2 + 8) * sizeof(*p));
			if (!p)
				return -ENOMEM;
			*units = p;
		}
		if (*n > c->hdr.nblocks)
			return -EUCLEAN;
		(*units)[(*n)++] = first;
		ret = buf_read(c, first, 1, &b);
		if (ret < 0)
			return ret;
		od_get_mb_header(b->data, &h);
		buf_put(b);
		first = h.next;
	}
	return 0;
}

/* Writing an extent list back happens in two steps so that a caller
 * storing several inodes (a file's continuation chain) can first make sure
 * every one of them has its extent units, and change nothing if one does
 * not: ext_prepare() allocates the units the list needs (-ENOSPC: none
 * taken), ext_commit() writes the first extents into the inode and the rest
 * into the chain, and frees units no longer needed; ext_abort() undoes a
 * prepare. The inode itself is written by the caller. */
int ext_prepare(struct fs_volume *v, const struct iref *r, const struct extlist *el,
		struct ext_plan *plan)
{
	struct chunk *c = vol_chunk(v, r->loc.chunk);
	uint32_t n_in = el->n < OD_INODE_EXTENTS ? el->n : OD_INODE_EXTENTS;
	int ret;

	plan->need = (el->n - n_in + OD_EXT_PER_UNIT - 1) / OD_EXT_PER_UNIT;
	ret = chain_units(c, r->ino.ext_block, &plan->units, &plan->have);
	if (ret < 0)
		goto fail;
	if (plan->need > plan->have) {
		uint32_t *p = realloc(plan->units, plan->need * sizeof(*p));
		if (!p) {
			ret = -ENOMEM;
			goto fail;
		}
		plan->units = p;
		for (uint32_t k = plan->have; k < plan->need; k++) {
			ret = alloc_meta(c, 1, &plan->units[k]);
			if (ret < 0) {
				while (k-- > plan->have)
					free_meta(c, plan->units[k], 1);
				goto fail;
			}
		}
	}
	return 0;
fail:
	free(plan->units);
	plan->units = NULL;
	return ret;
}

void ext_abort(struct fs_volume *v, const struct iref *r, struct ext_plan *plan)
{
	struct chunk *c = vol_chunk(v, r->loc.chunk);

	for (uint32_t k = plan->have; k < plan->need; k++)
		free_meta(c, plan->units[k], 1);
	free(plan->units);
	plan->units = NULL;
}

int ext_commit(struct fs_volume *v, struct iref *r, const struct extlist *el,
	       struct ext_plan *plan)
{
	struct chunk *c = vol_chunk(v, r->loc.chunk);
	uint32_t n_in = el->n < OD_INODE_EXTENTS ? el->n : OD_INODE_EXTENTS;
	uint32_t done = n_in;
	int ret = 0;

	memset(r->ino.ext, 0, sizeof(r->ino.ext));
	if (n_in)
		memcpy(r->ino.ext, el->e, n_in * sizeof(*el->e));
	r->ino.nextents = (uint16_t)n_in;
	r->ino.ext_block = plan->need ? plan->units[0] : 0;
	for (uint32_t k = 0; k < plan->need && ret == 0; k++) {
		struct od_mb_header h;
		struct buf *b;
		uint32_t cnt = el->n - done < OD_EXT_PER_UNIT ? el->n - done : OD_EXT_PER_UNIT;
		ret = buf_fresh(c, plan->units[k], 1, OD_MB_EXTENTS, r->ino.stable, &b);
		if (ret < 0)
			break;
		od_get_mb_header(b->data, &h);
		h.seq = cnt;
		h.next = k + 1 < plan->need ? plan->units[k + 1] : 0;
		od_put_mb_header(b->data, &h);
		for (uint32_t i = 0; i < cnt; i++)
			od_put_extent(b->data + OD_MB_HEADER_SIZE + 16 * i, &el->e[done + i]);
		buf_put(b);
		done += cnt;
	}
	/* The old chain's units beyond what is needed now. */
	for (uint32_t k = plan->need; k < plan->have; k++)
		free_meta(c, plan->units[k], 1);
	free(plan->units);
	plan->units = NULL;
	return ret;
}

int ext_store(struct fs_volume *v, struct iref *r, const struct extlist *el)
{
	struct ext_plan plan;
	int ret = ext_prepare(v, r, el, &plan);

	return ret < 0 ? ret : ext_commit(v, r, el, &plan);
}
