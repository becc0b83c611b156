/* Growing a volume by one chunk. A new chunk's header pair, made from chunk
 * 0's (volume UUID, secret, root, features) with its own index, size and
 * kind, written with its dirty-list areas zeroed: on a store of its own by
 * mkfs.chunkfs --add-chunk-of (fs_mkfs_chunk), or by the live volume in a
 * new region at the image's end (fs_add_chunk). fs_add_chunk then takes the
 * chunk into the open volume and commits the new chunk count;
 * fs_add_chunk_store does the same for a volume opened from stores (the
 * crash test's, tests/grow_crash_test).
 *
 * Where the count lives: every chunk header carries chunk_count, and only
 * chunk 0's decides at open (doc/format.md §4). fs_add_chunk commits it in
 * a transaction of its own (nothing else is dirty: everything before was
 * committed first, under the same hold of the volume lock), which writes
 * the header of every online chunk with the new count. Until that
 * transaction commits, the new chunk is bytes past the volume's end, which
 * open ignores; once it has, it is part of the volume. A crash in between
 * is settled by recovery, and open then keeps only the chunks chunk 0's
 * recovered header counts (vol_recover).
 *
 * Why the chunk array may grow: it is allocated at open for the format's
 * largest number of chunks (OD_MAX_CHUNKS; pages never touched cost no
 * memory), so a struct chunk never moves and pointers into the array stay
 * valid across calls and threads. A new chunk is filled in whole under the
 * volume lock, then published by a release store of nchunks; code that
 * reads nchunks without the lock (vol_flush under an unlocked commit) sees
 * either count, and a chunk it may see is whole. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs/format/vol_probe.h"
#include "fs/internal.h"
#include "fs/store/store_nbd.h"

#define DEFAULT_BYTES_PER_INODE 16384u

/* The header of chunk index of the volume whose chunk 0 says h0, fresh:
 * nothing in it but its fixed metadata, its bitmap to be made on first use. */
static void fresh_header(const struct od_chunk_header *h0, uint32_t index, uint32_t nblocks,
			 uint32_t kind, uint32_t bpi, struct od_chunk_header *h)
{
	memset(h, 0, sizeof(*h));
	h->version = h0->version;
	h->feature_compat = h0->feature_compat;
	h->feature_incompat = h0->feature_incompat;
	h->feature_ro_compat = h0->feature_ro_compat;
	memcpy(h->volume_uuid, h0->volume_uuid, sizeof(h->volume_uuid));
	memcpy(h->secret, h0->secret, sizeof(h->secret));
	memcpy(h->label, h0->label, sizeof(h->label));
	h->root_stable = h0->root_stable;
	h->chunk_index = index;
	h->chunk_count = index + 1;
	h->kind = kind;
	h->state = OD_STATE_CLEAN;
	h->flags = OD_CHF_BITMAP_UNINIT | (h0->flags & OD_CHF_SINGLE_COPY);
	h->mkfs_time = (uint64_t)time(NULL);
	chunk_geometry(h, nblocks, bpi ? bpi : DEFAULT_BYTES_PER_INODE);
}

/* h's two copies (one with SINGLE_COPY) at base of st, after zeros over
 * both dirty-list areas (whatever the bytes held before, no old list is
 * replayed), made durable. */
static int write_fresh(struct chunk_store *st, uint64_t base, const struct od_chunk_header *h)
{
	uint8_t *blk = calloc(1, OD_BLOCK_SIZE);
	uint64_t half = (uint64_t)(h->nblocks / 2) * OD_BLOCK_SIZE;
	struct od_mb_header mh = {
		.magic = OD_MB_MAGIC,
		.type = OD_MB_CHUNK_HEADER,
		.units = 1,
		.chunk = h->chunk_index,
		.block = 0,
	};
	int ret = blk ? 0 : -ENOMEM;

	for (uint32_t k = 0; k < h->dirty_blocks && ret == 0; k++) {
		uint64_t off = base + (uint64_t)(h->dirty_start + k) * OD_BLOCK_SIZE;
		ret = store_pwrite(st, blk, OD_BLOCK_SIZE, off);
		if (ret == 0)
			ret = store_pwrite(st, blk, OD_BLOCK_SIZE, off + half);
	}
	if (ret == 0) {
		od_put_mb_header(blk, &mh);
		od_put_chunk_header(blk, h);
		od_seal(blk, OD_BLOCK_SIZE);
		ret = store_pwrite(st, blk, OD_BLOCK_SIZE, base);
	}
	if (ret == 0 && !(h->flags & OD_CHF_SINGLE_COPY))
		ret = store_pwrite(st, blk, OD_BLOCK_SIZE, base + half);
	if (ret == 0)
		ret = store_flush(st);
	free(blk);
	return ret;
}

