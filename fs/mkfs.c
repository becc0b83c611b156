/* Making a volume (fs_mkfs): the options checked, the image sized (and
 * written in full with --preallocate), every chunk's header pair written,
 * then the volume opened once to make the root directory and lost+found. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/format/chunk_lock.h"
#include "fs/format/signature.h"
#include "fs/format/vol_probe.h"
#include "fs/internal.h"
#include "fs/lostfound.h"

static int fill_random(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Zeros over the first len bytes of the file fd. Space is reserved first,
 * so a host file system without room fails at once rather than part way;
 * the zeros are written, not only reserved, because a reserved (unwritten)
 * extent still costs the host a metadata change on its first write. */
static int write_zeros(int fd, uint64_t len)
{
	const size_t step = 1u << 20;
	uint64_t off = 0;
	void *zero;
	int ret = posix_fallocate(fd, 0, (off_t)len);

	if (ret != 0 && ret != EOPNOTSUPP && ret != EINVAL)
		return -ret;
	zero = calloc(1, step);
	if (!zero)
		return -ENOMEM;
	ret = 0;
	while (off < len) {
		size_t n = len - off < step ? (size_t)(len - off) : step;
		ssize_t w = pwrite(fd, zero, n, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			ret = w < 0 ? -errno : -EIO;
			break;
		}
		off += (uint64_t)w;
	}
	free(zero);
	return ret;
}

static int write_header_copies(int fd, uint64_t base, const struct od_chunk_header *h)
{
	uint8_t blk[OD_BLOCK_SIZE];
	struct od_mb_header mh = {
		.magic = OD_MB_MAGIC,
		.type = OD_MB_CHUNK_HEADER,
		.units = 1,
		.chunk = h->chunk_index,
		.block = 0,
	};
	uint64_t offs[2] = { base, base + (uint64_t)(h->nblocks / 2) * OD_BLOCK_SIZE };

	memset(blk, 0, sizeof(blk));
	od_put_mb_header(blk, &mh);
	od_put_chunk_header(blk, h);
	od_seal(blk, sizeof(blk));
	for (int i = 0; i < 2; i++)
		if (pwrite(fd, blk, sizeof(blk), (off_t)offs[i]) != (ssize_t)sizeof(blk))
			return errno ? -errno : -EIO;
	return 0;
}

static int mkfs_check_opts(const struct fs_mkfs_opts *o, uint64_t *chunk_size, uint32_t *count,
			   uint32_t *bpi)
{
	*chunk_size = o->chunk_size ? o->chunk_size : (1ull << 30);
	if (*chunk_size < OD_MIN_CHUNK_SIZE || *chunk_size > OD_MAX_CHUNK_SIZE ||
	    (*chunk_size & (*chunk_size - 1)))
		return -EINVAL;
	if (o->chunk_count) {
		*count = o->chunk_count;
	} else {
		if (o->total_size < *chunk_size)
			return -EINVAL;
		if (o->total_size / *chunk_size > OD_MAX_CHUNKS)
			return -EFBIG;
		*count = (uint32_t)(o->total_size / *chunk_size);
	}
	if (*count == 0 || *count > OD_MAX_CHUNKS)
		return -EINVAL;
	*bpi = o->bytes_per_inode ? o->bytes_per_inode : 16384;
	if (*bpi < 1024 || *bpi > (64u << 20))
		return -EINVAL;
	if (o->label && strlen(o->label) > 31)
		return -ENAMETOOLONG;
	return 0;
}

/* The root directory: number 1 of chunk 0 (every header says so from the
 * start), in an inode-area slot; and /lost+found (fs/lostfound.c). Only
 * chunk 0 is written. */
