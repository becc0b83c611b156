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
int evac_copy_extents(struct fs_volume *v, struct chunk *k, const struct extlist *el,
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
			/* Copied already without the lock (evac_pre.c), or
			 * spoilt meanwhile (-ECANCELED), or copied here. */
			int pre = evac_pre_claim(v, k, src, left, t, &start, &got);
			ret = pre;
			if (pre == 0) {
				ret = alloc_data(t, goal, left, DATA_OUTSIDE, &start, &got);
				if (ret == -ENOSPC)
					ret = alloc_data(t, goal, left, DATA_ANY, &start, &got);
			}
			if (ret < 0)
				break;
			ret = push_ext(out, lblk, start, got);
			if (ret == 0 && !pre)
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

struct chunk *evac_segment_chunk(struct fs_volume *v, struct chunk *k, uint32_t i,
				 uint32_t max_blocks)
{
	struct chunk *p = vol_chunk(v, i);

	if (!p || p == k || p->offline || chunk_draining(p) || chunk_load(p) < 0 ||
	    chunk_free_blocks(p) < 2 * max_blocks)
		return NULL;
	return p;
}

/* el split at file block L: what lies below it into lo, the rest into hi
 * (an extent across L cut in two). */
static int split_at(const struct extlist *el, uint64_t L, struct extlist *lo, struct extlist *hi)
{
	int ret = 0;

	memset(lo, 0, sizeof(*lo));
	memset(hi, 0, sizeof(*hi));
	for (uint32_t i = 0; i < el->n && ret == 0; i++) {
		const struct od_extent *e = &el->e[i];
		if (e->lblk + e->len <= L) {
			ret = push_ext(lo, e->lblk, e->pblk, e->len);
		} else if (e->lblk >= L) {
			ret = push_ext(hi, e->lblk, e->pblk, e->len);
		} else {
			uint32_t k = (uint32_t)(L - e->lblk);
			ret = push_ext(lo, e->lblk, e->pblk, k);
			if (ret == 0)
				ret = push_ext(hi, L, e->pblk + k, e->len - k);
		}
	}
	if (ret < 0) {
		ext_release(lo);
		ext_release(hi);
	}
	return ret;
}

/* Where the first max_blocks mapped blocks of el end: the file block after
 * them, or UINT64_MAX when el maps no more than that. */
static uint64_t piece_end(const struct extlist *el, uint32_t max_blocks)
{
	uint64_t left = max_blocks;

	for (uint32_t i = 0; i < el->n; i++) {
		if (el->e[i].len > left)
			return el->e[i].lblk + left;
		left -= el->e[i].len;
	}
	return UINT64_MAX;
}

int evac_cont_piece(const struct extlist *el, uint32_t max_blocks, struct extlist *mv)
{
	struct extlist rest;
	int ret = split_at(el, piece_end(el, max_blocks), mv, &rest);

	ext_release(&rest);
	return ret;
}

/* Where the last max_blocks mapped blocks of el begin (the first mapped
 * block when el maps no more than that). */
static uint64_t tail_start(const struct extlist *el, uint32_t max_blocks)
{
	uint64_t left = max_blocks;

	for (uint32_t i = el->n; i-- > 0;) {
		if (el->e[i].len >= left)
			return el->e[i].lblk + el->e[i].len - left;
		left -= el->e[i].len;
	}
	return el->n ? el->e[0].lblk : 0;
}

int evac_tail_piece(const struct extlist *el, uint32_t max_blocks, struct extlist *mv)
{
	struct extlist keep;
	int ret = split_at(el, tail_start(el, max_blocks), &keep, mv);

	ext_release(&keep);
	return ret;
}

/* A new segment at position si of the chain (the ones from si on move up). */
static int seg_insert_at(struct fchain *fc, uint32_t si, const struct seg *ns)
{
	struct seg *p = realloc(fc->s, (fc->n + 1) * sizeof(*p));

	if (!p)
		return -ENOMEM;
	fc->s = p;
	memmove(&p[si + 1], &p[si], (fc->n - si) * sizeof(*p));
	p[si] = *ns;
	fc->n++;
	fc->n_orig++; /* not chain_undo's to give back */
	return 0;
}

int evac_move_cont(struct fs_volume *v, const struct iref *cont, struct chunk *t,
		   uint32_t max_blocks, struct evac_moved *m)
{
	struct chunk *k = vol_chunk(v, cont->loc.chunk);
	struct extlist mv = { 0 }, rest = { 0 }, nel = { 0 };
	struct od_loc new_loc = { .chunk = OD_LOC_NONE };
	struct iref head, old;
	struct fchain fc;
	struct seg *s;
	uint32_t si;
	uint64_t blocks = 0, L;
	int ret, whole, head_dirty;

	ret = ino_get_stable(v, cont->ino.head_stable, &head);
	if (ret < 0)
		return ret;
	ret = chain_load(v, &head, &fc);
	if (ret < 0)
		return ret;
	for (si = 1; si < fc.n && !evac_loc_eq(fc.s[si].r.loc, cont->loc); si++)
		;
	if (si == fc.n) {
		ret = -EUCLEAN; /* not on its head's chain */
		goto out;
	}
	s = &fc.s[si];
	old = s->r;
	if (!t) {
		/* The chunk of the segment before, when it may take data:
		 * the piece then extends that segment (no new continuation). */
		t = evac_segment_chunk(v, k, fc.s[si - 1].r.loc.chunk, max_blocks);
		if (!t) {
			ret = -ENOSPC;
			goto out;
		}
	}
	/* The piece: the segment's first max_blocks mapped blocks, or all of
	 * it (and the segment goes). */
	L = piece_end(&s->el, max_blocks);
	whole = L == UINT64_MAX;
	ret = split_at(&s->el, L, &mv, &rest);
	if (ret == 0)
		ret = evac_copy_extents(v, k, &mv, t, &nel, &blocks);
	if (ret < 0)
		goto out;
	/* Into the previous segment when it is in t (its range grows up to
	 * L), else into a new continuation of t in front of this one; an
	 * empty segment just goes. */
	if (nel.n == 0) {
		/* nothing to carry */
	} else if (fc.s[si - 1].r.loc.chunk == t->index) {
		struct seg *p = &fc.s[si - 1];
		for (uint32_t i = 0; i < nel.n && ret == 0; i++)
			ret = push_ext(&p->el, nel.e[i].lblk, nel.e[i].pblk, nel.e[i].len);
		p->r.ino.blocks += blocks;
		p->dirty = 1;
	} else {
		struct seg ns;
		memset(&ns, 0, sizeof(ns));
		ret = slot_alloc(t, &new_loc);
		if (ret < 0) {
			new_loc.chunk = OD_LOC_NONE;
		} else {
			ns.r.loc = new_loc;
			ns.r.ino = old.ino;
			ns.r.ino.ext_block = 0;
			ns.r.ino.nextents = 0;
			ns.r.ino.blocks = blocks;
			ns.r.ino.next = old.loc;
			ns.dirty = 1;
			for (uint32_t i = 0; i < nel.n && ret == 0; i++)
				ret = push_ext(&ns.el, nel.e[i].lblk, nel.e[i].pblk, nel.e[i].len);
			if (ret == 0)
				ret = seg_insert_at(&fc, si, &ns);
			if (ret < 0) {
				ext_release(&ns.el);
			} else {
				fc.s[si - 1].r.ino.next = new_loc;
				fc.s[si - 1].dirty = 1;
				si++;
			}
		}
	}
	if (ret < 0)
		goto undo;
	s = &fc.s[si];
	if (whole) {
		/* This segment goes: the one before it points past it, and
		 * chain_store never sees it. */
		fc.s[si - 1].r.ino.next = s->r.ino.next;
		fc.s[si - 1].dirty = 1;
		ext_release(&s->el);
		memmove(&fc.s[si], &fc.s[si + 1], (fc.n - si - 1) * sizeof(fc.s[0]));
		fc.n--;
		fc.n_orig--;
	} else {
		ext_release(&s->el);
		s->el = rest;
		memset(&rest, 0, sizeof(rest));
		s->r.ino.cont_start = L;
		s->r.ino.blocks -= blocks;
		s->dirty = 1;
	}
	head_dirty = fc.s[0].dirty;
	ret = chain_store(v, &fc, &head);
	if (ret < 0)
		goto undo; /* chain_store secures every extent unit first: nothing changed */
	if (head_dirty)
		ret = ino_write(v, &head);
	/* K's side: the blocks copied, and a segment that went whole, its
	 * extent units and slot. */
	for (uint32_t i = 0; i < mv.n; i++)
		free_blocks(k, mv.e[i].pblk, mv.e[i].len);
	if (ret == 0 && whole) {
		struct extlist none = { 0 };
		ret = ext_store(v, &old, &none);
		if (ret == 0)
			ret = slot_free(v, old.loc);
	}
	if (ret == 0) {
		m->conts += whole;
		m->blocks += blocks;
	}
	goto out;
undo:
	for (uint32_t i = 0; i < nel.n; i++)
		free_blocks(t, nel.e[i].pblk, nel.e[i].len);
	if (new_loc.chunk != OD_LOC_NONE)
		slot_free(v, new_loc);
out:
	ext_release(&mv);
	ext_release(&rest);
	ext_release(&nel);
	chain_release(&fc);
	return ret;
}

int evac_move_head_tail(struct fs_volume *v, const struct iref *head, struct chunk *t,
			uint32_t max_blocks, struct evac_moved *m)
{
	struct chunk *k = vol_chunk(v, head->loc.chunk);
	struct extlist keep = { 0 }, mv = { 0 }, nel = { 0 }, both = { 0 };
	struct od_loc new_loc = { .chunk = OD_LOC_NONE };
	struct iref h = *head;
	struct fchain fc;
	uint64_t blocks = 0, L;
	int ret;

	if (!S_ISREG(h.ino.mode) || (h.ino.flags & (OD_INF_CONT | OD_INF_INLINE)))
		return -EINVAL;
	ret = chain_load(v, &h, &fc);
	if (ret < 0)
		return ret;
	if (!t) {
		/* The chunk of the segment after the head, when it may take
		 * data: the piece then extends it downwards. */
		t = fc.n > 1 ? evac_segment_chunk(v, k, fc.s[1].r.loc.chunk, max_blocks) : NULL;
		if (!t) {
			ret = -ENOSPC;
			goto out;
		}
	}
	if (t == k || fc.s[0].el.n == 0) {
		ret = -EINVAL;
		goto out;
	}
	L = tail_start(&fc.s[0].el, max_blocks);
	ret = split_at(&fc.s[0].el, L, &keep, &mv);
	if (ret == 0)
		ret = evac_copy_extents(v, k, &mv, t, &nel, &blocks);
	if (ret < 0)
		goto out;
	/* nel (the piece's new blocks in t) stays as it is until the end:
	 * a failure gives them back. */
	for (uint32_t i = 0; i < nel.n && ret == 0; i++)
		ret = push_ext(&both, nel.e[i].lblk, nel.e[i].pblk, nel.e[i].len);
	if (ret < 0)
		goto undo;
	if (fc.n > 1 && fc.s[1].r.loc.chunk == t->index) {
		/* The next segment starts at L now: the piece goes in front
		 * of its extents. */
		struct seg *s1 = &fc.s[1];
		for (uint32_t i = 0; i < s1->el.n && ret == 0; i++)
			ret = push_ext(&both, s1->el.e[i].lblk, s1->el.e[i].pblk, s1->el.e[i].len);
		if (ret < 0)
			goto undo;
		ext_release(&s1->el);
		s1->el = both;
		memset(&both, 0, sizeof(both));
		s1->r.ino.cont_start = L;
		s1->r.ino.blocks += blocks;
		s1->dirty = 1;
	} else {
		struct seg ns;
		memset(&ns, 0, sizeof(ns));
		ret = slot_alloc(t, &new_loc);
		if (ret < 0) {
			new_loc.chunk = OD_LOC_NONE;
			goto undo;
		}
		ns.r.loc = new_loc;
		ns.r.ino.mode = S_IFREG;
		ns.r.ino.flags = OD_INF_CONT;
		ns.r.ino.head_chunk = h.loc.chunk;
		ns.r.ino.head_stable = h.ino.stable;
		ns.r.ino.cont_start = L;
		ns.r.ino.next = fc.s[0].r.ino.next;
		ns.r.ino.blocks = blocks;
		ns.dirty = 1;
		ns.el = both;
		ret = seg_insert_at(&fc, 1, &ns);
		if (ret < 0)
			goto undo; /* both still holds the list */
		memset(&both, 0, sizeof(both));
		fc.s[0].r.ino.next = new_loc;
		h.ino.next = new_loc;
	}
	ext_release(&fc.s[0].el);
	fc.s[0].el = keep;
	memset(&keep, 0, sizeof(keep));
	fc.s[0].r.ino.blocks -= blocks;
	fc.s[0].dirty = 1;
	ret = chain_store(v, &fc, &h);
	if (ret < 0)
		goto undo; /* chain_store secures every extent unit first: nothing changed */
	ret = ino_write(v, &h);
	for (uint32_t i = 0; i < mv.n; i++)
		free_blocks(k, mv.e[i].pblk, mv.e[i].len);
	if (ret == 0)
		m->blocks += blocks;
	goto out;
undo:
	for (uint32_t i = 0; i < nel.n; i++)
		free_blocks(t, nel.e[i].pblk, nel.e[i].len);
	if (new_loc.chunk != OD_LOC_NONE)
		slot_free(v, new_loc);
out:
	ext_release(&keep);
	ext_release(&mv);
	ext_release(&nel);
	ext_release(&both);
	chain_release(&fc);
	return ret;
}
