/* Delayed allocation: the data of UNSTABLE writes held in memory, per
 * file, as whole 4 KiB pages, with the file's size as the clients see it,
 * until it must reach the disk (fs_commit, a stable write, fs_sync, a
 * rename or link, the byte cap, the age limit). Only then are blocks placed, the
 * file's buffered runs each in one allocation (fs/file.c's
 * file_place_run), so a file written whole before its commit gets
 * extents sized to its data.
 *
 * What it keeps: the inode on disk (and in the cache) holds the placed
 * size and extents only; a buffered file's larger size lives here, and
 * vol_attr() and fs_read() show it. A crash loses buffered data (NFS's
 * rule for UNSTABLE data not committed) and never leaves a size that
 * points past placed data. Placement writes data blocks before the
 * transaction that records them (txn.c flushes data first). Keyed by
 * stable number: links and moves of the inode do not matter; the
 * number's end (map_free) drops the file's buffer. Everything runs under
 * the volume lock, but fs_sync's, the timer's and the cap's placement
 * take and leave it per file (dalloc_step), so that a light call waits for
 * one file's placement at most.
 *
 * A placement that fails keeps the buffer: the file is cut back to its
 * placed size on disk, and its pages wait to be tried again, by the next
 * sync or the timer once a backoff has passed (DA_RETRY_FIRST_MS, doubled
 * per failure up to DA_RETRY_MAX_MS), or at once by a call that needs
 * that file (fs_commit, fs_place, a stable write, a rename), which
 * returns the error when it fails again. fs_sync does not fail for it.
 * The buffer is given up (fs_drop_count moves: the write verifier
 * changes, so NFS clients send their UNSTABLE writes again) only after
 * repeated failures over a bounded time (give_up_fails failures and
 * give_up_ms since the first), when the file's chunk is offline, when
 * failing buffers hold the byte cap, or at close; each is counted. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs/dalloc.h"

int64_t dalloc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t dalloc_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A placement under one hold of the volume lock, begun at t0 (now_us),
 * ended: counted for chunkfsctl status (what a light client may wait). */
void dalloc_note_hold(struct dalloc *d, int64_t t0)
{
	uint64_t us = (uint64_t)(dalloc_now_us() - t0);

	if (us > d->hold_max_us)
		d->hold_max_us = us;
	if (us > 10000)
		d->holds_over_10ms++;
}

static uint32_t hash_of(uint64_t stable)
{
	return (uint32_t)((stable * 0x9E3779B97F4A7C15ull) >> 56) % DA_HASH;
}

int dalloc_init(struct fs_volume *v)
{
	struct dalloc *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->head.prev = d->head.next = &d->head;
	d->vol = v;
	d->limit = DALLOC_DEFAULT_LIMIT;
	d->give_up_ms = DA_GIVE_UP_MS;
	d->give_up_fails = DA_GIVE_UP_FAILS;
	pthread_mutex_init(&d->wait_lock, NULL);
	pthread_cond_init(&d->wait_cond, NULL);
	v->da = d;
	return 0;
}

static struct da_file *find(const struct dalloc *d, uint64_t stable)
{
	struct da_file *f;

	if (!d)
		return NULL;
	for (f = d->hash[hash_of(stable)]; f; f = f->hnext)
		if (f->stable == stable)
			return f;
	return NULL;
}

void dalloc_file_free(struct dalloc *d, struct da_file *f)
{
	struct da_file **pp = &d->hash[hash_of(f->stable)];

	while (*pp != f)
		pp = &(*pp)->hnext;
	*pp = f->hnext;
	f->prev->next = f->next;
	f->next->prev = f->prev;
	/* (pages a placement in flight shares are its to free, and so is
	 * the file) */
	for (uint32_t i = 0; i < f->n; i++)
		if (!f->pg[i].busy)
			free(f->pg[i].data);
	d->bytes -= (uint64_t)f->n * DA_PAGE;
	d->files--;
	dalloc_unhold(d, f, f->held); /* (the blocks stay held until its placement ends) */
	free(f->pg);
	f->pg = NULL;
	f->n = f->cap = 0;
	dalloc_units_note(d->vol, f, NULL);
	if (f->placing) {
		f->dead = 1;
		return;
	}
	free(f);
}

