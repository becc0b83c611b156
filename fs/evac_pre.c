/* Evacuation's copy outside the volume lock (issue 23): the data a step of
 * a draining chunk K is about to move, copied into blocks of its target
 * chunks before the step takes the lock to move it. Owns the step's plan
 * (runs of K's blocks, the target block runs reserved for them, the target
 * chosen for each object; or the units of a foster map the step moves off
 * K), the copy itself (run without the lock, a window at a time, stopped
 * when a reopen, offline or retirement waits for the chunks it pins), the
 * watch on K's planned blocks (a data write into one or a free of one
 * while the copy is pending spoils that run) and units (one taken into the
 * cache meanwhile is not used), and the claim by which a move takes a
 * copied run instead of copying under the lock.
 *
 * The target runs are reserved as preallocation reserves (fs/chunk.c's
 * pa_map): busy for every other allocation, free on disk, so a commit or a
 * crash meanwhile leaves nothing to trim. Under the lock, in order:
 * evac_pre_begin, evac_pre_add or evac_pre_units (fs/evac_plan.c); then
 * evac_pre_copy, which releases the lock for the copy; then locked again
 * evac_pre_fill puts the units read in the cache, the step's moves call
 * evac_pre_claim (from evac_copy_extents) and the step ends with
 * evac_pre_end, which releases what no move took. One plan a volume at a
 * time. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/evac.h"

#define PRE_COPY_BLOCKS 64u /* data copied 256 KiB at a time */

/* A run of K's blocks [src, src + len) planned into [dst, dst + len) of
 * chunk t, for the object key (its head's stable number). */
struct pre_run {
	uint64_t key;
	struct chunk *t;
	uint32_t src, dst, len;
	struct chunk_store *tst;      /* t's store when planned (a reopen spoils the run) */
	int hit;                      /* written or freed in K since planned */
};

/* A one-block metadata unit of K that the step moves (a foster map's:
 * K's own, or one K hosts) read outside the lock. */
struct pre_unit {
	uint32_t block;
	int ok;                       /* read whole (unit_read_unlocked) */
	int hit;                      /* taken into the cache since planned */
};

struct evac_pre {
	struct chunk *k;
	struct chunk_store *kst;
	struct pre_run *r;
	uint32_t n, cap;
	struct pre_unit *u;
	uint32_t nu;
	uint8_t *ubuf;                /* the units read, a block each */
	int map_step;                 /* the step moves a map (no data: no hook) */
	int single;                   /* K keeps one copy of each unit */
	uint64_t dropped;             /* claims refused for a hit run */
	uint64_t claimed;             /* blocks the moves took copied */
};

int evac_pre_begin(struct fs_volume *v, struct chunk *k)
{
	struct evac_pre *p;

	if (v->evac_pre)
		return -EBUSY; /* another step's plan is pending */
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->k = k;
	p->kst = k->store;
	p->single = !!(k->hdr.flags & OD_CHF_SINGLE_COPY);
	v->evac_pre = p;
	return 0;
}

/* Does a chunk the copy pins have a waiter (a reopen, an offline or a
 * retirement in chunk_wait_unpinned) that the copy keeps out? */
static int pre_waited(const struct evac_pre *p)
{
	if (__atomic_load_n(&p->k->pin_waiters, __ATOMIC_SEQ_CST))
		return 1;
	for (uint32_t i = 0; i < p->n; i++)
		if (__atomic_load_n(&p->r[i].t->pin_waiters, __ATOMIC_SEQ_CST))
			return 1;
	return 0;
}

int evac_pre_units(struct fs_volume *v, uint32_t start, uint32_t n)
{
	struct evac_pre *p = v->evac_pre;
	struct pre_unit *u = n ? realloc(p->u, (size_t)(p->nu + n) * sizeof(*u)) : NULL;

	p->map_step = 1;
	if (!n)
		return 0;
	if (!u)
		return -ENOMEM;
	p->u = u;
	for (uint32_t b = start; b < start + n; b++)
		if (!buf_peek(p->k, b)) /* (a cached one is read from there) */
			p->u[p->nu++] = (struct pre_unit){ .block = b };
	return 0;
}

