/* File data is read without the volume lock (fs/read_unlocked.c, fs/pin.c),
 * on memory stores that tell the test of every read:
 * - a 64 KiB read of a file in one extent is one store read, made with the
 *   lock free, and returns the file's bytes; the volume's store read
 *   counters (status: store_reads, store_read_bytes) grow by exactly the
 *   reads the stores saw, here and for the sparse file below;
 * - a sparse file spanning two chunks reads back exactly (zeros in its
 *   holes), every store read unlocked, and no chunk is left pinned;
 * - while the read of file A waits on its store, A is truncated, the
 *   truncation committed and A's blocks given to other files: the read
 *   does not return their bytes, it is made again under the lock and finds
 *   A empty (nread 0, eof; what the first try copied lies beyond nread);
 * - chunk_wait_unpinned waits for the last unpin, and no longer, the
 *   volume lock free while it waits;
 * - threads reading file x over and over on a file image while another
 *   truncates and rewrites x and writes and removes other files (whose
 *   blocks x's then take, and the reverse): a read of x only ever holds
 *   bytes x held (lowercase letters, zeros), never another file's. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/internal.h"
#include "fs/format/ondisk.h"
#include "fs/store/store.h"
#include "fs/store/store_mem.h"
#include "tap.h"

#define CHUNK_SIZE (4u << 20)
#define NCHUNKS 2
#define FILE_BYTES (64u << 10)

static struct fs_volume *vol;
static struct chunk_store *mem[NCHUNKS];
static struct fs_ino root;

/* What the store reads saw; and a hook run once, unlocked, at the start of
 * the read of a chosen offset. */
static struct {
	int on;
	uint32_t locked, unlocked;
	uint64_t unlocked_bytes;
	uint64_t hook_off;
	int hook_armed, hook_ran, in_hook;
	void (*hook)(void);
} seen;

static int lock_held(struct fs_volume *v)
{
	if (pthread_mutex_trylock(&v->lock) != 0)
		return 1;
	pthread_mutex_unlock(&v->lock);
	return 0;
}

static void on_read(void *arg, uint64_t off, size_t len)
{
	(void)arg;
	if (!seen.on || seen.in_hook)
		return;
	if (lock_held(vol)) {
		seen.locked++;
		return;
	}
	seen.unlocked++;
	seen.unlocked_bytes += len;
	if (seen.hook_armed && off == seen.hook_off) {
		seen.hook_armed = 0;
		seen.in_hook = 1;
		seen.hook();
		seen.in_hook = 0;
		seen.hook_ran = 1;
	}
}

/* The volume's store read counters: reads, or their bytes. */
static uint64_t store_count(int bytes)
{
	struct fs_counters k;

	if (fs_get_counters(vol, &k) != 0)
		return UINT64_MAX;
	return bytes ? k.store_read_bytes : k.store_reads;
}

static void watch(int on)
{
	seen.on = on;
	seen.locked = seen.unlocked = 0;
	seen.unlocked_bytes = 0;
}

static int open_mem(const uint8_t *image)
{
	struct chunk_store *st[NCHUNKS];
	char why[256];

	for (int i = 0; i < NCHUNKS; i++) {
		if (store_mem_new(CHUNK_SIZE, image + (size_t)i * CHUNK_SIZE, &st[i]) < 0)
			return -ENOMEM;
		mem[i] = st[i];
	}
	if (fs_open_stores(st, NCHUNKS, 0, &vol, why, sizeof(why)) < 0) {
		fprintf(stderr, "open: %s\n", why);
		return -EIO;
	}
	for (int i = 0; i < NCHUNKS; i++)
		store_mem_on_read(mem[i], on_read, NULL);
	return 0;
}

