/* nbdkit-chunkfs-plugin, the data path: pread, pwrite, flush, trim and
 * zero on one chunk's byte range of the image. Each request is checked to
 * lie inside [0, chunk size) before anything is read or written, so no
 * byte outside the chunk is ever touched; offsets are then moved by the
 * chunk's base. pread/pwrite/fdatasync/fallocate are safe to call from
 * several threads on one descriptor (the parallel thread model). */
#include "config.h"

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "chunkfs.h"

/* 0 when [offset, offset + count) is inside the chunk, else an error said. */
static int in_chunk(const struct chunk_handle *h, const char *op, uint32_t count, uint64_t offset)
{
	if (offset <= h->size && count <= h->size - offset)
		return 0;
	nbdkit_error("chunk %u: %s of %u bytes at %llu reaches past the chunk's %llu bytes", h->index,
		     op, count, (unsigned long long)offset, (unsigned long long)h->size);
	nbdkit_set_error(EINVAL);
	return -1;
}

static int sync_data(const struct chunk_handle *h)
{
	if (h->fd < 0 || fdatasync(h->fd) == 0) /* (a retired chunk's: nothing) */
		return 0;
	nbdkit_error("chunk %u: fdatasync: %m", h->index);
	return -1;
}

int chunkfs_pread(void *handle, void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
	struct chunk_handle *h = handle;
	char *p = buf;

	if (in_chunk(h, "read", count, offset) < 0)
		return -1;
	while (count) {
		ssize_t n = pread(h->fd, p, count, (off_t)(h->base + offset));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			nbdkit_error("chunk %u: read at %llu: %m", h->index,
				     (unsigned long long)offset);
			return -1;
		}
		if (n == 0) {
			nbdkit_error("chunk %u: read at %llu: the image ends there", h->index,
				     (unsigned long long)offset);
			nbdkit_set_error(EIO);
			return -1;
		}
		p += n;
		count -= (uint32_t)n;
		offset += (uint64_t)n;
	}
	return 0;
}

int chunkfs_pwrite(void *handle, const void *buf, uint32_t count, uint64_t offset,
		   uint32_t flags)
{
	struct chunk_handle *h = handle;
	const char *p = buf;

	if (in_chunk(h, "write", count, offset) < 0)
		return -1;
	while (count) {
		ssize_t n = pwrite(h->fd, p, count, (off_t)(h->base + offset));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			nbdkit_error("chunk %u: write at %llu: %m", h->index,
				     (unsigned long long)offset);
			return -1;
		}
		p += n;
		count -= (uint32_t)n;
		offset += (uint64_t)n;
	}
	return (flags & NBDKIT_FLAG_FUA) ? sync_data(h) : 0;
}

int chunkfs_flush(void *handle, uint32_t flags)
{
	return sync_data(handle);
}

static int punch(const struct chunk_handle *h, int mode, uint32_t count, uint64_t offset)
{
	for (;;) {
		if (fallocate(h->fd, mode, (off_t)(h->base + offset), (off_t)count) == 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

static int unsupported(int err)
{
	return err == -EOPNOTSUPP || err == -ENOSYS || err == -ENODEV;
}

/* Trim is advisory (the NBD protocol lets a server ignore it): where the
 * image cannot punch holes the bytes stay, which is said in the debug log. */
int chunkfs_trim(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	struct chunk_handle *h = handle;
	int ret;

	if (in_chunk(h, "trim", count, offset) < 0)
		return -1;
	ret = punch(h, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, count, offset);
	if (unsupported(ret)) {
		nbdkit_debug("chunk %u: trim of %u bytes at %llu ignored: the image cannot punch holes",
			     h->index, count, (unsigned long long)offset);
		ret = 0;
	}
	if (ret < 0) {
		errno = -ret;
		nbdkit_error("chunk %u: trim at %llu: %m", h->index, (unsigned long long)offset);
		return -1;
	}
	return (flags & NBDKIT_FLAG_FUA) ? sync_data(h) : 0;
}

/* A hole where trimming is allowed (it reads back as zeroes), else the
 * file system's zero range. Neither available: EOPNOTSUPP, on which nbdkit
 * writes zeroes with pwrite, unless the client asked for a fast zero. */
int chunkfs_zero(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	struct chunk_handle *h = handle;
	int ret = -EOPNOTSUPP;

	if (in_chunk(h, "zero", count, offset) < 0)
		return -1;
	if (flags & NBDKIT_FLAG_MAY_TRIM)
		ret = punch(h, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, count, offset);
	if (unsupported(ret) || ret == -EINVAL)
		ret = punch(h, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, count, offset);
	if (unsupported(ret) || ret == -EINVAL) {
		/* EINVAL: fallocate(2) says a mode the file system lacks may give it. */
		nbdkit_set_error(EOPNOTSUPP);
		return -1;
	}
	if (ret < 0) {
		errno = -ret;
		nbdkit_error("chunk %u: zero at %llu: %m", h->index, (unsigned long long)offset);
		return -1;
	}
	return (flags & NBDKIT_FLAG_FUA) ? sync_data(h) : 0;
}
