/* The scrub reads without the volume lock (fs/scrub.c): on memory stores
 * that tell the test of every read, a whole pass over a clean volume reads
 * its metadata with the lock free, and with the lock held reads only the
 * chunks' newest dirty lists; a pass over a volume with one copy of a
 * directory unit damaged reads exactly that unit's two copies again with
 * the lock held, heals it, and the next pass finds both copies equal; a
 * window that cannot be read (a bad range over a unit's second copy) makes
 * its step read the store with the lock held, and the unit is still judged
 * and healed. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/internal.h"
#include "fs/format/ondisk.h"
#include "fs/store/store.h"
#include "fs/store/store_mem.h"
#include "tap.h"

#define CHUNK_SIZE (4u << 20)
#define NCHUNKS 2
#define NFILES 40

struct reads {
	struct fs_volume *v;
	uint32_t chunk;
	int on;
	uint64_t unlocked_bytes;
	uint32_t unlocked, locked_list, locked_other;
	uint64_t locked_off[16]; /* the first locked reads outside the lists */
};

static struct reads seen[NCHUNKS];
static struct chunk_store *mem[NCHUNKS];

/* Is the volume lock held (by this thread, the scrub's)? */
static int lock_held(struct fs_volume *v)
{
	if (pthread_mutex_trylock(&v->lock) != 0)
		return 1;
	pthread_mutex_unlock(&v->lock);
	return 0;
}

static void on_read(void *arg, uint64_t off, size_t len)
{
	struct reads *r = arg;
	const struct od_chunk_header *h;
	uint64_t block = off / OD_BLOCK_SIZE;

	if (!r->on)
		return;
	if (!lock_held(r->v)) {
		r->unlocked++;
		r->unlocked_bytes += len;
		return;
	}
	h = &r->v->chunks[r->chunk].hdr;
	if (block >= h->dirty_start && block < h->bitmap_start) {
		r->locked_list++;
		return;
	}
	if (r->locked_other < 16)
		r->locked_off[r->locked_other] = off;
	r->locked_other++;
}

/* Count the reads from now (on), or stop counting, the counts kept. */
static void watch(int on)
{
	for (int i = 0; i < NCHUNKS; i++) {
		struct reads keep = { .v = seen[i].v, .chunk = seen[i].chunk, .on = on };
		if (on)
			seen[i] = keep;
		else
			seen[i].on = 0;
	}
}

static struct fs_volume *open_mem(const uint8_t *image)
{
	struct chunk_store *st[NCHUNKS];
	struct fs_volume *v = NULL;
	char why[256];

	for (int i = 0; i < NCHUNKS; i++) {
		if (store_mem_new(CHUNK_SIZE, image + (size_t)i * CHUNK_SIZE, &st[i]) < 0)
			return NULL;
		mem[i] = st[i];
	}
	if (fs_open_stores(st, NCHUNKS, 0, &v, why, sizeof(why)) < 0) {
		fprintf(stderr, "open: %s\n", why);
		return NULL;
	}
	for (int i = 0; i < NCHUNKS; i++) {
		seen[i].v = v;
		seen[i].chunk = (uint32_t)i;
		store_mem_on_read(mem[i], on_read, &seen[i]);
	}
	return v;
}

/* A whole pass from chunk 0, summed (steps of 32 units, as chunkfsd's). */
static int scrub_pass(struct fs_volume *v, struct fs_scrub_result *sum)
{
	struct fs_scrub_cursor cur = { 0, 0 };
	struct fs_scrub_result r;
	int ret, steps = 0;

	memset(sum, 0, sizeof(*sum));
	watch(1);
	do {
		ret = fs_scrub_step(v, &cur, 32, &r);
		if (ret < 0)
			break;
		sum->units += r.units;
		sum->bad += r.bad;
		sum->healed += r.healed;
		sum->both_bad += r.both_bad;
		sum->skipped += r.skipped;
		sum->chunks_done += r.chunks_done;
	} while (!r.wrapped && ++steps < 100000);
	watch(0);
	if (ret < 0)
		return ret;
	return r.wrapped ? 0 : -ELOOP;
}

/* The first directory unit of chunk c's lower half, from its bytes. */
static int find_dir_unit(uint32_t c, const struct od_chunk_header *h, uint32_t *block,
			 uint32_t *units)
{
	const uint8_t *bytes = store_mem_bytes(mem[c]);
	struct od_mb_header mh;

	for (uint32_t b = h->data_start; b < h->nblocks / 2; b++) {
		od_get_mb_header(bytes + (size_t)b * OD_BLOCK_SIZE, &mh);
		if (mh.magic == OD_MB_MAGIC && mh.type == OD_MB_DIR && mh.chunk == c &&
		    mh.block == b) {
			*block = b;
			*units = mh.units;
			return 0;
		}
	}
	return -ENOENT;
}

