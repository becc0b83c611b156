/* Evacuation's moves (fs/evacuate.c drives them): one object of a draining
 * chunk K carried into another chunk T, in one transaction the caller
 * commits. Built so far: a file's continuation in K becomes a new
 * continuation in T with the same range, its data copied into blocks of T
 * (written before the transaction's lists are flushed: txn.c flushes data
 * first once v->data_written is set), the chain relinked (the previous
 * segment's next), and K's blocks, extent units and slot freed. Invariant
 * 1 holds throughout: the new continuation maps only blocks of T. The head
 * stays where it is; nothing here touches stable numbers or handles. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/chain.h"
#include "fs/evac.h"

#define COPY_BLOCKS 64u /* data copied 256 KiB at a time */

/* Blocks [src, src + len) of chunk k copied to [dst, dst + len) of t. */
static int copy_data(struct fs_volume *v, struct chunk *k, uint32_t src, struct chunk *t,
		     uint32_t dst, uint32_t len, uint8_t *buf)
{
	while (len) {
		uint32_t n = len < COPY_BLOCKS ? len : COPY_BLOCKS;
		int ret = store_pread(k->store, buf, (size_t)n * OD_BLOCK_SIZE,
				      (uint64_t)src * OD_BLOCK_SIZE);
		if (ret < 0)
			return ret;
		v->data_written = 1; /* durable before the metadata pointing at it */
		ret = store_pwrite(t->store, buf, (size_t)n * OD_BLOCK_SIZE,
				   (uint64_t)dst * OD_BLOCK_SIZE);
		if (ret < 0)
			return ret;
		src += n;
		dst += n;
		len -= n;
	}
	return 0;
}

static int push_ext(struct extlist *el, uint64_t lblk, uint32_t pblk, uint32_t len)
{
	if (el->n == el->cap) {
		uint32_t ncap = el->cap ? el->cap * 2 : 16;
		struct od_extent *p = realloc(el->e, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		el->e = p;
		el->cap = ncap;
	}
	el->e[el->n].lblk = lblk;
	el->e[el->n].pblk = pblk;
	el->e[el->n].len = len;
	el->n++;
	return 0;
}

/* Blocks of t for every extent of el, the data copied: *out maps the same
 * file blocks in t. On failure everything taken in t is given back. */
static int copy_extents(struct fs_volume *v, struct chunk *k, const struct extlist *el,
			struct chunk *t, struct extlist *out, uint64_t *moved)
{
	uint8_t *buf = malloc((size_t)COPY_BLOCKS * OD_BLOCK_SIZE);
	uint32_t goal = 0;
	int ret = buf ? 0 : -ENOMEM;

	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; i < el->n && ret == 0; i++) {
		uint64_t lblk = el->e[i].lblk;
		uint32_t src = el->e[i].pblk, left = el->e[i].len;
		while (left && ret == 0) {
			uint32_t start, got;
			ret = alloc_data(t, goal, left, 0, &start, &got);
			if (ret == -ENOSPC)
				ret = alloc_data(t, goal, left, 1, &start, &got);
			if (ret < 0)
				break;
			ret = push_ext(out, lblk, start, got);
			if (ret == 0)
				ret = copy_data(v, k, src, t, start, got, buf);
			if (ret < 0) {
				if (out->n && out->e[out->n - 1].pblk == start)
					break; /* freed below with the rest */
				free_blocks(t, start, got);
				break;
			}
			goal = start + got;
			lblk += got;
			src += got;
			left -= got;
			*moved += got;
		}
	}
	free(buf);
	if (ret < 0) {
		for (uint32_t i = 0; i < out->n; i++)
			free_blocks(t, out->e[i].pblk, out->e[i].len);
		ext_release(out);
	}
	return ret;
}

static int loc_eq(struct od_loc a, struct od_loc b)
{
	return a.chunk == b.chunk && a.block == b.block && a.off == b.off;
}

int evac_move_cont(struct fs_volume *v, const struct iref *cont, struct chunk *t,
		   struct evac_moved *m)
{
	struct chunk *k = vol_chunk(v, cont->loc.chunk);
	struct iref head, old;
	struct fchain fc;
	struct extlist nel;
	struct seg *s;
	uint32_t si;
	uint64_t blocks = 0;
	int ret;

	ret = ino_get_stable(v, cont->ino.head_stable, &head);
	if (ret < 0)
		return ret;
	ret = chain_load(v, &head, &fc);
	if (ret < 0)
		return ret;
	for (si = 1; si < fc.n && !loc_eq(fc.s[si].r.loc, cont->loc); si++)
		;
	if (si == fc.n) {
		ret = -EUCLEAN; /* not on its head's chain */
		goto out;
	}
	s = &fc.s[si];
	old = s->r;
	ret = copy_extents(v, k, &s->el, t, &nel, &blocks);
	if (ret < 0)
		goto out;
	/* The new continuation: the same inode in a slot of t, no extent
	 * units yet (chain_store gives it those its list needs). */
	memset(&s->r.loc, 0, sizeof(s->r.loc));
	ret = slot_alloc(t, &s->r.loc);
	if (ret < 0) {
		s->r = old;
		for (uint32_t i = 0; i < nel.n; i++)
			free_blocks(t, nel.e[i].pblk, nel.e[i].len);
		ext_release(&nel);
		goto out;
	}
	s->r.ino.ext_block = 0;
	s->r.ino.nextents = 0;
	ext_release(&s->el);
	s->el = nel;
	s->dirty = 1;
	fc.s[si - 1].r.ino.next = s->r.loc;
	fc.s[si - 1].dirty = 1;
	if (si - 1 == 0)
		head.ino.next = s->r.loc;
	ret = chain_store(v, &fc, &head);
	if (ret == 0 && si - 1 == 0)
		ret = ino_write(v, &head);
	if (ret < 0) {
		/* Nothing of the chain changed (chain_store secures every
		 * extent unit before it writes): give back what t took. */
		for (uint32_t i = 0; i < s->el.n; i++)
			free_blocks(t, s->el.e[i].pblk, s->el.e[i].len);
		slot_free(v, s->r.loc);
		goto out;
	}
	/* K's side: its data blocks, extent units and slot. */
	{
		struct extlist oel, none = { 0 };
		ret = ext_load(v, &old, &oel);
		if (ret < 0)
			goto out;
		for (uint32_t i = 0; i < oel.n; i++)
			free_blocks(k, oel.e[i].pblk, oel.e[i].len);
		ext_release(&oel);
		ret = ext_store(v, &old, &none);
		if (ret == 0)
			ret = slot_free(v, old.loc);
	}
	if (ret == 0) {
		m->conts++;
		m->blocks += blocks;
	}
out:
	chain_release(&fc);
	return ret;
}
