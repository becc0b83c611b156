/* fsck.chunkfs, the volume level: opening an image, telling a lone chunk
 * (pulled with dd or nbdcopy, or an NBD export) from a whole volume,
 * locating a volume's chunks, and running their checks, one after another
 * or in parallel (-j), each chunk with its own store and context. Output
 * and progress callbacks are serialized here, so that lines never mix. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/format/vol_probe.h"
#include "fs/fsck/fsck_vol.h"

void fsck_vol_say(const struct fsck_opts *o, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (o->out)
		o->out(o->ctx, line);
}

/* --- what an image holds ----------------------------------------------------- */

/* 1 and *h when the block at off of st is a chunk header copy, 0 when it
 * is not (or lies beyond st), a negative errno when it cannot be read. */
static int header_block(struct chunk_store *st, uint64_t off, struct od_chunk_header *h)
{
	uint8_t blk[OD_BLOCK_SIZE];
	char why[80];
	int ret;

	if (off + OD_BLOCK_SIZE > st->size)
		return 0;
	ret = store_pread(st, blk, sizeof(blk), off);
	if (ret < 0)
		return ret;
	return od_header_parse(blk, h, NULL, why, sizeof(why)) == 0;
}

int fsck_image_kind(struct chunk_store *st, struct od_chunk_header *h)
{
	uint64_t bytes;
	int ret = header_block(st, 0, h);

	/* Else copy 1, at half the chunk, and saying so. */
	for (uint64_t sz = OD_MIN_CHUNK_SIZE; ret == 0 && sz <= OD_MAX_CHUNK_SIZE && sz <= st->size;
	     sz <<= 1) {
		ret = header_block(st, sz / 2, h);
		if (ret == 1 && (uint64_t)h->nblocks * OD_BLOCK_SIZE != sz)
			ret = 0;
	}
	if (ret <= 0)
		return ret < 0 ? ret : FSCK_IMG_UNKNOWN;
	bytes = (uint64_t)h->nblocks * OD_BLOCK_SIZE;
	if (h->chunk_index != 0)
		return FSCK_IMG_CHUNK;
	if (h->chunk_count > 1 && st->size < 2 * bytes)
		return FSCK_IMG_CHUNK;
	return FSCK_IMG_VOLUME;
}

int fsck_image_store(struct chunk_store *st, int chunk, const struct fsck_opts *o,
		     struct fsck_result *res)
{
	struct fsck_result local;
	struct od_chunk_header h;
	uint64_t saved = st->size, bytes;
	uint32_t expect = chunk >= 0 ? (uint32_t)chunk : UINT32_MAX;
	int kind, ret;

	if (!res)
		res = &local;
	memset(res, 0, sizeof(*res));
	kind = fsck_image_kind(st, &h);
	if (kind < 0) {
		fsck_vol_say(o, "cannot read the image: %s", strerror(-kind));
		res->exit_code = FSCK_EXIT_OPERATIONAL;
		return kind;
	}
	if (kind == FSCK_IMG_VOLUME && h.chunk_count > 1) {
		fsck_vol_say(o,
			     "the image holds a whole volume (%u chunks): only one chunk can be "
			     "checked this way; export or copy one chunk, or check the volume "
			     "image as a file",
			     h.chunk_count);
		res->exit_code = FSCK_EXIT_OPERATIONAL;
		return -EMEDIUMTYPE;
	}
	if (kind != FSCK_IMG_UNKNOWN) {
		if (chunk >= 0 && h.chunk_index != (uint32_t)chunk) {
			fsck_vol_say(o, "the image holds chunk %u alone, not chunk %d",
				     h.chunk_index, chunk);
			res->exit_code = FSCK_EXIT_USAGE;
			return -EINVAL;
		}
		expect = h.chunk_index;
		bytes = (uint64_t)h.nblocks * OD_BLOCK_SIZE;
		if (bytes < st->size)
			st->size = bytes; /* the rest of the image is not the chunk's */
		fsck_vol_say(o, "chunk %u: checked alone (an image of this one chunk, %llu MiB)",
			     h.chunk_index, (unsigned long long)(bytes >> 20));
	}
	if (o->progress)
		o->progress(o->progress_ctx, 0, 1);
	ret = fsck_check_chunk(st, expect, o, NULL, res);
	if (ret < 0) {
		fsck_vol_say(o, "chunk %u: %s", expect == UINT32_MAX ? 0 : expect, strerror(-ret));
		res->exit_code |= FSCK_EXIT_OPERATIONAL;
	} else if (o->mode != FSCK_CHECK_ONLY) {
		/* The repairs were flushed as they were written; once more, so
		 * that a store that acknowledges writes early has them all. */
		ret = store_flush(st);
		if (ret < 0) {
			fsck_vol_say(o, "the final flush failed: %s", strerror(-ret));
			res->exit_code |= FSCK_EXIT_OPERATIONAL;
		}
	}
	if (o->progress)
		o->progress(o->progress_ctx, 1, 1);
	st->size = saved;
	return ret;
}