static int copies_equal(uint32_t c, uint32_t block, uint32_t units, uint32_t half)
{
	const uint8_t *bytes = store_mem_bytes(mem[c]);

	return memcmp(bytes + (size_t)block * OD_BLOCK_SIZE,
		      bytes + (size_t)(block + half) * OD_BLOCK_SIZE,
		      (size_t)units * OD_BLOCK_SIZE) == 0;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts o = { .chunk_size = CHUNK_SIZE, .chunk_count = NCHUNKS, .force = 1 };
	static uint8_t image[(size_t)CHUNK_SIZE * NCHUNKS], data[20000];
	struct fs_scrub_result r;
	struct fs_ino root, d, f;
	struct fs_volume *v;
	struct od_chunk_header h1;
	uint32_t block = 0, units = 1, half, clean_units;
	char path[256], name[32];
	int fd;

	snprintf(path, sizeof(path), "%s/scrub_unlocked_test.%d.img", tmp ? tmp : "/tmp",
		 (int)getpid());
	CHECK_EQ(fs_mkfs(path, &o), 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0 && pread(fd, image, sizeof(image), 0) == (ssize_t)sizeof(image));
	close(fd);
	unlink(path);
	v = open_mem(image);
	CHECK(v != NULL);
	if (!v)
		return test_done("scrub_unlocked");
	CHECK_EQ(fs_root(v, &root), 0);
	for (int k = 0; k < 2; k++) {
		snprintf(name, sizeof(name), "d%d", k);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &d, NULL), 0);
		for (int i = 0; i < NFILES; i++) {
			snprintf(name, sizeof(name), "f%02d", i);
			memset(data, 'a' + i % 26, sizeof(data));
			CHECK_EQ(fs_create(v, NULL, d, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
			CHECK_EQ(fs_write(v, NULL, f, 0, (size_t)(i * 500), data, FS_UNSTABLE, NULL),
				 0);
		}
	}
	CHECK_EQ(fs_sync(v), 0);

	/* A clean pass: the metadata is read with the lock free; with it
	 * held, only each chunk's newest list. */
	CHECK_EQ(scrub_pass(v, &r), 0);
	CHECK(r.units >= 2 * 6); /* header, bitmap, map, inodes, directories */
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.chunks_done, NCHUNKS);
	for (int i = 0; i < NCHUNKS; i++) {
		CHECK(seen[i].unlocked > 0);
		CHECK(seen[i].unlocked_bytes >= 2u * 4 * OD_BLOCK_SIZE);
		CHECK_EQ(seen[i].locked_other, 0);
		if (seen[i].locked_other)
			fprintf(stderr, "# chunk %d: a locked read at block %llu\n", i,
				(unsigned long long)(seen[i].locked_off[0] / OD_BLOCK_SIZE));
	}
	clean_units = (uint32_t)r.units;

	/* One copy of a directory unit of chunk 1 damaged: read again, both
	 * copies, with the lock held; healed by the next transaction. */
	h1 = v->chunks[1].hdr;
	half = h1.nblocks / 2;
	CHECK_EQ(find_dir_unit(1, &h1, &block, &units), 0);
	store_mem_bytes(mem[1])[((size_t)block + half) * OD_BLOCK_SIZE + 100] ^= 0x5a;
	CHECK(!copies_equal(1, block, units, half));
	CHECK_EQ(scrub_pass(v, &r), 0);
	CHECK_EQ(r.units, clean_units);
	CHECK_EQ(r.bad, 1);
	CHECK_EQ(r.healed, 1);
	CHECK_EQ(r.both_bad, 0);
	CHECK_EQ(seen[0].locked_other, 0);
	CHECK_EQ(seen[1].locked_other, 2);
	CHECK_EQ(seen[1].locked_off[0], (uint64_t)block * OD_BLOCK_SIZE);
	CHECK_EQ(seen[1].locked_off[1], ((uint64_t)block + half) * OD_BLOCK_SIZE);
	CHECK_EQ(fs_sync(v), 0);
	CHECK(copies_equal(1, block, units, half));
	CHECK_EQ(scrub_pass(v, &r), 0);
	CHECK_EQ(r.bad, 0);

	/* The same copy damaged and unreadable: the window over it fails, so
	 * its step reads the store with the lock held; copy 1 is judged bad
	 * and rewritten from copy 0 (writes to the range still succeed). */
	store_mem_bytes(mem[1])[((size_t)block + half) * OD_BLOCK_SIZE + 100] ^= 0x5a;
	store_mem_bad_range(mem[1], ((uint64_t)block + half) * OD_BLOCK_SIZE, OD_BLOCK_SIZE, EIO,
			    0);
	CHECK_EQ(scrub_pass(v, &r), 0);
	CHECK_EQ(r.units, clean_units);
	CHECK_EQ(r.bad, 1);
	CHECK_EQ(r.healed, 1);
	CHECK(seen[1].locked_other >= 2);
	CHECK_EQ(fs_sync(v), 0);
	store_mem_bad_range(mem[1], 0, 0, 0, 0);
	CHECK(copies_equal(1, block, units, half));
	CHECK_EQ(scrub_pass(v, &r), 0);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.units, clean_units);

	CHECK_EQ(fs_close(v), 0);
	return test_done("scrub_unlocked");
}
