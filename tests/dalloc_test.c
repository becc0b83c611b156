/* fs/dalloc.c, delayed allocation, on a one-chunk volume: files written in
 * 4 KiB UNSTABLE pieces by turns end in one extent each once committed
 * (64 without it); buffered data is seen by reads, getattr, readdirplus,
 * lookup, statfs, truncate, rename, remove and link; the byte cap places
 * the oldest file; fs_place_old places by age; a copy of the image taken
 * after a commit (a crash) holds the committed file whole and the buffered
 * one at its placed size, never past its data; a placement that fails
 * (writes to where it goes fail) keeps the buffer: the sync succeeds and
 * commits another file, the file's own commit gets the error, the next
 * commit with the store sound places every byte (on disk too), and
 * fs_drop_count stays; failing long enough, failing buffers over the cap
 * and failing at close give the buffer up, counted, with fs_drop_count
 * moved, and so does the file's chunk forced offline. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/format/ondisk.h"
#include "fs/layout.h"
#include "fs/store/store.h"
#include "fs/store/store_mem.h"
#include "tests/tap.h"
#include "tests/vol_util.h"

#define KiB 1024u
#define PIECES 64 /* 4 KiB pieces per file: 256 KiB */

static char image[256], copy[300];

static int extents(struct fs_volume *v, struct fs_ino f)
{
	int n = 0;

	CHECK_EQ(fs_file_extents(v, f, count_ext, &n), 0);
	return n;
}

static void fill(uint8_t *buf, size_t len, uint64_t off, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(((off + i) * 131 + seed * 7 + ((off + i) >> 12)) & 0xff);
}

static struct fs_ino make_file(struct fs_volume *v, const char *name)
{
	struct fs_ino root, f = { 0 };

	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_create(v, NULL, root, name, 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	return f;
}

static void put(struct fs_volume *v, struct fs_ino f, uint64_t off, size_t len, unsigned seed)
{
	static uint8_t buf[1 << 20];

	fill(buf, len, off, seed);
	CHECK_EQ(fs_write(v, NULL, f, off, len, buf, FS_UNSTABLE, NULL), 0);
}

/* Does f read back as seed's bytes for [0, size), and exactly size? */
static int reads_back(struct fs_volume *v, struct fs_ino f, uint64_t size, unsigned seed)
{
	static uint8_t got[1 << 20], want[1 << 20];
	size_t n = 0;
	int eof = 0;

	if (size > sizeof(got) - 1 || fs_read(v, NULL, f, 0, sizeof(got), got, &n, &eof) < 0)
		return 0;
	fill(want, (size_t)size, 0, seed);
	return n == size && eof && memcmp(got, want, (size_t)size) == 0;
}

static struct fs_counters counters(struct fs_volume *v)
{
	struct fs_counters k;

