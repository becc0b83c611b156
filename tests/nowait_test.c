/* fs_nowait_begin/end, the sections in which chunkfsd's event loop answers
 * read-only calls itself: cache hits answer exactly as outside; anything
 * that would read the disk fails with -EAGAIN, is reported by
 * fs_nowait_end and changes nothing (no healing, no chunk marked for
 * repair, invariants intact); a volume busy on another thread is -EAGAIN
 * at begin; sections do not nest. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs/fs.h"
#include "tap.h"

#define BIG (96u << 10)

static struct fs_volume *vol;

static int count_fn(void *ctx, const struct fs_dirent *ent)
{
	(void)ent;
	(*(int *)ctx)++;
	return 0;
}

static int list(struct fs_ino dir, int *n)
{
	uint64_t verf = 0;
	int eof = 0;

	*n = 0;
	return fs_readdir(vol, NULL, dir, 0, &verf, 1, count_fn, n, &eof);
}

/* Another thread inside a section holds the volume. */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static int hold_state; /* 1: inside, 2: may leave */

static void *holder(void *arg)
{
	int *ret = arg;

	*ret = fs_nowait_begin(vol);
	pthread_mutex_lock(&hold_lock);
	hold_state = 1;
	pthread_cond_broadcast(&hold_cond);
	while (hold_state != 2)
		pthread_cond_wait(&hold_cond, &hold_lock);
	pthread_mutex_unlock(&hold_lock);
	if (*ret == 0)
		*ret = fs_nowait_end(vol);
	return NULL;
}

/* Does this file system answer RWF_NOWAIT reads (else every nowait data
 * read is -EAGAIN, which is correct but not what the warm case checks)? */
static int rwf_nowait_works(const char *path)
{
	char b[512];
	struct iovec iov = { b, sizeof(b) };
	int fd = open(path, O_RDONLY), ok;

	if (fd < 0)
		return 0;
	ok = pread(fd, b, sizeof(b), 0) == (ssize_t)sizeof(b) &&
	     preadv2(fd, &iov, 1, 0, RWF_NOWAIT) == (ssize_t)sizeof(b);
	close(fd);
	return ok;
}