/* --- a volume image ------------------------------------------------------------ */

int fsck_vol_open(const char *path, const struct fsck_opts *o, struct fsck_vol *v,
		  uint64_t *total)
{
	int ret;

	v->fd = open(path, (o->mode == FSCK_CHECK_ONLY ? O_RDONLY : O_RDWR) | O_CLOEXEC);
#ifdef O_DIRECT
	/* For the bulk of the reads, past the page cache (none where the file
	 * system has no direct I/O: tmpfs). */
	v->dfd = v->fd < 0 ? -1 : open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
#else
	v->dfd = -1;
#endif
	if (v->fd < 0) {
		ret = -errno;
		fsck_vol_say(o, "%s: %s", path, strerror(-ret));
		return ret;
	}
	ret = vol_image_size(v->fd, total, NULL);
	if (ret < 0)
		fsck_vol_say(o, "%s: %s", path, strerror(-ret));
#ifdef POSIX_FADV_RANDOM
	/* The check reads what it asks for and no more: the kernel's read-ahead
	 * after each run of metadata would read on into file data and, in a
	 * sparse image, fill the page cache with the zeros of holes (a whole
	 * check of the 200k-file volume: 378 MB read, 1062 MB cached). */
	posix_fadvise(v->fd, 0, 0, POSIX_FADV_RANDOM);
#endif
	return ret;
}

void fsck_vol_close(struct fsck_vol *v)
{
	free(v->base);
	free(v->size);
	free(v->hdr);
	free(v->hdr_ok);
	if (v->fd >= 0)
		close(v->fd);
	if (v->dfd >= 0)
		close(v->dfd);
	v->dfd = -1;
	v->base = v->size = NULL;
	v->hdr = NULL;
	v->hdr_ok = NULL;
	v->fd = -1;
	od_fosters_free(&v->fost0);
}

static int fsck_vol_alloc(struct fsck_vol *v, uint32_t n)
{
	free(v->base);
	free(v->size);
	free(v->hdr);
	free(v->hdr_ok);
	v->base = calloc(n, sizeof(*v->base));
	v->size = calloc(n, sizeof(*v->size));
	v->hdr = calloc(n, sizeof(*v->hdr));
	v->hdr_ok = calloc(n, 1);
	if (!v->base || !v->size || !v->hdr || !v->hdr_ok)
		return -ENOMEM;
	return 0;
}

/* The header copies of chunks 1 .. n-1 where chunks of chunk 0's size put
 * them, asked for all at once: the reads that follow, one chunk at a time,
 * then find them in the page cache instead of waiting for each in turn
 * (128 reads of 4 KiB across the image for 64 chunks). Only a hint. */
static void advise_headers(const struct fsck_vol *v, uint32_t n, uint64_t sz, uint64_t total)
{
#ifdef POSIX_FADV_WILLNEED
	for (uint32_t i = 1; i < n && sz; i++) {
		uint64_t base = (uint64_t)i * sz;
		if (base + sz > total)
			break;
		posix_fadvise(v->fd, (off_t)base, OD_BLOCK_SIZE, POSIX_FADV_WILLNEED);
		posix_fadvise(v->fd, (off_t)(base + sz / 2), OD_BLOCK_SIZE, POSIX_FADV_WILLNEED);
	}
#else
	(void)v;
	(void)n;
	(void)sz;
	(void)total;
#endif
}

/* v->fost0 from chunk 0's header, when it has one: 0, 1 when there is
 * none or its table is not whole (the records before the fault: chunk
 * 0's check reports it), -ENOMEM. */