static int check_size(uint64_t chunk_size, char *why, size_t whylen)
{
	if (chunk_size < OD_MIN_CHUNK_SIZE || chunk_size > OD_MAX_CHUNK_SIZE ||
	    (chunk_size & (chunk_size - 1))) {
		snprintf(why, whylen, "a chunk is a power of two from 1 MiB to 16 GiB, not %llu bytes",
			 (unsigned long long)chunk_size);
		return -EINVAL;
	}
	return 0;
}

/* --- mkfs.chunkfs --add-chunk-of -------------------------------------------- */

/* A store of its own (a path, created when missing, or an NBD URI) for a
 * chunk of size bytes, writable. */
static int open_target(const char *where, uint64_t size, struct chunk_store **st, char *why,
		       size_t whylen)
{
	struct stat sb;
	int ret;

	if (!store_nbd_is_uri(where) && stat(where, &sb) < 0 && errno == ENOENT) {
		int fd = open(where, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
			ret = -errno;
			snprintf(why, whylen, "%s: %s", where, strerror(-ret));
			if (fd >= 0)
				close(fd);
			return ret;
		}
		close(fd);
	}
	ret = vol_place_open(where, 0, st, why, whylen);
	if (ret == 0 && (*st)->size < size) {
		snprintf(why, whylen, "%s: %llu bytes, too small for a chunk of %llu", where,
			 (unsigned long long)(*st)->size, (unsigned long long)size);
		store_close(*st);
		return -ENOSPC;
	}
	return ret;
}

int fs_mkfs_chunk(const char *volume, const struct fs_chunk_opts *o, const char *where,
		  uint32_t *index, char *why, size_t whylen)
{
	struct od_chunk_header h0, h, old;
	struct chunk_store *st;
	struct od_header_src src;
	uint64_t size, chunk_size;
	int fd, is_blk, ret;

	fd = open(volume, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(why, whylen, "%s: %s", volume, strerror(-ret));
		return ret;
	}
	ret = vol_image_size(fd, &size, &is_blk);
	if (ret == 0) {
		src = od_header_src_fd(fd, size);
		ret = od_header_read(&src, 0, 0, 0, &h0, NULL);
		if (ret < 0)
			snprintf(why, whylen, "%s: not a chunkfs volume (no valid header of chunk 0)",
				 volume);
	} else {
		snprintf(why, whylen, "%s: %s", volume, strerror(-ret));
	}
	close(fd);
	if (ret < 0)
		return ret;
	*index = o->index ? o->index : h0.chunk_count;
	if (*index < h0.chunk_count && !o->force) {
		snprintf(why, whylen, "chunk %u is already part of the volume (it has %u chunks); "
			 "-f to make it anyway", *index, h0.chunk_count);
		return -EEXIST;
	}
	if (*index >= OD_MAX_CHUNKS) {
		snprintf(why, whylen, "a volume has at most %u chunks", OD_MAX_CHUNKS);
		return -EFBIG;
	}
	chunk_size = o->chunk_size ? o->chunk_size : (uint64_t)h0.nblocks * OD_BLOCK_SIZE;
	if ((ret = check_size(chunk_size, why, whylen)) < 0)
		return ret;
	if (o->kind > FS_KIND_LARGE) {
		snprintf(why, whylen, "unknown chunk kind %d", (int)o->kind);
		return -EINVAL;
	}
	ret = open_target(where, chunk_size, &st, why, whylen);
	if (ret < 0)
		return ret;
	/* A chunk header already there is not overwritten without -f. */
	if (!o->force && vol_read_header(st, 0, 0, &old, NULL) == 0) {
		snprintf(why, whylen, "%s holds chunk %u of %s volume; -f to overwrite", where,
			 old.chunk_index,
			 memcmp(old.volume_uuid, h0.volume_uuid, 16) ? "another" : "this");
		store_close(st);
		return -EEXIST;
	}
	fresh_header(&h0, *index, (uint32_t)(chunk_size / OD_BLOCK_SIZE), (uint32_t)o->kind,
		     o->bytes_per_inode, &h);
	ret = write_fresh(st, 0, &h);
	if (ret < 0)
		snprintf(why, whylen, "%s: writing the chunk header: %s", where, strerror(-ret));
	store_close(st);
	return ret;
}

/* --- a live volume grows ------------------------------------------------------ */

/* Chunk c's store and header, checked as open checks a placed chunk's:
 * a valid header of this volume, the index it is to take, a layout this
 * build serves, a store large enough. */