void evac_pre_unit_hit(struct fs_volume *v, struct chunk *c, uint32_t block)
{
	struct evac_pre *p = v->evac_pre;

	if (p->k != c)
		return;
	for (uint32_t i = 0; i < p->nu; i++)
		if (p->u[i].block == block)
			p->u[i].hit = 1;
}

/* K's planned units read, a window at a time, a waiter looked for before
 * each. */
static int read_units(struct evac_pre *p, uint8_t *other)
{
	p->ubuf = p->nu ? malloc((size_t)p->nu * OD_BLOCK_SIZE) : NULL;
	if (p->nu && !p->ubuf)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nu; i++) {
		if (i % PRE_COPY_BLOCKS == 0 && pre_waited(p))
			return -EINTR;
		p->u[i].ok = unit_read_unlocked(p->k, p->kst, p->u[i].block, p->single,
						p->ubuf + (size_t)i * OD_BLOCK_SIZE, other) > 0;
	}
	return 0;
}

void evac_pre_fill(struct fs_volume *v)
{
	struct evac_pre *p = v->evac_pre;
	uint32_t n = 0;

	if (!p || !p->ubuf || p->k->offline || p->k->store != p->kst)
		return;
	for (uint32_t i = 0; i < p->nu; i++)
		if (p->u[i].ok && !p->u[i].hit)
			n += (uint32_t)buf_prefill(p->k, p->u[i].block,
						   p->ubuf + (size_t)i * OD_BLOCK_SIZE);
	p->k->evac_units_unlocked += n;
}

