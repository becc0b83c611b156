/* Preallocation: a run of free blocks reserved for a file's coming data,
 * in memory only. A reservation maps a window of file blocks [lstart,
 * lstart + len) onto chunk blocks [pstart, pstart + len) of one chunk (as
 * ext4's inode preallocation maps pa_lstart onto pa_pstart): data placed
 * at a file block of the window takes its block there (fs/chain.c asks
 * prealloc_take), so the file lands in one extent however its writes
 * arrive. The blocks are busy for every other allocation but free on disk
 * (fs/chunk.c's pa_map): no format change, and a crash loses the
 * reservation with nothing to trim. This file owns the reservations,
 * their releases (trim, timeout, close, remove, pressure) and their
 * counts; it never writes a block. Everything runs under the volume lock. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fs/chain.h"
#include "fs/name_table.h"
#include "fs/predict.h"
#include "fs/vol_pred.h"

struct pa_res {
	uint64_t stable;
	uint64_t lstart;              /* the window's first file block */
	uint32_t chunk, pstart, len;  /* ... and where it lies */
	uint32_t left;                /* blocks of the window still reserved */
	unsigned flags;               /* FS_PREALLOC_* */
	int64_t used_ms;              /* CLOCK_MONOTONIC: made, or data last placed in it */
	uint64_t seq;                 /* the order made: give-back takes the oldest first */
};

/* Why a reservation ends (the counts of fs_prealloc_info). */
enum pa_why { PA_COMMIT, PA_TIMEOUT, PA_CLOSE, PA_RELEASE, PA_PRESSURE };

