/* vol_flush sends every store's flush before it waits for any (fs/volume.c,
 * the stores' flush_begin and flush_end), and the transaction writer marks
 * the last write of each chunk before a flush (store_pwrite_last, where an
 * NBD store may use FUA). On a volume of four memory stores wrapped to log
 * every call: each flush of a commit is four begins, then four ends, with
 * no write in between; after a chunk's last-before-flush write, the next
 * call on that chunk is the flush; every chunk a phase wrote had one such
 * write; a flush that fails on one store still ends every other, the sync
 * returns that store's error, and the next sync commits everything. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/store/store.h"
#include "fs/store/store_mem.h"
#include "tap.h"

#define CHUNK_SIZE (4u << 20)
#define NCHUNKS 4
#define NEV 100000

enum ev_kind { EV_WRITE, EV_WRITE_LAST, EV_BEGIN, EV_END };

static struct {
	enum ev_kind kind;
	uint32_t chunk;
} ev[NEV];
static size_t nev;

static void log_ev(enum ev_kind kind, uint32_t chunk)
{
	if (nev < NEV) {
		ev[nev].kind = kind;
		ev[nev].chunk = chunk;
		nev++;
	}
}

/* A memory store with a flush in two halves, logging every call. */
struct split {
	struct chunk_store st;
	struct chunk_store *in;
	uint32_t chunk;
	int began;    /* a begin without its end yet */
	int fail_end; /* the next end fails with this errno */
};

static struct split *to_split(struct chunk_store *st)
{
	return (struct split *)st;
}

static int sp_pread(struct chunk_store *st, void *buf, size_t len, uint64_t off)
{
	return store_pread(to_split(st)->in, buf, len, off);
}

static int sp_pwrite(struct chunk_store *st, const void *buf, size_t len, uint64_t off)
{
	log_ev(EV_WRITE, to_split(st)->chunk);
	return store_pwrite(to_split(st)->in, buf, len, off);
}

static int sp_pwrite_last(struct chunk_store *st, const void *buf, size_t len, uint64_t off)
{
	log_ev(EV_WRITE_LAST, to_split(st)->chunk);
	return store_pwrite(to_split(st)->in, buf, len, off);
}

static int sp_flush(struct chunk_store *st)
{
	/* vol_flush must use the halves: a whole flush is logged as both. */
	log_ev(EV_BEGIN, to_split(st)->chunk);
	log_ev(EV_END, to_split(st)->chunk);
	return store_flush(to_split(st)->in);
}

static void sp_flush_begin(struct chunk_store *st)
{
	struct split *s = to_split(st);

	CHECK(!s->began);
	s->began = 1;
	log_ev(EV_BEGIN, s->chunk);
}

static int sp_flush_end(struct chunk_store *st)
{
	struct split *s = to_split(st);
	int err = s->fail_end;

	CHECK(s->began);
	s->began = 0;
	s->fail_end = 0;
	log_ev(EV_END, s->chunk);
	if (err)
		return -err;
	return store_flush(s->in);
}

static int sp_trim(struct chunk_store *st, size_t len, uint64_t off)
{
	return store_trim(to_split(st)->in, len, off);
}

/* Where a closing store leaves its bytes (chunk c at c * CHUNK_SIZE), or
 * NULL. */
static uint8_t *close_image;

static void sp_close(struct chunk_store *st)
{
	struct split *s = to_split(st);

	if (close_image)
		memcpy(close_image + (size_t)s->chunk * CHUNK_SIZE, store_mem_bytes(s->in),
		       CHUNK_SIZE);
	store_close(s->in);
	free(st);
}

static const struct chunk_store_ops split_ops = {
	.pread = sp_pread,
	.pwrite = sp_pwrite,
	.flush = sp_flush,
	.trim = sp_trim,
	.close = sp_close,
	.flush_begin = sp_flush_begin,
	.flush_end = sp_flush_end,
	.pwrite_last = sp_pwrite_last,
};

static struct split *splits[NCHUNKS];

static struct fs_volume *open_split(const uint8_t *image)
{
	struct chunk_store *st[NCHUNKS];
	struct fs_volume *v = NULL;
	char why[256];

	for (uint32_t i = 0; i < NCHUNKS; i++) {
		struct split *s = calloc(1, sizeof(*s));
		if (!s || store_mem_new(CHUNK_SIZE, image + (size_t)i * CHUNK_SIZE, &s->in) < 0)
			return NULL;
		s->st.ops = &split_ops;
		s->st.size = CHUNK_SIZE;
		s->chunk = i;
		splits[i] = s;
		st[i] = &s->st;
	}
	if (fs_open_stores(st, NCHUNKS, 0, &v, why, sizeof(why)) < 0) {
		fprintf(stderr, "open: %s\n", why);
		return NULL;
	}
	return v;
}

/* The events from `from` on: every run of flush events is NCHUNKS begins
 * then NCHUNKS ends, one of each per chunk; after a chunk's last write
 * before a flush its next event is that flush's begin; each run of writes
 * between flushes gives every chunk it wrote one last write, at its end.
 * The number of flushes (runs) into *flushes. */