void dalloc_destroy(struct fs_volume *v)
{
	struct dalloc *d = v->da;

	if (!d)
		return;
	while (d->head.next != &d->head)
		dalloc_file_free(d, d->head.next);
	pthread_mutex_destroy(&d->wait_lock);
	pthread_cond_destroy(&d->wait_cond);
	free(d);
	v->da = NULL;
}

void dalloc_drop(struct fs_volume *v, uint64_t stable)
{
	struct da_file *f = find(v->da, stable);

	if (f)
		dalloc_file_free(v->da, f);
}

int dalloc_has(struct fs_volume *v, uint64_t stable)
{
	return find(v->da, stable) != NULL;
}

void dalloc_set_limit(struct fs_volume *v, uint64_t bytes)
{
	v->da->limit = bytes;
}

int dalloc_extend(struct fs_volume *v, uint64_t stable, uint64_t size)
{
	struct da_file *f = find(v->da, stable);

	if (!f)
		return -ENOENT;
	if (size > f->size)
		f->size = size; /* the pages past the old size hold zeros there */
	return 0;
}

/* The index of the first page at or after idx. */
static uint32_t page_pos(const struct da_file *f, uint64_t idx)
{
	uint32_t lo = 0, hi = f->n;

	if (f->n && f->pg[f->n - 1].idx < idx)
		return f->n; /* appending: the common case */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (f->pg[mid].idx < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint8_t *page_get(const struct da_file *f, uint64_t idx)
{
	uint32_t p = page_pos(f, idx);

	return p < f->n && f->pg[p].idx == idx ? f->pg[p].data : NULL;
}

void vol_attr(struct fs_volume *v, const struct od_inode *ino, struct fs_attr *a)
{
	struct da_file *f;
	uint64_t placed_blocks;

	ino_to_attr(ino, a);
	f = S_ISREG(ino->mode) ? find(v->da, ino->stable) : NULL;
	if (!f)
		return;
	a->size = f->size;
	/* What placement will hold: a fresh file written whole in one page
	 * stays inline (place_file); else inline data goes to a block, and
	 * pages past the placed size take blocks they do not hold yet
	 * (those below may overwrite placed ones). */
	if ((ino->flags & OD_INF_FRESH) && ino->size == 0 && f->n == 1 && f->pg[0].idx == 0 &&
	    f->size <= DA_PAGE) {
		a->used = f->size;
		return;
	}
	if (ino->flags & OD_INF_INLINE)
		a->used = (ino->inline_len + DA_PAGE - 1) / DA_PAGE * DA_PAGE;
	placed_blocks = (ino->size + DA_PAGE - 1) / DA_PAGE;
	for (uint32_t i = page_pos(f, placed_blocks); i < f->n; i++)
		a->used += DA_PAGE;
}

uint64_t dalloc_size(struct fs_volume *v, const struct iref *r)
{
	struct da_file *f = find(v->da, r->ino.stable);

	return f ? f->size : r->ino.size;
}

int dalloc_read(struct fs_volume *v, const struct iref *r, uint64_t off, size_t len, void *buf,
		int told)
{
	struct da_file *f = find(v->da, r->ino.stable);
	uint8_t *out = buf;

	if (!f)
		return file_read(v, r, off, len, buf, told);
	while (len) {
		uint64_t idx = off / DA_PAGE;
		size_t in = (size_t)(off % DA_PAGE), n;
		uint8_t *pg = page_get(f, idx);

		if (pg) {
			n = DA_PAGE - in < len ? DA_PAGE - in : len;
			memcpy(out, pg + in, n);
		} else {
			/* Up to the next buffered page, from the disk below
			 * the placed size and zeros past it. */
			uint32_t p = page_pos(f, idx);
			uint64_t stop = p < f->n ? f->pg[p].idx * DA_PAGE : UINT64_MAX;
			n = stop - off < len ? (size_t)(stop - off) : len;
			if (off < r->ino.size) {
				size_t d = r->ino.size - off < n ? (size_t)(r->ino.size - off) : n;
				int ret = file_read(v, r, off, d, out, told);
				if (ret < 0)
					return ret;
				memset(out + d, 0, n - d);
			} else {
				memset(out, 0, n);
			}
		}
		out += n;
		off += n;
		len -= n;
	}
	return 0;
}

int dalloc_tight(struct fs_volume *v, uint64_t blocks)
{
	return v->da->bytes && !dalloc_room_for(v, NULL, NULL, blocks);
}

static int page_insert(struct dalloc *d, struct da_file *f, uint32_t p, uint64_t idx,
		       uint8_t **out)
{
	uint8_t *data = malloc(DA_PAGE);

	if (!data)
		return -ENOMEM;
	if (f->n == f->cap) {
		uint32_t cap = f->cap ? f->cap * 2 : 16;
		struct da_page *pg = realloc(f->pg, cap * sizeof(*pg));
		if (!pg) {
			free(data);
			return -ENOMEM;
		}
		f->pg = pg;
		f->cap = cap;
	}
	memmove(&f->pg[p + 1], &f->pg[p], (f->n - p) * sizeof(*f->pg));
	f->pg[p].idx = idx;
	f->pg[p].data = data;
	f->pg[p].busy = 0;
	f->n++;
	d->bytes += DA_PAGE;
	*out = data;
	return 0;
}

int dalloc_write(struct fs_volume *v, const struct iref *r, uint64_t off, size_t len,
		 const void *buf)
{
	struct dalloc *d = v->da;
	struct da_file *f = find(d, r->ino.stable);
	const uint8_t *in = buf;
	uint64_t first = off / DA_PAGE, last = (off + len - 1) / DA_PAGE, fresh = 0;
	uint64_t placed_pages = r->ino.size / DA_PAGE;
	int rewrite = 0, ret = 0;

	if (!d->limit || len == 0)
		return -EAGAIN;
	/* Only data past the placed end of the file waits: below it a page
	 * overwrites a block or fills a hole that its segment's own chunk
	 * must hold (invariant 1), which placement later could find full,
	 * and an inline file's block must come from its head's chunk. */
	if ((r->ino.flags & OD_INF_INLINE) && r->ino.size) {
		/* Its data comes out to a block of its head's chunk at the
		 * placement: only while that chunk keeps room. */
		const struct chunk *c = vol_chunk(v, r->loc.chunk);
		if (!c || c->offline || chunk_draining(c) ||
		    chunk_avail_blocks(c) <= c->hdr.nblocks / 8 + DA_SLACK_BLOCKS)
			return -EAGAIN;
	}
	/* Except a rewrite of the whole file from its start, in order, of a
	 * file in pieces (fs/realloc.c): held, so that placed whole it can
	 * go to one new run instead of over the old pieces. */
	if (first < placed_pages)
		rewrite = f ? f->rewrite && first <= (uint64_t)f->lead + DA_REWRITE_AHEAD
			    : first == 0 && realloc_candidate(v, r);
	for (uint64_t i = first; i <= last; i++) {
		if (f && page_get(f, i))
			continue;
		if (i < placed_pages && !rewrite)
			return -EAGAIN;
		fresh++;
	}
	/* (a write that cannot be buffered is written at once, and meets
	 * ENOSPC there: never later, at its placement, fs/dalloc_room.c) */
	if (!dalloc_room_for(v, f, r, fresh))
		return -EAGAIN;
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f)
			return -ENOMEM;
		f->stable = r->ino.stable;
		f->gen = r->ino.generation;
		f->size = r->ino.size;
		f->since = dalloc_now_ms();
		f->seq = d->seq++;
		f->rewrite = rewrite;
		f->hnext = d->hash[hash_of(f->stable)];
		d->hash[hash_of(f->stable)] = f;
		f->prev = d->head.prev;
		f->next = &d->head;
		d->head.prev->next = f;
		d->head.prev = f;
		d->files++;
	}
	while (len) {
		uint64_t idx = off / DA_PAGE;
		size_t at = (size_t)(off % DA_PAGE);
		size_t n = DA_PAGE - at < len ? DA_PAGE - at : len;
		uint32_t p = page_pos(f, idx);
		uint8_t *pg = p < f->n && f->pg[p].idx == idx ? f->pg[p].data : NULL;

		if (pg && f->pg[p].busy) {
			/* A placement in flight writes this page's bytes as
			 * they were: the write goes to a copy, which stays
			 * buffered after it (fs/dalloc_place.c). */
			uint8_t *copy = malloc(DA_PAGE);
			if (!copy) {
				ret = -ENOMEM;
				break;
			}
			memcpy(copy, pg, DA_PAGE);
			f->pg[p].data = pg = copy;
			f->pg[p].busy = 0;
			dalloc_unhold(d, f, 1); /* (its copy takes a block of its own) */
		}
		if (!pg) {
			uint64_t base = idx * DA_PAGE;
			ret = page_insert(d, f, p, idx, &pg);
			if (ret < 0)
				break; /* the pages before hold their bytes */
			memset(pg, 0, DA_PAGE);
			/* A page written in part starts as the file's block:
			 * placed bytes below the placed size, zeros past it. */
			if (n < DA_PAGE && base < r->ino.size) {
				size_t have = r->ino.size - base < DA_PAGE
						      ? (size_t)(r->ino.size - base)
						      : DA_PAGE;
				ret = file_read(v, r, base, have, pg, 0);
				if (ret < 0) {
					/* not buffered after all */
					free(pg);
					memmove(&f->pg[p], &f->pg[p + 1],
						(f->n - p - 1) * sizeof(*f->pg));
					f->n--;
					d->bytes -= DA_PAGE;
					break;
				}
			}
		}
		memcpy(pg + at, in, n);
		in += n;
		off += n;
		len -= n;
		if (off > f->size)
			f->size = off;
	}
	while (f->rewrite && page_get(f, f->lead))
		f->lead++;
	dalloc_units_note(v, f, r);
	return ret;
}

