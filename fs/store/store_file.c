/* A chunk store on a byte range of a file or block device: the embedded
 * default, where every chunk of a volume is a region of one image. Reads
 * go through the page cache (fd), large ones past it where a direct fd is
 * given (fsck), told ones through a descriptor without read-ahead (tfd,
 * chunkfsd's readers in order). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs/store/store.h"

struct file_store {
	struct chunk_store st;
	int fd;
	int dfd;        /* the same file opened O_DIRECT, or -1 */
	int tfd;        /* the same file with POSIX_FADV_RANDOM, or -1 */
	uint64_t base;
	int owns_fd;    /* store_file_open: fd and tfd are closed with the store */
};

#define DIRECT_ALIGN 4096u
#define DIRECT_MIN (64u << 10) /* smaller reads stay buffered */
#define WILLNEED_STEP (512u << 10) /* within the kernel's cap on any device */

static struct file_store *to_fs(struct chunk_store *st)
{
	return (struct file_store *)st;
}

static int range_ok(struct chunk_store *st, size_t len, uint64_t off)
{
	return off <= st->size && len <= st->size - off;
}

/* 1 when every page of [off, off + len) of fd is in the page cache (a
 * mapping that is never touched, asked with mincore()). */
static int all_cached(int fd, uint64_t off, size_t len)
{
	size_t npages = len / DIRECT_ALIGN;
	unsigned char small[1024], *vec = npages <= sizeof(small) ? small : malloc(npages);
	void *m;
	int all = 0;

	if (!vec)
		return 0;
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);
	if (m != MAP_FAILED) {
		if (mincore(m, len, vec) == 0) {
			size_t i = 0;
			while (i < npages && (vec[i] & 1))
				i++;
			all = i == npages;
		}
		munmap(m, len);
	}
	if (vec != small)
		free(vec);
	return all;
}

/* preadv2 from fd until len bytes are in: flags 0, or RWF_NOWAIT for what
 * the page cache holds (-EAGAIN otherwise, also where the kernel or file
 * system cannot tell without waiting, and for a short read: the waiting
 * read tells what it is). */
