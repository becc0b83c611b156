/* Delayed allocation's placement with the data written outside the volume
 * lock (issue 24): a file of many buffered pages (a client's COMMIT after
 * a large write) would otherwise hold the lock for the whole store write,
 * 20-30 ms for 64 MiB, and every other call would wait that long.
 *
 * Three steps. Under the lock, the blocks are chosen as the locked
 * placement chooses them (chain_alloc on the file's chain, run after run),
 * then held instead of allocated (chunk_hold: free in the bitmap and on
 * disk, busy for every other allocation, counted as used by FSSTAT), the
 * continuations that choice made given back, and the file's pages marked
 * busy (a write to one meanwhile goes to a copy, fs/dalloc.c). Without the
 * lock, with the chunks pinned, the pages are written to the held blocks.
 * Under the lock again, the file's chain is loaded anew and chain_alloc
 * takes the held blocks first (fs/chain.c), so the layout is the locked
 * placement's; a block it maps elsewhere (the file or its chunk changed
 * meanwhile) is written there under the lock. Then the extents and size
 * are stored, as file_place_run stores them.
 *
 * Crashes: nothing of the placement is on disk before its last step, whose
 * transaction flushes the data first (txn.c): a crash before it leaves the
 * held blocks free and the file as it was.
 *
 * What may happen meanwhile: the file removed or its buffer dropped (the
 * file is freed by this placement, dalloc_file_free); placed under the
 * lock by another call (a sync of a chunk going offline, a truncate, a
 * stable write, a rename: f->epoch moves, and this one gives its blocks
 * back and lets the caller place what is left under the lock); the
 * chunk's allocation state dropped (its reservations with it: nothing to
 * give back) or the chunk draining (the held blocks given back, the data
 * written where chain_alloc then puts it). Pages written meanwhile stay
 * buffered, for a later placement. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/chain.h"
#include "fs/dalloc.h"

#define BOUNCE_BLOCKS 256u /* data written 1 MiB at a time */

/* Where a held run's blocks were when held: its chunk's store and the
 * count of its allocation state's drops (either moved: the hold is gone
 * with the state); ok: its data written. */
struct hold_at {
	struct chunk_store *st;
	uint64_t unloads;
	int ok;
};

/* The snapshot of the file's pages taken for the placement. */
struct snap {
	uint32_t n;
	const uint64_t *idx;
	uint8_t **data;               /* (taken out as they stay with the file) */
	uint64_t size;                /* the file's size then */
	void (*window_hook)(void *arg); /* d->window_hook then, and its argument */
	void *window_arg;
};

/* The end of the run of consecutive pages starting at s->idx[i]. */
static uint32_t run_end(const struct snap *s, uint32_t i)
{
	uint32_t j = i + 1;

	while (j < s->n && s->idx[j] == s->idx[j - 1] + 1)
		j++;
	return j;
}

/* Is the hold still its chunk's (the state that held it not dropped)? */
static int hold_alive(struct fs_volume *v, const struct held_run *h, const struct hold_at *a)
{
	const struct chunk *c = vol_chunk(v, h->chunk);

	return c && c->loaded && !c->offline && c->store == a->st && c->unloads == a->unloads;
}

/* Every block still held given back. */
static void release_holds(struct fs_volume *v, const struct held_run *h,
			  const struct hold_at *a, uint32_t nh)
{
	for (uint32_t k = 0; k < nh; k++)
		if (hold_alive(v, &h[k], &a[k]))
			chunk_hold_release(vol_chunk(v, h[k].chunk), h[k].pblk, h[k].len);
}

/* The snapshot's pages settled in f (NULL: freed meanwhile): placed, the
 * pages f still shares leave it; else they stay buffered, busy no more.
 * The snapshot keeps the pages f no longer has (placed, or written
 * meanwhile: copied), to be freed (free_pages); those f keeps are taken
 * out of it. Both arrays are sorted by index: one merge. */
static void settle_pages(struct dalloc *d, struct da_file *f, struct snap *s, int placed)
{
	uint32_t i = 0, out = 0;

	for (uint32_t p = 0; f && p < f->n; p++) {
		struct da_page *pg = &f->pg[p];
		while (i < s->n && s->idx[i] < pg->idx)
			i++;
		if (i < s->n && s->idx[i] == pg->idx) {
			if (pg->data == s->data[i] && placed) {
				d->bytes -= DA_PAGE;
				i++;
				continue;
			}
			if (pg->data == s->data[i]) {
				pg->busy = 0;
				s->data[i] = NULL;
			}
			i++;
		}
		f->pg[out++] = *pg;
	}
	if (f) {
		f->n = out;
		if (placed)
			f->few = 0; /* (its extents changed: no longer known) */
		dalloc_units_note(d->vol, f, NULL);
	}
}