	CHECK_EQ(fs_get_counters(v, &k), 0);
	return k;
}

/* Three files by turns, 4 KiB at a time: one extent each with delayed
 * allocation, one extent per piece without. */
static void test_interleaved(struct fs_volume *v)
{
	struct fs_ino f[3], g[3];
	struct fs_attr a;
	struct fs_statfs s0, s1;
	char name[16];

	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "turn%d", i);
		f[i] = make_file(v, name);
	}
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(fs_statfs(v, &s0), 0);
	for (int p = 0; p < PIECES; p++)
		for (int i = 0; i < 3; i++)
			put(v, f[i], (uint64_t)p * 4 * KiB, 4 * KiB, 1 + (unsigned)i);
	/* Each first piece went inline at once (a fresh file's first write
	 * that fits in its entry holds no block); the rest waits. */
	CHECK_EQ(counters(v).dalloc_files, 3);
	CHECK_EQ(counters(v).dalloc_bytes, 3 * (PIECES - 1) * 4 * KiB);
	/* Nothing placed yet, everything seen. */
	CHECK_EQ(extents(v, f[0]), 0);
	CHECK_EQ(fs_getattr(v, f[0], &a), 0);
	CHECK_EQ(a.size, PIECES * 4 * KiB);
	CHECK_EQ(a.used, PIECES * 4 * KiB);
	CHECK(reads_back(v, f[1], PIECES * 4 * KiB, 2));
	CHECK_EQ(fs_statfs(v, &s1), 0);
	/* (and the pair of the extent unit each may need: 63 pages may be
	 * more extents than its inode holds, fs/dalloc_room.c) */
	CHECK_EQ(s0.free_blocks - s1.free_blocks, 3 * (PIECES - 1) + 3 * 2);

	CHECK_EQ(fs_commit(v, f[0]), 0);
	CHECK_EQ(extents(v, f[0]), 1);
	CHECK_EQ(counters(v).dalloc_files, 2);
	CHECK_EQ(extents(v, f[1]), 0);
	CHECK_EQ(fs_commit(v, f[1]), 0);
	CHECK_EQ(fs_commit(v, f[2]), 0);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(extents(v, f[i]), 1);
		CHECK(reads_back(v, f[i], PIECES * 4 * KiB, 1 + (unsigned)i));
	}
	CHECK_EQ(counters(v).dalloc_files, 0);
	CHECK_EQ(counters(v).dalloc_bytes, 0);

	/* Without it (cap 0): every piece is placed as it comes, between
	 * the other files' pieces. */
	fs_set_dalloc_limit(v, 0);
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "nodelay%d", i);
		g[i] = make_file(v, name);
	}
	for (int p = 0; p < PIECES; p++)
		for (int i = 0; i < 3; i++)
			put(v, g[i], (uint64_t)p * 4 * KiB, 4 * KiB, 4 + (unsigned)i);
	CHECK_EQ(counters(v).dalloc_files, 0);
	CHECK_EQ(fs_commit(v, g[0]), 0);
	/* (the first piece went inline and came out with the second) */
	CHECK_EQ(extents(v, g[0]), PIECES - 1);
	CHECK(reads_back(v, g[0], PIECES * 4 * KiB, 4));
	fs_set_dalloc_limit(v, 64ull << 20);
}

struct plus_seen {
	const char *name;
	uint64_t size, used;
	int found;
};

static int find_plus(void *ctx, const struct fs_dirent *d)
{
	struct plus_seen *ps = ctx;

	if (d->name_len == strlen(ps->name) && memcmp(d->name, ps->name, d->name_len) == 0) {
		ps->found = 1;
		ps->size = d->attr.size;
		ps->used = d->attr.used;
	}
	return 0;
}

