/* OFD byte-range locks on chunk ranges (see chunk_lock.h): the one place
 * that calls fcntl(F_OFD_*). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>

#include "fs/format/chunk_lock.h"

static int fill_flock(struct flock *fl, short type, uint64_t base, uint64_t size)
{
	/* off_t is signed: a range past its largest value cannot be named. */
	if (base > (uint64_t)INT64_MAX || size > (uint64_t)INT64_MAX - base)
		return -EOVERFLOW;
	memset(fl, 0, sizeof(*fl));
	fl->l_type = type;
	fl->l_whence = SEEK_SET;
	fl->l_start = (off_t)base;
	fl->l_len = (off_t)size;
	fl->l_pid = 0; /* F_OFD_* require 0 */
	return 0;
}

static int ofd_fcntl(int fd, int cmd, struct flock *fl)
{
	for (;;) {
		if (fcntl(fd, cmd, fl) == 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

int chunk_lock_try(int fd, uint64_t base, uint64_t size, int write)
{
	struct flock fl;
	int ret = fill_flock(&fl, write ? F_WRLCK : F_RDLCK, base, size);

	if (ret < 0)
		return ret;
	ret = ofd_fcntl(fd, F_OFD_SETLK, &fl);
	/* fcntl(2): a conflicting lock gives EAGAIN or EACCES. */
	return ret == -EACCES ? -EAGAIN : ret;
}

int chunk_unlock(int fd, uint64_t base, uint64_t size)
{
	struct flock fl;
	int ret = fill_flock(&fl, F_UNLCK, base, size);

	return ret < 0 ? ret : ofd_fcntl(fd, F_OFD_SETLK, &fl);
}

int chunk_lock_query(int fd, uint64_t base, uint64_t size, int write, int *holder)
{
	struct flock fl;
	int ret = fill_flock(&fl, write ? F_WRLCK : F_RDLCK, base, size);

	if (ret == 0)
		ret = ofd_fcntl(fd, F_OFD_GETLK, &fl);
	if (ret < 0)
		return ret;
	switch (fl.l_type) {
	case F_UNLCK:
		*holder = CHUNK_LOCK_FREE;
		return 0;
	case F_RDLCK:
		*holder = CHUNK_LOCK_READER;
		return 0;
	case F_WRLCK:
		*holder = CHUNK_LOCK_WRITER;
		return 0;
	}
	return -EPROTO; /* the kernel answered with a type fcntl(2) does not list */
}

const char *chunk_lock_holder_str(int holder)
{
	switch (holder) {
	case CHUNK_LOCK_FREE:
		return "not locked by another process";
	case CHUNK_LOCK_READER:
		return "locked for reading by another process";
	case CHUNK_LOCK_WRITER:
		return "locked for writing by another process";
	}
	return "locked by another process";
}
