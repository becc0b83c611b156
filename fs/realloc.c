/* Reallocation on sequential rewrite (BSD FFS's cluster reallocation,
 * McKusick and Smith): a file in pieces that is rewritten whole from its
 * start is written into one new run of blocks per segment instead of over
 * its old blocks, and the old blocks are freed. Delayed allocation
 * (fs/dalloc.c) detects the rewrite and holds its pages; this file says
 * which files qualify and does the move at their placement.
 *
 * Crash rule: the new run is written first (blocks that were free), then
 * the extents pointing at it and the frees of the old blocks are
 * dirtied together, so the next transaction (which flushes data first)
 * holds them all: a crash shows the file in its old blocks with its old
 * bytes, or in its new run with its new ones. The old blocks stay
 * reserved until that transaction commits (fs/chunk.c), so nothing
 * reuses them while a crash could still bring them back. Invariant 1
 * holds: a segment's run is taken in that segment's own chunk. Nothing
 * here changes the on-disk format; the counters live in memory.
 *
 * Also reallocation at append (realloc_append): a small file whose
 * append would start a new extent is moved whole with it into one run,
 * under the same crash rule. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/chain.h"

#define RA_BOUNCE_BLOCKS 256u /* pages copied to the disk 1 MiB at a time */

/* File blocks [lo, hi) that segment si of a file of nb blocks covers. */
static void seg_range(const struct fchain *fc, uint32_t si, uint64_t nb, uint64_t *lo,
		      uint64_t *hi)
{
	*lo = si ? fc->s[si].r.ino.cont_start : 0;
	*hi = si + 1 < fc->n ? fc->s[si + 1].r.ino.cont_start : nb;
	if (*hi > nb)
		*hi = nb;
	if (*lo > *hi)
		*lo = *hi;
}

/* Does every segment map its whole range of the file's nb blocks, with
 * no hole and nothing past it? And the extents of the file in all. */
static int tiled(const struct fchain *fc, uint64_t nb, uint32_t *extents)
{
	*extents = 0;
	for (uint32_t si = 0; si < fc->n; si++) {
		const struct extlist *el = &fc->s[si].el;
		uint64_t lo, hi, at;
		seg_range(fc, si, nb, &lo, &hi);
		at = lo;
		for (uint32_t k = 0; k < el->n; k++) {
			if (el->e[k].lblk != at)
				return 0;
			at += el->e[k].len;
		}
		if (at != hi)
			return 0;
		*extents += el->n;
	}
	return 1;
}

/* May a segment in chunk c move? Not while the chunk is offline or
 * being evacuated (a draining chunk takes no new data: its segments are
 * the evacuation's to move). */
static int chunk_takes(const struct chunk *c)
{
	return c && !c->offline && !chunk_draining(c);
}

int realloc_candidate(struct fs_volume *v, const struct iref *r)
{
	uint64_t nb = (r->ino.size + OD_BLOCK_SIZE - 1) / OD_BLOCK_SIZE;
	struct fchain fc;
	uint32_t extents;
	int ok;

	if (!v->realloc_min_extents || !S_ISREG(r->ino.mode) || (r->ino.flags & OD_INF_INLINE) ||
	    nb < 2)
		return 0;
	if (chain_load(v, r, &fc) < 0)
		return 0; /* (not a candidate: the rewrite goes in place, and meets the error) */
	ok = tiled(&fc, nb, &extents) && extents >= v->realloc_min_extents;
	for (uint32_t si = 0; ok && si < fc.n; si++)
		ok = chunk_takes(vol_chunk(v, fc.s[si].r.loc.chunk));
	chain_release(&fc);
	return ok;
}

/* pages[0..n) through fc's mapping (new runs or old blocks), 1 MiB at a
 * time. */
static int write_pages(struct fs_volume *v, struct fchain *fc, uint8_t *const *pages, uint32_t n)
{
	uint8_t *bounce = malloc((size_t)(n < RA_BOUNCE_BLOCKS ? n : RA_BOUNCE_BLOCKS) *
				 OD_BLOCK_SIZE);
	int ret = bounce ? 0 : -ENOMEM;

	for (uint32_t i = 0; ret == 0 && i < n;) {
		uint32_t k = n - i < RA_BOUNCE_BLOCKS ? n - i : RA_BOUNCE_BLOCKS;
		for (uint32_t j = 0; j < k; j++)
			memcpy(bounce + (size_t)j * OD_BLOCK_SIZE, pages[i + j], OD_BLOCK_SIZE);
		ret = chain_rw(v, fc, (uint64_t)i * OD_BLOCK_SIZE, (size_t)k * OD_BLOCK_SIZE, bounce,
			       1);
		i += k;
	}
	free(bounce);
	return ret;
}

