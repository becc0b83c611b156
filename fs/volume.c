/* The volume: opening it (reading and validating every chunk header,
 * nothing more: the rest loads on demand), syncing, closing, statfs, and
 * the choice of chunk for new inodes and continuations. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/format/vol_probe.h"
#include "fs/internal.h"
#include "fs/lostfound.h"

#define DEFAULT_CACHE_LIMIT (256ull << 20)

/* Does vol_flush flush chunk c through its own store? (an online chunk
 * placed outside the image, or any online chunk of a volume of stores). */
static int flushed_alone(const struct fs_volume *v, const struct chunk *c)
{
	return !(v->shared_fd && !c->place) && !c->offline;
}

int vol_flush(struct fs_volume *v)
{
	uint32_t n = __atomic_load_n(&v->nchunks, __ATOMIC_ACQUIRE); /* fs/grow.c */
	uint8_t small[128], *sent = n <= 8 * sizeof(small) ? small : calloc((n + 7) / 8, 1);
	int ret = 0;

	/* One fdatasync covers every region of the image; each chunk placed
	 * elsewhere is flushed through its own store (NBD_CMD_FLUSH over
	 * NBD). Offline chunks were flushed when they went and get no writes.
	 * Every store's flush is sent first, the image's fdatasync runs while
	 * they travel, then each answer is waited for: N stores cost one round
	 * trip, not N. Which chunks were sent to is kept, so that each begin
	 * has its end even if a chunk's state changed meanwhile. */
	if (!sent)
		return -ENOMEM;
	if (sent == small)
		memset(small, 0, sizeof(small));
	for (uint32_t i = 0; i < n; i++) {
		struct chunk *c = &v->chunks[i];
		if (!flushed_alone(v, c))
			continue;
		store_flush_begin(c->store);
		sent[i / 8] |= (uint8_t)(1u << (i % 8));
	}
	if (v->shared_fd && fdatasync(v->fd) < 0)
		ret = -errno;
	for (uint32_t i = 0; i < n; i++) {
		int r;
		if (!(sent[i / 8] & (1u << (i % 8))))
			continue;
		r = store_flush_end(v->chunks[i].store);
		if (ret == 0)
			ret = r;
	}
	if (sent != small)
		free(sent);
	return ret;
}

int vol_read_header(struct chunk_store *st, uint64_t base, uint32_t guess_nblocks,
		    struct od_chunk_header *h, int *healed)
{
	struct od_header_src src = store_header_src(st);

	return od_header_read(&src, base, UINT32_MAX, guess_nblocks, h, healed);
}

/* Where the chunks' bytes are: one image holding them back to back (whole),
 * with some chunks perhaps placed elsewhere (places[i] names chunk i's own
 * store), or one store per chunk. */
struct vol_source {
	struct chunk_store *whole;
	int fd, tfd;
	struct chunk_store **stores;
	uint32_t nstores;
	const char *const *places;
	uint32_t nplaces;
};

/* Chunk c is placed outside the image: its own store, opened by name. A
 * store that cannot be opened leaves the dead store in its place and
 * reason[] saying why (-ENXIO then: the chunk goes offline, its store
 * counted as lost, so that chunkfsd keeps trying it). */
static int open_placed(struct fs_volume *v, struct chunk *c, const char *name, char *reason,
		       size_t reasonlen)
{
	int ret;

	c->place = strdup(name);
	if (!c->place)
		return -ENOMEM;
	ret = vol_place_open(name, v->rdonly, &c->store, reason, reasonlen);
	if (ret == 0)
		return 0;
	c->lost_store = ret;
	c->store = store_dead_new();
	return c->store ? -ENXIO : -ENOMEM;
}

static size_t chunk_table_bytes(void)
{
	return (size_t)OD_MAX_CHUNKS * sizeof(struct chunk);
}

void vol_retired_header(const struct od_chunk_header *h0, uint32_t i, uint32_t nblocks,
			struct od_chunk_header *h)
{
	memset(h, 0, sizeof(*h));
	h->version = h0->version;
	memcpy(h->volume_uuid, h0->volume_uuid, 16);
	h->chunk_index = i;
	h->chunk_count = h0->chunk_count;
	h->block_size = OD_BLOCK_SIZE;
	h->nblocks = nblocks;
	h->kind = OD_KIND_GENERAL;
	h->state = OD_STATE_CLEAN;
	h->flags = OD_CHF_DRAINING | OD_CHF_FOSTERED;
	h->dir_unit = h0->dir_unit;
}