/* Truncate, lookup, readdirplus, link, remove and rename of buffered files. */
static void test_seen(struct fs_volume *v)
{
	struct fs_ino root, t, l, old, nw, got;
	struct fs_attr a;
	struct fs_statfs s0, s1;
	struct fs_setattr sa = { .valid = FS_SET_SIZE };
	struct plus_seen ps = { .name = "trunc" };
	uint64_t verf = 0;
	uint8_t buf[16 * KiB];
	size_t n;
	int eof;

	CHECK_EQ(fs_root(v, &root), 0);
	t = make_file(v, "trunc");
	put(v, t, 0, 40000, 9);
	CHECK_EQ(fs_lookup(v, NULL, root, "trunc", &got, &a), 0);
	CHECK_EQ(a.size, 40000);
	CHECK_EQ(fs_readdir(v, NULL, root, 0, &verf, 1, find_plus, &ps, &eof), 0);
	CHECK(ps.found);
	CHECK_EQ(ps.size, 40000);
	CHECK_EQ(ps.used, 40 * KiB);
	/* Grown: still buffered, zeros past the data. */
	sa.size = 50000;
	CHECK_EQ(fs_setattr(v, NULL, t, &sa, &a), 0);
	CHECK_EQ(a.size, 50000);
	CHECK_EQ(counters(v).dalloc_files, 1);
	CHECK_EQ(fs_read(v, NULL, t, 39990, sizeof(buf), buf, &n, &eof), 0);
	CHECK_EQ(n, 50000 - 39990);
	CHECK(buf[9] != 0 || buf[8] != 0);
	CHECK(buf[10] == 0 && buf[n - 1] == 0);
	/* Cut part way: placed, then cut on disk. */
	sa.size = 20000;
	CHECK_EQ(fs_setattr(v, NULL, t, &sa, &a), 0);
	CHECK_EQ(a.size, 20000);
	CHECK_EQ(counters(v).dalloc_files, 0);
	CHECK(reads_back(v, t, 20000, 9));
	/* one run placed; the cut copies the block it ends in (design.md,
	 * "Metadata copies and transactions"): blocks 0-3, then block 4 */
	CHECK_EQ(extents(v, t), 2);
	/* Cut to 0: the buffer goes, nothing placed. */
	put(v, t, 20000, 30000, 9);
	CHECK_EQ(counters(v).dalloc_files, 1);
	sa.size = 0;
	CHECK_EQ(fs_setattr(v, NULL, t, &sa, &a), 0);
	CHECK_EQ(a.size, 0);
	CHECK_EQ(a.used, 0);
	CHECK_EQ(counters(v).dalloc_files, 0);
	CHECK_EQ(extents(v, t), 0);

	/* A link places the file (while it has one link, so a small one
	 * stays inline); written again, it is buffered under either name,
	 * and remove of the last link frees the buffer and gives its
	 * blocks back to statfs. */
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(fs_statfs(v, &s0), 0);
	l = make_file(v, "linked");
	put(v, l, 0, 100 * KiB, 10);
	CHECK_EQ(fs_link(v, NULL, l, root, "linked2"), 0);
	CHECK_EQ(counters(v).dalloc_files, 0);
	CHECK_EQ(extents(v, l), 1);
	put(v, l, 100 * KiB, 100 * KiB, 10);
	CHECK_EQ(counters(v).dalloc_files, 1);
	CHECK_EQ(fs_lookup(v, NULL, root, "linked2", &got, &a), 0);
	CHECK_EQ(a.size, 200 * KiB);
	CHECK_EQ(fs_remove(v, NULL, root, "linked"), 0);
	CHECK_EQ(counters(v).dalloc_files, 1);
	CHECK(reads_back(v, got, 200 * KiB, 10));
	CHECK_EQ(fs_remove(v, NULL, root, "linked2"), 0);
	CHECK_EQ(counters(v).dalloc_files, 0);
	CHECK_EQ(counters(v).dalloc_bytes, 0);
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(fs_statfs(v, &s1), 0);
	CHECK_EQ(s1.free_blocks, s0.free_blocks);

	/* Rename over an old file: the new one's data is placed by the
	 * rename itself, before any sync. */
	old = make_file(v, "config");
	put(v, old, 0, 12000, 11);
	CHECK_EQ(fs_commit(v, old), 0);
	nw = make_file(v, "config.tmp");
	put(v, nw, 0, 13000, 12);
	CHECK_EQ(counters(v).dalloc_files, 1);
	CHECK_EQ(fs_rename(v, NULL, root, "config.tmp", root, "config"), 0);
	CHECK_EQ(counters(v).dalloc_files, 0);
	CHECK_EQ(fs_lookup(v, NULL, root, "config", &got, &a), 0);
	CHECK_EQ(got.num, nw.num);
	CHECK_EQ(a.size, 13000);
	CHECK_EQ(extents(v, nw), 1);
	CHECK(reads_back(v, nw, 13000, 12));
	CHECK_EQ(fs_getattr(v, old, &a), -ESTALE);
}

/* The byte cap places the oldest files until half of it is left. */
static void test_cap(struct fs_volume *v)
{
	struct fs_ino p, q;
	struct fs_counters k0 = counters(v), k;

	fs_set_dalloc_limit(v, 1024 * KiB);
	p = make_file(v, "cap-p");
	q = make_file(v, "cap-q");
	/* (each first piece inline: 192 and 64 pages wait) */
	for (int i = 0; i < 193; i++)
		put(v, p, (uint64_t)i * 4 * KiB, 4 * KiB, 13);
	for (int i = 0; i < 65; i++)
		put(v, q, (uint64_t)i * 4 * KiB, 4 * KiB, 14);
	k = counters(v);
	CHECK_EQ(k.dalloc_bytes, 1024 * KiB); /* at the cap, not over it */
	CHECK_EQ(k.dalloc_placed, k0.dalloc_placed);
	put(v, q, 260 * KiB, 4 * KiB, 14);
	k = counters(v);
	CHECK_EQ(k.dalloc_placed, k0.dalloc_placed + 1);
	CHECK_EQ(k.dalloc_files, 1);
	CHECK_EQ(k.dalloc_bytes, 260 * KiB);
	CHECK_EQ(extents(v, p), 1);
	CHECK_EQ(extents(v, q), 0);
	CHECK(reads_back(v, p, 772 * KiB, 13));
	CHECK(reads_back(v, q, 264 * KiB, 14));
	/* By age: everything buffered 0 ms or more. */
	CHECK_EQ(fs_place_old(v, 60000), 0);
	CHECK_EQ(counters(v).dalloc_files, 1);
	CHECK_EQ(fs_place_old(v, 0), 1);
	CHECK_EQ(counters(v).dalloc_files, 0);
	CHECK_EQ(extents(v, q), 1);
	fs_set_dalloc_limit(v, 64ull << 20);
}