/* Is the file's chunk offline (its number's home, where its map entry
 * is, or the chunk of its inode)? Then it cannot be placed until the
 * chunk is back, and what was not committed of it went with the chunk. */
static int file_offline(struct fs_volume *v, uint64_t stable)
{
	const struct chunk *home = vol_chunk(v, OD_STABLE_CHUNK(stable)), *c;
	struct od_map_entry e;

	if (!home || home->offline)
		return 1;
	if (map_lookup(v, stable, &e) < 0)
		return 0; /* (not known to be: the failure is counted as one) */
	c = vol_chunk(v, e.loc.chunk);
	return !c || c->offline;
}

/* The buffer given up, counted by why: fs_drop_count moves (chunkfsd's
 * write verifier changes, so clients send their UNSTABLE writes again). */
static void give_up(struct fs_volume *v, struct da_file *f, enum da_gave_up why)
{
	v->da->gave_up[why]++;
	__atomic_add_fetch(&v->drops, 1, __ATOMIC_RELEASE);
	dalloc_file_free(v->da, f);
}

/* A placement of f failed with err: kept to be tried again after a
 * backoff, or given up (last: no later try will come; the chunk offline;
 * failing for long enough). */
void dalloc_failed(struct fs_volume *v, struct da_file *f, int err, int last)
{
	struct dalloc *d = v->da;
	int64_t now = dalloc_now_ms(), wait = DA_RETRY_FIRST_MS;

	d->failures++;
	if (!f->fails++)
		f->first_fail = now;
	f->err = err;
	for (uint32_t i = 1; i < f->fails && wait < DA_RETRY_MAX_MS; i++)
		wait *= 2;
	f->retry_at = now + (wait < DA_RETRY_MAX_MS ? wait : DA_RETRY_MAX_MS);
	if (last)
		give_up(v, f, DA_GAVE_UP_CLOSE);
	else if (file_offline(v, f->stable))
		give_up(v, f, DA_GAVE_UP_OFFLINE);
	else if (f->fails >= d->give_up_fails && now - f->first_fail >= d->give_up_ms)
		give_up(v, f, DA_GAVE_UP_TIME);
}