/* The size of each chunk that chunk 0 names retired on both copies of its
 * header and table, and on the newer (rnb[i], 0: not retired): one copy
 * alone may be a retiring transaction that recovery rolls back, after
 * the chunks are opened; such a chunk is opened as usual, and its
 * evacuation retires it again. A table not whole gives the records read
 * before the fault (the same in all three when its unit is lost in both
 * copies); the others are found again after the chunks are opened
 * (vol_fosters_degraded). */
static void retired_sizes(struct chunk_store *st, const struct od_chunk_header *h0,
			  uint32_t *rnb, uint32_t count)
{
	struct od_header_src hs = store_header_src(st);
	struct od_chunk_header r[2];
	struct od_fosters l[3];
	char why[160];
	int ok;

	if (od_header_copies(&hs, 0, &r[0], &r[1]) < 0)
		return;
	ok = od_fosters_read(&hs, 0, h0, -1, &l[0], why, sizeof(why)) != -ENOMEM;
	ok = od_fosters_read(&hs, 0, &r[0], 0, &l[1], why, sizeof(why)) != -ENOMEM && ok;
	ok = od_fosters_read(&hs, 0, &r[1], 1, &l[2], why, sizeof(why)) != -ENOMEM && ok;
	for (uint32_t i = 0; i < l[0].n && ok; i++) {
		uint32_t home = l[0].rec[i].home, nb = od_fosters_retired(&l[0], home);
		if (home < count && nb && od_fosters_retired(&l[1], home) == nb &&
		    od_fosters_retired(&l[2], home) == nb)
			rnb[home] = nb;
	}
	for (int k = 0; k < 3; k++)
		od_fosters_free(&l[k]);
}

static int open_chunks_with(struct fs_volume *v, struct vol_source *src,
			    const struct od_chunk_header *hp, const uint32_t *rnb, char *why,
			    size_t whylen);

static int open_chunks(struct fs_volume *v, struct vol_source *src, char *why, size_t whylen)
{
	struct od_chunk_header h0;
	uint32_t *rnb;
	int healed, ret;

	ret = vol_read_header(src->whole ? src->whole : src->stores[0], 0, 0, &h0, &healed);
	if (ret < 0) {
		if (why && whylen)
			snprintf(why, whylen, "not a chunkfs volume: no valid chunk header in "
					      "either copy of chunk 0");
		return -EINVAL;
	}
	if (h0.chunk_count == 0 || h0.chunk_count > OD_MAX_CHUNKS ||
	    (!src->whole && h0.chunk_count != src->nstores)) {
		if (why && whylen)
			snprintf(why, whylen, "corrupt volume: chunk count %u (%u stores given)",
				 h0.chunk_count, src->whole ? h0.chunk_count : src->nstores);
		return -EUCLEAN;
	}
	rnb = calloc(h0.chunk_count, sizeof(*rnb));
	if (!rnb)
		return -ENOMEM;
	retired_sizes(src->whole ? src->whole : src->stores[0], &h0, rnb, h0.chunk_count);
	ret = open_chunks_with(v, src, &h0, rnb, why, whylen);
	free(rnb);
	return ret;
}