static int fost0_read(struct fsck_vol *v, uint64_t total)
{
	struct od_header_src hs = od_header_src_fd(v->fd, total);
	char fwhy[160];
	int ret;

	od_fosters_free(&v->fost0);
	if (!v->hdr_ok[0])
		return 1;
	ret = od_fosters_read(&hs, 0, &v->hdr[0], -1, &v->fost0, fwhy, sizeof(fwhy));
	return ret == -ENOMEM ? ret : ret < 0;
}

/* Chunk 0's records not whole: those it lacks found again in the other
 * headers, as the library does at open (od_fosters_recover), so that the
 * checks read the foster maps and skip the retired chunks they name. */
static int fost0_recover(struct fsck_vol *v, uint32_t nb0)
{
	struct od_header_src hs = od_header_src_fd(v->fd, v->size[0]);
	struct od_fosters_chunk0 c0 = { .src = v->hdr_ok[0] ? &hs : NULL, .h0 = &v->hdr[0] };
	uint32_t *lost = calloc(v->nchunks + 1, sizeof(*lost)), nlost;
	int ret = lost ? od_fosters_recover(&v->fost0, v->hdr, v->hdr_ok, v->nchunks, nb0, &c0,
					    lost, &nlost)
		       : -ENOMEM;

	free(lost);
	return ret;
}

/* Where each chunk is: chunk 0's header gives the count, each chunk's own
 * header its size (chunk 0's size when its header is unreadable, as the
 * library does). Only first blocks (and mirror candidates) are read. */
int fsck_vol_locate(struct fsck_vol *v, uint64_t total, const struct fsck_opts *o)
{
	struct od_chunk_header ref, h0;
	uint64_t base = 0;
	uint32_t n, nb0;
	uint8_t ok0;
	int partial;

	v->nchunks = 1;
	v->total = total;
	if (fsck_vol_alloc(v, 1) < 0)
		return -ENOMEM;
	fsck_vol_read_header(v, 0, 0, total, 0);
	if (v->hdr_ok[0]) {
		ref = v->hdr[0];
	} else {
		/* No header of chunk 0 in either copy: chunk 1's, found where
		 * a chunk of each possible size would put it, gives the count
		 * and the size (mkfs makes every chunk the same size). */
		struct fsck_vol probe = *v;
		struct od_chunk_header h[2];
		uint8_t ok[2] = { 0, 0 };
		probe.hdr = h;
		probe.hdr_ok = ok;
		for (uint64_t sz = OD_MIN_CHUNK_SIZE; sz <= OD_MAX_CHUNK_SIZE && sz < total && !ok[1];
		     sz <<= 1)
			if (fsck_vol_read_header(&probe, 1, sz, total - sz, 0) == 0 &&
			    (uint64_t)h[1].nblocks * OD_BLOCK_SIZE != sz)
				ok[1] = 0;
		if (!ok[1]) {
			/* Only chunk 0 can be named: its check reports the header. */
			v->size[0] = total;
			return 0;
		}
		ref = h[1];
		fsck_vol_say(o, "chunk 0: no valid header; the volume's layout is taken from chunk 1's");
	}
	n = ref.chunk_count;
	nb0 = ref.nblocks;
	memcpy(v->uuid, ref.volume_uuid, 16);
	v->have_uuid = 1;
	if (n == 0 || n > OD_MAX_CHUNKS) {
		fsck_vol_say(o, "chunk 0: header says the volume has %u chunks", n);
		n = 1;
	}
	advise_headers(v, n, (uint64_t)nb0 * OD_BLOCK_SIZE, total);
	h0 = v->hdr[0];
	ok0 = v->hdr_ok[0];
	partial = fost0_read(v, total);
	if (partial < 0)
		return partial;
	if (fsck_vol_alloc(v, n) < 0)
		return -ENOMEM;
	v->hdr[0] = h0;
	v->hdr_ok[0] = ok0;
	v->nchunks = n;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t sz;
		v->base[i] = base;
		if (i > 0 && od_fosters_retired(&v->fost0, i)) {
			/* Retired: never read again; chunk 0 keeps its size. */
			sz = (uint64_t)od_fosters_retired(&v->fost0, i) * OD_BLOCK_SIZE;
			v->size[i] = base >= total ? 0 : (total - base < sz ? total - base : sz);
			base += sz;
			continue;
		}
		if (i > 0)
			fsck_vol_read_header(v, i, base, base < total ? total - base : 0, nb0);
		sz = (uint64_t)(v->hdr_ok[i] ? v->hdr[i].nblocks : nb0) * OD_BLOCK_SIZE;
		/* A chunk cut short by the image keeps what there is: its check
		 * reports the size. */
		v->size[i] = base >= total ? 0 : (total - base < sz ? total - base : sz);
		base += sz;
	}
	return partial ? fost0_recover(v, nb0) : 0;
}