int dalloc_place_finish(struct fs_volume *v, struct iref *r, const struct da_file *f, int ret,
			uint64_t before, int grow, int *cut)
{
	int wret;

	if (ret == 0 && grow && r->ino.size < f->size)
		ret = file_truncate(v, r, f->size); /* a size set past the data */
	if (ret == 0) {
		ret = ino_write(v, r);
		if (ret == 0)
			return 0;
	}
	/* Failed part way, or the inode's write failed (its blocks then
	 * taken in the bitmap, and nothing pointing at them): the file is
	 * cut back to its size before, so that no block whose data was not
	 * written is left in it, and the pages wait to be placed again from
	 * the same place. */
	if (r->ino.size > before)
		*cut = file_truncate(v, r, before);
	wret = ino_write(v, r);
	if (*cut == 0)
		*cut = wret;
	return ret;
}

/* Place f: its runs of consecutive pages, each in one allocation, then
 * the size; f goes once every page is placed. Failed: the file is cut
 * back to its placed size on disk and f is kept (failed()), unless the
 * cut fails too (then its blocks may hold pages that the buffer would
 * place again: given up). */
static int place_file(struct fs_volume *v, struct da_file *f, int last, int unlock, int64_t *t0)
{
	struct fs_ino id = { f->stable, f->gen };
	struct iref r;
	uint64_t before;
	int ret, cut = 0;

	/* A placement in flight for it meets this one when it takes the
	 * lock again, and leaves the file to it. */
	if (f->placing)
		f->epoch++;
again:
	ret = ino_get(v, id, &r);
	if (ret == -ESTALE || ret == -ENOENT || (ret == 0 && !S_ISREG(r.ino.mode))) {
		dalloc_file_free(v->da, f); /* (the file is gone: map_free dropped it first) */
		return 0;
	}
	if (ret < 0)
		goto out;
	before = r.ino.size;
	if ((r.ino.flags & OD_INF_FRESH) && r.ino.size == 0 && f->n == 1 && f->pg[0].idx == 0 &&
	    f->size <= DA_PAGE) {
		/* written whole at creation: file_write keeps it inline when
		 * it fits in the entry */
		ret = file_write(v, &r, 0, (size_t)f->size, f->pg[0].data);
		if (ret == -ENOSPC && ino_write(v, &r) == 0 && vol_enospc_retry(v))
			ret = file_write(v, &r, 0, (size_t)f->size, f->pg[0].data);
	} else {
		uint8_t **data = malloc(f->n * sizeof(*data));
		if (!data) {
			ret = -ENOMEM;
			goto out;
		}
		uint32_t i0 = 0;
		for (uint32_t i = 0; i < f->n; i++)
			data[i] = f->pg[i].data;
		/* A rewrite that holds every placed page: reallocated (new runs
		 * for the placed blocks) when it applies; the pages past them
		 * follow as a run of their own. */
		if (f->rewrite && f->lead >= (r.ino.size + DA_PAGE - 1) / DA_PAGE) {
			int done = 0;
			ret = realloc_rewrite(v, &r, data,
					      (uint32_t)((r.ino.size + DA_PAGE - 1) / DA_PAGE), &done);
			if (done)
				i0 = (uint32_t)((r.ino.size + DA_PAGE - 1) / DA_PAGE);
		}
		/* An append in one run to a small file: moved whole with it
		 * into one run when it would start a new extent. */
		if (ret == 0 && i0 == 0 && r.ino.size &&
		    f->pg[f->n - 1].idx - f->pg[0].idx + 1 == f->n) {
			int done = 0;
			uint64_t end = (f->pg[f->n - 1].idx + 1) * DA_PAGE;
			ret = realloc_append(v, &r, data, f->pg[0].idx, f->n,
					     end < f->size ? end : f->size, &done);
			if (done)
				i0 = f->n;
		}
		/* Large enough to be worth two holds of the lock: the data
		 * written outside it (fs/dalloc_place.c). */
		if (unlock && ret == 0 && i0 == 0 && !f->rewrite && !f->placing &&
		    f->n >= DA_UNLOCKED_MIN && !(r.ino.flags & OD_INF_INLINE) && !vol_nowait(v)) {
			ret = dalloc_place_unlocked(v, f, data, t0);
			free(data);
			if (ret != -EAGAIN)
				return ret;
			unlock = 0;
			goto again;
		}
		for (uint32_t i = i0; ret == 0 && i < f->n;) {
			uint32_t j = i + 1;
			uint64_t end;
			while (j < f->n && f->pg[j].idx == f->pg[j - 1].idx + 1)
				j++;
			end = (f->pg[j - 1].idx + 1) * DA_PAGE;
			if (end > f->size)
				end = f->size;
			ret = file_place_run(v, &r, data + i, f->pg[i].idx, j - i, end);
			if (ret == -ENOSPC && ino_write(v, &r) == 0 && vol_enospc_retry(v))
				ret = file_place_run(v, &r, data + i, f->pg[i].idx, j - i, end);
			i = j;
		}
		free(data);
	}
	ret = dalloc_place_finish(v, &r, f, ret, before, 1, &cut);
out:
	if (ret < 0) {
		dalloc_failed(v, f, ret, last || cut < 0);
		return ret;
	}
	v->da->placed++;
	if (f->fails)
		v->da->retried++;
	dalloc_file_free(v->da, f);
	return 0;
}