/* Would f keep pages once the snapshot's are placed (written meanwhile:
 * copied, or new)? */
static int pages_left(const struct da_file *f, const struct snap *s)
{
	uint32_t i = 0;

	for (uint32_t p = 0; p < f->n; p++) {
		while (i < s->n && s->idx[i] < f->pg[p].idx)
			i++;
		if (i == s->n || s->idx[i] != f->pg[p].idx || s->data[i] != f->pg[p].data)
			return 1;
	}
	return 0;
}

/* The snapshot's pages left to it freed: with the lock left while there
 * are many (16,384 for 64 MiB took 0.5-5 ms of CPU) and the caller is
 * done with the file (may_unlock), *t0 moved when it is taken again. */
static void free_pages(struct fs_volume *v, struct snap *s, int may_unlock, int64_t *t0)
{
	int unlock = may_unlock && s->n > DA_UNLOCKED_MIN;

	if (unlock)
		vol_unlock(v);
	for (uint32_t i = 0; i < s->n; i++)
		free(s->data[i]);
	if (unlock) {
		vol_lock(v);
		*t0 = dalloc_now_us();
	}
}

/* Mark done[] the pages of the run from s->idx[i] whose blocks are the
 * ones held and written for them (fc mapped them so). */
struct match {
	const struct held_run *h;
	uint32_t nh;
	uint64_t lblk;                /* the next piece's first block */
	uint8_t *done;                /* ... its page's flag */
	uint64_t blocks;              /* pages so found */
};

static int match_piece(void *arg, uint32_t chunk, uint32_t pblk, uint32_t inoff, size_t n)
{
	struct match *m = arg;
	uint64_t nb = n / OD_BLOCK_SIZE;

	(void)inoff; /* (whole blocks) */
	for (uint32_t k = 0; pblk && k < m->nh; k++) {
		const struct held_run *h = &m->h[k];
		uint64_t lo = m->lblk > h->lblk ? m->lblk : h->lblk;
		uint64_t hi = m->lblk + nb < h->lblk + h->len ? m->lblk + nb : h->lblk + h->len;
		if (h->chunk != chunk || lo >= hi ||
		    (uint64_t)pblk + (lo - m->lblk) != (uint64_t)h->pblk + (lo - h->lblk))
			continue;
		memset(m->done + (lo - m->lblk), 1, hi - lo);
		m->blocks += hi - lo;
	}
	m->lblk += nb;
	m->done += nb;
	return 0;
}

/* Under the lock again: the file's chain with the held blocks taken
 * first, its extents and size stored, and the pages not in a held block
 * written now. Failed before the extents are stored: nothing changed
 * (-EAGAIN for the caller's locked placement, which reports it). */
static int place_held(struct fs_volume *v, struct iref *r, const struct snap *s,
		      const struct held_run *h, uint32_t nh, uint64_t *unlocked_blocks)
{
	struct fchain fc;
	struct match m = { h, nh, 0, NULL, 0 };
	uint8_t *done = calloc(s->n, 1), *bounce = malloc(BOUNCE_BLOCKS * OD_BLOCK_SIZE);
	uint64_t end = (s->idx[s->n - 1] + 1) * DA_PAGE;
	int ret = done && bounce ? chain_load(v, r, &fc) : -ENOMEM;

	if (ret < 0)
		goto fallback;
	fc.held = h;
	fc.n_held = nh;
	for (uint32_t i = 0; ret == 0 && i < s->n; i = run_end(s, i))
		ret = chain_alloc(v, &fc, s->idx[i], run_end(s, i) - i);
	if (ret == 0)
		ret = file_store_grown(v, &fc, r, end < s->size ? end : s->size);
	else
		chain_undo(v, &fc);
	if (ret < 0) {
		chain_release(&fc);
		goto fallback;
	}
	for (uint32_t i = 0; i < s->n; i = run_end(s, i)) {
		m.lblk = s->idx[i];
		m.done = done + i;
		(void)chain_walk(&fc, s->idx[i] * DA_PAGE, (size_t)(run_end(s, i) - i) * DA_PAGE,
				 match_piece, &m);
	}
	if (m.blocks)
		v->data_written = 1; /* durable before the metadata pointing at it */
	/* The rest, in pieces of consecutive pages not done. */
	for (uint32_t i = 0; ret == 0 && i < s->n;) {
		uint32_t k = 0;
		if (done[i]) {
			i++;
			continue;
		}
		while (i + k < s->n && k < BOUNCE_BLOCKS && !done[i + k] &&
		       s->idx[i + k] == s->idx[i] + k) {
			memcpy(bounce + (size_t)k * OD_BLOCK_SIZE, s->data[i + k], OD_BLOCK_SIZE);
			k++;
		}
		ret = chain_rw(v, &fc, s->idx[i] * DA_PAGE, (size_t)k * OD_BLOCK_SIZE, bounce, 1);
		i += k;
	}
	chain_release(&fc);
	*unlocked_blocks = m.blocks;
	free(done);
	free(bounce);
	return ret;
fallback:
	free(done);
	free(bounce);
	return -EAGAIN;
}

