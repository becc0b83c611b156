/* A regular file's chain of continuation inodes: the head inode plus one
 * continuation in each further chunk the file's data spilled into, each
 * owning the blocks of its chunk from its cont_start on (invariant 1: an
 * inode maps only blocks of its own chunk). Loading and storing the chain,
 * mapping, allocating and cutting its extent segments, and the data block
 * I/O through them; the file-level operations are fs/file.c's. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/chain.h"

void chain_release(struct fchain *fc)
{
	for (uint32_t i = 0; i < fc->n; i++)
		ext_release(&fc->s[i].el);
	free(fc->s);
	free(fc->nr);
	free(fc->gone);
	free(fc->gone_conts);
	memset(fc, 0, sizeof(*fc));
}

static int note_gone(struct fchain *fc, uint32_t chunk, uint32_t pblk, uint32_t len)
{
	if (fc->n_gone == fc->cap_gone) {
		uint32_t ncap = fc->cap_gone ? fc->cap_gone * 2 : 8;
		struct newrange *p = realloc(fc->gone, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		fc->gone = p;
		fc->cap_gone = ncap;
	}
	fc->gone[fc->n_gone].chunk = chunk;
	fc->gone[fc->n_gone].pblk = pblk;
	fc->gone[fc->n_gone].len = len;
	fc->n_gone++;
	return 0;
}

/* After a successful chain_store: free what the cut let go of. */
int chain_free_gone(struct fs_volume *v, struct fchain *fc)
{
	int ret = 0;

	for (uint32_t i = 0; i < fc->n_gone; i++)
		free_blocks(vol_chunk(v, fc->gone[i].chunk), fc->gone[i].pblk, fc->gone[i].len);
	for (uint32_t i = 0; i < fc->n_gone_conts && ret == 0; i++) {
		struct extlist none = { 0 };
		ret = ext_store(v, &fc->gone_conts[i], &none);
		if (ret == 0)
			ret = slot_free(v, fc->gone_conts[i].loc);
	}
	fc->n_gone = fc->n_gone_conts = 0;
	return ret;
}

/* Give back what this operation allocated; the chain is then discarded. */
void chain_undo(struct fs_volume *v, struct fchain *fc)
{
	for (uint32_t i = 0; i < fc->n_nr; i++)
		free_blocks(vol_chunk(v, fc->nr[i].chunk), fc->nr[i].pblk, fc->nr[i].len);
	for (uint32_t i = fc->n_orig; i < fc->n; i++)
		slot_free(v, fc->s[i].r.loc);
	fc->n_nr = 0;
}

int chain_hold_new(struct fs_volume *v, struct fchain *fc, struct held_run **out, uint32_t *n)
{
	struct held_run *h = malloc((fc->n_nr ? fc->n_nr : 1) * sizeof(*h));

	if (!h)
		return -ENOMEM;
	/* Each range lies in one extent of a segment of its chunk. */
	for (uint32_t i = 0; i < fc->n_nr; i++) {
		const struct newrange *nr = &fc->nr[i];
		int found = 0;
		for (uint32_t si = 0; si < fc->n && !found; si++) {
			const struct extlist *el = &fc->s[si].el;
			if (fc->s[si].r.loc.chunk != nr->chunk)
				continue;
			for (uint32_t k = 0; k < el->n && !found; k++) {
				const struct od_extent *e = &el->e[k];
				if (nr->pblk >= e->pblk && nr->pblk + nr->len <= e->pblk + e->len) {
					h[i] = (struct held_run){ e->lblk + (nr->pblk - e->pblk),
								  nr->chunk, nr->pblk, nr->len };
					found = 1;
				}
			}
		}
		if (!found) {
			free(h);
			return -EUCLEAN;
		}
	}
	for (uint32_t i = 0; i < fc->n_nr; i++)
		chunk_hold(vol_chunk(v, fc->nr[i].chunk), fc->nr[i].pblk, fc->nr[i].len);
	*n = fc->n_nr;
	fc->n_nr = 0;
	for (uint32_t i = fc->n_orig; i < fc->n; i++)
		slot_free(v, fc->s[i].r.loc);
	*out = h;
	return 0;
}