int dalloc_place_file(struct fs_volume *v, struct da_file *f, int last, int unlock, int64_t *t0)
{
	int was = dalloc_placing, ret;

	dalloc_placing = 1; /* (its extent units take the pairs promised) */
	ret = place_file(v, f, last, unlock, t0);
	dalloc_placing = was;
	return ret;
}

int dalloc_place(struct fs_volume *v, uint64_t stable)
{
	struct da_file *f = find(v->da, stable);
	int64_t t0 = dalloc_now_us();
	int ret;

	if (!f)
		return 0;
	ret = dalloc_place_file(v, f, 0, 0, &t0);
	dalloc_note_hold(v->da, t0);
	return ret;
}

void dalloc_placed_wake(struct dalloc *d)
{
	pthread_mutex_lock(&d->wait_lock);
	__atomic_add_fetch(&d->done_gen, 1, __ATOMIC_SEQ_CST);
	pthread_cond_broadcast(&d->wait_cond);
	pthread_mutex_unlock(&d->wait_lock);
}

/* Wait, with the volume lock left, until a placement in flight ends
 * (any: the caller looks again). Called locked. */
static void wait_placed(struct fs_volume *v)
{
	struct dalloc *d = v->da;
	uint64_t gen = __atomic_load_n(&d->done_gen, __ATOMIC_SEQ_CST);

	vol_unlock(v);
	pthread_mutex_lock(&d->wait_lock);
	while (__atomic_load_n(&d->done_gen, __ATOMIC_SEQ_CST) == gen)
		pthread_cond_wait(&d->wait_cond, &d->wait_lock);
	pthread_mutex_unlock(&d->wait_lock);
	vol_lock(v);
}