static int region_read(struct chunk_store *st, int fd, void *buf, size_t len, uint64_t off,
		       int flags)
{
	struct file_store *fst = to_fs(st);
	uint8_t *p = buf;

	if (!range_ok(st, len, off))
		return -EINVAL;
	/* Large aligned reads of bytes not all in the page cache bypass it
	 * when the store has a direct fd (the kernel writes dirty cached pages
	 * of the range back first). */
	if (!flags && fd == fst->fd && fst->dfd >= 0 && len >= DIRECT_MIN &&
	    !(((uintptr_t)buf | len | (fst->base + off)) & (DIRECT_ALIGN - 1)) &&
	    !all_cached(fst->fd, fst->base + off, len))
		fd = fst->dfd;
	while (len) {
		struct iovec iov = { p, len };
		ssize_t n = preadv2(fd, &iov, 1, (off_t)(fst->base + off), flags);
		if (n < 0 && errno == EINVAL && fd == fst->dfd) {
			fd = fst->fd; /* the file system refuses this direct read */
			continue;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (flags && (errno == EOPNOTSUPP || errno == EWOULDBLOCK))
				return -EAGAIN;
			return -errno;
		}
		if (n == 0) /* the image is shorter than its geometry says */
			return flags ? -EAGAIN : -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static int file_pread(struct chunk_store *st, void *buf, size_t len, uint64_t off)
{
	return region_read(st, to_fs(st)->fd, buf, len, off, 0);
}

static int file_pread_nowait(struct chunk_store *st, void *buf, size_t len, uint64_t off)
{
	return region_read(st, to_fs(st)->fd, buf, len, off, RWF_NOWAIT);
}

static int file_pread_told(struct chunk_store *st, void *buf, size_t len, uint64_t off,
			   int nowait)
{
	return region_read(st, to_fs(st)->tfd, buf, len, off, nowait ? RWF_NOWAIT : 0);
}

static int file_pwrite(struct chunk_store *st, const void *buf, size_t len, uint64_t off)
{
	struct file_store *fst = to_fs(st);
	const uint8_t *p = buf;

	if (!range_ok(st, len, off))
		return -EINVAL;
	while (len) {
		ssize_t n = pwrite(fst->fd, p, len, (off_t)(fst->base + off));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static int file_flush(struct chunk_store *st)
{
	return fdatasync(to_fs(st)->fd) < 0 ? -errno : 0;
}

static int file_trim(struct chunk_store *st, size_t len, uint64_t off)
{
	struct file_store *fst = to_fs(st);

	if (!range_ok(st, len, off))
		return -EINVAL;
	/* Best effort: a file system or device without hole punching keeps
	 * the bytes, which is still correct (trim is only a hint). */
	if (fallocate(fst->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)(fst->base + off), (off_t)len) < 0 &&
	    errno != EOPNOTSUPP && errno != ENODEV)
		return -errno;
	return 0;
}

static void file_close(struct chunk_store *st)
{
	struct file_store *fst = to_fs(st);

	if (fst->owns_fd) {
		close(fst->fd);
		if (fst->tfd >= 0)
			close(fst->tfd);
	}
	free(fst);
}

/* The page cache starts reading the range (readahead by the file's
 * offsets, which the kernel's own cannot do for a chunk's file whose
 * blocks are not in order in the image). */
static void file_willneed(struct chunk_store *st, size_t len, uint64_t off)
{
	struct file_store *fst = to_fs(st);

	if (!range_ok(st, len, off))
		return;
	/* The kernel reads at most its read-ahead size (or the device's
	 * largest request) of one call and drops the rest: several calls. */
	for (size_t done = 0; done < len; done += WILLNEED_STEP) {
		size_t n = len - done < WILLNEED_STEP ? len - done : WILLNEED_STEP;
		posix_fadvise(fst->fd, (off_t)(fst->base + off + done), (off_t)n,
			      POSIX_FADV_WILLNEED);
	}
}

static const struct chunk_store_ops file_ops = {
	.pread = file_pread,
	.pwrite = file_pwrite,
	.flush = file_flush,
	.trim = file_trim,
	.close = file_close,
	.pread_nowait = file_pread_nowait,
	.willneed = file_willneed,
	.pread_told = file_pread_told,
};

static int region_new(int fd, int dfd, int tfd, uint64_t base, uint64_t size,
		      struct chunk_store **out)
{
	struct file_store *fst = calloc(1, sizeof(*fst));

	if (!fst)
		return -ENOMEM;
	fst->st.ops = &file_ops;
	fst->st.told = tfd >= 0;
	fst->st.size = size;
	fst->fd = fd;
	fst->dfd = dfd;
	fst->tfd = tfd;
	fst->base = base;
	*out = &fst->st;
	return 0;
}

int store_file_region_direct(int fd, int dfd, uint64_t base, uint64_t size,
			     struct chunk_store **out)
{
	return region_new(fd, dfd, -1, base, size, out);
}

int store_file_region_told(int fd, int tfd, uint64_t base, uint64_t size,
			   struct chunk_store **out)
{
	return region_new(fd, -1, tfd, base, size, out);
}

int store_file_region(int fd, uint64_t base, uint64_t size, struct chunk_store **out)
{
	return region_new(fd, -1, -1, base, size, out);
}

int store_file_told_fd(int fd)
{
	struct stat a, b;
	char path[64];
	int tfd, ret;

	/* The open file itself, not its name, which may name another file
	 * by now (an image renamed over, a device link moved). */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	tfd = open(path, O_RDONLY | O_CLOEXEC);
	if (tfd < 0)
		return -errno;
	if (fstat(fd, &a) < 0 || fstat(tfd, &b) < 0) {
		ret = -errno;
		goto fail;
	}
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino || a.st_rdev != b.st_rdev) {
		ret = -ESTALE;
		goto fail;
	}
	ret = -posix_fadvise(tfd, 0, 0, POSIX_FADV_RANDOM);
	if (ret == 0)
		return tfd;
fail:
	close(tfd);
	return ret;
}

int store_file_open(const char *path, int rdonly, struct chunk_store **out)
{
	struct stat sb;
	uint64_t size;
	int fd = open(path, (rdonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	int tfd = -1, ret;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) < 0) {
		ret = -errno;
		goto fail;
	}
	if (S_ISBLK(sb.st_mode)) {
		off_t end = lseek(fd, 0, SEEK_END);
		if (end < 0) {
			ret = -errno;
			goto fail;
		}
		size = (uint64_t)end;
	} else if (S_ISREG(sb.st_mode)) {
		size = (uint64_t)sb.st_size;
	} else {
		ret = -EINVAL;
		goto fail;
	}
	/* Told reads are an optimisation: a file that cannot be opened again
	 * is read as before. */
	tfd = store_file_told_fd(fd);
	ret = region_new(fd, -1, tfd, 0, size, out);
	if (ret < 0)
		goto fail;
	to_fs(*out)->owns_fd = 1;
	return 0;
fail:
	if (tfd >= 0)
		close(tfd);
	close(fd);
	return ret;
}