static int note_new(struct fchain *fc, uint32_t chunk, uint32_t pblk, uint32_t len)
{
	if (fc->n_nr == fc->cap_nr) {
		uint32_t ncap = fc->cap_nr ? fc->cap_nr * 2 : 8;
		struct newrange *p = realloc(fc->nr, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		fc->nr = p;
		fc->cap_nr = ncap;
	}
	fc->nr[fc->n_nr].chunk = chunk;
	fc->nr[fc->n_nr].pblk = pblk;
	fc->nr[fc->n_nr].len = len;
	fc->n_nr++;
	return 0;
}

static int chain_push(struct fs_volume *v, struct fchain *fc, const struct iref *r)
{
	struct seg *p = realloc(fc->s, (fc->n + 1) * sizeof(*p));
	int ret;

	if (!p)
		return -ENOMEM;
	fc->s = p;
	memset(&p[fc->n], 0, sizeof(p[0]));
	p[fc->n].r = *r;
	ret = ext_load(v, r, &p[fc->n].el);
	if (ret < 0)
		return ret;
	fc->n++;
	return 0;
}

int chain_load(struct fs_volume *v, const struct iref *head, struct fchain *fc)
{
	struct iref cur = *head;
	int ret;

	memset(fc, 0, sizeof(*fc));
	for (;;) {
		ret = chain_push(v, fc, &cur);
		if (ret < 0)
			goto fail;
		if (cur.ino.next.chunk == OD_LOC_NONE) {
			fc->n_orig = fc->n;
			return 0;
		}
		if (fc->n > v->nchunks * 64u) {
			ret = -EUCLEAN;
			goto fail;
		}
		ret = ino_read(v, cur.ino.next, &cur);
		if (ret < 0)
			goto fail;
		if (!(cur.ino.flags & OD_INF_CONT) || cur.ino.head_stable != head->ino.stable) {
			ret = -EUCLEAN;
			goto fail;
		}
	}
fail:
	chain_release(fc);
	return ret;
}

/* Write back changed segments. Segment 0 is the head: the caller's copy
 * (size, flags, times) is merged with what the chain changed (its next
 * pointer, block count, extents) and handed back in *head. Every segment's
 * extent units are secured before any segment changes, so a failure (no
 * room for an extent unit) leaves every inode of the chain as it was. */
int chain_store(struct fs_volume *v, struct fchain *fc, struct iref *head)
{
	struct seg *s0 = &fc->s[0];
	struct od_loc next = s0->r.ino.next;
	uint64_t blocks = s0->r.ino.blocks;
	struct ext_plan *plan = calloc(fc->n, sizeof(*plan));
	uint32_t i;
	int ret = 0;

	if (!plan)
		return -ENOMEM;
	for (i = 0; i < fc->n && ret == 0; i++)
		if (fc->s[i].dirty)
			ret = ext_prepare(v, &fc->s[i].r, &fc->s[i].el, &plan[i]);
	if (ret < 0) {
		while (i-- > 0)
			if (fc->s[i].dirty && plan[i].units)
				ext_abort(v, &fc->s[i].r, &plan[i]);
		free(plan);
		return ret;
	}
	s0->r.ino = head->ino;
	s0->r.ino.next = next;
	s0->r.ino.blocks = blocks;
	for (i = 0; i < fc->n; i++) {
		struct seg *s = &fc->s[i];
		int r2;
		if (!s->dirty)
			continue;
		r2 = ext_commit(v, &s->r, &s->el, &plan[i]);
		if (r2 == 0 && i != 0)
			r2 = ino_write(v, &s->r);
		if (r2 < 0 && ret == 0)
			ret = r2; /* only ENOMEM or EIO can come here */
		s->dirty = 0;
	}
	free(plan);
	head->ino = s0->r.ino;
	return ret;
}

/* The segment whose range covers logical block lblk. */
static uint32_t seg_for(const struct fchain *fc, uint64_t lblk)
{
	uint32_t i = 0;

	while (i + 1 < fc->n && fc->s[i + 1].r.ino.cont_start <= lblk)
		i++;
	return i;
}

/* Physical block of lblk in seg, or 0 for a hole; *run: blocks mapped
 * contiguously from there (or the hole's length up to the next extent). */
static uint32_t seg_map(const struct seg *s, uint64_t lblk, uint64_t *run)
{
	uint32_t lo = 0, hi = s->el.n;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		const struct od_extent *e = &s->el.e[mid];
		if (lblk < e->lblk) {
			hi = mid;
		} else if (lblk >= e->lblk + e->len) {
			lo = mid + 1;
		} else {
			*run = e->lblk + e->len - lblk;
			return e->pblk + (uint32_t)(lblk - e->lblk);
		}
	}
	*run = lo < s->el.n ? s->el.e[lo].lblk - lblk : UINT64_MAX;
	return 0;
}