/* A placement gave way to a pin waiter (a reopen, an offline, a
 * retirement) of d->gave_way_chunk: the lock left until the waiter has
 * had it (its count back to 0), DA_GIVE_WAY_MS at most. Called locked. */
static void give_way(struct fs_volume *v)
{
	const struct chunk *c = vol_chunk(v, v->da->gave_way_chunk);

	vol_unlock(v);
	for (int ms = 0; c && ms < DA_GIVE_WAY_MS &&
			 __atomic_load_n(&c->pin_waiters, __ATOMIC_SEQ_CST);
	     ms++)
		usleep(1000);
	vol_lock(v);
}

int dalloc_place_wait(struct fs_volume *v, uint64_t stable)
{
	struct da_file *f;
	int64_t t0;
	int ret, tries = 0;

	do {
		/* A placement of it in flight places what it took; what
		 * came after (or all, if that one failed) is placed here. */
		while ((f = find(v->da, stable)) && f->placing)
			wait_placed(v);
		if (!f)
			return 0;
		t0 = dalloc_now_us();
		/* (after giving way DA_GIVE_WAY_TRIES times: under the lock) */
		ret = dalloc_place_file(v, f, 0, tries < DA_GIVE_WAY_TRIES, &t0);
		dalloc_note_hold(v->da, t0);
		if (ret == -EINTR)
			give_way(v);
	} while (ret == -EINTR && ++tries);
	return ret;
}

