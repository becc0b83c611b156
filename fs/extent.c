/* Extent lists: an inode's whole list in memory (up to seven extents in the
 * inode itself, the rest in its chain of extent units), loaded, and stored back
 * in two steps (prepare, commit or abort) so that a caller storing several
 * inodes can change nothing when one of them finds no room. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/internal.h"

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
