/* File data: reading, writing, truncating and releasing a regular file
 * through its chain of continuation inodes (fs/chain.c), and the public
 * entry points fs_read, fs_write and fs_commit. Small files written in one
 * go at creation keep their data inline in the directory entry; any later
 * change moves it out for good. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/chain.h"

int file_fill_new(struct fs_volume *v, struct iref *r, const uint8_t *data, uint32_t len)
{
	struct fchain fc;
	int ret = chain_load(v, r, &fc);

	if (ret < 0)
		return ret;
	ret = chain_alloc(v, &fc, 0, (len + OD_BLOCK_SIZE - 1) >> OD_BLOCK_SHIFT);
	if (ret == 0 && (len & (OD_BLOCK_SIZE - 1)))
		ret = chain_zero_new_partial(v, &fc, len >> OD_BLOCK_SHIFT);
	if (ret == 0)
		ret = chain_rw(v, &fc, 0, len, (uint8_t *)data, 1);
	if (ret == 0)
		ret = chain_store(v, &fc, r);
	if (ret < 0)
		chain_undo(v, &fc);
	chain_release(&fc);
	return ret;
}

/* Move inline data out of the directory entry into a data block. */
int file_uninline(struct fs_volume *v, struct iref *r)
{
	uint32_t len = r->ino.inline_len;
	uint8_t *data;
	int ret;

	if (!(r->ino.flags & OD_INF_INLINE))
		return 0;
	data = malloc(len ? len : 1);
	if (!data)
		return -ENOMEM;
	ret = dir_read_inline(v, r, data, len);
	if (ret < 0)
		goto out;
	r->ino.flags &= ~OD_INF_INLINE;
	r->ino.inline_len = 0;
	ret = file_fill_new(v, r, data, len);
out:
	if (ret < 0) {
		r->ino.flags |= OD_INF_INLINE;
		r->ino.inline_len = len;
	}
	free(data);
	return ret;
}

int file_truncate(struct fs_volume *v, struct iref *r, uint64_t size)
{
	struct fchain fc;
	int ret = file_uninline(v, r);

	if (ret < 0)
		return ret;
	r->ino.flags &= ~OD_INF_FRESH;
	if (size < r->ino.size) {
		ret = chain_load(v, r, &fc);
		if (ret < 0)
			return ret;
		/* The copy first: when it finds no block, nothing has changed. */
		ret = chain_cow_tail(v, &fc, size);
		if (ret == 0)
			ret = chain_cut(v, &fc, (size + OD_BLOCK_SIZE - 1) >> OD_BLOCK_SHIFT);
		if (ret == 0)
			ret = chain_store(v, &fc, r);
		/* Failed: nothing was freed yet, the new tail block goes. */
		if (ret < 0)
			chain_undo(v, &fc);
		else
			ret = chain_free_gone(v, &fc);
		chain_release(&fc);
		if (ret < 0)
			return ret;
	}
	r->ino.size = size;
	return 0;
}

int file_release(struct fs_volume *v, struct iref *r)
{
	struct fchain fc;
	int ret;

	if (!S_ISREG(r->ino.mode) && !S_ISLNK(r->ino.mode))
		return 0;
	r->ino.flags &= ~OD_INF_INLINE;
	r->ino.inline_len = 0;
	ret = chain_load(v, r, &fc);
	if (ret < 0)
		return ret;
	ret = chain_cut(v, &fc, 0);
	if (ret == 0)
		ret = chain_store(v, &fc, r);
	if (ret == 0)
		ret = chain_free_gone(v, &fc);
	chain_release(&fc);
	return ret;
}

/* The chain's new extents stored, before any data goes to the blocks they
 * map, with the size raised to end when below it: on failure the size is
 * as it was and what this operation allocated is given back. */