/* A crash after a commit: the committed file whole, the buffered one at
 * the size it had on disk (its create and its first piece, inline,
 * committed; none of the rest). */
static void test_crash_copy(struct fs_volume *v)
{
	struct fs_volume *c = NULL;
	struct fs_ino kept, lost, root, got;
	struct fs_attr a;

	kept = make_file(v, "kept");
	lost = make_file(v, "lost");
	CHECK_EQ(fs_sync(v), 0);
	for (int i = 0; i < 16; i++) {
		put(v, kept, (uint64_t)i * 4 * KiB, 4 * KiB, 15);
		put(v, lost, (uint64_t)i * 4 * KiB, 4 * KiB, 16);
	}
	CHECK_EQ(fs_commit(v, kept), 0);
	CHECK_EQ(counters(v).dalloc_files, 1);
	CHECK_EQ(copy_file(image, copy), 0);
	CHECK_EQ(fs_open(copy, 0, &c), 0);
	if (!c)
		return;
	CHECK_EQ(fs_root(c, &root), 0);
	CHECK_EQ(fs_lookup(c, NULL, root, "kept", &got, &a), 0);
	CHECK_EQ(a.size, 64 * KiB);
	CHECK(reads_back(c, got, 64 * KiB, 15));
	CHECK_EQ(fs_lookup(c, NULL, root, "lost", &got, &a), 0);
	CHECK_EQ(a.size, 4 * KiB);
	CHECK(reads_back(c, got, 4 * KiB, 16));
	CHECK_EQ(fs_check_invariants(c, NULL, NULL), 0);
	CHECK_EQ(fs_close(c), 0);
	unlink(copy);
	/* The live volume still has it, and close places it. */
	CHECK(reads_back(v, lost, 64 * KiB, 16));
}

/* A one-chunk volume of 16 MiB on a memory store (*mem), whose writes
 * the tests make fail. */
static struct fs_volume *mem_volume(struct chunk_store **mem)
{
	struct fs_mkfs_opts o = { .chunk_size = 16u << 20, .chunk_count = 1, .force = 1 };
	struct chunk_store *st = NULL;
	struct fs_volume *v = NULL;
	static uint8_t img[16u << 20];
	char why[256];
	int fd;

	CHECK_EQ(fs_mkfs(copy, &o), 0);
	fd = open(copy, O_RDONLY);
	CHECK(fd >= 0 && pread(fd, img, sizeof(img), 0) == (ssize_t)sizeof(img));
	if (fd >= 0)
		close(fd);
	unlink(copy);
	CHECK_EQ(store_mem_new(sizeof(img), img, &st), 0);
	*mem = st;
	CHECK_EQ(fs_open_stores(&st, 1, 0, &v, why, sizeof(why)), 0);
	if (st)
		store_close(st); /* not taken over */
	return v;
}

static int first_block(void *ctx, const struct fs_extent *e)
{
	if (*(uint64_t *)ctx == UINT64_MAX)
		*(uint64_t *)ctx = e->pblk;
	return 0;
}

/* Where the next 64 KiB placed goes: a probe file is placed there, its
 * first block read, and the probe removed (its blocks free again). */
