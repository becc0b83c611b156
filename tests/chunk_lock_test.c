/* The chunk locks (fs/format/chunk_lock.c, fs/vol_chunk_lock.c, fs/fsck/fsck_lock.c):
 * OFD locks of two descriptors of one file conflict as fcntl(2) says; a
 * volume holds a write lock on each online chunk (a read lock read-only)
 * and none on a chunk it found offline; a second open, mkfs and fsck are
 * refused with EBUSY and the exact reason; one chunk's lock is released
 * and taken back for the offline state machine. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/format/chunk_lock.h"
#include "fs/fsck/fsck.h"
#include "fs/internal.h"
#include "tap.h"

#define MIB (1u << 20)

static char image[256];

static int opener(int write)
{
	int fd = open(image, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);

	CHECK(fd >= 0);
	return fd;
}

static void test_fd_locks(void)
{
	int a = opener(1), b = opener(1), holder = -1;

	CHECK_EQ(chunk_lock_try(a, MIB, MIB, 1), 0);
	CHECK_EQ(chunk_lock_try(b, MIB, MIB, 1), -EAGAIN);
	CHECK_EQ(chunk_lock_try(b, MIB, MIB, 0), -EAGAIN);
	/* Only the range: the bytes before and after are free. */
	CHECK_EQ(chunk_lock_try(b, 0, MIB, 1), 0);
	CHECK_EQ(chunk_lock_try(b, 2 * MIB, MIB, 1), 0);
	CHECK_EQ(chunk_lock_try(b, MIB - 1, 2, 0), -EAGAIN);
	CHECK_EQ(chunk_lock_query(b, MIB, MIB, 0, &holder), 0);
	CHECK_EQ(holder, CHUNK_LOCK_WRITER);
	/* Its own locks never stand in the way of a descriptor. */
	CHECK_EQ(chunk_lock_query(a, MIB, MIB, 1, &holder), 0);
	CHECK_EQ(holder, CHUNK_LOCK_FREE);
	/* A write lock taken again as a read lock: now readers share. */
	CHECK_EQ(chunk_lock_try(a, MIB, MIB, 0), 0);
	CHECK_EQ(chunk_lock_try(b, MIB, MIB, 0), 0);
	CHECK_EQ(chunk_unlock(b, MIB, MIB), 0);
	CHECK_EQ(chunk_lock_query(b, MIB, MIB, 1, &holder), 0);
	CHECK_EQ(holder, CHUNK_LOCK_READER);
	CHECK_EQ(chunk_lock_query(b, MIB, MIB, 0, &holder), 0);
	CHECK_EQ(holder, CHUNK_LOCK_FREE);
	CHECK_EQ(chunk_lock_try(b, MIB, MIB, 1), -EAGAIN);
	/* Closing the descriptor drops its locks. */
	close(a);
	CHECK_EQ(chunk_lock_try(b, MIB, MIB, 1), 0);
	/* size 0: to the end of the file and beyond. */
	a = opener(1);
	CHECK_EQ(chunk_lock_try(a, 100 * MIB, 0, 1), 0);
	CHECK_EQ(chunk_lock_try(b, 4096ull * MIB, 1, 0), -EAGAIN);
	CHECK_EQ(chunk_lock_try(b, 0, 0, 1), -EAGAIN);
	CHECK_EQ(chunk_lock_try(a, (uint64_t)INT64_MAX, 2, 1), -EOVERFLOW);
	close(a);
	close(b);
	CHECK(strcmp(chunk_lock_holder_str(CHUNK_LOCK_WRITER),
		     "locked for writing by another process") == 0);
	CHECK(strcmp(chunk_lock_holder_str(CHUNK_LOCK_READER),
		     "locked for reading by another process") == 0);
	CHECK(strcmp(chunk_lock_holder_str(-1), "locked by another process") == 0);
}