struct prealloc {
	struct pa_res *r;
	uint32_t n, cap;
	uint64_t seq;
	unsigned timeout_ms;
	struct fs_prealloc_info count; /* the cumulative fields */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int prealloc_init(struct fs_volume *v)
{
	v->pa = calloc(1, sizeof(*v->pa));
	if (!v->pa)
		return -ENOMEM;
	v->pa->timeout_ms = FS_PREALLOC_TIMEOUT_DEFAULT_MS;
	return 0;
}

void prealloc_destroy(struct fs_volume *v)
{
	if (!v->pa)
		return;
	free(v->pa->r);
	free(v->pa);
	v->pa = NULL;
}

static struct pa_res *find(struct prealloc *pa, uint64_t stable)
{
	for (uint32_t i = 0; i < pa->n; i++)
		if (pa->r[i].stable == stable)
			return &pa->r[i];
	return NULL;
}

/* Release what r still holds, count it under why, and forget r. */
static uint32_t end_res(struct fs_volume *v, struct pa_res *r, enum pa_why why)
{
	struct prealloc *pa = v->pa;
	struct chunk *c = vol_chunk(v, r->chunk);
	uint32_t n = c ? chunk_pa_release(c, r->pstart, r->len) : 0;
	struct fs_prealloc_info *k = &pa->count;

	switch (why) {
	case PA_COMMIT:
		k->trim_commit++;
		k->trim_commit_blocks += n;
		break;
	case PA_TIMEOUT:
		k->trim_timeout++;
		k->trim_timeout_blocks += n;
		break;
	case PA_CLOSE:
		k->trim_close++;
		k->trim_close_blocks += n;
		break;
	case PA_RELEASE:
		k->released++;
		k->released_blocks += n;
		break;
	case PA_PRESSURE:
		k->given_back++;
		k->given_back_blocks += n;
		break;
	}
	*r = pa->r[--pa->n];
	return n;
}

int prealloc_held(struct fs_volume *v, uint64_t stable)
{
	return v->pa && find(v->pa, stable) != NULL;
}

int prealloc_take(struct fs_volume *v, uint64_t stable, struct chunk *c, uint64_t lblk,
		  uint64_t want, uint32_t *start, uint32_t *got)
{
	struct pa_res *r = v->pa ? find(v->pa, stable) : NULL;
	uint64_t end;
	uint32_t n;

	if (!r || r->chunk != c->index || lblk < r->lstart || lblk >= r->lstart + r->len)
		return -ENOENT;
	if (chunk_draining(c)) {
		/* Being evacuated: it takes no new data, and gives the run back. */
		end_res(v, r, PA_CLOSE);
		return -ENOENT;
	}
	end = r->lstart + r->len;
	if (want > end - lblk)
		want = end - lblk;
	n = chunk_pa_take(c, r->pstart + (uint32_t)(lblk - r->lstart), (uint32_t)want);
	if (n == 0)
		return -ENOENT; /* (that block was taken already: rewritten after a cut) */
	*start = r->pstart + (uint32_t)(lblk - r->lstart);
	*got = n;
	r->left -= n;
	r->used_ms = now_ms();
	v->pa->count.taken_blocks += n;
	if (r->left == 0)
		*r = v->pa->r[--v->pa->n]; /* used up: nothing to release */
	return 0;
}

void prealloc_drop(struct fs_volume *v, uint64_t stable)
{
	struct pa_res *r = v->pa ? find(v->pa, stable) : NULL;

	if (r)
		end_res(v, r, PA_RELEASE);
}

void prealloc_committed(struct fs_volume *v, uint64_t stable)
{
	struct pa_res *r = v->pa ? find(v->pa, stable) : NULL;

	if (r && (r->flags & FS_PREALLOC_TRIM))
		end_res(v, r, PA_COMMIT);
}

uint32_t prealloc_give_back(struct fs_volume *v, uint64_t except)
{
	struct prealloc *pa = v->pa;
	struct pa_res *best = NULL;

	if (!pa)
		return 0;
	/* Speculative ones (FS_PREALLOC_TRIM: a guess from a name or the
	 * predictor) before those a caller asked for with a known size; in
	 * each, the oldest first. */
	for (uint32_t i = 0; i < pa->n; i++) {
		struct pa_res *r = &pa->r[i];
		int trim = !!(r->flags & FS_PREALLOC_TRIM);
		if (r->stable == except)
			continue;
		if (!best || trim > !!(best->flags & FS_PREALLOC_TRIM) ||
		    (trim == !!(best->flags & FS_PREALLOC_TRIM) && r->seq < best->seq))
			best = r;
	}
	/* Last, the file's own (its data beyond the window needs room). */
	if (!best)
		best = find(pa, except);
	if (!best)
		return 0;
	{
		uint32_t n = end_res(v, best, PA_PRESSURE);
		return n ? n : 1; /* (one gone: a caller tries again either way) */
	}
}

uint32_t prealloc_give_back_all(struct fs_volume *v)
{
	uint32_t n = 0;

	while (v->pa && v->pa->n) {
		end_res(v, &v->pa->r[0], PA_PRESSURE);
		n++;
	}
	return n;
}

void prealloc_chunk_gone(struct chunk *c)
{
	/* (a chunk an open that failed never reached has no volume yet) */
	struct prealloc *pa = c->vol ? c->vol->pa : NULL;

	if (!pa)
		return;
	for (uint32_t i = 0; i < pa->n;) {
		struct pa_res *r = &pa->r[i];
		if (r->chunk != c->index) {
			i++;
			continue;
		}
		/* The chunk's map goes with its allocation state: count
		 * what it held, without touching the map. */
		pa->count.trim_close++;
		pa->count.trim_close_blocks += r->left;
		*r = pa->r[--pa->n];
	}
}

void prealloc_close(struct fs_volume *v)
{
	while (v->pa && v->pa->n)
		end_res(v, &v->pa->r[0], PA_CLOSE);
}

/* Where the file's next block would go: the chunk of its last segment,
 * the block after its last extent there (0: the chunk's own hint), and the
 * first file block past its data. */
static int next_place(struct fs_volume *v, const struct iref *head, uint32_t *chunk,
		      uint32_t *goal, uint64_t *lblk)
{
	struct fchain fc;
	const struct seg *s;
	int ret = chain_load(v, head, &fc);

	if (ret < 0)
		return ret;
	s = &fc.s[fc.n - 1];
	*chunk = s->r.loc.chunk;
	*goal = 0;
	*lblk = s->r.ino.cont_start;
	if (s->el.n) {
		const struct od_extent *e = &s->el.e[s->el.n - 1];
		*goal = e->pblk + e->len;
		*lblk = e->lblk + e->len;
	}
	chain_release(&fc);
	return 0;
}

static int reserve(struct fs_volume *v, struct iref *r, uint64_t size, unsigned flags,
		   uint64_t *reserved)
{
	struct prealloc *pa = v->pa;
	struct pa_res *old, *res;
	uint64_t lstart, want, end = (size + OD_BLOCK_SIZE - 1) >> OD_BLOCK_SHIFT;
	uint32_t chunk, goal, start, got;
	struct chunk *c;
	int ret;

	*reserved = 0;
	if (flags & ~FS_PREALLOC_TRIM)
		return -EINVAL;
	if (!S_ISREG(r->ino.mode))
		return S_ISDIR(r->ino.mode) ? -EISDIR : -EINVAL;
	old = find(pa, r->ino.stable);
	if (old)
		end_res(v, old, PA_RELEASE); /* replaced */
	/* Inline data moves out to the file's first block: the window
	 * starts there. */
	if (r->ino.flags & OD_INF_INLINE) {
		chunk = r->loc.chunk;
		goal = 0;
		lstart = 0;
	} else {
		ret = next_place(v, r, &chunk, &goal, &lstart);
		if (ret < 0)
			return ret;
		{
			uint64_t placed = (r->ino.size + OD_BLOCK_SIZE - 1) >> OD_BLOCK_SHIFT;
			if (placed > lstart)
				lstart = placed;
		}
	}
	if (end <= lstart)
		return 0; /* nothing of that size is left to come */
	want = end - lstart;
	if (want > 1u << 30)
		want = 1u << 30;
	c = vol_chunk(v, chunk);
	if (!c || c->offline)
		return -EIO;
	if (chunk_draining(c)) {
		pa->count.refused++;
		return -ENOSPC;
	}
	if (pa->n == pa->cap) {
		uint32_t cap = pa->cap ? pa->cap * 2 : 16;
		struct pa_res *p = realloc(pa->r, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		pa->r = p;
		pa->cap = cap;
	}
	ret = chunk_pa_find(c, goal, (uint32_t)want, &start, &got);
	if (ret < 0) {
		if (ret == -ENOSPC)
			pa->count.refused++;
		return ret;
	}
	res = &pa->r[pa->n++];
	memset(res, 0, sizeof(*res));
	res->stable = r->ino.stable;
	res->lstart = lstart;
	res->chunk = chunk;
	res->pstart = start;
	res->len = res->left = got;
	res->flags = flags;
	res->used_ms = now_ms();
	res->seq = ++pa->seq;
	pa->count.made++;
	pa->count.reserved_blocks += got;
	*reserved = got;
	return 0;
}

int fs_prealloc(struct fs_volume *v, struct fs_ino id, uint64_t size, unsigned flags,
		uint64_t *reserved)
{
	struct iref r;
	uint64_t got = 0;
	int ret;

	if (v->rdonly)
		return -EROFS;
	vol_lock(v);
	ret = ino_get(v, id, &r);
	if (ret == 0)
		ret = reserve(v, &r, size, flags, &got);
	vol_unlock(v);
	if (reserved)
		*reserved = got;
	return ret;
}

int fs_prealloc_release(struct fs_volume *v, struct fs_ino id)
{
	struct pa_res *r;
	int ret = -ENOENT;

	vol_lock(v);
	r = find(v->pa, id.num);
	if (r) {
		end_res(v, r, PA_RELEASE);
		ret = 0;
	}
	vol_unlock(v);
	return ret;
}

int fs_prealloc_held(struct fs_volume *v, struct fs_ino id, uint64_t *blocks)
{
	struct pa_res *r;

	vol_lock(v);
	r = find(v->pa, id.num);
	*blocks = r ? r->left : 0;
	vol_unlock(v);
	return r ? 0 : -ENOENT;
}

void fs_prealloc_committed(struct fs_volume *v, struct fs_ino id)
{
	vol_lock(v);
	/* Only when nothing of the file waits in memory: its buffered pages
	 * (delayed allocation) are still to take their blocks. */
	if (!dalloc_has(v, id.num))
		prealloc_committed(v, id.num);
	vol_unlock(v);
}

uint32_t fs_prealloc_expire(struct fs_volume *v)
{
	int64_t now = now_ms();
	uint32_t n = 0;

	vol_lock(v);
	for (uint32_t i = 0; i < v->pa->n;) {
		struct pa_res *r = &v->pa->r[i];
		if ((r->flags & FS_PREALLOC_TRIM) && now - r->used_ms >= v->pa->timeout_ms &&
		    !dalloc_has(v, r->stable)) {
			end_res(v, r, PA_TIMEOUT);
			n++;
		} else {
			i++;
		}
	}
	vol_unlock(v);
	return n;
}

void fs_set_prealloc_timeout(struct fs_volume *v, unsigned ms)
{
	vol_lock(v);
	v->pa->timeout_ms = ms;
	vol_unlock(v);
}

/* The size a new file is expected to reach, from its name and the
 * learned predictor: 0 when neither says it grows. */
static uint64_t hinted_size(struct fs_volume *v, const char *name, size_t len,
			    const struct od_inode *ino)
{
	struct name_hint h;
	struct pred_expect e;
	int learned = v->pred && pred_lookup(&v->pred->p, name, len, ino->uid, ino->mode & 07777,
					     &e) == 0;
	int appends = name_table_lookup(name, len, &h) == 0 &&
		      (h.size == NAME_SIZE_GROWS || h.write == NAME_WRITE_APPEND);

	if (learned && (e.large_permille > 500 || appends))
		/* class b holds sizes below 2^b */
		return e.median_class ? 1ull << (e.median_class < 40 ? e.median_class : 40) : 0;
	return appends ? FS_PREALLOC_APPEND_BYTES : 0;
}

int fs_prealloc_hinted(struct fs_volume *v, struct fs_ino id, const char *name,
		       uint64_t max_bytes, uint64_t *reserved)
{
	struct iref r;
	uint64_t size, got = 0;
	int ret;

	*reserved = 0;
	if (v->rdonly || max_bytes == 0)
		return 0;
	vol_lock(v);
	ret = ino_get(v, id, &r);
	if (ret == 0 && S_ISREG(r.ino.mode)) {
		size = hinted_size(v, name, strlen(name), &r.ino);
		if (size > max_bytes)
			size = max_bytes;
		if (size && !find(v->pa, r.ino.stable)) {
			ret = reserve(v, &r, size, FS_PREALLOC_TRIM, &got);
			if (ret == -ENOSPC)
				ret = 0; /* a hint: no room, no reservation */
		}
	}
	vol_unlock(v);
	*reserved = got;
	return ret;
}

int fs_prealloc_info(struct fs_volume *v, struct fs_prealloc_info *out)
{
	vol_lock(v);
	*out = v->pa->count;
	out->active = v->pa->n;
	out->held_blocks = 0;
	for (uint32_t i = 0; i < v->pa->n; i++)
		out->held_blocks += v->pa->r[i].left;
	out->timeout_ms = v->pa->timeout_ms;
	vol_unlock(v);
	return 0;
}