static int open_chunks_with(struct fs_volume *v, struct vol_source *src,
			    const struct od_chunk_header *hp, const uint32_t *rnb, char *why,
			    size_t whylen)
{
	const struct od_chunk_header h0 = *hp;
	uint64_t base = 0;
	int healed, ret;

	v->nchunks = h0.chunk_count;
	/* Room for every chunk the volume may ever have, so that a chunk
	 * added while it serves never moves the others (fs/grow.c): 97 MB of
	 * address space, an anonymous mapping whose pages the kernel gives
	 * zeroed as chunks first touch them (a calloc this large costs the
	 * same in glibc, but a sanitizer's allocator writes its shadow). */
	v->chunks = mmap(NULL, chunk_table_bytes(), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (v->chunks == MAP_FAILED) {
		v->chunks = NULL;
		return -ENOMEM;
	}
	memcpy(v->uuid, h0.volume_uuid, 16);
	memcpy(v->secret, h0.secret, 32);
	v->root = h0.root_stable;
	v->shared_fd = src->whole != NULL;
	for (uint32_t i = 0; i < v->nchunks; i++) {
		struct chunk *c = &v->chunks[i];
		struct chunk_store *st = src->whole ? src->whole : src->stores[i];
		const char *place = i < src->nplaces ? src->places[i] : NULL;
		uint64_t at = src->whole ? base : 0;
		struct od_chunk_header ih; /* the image's own copy of a placed chunk's header */
		int ih_ok = 0, unreached = 0;
		char reason[160] = "";
		c->vol = v;
		c->index = i;
		c->header_heal = -1;
		if (i && rnb[i]) {
			/* Retired (evacuated): no store, never read. Its entry
			 * keeps a geometry for the layout and the counts. */
			uint32_t nb = rnb[i];
			if (!src->whole) {
				store_close(src->stores[i]);
				src->stores[i] = NULL;
			}
			c->store = store_dead_new();
			if (!c->store)
				return -ENOMEM;
			vol_retired_header(&h0, i, nb, &c->hdr);
			c->half = nb / 2;
			c->offline = 1;
			c->retired = 1;
			c->base = base;
			snprintf(c->why_offline, sizeof(c->why_offline), "retired (evacuated)");
			base += (uint64_t)nb * OD_BLOCK_SIZE;
			continue;
		}
		if (!src->whole) {
			c->store = st; /* the volume owns it from here on */
			src->stores[i] = NULL;
		}
		if (place && *place) {
			ih_ok = vol_read_header(src->whole, base, h0.nblocks, &ih, &healed) == 0 &&
				ih.chunk_index == i;
			ret = open_placed(v, c, place, reason, sizeof(reason));
			if (ret == -ENOMEM)
				return ret;
			unreached = ret < 0;
			st = c->store;
			at = 0;
		}
		ret = unreached ? -ENXIO : vol_read_header(st, at, h0.nblocks, &c->hdr, &healed);
		if (ret < 0)
			healed = 0;
		if (unreached) {
			/* reason[] says why already */
		} else if (ret == 0 && memcmp(c->hdr.volume_uuid, h0.volume_uuid, 16) != 0) {
			snprintf(reason, sizeof(reason), "belongs to another volume");
			ret = -EUCLEAN;
		} else if (ret == 0) {
			ret = chunk_check_header(&c->hdr, i, reason, sizeof(reason));
		} else {
			snprintf(reason, sizeof(reason), "both copies of its header are bad");
		}
		if (ret == 0 && ih_ok && ih.nblocks != c->hdr.nblocks) {
			snprintf(reason, sizeof(reason),
				 "%s holds a chunk of %u blocks where the volume has %u", c->place,
				 c->hdr.nblocks, ih.nblocks);
			ret = -EUCLEAN;
		}
		if (ret == 0 && at + (uint64_t)c->hdr.nblocks * OD_BLOCK_SIZE > st->size) {
			snprintf(reason, sizeof(reason), "image truncated: %llu bytes, chunk ends at %llu",
				 (unsigned long long)st->size,
				 (unsigned long long)(at + (uint64_t)c->hdr.nblocks * OD_BLOCK_SIZE));
			ret = -EUCLEAN;
		}
		if (ret == 0 && (c->hdr.feature_ro_compat & ~OD_FEATURE_RO_COMPAT_SUPP) &&
		    !v->rdonly) {
			snprintf(reason, sizeof(reason),
				 "unknown read-only features 0x%x: open it read-only",
				 c->hdr.feature_ro_compat);
			ret = -EROFS;
		}
		if (ret < 0 && (i == 0 || ret == -EPROTONOSUPPORT || ret == -EROFS)) {
			if (why && whylen)
				snprintf(why, whylen, "chunk %u: %s", i, reason);
			return ret == -EPROTONOSUPPORT || ret == -EROFS ? ret : -EUCLEAN;
		}
		if (ret < 0) {
			/* One damaged chunk does not take the volume down: it
			 * is offline, with chunk 0's geometry, until repaired. */
			size_t used = why ? strlen(why) : 0;
			c->hdr = ih_ok ? ih : h0;
			c->hdr.chunk_index = i;
			c->hdr.state = OD_STATE_NEEDS_REPAIR;
			c->offline = 1;
			/* A placed chunk's reason names its store (an open
			 * failure's does already). */
			if (c->place && !unreached)
				snprintf(c->why_offline, sizeof(c->why_offline), "%s: %s", c->place,
					 reason);
			else
				snprintf(c->why_offline, sizeof(c->why_offline), "%s", reason);
			if (why && used + 1 < whylen)
				snprintf(why + used, whylen - used, "%schunk %u offline: %s",
					 used ? "; " : "", i, c->why_offline);
		}
		c->half = c->hdr.nblocks / 2;
		if (!c->offline && (c->hdr.feature_compat & OD_FEATURE_COMPAT_EVAC)) {
			/* An evacuation goes on where its scans were. */
			c->evac_slot = c->hdr.evac_slot;
			c->evac_map = c->hdr.evac_map;
		}
		if (healed && !c->offline) {
			c->header_dirty = 1;
			c->header_heal = healed - 1;
		}
		c->base = base;
		if (src->whole && !c->place) {
			ret = vol_chunk_lock_open(v, c, why, whylen);
			if (ret < 0)
				return ret;
			ret = store_file_region_told(src->fd, src->tfd, base,
						     (uint64_t)c->hdr.nblocks * OD_BLOCK_SIZE,
						     &c->store);
			if (ret < 0)
				return ret;
		}
		if (c->hdr.txid > v->txid)
			v->txid = c->hdr.txid;
		/* The next chunk's region follows this one's in the image, as
		 * large as the image's copy of the header says. */
		base += (uint64_t)(ih_ok ? ih.nblocks : c->hdr.nblocks) * OD_BLOCK_SIZE;
	}
	return 0;
}

static void vol_free(struct fs_volume *v)
{
	dalloc_destroy(v);
	txn_free_spares(v);
	dindex_destroy(v);
	if (v->hash)
		cache_destroy(v);
	for (uint32_t i = 0; v->chunks && i < v->nchunks; i++) {
		struct chunk *c = &v->chunks[i];
		if (c->store)
			store_close(c->store);
		chunk_unload(c);
		txn_forget_ondisk(c);
		chunk_free_ghosts(c);
		free(c->place);
	}
	if (v->chunks)
		munmap(v->chunks, chunk_table_bytes());
	od_fosters_free(&v->fost);
	if (v->fd >= 0)
		close(v->fd);
	if (v->tfd >= 0)
		close(v->tfd);
	pthread_cond_destroy(&v->commit_cond);
	pthread_cond_destroy(&v->pin_cond);
	pthread_mutex_destroy(&v->pin_lock);
	pthread_mutex_destroy(&v->commit_lock);
	vol_lock_destroy(v);
	vol_pred_free(v);
	prealloc_destroy(v);
	free(v);
}

static struct fs_volume *vol_alloc(int flags)
{
	struct fs_volume *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	if (vol_pred_new(v) < 0) {
		free(v);
		return NULL;
	}
	vol_lock_init(v);
	pthread_mutex_init(&v->commit_lock, NULL);
	pthread_cond_init(&v->commit_cond, NULL);
	pthread_mutex_init(&v->pin_lock, NULL);
	pthread_cond_init(&v->pin_cond, NULL);
	v->fd = -1;
	v->tfd = -1;
	v->evac_trace_fd = -1;
	v->rdonly = !!(flags & FS_OPEN_RDONLY);
	v->large_continue_blocks = FS_LARGE_CONTINUE_DEFAULT / OD_BLOCK_SIZE;
	v->realloc_min_extents = FS_REALLOC_DEFAULT_EXTENTS;
	v->readahead = FS_READAHEAD_DEFAULT;
	v->realloc_append_blocks = FS_REALLOC_APPEND_DEFAULT / OD_BLOCK_SIZE;
	v->pack_region = FS_SMALL_PACK_DEFAULT / OD_BLOCK_SIZE;
	if (dalloc_init(v) < 0 || prealloc_init(v) < 0) {
		vol_free(v);
		return NULL;
	}
	return v;
}

/* Recovery: the dirty lists say which units the last transactions wrote;
 * afterwards both copies of every unit agree, and the headers are read again
 * (the newer copy may have been the one rolled back). */
static int vol_recover(struct fs_volume *v)
{
	int ret = txn_recover(v, &v->recovery);

	for (uint32_t i = 0; ret == 0 && i < v->nchunks && v->recovery.units_copied; i++) {
		struct chunk *c = &v->chunks[i];
		int healed;
		if (c->offline)
			continue;
		ret = vol_read_header(c->store, 0, c->hdr.nblocks, &c->hdr, &healed);
		if (ret < 0) {
			c->offline = 1;
			c->hdr.state = OD_STATE_NEEDS_REPAIR;
			ret = 0;
		}
	}
	/* A chunk added by a transaction that recovery rolled back is not
	 * part of the volume: chunk 0's header, as recovered, says how many
	 * chunks there are (fs/grow.c). */
	if (ret == 0 && v->recovery.units_copied && !v->chunks[0].offline &&
	    v->chunks[0].hdr.chunk_count >= 1 && v->chunks[0].hdr.chunk_count < v->nchunks)
		vol_drop_chunks_from(v, v->chunks[0].hdr.chunk_count);
	return ret;
}

/* A volume made before mkfs gave lost+found its first part, and not used
 * since (no chunk but the root's has handed out a slot: once one has,
 * lost+found's chain is not empty), gets that part now, before anyone holds
 * a copy of lost+found (fs/lostfound.c). Only running out of memory stops
 * the open: a volume whose other chunks are all offline or full goes
 * without, and its fresh chunks then get no part either. */
static int vol_lf_anchor(struct fs_volume *v)
{
	struct iref root;
	int ret;

	for (uint32_t i = 1; i < v->nchunks; i++)
		if (!v->chunks[i].offline && v->chunks[i].hdr.islot_watermark)
			return 0;
	ret = ino_get_stable(v, v->root, &root);
	if (ret == 0)
		ret = lf_anchor(v, &root);
	return ret == -ENOMEM ? ret : 0;
}

/* The image shortened when its last chunks are retired (fs/shorten.c): a
 * failure does not stop the volume (nothing read is at stake) but is kept
 * for the counters and fails fs_close. */
void vol_try_shorten(struct fs_volume *v)
{
	int ret = vol_shorten_image(v);

	v->image_cut_err = ret < 0 ? ret : 0;
}

static int vol_open_source(struct fs_volume *v, struct vol_source *src, struct fs_volume **out,
			   char *why, size_t whylen)
{
	int ret = cache_init(v, DEFAULT_CACHE_LIMIT);

	if (ret == 0)
		ret = dindex_init(v);
	if (ret == 0)
		ret = open_chunks(v, src, why, whylen);
	if (ret == 0 && !v->rdonly)
		ret = vol_recover(v);
	if (ret == 0) {
		/* (after recovery: both copies of the table agree) */
		char fwhy[160] = "";
		ret = vol_fosters_load(v, fwhy, sizeof(fwhy));
		if (ret == -EUCLEAN)
			ret = vol_fosters_degraded(v, fwhy, why, whylen);
	}
	if (ret == 0 && !v->rdonly)
		ret = vol_lf_anchor(v);
	if (ret == 0)
		vol_try_shorten(v);
	if (ret == 0)
		ret = vol_pred_load(v);
	if (ret < 0) {
		vol_free(v);
		return ret;
	}
	*out = v;
	return 0;
}

int fs_open_placed(const char *path, const char *const *places, uint32_t nplaces, int flags,
		   struct fs_volume **out, char *why, size_t whylen)
{
	struct fs_volume *v;
	struct vol_source src = { .places = places, .nplaces = nplaces };
	uint64_t size;
	int is_blk, ret;

	if (why && whylen)
		why[0] = '\0';
	if (nplaces && places[0] && places[0][0]) {
		if (why && whylen)
			snprintf(why, whylen, "chunk 0 stays in the volume image (it names the volume)");
		return -EINVAL;
	}
	v = vol_alloc(flags);
	if (!v)
		return -ENOMEM;
	v->fd = open(path, (v->rdonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (v->fd < 0) {
		ret = -errno;
		if (why && whylen)
			snprintf(why, whylen, "%s: %s", path, strerror(-ret));
		vol_free(v);
		return ret;
	}
	ret = vol_image_size(v->fd, &size, &is_blk);
	if (ret == 0)
		ret = store_file_region(v->fd, 0, size, &src.whole);
	if (ret < 0) {
		vol_free(v);
		return ret;
	}
	src.fd = v->fd;
	/* Told reads are an optimisation: without the second descriptor
	 * every read goes through fd, as before. */
	v->tfd = store_file_told_fd(v->fd);
	if (v->tfd < 0)
		v->tfd = -1;
	src.tfd = v->tfd;
	ret = vol_open_source(v, &src, out, why, whylen);
	store_close(src.whole);
	return ret;
}

int fs_open_ex(const char *path, int flags, struct fs_volume **out, char *why, size_t whylen)
{
	return fs_open_placed(path, NULL, 0, flags, out, why, whylen);
}

int fs_open_stores(struct chunk_store **stores, uint32_t n, int flags, struct fs_volume **out,
		   char *why, size_t whylen)
{
	struct fs_volume *v = vol_alloc(flags);
	struct vol_source src = { .stores = stores, .nstores = n };
	int ret;

	if (why && whylen)
		why[0] = '\0';
	if (!v)
		return -ENOMEM;
	if (n == 0) {
		vol_free(v);
		return -EINVAL;
	}
	ret = vol_open_source(v, &src, out, why, whylen);
	/* Stores the volume did not take over are the caller's again. */
	return ret;
}

int fs_open(const char *path, int flags, struct fs_volume **out)
{
	return fs_open_ex(path, flags, out, NULL, 0);
}

void fs_set_cache_limit(struct fs_volume *v, uint64_t bytes)
{
	vol_lock(v);
	v->cache_limit = bytes;
	vol_unlock(v);
}

/* The transaction fs_sync is writing, if any, ends here (the volume is
 * locked): once its writes have returned, its outcome is recorded. The
 * lock is kept throughout, so the operation calling this stays atomic. */
static void vol_end_inflight(struct fs_volume *v)
{
	struct txn *t = v->inflight;

	if (!t)
		return;
	pthread_mutex_lock(&v->commit_lock);
	while (!t->io_done)
		pthread_cond_wait(&v->commit_cond, &v->commit_lock);
	pthread_mutex_unlock(&v->commit_lock);
	/* A failure is the writer's to report; its units are dirty again and
	 * go out with the next transaction. */
	txn_finish(v, t, t->io_ret);
	v->inflight = NULL;
}

/* The units of every change so far, in transaction t (t->nparts 0: none).
 * Chunks that changed are marked dirty on disk until a clean close marks
 * them clean again. */
static int vol_prepare(struct fs_volume *v, int closing, struct txn *t)
{
	int ret;

	vol_end_inflight(v);
	/* the predictor's table, when due: its units and chunk 0's header
	 * join this transaction (vol_pred_store.c) */
	vol_pred_save(v, closing);
	for (uint32_t i = 0; i < v->nchunks; i++) {
		struct chunk *c = &v->chunks[i];
		if (c->offline)
			continue; /* nothing of it is written until it is back */
		ret = chunk_write_bitmap(c);
		if (ret < 0)
			return ret;
		/* Every online header says how many chunks there are (a chunk
		 * added, one back online from before): fs/grow.c. */
		if (c->hdr.chunk_count != v->nchunks) {
			c->hdr.chunk_count = v->nchunks;
			c->header_dirty = 1;
		}
		if (closing && c->hdr.state == OD_STATE_DIRTY) {
			c->hdr.state = OD_STATE_CLEAN;
			c->header_dirty = 1;
		}
		if (c->header_dirty) {
			c->hdr.txid = v->txid + 1;
			ret = chunk_write_header(c);
			if (ret < 0)
				return ret;
		}
	}
	return txn_prepare(v, t);
}

int vol_sync(struct fs_volume *v, int closing)
{
	struct txn t;
	int ret;

	if (v->rdonly)
		return 0;
	if (vol_nowait(v))
		return vol_would_wait();
	ret = vol_prepare(v, closing, &t);
	if (ret < 0 || t.nparts == 0)
		return ret;
	return txn_finish(v, &t, txn_write(v, &t));
}

/* Operations go on while the transaction is written: only its prepare and
 * its finish hold the volume lock. */
int vol_sync_unlocked(struct fs_volume *v)
{
	struct txn t;
	int ret;

	vol_lock(v);
	ret = vol_prepare(v, 0, &t);
	if (ret < 0 || t.nparts == 0) {
		vol_unlock(v);
		return ret;
	}
	v->inflight = &t;
	vol_unlock(v);
	ret = txn_write(v, &t);
	pthread_mutex_lock(&v->commit_lock);
	t.io_ret = ret;
	t.io_done = 1;
	pthread_cond_broadcast(&v->commit_cond);
	pthread_mutex_unlock(&v->commit_lock);
	vol_lock(v);
	/* An operation that had to sync meanwhile may have finished it. */
	if (!t.finished) {
		int fret = txn_finish(v, &t, ret);
		if (ret == 0)
			ret = fret;
		v->inflight = NULL;
	}
	vol_unlock(v);
	return ret;
}

int fs_sync(struct fs_volume *v)
{
	int ret;

	if (v->rdonly)
		return 0;
	/* Every buffered file is placed first (fs/dalloc.c): a file that
	 * cannot be stays buffered to be tried again, and this sync does not
	 * fail for it (its own fs_place or fs_commit reports it), so that a
	 * server's group commit fails only the calls whose changes it could
	 * not make durable. */
	{
		uint32_t placed;
		(void)dalloc_place_sliced(v, -1, 1, &placed); /* a file per lock hold */
	}
	ret = vol_sync_unlocked(v);
	/* A chunk whose server is gone cannot commit, and must not keep the
	 * others from it: it goes offline with its uncommitted changes, and
	 * the rest is committed. This sync still failed: what it was to make
	 * durable may have been in that chunk (fs_drop_count moved). */
	if (ret < 0)
		fs_offline_lost_stores(v); /* (none lost: one look, nothing done) */
	return ret;
}

int fs_close(struct fs_volume *v)
{
	int pret, ret;

	if (!v)
		return 0;
	vol_lock(v);
	pret = v->rdonly ? 0 : dalloc_place_all(v, DA_LAST);
	prealloc_close(v); /* (in memory only: nothing to write) */
	ret = vol_sync(v, 1);
	if (ret == 0)
		ret = pret; /* (what could not be placed is given up, and counted) */
	if (ret == 0 && !v->rdonly)
		ret = txn_settle_all(v);
	if (ret == 0)
		vol_try_shorten(v);
	if (ret == 0 && v->image_cut_err)
		ret = v->image_cut_err;
	vol_unlock(v);
	vol_free(v);
	return ret;
}

int fs_root(struct fs_volume *v, struct fs_ino *out)
{
	struct iref r;
	int ret;

	vol_lock(v);
	ret = ino_get_stable(v, v->root, &r);
	vol_unlock(v);
	if (ret < 0)
		return ret;
	out->num = r.ino.stable;
	out->gen = r.ino.generation;
	return 0;
}

int fs_statfs(struct fs_volume *v, struct fs_statfs *out)
{
	memset(out, 0, sizeof(*out));
	vol_lock(v);
	out->block_size = OD_BLOCK_SIZE;
	out->chunk_count = v->nchunks;
	for (uint32_t i = 0; i < v->nchunks; i++) {
		const struct chunk *c = &v->chunks[i];
		/* Only what can hold file data counts: each half's data area. */
		out->total_blocks += c->hdr.nblocks - 2 * c->hdr.data_start;
		out->total_inodes += c->hdr.max_inodes;
		if (c->offline)
			continue;
		out->chunks_online++;
		/* A draining chunk's free room takes nothing new: not free. */
		if (chunk_draining(c))
			continue;
		/* Blocks reserved for files (fs/prealloc.c) are promised. */
		out->free_blocks += chunk_avail_blocks(c);
		out->free_inodes += c->hdr.max_inodes - c->hdr.used_inodes;
	}
	/* Buffered pages will take blocks, and their extents units: they are
	 * not free to promise. */
	{
		uint64_t held = dalloc_promised_blocks(v);
		out->free_blocks = out->free_blocks > held ? out->free_blocks - held : 0;
	}
	vol_unlock(v);
	return 0;
}

int fs_get_counters(struct fs_volume *v, struct fs_counters *out)
{
	memset(out, 0, sizeof(*out));
	vol_lock(v);
	out->txid = v->txid;
	out->recovery = v->recovery;
	out->image_cut = v->image_cut;
	out->image_cut_err = v->image_cut_err;
	out->read_only = v->rdonly;
	out->ftab_lost = v->ftab_lost;
	out->ftab_rebuilt = v->ftab_rebuilt;
	for (uint32_t i = 0; i < v->nchunks; i++) {
		const struct chunk *c = &v->chunks[i];
		out->healed += c->healed;
		out->unreadable += c->bad_both;
		out->chunks_needing_repair += !c->retired && (c->offline || c->hdr.state == OD_STATE_NEEDS_REPAIR);
		if (c->store) {
			out->store_reads += __atomic_load_n(&c->store->reads, __ATOMIC_RELAXED);
			out->store_read_bytes +=
				__atomic_load_n(&c->store->read_bytes, __ATOMIC_RELAXED);
		}
	}
	out->txns = v->txns;
	out->txns_one_flush = v->txns_one_flush;
	out->txn_flushes = v->txn_flushes;
	out->held_named = v->held_named;
	out->large_continues = v->large_continues;
	out->alloc_first_fit = v->alloc_first_fit;
	out->small_pack = (uint64_t)v->pack_region * OD_BLOCK_SIZE;
	out->small_packs = v->small_packs;
	out->pack_regions = v->pack_regions;
	dalloc_counters(v, out);
	out->lock_holds = v->lock_rec.holds;
	out->lock_hold_max_us = v->lock_rec.max_ns / 1000u;
	snprintf(out->lock_hold_max_site, sizeof(out->lock_hold_max_site), "%s",
		 v->lock_rec.max_site ? v->lock_rec.max_site : "-");
	out->lock_holds_over_1ms = v->lock_rec.over_1ms;
	out->lock_holds_over_10ms = v->lock_rec.over_10ms;
	realloc_counters(v, out);
	out->readahead = v->readahead;
	out->ra_hints = v->ra_hints;
	out->ra_hint_bytes = v->ra_hint_bytes;
	vol_unlock(v);
	return 0;
}

int vol_enospc_retry(struct fs_volume *v)
{
	int any = 0, synced;

	for (uint32_t i = 0; i < v->nchunks; i++)
		any |= v->chunks[i].any_reserved || v->chunks[i].any_frozen;
	synced = any && vol_sync(v, 0) == 0;
	/* The volume is full: every file's reservation (fs/prealloc.c) is
	 * given back before the operation fails. */
	return prealloc_give_back_all(v) || synced;
}

void fs_volume_uuid(struct fs_volume *v, uint8_t uuid[16])
{
	memcpy(uuid, v->uuid, 16);
}

void fs_volume_secret(struct fs_volume *v, uint8_t secret[32])
{
	memcpy(secret, v->secret, 32);
}

int vol_chunk_has_room(struct chunk *c, int need_inode)
{
	if (c->offline || chunk_draining(c))
		return 0;
	if (chunk_avail_blocks(c) < 2 * c->hdr.dir_unit + 2)
		return 0;
	return !need_inode || map_free_count(c) > 0;
}

/* Where a new inode or continuation goes: the preferred chunk while it has
 * room, else the chunk with the most free blocks, a chunk of the hinted
 * kind winning over others; chunks marked in exclude[] (when given) are
 * skipped. NULL: the volume is full. */
struct chunk *vol_pick_chunk(struct fs_volume *v, struct chunk *prefer, int kind_hint,
			     int need_inode, const uint8_t *exclude)
{
	struct chunk *best = NULL;
	int best_kind = 0;

	if (prefer && !(exclude && exclude[prefer->index]) && vol_chunk_has_room(prefer, need_inode))
		return prefer;
	for (uint32_t i = 0; i < v->nchunks; i++) {
		struct chunk *c = &v->chunks[i];
		int kind_ok;
		if (c == prefer || (exclude && exclude[i]) || !vol_chunk_has_room(c, need_inode))
			continue;
		kind_ok = (int)c->hdr.kind == kind_hint;
		if (!best || kind_ok > best_kind ||
		    (kind_ok == best_kind && chunk_avail_blocks(c) > chunk_avail_blocks(best))) {
			best = c;
			best_kind = kind_ok;
		}
	}
	return best;
}

struct chunk *vol_pick_large_chunk(struct fs_volume *v, uint64_t want)
{
	struct chunk *best = NULL;

	if (want > v->large_continue_blocks)
		want = v->large_continue_blocks;
	for (uint32_t i = 0; i < v->nchunks; i++) {
		struct chunk *c = &v->chunks[i];
		if (c->hdr.kind != FS_KIND_LARGE || c->offline || chunk_draining(c) ||
		    chunk_load(c) < 0 || c->free_outside < want || c->free_outside == 0)
			continue;
		if (!best || c->free_outside > best->free_outside)
			best = c;
	}
	return best;
}

void fs_set_large_continue(struct fs_volume *v, uint64_t bytes)
{
	vol_lock(v);
	v->large_continue_blocks = bytes / OD_BLOCK_SIZE;
	vol_unlock(v);
}

/* want 0: any chunk with free blocks outside its zones; else with a free
 * run of want blocks there. */
static struct chunk *pick_data(struct fs_volume *v, struct chunk *except, uint32_t want)
{
	struct chunk *best = NULL;

	for (uint32_t i = 0; i < v->nchunks; i++) {
		struct chunk *c = &v->chunks[i];
		if (c == except || c->offline || chunk_draining(c) || chunk_load(c) < 0 ||
		    c->free_outside == 0 || (want && !chunk_has_run(c, want)))
			continue;
		int large = c->hdr.kind == FS_KIND_LARGE;
		int best_large = best && best->hdr.kind == FS_KIND_LARGE;
		if (!best || large > best_large ||
		    (large == best_large && c->free_outside > best->free_outside))
			best = c;
	}
	return best;
}

struct chunk *vol_pick_data_chunk(struct fs_volume *v, struct chunk *except)
{
	return pick_data(v, except, 0);
}

struct chunk *vol_pick_run_chunk(struct fs_volume *v, struct chunk *except, uint32_t run)
{
	/* (first fit: any chunk with room, as before runs were looked for) */
	return pick_data(v, except, v->alloc_first_fit ? 0 : run ? run : 1);
}

void fs_set_alloc_policy(struct fs_volume *v, enum fs_alloc_policy policy)
{
	vol_lock(v);
	v->alloc_first_fit = policy == FS_ALLOC_FIRST_FIT;
	vol_unlock(v);
}

int fs_set_small_pack(struct fs_volume *v, uint64_t bytes)
{
	uint64_t blocks = bytes / OD_BLOCK_SIZE;

	if (blocks && (blocks < PACK_MAX || blocks > UINT32_MAX))
		return -EINVAL;
	vol_lock(v);
	v->pack_region = (uint32_t)blocks;
	/* (every chunk's cursor starts again: a region taken for the old
	 * size is not the new one's) */
	for (uint32_t i = 0; i < v->nchunks; i++) {
		memset(&v->chunks[i].pack, 0, sizeof(v->chunks[i].pack));
		memset(&v->chunks[i].pack_burst, 0, sizeof(v->chunks[i].pack_burst));
	}
	for (uint32_t i = 0; i < DIR_FILL_SLOTS; i++)
		memset(&v->fill[i].cur, 0, sizeof(v->fill[i].cur));
	vol_unlock(v);
	return 0;
}