static void test_volume_locks(void)
{
	const char *busy0 = "chunk 0 (bytes 0 to 1048575 of the image) is in use: locked for "
			    "writing by another process (chunkfsd, nbdkit chunkfs or fsck.chunkfs "
			    "has it open)";
	struct fs_volume *v = NULL, *w = NULL;
	int fd, holder = -1;
	char why[512];

	CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
	if (!v)
		return;
	fd = opener(1);
	for (uint32_t i = 0; i < 4; i++) {
		CHECK_EQ(chunk_lock_query(fd, (uint64_t)i * MIB, MIB, 0, &holder), 0);
		CHECK_EQ(holder, CHUNK_LOCK_WRITER);
		CHECK_EQ(v->chunks[i].locked, 1);
	}
	/* A second open, for writing or for reading, is refused. */
	CHECK_EQ(fs_open_ex(image, 0, &w, why, sizeof(why)), -EBUSY);
	CHECK(strcmp(why, busy0) == 0);
	CHECK_EQ(fs_open_ex(image, FS_OPEN_RDONLY, &w, why, sizeof(why)), -EBUSY);
	CHECK(strcmp(why, busy0) == 0);
	{
		struct fs_mkfs_opts o = { .chunk_size = MIB, .chunk_count = 4, .force = 1 };
		CHECK_EQ(fs_mkfs(image, &o), -EBUSY);
	}
	/* Chunk 2 let go: another open file description may take it, not
	 * chunk 1; taking it back waits for that one to let go. */
	CHECK_EQ(vol_chunk_release(v, 2), 0);
	CHECK_EQ(vol_chunk_release(v, 2), 0);
	CHECK_EQ(v->chunks[2].locked, 0);
	CHECK_EQ(chunk_lock_try(fd, 2 * MIB, MIB, 1), 0);
	CHECK_EQ(chunk_lock_try(fd, 1 * MIB, MIB, 0), -EAGAIN);
	CHECK_EQ(vol_chunk_reacquire(v, 2, why, sizeof(why)), -EBUSY);
	CHECK(strcmp(why, "chunk 2 (bytes 2097152 to 3145727 of the image) is in use: locked "
			  "for writing by another process (chunkfsd, nbdkit chunkfs or "
			  "fsck.chunkfs has it open)") == 0);
	CHECK_EQ(v->chunks[2].locked, 0);
	CHECK_EQ(chunk_unlock(fd, 2 * MIB, MIB), 0);
	CHECK_EQ(vol_chunk_reacquire(v, 2, why, sizeof(why)), 0);
	CHECK_EQ(vol_chunk_reacquire(v, 2, why, sizeof(why)), 0);
	CHECK_EQ(v->chunks[2].locked, 1);
	CHECK_EQ(chunk_lock_try(fd, 2 * MIB, MIB, 0), -EAGAIN);
	CHECK_EQ(vol_chunk_release(v, 4), -EINVAL);
	CHECK_EQ(vol_chunk_reacquire(v, 4, why, sizeof(why)), -EINVAL);
	CHECK_EQ(fs_close(v), 0);
	/* Closed: everything is free. */
	CHECK_EQ(chunk_lock_try(fd, 0, 0, 1), 0);
	close(fd);

	/* Read-only opens share; a writer is refused beside them. */
	CHECK_EQ(fs_open_ex(image, FS_OPEN_RDONLY, &v, why, sizeof(why)), 0);
	CHECK_EQ(fs_open_ex(image, FS_OPEN_RDONLY, &w, why, sizeof(why)), 0);
	if (w)
		CHECK_EQ(fs_close(w), 0);
	w = NULL;
	CHECK_EQ(fs_open_ex(image, 0, &w, why, sizeof(why)), -EBUSY);
	CHECK(strcmp(why, "chunk 0 (bytes 0 to 1048575 of the image) is in use: locked for "
			  "reading by another process (chunkfsd, nbdkit chunkfs or fsck.chunkfs "
			  "has it open)") == 0);
	if (v)
		CHECK_EQ(fs_close(v), 0);
}

static void fsck_line(void *ctx, const char *line)
{
	char *last = ctx;

	snprintf(last, 512, "%s", line);
}

static void test_fsck_locks(void)
{
	struct fsck_opts o = { .mode = FSCK_CHECK_ONLY, .out = fsck_line };
	struct fsck_result res;
	struct fs_volume *v = NULL;
	char last[512] = "", why[512];

	o.ctx = last;
	CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
	if (!v)
		return;
	CHECK_EQ(fsck_volume_path(image, -1, &o, &res), -EBUSY);
	CHECK_EQ(res.exit_code, FSCK_EXIT_OPERATIONAL);
	CHECK(strcmp(last, "chunk 0 is in use: locked for writing by another process (chunkfsd "
			   "has it online, or nbdkit chunkfs or another fsck.chunkfs has it open); "
			   "take it offline or stop that process first") == 0);
	/* Chunk 3 let go: fsck -y may check it alone, but not chunk 1. */
	CHECK_EQ(vol_chunk_release(v, 3), 0);
	o.mode = FSCK_YES;
	CHECK_EQ(fsck_volume_path(image, 1, &o, &res), -EBUSY);
	CHECK(strncmp(last, "chunk 1 is in use: locked for writing", 37) == 0);
	CHECK_EQ(fsck_volume_path(image, 3, &o, &res), 0);
	CHECK_EQ(res.exit_code, 0);
	/* While fsck ran, the chunk was its own: now the volume takes it back. */
	CHECK_EQ(vol_chunk_reacquire(v, 3, why, sizeof(why)), 0);
	CHECK_EQ(fs_close(v), 0);
}

/* A chunk found offline at open is not locked by the volume. */
static void test_offline_unlocked(void)
{
	static const uint8_t junk[8] = { 0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef };
	struct fs_volume *v = NULL;
	char why[512];
	int fd = opener(1);

	CHECK_EQ(pwrite(fd, junk, sizeof(junk), 3 * MIB + 100), (ssize_t)sizeof(junk));
	CHECK_EQ(pwrite(fd, junk, sizeof(junk), 3 * MIB + MIB / 2 + 100), (ssize_t)sizeof(junk));
	CHECK_EQ(fs_open_ex(image, 0, &v, why, sizeof(why)), 0);
	CHECK(strcmp(why, "chunk 3 offline: both copies of its header are bad") == 0);
	if (v) {
		CHECK_EQ(v->chunks[3].offline, 1);
		CHECK_EQ(v->chunks[3].locked, 0);
		CHECK_EQ(chunk_lock_try(fd, 3 * MIB, MIB, 1), 0);
		CHECK_EQ(chunk_lock_try(fd, 2 * MIB, MIB, 0), -EAGAIN);
		CHECK_EQ(vol_chunk_reacquire(v, 3, why, sizeof(why)), -EBUSY);
		CHECK_EQ(fs_close(v), 0);
	}
	close(fd);
}

int main(void)
{
	struct fs_mkfs_opts o = { .chunk_size = MIB, .chunk_count = 4, .force = 1 };
	const char *tmp = getenv("TMPDIR");

	snprintf(image, sizeof(image), "%s/chunk_lock_test.%d.img", tmp ? tmp : "/tmp",
		 (int)getpid());
	CHECK_EQ(fs_mkfs(image, &o), 0);
	test_fd_locks();
	test_volume_locks();
	test_fsck_locks();
	test_offline_unlocked();
	unlink(image);
	return test_done("chunk_lock");
}