/* Has a chunk of the holds a pin waiter (a reopen, an offline or a
 * retirement in chunk_wait_unpinned) that the placement's pins keep out?
 * Its index in *at. */
static int holds_waited(struct fs_volume *v, const struct held_run *h, uint32_t nh, uint32_t *at)
{
	for (uint32_t k = 0; k < nh; k++)
		if (__atomic_load_n(&vol_chunk(v, h[k].chunk)->pin_waiters, __ATOMIC_SEQ_CST)) {
			*at = h[k].chunk;
			return 1;
		}
	return 0;
}

/* The placement gives way to the pin waiter of chunk at: counted. */
static int gave_way(struct dalloc *d, uint32_t at)
{
	d->unlocked_stops++;
	d->gave_way_chunk = at;
	return -EINTR;
}

/* Without the lock: each held run's pages written to its blocks, 1 MiB a
 * write; before each, a pin waiter of the chunks stops it (1, the chunk
 * in *at): the waiter waits for one write at most, not the file's. */
static int write_holds(struct fs_volume *v, const struct snap *s, const struct held_run *h,
		       struct hold_at *a, uint32_t nh, uint32_t *at)
{
	uint8_t *bounce = malloc(BOUNCE_BLOCKS * OD_BLOCK_SIZE);
	void (*hook)(void *arg) = s->window_hook;
	uint32_t p = 0;
	int stop = 0;

	for (uint32_t k = 0; bounce && !stop && k < nh; k++) {
		int ret = 0;
		/* (the page of its first block: the snapshot holds every
		 * block of a held run, found from the start) */
		for (p = 0; p < s->n && s->idx[p] != h[k].lblk; p++)
			;
		if (p + h[k].len > s->n)
			continue;
		for (uint32_t off = 0; ret == 0 && off < h[k].len; off += BOUNCE_BLOCKS) {
			uint32_t b = h[k].len - off < BOUNCE_BLOCKS ? h[k].len - off : BOUNCE_BLOCKS;
			if ((stop = holds_waited(v, h, nh, at)))
				break;
			for (uint32_t j = 0; j < b; j++)
				memcpy(bounce + (size_t)j * OD_BLOCK_SIZE, s->data[p + off + j],
				       OD_BLOCK_SIZE);
			ret = store_pwrite(a[k].st, bounce, (size_t)b * OD_BLOCK_SIZE,
					   (uint64_t)(h[k].pblk + off) * OD_BLOCK_SIZE);
			if (hook)
				hook(s->window_arg);
		}
		a[k].ok = ret == 0 && !stop;
	}
	free(bounce);
	return stop;
}