static int check_placed(struct fs_volume *v, uint32_t index, struct chunk_store *st,
			const char *where, struct od_chunk_header *h, char *why, size_t whylen)
{
	char reason[160] = "";
	int ret = vol_read_header(st, 0, 0, h, NULL);

	if (ret < 0) {
		snprintf(why, whylen, "%s holds no chunk header (make one with mkfs.chunkfs "
			 "--add-chunk-of)", where);
		return -EUCLEAN;
	}
	if (memcmp(h->volume_uuid, v->uuid, 16) != 0) {
		snprintf(why, whylen, "%s holds a chunk of another volume", where);
		return -EUCLEAN;
	}
	ret = chunk_check_header(h, index, reason, sizeof(reason));
	if (ret < 0) {
		snprintf(why, whylen, "%s: %s", where, reason);
		return ret;
	}
	if ((uint64_t)h->nblocks * OD_BLOCK_SIZE > st->size) {
		snprintf(why, whylen, "%s: %llu bytes, the chunk needs %llu", where,
			 (unsigned long long)st->size,
			 (unsigned long long)h->nblocks * OD_BLOCK_SIZE);
		return -EUCLEAN;
	}
	if (h->feature_ro_compat & ~OD_FEATURE_RO_COMPAT_SUPP) {
		snprintf(why, whylen, "%s: unknown read-only features 0x%x", where,
			 h->feature_ro_compat);
		return -EROFS;
	}
	return 0;
}

/* The image reaches end (a file grows, sparse; a block device must be that
 * large already). */
static int image_reach(struct fs_volume *v, uint64_t end, char *why, size_t whylen)
{
	uint64_t size;
	int is_blk, ret = vol_image_size(v->fd, &size, &is_blk);

	if (ret < 0) {
		snprintf(why, whylen, "the volume image: %s", strerror(-ret));
		return ret;
	}
	if (size >= end)
		return 0;
	if (is_blk) {
		snprintf(why, whylen, "the volume's device is %llu bytes, the new chunk ends at %llu",
			 (unsigned long long)size, (unsigned long long)end);
		return -ENOSPC;
	}
	if (ftruncate(v->fd, (off_t)end) < 0 || fsync(v->fd) < 0) {
		ret = -errno;
		snprintf(why, whylen, "growing the volume image to %llu bytes: %s",
			 (unsigned long long)end, strerror(-ret));
		return ret;
	}
	return 0;
}

/* Chunk index dropped again (the count did not commit): its store closed
 * and its entry cleared for the next try. */
static void forget_chunk(struct fs_volume *v, struct chunk *c)
{
	if (c->store)
		store_close(c->store);
	chunk_unload(c);
	txn_forget_ondisk(c);
	free(c->place);
	memset(c, 0, sizeof(*c));
	(void)v;
}

void vol_drop_chunks_from(struct fs_volume *v, uint32_t count)
{
	while (v->nchunks > count) {
		uint32_t i = v->nchunks - 1;
		__atomic_store_n(&v->nchunks, i, __ATOMIC_RELEASE);
		forget_chunk(v, &v->chunks[i]);
	}
}

/* Under the volume lock: the new chunk's header in hand (h), its store
 * (NULL: a region of the image at base, made here), the place recorded. */
static int add_locked(struct fs_volume *v, const struct fs_chunk_opts *o, const char *where,
		      struct chunk_store *placed, uint32_t *index, char *why, size_t whylen)
{
	struct chunk *c0 = &v->chunks[0], *last, *c;
	struct od_chunk_header h, ih;
	struct chunk_store *region = NULL;
	uint64_t base, bytes;
	uint32_t k = v->nchunks;
	int ret;