static int make_file(const char *name, uint8_t fill, size_t len, struct fs_ino *f)
{
	static uint8_t buf[FILE_BYTES];
	int ret = fs_create(vol, NULL, root, name, 0644, FS_CREATE_GUARDED, 0, f, NULL);

	memset(buf, fill, sizeof(buf));
	for (size_t off = 0; ret == 0 && off < len; off += sizeof(buf))
		ret = fs_write(vol, NULL, *f, off, len - off < sizeof(buf) ? len - off : sizeof(buf),
			       buf, FS_UNSTABLE, NULL);
	return ret == 0 ? fs_sync(vol) : ret;
}

/* The byte offset in chunk c's store of the first block all of fill. */
static int64_t find_block(uint32_t c, uint8_t fill)
{
	const uint8_t *bytes = store_mem_bytes(mem[c]);

	for (uint64_t off = 0; off < CHUNK_SIZE; off += OD_BLOCK_SIZE) {
		size_t i = 0;
		while (i < OD_BLOCK_SIZE && bytes[off + i] == fill)
			i++;
		if (i == OD_BLOCK_SIZE)
			return (int64_t)off;
	}
	return -1;
}

/* The hook: A (the file being read) truncated to nothing, committed, and
 * files of 'B' written until one of them holds A's old first block. */
static struct fs_ino file_a;
static int hook_files, hook_reused;

static void take_a_blocks(void)
{
	struct fs_setattr sa = { .valid = FS_SET_SIZE, .size = 0 };
	const uint8_t *bytes = store_mem_bytes(mem[0]);
	char name[32];
	struct fs_ino b;

	if (fs_setattr(vol, NULL, file_a, &sa, NULL) != 0 || fs_sync(vol) != 0)
		return;
	while (hook_files < 200 && !hook_reused) {
		snprintf(name, sizeof(name), "b%03d", hook_files++);
		if (make_file(name, 'B', FILE_BYTES, &b) != 0)
			return;
		hook_reused = bytes[seen.hook_off] == 'B' && bytes[seen.hook_off + 4095] == 'B';
	}
}

static uint32_t pins_total(void)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < vol->nchunks; i++)
		n += __atomic_load_n(&vol->chunks[i].pins, __ATOMIC_SEQ_CST);
	return n;
}

static int waiter_done;