/* Is f waiting out the backoff of a failed placement? */
static int backing_off(const struct da_file *f, int64_t now)
{
	return f->fails && now < f->retry_at;
}

int dalloc_place_all(struct fs_volume *v, enum da_mode mode)
{
	struct dalloc *d = v->da;
	int64_t now = dalloc_now_ms(), t0 = dalloc_now_us();
	int ret = 0;

	if (!d)
		return 0;
	/* Oldest first; after a file that fails, the rest are tried. */
	for (struct da_file *f = d->head.next, *next; f != &d->head; f = next) {
		int r;
		next = f->next;
		if (mode == DA_SYNC && backing_off(f, now))
			continue;
		r = dalloc_place_file(v, f, mode == DA_LAST, 0, &t0);
		if (r < 0 && ret == 0)
			ret = r;
	}
	if (d->files || ret)
		dalloc_note_hold(d, t0);
	return ret;
}

uint64_t dalloc_seq(struct fs_volume *v)
{
	return v->da ? v->da->seq : 0;
}

int dalloc_step(struct fs_volume *v, uint64_t upto, uint64_t pass, int64_t max_age_ms,
		uint32_t *placed)
{
	struct dalloc *d = v->da;
	int64_t now = dalloc_now_ms(), t0;
	struct da_file *f;

	if (!d)
		return 0;
	/* The oldest file of the pass not tried in it yet (a file placed
	 * leaves the list; one that failed is marked as tried). */
	for (f = d->head.next; f != &d->head; f = f->next) {
		if (f->seq >= upto || f->pass == pass || backing_off(f, now))
			continue;
		if (f->placing)
			continue; /* (placed by another call: dalloc_place_sliced waits for it) */
		if (max_age_ms >= 0 && !f->fails && now - f->since < max_age_ms)
			continue;
		break;
	}
	if (f == &d->head)
		return 0;
	f->pass = pass;
	t0 = dalloc_now_us();
	/* (its callers take and leave the lock per file: a large one's data
	 * is written with it left; one that gave way to a pin waiter,
	 * -EINTR, stays buffered for a later pass) */
	if (dalloc_place_file(v, f, 0, 1, &t0) == 0)
		(*placed)++;
	dalloc_note_hold(d, t0);
	return 1;
}

uint64_t dalloc_new_pass(struct fs_volume *v)
{
	return v->da ? ++v->da->passes : 0;
}

void dalloc_offline(struct fs_volume *v)
{
	struct dalloc *d = v->da;

	for (struct da_file *f = d->head.next, *next; f != &d->head; f = next) {
		next = f->next;
		if (file_offline(v, f->stable))
			give_up(v, f, DA_GAVE_UP_OFFLINE);
	}
}

int dalloc_over_limit(struct fs_volume *v)
{
	return v->da->bytes > v->da->limit;
}

void dalloc_relieve(struct fs_volume *v)
{
	struct dalloc *d = v->da;
	uint32_t placed = 0;
	uint64_t upto, pass;

	/* Oldest first, down to half the cap (the files written longest ago
	 * are the likeliest to be whole), one file per hold of the lock. */
	vol_lock(v);
	upto = dalloc_seq(v);
	pass = dalloc_new_pass(v);
	for (;;) {
		if (d->bytes <= d->limit / 2 || !dalloc_step(v, upto, pass, -1, &placed))
			break;
		vol_unlock(v);
		vol_lock(v);
	}
	/* Still over the cap: the buffers that fail to be placed hold it,
	 * and memory is not theirs to keep. The oldest go first. */
	for (struct da_file *f = d->head.next, *next; f != &d->head && d->bytes > d->limit;
	     f = next) {
		next = f->next;
		if (f->fails)
			give_up(v, f, DA_GAVE_UP_MEMORY);
	}
	vol_unlock(v);
}

void dalloc_set_give_up(struct fs_volume *v, uint32_t fails, int64_t ms)
{
	v->da->give_up_fails = fails;
	v->da->give_up_ms = ms;
}