int file_store_grown(struct fs_volume *v, struct fchain *fc, struct iref *r, uint64_t end)
{
	uint64_t old_size = r->ino.size;
	int ret;

	if (end > r->ino.size)
		r->ino.size = end;
	ret = chain_store(v, fc, r);
	if (ret < 0) {
		r->ino.size = old_size;
		chain_undo(v, fc);
	}
	return ret;
}

/* Try to keep a fresh, empty, embedded file's first write inline. */
static int try_inline(struct fs_volume *v, struct iref *r, uint64_t off, size_t len,
		      const void *buf)
{
	if (!(r->ino.flags & OD_INF_FRESH) || off != 0 || r->ino.size != 0 || len == 0 ||
	    !S_ISREG(r->ino.mode) || r->ino.ext_block || r->ino.nextents)
		return -EAGAIN;
	return dir_set_inline(v, r, buf, (uint32_t)len);
}

int file_write(struct fs_volume *v, struct iref *r, uint64_t off, size_t len, const void *buf)
{
	struct fchain fc;
	uint64_t first, last, end = off + len;
	int ret;

	if (len == 0)
		return 0;
	ret = try_inline(v, r, off, len, buf);
	if (ret != -EAGAIN)
		return ret;
	r->ino.flags &= ~OD_INF_FRESH;
	ret = file_uninline(v, r);
	if (ret < 0)
		return ret;
	ret = chain_load(v, r, &fc);
	if (ret < 0)
		return ret;
	first = off >> OD_BLOCK_SHIFT;
	last = (end - 1) >> OD_BLOCK_SHIFT;
	ret = chain_alloc(v, &fc, first, last - first + 1);
	if (ret == 0 && (off & (OD_BLOCK_SIZE - 1)))
		ret = chain_zero_new_partial(v, &fc, first);
	if (ret == 0 && (end & (OD_BLOCK_SIZE - 1)) && (last != first || !(off & (OD_BLOCK_SIZE - 1))))
		ret = chain_zero_new_partial(v, &fc, last);
	/* The extents (which may need extent units) before the data: when
	 * there is no room for them, no byte of the file has changed. */
	if (ret == 0)
		ret = file_store_grown(v, &fc, r, end);
	else
		chain_undo(v, &fc);
	if (ret == 0)
		ret = chain_rw(v, &fc, off, len, (uint8_t *)buf, 1);
	chain_release(&fc);
	return ret;
}

/* Delayed allocation's placement (fs/dalloc.c): n whole pages for file
 * blocks [first, first + n), mapped in one allocation (the run's size
 * known, so the allocator can give it one extent), and the size raised to
 * end (at most the run's end) when below it. As file_write, the extents
 * are stored before the data is written. */
#define PLACE_BOUNCE (256u * OD_BLOCK_SIZE)

int file_place_run(struct fs_volume *v, struct iref *r, uint8_t *const *pages, uint64_t first,
		   uint32_t n, uint64_t end)
{
	struct fchain fc;
	uint8_t *bounce;
	int ret;

	r->ino.flags &= ~OD_INF_FRESH;
	ret = file_uninline(v, r);
	if (ret < 0)
		return ret;
	bounce = malloc(n < 256 ? (size_t)n * OD_BLOCK_SIZE : PLACE_BOUNCE);
	if (!bounce)
		return -ENOMEM;
	ret = chain_load(v, r, &fc);
	if (ret < 0) {
		free(bounce);
		return ret;
	}
	ret = chain_alloc(v, &fc, first, n);
	if (ret == 0)
		ret = file_store_grown(v, &fc, r, end);
	else
		chain_undo(v, &fc);
	for (uint32_t i = 0; ret == 0 && i < n;) {
		uint32_t k = n - i < 256 ? n - i : 256;
		for (uint32_t j = 0; j < k; j++)
			memcpy(bounce + (size_t)j * OD_BLOCK_SIZE, pages[i + j], OD_BLOCK_SIZE);
		ret = chain_rw(v, &fc, (first + i) * OD_BLOCK_SIZE, (size_t)k * OD_BLOCK_SIZE, bounce,
			       1);
		i += k;
	}
	chain_release(&fc);
	free(bounce);
	return ret;
}