static void *waiter(void *arg)
{
	struct chunk *c = arg;

	vol_lock(c->vol); /* (called locked: it waits unlocked, returns locked) */
	chunk_wait_unpinned(c);
	vol_unlock(c->vol);
	__atomic_store_n(&waiter_done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* The threaded part: on an image file, so the stores are the kernel's. */
#define STRESS_ROUNDS 300
#define STRESS_LEN (96u << 10)
static struct fs_ino file_x;
static int stress_done, stress_bad;
static uint64_t stress_reads;

static void *stress_reader(void *arg)
{
	static __thread uint8_t rb[STRESS_LEN];
	size_t n;
	int eof;

	(void)arg;
	while (!__atomic_load_n(&stress_done, __ATOMIC_SEQ_CST)) {
		int ret = fs_read(vol, NULL, file_x, 0, STRESS_LEN, rb, &n, &eof);
		if (ret < 0 || n > STRESS_LEN) {
			__atomic_add_fetch(&stress_bad, 1, __ATOMIC_SEQ_CST);
			continue;
		}
		for (size_t i = 0; i < n; i++)
			if (rb[i] && (rb[i] < 'a' || rb[i] > 'z')) {
				__atomic_add_fetch(&stress_bad, 1, __ATOMIC_SEQ_CST);
				break;
			}
		__atomic_add_fetch(&stress_reads, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static int stress_writer(void)
{
	static uint8_t wb[STRESS_LEN];
	struct fs_setattr cut = { .valid = FS_SET_SIZE, .size = 0 };
	struct fs_ino other;
	char name[32];
	int ret = 0;

	for (int r = 0; r < STRESS_ROUNDS && ret == 0; r++) {
		memset(wb, 'a' + r % 26, sizeof(wb));
		ret = fs_setattr(vol, NULL, file_x, &cut, NULL);
		if (ret == 0)
			ret = fs_sync(vol);
		if (ret == 0)
			ret = fs_write(vol, NULL, file_x, 0, STRESS_LEN, wb, FS_UNSTABLE, NULL);
		snprintf(name, sizeof(name), "o%d", r % 4);
		memset(wb, 'A' + r % 26, sizeof(wb));
		if (ret == 0 && r >= 4)
			ret = fs_remove(vol, NULL, root, name);
		if (ret == 0)
			ret = fs_create(vol, NULL, root, name, 0644, FS_CREATE_GUARDED, 0, &other, NULL);
		if (ret == 0)
			ret = fs_write(vol, NULL, other, 0, STRESS_LEN, wb, FS_UNSTABLE, NULL);
		if (ret == 0)
			ret = fs_sync(vol);
	}
	return ret;
}

static void stress(const char *path)
{
	struct fs_mkfs_opts o = { .chunk_size = 4u << 20, .chunk_count = 2, .force = 1 };
	pthread_t rd[2];

	CHECK_EQ(fs_mkfs(path, &o), 0);
	CHECK_EQ(fs_open(path, 0, &vol), 0);
	if (!vol)
		return;
	CHECK_EQ(fs_root(vol, &root), 0);
	CHECK_EQ(fs_create(vol, NULL, root, "x", 0644, FS_CREATE_GUARDED, 0, &file_x, NULL), 0);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&rd[i], NULL, stress_reader, NULL), 0);
	CHECK_EQ(stress_writer(), 0);
	__atomic_store_n(&stress_done, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_join(rd[i], NULL), 0);
	CHECK_EQ(stress_bad, 0);
	CHECK(stress_reads > 0);
	CHECK_EQ(pins_total(), 0);
	CHECK_EQ(fs_close(vol), 0);
	printf("# stress: %llu reads of x during %d rounds\n", (unsigned long long)stress_reads,
	       STRESS_ROUNDS);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts o = { .chunk_size = CHUNK_SIZE, .chunk_count = NCHUNKS, .force = 1 };
	static uint8_t image[(size_t)CHUNK_SIZE * NCHUNKS], buf[5u << 20], want[5u << 20];
	struct fs_ino sparse;
	uint64_t reads0, bytes0;
	size_t nread = 0;
	int eof = 0, fd;
	int64_t a_off;
	char path[256];
	pthread_t th;

	snprintf(path, sizeof(path), "%s/read_unlocked_test.%d.img", tmp ? tmp : "/tmp",
		 (int)getpid());
	CHECK_EQ(fs_mkfs(path, &o), 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0 && pread(fd, image, sizeof(image), 0) == (ssize_t)sizeof(image));
	close(fd);
	unlink(path);
	CHECK_EQ(open_mem(image), 0);
	if (!vol)
		return test_done("read_unlocked");
	CHECK_EQ(fs_root(vol, &root), 0);

	/* One extent, one unlocked store read. */
	CHECK_EQ(make_file("a", 'A', FILE_BYTES, &file_a), 0);
	a_off = find_block(0, 'A');
	CHECK(a_off > 0);
	watch(1);
	reads0 = store_count(0);
	bytes0 = store_count(1);
	memset(buf, 0, FILE_BYTES);
	CHECK_EQ(fs_read(vol, NULL, file_a, 0, FILE_BYTES, buf, &nread, &eof), 0);
	CHECK_EQ(nread, FILE_BYTES);
	CHECK_EQ(eof, 1);
	CHECK_EQ(seen.unlocked, 1);
	CHECK_EQ(seen.unlocked_bytes, FILE_BYTES);
	CHECK_EQ(seen.locked, 0);
	CHECK_EQ(store_count(0) - reads0, 1);
	CHECK_EQ(store_count(1) - bytes0, FILE_BYTES);
	memset(want, 'A', FILE_BYTES);
	CHECK(memcmp(buf, want, FILE_BYTES) == 0);
	CHECK_EQ(pins_total(), 0);

	/* Sparse, and longer than a chunk holds: a continuation in chunk 1. */
	{
		const size_t len = 5u << 20;
		const uint64_t at[3] = { 0, 2u << 20, len - 8192 };
		CHECK_EQ(fs_create(vol, NULL, root, "sparse", 0644, FS_CREATE_GUARDED, 0, &sparse,
				   NULL),
			 0);
		memset(want, 0, len);
		for (int k = 0; k < 3; k++) {
			/* more than chunk 0 has room for, beside file a */
			size_t n = k == 2 ? 8192 : (3u << 19) + 4096 * (size_t)k;
			memset(want + at[k], 'p' + k, n);
			CHECK_EQ(fs_write(vol, NULL, sparse, at[k], n, want + at[k], FS_UNSTABLE,
					  NULL),
				 0);
		}
		CHECK_EQ(fs_sync(vol), 0);
		watch(1);
		reads0 = store_count(0);
		bytes0 = store_count(1);
		memset(buf, 0xee, len);
		CHECK_EQ(fs_read(vol, NULL, sparse, 0, len + 4096, buf, &nread, &eof), 0);
		CHECK_EQ(nread, len);
		CHECK_EQ(eof, 1);
		CHECK(memcmp(buf, want, len) == 0);
		CHECK_EQ(seen.locked, 0);
		CHECK(seen.unlocked >= 3);
		CHECK_EQ(seen.unlocked_bytes, (3u << 20) + 4096 + 8192);
		CHECK_EQ(store_count(0) - reads0, seen.unlocked);
		CHECK_EQ(store_count(1) - bytes0, (3u << 20) + 4096 + 8192);
		CHECK_EQ(pins_total(), 0);
		CHECK(find_block(1, 'q') >= 0 || find_block(1, 'r') >= 0); /* a continuation */
	}

	/* A's blocks freed, committed and reused while its read waits. */
	watch(1);
	seen.hook = take_a_blocks;
	seen.hook_off = (uint64_t)a_off;
	seen.hook_armed = 1;
	memset(buf, 0, FILE_BYTES);
	nread = 12345;
	eof = 0;
	CHECK_EQ(fs_read(vol, NULL, file_a, 0, FILE_BYTES, buf, &nread, &eof), 0);
	CHECK_EQ(seen.hook_ran, 1);
	CHECK_EQ(hook_reused, 1);
	CHECK_EQ(nread, 0);
	CHECK_EQ(eof, 1);
	CHECK_EQ(pins_total(), 0);
	watch(0);

	/* A waiter for chunk 0's pins wakes at the last unpin. */
	chunk_pin(&vol->chunks[0]);
	chunk_pin(&vol->chunks[0]);
	CHECK_EQ(pthread_create(&th, NULL, waiter, &vol->chunks[0]), 0);
	sleep_ms(50);
	chunk_unpin(&vol->chunks[0]);
	sleep_ms(50);
	CHECK_EQ(__atomic_load_n(&waiter_done, __ATOMIC_SEQ_CST), 0);
	for (int i = 0; i < 5000 && !__atomic_load_n(&vol->chunks[0].pin_waiters, __ATOMIC_SEQ_CST);
	     i++)
		sleep_ms(1); /* (a loaded machine may start it late) */
	CHECK_EQ(__atomic_load_n(&vol->chunks[0].pin_waiters, __ATOMIC_SEQ_CST), 1);
	CHECK_EQ(fs_nowait_begin(vol), 0); /* the lock is free meanwhile */
	CHECK_EQ(fs_nowait_end(vol), 0);
	chunk_unpin(&vol->chunks[0]);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(waiter_done, 1);
	CHECK_EQ(pins_total(), 0);

	CHECK_EQ(fs_close(vol), 0);

	stress(path);
	unlink(path);
	return test_done("read_unlocked");
}