int realloc_rewrite(struct fs_volume *v, struct iref *r, uint8_t *const *pages, uint32_t n,
		    int *done)
{
	uint64_t nb = (r->ino.size + OD_BLOCK_SIZE - 1) / OD_BLOCK_SIZE, moved = 0;
	struct newrange *run = NULL; /* per segment: the run taken (len 0: none) */
	uint32_t extents, nseg;
	int ret, any = 0, no_run = 0, tail = 0;
	struct fchain fc;

	*done = 0;
	if (!v->realloc_min_extents || n != nb || nb < 2 || (r->ino.flags & OD_INF_INLINE))
		return 0;
	ret = chain_load(v, r, &fc);
	if (ret < 0)
		return ret;
	if (!tiled(&fc, nb, &extents) || extents < v->realloc_min_extents)
		goto out; /* (changed since the rewrite began: written in place) */
	nseg = fc.n;
	run = calloc(nseg, sizeof(*run));
	if (!run) {
		ret = -ENOMEM;
		goto out;
	}
	/* A run for each segment in pieces, in its own chunk; the last
	 * segment, when its chunk has none (full outside its metadata zone),
	 * in the chunk a file growing there would continue in
	 * (vol_pick_data_chunk), by a new continuation. A segment already in
	 * one extent, or with no run anywhere, keeps its blocks and is
	 * written over. */
	for (uint32_t si = 0; si < nseg; si++) {
		struct chunk *c = vol_chunk(v, fc.s[si].r.loc.chunk), *t = c;
		uint64_t lo, hi;
		uint32_t len, start;
		seg_range(&fc, si, nb, &lo, &hi);
		len = (uint32_t)(hi - lo);
		if (fc.s[si].el.n < 2 || !chunk_takes(c))
			continue;
		ret = alloc_data_run(c, len, &start);
		if (ret == -ENOSPC && si == nseg - 1) {
			t = vol_pick_data_chunk(v, c);
			ret = t ? alloc_data_run(t, len, &start) : -ENOSPC;
		}
		if (ret == -ENOSPC) {
			no_run = 1;
			ret = 0;
			continue;
		}
		if (ret < 0)
			goto undo;
		run[si] = (struct newrange){ t->index, start, len };
		if (t == c) {
			ret = chain_seg_replace(&fc, si, start, 0);
		} else {
			tail = 1;
			ret = chain_move_tail(v, &fc, lo, t, start, len);
		}
		if (ret < 0)
			goto undo;
		any = 1;
		moved += len;
	}
	if (!any) {
		v->realloc_no_run += no_run;
		goto out; /* written in place by the caller */
	}
	/* The data first (new runs and the segments kept), then the extents
	 * and the frees, all for the next transaction. */
	r->ino.flags &= ~OD_INF_FRESH;
	ret = write_pages(v, &fc, pages, n);
	if (ret == 0)
		ret = chain_store(v, &fc, r); /* (secures every extent unit first) */
	if (ret < 0)
		goto undo;
	ret = chain_free_gone(v, &fc); /* the old blocks, reserved until the commit */
	v->reallocs++;
	v->realloc_blocks += moved;
	v->realloc_no_run += no_run;
	*done = 1;
	goto out;
undo:
	/* Nothing points at the new runs: they go back (reserved until the
	 * next commit like any free, harmless), and so does a continuation
	 * made for the tail; the buffer is kept. */
	for (uint32_t si = 0; si < nseg; si++)
		if (run[si].len)
			free_blocks(vol_chunk(v, run[si].chunk), run[si].pblk, run[si].len);
	if (tail)
		chain_undo(v, &fc);
out:
	free(run);
	chain_release(&fc);
	return ret;
}