int dalloc_place_unlocked(struct fs_volume *v, struct da_file *f, uint8_t **data, int64_t *t0)
{
	struct dalloc *d = v->da;
	struct fs_ino id = { f->stable, f->gen };
	struct snap s = { f->n, NULL, data, f->size, d->window_hook, d->window_arg };
	void (*hook)(void *arg) = d->written_hook;
	void *hook_arg = d->written_arg;
	struct held_run *h = NULL;
	struct hold_at *a = NULL;
	uint32_t nh = 0, epoch = f->epoch, live = 0, waited_at = 0;
	uint64_t *idx = malloc(f->n * sizeof(*idx)), before, blocks = 0, held = 0;
	struct fchain fc;
	struct iref r;
	int ret = idx ? ino_get(v, id, &r) : -ENOMEM, cut = 0, stopped;

	/* 1. Under the lock: the blocks chosen and held. */
	if (ret < 0) {
		free(idx);
		return -EAGAIN;
	}
	for (uint32_t i = 0; i < f->n; i++)
		idx[i] = f->pg[i].idx;
	s.idx = idx;
	ret = chain_load(v, &r, &fc);
	if (ret < 0) {
		free(idx);
		return -EAGAIN;
	}
	for (uint32_t i = 0; ret == 0 && i < s.n; i = run_end(&s, i))
		ret = chain_alloc(v, &fc, idx[i], run_end(&s, i) - i);
	if (ret == 0)
		ret = chain_hold_new(v, &fc, &h, &nh);
	if (ret < 0)
		chain_undo(v, &fc);
	chain_release(&fc);
	/* (a chunk it would write to waited for, for its pins: it gives way
	 * at once, nothing pinned) */
	if (ret == 0 && (!(a = calloc(nh ? nh : 1, sizeof(*a))) ||
			 holds_waited(v, h, nh, &waited_at))) {
		for (uint32_t k = 0; k < nh; k++) /* (held: given back) */
			chunk_hold_release(vol_chunk(v, h[k].chunk), h[k].pblk, h[k].len);
		ret = a ? -EINTR : -ENOMEM;
	}
	if (ret < 0) {
		free(a);
		free(h);
		free(idx);
		/* (-EAGAIN: placed under the lock, which reports the error) */
		return ret == -EINTR ? gave_way(d, waited_at) : -EAGAIN;
	}
	for (uint32_t k = 0; k < nh; k++) {
		struct chunk *c = vol_chunk(v, h[k].chunk);
		a[k].st = c->store;
		a[k].unloads = c->unloads;
		chunk_pin(c); /* (its store stays while the data is written) */
		held += h[k].len;
	}
	/* (counted once, as held blocks: fs/dalloc_room.c) */
	f->held = held < f->n ? (uint32_t)held : f->n;
	d->held_pages += f->held;
	for (uint32_t i = 0; i < f->n; i++)
		f->pg[i].busy = 1;
	f->placing = 1;
	dalloc_note_hold(d, *t0);

	/* 2. Without it: the data written. */
	vol_unlock(v);
	stopped = write_holds(v, &s, h, a, nh, &waited_at);
	if (hook && !stopped)
		hook(hook_arg); /* (the chunks still pinned, the blocks held) */
	vol_lock(v);
	*t0 = dalloc_now_us();

	/* 3. Under it again: the file checked, the held blocks taken. */
	for (uint32_t k = 0; k < nh; k++)
		chunk_unpin(vol_chunk(v, h[k].chunk));
	dalloc_unhold(d, f, f->held);
	for (uint32_t k = 0; k < nh; k++) {
		const struct chunk *c = vol_chunk(v, h[k].chunk);
		if (!hold_alive(v, &h[k], &a[k]))
			continue; /* (gone with its chunk's state) */
		if (!a[k].ok || chunk_draining(c)) {
			chunk_hold_release(vol_chunk(v, h[k].chunk), h[k].pblk, h[k].len);
			continue;
		}
		h[live] = h[k];
		a[live++] = a[k];
	}
	f->placing = 0;
	if (f->dead) { /* (removed, or placed by another call, meanwhile) */
		release_holds(v, h, a, live);
		settle_pages(d, NULL, &s, 0);
		free(f);
		ret = 0;
		goto out;
	}
	if (stopped) {
		/* Given way: nothing placed, the pages stay buffered; the
		 * caller makes it again once the waiter has had the lock. */
		release_holds(v, h, a, live);
		settle_pages(d, f, &s, 0);
		ret = gave_way(d, waited_at);
		goto out;
	}
	ret = f->epoch != epoch ? -EAGAIN : ino_get(v, id, &r);
	if (ret == -ESTALE || ret == -ENOENT || (ret == 0 && !S_ISREG(r.ino.mode))) {
		release_holds(v, h, a, live);
		settle_pages(d, f, &s, 0);
		dalloc_file_free(d, f);
		ret = 0;
		goto out;
	}
	/* (an error reading it, or data to come out of its entry first:
	 * the locked placement's) */
	if (ret < 0 || (r.ino.flags & OD_INF_INLINE))
		ret = -EAGAIN;
	before = r.ino.size;
	r.ino.flags &= ~OD_INF_FRESH;
	if (ret == 0)
		ret = place_held(v, &r, &s, h, live, &blocks);
	release_holds(v, h, a, live); /* (those chain_alloc did not take) */
	if (ret == -EAGAIN) {
		/* Placed under the lock instead (the caller), from the file
		 * as it is now. */
		d->unlocked_redone++;
		settle_pages(d, f, &s, 0);
		ret = -EAGAIN;
		goto out;
	}
	/* Written meanwhile: those pages stay buffered, and so does the size
	 * set past the data until they are placed. The pages settle once
	 * the inode is written: failed, they stay buffered (review F3). */
	ret = dalloc_place_finish(v, &r, f, ret, before, ret == 0 && !pages_left(f, &s), &cut);
	settle_pages(d, f, &s, ret == 0);
	if (ret < 0) {
		dalloc_failed(v, f, ret, cut < 0);
		goto out;
	}
	d->placed++;
	d->unlocked++;
	d->unlocked_blocks += blocks;
	if (f->fails)
		d->retried++;
	if (f->n == 0) {
		dalloc_file_free(d, f);
	} else {
		f->fails = 0;
		f->err = 0;
		f->since = dalloc_now_ms();
	}
out:
	dalloc_placed_wake(d);
	free(h);
	free(a);
	free_pages(v, &s, ret != -EAGAIN, t0); /* (-EAGAIN: the caller goes on with f) */
	free(idx);
	return ret;
}