static void drop_page_cache(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return;
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts o = { .chunk_size = 4 << 20, .chunk_count = 4, .force = 1 };
	struct fs_ino root, dir, small, big, ln, got;
	struct fs_attr a, b;
	struct fs_counters fc;
	static uint8_t wbuf[BIG], rbuf[BIG];
	char image[256], target[64];
	size_t n, tlen;
	int eof, entries, hret;
	pthread_t th;

	snprintf(image, sizeof(image), "%s/nowait_test.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	for (size_t i = 0; i < BIG; i++)
		wbuf[i] = (uint8_t)(i * 7 + i / 251);
	CHECK_EQ(fs_mkfs(image, &o), 0);
	CHECK_EQ(fs_open(image, 0, &vol), 0);
	CHECK_EQ(fs_root(vol, &root), 0);
	CHECK_EQ(fs_mkdir(vol, NULL, root, "d", 0755, &dir, NULL), 0);
	CHECK_EQ(fs_create(vol, NULL, dir, "small", 0644, FS_CREATE_GUARDED, 0, &small, NULL), 0);
	CHECK_EQ(fs_write(vol, NULL, small, 0, 100, wbuf, FS_UNSTABLE, NULL), 0);
	CHECK_EQ(fs_create(vol, NULL, dir, "big", 0644, FS_CREATE_GUARDED, 0, &big, NULL), 0);
	CHECK_EQ(fs_write(vol, NULL, big, 0, BIG, wbuf, FS_UNSTABLE, NULL), 0);
	CHECK_EQ(fs_symlink(vol, NULL, dir, "ln", "the/target", 0777, &ln, NULL), 0);
	CHECK_EQ(fs_close(vol), 0);

	/* Cold: nothing of d is in memory, every call would read. */
	CHECK_EQ(fs_open(image, 0, &vol), 0);
	CHECK_EQ(fs_nowait_begin(vol), 0);
	CHECK_EQ(fs_nowait_begin(vol), -EBUSY);
	CHECK_EQ(fs_getattr(vol, big, &a), -EAGAIN);
	CHECK_EQ(fs_nowait_end(vol), -EAGAIN);
	CHECK_EQ(fs_nowait_end(vol), -EINVAL); /* not inside one any more */
	CHECK_EQ(fs_nowait_begin(vol), 0);
	CHECK_EQ(fs_lookup(vol, NULL, dir, "small", &got, NULL), -EAGAIN);
	CHECK_EQ(fs_nowait_end(vol), -EAGAIN);
	CHECK_EQ(fs_nowait_begin(vol), 0);
	CHECK_EQ(list(dir, &entries), -EAGAIN);
	CHECK_EQ(fs_nowait_end(vol), -EAGAIN);

	/* Nothing was taken for damage on the way. */
	CHECK_EQ(fs_get_counters(vol, &fc), 0);
	CHECK_EQ(fc.healed, 0);
	CHECK_EQ(fc.unreadable, 0);
	CHECK_EQ(fc.chunks_needing_repair, 0);
	CHECK_EQ(fs_check_invariants(vol, NULL, NULL), 0);

	/* Warm: the same calls answer exactly as outside a section. */
	CHECK_EQ(fs_getattr(vol, big, &a), 0);
	CHECK_EQ(a.size, BIG);
	CHECK_EQ(fs_lookup(vol, NULL, dir, "small", &got, NULL), 0);
	CHECK_EQ(list(dir, &entries), 0);
	CHECK_EQ(entries, 5); /* . .. small big ln */
	CHECK_EQ(fs_readlink(vol, ln, target, sizeof(target), &tlen), 0);
	CHECK_EQ(fs_read(vol, NULL, small, 0, sizeof(rbuf), rbuf, &n, &eof), 0);
	CHECK_EQ(fs_nowait_begin(vol), 0);
	memset(&b, 0, sizeof(b));
	CHECK_EQ(fs_getattr(vol, big, &b), 0);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	got.num = got.gen = 0;
	CHECK_EQ(fs_lookup(vol, NULL, dir, "small", &got, NULL), 0);
	CHECK_EQ(got.num, small.num);
	CHECK_EQ(got.gen, small.gen);
	CHECK_EQ(fs_lookup(vol, NULL, dir, "nothing", &got, NULL), -ENOENT);
	CHECK_EQ(list(dir, &entries), 0);
	CHECK_EQ(entries, 5);
	memset(target, 0, sizeof(target));
	CHECK_EQ(fs_readlink(vol, ln, target, sizeof(target), &tlen), 0);
	CHECK_EQ(tlen, 10);
	CHECK(memcmp(target, "the/target", 10) == 0);
	memset(rbuf, 0, sizeof(rbuf));
	CHECK_EQ(fs_read(vol, NULL, small, 0, sizeof(rbuf), rbuf, &n, &eof), 0);
	CHECK_EQ(n, 100);
	CHECK_EQ(eof, 1);
	CHECK(memcmp(rbuf, wbuf, 100) == 0);
	CHECK_EQ(fs_nowait_end(vol), 0);

	/* File data: from the page cache only. */
	CHECK_EQ(fs_read(vol, NULL, big, 0, BIG, rbuf, &n, &eof), 0);
	if (rwf_nowait_works(image)) {
		memset(rbuf, 0, sizeof(rbuf));
		CHECK_EQ(fs_nowait_begin(vol), 0);
		CHECK_EQ(fs_read(vol, NULL, big, 0, BIG, rbuf, &n, &eof), 0);
		CHECK_EQ(fs_nowait_end(vol), 0);
		CHECK_EQ(n, BIG);
		CHECK(memcmp(rbuf, wbuf, BIG) == 0);
		/* Out of the page cache (where the file system drops it): the
		 * read must wait, or it finds the bytes after all. */
		drop_page_cache(image);
		memset(rbuf, 0, sizeof(rbuf));
		CHECK_EQ(fs_nowait_begin(vol), 0);
		hret = fs_read(vol, NULL, big, 0, BIG, rbuf, &n, &eof);
		CHECK(hret == -EAGAIN || (hret == 0 && memcmp(rbuf, wbuf, BIG) == 0));
		CHECK_EQ(fs_nowait_end(vol), hret);
	} else {
		printf("nowait_test: RWF_NOWAIT reads unsupported here: warm data read not checked\n");
	}

	/* Another thread inside a section: the volume is busy. */
	CHECK_EQ(pthread_create(&th, NULL, holder, &hret), 0);
	pthread_mutex_lock(&hold_lock);
	while (hold_state != 1)
		pthread_cond_wait(&hold_cond, &hold_lock);
	pthread_mutex_unlock(&hold_lock);
	CHECK_EQ(fs_nowait_begin(vol), -EAGAIN);
	pthread_mutex_lock(&hold_lock);
	hold_state = 2;
	pthread_cond_broadcast(&hold_cond);
	pthread_mutex_unlock(&hold_lock);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(hret, 0);
	CHECK_EQ(fs_nowait_begin(vol), 0);
	CHECK_EQ(fs_nowait_end(vol), 0);

	CHECK_EQ(fs_get_counters(vol, &fc), 0);
	CHECK_EQ(fc.unreadable, 0);
	CHECK_EQ(fc.chunks_needing_repair, 0);
	CHECK_EQ(fs_check_invariants(vol, NULL, NULL), 0);
	CHECK_EQ(fs_close(vol), 0);
	unlink(image);
	return test_done("nowait_test");
}
