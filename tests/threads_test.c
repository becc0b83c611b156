/* Several threads calling the library at once, as the daemon's workers do:
 * each works in its own directory and in one shared directory, and at the
 * end every file has its exact contents and the invariants hold. Syncs run
 * all the while (fs_sync writes its transaction without the volume lock,
 * stable writes sync inside it), and the cache is kept small so that units
 * are evicted and read again while transactions are being written. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "tap.h"

#define THREADS 4
#define FILES 60

static struct fs_volume *vol;
static struct fs_ino root, shared;
static int thread_errors;
static int workers_done; /* atomic */
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;

static void fail(int t, const char *what, int ret)
{
	pthread_mutex_lock(&err_lock);
	fprintf(stderr, "thread %d: %s: %d\n", t, what, ret);
	thread_errors++;
	pthread_mutex_unlock(&err_lock);
}

static void pattern(uint8_t *buf, size_t len, int t, int i)
{
	for (size_t k = 0; k < len; k++)
		buf[k] = (uint8_t)(t * 31 + i * 7 + k);
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	uint8_t wbuf[20000], rbuf[20000];
	struct fs_ino dir, f;
	char name[64];
	int ret;

	snprintf(name, sizeof(name), "t%d", t);
	if ((ret = fs_mkdir(vol, NULL, root, name, 0755, &dir, NULL)) < 0) {
		fail(t, "mkdir", ret);
		return NULL;
	}
	for (int i = 0; i < FILES; i++) {
		size_t len = (size_t)(i * 331) % sizeof(wbuf);
		size_t n;
		int eof;
		snprintf(name, sizeof(name), "f%d", i);
		pattern(wbuf, len, t, i);
		if ((ret = fs_create(vol, NULL, dir, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL)) < 0 ||
		    (ret = fs_write(vol, NULL, f, 0, len, wbuf, i % 5 ? FS_UNSTABLE : FS_FILE_SYNC,
				    NULL)) < 0) {
			fail(t, "create/write", ret);
			continue;
		}
		if ((ret = fs_read(vol, NULL, f, 0, sizeof(rbuf), rbuf, &n, &eof)) < 0 || n != len ||
		    memcmp(wbuf, rbuf, len) != 0)
			fail(t, "read back", ret);
		/* The shared directory: names unique per thread, links across. */
		snprintf(name, sizeof(name), "s%d-%d", t, i);
		if ((ret = fs_link(vol, NULL, f, shared, name)) < 0)
			fail(t, "link", ret);
		if (i % 3 == 0) {
			char to[64];
			snprintf(to, sizeof(to), "r%d-%d", t, i);
			if ((ret = fs_rename(vol, NULL, shared, name, shared, to)) < 0)
				fail(t, "rename", ret);
		}
		if (i % 4 == 0) {
			snprintf(name, sizeof(name), "f%d", i);
			if ((ret = fs_remove(vol, NULL, dir, name)) < 0)
				fail(t, "remove", ret);
		}
		if (i % 2 && (ret = fs_sync(vol)) < 0)
			fail(t, "sync", ret);
	}
	return NULL;
}

static void *syncer(void *arg)
{
	unsigned n = 0;
	int ret;

	(void)arg;
	while (!__atomic_load_n(&workers_done, __ATOMIC_ACQUIRE) || n == 0) {
		if ((ret = fs_sync(vol)) < 0)
			fail(THREADS, "sync", ret);
		n++;
	}
	return NULL;
}

static void report(void *ctx, const char *msg)
{
	fprintf(stderr, "invariant: %s\n", msg);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts o = { .chunk_size = 4 << 20, .chunk_count = 4, .force = 1,
				  .bytes_per_inode = 4096 };
	pthread_t th[THREADS], sy;
	char image[256];
	struct fs_attr a;

	snprintf(image, sizeof(image), "%s/threads_test.%d.img", tmp ? tmp : "/tmp", (int)getpid());
	CHECK_EQ(fs_mkfs(image, &o), 0);
	CHECK_EQ(fs_open(image, 0, &vol), 0);
	CHECK_EQ(fs_root(vol, &root), 0);
	CHECK_EQ(fs_mkdir(vol, NULL, root, "shared", 0777, &shared, NULL), 0);
	fs_set_cache_limit(vol, 64 << 10);
	CHECK_EQ(pthread_create(&sy, NULL, syncer, NULL), 0);
	for (int t = 0; t < THREADS; t++)
		CHECK_EQ(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t), 0);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	__atomic_store_n(&workers_done, 1, __ATOMIC_RELEASE);
	pthread_join(sy, NULL);
	CHECK_EQ(thread_errors, 0);
	CHECK_EQ(fs_check_invariants(vol, report, NULL), 0);
	CHECK_EQ(fs_close(vol), 0);

	/* After reopening: every file in place, with its bytes. */
	CHECK_EQ(fs_open(image, 0, &vol), 0);
	CHECK_EQ(fs_root(vol, &root), 0);
	for (int t = 0; t < THREADS; t++) {
		struct fs_ino dir, f;
		char name[64];
		snprintf(name, sizeof(name), "t%d", t);
		CHECK_EQ(fs_lookup(vol, NULL, root, name, &dir, NULL), 0);
		for (int i = 0; i < FILES; i++) {
			uint8_t wbuf[20000], rbuf[20000];
			size_t len = (size_t)(i * 331) % sizeof(wbuf), n;
			int eof;
			snprintf(name, sizeof(name), "f%d", i);
			if (i % 4 == 0) {
				CHECK_EQ(fs_lookup(vol, NULL, dir, name, &f, NULL), -ENOENT);
				continue;
			}
			CHECK_EQ(fs_lookup(vol, NULL, dir, name, &f, &a), 0);
			CHECK_EQ(a.nlink, 2);
			pattern(wbuf, len, t, i);
			CHECK_EQ(fs_read(vol, NULL, f, 0, sizeof(rbuf), rbuf, &n, &eof), 0);
			CHECK_EQ(n, len);
			CHECK(memcmp(wbuf, rbuf, len) == 0);
		}
	}
	CHECK_EQ(fs_check_invariants(vol, report, NULL), 0);
	CHECK_EQ(fs_close(vol), 0);
	unlink(image);
	return test_done("threads");
}