int file_read(struct fs_volume *v, const struct iref *r, uint64_t off, size_t len, void *buf,
	      int told)
{
	struct fchain fc;
	int ret;

	if (r->ino.flags & OD_INF_INLINE) {
		uint8_t *tmp = malloc(r->ino.inline_len ? r->ino.inline_len : 1);
		if (!tmp)
			return -ENOMEM;
		ret = dir_read_inline(v, r, tmp, r->ino.inline_len);
		if (ret == 0)
			memcpy(buf, tmp + off, len);
		free(tmp);
		return ret;
	}
	ret = chain_load(v, r, &fc);
	if (ret < 0)
		return ret;
	ret = chain_rw(v, &fc, off, len, buf, told ? CHAIN_READ_TOLD : 0);
	chain_release(&fc);
	return ret;
}

/* --- the public entry points --------------------------------------------- */

#define FS_MAX_FILE_SIZE (1ull << 44)

static int data_inode(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino id, int mask,
		      struct iref *r)
{
	int ret = ino_get(v, id, r);

	if (ret < 0)
		return ret;
	if (S_ISDIR(r->ino.mode))
		return -EISDIR;
	if (!S_ISREG(r->ino.mode))
		return -EINVAL;
	return data_perm_check(cred, &r->ino, mask);
}

/* Data blocks are read without the volume lock (read_unlocked.c), unless
 * the thread holds it for a nowait section or the blocks may have been
 * reused meanwhile: then the read is made again with the lock held. */
int fs_read(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino id, uint64_t offset,
	    size_t len, void *buf, size_t *nread, int *eof)
{
	int may_unlock = !vol_nowait(v), told;
	uint64_t size;
	struct iref r;
	size_t n;
	int ret;

again:
	vol_lock(v);
	ret = data_inode(v, cred, id, 4, &r);
	if (ret < 0)
		goto out;
	/* Buffered data (delayed allocation, fs/dalloc.c) counts, and a
	 * file holding some is read under the lock: its pages are the
	 * volume's memory. */
	size = dalloc_size(v, &r);
	n = offset >= size ? 0 : len > size - offset ? (size_t)(size - offset) : len;
	if (n && may_unlock && !(r.ino.flags & OD_INF_INLINE) && !dalloc_has(v, r.ino.stable)) {
		ret = file_read_unlocked(v, &r, offset, n, buf); /* unlocks */
		if (ret == -ESTALE) {
			may_unlock = 0;
			goto again;
		}
		goto done;
	}
	/* A read here (nowait, buffered data, inline, again after -ESTALE)
	 * is noted as the reader's too; it cannot tell the stores ahead, so
	 * a nowait one leaves a reader due to tell to a worker (the hint
	 * may wait for the device), which reads it again and tells. */
	told = n && !(r.ino.flags & OD_INF_INLINE) &&
	       file_ra_window(v, r.ino.stable, offset, n, size, NULL, NULL);
	if (told && vol_nowait(v) && file_ra_due(v, r.ino.stable, size)) {
		ret = vol_would_wait();
		goto out;
	}
	ret = n ? dalloc_read(v, &r, offset, n, buf, told) : 0;
out:
	vol_unlock(v);
done:
	if (ret == 0) {
		*nread = n;
		*eof = offset + n >= size;
	}
	return ret;
}