int fsck_vol_locate_one(struct fsck_vol *v, uint64_t total, const struct fsck_opts *o,
			uint32_t k)
{
	struct od_chunk_header h0;
	uint64_t sz;
	uint32_t n;

	v->nchunks = 1;
	if (fsck_vol_alloc(v, 1) < 0)
		return -ENOMEM;
	fsck_vol_read_header(v, 0, 0, total, 0);
	if (!v->hdr_ok[0])
		return fsck_vol_locate(v, total, o);
	h0 = v->hdr[0];
	n = h0.chunk_count;
	sz = (uint64_t)h0.nblocks * OD_BLOCK_SIZE;
	if (n == 0 || n > OD_MAX_CHUNKS || k >= n || (uint64_t)(k + 1) * sz > total ||
	    h0.nfosters)
		return fsck_vol_locate(v, total, o); /* (a retired chunk's size is chunk 0's to say) */
	if (fsck_vol_alloc(v, n) < 0)
		return -ENOMEM;
	v->nchunks = n;
	v->hdr[0] = h0;
	v->hdr_ok[0] = 1;
	memcpy(v->uuid, h0.volume_uuid, 16);
	v->have_uuid = 1;
	for (uint32_t i = 0; i < n; i++) {
		v->base[i] = (uint64_t)i * sz;
		v->size[i] = v->base[i] >= total ? 0
			     : total - v->base[i] < sz ? total - v->base[i]
						       : sz;
	}
	if (k > 0) {
		fsck_vol_read_header(v, k, v->base[k], total - v->base[k], h0.nblocks);
		if (!v->hdr_ok[k] || v->hdr[k].nblocks != h0.nblocks ||
		    memcmp(v->hdr[k].volume_uuid, v->uuid, 16) != 0)
			return fsck_vol_locate(v, total, o);
	}
	v->partial = 1;
	v->one = k;
	v->total = total;
	return 0;
}

int fsck_vol_complete(struct fsck_vol *v)
{
	static const struct fsck_opts quiet = { .mode = FSCK_CHECK_ONLY };
	uint64_t base, size;
	int ret;

	if (!v->partial)
		return 0;
	base = v->base[v->one];
	size = v->size[v->one];
	v->partial = 0;
	ret = fsck_vol_locate(v, v->total, &quiet);
	if (ret < 0)
		return ret;
	if (v->one >= v->nchunks || v->base[v->one] != base || v->size[v->one] != size)
		return -EUCLEAN;
	return 0;
}

/* The chunks in stores of their own (o->placed) take the place of their
 * regions: each store must hold that chunk of this volume (its header's
 * index and UUID), and its header and size are read from it. Chunk 0
 * cannot be placed. 0, -EINVAL (a chunk the volume does not have, or
 * chunk 0) or -EUCLEAN (a store holding something else), said to o->out. */
static int adopt_placed(struct fsck_vol *v, const struct fsck_opts *o)
{
	if (!o->nplaced)
		return 0;
	if (v->partial) {
		int ret = fsck_vol_complete(v);
		if (ret < 0)
			return ret;
	}
	v->placed = o->placed;
	v->nplaced = o->nplaced;
	for (uint32_t i = 0; i < o->nplaced; i++) {
		struct chunk_store *st = o->placed[i];
		if (!st)
			continue;
		if (i == 0 || i >= v->nchunks) {
			fsck_vol_say(o, "--placed %u: %s", i,
				     i ? "the volume has no such chunk" : "chunk 0 cannot be placed");
			return -EINVAL;
		}
		if (fsck_vol_read_header(v, i, 0, st->size, (uint32_t)(st->size / OD_BLOCK_SIZE)) < 0 ||
		    memcmp(v->hdr[i].volume_uuid, v->uuid, 16) != 0) {
			fsck_vol_say(o, "--placed %u: the store holds no chunk %u of this volume", i,
				     i);
			return -EUCLEAN;
		}
		v->size[i] = (uint64_t)v->hdr[i].nblocks * OD_BLOCK_SIZE;
		if (v->size[i] > st->size)
			v->size[i] = st->size;
	}
	return 0;
}

/* --- running the checks (-j) ----------------------------------------------------- */