static int seg_insert(struct seg *s, uint64_t lblk, uint32_t pblk, uint32_t len)
{
	struct extlist *el = &s->el;
	uint32_t k = 0;

	while (k < el->n && el->e[k].lblk < lblk)
		k++;
	if (k > 0) {
		struct od_extent *p = &el->e[k - 1];
		if (p->lblk + p->len == lblk && p->pblk + p->len == pblk) {
			p->len += len;
			if (k < el->n && el->e[k].lblk == lblk + len &&
			    el->e[k].pblk == pblk + len) {
				p->len += el->e[k].len;
				memmove(&el->e[k], &el->e[k + 1], (el->n - k - 1) * sizeof(*p));
				el->n--;
			}
			goto done;
		}
	}
	if (k < el->n && el->e[k].lblk == lblk + len && el->e[k].pblk == pblk + len) {
		el->e[k].lblk = lblk;
		el->e[k].pblk = pblk;
		el->e[k].len += len;
		goto done;
	}
	if (el->n == el->cap) {
		uint32_t ncap = el->cap ? el->cap * 2 : 16;
		struct od_extent *p = realloc(el->e, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		el->e = p;
		el->cap = ncap;
	}
	memmove(&el->e[k + 1], &el->e[k], (el->n - k) * sizeof(el->e[0]));
	el->e[k].lblk = lblk;
	el->e[k].pblk = pblk;
	el->e[k].len = len;
	el->n++;
done:
	s->r.ino.blocks += len;
	s->dirty = 1;
	return 0;
}

static uint64_t seg_last_lblk(const struct seg *s)
{
	return s->el.n ? s->el.e[s->el.n - 1].lblk + s->el.e[s->el.n - 1].len : s->r.ino.cont_start;
}

/* A new continuation in chunk c for blocks from lblk on. */
static int chain_extend(struct fs_volume *v, struct fchain *fc, uint64_t lblk, struct chunk *c)
{
	struct seg *last = &fc->s[fc->n - 1];
	struct iref r;
	int ret;

	if (!c || lblk < seg_last_lblk(last))
		return -ENOSPC;
	memset(&r, 0, sizeof(r));
	ret = slot_alloc(c, &r.loc);
	if (ret < 0)
		return ret;
	r.ino.mode = S_IFREG;
	r.ino.flags = OD_INF_CONT;
	r.ino.head_chunk = fc->s[0].r.loc.chunk;
	r.ino.head_stable = fc->s[0].r.ino.stable;
	r.ino.cont_start = lblk;
	r.ino.next.chunk = OD_LOC_NONE;
	ret = ino_write(v, &r);
	if (ret == 0)
		ret = chain_push(v, fc, &r);
	if (ret < 0) {
		slot_free(v, r.loc);
		return ret;
	}
	fc->s[fc->n - 1].dirty = 1;
	last = &fc->s[fc->n - 2];
	last->r.ino.next = r.loc;
	last->dirty = 1;
	return 0;
}

/* Was segment si made by this operation, and has it no blocks yet? */
static int seg_new_empty(const struct fchain *fc, uint32_t si)
{
	return si > 0 && si >= fc->n_orig && fc->s[si].el.n == 0;
}

/* Give back the last segment, made by this operation and still empty. */
static int chain_pop_new(struct fs_volume *v, struct fchain *fc)
{
	struct seg *last = &fc->s[fc->n - 1];
	int ret = slot_free(v, last->r.loc);

	if (ret < 0)
		return ret;
	ext_release(&last->el);
	fc->n--;
	fc->s[fc->n - 1].r.ino.next.chunk = OD_LOC_NONE;
	fc->s[fc->n - 1].dirty = 1;
	return 0;
}

/* The run another chunk must have for an allocation of limit blocks:
 * cap, or all of them when fewer. */
static uint32_t run_of(uint64_t limit, uint32_t cap)
{
	return limit < cap ? (uint32_t)limit : cap;
}

/* Blocks held for lblk by a placement (fs/dalloc_place.c): 1 with up to
 * limit of them taken (*start, *got) when they lie in segment si's
 * chunk; 2 once a continuation is made in theirs (at the file's end);
 * 0 when none are held for lblk or they cannot be taken. */
static int held_take(struct fs_volume *v, struct fchain *fc, uint32_t si, uint64_t lblk,
		     uint64_t limit, uint32_t *start, uint32_t *got)
{
	const struct seg *s = &fc->s[si];

	for (uint32_t k = 0; k < fc->n_held; k++) {
		const struct held_run *h = &fc->held[k];
		uint64_t in = lblk - h->lblk;
		if (lblk < h->lblk || in >= h->len)
			continue;
		if (h->chunk != s->r.loc.chunk)
			return si == fc->n - 1 && chain_extend(v, fc, lblk, vol_chunk(v, h->chunk)) == 0
				       ? 2
				       : 0;
		*start = h->pblk + (uint32_t)in;
		*got = chunk_hold_take(vol_chunk(v, h->chunk), *start,
				       (uint32_t)(h->len - in < limit ? h->len - in : limit));
		return *got ? 1 : 0;
	}
	return 0;
}

/* The blocks of [lblk, lblk + n) not mapped yet. */
static uint64_t chain_missing(const struct fchain *fc, uint64_t lblk, uint64_t n)
{
	uint64_t missing = 0;

	while (n) {
		uint32_t si = seg_for(fc, lblk);
		uint64_t run, k;
		int mapped = seg_map(&fc->s[si], lblk, &run) != 0;

		k = run < n ? run : n;
		if (!mapped && si + 1 < fc->n && fc->s[si + 1].r.ino.cont_start - lblk < k)
			k = fc->s[si + 1].r.ino.cont_start - lblk;
		if (!k)
			k = 1;
		missing += mapped ? 0 : k;
		lblk += k;
		n -= k;
	}
	return missing;
}

/* Map [lblk, lblk + n) to blocks, allocating what is missing. */
int chain_alloc(struct fs_volume *v, struct fchain *fc, uint64_t lblk, uint64_t n)
{
	uint8_t *tried = NULL;
	int ret = 0;

	/* (blocks promised to buffered data are its placement's,
	 * fs/dalloc_room.c: a write in place takes none of them) */
	if (!dalloc_may_take(v, chain_missing(fc, lblk, n)))
		return -ENOSPC;
	while (n) {
		uint32_t si = seg_for(fc, lblk);
		struct seg *s = &fc->s[si];
		struct chunk *c = vol_chunk(v, s->r.loc.chunk);
		uint64_t run, limit = n;
		uint32_t goal = 0, start, got;
		int at_end;

		if (seg_map(s, lblk, &run)) {
			lblk += run < n ? run : n;
			n -= run < n ? run : n;
			continue;
		}
		if (run < limit)
			limit = run;
		if (si + 1 < fc->n && fc->s[si + 1].r.ino.cont_start - lblk < limit)
			limit = fc->s[si + 1].r.ino.cont_start - lblk;
		if (limit > 1u << 20)
			limit = 1u << 20;
		for (uint32_t k = 0; k < s->el.n; k++) {
			const struct od_extent *e = &s->el.e[k];
			if (e->lblk + e->len <= lblk)
				goal = e->pblk + e->len + (uint32_t)(lblk - (e->lblk + e->len));
		}
		/* Blocks a placement held for it, its data written there
		 * outside the lock (fs/dalloc_place.c), before anything. */
		if (fc->n_held) {
			int h = held_take(v, fc, si, lblk, limit, &start, &got);
			if (h == 1)
				goto have;
			if (h == 2)
				continue;
		}
		/* The file's reservation (fs/prealloc.c) first: its blocks
		 * are busy for every other allocation, and taking them keeps
		 * the file in one extent. */
		if (prealloc_take(v, fc->s[0].r.ino.stable, c, lblk, limit, &start, &got) == 0)
			goto have;
		/* The continuation policy: a file whose last segment is in a
		 * small-file or general chunk continues in a large-file chunk
		 * from block large_continue_blocks on (what lies before it
		 * stays), when one has room; an allocation that crosses
		 * that block stops at it first. A hole inside the segment is
		 * filled where it is (chain_extend refuses it). */
		if (v->large_continue_blocks && si == fc->n - 1 &&
		    c->hdr.kind != FS_KIND_LARGE && lblk + limit > v->large_continue_blocks &&
		    lblk >= seg_last_lblk(s)) {
			struct chunk *big = vol_pick_large_chunk(v, limit);
			if (big && lblk < v->large_continue_blocks) {
				limit = v->large_continue_blocks - lblk;
			} else if (big && chain_extend(v, fc, lblk, big) == 0) {
				v->large_continues++;
				continue;
			}
		}
		/* A small file's data with nothing before it in the segment:
		 * beside the small files written before it (fs/chunk.c's
		 * packing), else as any data below. */
		if (goal == 0 && limit <= PACK_MAX && v->pack_region && !v->alloc_first_fit &&
		    !chunk_draining(c)) {
			const struct od_loc *at = &fc->s[0].r.loc;
			uint64_t dir = 0;
			ret = dir_embedded_owner(v, &fc->s[0].r, &dir);
			if (ret == 0 || ret == -ENOENT)
				ret = alloc_packed(c, (uint32_t)limit, dir,
						   dir && at->chunk == c->index ? at->block : 0,
						   &start, &got);
			if (ret == 0)
				goto have;
			if (ret != -ENOSPC)
				goto out;
		}
		/* Where the file's last chunk is full outside its metadata
		 * zone, it continues in a chunk with such room (free_outside
		 * counts only blocks that can be taken now); the zone's
		 * pieces are taken for data only when no chunk has any left
		 * (its runs before, fs/chunk.c). */
		/* A draining chunk takes no new data: the file continues
		 * elsewhere. But a hole inside its segment there can only be
		 * filled there (a segment maps blocks of its own chunk): it is,
		 * and the evacuation carries it out later. */
		/* A long write (more than DATA_PIECE): a run of DATA_LONG_RUN
		 * (or all of it) here outside the zones, else in a chunk that
		 * has one at the file's end, else of this chunk's free pairs
		 * while half of them stay free; only then the runs of
		 * DATA_PIECE below, which cut a 64 MiB file into the 1-4 MiB
		 * holes of its aged chunk (doc/design.md). */
		ret = -ENOSPC;
		at_end = si == fc->n - 1 && lblk >= seg_last_lblk(s) && !seg_new_empty(fc, si);
		if (limit > DATA_PIECE && !chunk_draining(c) && !v->alloc_first_fit) {
			ret = alloc_data(c, goal, (uint32_t)limit, DATA_LONG, &start, &got);
			if (ret == -ENOSPC && at_end) {
				struct chunk *next =
					vol_pick_run_chunk(v, c, run_of(limit, DATA_LONG_RUN));
				if (next && chain_extend(v, fc, lblk, next) == 0)
					continue;
			}
			if (ret == -ENOSPC)
				ret = alloc_data(c, goal, (uint32_t)limit, DATA_LONG_PAIRS, &start,
						 &got);
		}
		if (ret == -ENOSPC && !chunk_draining(c))
			ret = alloc_data(c, goal, (uint32_t)limit, DATA_RUNS, &start, &got);
		/* No run for it here (fs/chunk.c's DATA_RUNS): at its end the
		 * file continues in a chunk that has one; else it takes a run
		 * of this one's zone pairs while half of them stay free, and
		 * only then its holes. */
		if (ret == -ENOSPC && !chunk_draining(c)) {
			struct chunk *next =
				at_end ? vol_pick_run_chunk(v, c, run_of(limit, DATA_PIECE)) : NULL;
			if (next && chain_extend(v, fc, lblk, next) == 0)
				continue;
			ret = alloc_data(c, goal, (uint32_t)limit, DATA_PAIR_RUNS, &start, &got);
			if (ret == -ENOSPC)
				ret = alloc_data(c, goal, (uint32_t)limit, DATA_OUTSIDE, &start,
						 &got);
		}
		if (ret == -ENOSPC && chunk_draining(c) &&
		    (si != fc->n - 1 || lblk < seg_last_lblk(s))) {
			ret = alloc_data(c, goal, (uint32_t)limit, DATA_OUTSIDE, &start, &got);
			if (ret == -ENOSPC)
				ret = alloc_data(c, goal, (uint32_t)limit, DATA_ANY, &start, &got);
		}
		if (ret == -ENOSPC && si == fc->n - 1 && !seg_new_empty(fc, si)) {
			struct chunk *next = vol_pick_data_chunk(v, c);
			if (next && chain_extend(v, fc, lblk, next) == 0)
				continue;
		}
		if (ret == -ENOSPC && !chunk_draining(c))
			ret = alloc_data(c, goal, (uint32_t)limit, DATA_ANY, &start, &got);
		if (ret == -ENOSPC && si == fc->n - 1) {
			/* Really full: any chunk not tried yet, with the empty
			 * continuation just made here given back. */
			struct chunk *next;
			if (!tried && !(tried = calloc(v->nchunks, 1)))
				return -ENOMEM;
			tried[c->index] = 1;
			if (seg_new_empty(fc, si) && (ret = chain_pop_new(v, fc)) < 0)
				goto out;
			next = vol_pick_chunk(v, NULL, FS_KIND_LARGE, 0, tried);
			/* No room anywhere: reservations are given back (the
			 * other files' first, fs/prealloc.c) before it fails. */
			if (!next && prealloc_give_back(v, fc->s[0].r.ino.stable)) {
				memset(tried, 0, v->nchunks);
				continue;
			}
			ret = chain_extend(v, fc, lblk, next);
			if (ret < 0)
				goto out;
			continue;
		}
		if (ret < 0)
			goto out;
have:
		ret = note_new(fc, c->index, start, got);
		if (ret == 0)
			ret = seg_insert(s, lblk, start, got);
		if (ret < 0) {
			if (fc->n_nr && fc->nr[fc->n_nr - 1].pblk == start)
				fc->n_nr--;
			free_blocks(c, start, got);
			goto out;
		}
		lblk += got;
		n -= got;
	}
out:
	free(tried);
	return ret;
}

static int data_io(struct fs_volume *v, uint32_t chunk, uint32_t pblk, uint32_t inoff, void *buf,
		   size_t len, int write)
{
	struct chunk *c = vol_chunk(v, chunk);
	uint64_t off = (uint64_t)pblk * OD_BLOCK_SIZE + inoff;

	if (c->offline)
		return -EIO;
	if (write == 1) {
		if (v->evac_pre)
			evac_pre_hit(v, chunk, pblk, (uint32_t)((inoff + len + OD_BLOCK_SIZE - 1) >>
								 OD_BLOCK_SHIFT));
		v->data_written = 1; /* durable before the metadata pointing at it */
		return store_pwrite(c->store, buf, len, off);
	}
	if (vol_nowait(v)) {
		int ret = write == CHAIN_READ_TOLD ? store_pread_told_nowait(c->store, buf, len, off)
						   : store_pread_nowait(c->store, buf, len, off);
		return ret == -EAGAIN ? vol_would_wait() : ret;
	}
	if (write == CHAIN_READ_TOLD)
		return store_pread_told(c->store, buf, len, off);
	return store_pread(c->store, buf, len, off);
}

/* Walk file bytes [off, off + len): fn gets each piece that lies in one run
 * of blocks of one chunk (pblk 0: a hole), in order. */
int chain_walk(const struct fchain *fc, uint64_t off, size_t len, chain_piece_fn fn, void *ctx)
{
	while (len) {
		uint64_t lblk = off >> OD_BLOCK_SHIFT, run;
		uint32_t inoff = (uint32_t)(off & (OD_BLOCK_SIZE - 1));
		uint32_t si = seg_for(fc, lblk);
		const struct seg *s = &fc->s[si];
		uint32_t p = seg_map(s, lblk, &run);
		uint64_t span;

		/* A hole ends where the next continuation begins. */
		if (si + 1 < fc->n && run > fc->s[si + 1].r.ino.cont_start - lblk)
			run = fc->s[si + 1].r.ino.cont_start - lblk;
		span = run >= (UINT64_MAX >> OD_BLOCK_SHIFT) ? UINT64_MAX
							     : run * OD_BLOCK_SIZE - inoff;
		size_t n = len < span ? len : (size_t)span;
		int ret = fn(ctx, s->r.loc.chunk, p, inoff, n);

		if (ret < 0)
			return ret;
		off += n;
		len -= n;
	}
	return 0;
}

struct rw_walk {
	struct fs_volume *v;
	uint8_t *buf;
	int write;
};

static int rw_piece(void *arg, uint32_t chunk, uint32_t pblk, uint32_t inoff, size_t n)
{
	struct rw_walk *w = arg;
	int ret = 0;

	if (pblk == 0 && w->write == 1)
		return -EUCLEAN;
	if (pblk == 0)
		memset(w->buf, 0, n);
	else
		ret = data_io(w->v, chunk, pblk, inoff, w->buf, n, w->write);
	w->buf += n;
	return ret;
}

/* Copy file bytes [off, off + len) in or out of mapped blocks; holes read as
 * zeros, and a write never meets one (chain_alloc ran first). */
int chain_rw(struct fs_volume *v, struct fchain *fc, uint64_t off, size_t len, uint8_t *buf,
	     int write)
{
	struct rw_walk w = { v, buf, write };

	return chain_walk(fc, off, len, rw_piece, &w);
}

/* Free every block at or after lblk, and continuations that become empty. */
int chain_cut(struct fs_volume *v, struct fchain *fc, uint64_t lblk)
{
	for (uint32_t i = fc->n; i-- > 0;) {
		struct seg *s = &fc->s[i];
		struct chunk *c = vol_chunk(v, s->r.loc.chunk);
		struct extlist *el = &s->el;
		uint32_t k = el->n;

		while (k > 0 && el->e[k - 1].lblk + el->e[k - 1].len > lblk) {
			struct od_extent *e = &el->e[k - 1];
			uint32_t keep = e->lblk >= lblk ? 0 : (uint32_t)(lblk - e->lblk);
			int ret = note_gone(fc, c->index, e->pblk + keep, e->len - keep);
			if (ret < 0)
				return ret;
			s->r.ino.blocks -= e->len - keep;
			s->dirty = 1;
			if (keep) {
				e->len = keep;
				break;
			}
			k--;
		}
		el->n = k;
		if (i > 0 && s->r.ino.cont_start >= lblk) {
			/* The whole continuation goes: unlink it (its extent
			 * units and slot are freed once the chain is stored). */
			struct iref *p = realloc(fc->gone_conts,
						 (fc->n_gone_conts + 1) * sizeof(*p));
			if (!p)
				return -ENOMEM;
			fc->gone_conts = p;
			fc->gone_conts[fc->n_gone_conts++] = s->r;
			el->n = 0;
			fc->s[i - 1].r.ino.next = s->r.ino.next;
			fc->s[i - 1].dirty = 1;
			ext_release(el);
			fc->n = i;
		}
	}
	return 0;
}

/* Point lblk of s at pblk instead of the block it had, splitting its
 * extent. */
static int seg_remap(struct seg *s, uint64_t lblk, uint32_t pblk)
{
	struct extlist *el = &s->el;
	uint32_t k;

	for (k = 0; k < el->n; k++)
		if (lblk >= el->e[k].lblk && lblk < el->e[k].lblk + el->e[k].len)
			break;
	if (k == el->n)
		return -EUCLEAN;
	if (el->n + 2 > el->cap) {
		uint32_t ncap = el->cap * 2 + 4;
		struct od_extent *p = realloc(el->e, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		el->e = p;
		el->cap = ncap;
	}
	{
		struct od_extent e = el->e[k];
		uint32_t before = (uint32_t)(lblk - e.lblk), after = e.len - before - 1;
		struct od_extent parts[3];
		uint32_t n = 0;
		if (before)
			parts[n++] = (struct od_extent){ e.lblk, e.pblk, before };
		parts[n++] = (struct od_extent){ lblk, pblk, 1 };
		if (after)
			parts[n++] = (struct od_extent){ lblk + 1, e.pblk + before + 1, after };
		memmove(&el->e[k + n], &el->e[k + 1], (el->n - k - 1) * sizeof(e));
		memcpy(&el->e[k], parts, n * sizeof(e));
		el->n += n - 1;
	}
	s->dirty = 1;
	return 0;
}

/* A file that shrinks to the middle of a block keeps that block's bytes
 * before the new end and must read zeros after it if it grows again.
 * Zeroed in place, a crash before the truncate commits would leave the old,
 * longer file with those zeros; so the block is copied to a new one with
 * its tail zeroed, and the old one goes with the transaction. */
int chain_cow_tail(struct fs_volume *v, struct fchain *fc, uint64_t size)
{
	uint32_t inoff = (uint32_t)(size & (OD_BLOCK_SIZE - 1));
	uint64_t lblk = size >> OD_BLOCK_SHIFT, run;
	uint8_t buf[OD_BLOCK_SIZE];
	struct seg *s;
	struct chunk *c;
	uint32_t p, np, got;
	int ret;

	if (!inoff)
		return 0;
	s = &fc->s[seg_for(fc, lblk)];
	c = vol_chunk(v, s->r.loc.chunk);
	p = seg_map(s, lblk, &run);
	if (!p)
		return 0;
	ret = data_io(v, c->index, p, 0, buf, OD_BLOCK_SIZE, 0);
	if (ret < 0)
		return ret;
	memset(buf + inoff, 0, OD_BLOCK_SIZE - inoff);
	ret = alloc_data(c, p + 1, 1, DATA_ANY, &np, &got);
	if (ret < 0)
		return ret;
	ret = note_new(fc, c->index, np, 1);
	if (ret < 0) {
		free_blocks(c, np, 1);
		return ret;
	}
	ret = data_io(v, c->index, np, 0, buf, OD_BLOCK_SIZE, 1);
	if (ret == 0)
		ret = seg_remap(s, lblk, np);
	if (ret == 0)
		ret = note_gone(fc, c->index, p, 1);
	return ret;
}

/* A newly allocated block that the write covers only in part must not show
 * what an earlier owner left there. */
int chain_zero_new_partial(struct fs_volume *v, struct fchain *fc, uint64_t lblk)
{
	static const uint8_t zero[OD_BLOCK_SIZE];
	struct seg *s = &fc->s[seg_for(fc, lblk)];
	uint64_t run;
	uint32_t p = seg_map(s, lblk, &run);

	for (uint32_t i = 0; i < fc->n_nr; i++)
		if (fc->nr[i].chunk == s->r.loc.chunk && p >= fc->nr[i].pblk &&
		    p < fc->nr[i].pblk + fc->nr[i].len)
			return data_io(v, s->r.loc.chunk, p, 0, (void *)zero, OD_BLOCK_SIZE, 1);
	return 0;
}

/* Reallocation (fs/realloc.c): segment si's extents, mapping file blocks
 * [a, a + len) without a hole, let go of (freed by chain_free_gone once
 * the chain is stored) and replaced by one extent from pblk of the same
 * chunk mapping [a, a + len + grow); the caller allocated [pblk, pblk +
 * len + grow) and gives it back when the store fails. */
int chain_seg_replace(struct fchain *fc, uint32_t si, uint32_t pblk, uint32_t grow)
{
	struct seg *s = &fc->s[si];
	struct extlist *el = &s->el;
	uint64_t a, len = 0;

	if (el->n == 0)
		return -EINVAL;
	a = el->e[0].lblk;
	for (uint32_t k = 0; k < el->n; k++) {
		if (el->e[k].lblk != a + len)
			return -EINVAL; /* a hole: not this function's case */
		len += el->e[k].len;
	}
	for (uint32_t k = 0; k < el->n; k++) {
		int ret = note_gone(fc, s->r.loc.chunk, el->e[k].pblk, el->e[k].len);
		if (ret < 0)
			return ret;
	}
	el->e[0].lblk = a;
	el->e[0].pblk = pblk;
	el->e[0].len = (uint32_t)len + grow;
	el->n = 1;
	s->r.ino.blocks += grow;
	s->dirty = 1;
	return 0;
}

/* Reallocation (fs/realloc.c): the file's blocks from lblk on (the last
 * segment's range, without a hole) let go of and mapped instead by a new
 * continuation in chunk t from lblk, one extent from pblk of len blocks
 * (allocated by the caller in t); the last segment, when it began at
 * lblk and is not the head, goes whole. As a file whose chunk is full
 * continues elsewhere, invariant 1 kept. On failure the caller undoes
 * (chain_undo gives back the new continuation) and frees its run. */
int chain_move_tail(struct fs_volume *v, struct fchain *fc, uint64_t lblk, struct chunk *t,
		    uint32_t pblk, uint32_t len)
{
	int ret = chain_cut(v, fc, lblk);

	/* (a segment the cut took off is not this operation's to give back;
	 * the continuation made next is) */
	if (fc->n_orig > fc->n)
		fc->n_orig = fc->n;
	if (ret == 0)
		ret = chain_extend(v, fc, lblk, t);
	if (ret == 0)
		ret = seg_insert(&fc->s[fc->n - 1], lblk, pblk, len);
	return ret;
}