static uint64_t next_data_block(struct fs_volume *v)
{
	struct fs_ino root, p = make_file(v, "probe");
	uint64_t b = UINT64_MAX;

	put(v, p, 0, 64 * KiB, 30);
	CHECK_EQ(fs_commit(v, p), 0);
	CHECK_EQ(fs_file_extents(v, p, first_block, &b), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_remove(v, NULL, root, "probe"), 0);
	CHECK_EQ(fs_sync(v), 0);
	return b;
}

/* A placement that fails keeps its buffer: the sync succeeds (another
 * file placed in it is committed), the file's own commit gets the error,
 * and the next commit, with the store sound again, places every byte.
 * Nothing is given up: fs_drop_count stays. */
static void test_failed_retried(void)
{
	struct chunk_store *mem = NULL;
	struct fs_volume *v = mem_volume(&mem), *c = NULL;
	struct fs_ino f, g, root, got;
	struct fs_attr a;
	struct fs_counters k;
	uint64_t drops, at;
	int fd;

	if (!v)
		return;
	f = make_file(v, "doomed");
	g = make_file(v, "fine");
	CHECK_EQ(fs_sync(v), 0);
	at = next_data_block(v);
	CHECK(at != UINT64_MAX);
	drops = fs_drop_count(v);
	/* g is placed first (the oldest), after the probe's blocks (freed
	 * blocks wait for a later transaction); f next, where writes fail. */
	put(v, g, 0, 64 * KiB, 18);
	put(v, f, 0, 64 * KiB, 17);
	store_mem_bad_range(mem, (at + 32) * 4096, 1u << 20, EIO, 1);
	CHECK_EQ(fs_sync(v), 0);
	k = counters(v);
	CHECK_EQ(k.dalloc_files, 1);
	CHECK_EQ(k.dalloc_failing, 1);
	CHECK_EQ(k.dalloc_failures, 1);
	CHECK_EQ(fs_drop_count(v), drops);
	CHECK(reads_back(v, f, 64 * KiB, 17)); /* from the buffer */
	CHECK_EQ(fs_commit(v, g), 0);
	CHECK_EQ(fs_commit(v, f), -EIO); /* its own commit hears of it */
	CHECK_EQ(counters(v).dalloc_failures, 2);
	CHECK_EQ(fs_getattr(v, f, &a), 0);
	CHECK_EQ(a.size, 64 * KiB);
	/* Within its backoff, a sync leaves it alone. */
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(counters(v).dalloc_failures, 2);
	store_mem_bad_range(mem, 0, 0, 0, 0);
	CHECK_EQ(fs_commit(v, f), 0); /* once: the store is sound again */
	CHECK_EQ(fs_commit(v, f), 0);
	k = counters(v);
	CHECK_EQ(k.dalloc_files, 0);
	CHECK_EQ(k.dalloc_failing, 0);
	CHECK_EQ(k.dalloc_retried, 1);
	CHECK_EQ(k.dalloc_gave_up_time + k.dalloc_gave_up_offline + k.dalloc_gave_up_memory +
			 k.dalloc_gave_up_close,
		 0);
	CHECK_EQ(fs_drop_count(v), drops);
	CHECK(reads_back(v, f, 64 * KiB, 17));
	CHECK(reads_back(v, g, 64 * KiB, 18));
	{
		uint64_t bf = UINT64_MAX, bg = UINT64_MAX;
		CHECK_EQ(fs_file_extents(v, f, first_block, &bf), 0);
		CHECK_EQ(fs_file_extents(v, g, first_block, &bg), 0);
		CHECK_EQ(bg, at + 16);
		/* where writes failed before */
		CHECK(bf >= at + 32 && bf < at + 32 + 256);
	}
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	/* On disk (the store's bytes, opened as an image): both whole. */
	fd = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK_EQ(pwrite(fd, store_mem_bytes(mem), 16u << 20, 0), (ssize_t)(16u << 20));
		close(fd);
	}
	CHECK_EQ(fs_open(copy, FS_OPEN_RDONLY, &c), 0);
	if (c) {
		CHECK_EQ(fs_root(c, &root), 0);
		CHECK_EQ(fs_lookup(c, NULL, root, "doomed", &got, &a), 0);
		CHECK_EQ(a.size, 64 * KiB);
		CHECK(reads_back(c, got, 64 * KiB, 17));
		CHECK_EQ(fs_lookup(c, NULL, root, "fine", &got, &a), 0);
		CHECK(reads_back(c, got, 64 * KiB, 18));
		CHECK_EQ(fs_close(c), 0);
	}
	unlink(copy);
	CHECK_EQ(fs_close(v), 0);
}