	if (k >= OD_MAX_CHUNKS) {
		snprintf(why, whylen, "the volume has %u chunks, the most it may have", k);
		return -EFBIG;
	}
	/* Everything so far committed: the count goes alone. */
	ret = vol_sync(v, 0);
	if (ret < 0) {
		snprintf(why, whylen, "committing before the new chunk: %s", strerror(-ret));
		return ret;
	}
	if (placed) {
		ret = check_placed(v, k, placed, where ? where : "the store", &h, why, whylen);
		if (ret < 0)
			return ret;
	} else {
		uint64_t size = o->chunk_size ? o->chunk_size : (uint64_t)c0->hdr.nblocks * OD_BLOCK_SIZE;
		if ((ret = check_size(size, why, whylen)) < 0)
			return ret;
		if (o->kind > FS_KIND_LARGE) {
			snprintf(why, whylen, "unknown chunk kind %d", (int)o->kind);
			return -EINVAL;
		}
		fresh_header(&c0->hdr, k, (uint32_t)(size / OD_BLOCK_SIZE), (uint32_t)o->kind,
			     o->bytes_per_inode, &h);
	}
	/* Its region follows the last chunk's, as the layout has it (a placed
	 * chunk's too: the image keeps a copy of its header there, as for the
	 * chunks placed by the configuration, and the next region chunk comes
	 * after it). A volume of stores has no image. */
	last = &v->chunks[k - 1];
	base = last->base + (uint64_t)last->hdr.nblocks * OD_BLOCK_SIZE;
	bytes = (uint64_t)h.nblocks * OD_BLOCK_SIZE;
	ret = v->shared_fd ? image_reach(v, base + bytes, why, whylen) : 0;
	if (ret == 0 && v->shared_fd)
		ret = store_file_region_told(v->fd, v->tfd, base, bytes, &region);
	if (ret == 0 && region) {
		ih = h;
		ret = write_fresh(region, 0, &ih);
		if (ret < 0)
			snprintf(why, whylen, "writing chunk %u's header in the image: %s", k,
				 strerror(-ret));
	}
	/* A region chunk records too (where NULL): a place named for index k
	 * by an add that did not commit must not apply to it. */
	if (ret == 0 && o->record && (where || !placed)) {
		ret = o->record(o->record_ctx, k, where, why, whylen);
		if (ret < 0 && !why[0])
			snprintf(why, whylen, "recording where chunk %u lives: %s", k, strerror(-ret));
	}
	if (ret < 0) {
		if (region)
			store_close(region);
		return ret;
	}
	c = &v->chunks[k];
	memset(c, 0, sizeof(*c));
	c->vol = v;
	c->index = k;
	c->header_heal = -1;
	c->hdr = h;
	c->half = h.nblocks / 2;
	c->base = base;
	if (placed) {
		if (region)
			store_close(region);
		c->store = placed;
		c->place = where ? strdup(where) : NULL;
		if (where && !c->place) {
			c->store = NULL;
			return -ENOMEM;
		}
	} else {
		c->store = region;
		ret = vol_chunk_lock_open(v, c, why, whylen);
		if (ret < 0) {
			c->store = NULL;
			store_close(region);
			return ret;
		}
	}
	__atomic_store_n(&v->nchunks, k + 1, __ATOMIC_RELEASE);
	/* vol_prepare writes every online header with the new count. */
	ret = vol_sync(v, 0);
	if (ret < 0) {
		/* Not committed here (or not known to be): the volume goes on
		 * without it, its headers with the old count again. */
		c->store = placed ? NULL : c->store; /* the caller closes a placed one */
		vol_drop_chunks_from(v, k);
		for (uint32_t i = 0; i < v->nchunks; i++)
			if (!v->chunks[i].offline) {
				v->chunks[i].hdr.chunk_count = k;
				v->chunks[i].header_dirty = 1;
			}
		snprintf(why, whylen, "committing the new chunk count: %s", strerror(-ret));
		return ret;
	}
	*index = k;
	return 0;
}

int fs_add_chunk_store(struct fs_volume *v, const struct fs_chunk_opts *o,
		       struct chunk_store *st, uint32_t *index, char *why, size_t whylen)
{
	int ret;

	why[0] = '\0';
	if (v->rdonly) {
		snprintf(why, whylen, "the volume is open read-only");
		return -EROFS;
	}
	if (v->shared_fd) {
		snprintf(why, whylen, "a volume opened from its image grows with fs_add_chunk");
		return -EOPNOTSUPP;
	}
	vol_lock(v);
	ret = add_locked(v, o, NULL, st, index, why, whylen);
	vol_unlock(v);
	return ret;
}

int fs_add_chunk(struct fs_volume *v, const struct fs_chunk_opts *o, const char *where,
		 uint32_t *index, char *why, size_t whylen)
{
	struct chunk_store *placed = NULL;
	int ret;

	why[0] = '\0';
	if (v->rdonly) {
		snprintf(why, whylen, "the volume is open read-only");
		return -EROFS;
	}
	if (!v->shared_fd) {
		snprintf(why, whylen, "only a volume opened from its image can grow");
		return -EOPNOTSUPP;
	}
	/* A store is opened before the lock: a connect may take a while. */
	if (where) {
		ret = vol_place_open(where, 0, &placed, why, whylen);
		if (ret < 0)
			return ret;
	}
	vol_lock(v);
	ret = add_locked(v, o, where, placed, index, why, whylen);
	vol_unlock(v);
	if (ret < 0 && placed)
		store_close(placed);
	return ret;
}