/* Reallocation at append: the small file whose append would start a new
 * extent (the blocks after its last one are taken) is written whole into
 * one new run of its chunk instead, with the same crash rule as a
 * rewrite: the run (blocks that were free) written first, then the
 * extent and the frees of the old blocks for the next transaction, which
 * flushes data first; the old blocks stay reserved until it commits.
 * Appends across commits made most of an aged volume's extra extents
 * (doc/design.md, "Allocation on an aged volume"). */
int realloc_append(struct fs_volume *v, struct iref *r, uint8_t *const *pages, uint64_t first,
		   uint32_t n, uint64_t end, int *done)
{
	uint64_t nb = (r->ino.size + OD_BLOCK_SIZE - 1) / OD_BLOCK_SIZE, total = first + n;
	uint64_t old_size = r->ino.size;
	const struct od_extent *last;
	uint8_t *buf = NULL;
	uint32_t extents, start;
	struct fchain fc;
	struct chunk *c;
	int ret;

	*done = 0;
	if (v->alloc_first_fit || (r->ino.flags & OD_INF_INLINE) || nb == 0 || first > nb ||
	    total <= nb || total > v->realloc_append_blocks || prealloc_held(v, r->ino.stable))
		return 0;
	ret = chain_load(v, r, &fc);
	if (ret < 0)
		return ret;
	c = vol_chunk(v, fc.s[0].r.loc.chunk);
	if (fc.n != 1 || !tiled(&fc, nb, &extents) || !chunk_takes(c))
		goto out;
	/* The whole append fits after its last extent: it goes on there. */
	last = &fc.s[0].el.e[fc.s[0].el.n - 1];
	if (chunk_free_after(c, last->pblk + last->len, (uint32_t)(total - nb)) >= total - nb)
		goto out;
	buf = malloc(total * OD_BLOCK_SIZE);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	ret = chain_rw(v, &fc, 0, first * OD_BLOCK_SIZE, buf, 0);
	if (ret < 0)
		goto out;
	for (uint32_t i = 0; i < n; i++)
		memcpy(buf + (first + i) * OD_BLOCK_SIZE, pages[i], OD_BLOCK_SIZE);
	ret = alloc_data_run(c, (uint32_t)total, &start);
	if (ret == -ENOSPC) {
		ret = 0; /* no run: the append is placed as without this */
		goto out;
	}
	if (ret < 0)
		goto out;
	ret = chain_seg_replace(&fc, 0, start, (uint32_t)(total - nb));
	if (ret == 0)
		ret = chain_rw(v, &fc, 0, total * OD_BLOCK_SIZE, buf, 1);
	if (ret == 0) {
		r->ino.flags &= ~OD_INF_FRESH;
		if (end > r->ino.size)
			r->ino.size = end;
		ret = chain_store(v, &fc, r);
	}
	if (ret < 0) {
		/* nothing points at the run: it goes back (reserved until the
		 * next commit, harmless) */
		r->ino.size = old_size;
		free_blocks(c, start, (uint32_t)total);
		goto out;
	}
	ret = chain_free_gone(v, &fc); /* the old blocks, reserved until the commit */
	v->append_moves++;
	v->append_move_blocks += total;
	*done = 1;
out:
	free(buf);
	chain_release(&fc);
	return ret;
}

void realloc_counters(struct fs_volume *v, struct fs_counters *out)
{
	out->realloc_min_extents = v->realloc_min_extents;
	out->reallocs = v->reallocs;
	out->realloc_blocks = v->realloc_blocks;
	out->realloc_no_run = v->realloc_no_run;
	out->realloc_append_max = (uint64_t)v->realloc_append_blocks * OD_BLOCK_SIZE;
	out->append_moves = v->append_moves;
	out->append_move_blocks = v->append_move_blocks;
}

void fs_set_realloc_append(struct fs_volume *v, uint64_t bytes)
{
	uint64_t blocks = bytes / OD_BLOCK_SIZE;

	vol_lock(v);
	v->realloc_append_blocks = blocks < UINT32_MAX ? (uint32_t)blocks : UINT32_MAX;
	vol_unlock(v);
}

void fs_set_realloc(struct fs_volume *v, uint32_t min_extents)
{
	vol_lock(v);
	v->realloc_min_extents = min_extents;
	vol_unlock(v);
}