/* Failing for long enough (here: 2 failures, no time bound), the buffer
 * is given up: counted, fs_drop_count moves, the file at its placed size.
 * Failing buffers holding the cap are given up too. */
static void test_give_up(void)
{
	struct chunk_store *mem = NULL;
	struct fs_volume *v = mem_volume(&mem);
	struct fs_ino f, g;
	struct fs_attr a;
	struct fs_counters k;
	uint64_t drops;

	if (!v)
		return;
	f = make_file(v, "doomed");
	g = make_file(v, "other");
	CHECK_EQ(fs_sync(v), 0);
	fs_set_dalloc_give_up(v, 2, 0);
	drops = fs_drop_count(v);
	put(v, f, 0, 64 * KiB, 19);
	store_mem_fail(mem, EIO);
	CHECK_EQ(fs_place(v, f), -EIO);
	CHECK_EQ(counters(v).dalloc_files, 1);
	CHECK_EQ(fs_drop_count(v), drops);
	CHECK_EQ(fs_place(v, f), -EIO); /* the second: given up */
	k = counters(v);
	CHECK_EQ(k.dalloc_files, 0);
	CHECK_EQ(k.dalloc_gave_up_time, 1);
	CHECK_EQ(fs_drop_count(v), drops + 1);
	store_mem_fail(mem, 0);
	CHECK_EQ(fs_sync(v), 0);
	CHECK_EQ(fs_getattr(v, f, &a), 0);
	CHECK_EQ(a.size, 0);
	CHECK_EQ(fs_commit(v, f), 0); /* nothing left: the verifier said so */

	/* The cap: f fails and is kept; with the cap lowered below it, a
	 * write to g places g and gives f up. */
	fs_set_dalloc_give_up(v, 100, 60000);
	put(v, f, 0, 64 * KiB, 20);
	store_mem_fail(mem, EIO);
	CHECK_EQ(fs_place(v, f), -EIO);
	store_mem_fail(mem, 0);
	fs_set_dalloc_limit(v, 32 * KiB);
	put(v, g, 0, 8 * KiB, 21);
	k = counters(v);
	CHECK_EQ(k.dalloc_files, 0);
	CHECK_EQ(k.dalloc_gave_up_memory, 1);
	CHECK_EQ(fs_drop_count(v), drops + 2);
	CHECK_EQ(fs_commit(v, g), 0);
	CHECK(reads_back(v, g, 8 * KiB, 21));
	CHECK_EQ(fs_getattr(v, f, &a), 0);
	CHECK_EQ(a.size, 0);
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);

	/* Close: a buffer that cannot be placed is given up and close fails. */
	fs_set_dalloc_limit(v, 1u << 20);
	put(v, f, 0, 64 * KiB, 22);
	CHECK_EQ(fs_sync(v), 0); /* placed: the store is sound */
	put(v, f, 64 * KiB, 64 * KiB, 22);
	store_mem_fail(mem, EIO);
	CHECK(fs_close(v) < 0);
}

/* A buffered file whose chunk is forced offline (its placement failing
 * with the chunk's store) is given up: counted as offline, both drop
 * counts move (the chunk dropped changes too), and the other chunk's
 * files are unaffected. */