static int mkfs_root(struct fs_volume *v)
{
	struct chunk *c0 = &v->chunks[0];
	struct iref r;
	uint64_t stable;
	uint32_t gen;
	int ret;

	memset(&r, 0, sizeof(r));
	ret = slot_take(c0, &r.loc);
	if (ret == 0)
		ret = map_alloc(c0, r.loc, &stable, &gen);
	if (ret < 0)
		return ret;
	if (stable != c0->hdr.root_stable)
		return -EUCLEAN; /* the headers named another number */
	r.ino.stable = stable;
	r.ino.generation = gen;
	r.ino.mode = S_IFDIR | 0755;
	r.ino.nlink = 2;
	r.ino.parent = stable;
	r.ino.next.chunk = OD_LOC_NONE;
	ino_touch(&r.ino, 1, 1, 1);
	ret = ino_write(v, &r);
	if (ret == 0)
		ret = lf_mkfs(v, &r);
	if (ret < 0)
		return ret;
	v->root = stable;
	return 0;
}

int fs_mkfs(const char *path, const struct fs_mkfs_opts *o)
{
	struct od_chunk_header h;
	struct fs_volume *v;
	uint64_t chunk_size, size = 0;
	uint32_t count, bpi;
	const char *sig;
	int fd, is_blk, ret;

	ret = mkfs_check_opts(o, &chunk_size, &count, &bpi);
	if (ret < 0)
		return ret;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	/* The whole image, to its end: refused while anyone has a chunk open. */
	ret = chunk_lock_try(fd, 0, 0, 1);
	if (ret < 0) {
		ret = ret == -EAGAIN ? -EBUSY : ret;
		goto out;
	}
	ret = vol_image_size(fd, &size, &is_blk);
	if (ret < 0)
		goto out;
	if (!o->force && (ret = fs_probe_signature(fd, &sig)) != 0) {
		ret = ret > 0 ? -EEXIST : ret;
		goto out;
	}
	if (is_blk && size < chunk_size * count) {
		ret = -ENOSPC;
		goto out;
	}
	/* A file is emptied and regrown sparse: nothing old survives. */
	if (!is_blk && (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)(chunk_size * count)) < 0)) {
		ret = -errno;
		goto out;
	}
	if (!is_blk && o->preallocate && (ret = write_zeros(fd, chunk_size * count)) < 0)
		goto out;
	memset(&h, 0, sizeof(h));
	h.version = OD_FORMAT_VERSION;
	h.chunk_count = count;
	h.state = OD_STATE_CLEAN;
	h.flags = OD_CHF_BITMAP_UNINIT | (o->single_copy ? OD_CHF_SINGLE_COPY : 0);
	h.feature_incompat = OD_FEATURE_INCOMPAT_HELD_ENTRIES;
	h.mkfs_time = (uint64_t)time(NULL);
	h.root_stable = OD_STABLE(0, 0); /* mkfs_root's: chunk 0's first map entry */
	if (o->label)
		memcpy(h.label, o->label, strlen(o->label));
	if ((ret = fill_random(h.volume_uuid, sizeof(h.volume_uuid))) < 0 ||
	    (ret = fill_random(h.secret, sizeof(h.secret))) < 0)
		goto out;
	chunk_geometry(&h, (uint32_t)(chunk_size / OD_BLOCK_SIZE), bpi);
	for (uint32_t i = 0; i < count; i++) {
		h.chunk_index = i;
		h.kind = o->kinds ? (uint32_t)o->kinds[i] : (uint32_t)o->kind;
		if (h.kind > FS_KIND_LARGE) {
			ret = -EINVAL;
			goto out;
		}
		ret = write_header_copies(fd, (uint64_t)i * chunk_size, &h);
		if (ret < 0)
			goto out;
	}
	if (fsync(fd) < 0) {
		ret = -errno;
		goto out;
	}
	close(fd);
	fd = -1;
	ret = fs_open(path, 0, &v);
	if (ret < 0)
		return ret;
	vol_lock(v);
	ret = mkfs_root(v);
	vol_unlock(v);
	if (ret < 0) {
		fs_close(v);
		return ret;
	}
	return fs_close(v);
out:
	if (fd >= 0)
		close(fd);
	return ret;
}
