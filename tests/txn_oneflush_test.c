/* How many flushes each transaction takes (fs/txn.c: lists, first copies,
 * second copies; one_flush_ok lets the lists share the first copies'
 * flush), counted on memory stores that record every write and flush: the
 * first after open takes three; a stream of creates in one directory,
 * whose units the previous transaction's list always names, two each; a
 * transaction carrying file data three, with the data written before the
 * first flush and every unit after it; a sync with nothing new none (no
 * catch-up is left over); one after a failed sync three; the counters say
 * the same; creates in three directories by turns, whose units wait two
 * transactions between changes, take two flushes each once the lists
 * name them as held entries; on a volume made before the HELD_ENTRIES
 * feature, three.
 * (That a crash at any point of either kind recovers exactly is
 * the crash harness's: tests/crash_test.) */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/format/ondisk.h"
#include "fs/store/store.h"
#include "fs/store/store_mem.h"
#include "tap.h"

#define CHUNK_SIZE (4u << 20)
#define NCHUNKS 2
#define CREATES 40

static struct io_log log_;
static struct chunk_store *mem[NCHUNKS];

/* Volume flushes recorded since log record from: each flushes every
 * chunk's store, one record a chunk, one after the other. */
static int flushes_since(size_t from)
{
	int n = 0;

	for (size_t i = from; i < log_.n; i++)
		n += log_.rec[i].kind == IO_FLUSH && (i == from || log_.rec[i - 1].kind != IO_FLUSH);
	return n;
}

static struct fs_volume *open_mem(const uint8_t *image)
{
	struct chunk_store *st[NCHUNKS];
	struct fs_volume *v = NULL;
	char why[256];

	for (int i = 0; i < NCHUNKS; i++) {
		if (store_mem_new(CHUNK_SIZE, image + (size_t)i * CHUNK_SIZE, &st[i]) < 0)
			return NULL;
		store_mem_record(st[i], &log_, (uint32_t)i);
		mem[i] = st[i];
	}
	if (fs_open_stores(st, NCHUNKS, 0, &v, why, sizeof(why)) < 0) {
		fprintf(stderr, "open: %s\n", why);
		return NULL;
	}
	return v;
}

/* fs_sync, and the flushes it took. */
static int sync_flushes(struct fs_volume *v, int *ret)
{
	size_t from = log_.n;

	*ret = fs_sync(v);
	return flushes_since(from);
}

/* Creates in three directories by turns, a sync each. Without held
 * entries each would take three flushes: the units of the directory it
 * changes were written two transactions before and are not named by the
 * last list. */