static void test_offline(void)
{
	/* chunk 1 small-file: a directory of the root goes there */
	static const enum fs_chunk_kind kinds[2] = { FS_KIND_GENERAL, FS_KIND_SMALL };
	struct fs_mkfs_opts o = { .chunk_size = 16u << 20, .chunk_count = 2, .kinds = kinds,
				  .force = 1 };
	struct chunk_store *st[2] = { NULL, NULL }, *mem1;
	struct fs_volume *v = NULL;
	static uint8_t img[32u << 20];
	struct fs_ino root, d = { 0 }, f, g;
	struct fs_attr a;
	struct fs_counters k;
	uint64_t drops, changes;
	char why[256];
	int fd;

	CHECK_EQ(fs_mkfs(copy, &o), 0);
	fd = open(copy, O_RDONLY);
	CHECK(fd >= 0 && pread(fd, img, sizeof(img), 0) == (ssize_t)sizeof(img));
	if (fd >= 0)
		close(fd);
	unlink(copy);
	CHECK_EQ(store_mem_new(16u << 20, img, &st[0]), 0);
	CHECK_EQ(store_mem_new(16u << 20, img + (16u << 20), &st[1]), 0);
	mem1 = st[1];
	CHECK_EQ(fs_open_stores(st, 2, 0, &v, why, sizeof(why)), 0);
	if (!v)
		return;
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_mkdir(v, NULL, root, "d", 0755, &d, NULL), 0);
	CHECK_EQ(fs_create(v, NULL, d, "far", 0644, FS_CREATE_GUARDED, 0, &f, NULL), 0);
	g = make_file(v, "near");
	CHECK_EQ(OD_STABLE_CHUNK(f.num), 1);
	CHECK_EQ(OD_STABLE_CHUNK(g.num), 0);
	CHECK_EQ(fs_sync(v), 0);
	put(v, f, 0, 64 * KiB, 23);
	put(v, g, 0, 64 * KiB, 24);
	drops = fs_drop_count(v);
	changes = fs_change_drop_count(v);
	store_mem_fail(mem1, EIO);
	CHECK_EQ(fs_place(v, f), -EIO); /* kept */
	CHECK_EQ(counters(v).dalloc_files, 2);
	CHECK_EQ(fs_drop_count(v), drops);
	CHECK_EQ(fs_chunk_offline(v, 1, 0, why, sizeof(why)), -EIO); /* not forced: refused */
	CHECK_EQ(fs_chunk_offline(v, 1, 1, why, sizeof(why)), 0);
	k = counters(v);
	CHECK_EQ(k.dalloc_files, 0); /* g placed by the offline's placement */
	CHECK_EQ(k.dalloc_gave_up_offline, 1);
	CHECK_EQ(k.dalloc_gave_up_time + k.dalloc_gave_up_memory + k.dalloc_gave_up_close, 0);
	CHECK_EQ(fs_drop_count(v), drops + 2);
	CHECK_EQ(fs_change_drop_count(v), changes + 1);
	CHECK_EQ(fs_commit(v, g), 0);
	CHECK(reads_back(v, g, 64 * KiB, 24));
	CHECK(fs_getattr(v, f, &a) < 0); /* in the offline chunk */
	CHECK_EQ(fs_close(v), 0);
}

int main(void)
{
	struct fs_mkfs_opts o = { .chunk_size = 64u << 20, .chunk_count = 1, .force = 1 };
	const char *dir = getenv("TMPDIR");
	struct fs_volume *v = NULL;
	struct fs_ino root, lost;
	int fd;

	snprintf(image, sizeof(image), "%s/dalloc_test.XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(image);
	if (fd < 0)
		return 99;
	close(fd);
	snprintf(copy, sizeof(copy), "%s.crash", image);
	CHECK_EQ(fs_mkfs(image, &o), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (!v)
		return test_done("dalloc");
	test_interleaved(v);
	test_seen(v);
	test_cap(v);
	test_crash_copy(v);
	test_failed_retried();
	test_give_up();
	test_offline();
	CHECK_EQ(fs_check_invariants(v, NULL, NULL), 0);
	CHECK_EQ(fs_close(v), 0);
	v = NULL;
	/* Close placed what was buffered. */
	CHECK_EQ(fs_open(image, 0, &v), 0);
	if (v) {
		struct fs_attr a;
		CHECK_EQ(fs_root(v, &root), 0);
		CHECK_EQ(fs_lookup(v, NULL, root, "lost", &lost, &a), 0);
		CHECK_EQ(a.size, 64 * KiB);
		CHECK(reads_back(v, lost, 64 * KiB, 16));
		CHECK_EQ(extents(v, lost), 1);
		CHECK_EQ(fs_close(v), 0);
	}
	unlink(image);
	return test_done("dalloc");
}