static void check_events(size_t from, int *flushes)
{
	int pending_last[NCHUNKS] = { 0 }, wrote[NCHUNKS] = { 0 }, lasts[NCHUNKS] = { 0 };

	*flushes = 0;
	for (size_t i = from; i < nev;) {
		if (ev[i].kind == EV_WRITE || ev[i].kind == EV_WRITE_LAST) {
			uint32_t c = ev[i].chunk;
			CHECK(!pending_last[c]); /* nothing written after the last one */
			wrote[c] = 1;
			if (ev[i].kind == EV_WRITE_LAST) {
				pending_last[c] = 1;
				lasts[c]++;
			}
			i++;
			continue;
		}
		/* A flush: NCHUNKS begins, then NCHUNKS ends. */
		uint32_t seen_b = 0, seen_e = 0;
		for (uint32_t k = 0; k < NCHUNKS; k++, i++) {
			CHECK(i < nev && ev[i].kind == EV_BEGIN);
			if (i < nev)
				seen_b |= 1u << ev[i].chunk;
		}
		for (uint32_t k = 0; k < NCHUNKS; k++, i++) {
			CHECK(i < nev && ev[i].kind == EV_END);
			if (i < nev)
				seen_e |= 1u << ev[i].chunk;
		}
		CHECK_EQ(seen_b, (1u << NCHUNKS) - 1);
		CHECK_EQ(seen_e, (1u << NCHUNKS) - 1);
		for (uint32_t c = 0; c < NCHUNKS; c++) {
			/* A phase's writes to a chunk end with its one last write
			 * (the list may share its flush with the first copies:
			 * then the list is plain and the copies end with it). */
			if (wrote[c])
				CHECK_EQ(lasts[c], 1);
			pending_last[c] = wrote[c] = lasts[c] = 0;
		}
		(*flushes)++;
	}
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fs_mkfs_opts o = { .chunk_size = CHUNK_SIZE, .chunk_count = NCHUNKS, .force = 1 };
	static uint8_t image[(size_t)CHUNK_SIZE * NCHUNKS];
	struct fs_ino root, d, f;
	struct fs_counters fc0, fc;
	struct fs_volume *v;
	char path[256], name[32];
	int fd, flushes, chunks_used = 0;
	uint32_t used = 0;
	size_t from;

	snprintf(path, sizeof(path), "%s/flush_parallel_test.%d.img", tmp ? tmp : "/tmp",
		 (int)getpid());
	CHECK_EQ(fs_mkfs(path, &o), 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0 && pread(fd, image, sizeof(image), 0) == (ssize_t)sizeof(image));
	close(fd);
	unlink(path);
	v = open_split(image);
	CHECK(v != NULL);
	if (!v)
		return test_done("flush_parallel_test");
	CHECK_EQ(fs_root(v, &root), 0);

	/* Directories of the root spread over every chunk, a file in each. */
	CHECK_EQ(fs_get_counters(v, &fc0), 0);
	from = nev;
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &d, NULL), 0);
		used |= 1u << (uint32_t)(d.num >> 32);
		CHECK_EQ(fs_create(v, NULL, d, "f", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
		CHECK_EQ(fs_write(v, NULL, f, 0, strlen(name), name, FS_UNSTABLE, NULL), 0);
	}
	for (uint32_t c = 0; c < NCHUNKS; c++)
		chunks_used += (used >> c) & 1;
	CHECK_EQ(chunks_used, NCHUNKS);
	CHECK_EQ(fs_sync(v), 0);
	check_events(from, &flushes);
	CHECK_EQ(fs_get_counters(v, &fc), 0);
	CHECK_EQ(fc.txns, fc0.txns + 1);
	CHECK_EQ(flushes, (int)(fc.txn_flushes - fc0.txn_flushes));
	CHECK_EQ(flushes, 3); /* file data: lists, first copies, second copies */

	/* A stream of creates in one directory: two flushes each, same shape. */
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "g%d", i);
		from = nev;
		CHECK_EQ(fs_create(v, NULL, d, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
		CHECK_EQ(fs_sync(v), 0);
		check_events(from, &flushes);
		if (i >= 2)
			CHECK_EQ(flushes, 2);
	}

	/* Chunk 2's flush fails: every store still ends its flush, the sync
	 * says chunk 2's error, and the next sync commits the change. */
	splits[2]->fail_end = EIO;
	from = nev;
	CHECK_EQ(fs_create(v, NULL, root, "after-failure", 0644, FS_CREATE_GUARDED, 0, &f, NULL),
		 0);
	CHECK_EQ(fs_sync(v), -EIO);
	check_events(from, &flushes);
	CHECK_EQ(flushes, 1); /* the first flush failed: nothing after it */
	for (uint32_t c = 0; c < NCHUNKS; c++)
		CHECK(!splits[c]->began);
	CHECK_EQ(fs_sync(v), 0);
	close_image = image;
	CHECK_EQ(fs_close(v), 0);
	close_image = NULL;

	/* Everything is there after a reopen of the same bytes. */
	v = open_split(image);
	CHECK(v != NULL);
	if (v) {
		struct fs_ino got;
		CHECK_EQ(fs_lookup(v, NULL, root, "after-failure", &got, NULL), 0);
		CHECK_EQ(fs_lookup(v, NULL, d, "g9", &got, NULL), 0);
		CHECK_EQ(fs_close(v), 0);
	}
	return test_done("flush_parallel_test");
}