int fs_write(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino id, uint64_t offset,
	     size_t len, const void *buf, enum fs_stable_how stable, struct fs_attr *post)
{
	struct iref r;
	int ret, relieve = 0;

	if (v->rdonly)
		return -EROFS;
	vol_lock(v);
	ret = data_inode(v, cred, id, 2, &r);
	if (ret < 0)
		goto out;
	if (offset > FS_MAX_FILE_SIZE || len > FS_MAX_FILE_SIZE - offset) {
		ret = -EFBIG;
		goto out;
	}
	/* Delayed allocation: UNSTABLE data waits in memory for its
	 * placement (fs/dalloc.c). A stable write, or one not buffered (no
	 * room kept for it, buffering off), places the file's buffered
	 * pages and then goes to disk now: when it fails, none of its bytes
	 * is left anywhere. */
	if (dalloc_tight(v, len ? (offset + len - 1) / OD_BLOCK_SIZE - offset / OD_BLOCK_SIZE + 1 : 0)) {
		/* (a file that cannot be placed stays buffered, to be tried
		 * again: its commit reports the error) */
		(void)dalloc_place_all(v, DA_SYNC);
		ret = ino_get(v, id, &r);
		if (ret < 0)
			goto out;
	}
	/* A fresh file's first write goes inline in its entry at once when it
	 * fits (no block to place; later, the entries after it would leave
	 * it no room to grow into). */
	ret = stable == FS_UNSTABLE && !dalloc_has(v, r.ino.stable) ? try_inline(v, &r, offset, len, buf)
								     : -EAGAIN;
	if (ret != -EAGAIN)
		goto written;
	ret = stable == FS_UNSTABLE ? dalloc_write(v, &r, offset, len, buf) : -EAGAIN;
	if (ret == -EAGAIN) {
		int direct = 1;
		ret = dalloc_place(v, r.ino.stable);
		/* placement changed the inode (also when it failed part way):
		 * what is written below is the new one */
		{
			int gret = ino_get(v, id, &r);
			if (gret < 0)
				goto out;
			if (ret == 0 && direct && len) {
				/* A failed write may still have moved inline
				 * data out to a block: the inode is written
				 * either way, before any retry commits. */
				ret = file_write(v, &r, offset, len, buf);
				/* (chain_alloc gave reservations back one
				 * by one first; the retry gives back what
				 * is left, fs/prealloc.c) */
				if (ret == -ENOSPC && ino_write(v, &r) == 0 && vol_enospc_retry(v))
					ret = file_write(v, &r, offset, len, buf);
			}
		}
	}
written:
	if (ret == 0 && len) {
		ino_touch(&r.ino, 0, 1, 1);
		attr_kill_priv(cred, &r.ino);
	}
	{
		int wret = ino_write(v, &r);
		if (ret == 0)
			ret = wret;
	}
	if (ret < 0)
		goto out;
	/* Over the byte cap: the oldest buffered files are placed, after
	 * the lock is left (one file per hold; failures are theirs). */
	if (ret == 0 && dalloc_over_limit(v))
		relieve = 1;
	if (ret == 0 && stable != FS_UNSTABLE) {
		vol_pred_observe(v, &r);
		ret = vol_sync(v, 0);
		if (ret == 0 && !dalloc_has(v, r.ino.stable))
			prealloc_committed(v, r.ino.stable); /* (FS_PREALLOC_TRIM) */
	}
	if (ret == 0 && post && (ret = ino_get(v, id, &r)) == 0)
		vol_attr(v, &r.ino, post);
out:
	vol_unlock(v);
	if (relieve)
		dalloc_relieve(v);
	return ret;
}

int fs_commit(struct fs_volume *v, struct fs_ino id)
{
	struct iref r;
	int ret;

	vol_lock(v);
	ret = ino_get(v, id, &r);
	if (ret == 0)
		ret = dalloc_place_wait(v, id.num);
	if (ret == 0)
		ret = ino_get(v, id, &r); /* its size placed */
	if (ret == 0) {
		vol_pred_observe(v, &r);
		ret = vol_sync(v, 0);
	}
	if (ret == 0 && !dalloc_has(v, id.num))
		prealloc_committed(v, id.num); /* (FS_PREALLOC_TRIM) */
	vol_unlock(v);
	return ret;
}
