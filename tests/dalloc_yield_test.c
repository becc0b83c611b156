/* A placement's data written outside the volume lock (fs/dalloc_place.c)
 * giving way to a chunk's pin waiter: an 8 MiB file of chunk 1, buffered,
 * is committed; its data goes to chunk 1 in eight writes of 1 MiB; after
 * the first another thread takes chunk 1 offline, which waits for the
 * placement's pins (chunk_wait_unpinned). The window hook stands for a
 * slow store: each write takes WIN_MS. The placement stops before its
 * second write and gives its blocks back, the pages still buffered
 * (dalloc_unlocked_stops 1); the offline's wait is one write, not eight,
 * and the offline places the file under the lock before the chunk goes;
 * the commit answers 0 or -EIO (the chunk offline when it looked again).
 * Back online, the file reads whole and the volume checks clean. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/fsck/fsck.h"
#include "tests/tap.h"

#define MB (1u << 20)
#define SIZE (8 * MB)
#define WIN_MS 100 /* a 1 MiB write, as the hook makes it last */

#include "tests/pin_waiter.h"

static char image[200];

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts mo = { .chunk_size = 32 * MB, .chunk_count = 3, .force = 1 };
	struct fsck_opts fo = { .force = 1, .cross = 1, .both_copies = 1 };
	struct fsck_gate gate = { .image = image };
	struct fsck_result res;
	struct fs_counters k0, k1;
	struct fs_chunk_info ci;
	struct fs_volume *v;
	struct fs_ino root, d, dk = { 0 }, f;
	static struct waiter w;
	static uint8_t buf[SIZE], back[SIZE];
	char why[256], name[32];
	int ret;

	snprintf(image, sizeof(image), "%s/dalloc_yield_test.%d.img", tmp ? tmp : "/tmp",
		 (int)getpid());
	CHECK_EQ(fs_mkfs(image, &mo), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	for (int i = 0; i < 256 && !dk.num; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &d, NULL), 0);
		if ((d.num >> 32) == 1)
			dk = d;
	}
	CHECK(dk.num != 0);
	CHECK_EQ(fs_create(v, NULL, dk, "f", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	CHECK_EQ(f.num >> 32, 1);
	CHECK_EQ(fs_sync(v), 0);
	fill(buf, sizeof(buf), 7);
	for (uint32_t off = 0; off < SIZE; off += MB)
		CHECK_EQ(fs_write(v, NULL, f, off, MB, buf + off, FS_UNSTABLE, NULL), 0);
	CHECK_EQ(fs_get_counters(v, &k0), 0);
	CHECK_EQ(k0.dalloc_bytes, SIZE);

	w.v = v;
	fs_dalloc_set_window_hook(v, window_hook, &w);
	ret = fs_commit(v, f);
	CHECK(ret == 0 || ret == -EIO);
	CHECK_EQ(w.started, 1);
	CHECK_EQ(pthread_join(w.th, NULL), 0);
	fs_dalloc_set_window_hook(v, NULL, NULL);
	CHECK_EQ(w.seen_waiting, 1);
	CHECK_EQ(w.offline_ret, 0);
	/* The placement stopped before its second write of eight. */
	CHECK_EQ(w.windows_at_wait, 1);
	CHECK_EQ(w.windows, 1);
	CHECK_EQ(fs_get_counters(v, &k1), 0);
	CHECK_EQ(k1.dalloc_unlocked_stops - k0.dalloc_unlocked_stops, 1);
	CHECK_EQ(k1.dalloc_unlocked, k0.dalloc_unlocked);
	CHECK_EQ(k1.dalloc_files, 0); /* (placed by the offline, under the lock) */
	CHECK_EQ(k1.dalloc_gave_up_offline, 0);
	CHECK_EQ(fs_drop_count(v), 0);
	/* The offline waited for that one write (WIN_MS), not for the seven
	 * left (7 * WIN_MS more); its own placement of the file and commit
	 * take the rest (230 ms under ThreadSanitizer on a loaded machine). */
	CHECK(w.t_done - w.t_call < 6 * WIN_MS);
	printf("# the offline waited %llu ms (a write is %d ms, the file's %d); writes made: %u, "
	       "commit %d\n",
	       (unsigned long long)(w.t_done - w.t_call), WIN_MS, 8 * WIN_MS, w.windows, ret);
	CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
	CHECK(!ci.online && ci.pin_waiters == 0);

	CHECK_EQ(fs_chunk_online(v, 1, fsck_gate_chunk, &gate, why, sizeof(why)), 0);
	CHECK_EQ(gate.res.exit_code, FSCK_EXIT_OK);
	CHECK_EQ(fs_commit(v, f), 0);
	{
		size_t n = 0;
		int eof = 0;
		CHECK_EQ(fs_read(v, NULL, f, 0, sizeof(back), back, &n, &eof), 0);
		CHECK_EQ(n, sizeof(back));
		CHECK(memcmp(back, buf, sizeof(buf)) == 0);
	}
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.problems, 0);
	unlink(image);
	return test_done("dalloc_yield");
}