static void check_turns(struct fs_volume *v, struct fs_ino root, int held_feature)
{
	struct fs_counters before, fc;
	struct fs_ino dir[3], f;
	char name[32];
	int ret, flushes;

	for (int k = 0; k < 3; k++) {
		snprintf(name, sizeof(name), "turn%d", k);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &dir[k], NULL), 0);
	}
	CHECK_EQ(sync_flushes(v, &ret), 3);
	CHECK_EQ(fs_get_counters(v, &before), 0);
	for (int i = 0; i < 30; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		CHECK_EQ(fs_create(v, NULL, dir[i % 3], name, 0644, FS_CREATE_GUARDED, 0, &f,
				   NULL), 0);
		flushes = sync_flushes(v, &ret);
		CHECK_EQ(ret, 0);
		if (i >= 6)
			CHECK_EQ(flushes, held_feature ? 2 : 3);
	}
	CHECK_EQ(fs_get_counters(v, &fc), 0);
	CHECK_EQ(fc.txns, before.txns + 30);
	CHECK_EQ(fc.txn_flushes - before.txn_flushes,
		 (uint64_t)(3 * 30 - (fc.txns_one_flush - before.txns_one_flush)));
	if (!held_feature) {
		CHECK_EQ(fc.held_named, before.held_named);
		return;
	}
	CHECK(fc.txns_one_flush >= before.txns_one_flush + 24);
	/* Each sync named at least the other two directories' units. */
	CHECK(fc.held_named >= before.held_named + 2 * 24);
	/* Nothing new: nothing to write, no catch-up left over. */
	CHECK_EQ(sync_flushes(v, &ret), 0);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts o = { .chunk_size = CHUNK_SIZE, .chunk_count = NCHUNKS, .force = 1 };
	static uint8_t image[(size_t)CHUNK_SIZE * NCHUNKS], data[64 << 10];
	struct fs_ino root, d, f;
	struct fs_counters fc;
	struct fs_volume *v;
	char path[256], name[32];
	int fd, ret, one = 0, two = 0, flushes;
	size_t from;

	snprintf(path, sizeof(path), "%s/txn_oneflush_test.%d.img", tmp ? tmp : "/tmp",
		 (int)getpid());
	CHECK_EQ(fs_mkfs(path, &o), 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0 && pread(fd, image, sizeof(image), 0) == (ssize_t)sizeof(image));
	close(fd);
	unlink(path);
	v = open_mem(image);
	CHECK(v != NULL);
	if (!v)
		return test_done("txn_oneflush_test");
	log_.enabled = 1;

	/* The first transaction after open: nothing known on disk, three. */
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_mkdir(v, NULL, root, "d", 0755, &d, NULL), 0);
	CHECK_EQ(sync_flushes(v, &ret), 3);
	CHECK_EQ(ret, 0);

	/* Creates in d, a sync each: after the first few, which bring new
	 * units in, every transaction names only what the last one did. */
	for (int i = 0; i < CREATES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		CHECK_EQ(fs_create(v, NULL, d, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
		flushes = sync_flushes(v, &ret);
		CHECK_EQ(ret, 0);
		CHECK(flushes == 2 || flushes == 3);
		if (i >= 3)
			CHECK_EQ(flushes, 2);
		one += flushes == 2;
		two += flushes == 3;
	}
	CHECK_EQ(fs_get_counters(v, &fc), 0);
	CHECK_EQ(fc.txns, 1 + CREATES);
	CHECK_EQ(fc.txns_one_flush, (uint64_t)one);
	CHECK_EQ(fc.txn_flushes, (uint64_t)(3 + 2 * one + 3 * two));
	CHECK(one >= CREATES - 3);

	/* File data: it waits in memory (delayed allocation, fs/dalloc.c)
	 * and goes to the store with the sync, whose transaction takes three
	 * flushes (the first makes the data durable before any metadata
	 * pointing at it is written). */
	memset(data, 0x5a, sizeof(data));
	from = log_.n;
	CHECK_EQ(fs_write(v, NULL, f, 0, sizeof(data), data, FS_UNSTABLE, NULL), 0);
	CHECK_EQ(log_.n, from);
	CHECK_EQ(sync_flushes(v, &ret), 3);
	CHECK_EQ(ret, 0);
	CHECK(log_.n > from);

	/* Nothing new: no transaction at all. */
	CHECK_EQ(sync_flushes(v, &ret), 0);

	/* A failed sync: what reached the disk is not known, so the next
	 * transaction takes two flushes even on units the last one named. */
	CHECK_EQ(fs_create(v, NULL, d, "x1", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	CHECK_EQ(sync_flushes(v, &ret), 2); /* d's units, named as held */
	CHECK_EQ(fs_create(v, NULL, d, "x2", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	CHECK_EQ(sync_flushes(v, &ret), 2);
	CHECK_EQ(fs_create(v, NULL, d, "x3", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	for (int i = 0; i < NCHUNKS; i++)
		store_mem_fail(mem[i], EIO);
	CHECK(fs_sync(v) < 0);
	for (int i = 0; i < NCHUNKS; i++)
		store_mem_fail(mem[i], 0);
	CHECK_EQ(sync_flushes(v, &ret), 3);
	CHECK_EQ(ret, 0);
	CHECK_EQ(fs_create(v, NULL, d, "x4", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	CHECK_EQ(sync_flushes(v, &ret), 2);
	check_turns(v, root, 1);

	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);

	/* A volume made before HELD_ENTRIES: the bit cleared in both copies of
	 * every chunk header. */
	CHECK_EQ(fs_mkfs(path, &o), 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0 && pread(fd, image, sizeof(image), 0) == (ssize_t)sizeof(image));
	close(fd);
	unlink(path);
	for (int i = 0; i < NCHUNKS; i++)
		for (int copy = 0; copy < 2; copy++) {
			uint8_t *b = image + (size_t)i * CHUNK_SIZE + copy * (CHUNK_SIZE / 2);
			struct od_chunk_header h;
			CHECK_EQ(od_get_chunk_header(b, &h), 0);
			CHECK_EQ(h.feature_incompat, OD_FEATURE_INCOMPAT_HELD_ENTRIES);
			h.feature_incompat = 0;
			od_put_chunk_header(b, &h);
			od_seal(b, OD_BLOCK_SIZE);
		}
	v = open_mem(image);
	CHECK(v != NULL);
	if (v) {
		CHECK_EQ(fs_root(v, &root), 0);
		check_turns(v, root, 0);
		CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
		CHECK_EQ(fs_close(v), 0);
	}
	io_log_free(&log_);
	return test_done("txn_oneflush_test");
}