void dalloc_counters(struct fs_volume *v, struct fs_counters *out)
{
	out->dalloc_bytes = v->da->bytes;
	out->dalloc_files = v->da->files;
	out->dalloc_placed = v->da->placed;
	out->dalloc_failures = v->da->failures;
	out->dalloc_retried = v->da->retried;
	out->dalloc_failing = 0;
	for (const struct da_file *f = v->da->head.next; f != &v->da->head; f = f->next)
		out->dalloc_failing += f->fails != 0;
	out->dalloc_gave_up_time = v->da->gave_up[DA_GAVE_UP_TIME];
	out->dalloc_gave_up_offline = v->da->gave_up[DA_GAVE_UP_OFFLINE];
	out->dalloc_gave_up_memory = v->da->gave_up[DA_GAVE_UP_MEMORY];
	out->dalloc_gave_up_close = v->da->gave_up[DA_GAVE_UP_CLOSE];
	out->dalloc_hold_max_us = v->da->hold_max_us;
	out->dalloc_holds_over_10ms = v->da->holds_over_10ms;
	out->dalloc_unlocked = v->da->unlocked;
	out->dalloc_unlocked_blocks = v->da->unlocked_blocks;
	out->dalloc_unlocked_redone = v->da->unlocked_redone;
	out->dalloc_unlocked_stops = v->da->unlocked_stops;
}

/* --- the public calls -------------------------------------------------- */

void fs_set_dalloc_limit(struct fs_volume *v, uint64_t bytes)
{
	vol_lock(v);
	v->da->limit = bytes;
	vol_unlock(v);
}

int fs_place(struct fs_volume *v, struct fs_ino id)
{
	struct iref r;
	int ret;

	if (v->rdonly)
		return 0;
	vol_lock(v);
	ret = ino_get(v, id, &r);
	if (ret == 0)
		ret = dalloc_place_wait(v, id.num);
	vol_unlock(v);
	return ret;
}

void fs_dalloc_set_written_hook(struct fs_volume *v, void (*fn)(void *arg), void *arg)
{
	vol_lock(v);
	v->da->written_hook = fn;
	v->da->written_arg = arg;
	vol_unlock(v);
}

void fs_dalloc_set_window_hook(struct fs_volume *v, void (*fn)(void *arg), void *arg)
{
	vol_lock(v);
	v->da->window_hook = fn;
	v->da->window_arg = arg;
	vol_unlock(v);
}

void fs_set_dalloc_give_up(struct fs_volume *v, uint32_t fails, unsigned ms)
{
	vol_lock(v);
	dalloc_set_give_up(v, fails, ms);
	vol_unlock(v);
}

int dalloc_place_sliced(struct fs_volume *v, int64_t max_age_ms, int wait, uint32_t *placed)
{
	uint64_t upto, pass;
	int more;

	*placed = 0;
	vol_lock(v);
	upto = dalloc_seq(v);
	pass = dalloc_new_pass(v);
	vol_unlock(v);
	do {
		vol_lock(v);
		more = dalloc_step(v, upto, pass, max_age_ms, placed);
		vol_unlock(v);
	} while (more);
	/* Files of the pass whose placement was in flight in another call
	 * (skipped by the steps): placed once it ends. */
	vol_lock(v);
	while (wait) {
		struct da_file *f;
		for (f = v->da->head.next; f != &v->da->head; f = f->next)
			if (f->placing && f->seq < upto)
				break;
		if (f == &v->da->head)
			break;
		wait_placed(v);
	}
	vol_unlock(v);
	return 0;
}

void dalloc_settle_unlocked(struct fs_volume *v)
{
	uint32_t placed;

	if (v->rdonly)
		return;
	(void)dalloc_place_sliced(v, -1, 0, &placed);
	(void)vol_sync_unlocked(v);
}

int fs_place_old(struct fs_volume *v, unsigned max_age_ms)
{
	uint32_t placed = 0;
	int ret = 0;

	if (v->rdonly)
		return 0;
	/* Those old enough, and those whose failed placement's backoff has
	 * passed: one file per hold of the lock (dalloc_step). */
	dalloc_place_sliced(v, max_age_ms, 1, &placed);
	if (placed)
		ret = vol_sync_unlocked(v);
	return ret < 0 ? ret : (int)placed;
}