struct vol_run {
	pthread_mutex_t lock;          /* everything below, and the callbacks */
	const struct fsck_opts *user;  /* the caller's options */
	struct fsck_opts o;            /* the same, with the serialized callbacks */
	struct fsck_vol *v;
	int chunk;                     /* the one to check, -1: all */
	uint32_t next;                 /* the next chunk to take */
	uint32_t done, total;
	struct fsck_result *res;
};

static void run_out(void *ctx, const char *line)
{
	struct vol_run *r = ctx;

	pthread_mutex_lock(&r->lock);
	r->user->out(r->user->ctx, line);
	pthread_mutex_unlock(&r->lock);
}

/* The next chunk to check, or UINT32_MAX; under r->lock. */
static uint32_t vol_run_next(struct vol_run *r)
{
	if (r->chunk >= 0) {
		if (r->next > (uint32_t)r->chunk)
			return UINT32_MAX;
		r->next = (uint32_t)r->chunk + 1;
		return (uint32_t)r->chunk;
	}
	return r->next < r->v->nchunks ? r->next++ : UINT32_MAX;
}

static void *run_worker(void *arg)
{
	struct vol_run *r = arg;

	for (;;) {
		struct fsck_result one;
		struct chunk_store *st;
		uint32_t i;
		int ret;

		memset(&one, 0, sizeof(one));
		pthread_mutex_lock(&r->lock);
		i = vol_run_next(r);
		if (i != UINT32_MAX && r->user->cancel && *r->user->cancel) {
			r->res->exit_code |= FSCK_EXIT_CANCELLED;
			i = UINT32_MAX;
		}
		pthread_mutex_unlock(&r->lock);
		if (i == UINT32_MAX)
			break;
		if (i > 0 && od_fosters_retired(&r->v->fost0, i)) {
			fsck_vol_say(&r->o, "chunk %u: retired (evacuated): not checked", i);
			pthread_mutex_lock(&r->lock);
			r->done++;
			pthread_mutex_unlock(&r->lock);
			continue;
		}
		st = fsck_vol_placed(r->v, i);
		if (st) {
			ret = fsck_check_chunk(st, i, &r->o, r->v, &one);
		} else {
			ret = store_file_region_direct(r->v->fd, r->v->dfd, r->v->base[i],
						       r->v->size[i], &st);
			if (ret == 0) {
				ret = fsck_check_chunk(st, i, &r->o, r->v, &one);
				store_close(st);
			}
		}
		if (ret < 0) {
			fsck_vol_say(&r->o, "chunk %u: %s", i, strerror(-ret));
			one.exit_code |= FSCK_EXIT_OPERATIONAL;
		}
		pthread_mutex_lock(&r->lock);
		if (!r->v->hdr_ok[i] && one.fixed)
			/* its header was made again: the other chunks' checks
			 * read through it from now on */
			fsck_vol_read_header(r->v, i, r->v->base[i], r->v->size[i],
					     (uint32_t)(r->v->size[i] / OD_BLOCK_SIZE));
		fsck_add_result(r->res, &one);
		r->done++;
		if (r->user->progress)
			r->user->progress(r->user->progress_ctx, r->done, r->total);
		pthread_mutex_unlock(&r->lock);
	}
	return NULL;
}

/* The chunks checked by min(jobs, chunks) threads: this one and the rest
 * started here. A thread that cannot be started leaves its share to the
 * others (said so). */
static void vol_run(struct fsck_vol *v, int chunk, const struct fsck_opts *o,
		    struct fsck_result *res)
{
	struct vol_run r;
	pthread_t *tids = NULL;
	uint32_t jobs = o->jobs > 1 ? (uint32_t)o->jobs : 1, started = 0;

	memset(&r, 0, sizeof(r));
	pthread_mutex_init(&r.lock, NULL);
	r.user = o;
	r.o = *o;
	if (o->out) {
		r.o.out = run_out;
		r.o.ctx = &r;
	}
	r.o.progress = NULL;
	r.v = v;
	r.chunk = chunk;
	r.total = chunk >= 0 ? 1 : v->nchunks;
	r.res = res;
	if (jobs > r.total)
		jobs = r.total;
	if (o->progress)
		o->progress(o->progress_ctx, 0, r.total);
	if (jobs > 1) {
		tids = calloc(jobs - 1, sizeof(*tids));
		for (uint32_t t = 0; tids && t < jobs - 1; t++) {
			int err = pthread_create(&tids[t], NULL, run_worker, &r);
			if (err) {
				fsck_vol_say(o, "only %u of %u checking threads started: %s",
					     started + 1, jobs, strerror(err));
				break;
			}
			started++;
		}
		if (!tids)
			fsck_vol_say(o, "no memory for %u checking threads: one is used", jobs);
	}
	run_worker(&r);
	for (uint32_t t = 0; t < started; t++)
		pthread_join(tids[t], NULL);
	free(tids);
	pthread_mutex_destroy(&r.lock);
}

