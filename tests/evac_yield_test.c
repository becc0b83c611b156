/* An evacuation's copy outside the volume lock (fs/evac_pre.c) giving way
 * to a chunk's waiter: a step of draining chunk 1 copies a 2 MiB file
 * (eight windows of 256 KiB) into another chunk; after its first window
 * another thread takes chunk 1 offline, which waits for the copy's pins
 * (chunk_wait_unpinned). The window hook stands for a slow store: each
 * window takes WIN_MS. The copy stops before its second window, the step
 * moves nothing and answers 1 (or -EIO when the offline got the lock
 * first), and the offline's wait is one window's copy, not the step's
 * eight. Back online, the evacuation goes on to the end: every block
 * copied outside the lock, the bytes whole, chunk 1 retired, the volume
 * checks clean. */
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
#include "tap.h"

#define MB (1u << 20)
/* A window's copy, as the hook makes it last: long enough that the
 * offline's wait stays under 4 of them under ThreadSanitizer on a loaded
 * machine (227 ms was seen with 50 ms windows). */
#define WIN_MS 100

#include "tests/pin_waiter.h"

static char image[200];

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts mo = { .chunk_size = 8 * MB, .chunk_count = 3, .force = 1 };
	struct fsck_opts fo = { .force = 1, .cross = 1, .both_copies = 1 };
	struct fsck_gate gate = { .image = image };
	struct fsck_result res;
	struct fs_evac_info ei;
	struct fs_chunk_info ci;
	struct fs_volume *v;
	struct fs_ino root, d, dk = { 0 }, f;
	static struct waiter w;
	static uint8_t buf[2 * MB], back[2 * MB];
	char why[256], name[32];
	int ret, steps = 0;

	snprintf(image, sizeof(image), "%s/evac_yield_test.%d.img", tmp ? tmp : "/tmp",
		 (int)getpid());
	CHECK_EQ(fs_mkfs(image, &mo), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	for (int i = 0; i < 8 && !dk.num; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &d, NULL), 0);
		if ((d.num >> 32) == 1)
			dk = d;
	}
	CHECK(dk.num != 0);
	fill(buf, sizeof(buf), 7);
	CHECK_EQ(fs_create(v, NULL, dk, "f", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	CHECK_EQ(fs_write(v, NULL, f, 0, sizeof(buf), buf, FS_FILE_SYNC, NULL), 0);
	CHECK_EQ(f.num >> 32, 1);

	CHECK_EQ(fs_chunk_drain(v, 1, 1, why, sizeof(why)), 0);
	CHECK_EQ(fs_evac_step(v, 1, 0, &ei), 1); /* the foster map */
	w.v = v;
	fs_evac_set_window_hook(v, window_hook, &w);
	ret = fs_evac_step(v, 1, 0, &ei);
	CHECK(ret == 1 || ret == -EIO);
	CHECK_EQ(w.started, 1);
	CHECK_EQ(pthread_join(w.th, NULL), 0);
	fs_evac_set_window_hook(v, NULL, NULL);
	CHECK_EQ(w.seen_waiting, 1);
	CHECK_EQ(w.offline_ret, 0);
	/* The copy stopped before its second window of eight. */
	CHECK_EQ(w.windows_at_wait, 1);
	CHECK_EQ(w.windows, 1);
	/* The offline waited for that one window's copy (WIN_MS), not for
	 * the seven left (7 * WIN_MS more). */
	CHECK(w.t_done - w.t_call < 4 * WIN_MS);
	printf("# the offline waited %llu ms for the pins (a window is %d ms, the step's "
	       "copy %d); windows copied: %u\n",
	       (unsigned long long)(w.t_done - w.t_call), WIN_MS, 8 * WIN_MS, w.windows);
	CHECK_EQ(fs_chunk_info(v, 1, &ci), 0);
	CHECK(!ci.online && ci.pin_waiters == 0);

	CHECK_EQ(fs_chunk_online(v, 1, fsck_gate_chunk, &gate, why, sizeof(why)), 0);
	CHECK_EQ(gate.res.exit_code, FSCK_EXIT_OK);
	CHECK_EQ(fs_evac_info(v, 1, &ei), 0);
	CHECK_EQ(ei.copy_stops, 1);
	CHECK_EQ(ei.inodes_moved, 0);
	CHECK_EQ(ei.blocks_moved, 0);
	while ((ret = fs_evac_step(v, 1, 0, &ei)) == 1 && steps < 100)
		steps++;
	CHECK_EQ(ret, 0);
	CHECK_EQ(ei.retired, 1);
	CHECK_EQ(ei.copy_stops, 1);
	CHECK_EQ(ei.blocks_moved, 512);
	CHECK_EQ(ei.blocks_copied_unlocked, 512);
	{
		size_t n = 0;
		int eof = 0;
		CHECK_EQ(fs_read(v, NULL, f, 0, sizeof(back), back, &n, &eof), 0);
		CHECK_EQ(n, sizeof(back));
		CHECK(memcmp(back, buf, sizeof(buf)) == 0);
	}
	CHECK_EQ(fs_close(v), 0);
	CHECK_EQ(fsck_volume_path(image, -1, &fo, &res), 0);
	CHECK_EQ(res.problems, 0);
	unlink(image);
	return test_done("evac_yield_test");
}
