/* Inodes by location: reading and writing the 256-byte inode wherever it
 * lives (an inode-area slot or a directory entry), resolving stable
 * identities through the map, inode-area slots, times and attributes.
 * Extent lists are fs/extent.c's. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/internal.h"
#include "fs/lostfound.h"

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

void fs_fault_ino_write(struct fs_volume *v, unsigned nth, int err)
{
	vol_lock(v);
	v->ino_write_fault = nth;
	v->ino_write_fault_err = err;
	vol_unlock(v);
}

int ino_write(struct fs_volume *v, const struct iref *r)
{
	struct buf *b;
	int ret;

	if (v->ino_write_fault && --v->ino_write_fault == 0)
		return v->ino_write_fault_err;
	ret = loc_buf(v, r->loc, &b);
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
	/* A chunk's first slot goes to lost+found's part there, made when
	 * first needed (fs/lostfound.c): before the chunk holds anything that
	 * could become an orphan, so fsck of this chunk alone has a place to
	 * link its orphans into. */
	int ret = lf_first_part(c->vol, c);

	return ret < 0 ? ret : slot_take(c, loc);
}

int slot_take(struct chunk *c, struct od_loc *loc)
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