int fsck_volume_path(const char *path, int chunk, const struct fsck_opts *o,
		     struct fsck_result *res)
{
	struct fsck_result local;
	struct od_chunk_header h;
	struct fsck_vol v;
	struct chunk_store *whole;
	uint64_t total = 0;
	int ret, kind;

	if (!res)
		res = &local;
	memset(res, 0, sizeof(*res));
	memset(&v, 0, sizeof(v));
	v.fd = -1;
	v.dfd = -1;
	ret = fsck_vol_open(path, o, &v, &total);
	if (ret < 0) {
		res->exit_code = FSCK_EXIT_OPERATIONAL;
		goto out;
	}
	/* An image of one chunk alone is checked as that chunk. */
	ret = store_file_region(v.fd, 0, total, &whole);
	if (ret < 0) {
		fsck_vol_say(o, "%s: %s", path, strerror(-ret));
		res->exit_code = FSCK_EXIT_OPERATIONAL;
		goto out;
	}
	kind = fsck_image_kind(whole, &h);
	if (kind == FSCK_IMG_CHUNK) {
		ret = fsck_image_lock(&v, o);
		if (ret < 0) {
			store_close(whole);
			res->exit_code = FSCK_EXIT_OPERATIONAL;
			goto out;
		}
		ret = fsck_image_store(whole, chunk, o, res);
		store_close(whole);
		goto out;
	}
	store_close(whole);
	/* One chunk, no cross-chunk confirmations: the other chunks' headers
	 * are read only if the check needs them (fsck_vol_complete()). */
	if (chunk >= 0 && !o->cross)
		ret = fsck_vol_locate_one(&v, total, o, (uint32_t)chunk);
	else
		ret = fsck_vol_locate(&v, total, o);
	if (ret < 0) {
		fsck_vol_say(o, "%s: %s", path, strerror(-ret));
		res->exit_code = FSCK_EXIT_OPERATIONAL;
		goto out;
	}
	if (chunk >= 0 && (uint32_t)chunk >= v.nchunks) {
		fsck_vol_say(o, "%s: no chunk %d (the volume has %u)", path, chunk, v.nchunks);
		res->exit_code = FSCK_EXIT_USAGE;
		ret = -EINVAL;
		goto out;
	}
	ret = adopt_placed(&v, o);
	if (ret < 0) {
		res->exit_code = ret == -EINVAL ? FSCK_EXIT_USAGE : FSCK_EXIT_OPERATIONAL;
		goto out;
	}
	ret = fsck_vol_lock(&v, chunk, o);
	if (ret < 0) {
		res->exit_code = FSCK_EXIT_OPERATIONAL;
		goto out;
	}
	vol_run(&v, chunk, o, res);
	/* With -x on the whole volume, a repair in one chunk (a head removed,
	 * a chain cut) can leave a chunk checked before it with a reference to
	 * what went away: the volume is checked again until a run repairs
	 * nothing (at most 3 more runs); what is left is the last run's. */
	for (uint32_t run = 0, fixed = res->fixed;
	     run < 3 && chunk < 0 && v.nchunks > 1 && o->cross && o->mode != FSCK_CHECK_ONLY && fixed &&
	     !(res->exit_code & (FSCK_EXIT_OPERATIONAL | FSCK_EXIT_CANCELLED));
	     run++) {
		struct fsck_result more;
		memset(&more, 0, sizeof(more));
		fsck_vol_say(o, "checking the volume again (repairs were made)");
		vol_run(&v, chunk, o, &more);
		fixed = more.fixed;
		res->problems += more.problems;
		res->fixed += more.fixed;
		res->unfixed = more.unfixed;
		res->usec += more.usec;
		res->exit_code = (res->exit_code & FSCK_EXIT_FIXED) | more.exit_code;
	}
	ret = 0;
out:
	fsck_vol_close(&v);
	return ret;
}