static int push_run(struct evac_pre *p, const struct pre_run *run)
{
	if (p->n == p->cap) {
		uint32_t ncap = p->cap ? p->cap * 2 : 16;
		struct pre_run *q = realloc(p->r, ncap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		p->r = q;
		p->cap = ncap;
	}
	p->r[p->n++] = *run;
	return 0;
}

int evac_pre_add(struct fs_volume *v, uint64_t key, struct chunk *t, const struct extlist *el)
{
	struct evac_pre *p = v->evac_pre;
	uint32_t first = p->n, goal = 0;
	int ret = t->offline ? -EIO : chunk_load(t);

	if (ret == 0 && __atomic_load_n(&t->pin_waiters, __ATOMIC_SEQ_CST))
		ret = -EBUSY; /* a reopen or offline waits for t's pins: none taken */

	for (uint32_t i = 0; ret == 0 && i < el->n; i++) {
		uint32_t src = el->e[i].pblk, left = el->e[i].len;
		while (left && ret == 0) {
			struct pre_run run = { .key = key, .t = t, .src = src, .tst = t->store };
			ret = chunk_pa_reserve_data(t, goal, left, &run.dst, &run.len);
			if (ret < 0)
				break;
			ret = push_run(p, &run);
			if (ret < 0) {
				chunk_pa_release(t, run.dst, run.len);
				break;
			}
			goal = run.dst + run.len;
			src += run.len;
			left -= run.len;
		}
	}
	if (ret < 0) {
		/* Not planned after all: its data is copied under the lock. */
		for (uint32_t i = first; i < p->n; i++)
			chunk_pa_release(t, p->r[i].dst, p->r[i].len);
		p->n = first;
	}
	return ret;
}

int evac_pre_copy(struct fs_volume *v)
{
	struct evac_pre *p = v->evac_pre;
	void (*hook)(void *arg) = v->evac_copied_hook;
	void (*whook)(void *arg) = v->evac_window_hook;
	void *hook_arg = v->evac_copied_arg, *warg = v->evac_window_arg;
	uint8_t *buf = NULL;
	int ret = 0;

	/* Pinned under the lock: the stores stay while the copy runs. */
	chunk_pin(p->k);
	for (uint32_t i = 0; i < p->n; i++)
		chunk_pin(p->r[i].t);
	vol_unlock(v);
	if (p->n || p->nu) {
		buf = malloc((size_t)PRE_COPY_BLOCKS * OD_BLOCK_SIZE);
		if (!buf)
			ret = -ENOMEM;
	}
	if (ret == 0)
		ret = read_units(p, buf);
	/* A window at a time, looking before each for a waiter: it waits for
	 * one window's copy at most, not for the step's. */
	for (uint32_t i = 0; ret == 0 && i < p->n; i++) {
		const struct pre_run *run = &p->r[i];
		for (uint32_t off = 0; ret == 0 && off < run->len; off += PRE_COPY_BLOCKS) {
			size_t n = (size_t)(run->len - off < PRE_COPY_BLOCKS ? run->len - off
									      : PRE_COPY_BLOCKS) *
				   OD_BLOCK_SIZE;
			if (pre_waited(p)) {
				ret = -EINTR;
				break;
			}
			ret = store_pread(p->kst, buf, n, (uint64_t)(run->src + off) * OD_BLOCK_SIZE);
			if (ret == 0)
				ret = store_pwrite(run->tst, buf, n,
						   (uint64_t)(run->dst + off) * OD_BLOCK_SIZE);
			if (ret == 0 && whook)
				whook(warg);
		}
	}
	free(buf);
	if (ret == 0 && hook && !p->map_step)
		hook(hook_arg); /* (the chunks still pinned) */
	if (ret == 0 && pre_waited(p))
		ret = -EINTR; /* (come while the copy ended: the step gives way too) */
	for (uint32_t i = 0; i < p->n; i++)
		chunk_unpin(p->r[i].t);
	chunk_unpin(p->k);
	return ret;
}

void evac_pre_hit(struct fs_volume *v, uint32_t chunk, uint32_t start, uint32_t len)
{
	struct evac_pre *p = v->evac_pre;

	if (!p || p->k->index != chunk)
		return;
	for (uint32_t i = 0; i < p->n; i++)
		if (start < p->r[i].src + p->r[i].len && p->r[i].src < start + len)
			p->r[i].hit = 1;
}

struct chunk *evac_pre_target(struct fs_volume *v, uint64_t key)
{
	struct evac_pre *p = v->evac_pre;

	for (uint32_t i = 0; p && i < p->n; i++)
		if (p->r[i].key == key)
			return p->r[i].t;
	return NULL;
}

int evac_pre_claim(struct fs_volume *v, struct chunk *k, uint32_t src, uint32_t len,
		   struct chunk *t, uint32_t *dst, uint32_t *got)
{
	struct evac_pre *p = v->evac_pre;

	if (!p || p->k != k)
		return 0;
	for (uint32_t i = 0; i < p->n; i++) {
		struct pre_run *run = &p->r[i];
		uint32_t n, d, taken;
		if (src < run->src || src >= run->src + run->len)
			continue;
		if (run->t != t)
			return 0; /* planned for another chunk: copied under the lock */
		if (run->hit || k->store != p->kst || t->offline || t->store != run->tst) {
			p->dropped++;
			return -ECANCELED;
		}
		n = run->src + run->len - src < len ? run->src + run->len - src : len;
		d = run->dst + (src - run->src);
		taken = chunk_pa_take(t, d, n);
		if (taken < n) {
			/* The reservation went (t's state dropped meanwhile). */
			if (taken)
				free_blocks(t, d, taken);
			p->dropped++;
			return -ECANCELED;
		}
		v->data_written = 1; /* durable before the metadata pointing at it */
		p->claimed += n;
		*dst = d;
		*got = n;
		return 1;
	}
	return 0;
}

void evac_pre_end(struct fs_volume *v, uint64_t *dropped, uint64_t *claimed)
{
	struct evac_pre *p = v->evac_pre;

	if (!p)
		return;
	for (uint32_t i = 0; i < p->n; i++) {
		struct chunk *t = p->r[i].t;
		if (!t->offline && t->store == p->r[i].tst)
			chunk_pa_release(t, p->r[i].dst, p->r[i].len);
	}
	*dropped += p->dropped;
	*claimed += p->claimed;
	free(p->r);
	free(p->u);
	free(p->ubuf);
	free(p);
	v->evac_pre = NULL;
}
