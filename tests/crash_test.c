/* The crash-state harness: each workload runs once over recording stores;
 * every crash state its I/O log allows must then recover to a valid volume
 * holding the last acknowledged tree (or the one whose sync was in flight). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crash_state.h"
#include "fs/format/header.h"
#include "fs/fs.h"
#include "fs/layout.h"
#include "fs/store/store.h"
#include "fs/store/store_mem.h"

#define CHUNK_SIZE (1ull << 20)
#define KiB 1024u

/* --- workloads: ops by path, each remembering the first failure ----------- */

struct wl {
	struct fs_volume *v;
	int err;
	char what[640];
	void (*checkpoint)(struct wl *w);
	void *ctx;
	char leaf[FS_NAME_MAX + 1];
};

static void op_failed(struct wl *w, const char *op, const char *path, int ret)
{
	if (w->err)
		return;
	w->err = ret ? ret : -EIO;
	snprintf(w->what, sizeof(w->what), "%s %s: %s", op, path, strerror(-w->err));
}

static int resolve(struct wl *w, const char *path, struct fs_ino *out)
{
	char comp[FS_NAME_MAX + 1];
	const char *p = path;
	int ret = fs_root(w->v, out);

	while (ret == 0 && *p) {
		size_t n;
		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n > FS_NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(comp, p, n);
		comp[n] = '\0';
		ret = fs_lookup(w->v, NULL, *out, comp, out, NULL);
		p += n;
	}
	return ret;
}

/* The directory holding path, and the last name in w->leaf. */
static int resolve_parent(struct wl *w, const char *path, struct fs_ino *dir)
{
	const char *slash = strrchr(path, '/');
	char parent[512];
	size_t n;

	if (!slash || strlen(slash + 1) > FS_NAME_MAX || (size_t)(slash - path) >= sizeof(parent))
		return -EINVAL;
	n = (size_t)(slash - path);
	memcpy(parent, path, n);
	parent[n] = '\0';
	strcpy(w->leaf, slash + 1);
	return resolve(w, parent, dir);
}

/* Bytes of version seed of a file at offsets [off, off + len): two seeds
 * differ at every offset (37 is odd, seeds stay below 256). */
static void pattern(uint8_t *buf, size_t len, uint64_t off, unsigned seed)
{
	for (size_t i = 0; i < len; i++) {
		uint64_t pos = off + i;
		buf[i] = (uint8_t)(((pos * 2654435761u) >> 13) + (pos >> 12) + seed * 37u);
	}
}

static void do_sync(struct wl *w)
{
	int ret;

	if (w->err)
		return;
	ret = fs_sync(w->v);
	if (ret < 0)
		op_failed(w, "sync", "", ret);
	else
		w->checkpoint(w);
}

/* fn (fs_commit, fs_place) on the file at path; a durability point
 * (durable) is a checkpoint. */
static void do_file_call(struct wl *w, const char *path,
			 int (*fn)(struct fs_volume *, struct fs_ino), const char *what, int durable)
{
	struct fs_ino ino;
	int ret;

	if (w->err)
		return;
	ret = resolve(w, path, &ino);
	if (ret == 0)
		ret = fn(w->v, ino);
	if (ret < 0)
		op_failed(w, what, path, ret);
	else if (durable)
		w->checkpoint(w);
}

static void do_commit(struct wl *w, const char *path)
{
	do_file_call(w, path, fs_commit, "commit", 1);
}

static void do_mkdir(struct wl *w, const char *path, uint32_t perm)
{
	struct fs_ino dir;
	int ret;

	if (w->err)
		return;
	ret = resolve_parent(w, path, &dir);
	if (ret == 0)
		ret = fs_mkdir(w->v, NULL, dir, w->leaf, perm, NULL, NULL);
	if (ret < 0)
		op_failed(w, "mkdir", path, ret);
}

static void do_create(struct wl *w, const char *path, uint32_t perm)
{
	struct fs_ino dir;
	int ret;

	if (w->err)
		return;
	ret = resolve_parent(w, path, &dir);
	if (ret == 0)
		ret = fs_create(w->v, NULL, dir, w->leaf, perm, FS_CREATE_GUARDED, 0, NULL, NULL);
	if (ret < 0)
		op_failed(w, "create", path, ret);
}

/* A write of version seed's bytes; a stable one is a durability point. */
static void do_write(struct wl *w, const char *path, uint64_t off, size_t len, unsigned seed,
		     enum fs_stable_how stable)
{
	uint8_t *buf;
	struct fs_ino ino;
	int ret;

	if (w->err)
		return;
	buf = malloc(len ? len : 1);
	if (!buf) {
		op_failed(w, "write", path, -ENOMEM);
		return;
	}
	pattern(buf, len, off, seed);
	ret = resolve(w, path, &ino);
	if (ret == 0)
		ret = fs_write(w->v, NULL, ino, off, len, buf, stable, NULL);
	free(buf);
	if (ret < 0)
		op_failed(w, "write", path, ret);
	else if (stable != FS_UNSTABLE)
		w->checkpoint(w);
}

/* A file created and written in one go (small ones stay inline). */
static void do_put(struct wl *w, const char *path, uint32_t perm, size_t len, unsigned seed,
		   enum fs_stable_how stable)
{
	do_create(w, path, perm);
	do_write(w, path, 0, len, seed, stable);
}

static void do_setattr(struct wl *w, const char *path, uint32_t valid, uint32_t perm,
		       uint64_t size)
{
	struct fs_setattr sa = { .valid = valid, .mode = perm, .size = size };
	struct fs_ino ino;
	int ret;

	if (w->err)
		return;
	ret = resolve(w, path, &ino);
	if (ret == 0)
		ret = fs_setattr(w->v, NULL, ino, &sa, NULL);
	if (ret < 0)
		op_failed(w, "setattr", path, ret);
}

static void do_trunc(struct wl *w, const char *path, uint64_t size)
{
	do_setattr(w, path, FS_SET_SIZE, 0, size);
}

static void do_chmod(struct wl *w, const char *path, uint32_t perm)
{
	do_setattr(w, path, FS_SET_MODE, perm, 0);
}

static void do_symlink(struct wl *w, const char *path, const char *target)
{
	struct fs_ino dir;
	int ret;

	if (w->err)
		return;
	ret = resolve_parent(w, path, &dir);
	if (ret == 0)
		ret = fs_symlink(w->v, NULL, dir, w->leaf, target, 0777, NULL, NULL);
	if (ret < 0)
		op_failed(w, "symlink", path, ret);
}

static void do_link(struct wl *w, const char *existing, const char *path)
{
	struct fs_ino ino, dir;
	int ret;

	if (w->err)
		return;
	ret = resolve(w, existing, &ino);
	if (ret == 0)
		ret = resolve_parent(w, path, &dir);
	if (ret == 0)
		ret = fs_link(w->v, NULL, ino, dir, w->leaf);
	if (ret < 0)
		op_failed(w, "link", path, ret);
}

static void do_remove(struct wl *w, const char *path, int isdir)
{
	struct fs_ino dir;
	int ret;

	if (w->err)
		return;
	ret = resolve_parent(w, path, &dir);
	if (ret == 0)
		ret = isdir ? fs_rmdir(w->v, NULL, dir, w->leaf)
			    : fs_remove(w->v, NULL, dir, w->leaf);
	if (ret < 0)
		op_failed(w, isdir ? "rmdir" : "remove", path, ret);
}

static void do_unlink(struct wl *w, const char *path)
{
	do_remove(w, path, 0);
}

static void do_rmdir(struct wl *w, const char *path)
{
	do_remove(w, path, 1);
}

static void do_rename(struct wl *w, const char *from, const char *to)
{
	struct fs_ino fdir, tdir;
	char fname[FS_NAME_MAX + 1];
	int ret;

	if (w->err)
		return;
	ret = resolve_parent(w, from, &fdir);
	strcpy(fname, w->leaf);
	if (ret == 0)
		ret = resolve_parent(w, to, &tdir);
	if (ret == 0)
		ret = fs_rename(w->v, NULL, fdir, fname, tdir, w->leaf);
	if (ret < 0)
		op_failed(w, "rename", from, ret);
}

/* The chunk that gave an inode its stable number (ondisk.h's OD_STABLE:
 * the chunk index is the number's upper half). */
static uint32_t fileid_chunk(uint64_t fileid)
{
	return (uint32_t)(fileid >> 32);
}

struct chunk_seen {
	uint32_t mask;
};

static int note_chunk(void *ctx, const struct fs_dirent *d)
{
	struct chunk_seen *cs = ctx;

	if (fileid_chunk(d->fileid) < 32)
		cs->mask |= 1u << fileid_chunk(d->fileid);
	return 0;
}

/* Fail the workload unless dir has entries in a chunk other than its own:
 * entries sit in the chunk of the inode they name, so it has a part there. */
static void expect_spread(struct wl *w, const char *path)
{
	struct chunk_seen cs = { 0 };
	struct fs_ino dir;
	struct fs_attr a;
	uint64_t verf = 0;
	int eof = 0, ret;

	if (w->err)
		return;
	ret = resolve(w, path, &dir);
	if (ret == 0)
		ret = fs_getattr(w->v, dir, &a);
	if (ret == 0)
		ret = fs_readdir(w->v, NULL, dir, 0, &verf, 0, note_chunk, &cs, &eof);
	if (ret == 0 && (!eof || !(cs.mask & ~(1u << fileid_chunk(a.fileid)))))
		ret = -EXDEV;
	if (ret < 0)
		op_failed(w, "expect parts in other chunks", path, ret);
}

/* (a) A small tree: creates, writes, renames, links, unlinks, truncates,
 * mkdirs, with a sync after every one to three operations. */
static void wl_tree(struct wl *w)
{
	do_mkdir(w, "/src", 0755);
	do_mkdir(w, "/doc", 0750);
	do_sync(w);
	do_put(w, "/src/main.c", 0644, 5000, 1, FS_UNSTABLE);
	do_sync(w);
	do_put(w, "/src/util.c", 0644, 9000, 2, FS_UNSTABLE);
	do_sync(w);
	do_put(w, "/doc/readme", 0644, 300, 3, FS_UNSTABLE);
	do_symlink(w, "/doc/link", "../src/main.c");
	do_sync(w);
	do_mkdir(w, "/src/lib", 0700);
	do_put(w, "/src/lib/a.o", 0600, 20000, 4, FS_UNSTABLE);
	do_sync(w);
	do_link(w, "/src/main.c", "/doc/main.hard");
	do_sync(w);
	do_rename(w, "/src/util.c", "/doc/util.txt");
	do_sync(w);
	do_trunc(w, "/src/lib/a.o", 7000);
	do_sync(w);
	do_unlink(w, "/src/main.c");
	do_sync(w);
	do_mkdir(w, "/tmp", 0777);
	do_rename(w, "/src/lib", "/tmp/lib2");
	do_sync(w);
	do_write(w, "/doc/util.txt", 3000, 4000, 5, FS_UNSTABLE);
	do_chmod(w, "/doc/util.txt", 0600);
	do_sync(w);
	for (unsigned i = 0; i < 6; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/tmp/n%u", i);
		do_put(w, p, 0644, 100 + i * 1100, 10 + i, FS_UNSTABLE);
		do_sync(w);
	}
	do_rename(w, "/tmp/n1", "/tmp/n2");
	do_sync(w);
	do_trunc(w, "/tmp/n3", 12000);
	do_write(w, "/tmp/n3", 10000, 100, 20, FS_UNSTABLE);
	do_sync(w);
	do_unlink(w, "/doc/link");
	do_rmdir(w, "/src");
	do_sync(w);
	do_unlink(w, "/tmp/lib2/a.o");
	do_rmdir(w, "/tmp/lib2");
	do_sync(w);
	do_symlink(w, "/tmp/ln", "a/rather/long/target/that/does/not/exist/anywhere/at/all/"
				 "and/keeps/going/for/a/while/to/make/the/symlink/bigger/than/a/"
				 "short/one");
	do_chmod(w, "/tmp", 0700);
	do_sync(w);
	do_rename(w, "/doc", "/tmp/doc2");
	do_write(w, "/tmp/n4", 0, 3000, 21, FS_UNSTABLE);
	do_sync(w);
	do_unlink(w, "/tmp/n0");
	do_trunc(w, "/tmp/n5", 0);
	do_sync(w);
}

/* Piece sizes in 64 KiB .. 256 KiB, a fixed sequence. */
static size_t piece(unsigned i)
{
	static const unsigned kib[] = { 64, 192, 128, 256, 96, 160, 224, 64, 128, 256 };

	return (size_t)kib[i % (sizeof(kib) / sizeof(kib[0]))] * KiB;
}

/* (b) Files growing across chunks in FILE_SYNC pieces: each outgrows what
 * one 1 MiB chunk holds (824 KiB of data), and an inode maps only blocks of
 * its own chunk, so continuation inodes appear; then an overwrite across a
 * chunk boundary, a cut and a regrow. */
static void wl_grow(struct wl *w)
{
	static const char *const name[] = { "/big/a.bin", "/big/b.bin", "/c.bin" };
	static const uint64_t want[] = { 1536 * KiB, 1280 * KiB, 1024 * KiB };
	uint64_t size[3] = { 0, 0, 0 };
	unsigned n = 0;

	do_mkdir(w, "/big", 0755);
	do_sync(w);
	for (int f = 0; f < 3; f++)
		do_create(w, name[f], 0644);
	/* A small file whose data stays beside it: moved with its data when
	 * its chunk is evacuated (below). */
	do_put(w, "/big/data", 0644, 20000, 73, FS_FILE_SYNC);
	do_sync(w);
	for (int busy = 1; busy && !w->err;) {
		busy = 0;
		for (int f = 0; f < 3; f++) {
			size_t len = piece(n++);
			if (size[f] >= want[f])
				continue;
			if (len > want[f] - size[f])
				len = (size_t)(want[f] - size[f]);
			do_write(w, name[f], size[f], len, 1 + (unsigned)f, FS_FILE_SYNC);
			size[f] += len;
			busy = 1;
		}
	}
	do_write(w, "/big/a.bin", 700 * KiB + 100, 300 * KiB, 7, FS_FILE_SYNC);
	do_trunc(w, "/big/b.bin", 300 * KiB + 123);
	do_sync(w);
	do_write(w, "/big/b.bin", 300 * KiB + 123, 200 * KiB, 8, FS_FILE_SYNC);
	do_unlink(w, "/c.bin");
	do_sync(w);
	do_write(w, "/big/a.bin", 1536 * KiB, 128 * KiB, 9, FS_DATA_SYNC);
}

/* (c) Directories spilling into other chunks: large files and many entries
 * fill chunk 0 (its inodes run out), so new entries of directories living
 * there go to parts in other chunks; then removes and renames across
 * directories, and a part emptied. */
static void wl_spill(struct wl *w)
{
	char p[64], q[64];

	do_mkdir(w, "/d1", 0755);
	do_mkdir(w, "/d2", 0755);
	do_sync(w);
	do_create(w, "/fill.dat", 0644);
	for (unsigned i = 0; i < 4; i++)
		do_write(w, "/fill.dat", i * 208 * KiB, 208 * KiB, 1, FS_FILE_SYNC);
	for (unsigned i = 0; i < 40; i++) {
		snprintf(p, sizeof(p), "/d1/entry-%02u", i);
		do_put(w, p, 0644, 40 + i * 7, 20 + i, FS_UNSTABLE);
		if (i % 6 == 5)
			do_sync(w);
	}
	do_sync(w);
	do_put(w, "/d2/big.dat", 0644, 500 * KiB, 2, FS_FILE_SYNC);
	for (unsigned i = 0; i < 16; i++) {
		snprintf(p, sizeof(p), "/d%u/more-%02u", 1 + i % 2, i);
		do_put(w, p, 0640, 3000 + i * 500, 70 + i, FS_UNSTABLE);
		if (i % 4 == 3)
			do_sync(w);
	}
	expect_spread(w, "/d1");
	for (unsigned i = 0; i < 12; i++) {
		snprintf(p, sizeof(p), "/d1/entry-%02u", i * 3);
		do_unlink(w, p);
		if (i % 4 == 3)
			do_sync(w);
	}
	for (unsigned i = 0; i < 10; i++) {
		snprintf(p, sizeof(p), "/d1/entry-%02u", 1 + i * 3);
		snprintf(q, sizeof(q), "/d2/moved-%02u", i);
		do_rename(w, p, q);
		if (i % 3 == 2)
			do_sync(w);
	}
	do_rename(w, "/d2/more-01", "/d1/back-01");
	do_rename(w, "/d1/more-00", "/d2/more-03"); /* over an existing name */
	do_sync(w);
	do_unlink(w, "/fill.dat");
	do_sync(w);
	for (unsigned i = 0; i < 6; i++) {
		snprintf(p, sizeof(p), "/d2/late-%u", i);
		do_put(w, p, 0644, 500, 100 + i, FS_UNSTABLE);
	}
	do_sync(w);
	for (unsigned i = 0; i < 16; i++) {
		snprintf(p, sizeof(p), "/d1/more-%02u", i);
		if (i % 2 == 0 && i != 0)
			do_unlink(w, p);
	}
	do_rename(w, "/d1", "/d2/d1");
	do_sync(w);
}

/* (d) Inline data: small files written in one go at creation, then changed
 * (the data moves out of the entry); hard links whose first link goes (the
 * inode relocates to a slot), renames carrying inline data along. */
static void wl_inline(struct wl *w)
{
	do_mkdir(w, "/i", 0755);
	do_mkdir(w, "/j", 0755);
	do_sync(w);
	do_put(w, "/i/s1", 0644, 100, 1, FS_UNSTABLE);
	do_put(w, "/i/s2", 0644, 700, 2, FS_UNSTABLE);
	do_put(w, "/i/s3", 0644, 1500, 3, FS_UNSTABLE);
	do_put(w, "/i/s4", 0600, 40, 4, FS_UNSTABLE);
	do_sync(w);
	do_put(w, "/i/s5", 0644, 300, 5, FS_FILE_SYNC);
	do_write(w, "/i/s1", 100, 200, 6, FS_UNSTABLE);
	do_sync(w);
	do_write(w, "/i/s2", 10, 50, 7, FS_DATA_SYNC);
	do_link(w, "/i/s3", "/j/s3.link");
	do_sync(w);
	do_unlink(w, "/i/s3");
	do_sync(w);
	do_rename(w, "/i/s4", "/j/s4");
	do_sync(w);
	do_trunc(w, "/i/s5", 100);
	do_sync(w);
	do_put(w, "/j/t1", 0644, 2000, 8, FS_UNSTABLE);
	do_link(w, "/j/t1", "/i/t1a");
	do_link(w, "/j/t1", "/i/t1b");
	do_sync(w);
	do_unlink(w, "/j/t1");
	do_sync(w);
	do_unlink(w, "/i/t1a");
	do_sync(w);
	do_write(w, "/i/t1b", 2000, 3000, 9, FS_FILE_SYNC);
	do_create(w, "/j/e", 0644);
	do_write(w, "/j/e", 5000, 100, 10, FS_UNSTABLE);
	do_sync(w);
	do_put(w, "/j/u", 0644, 1000, 11, FS_UNSTABLE);
	do_rename(w, "/j/u", "/i/s2");
	do_sync(w);
	do_put(w, "/j/v", 0644, 800, 12, FS_UNSTABLE);
	do_link(w, "/j/v", "/i/v2");
	do_rename(w, "/j/v", "/i/v1");
	do_sync(w);
	do_unlink(w, "/i/v1");
	do_symlink(w, "/j/sl", "s4");
	do_commit(w, "/j/s4");
	do_write(w, "/i/v2", 0, 800, 13, FS_UNSTABLE);
	do_sync(w);
}

/* (e) Turns: three directories taking a create, then a 4 KiB write to the
 * new file, each its own transaction, by turns, as clients of a server do;
 * the units of one directory wait two transactions between changes, so
 * the lists name them as held entries (fs/txn.c). Files are removed and a
 * directory goes part way, freeing units that were named as held. */
static void wl_turns(struct wl *w)
{
	static const char *const dir[] = { "/a", "/b", "/c" };
	char p[32];

	for (unsigned d = 0; d < 3; d++)
		do_mkdir(w, dir[d], 0755);
	do_sync(w);
	for (unsigned i = 0; i < 12; i++) {
		snprintf(p, sizeof(p), "%s/f%u", dir[i % 3], i);
		do_create(w, p, 0644);
		do_sync(w);
		do_write(w, p, 0, 4096, 30 + i, FS_FILE_SYNC);
		do_sync(w);
		if (i % 4 == 3) {
			snprintf(p, sizeof(p), "%s/f%u", dir[(i + 1) % 3], i - 2);
			do_unlink(w, p);
			do_sync(w);
		}
	}
	for (unsigned i = 0; i < 9; i += 3) { /* f9 went in the loop */
		snprintf(p, sizeof(p), "/a/f%u", i);
		do_unlink(w, p);
	}
	do_rmdir(w, "/a");
	do_sync(w);
	do_put(w, "/b/late", 0644, 4096, 60, FS_FILE_SYNC);
	do_sync(w);
}

/* (h) The predictor kept in the volume: saved at every transaction (the
 * policy at 1 change, no interval), so crash states fall inside its
 * saves: the chain grows from one unit to two (22 entries and more),
 * lifetimes come with removes, and a file renamed over another ends one.
 * Every state's open must read the table whole (crash_state.c fails a
 * state whose open dropped it), fsck claims its units. */
static void wl_predict(struct wl *w)
{
	char p[48], q[48];

	fs_predictor_save_policy(w->v, 1, 0);
	do_mkdir(w, "/d", 0755);
	do_sync(w);
	for (unsigned i = 0; i < 14; i++) {
		snprintf(p, sizeof(p), "/d/n%u.s%u", i, i);
		do_put(w, p, 0644, 100 + 300 * i, 70 + i, FS_FILE_SYNC);
		do_sync(w);
		if (i % 4 == 2) {
			snprintf(p, sizeof(p), "/d/n%u.s%u", i - 1, i - 1);
			do_unlink(w, p);
			do_sync(w);
		}
	}
	snprintf(p, sizeof(p), "/d/n%u.s%u", 13, 13);
	snprintf(q, sizeof(q), "/d/n%u.s%u", 12, 12);
	do_rename(w, p, q);
	do_sync(w);
	/* (the saves happened, and the chain grew to its second unit) */
	if (!w->err) {
		struct fs_predictor_info pi;
		if (fs_predictor_info(w->v, &pi) < 0 || pi.units != 2 || pi.saves < 14 ||
		    pi.lives != 4) {
			w->err = -EUCLEAN;
			snprintf(w->what, sizeof(w->what),
				 "predictor: %u units, %llu saves, %llu lifetimes (2, 14+, 4 expected)",
				 pi.units, (unsigned long long)pi.saves,
				 (unsigned long long)pi.lives);
		}
	}
}

/* Draining chunk k, or no longer (a commit: a durability point). */
static void do_drain_set(struct wl *w, uint32_t k, int on)
{
	char why[256];
	int ret;

	if (w->err)
		return;
	ret = fs_chunk_drain(w->v, k, on, why, sizeof(why));
	if (ret < 0)
		op_failed(w, "drain", why, ret);
	else
		w->checkpoint(w);
}

static void do_drain(struct wl *w, uint32_t k)
{
	do_drain_set(w, k, 1);
}

/* One evacuation step of chunk k: 1 when it moved something (committed:
 * a durability point), 0 when nothing is left to move. */
static int do_evac_step(struct wl *w, uint32_t k)
{
	int ret;

	if (w->err)
		return 0;
	ret = fs_evac_step(w->v, k, 16, NULL); /* 64 KiB pieces */
	if (ret < 0)
		op_failed(w, "evacuation step", "", ret);
	else if (ret == 1)
		w->checkpoint(w);
	return ret > 0;
}

/* (f) Evacuation steps among client operations: files grown across
 * chunks in FILE_SYNC pieces leave continuations in several chunks; the
 * chunk holding most of them drains, and its continuations move out one
 * step (one transaction) at a time, while the files are overwritten across
 * their segments, grown (never into the draining chunk), cut, and small
 * files come and go. */
static void wl_evac(struct wl *w)
{
	static const char *const name[] = { "/big/a.bin", "/big/b.bin", "/c.bin" };
	struct fs_evac_info ei;
	uint64_t moved = 0;
	unsigned i = 0;
	char p[64];

	do_mkdir(w, "/big", 0755);
	do_sync(w);
	for (int f = 0; f < 3; f++)
		do_create(w, name[f], 0644);
	/* A small file whose data stays beside it: moved with its data when
	 * its chunk is evacuated (below). */
	do_put(w, "/big/data", 0644, 20000, 73, FS_FILE_SYNC);
	do_sync(w);
	for (unsigned j = 0; j < 7; j++)
		for (int f = 0; f < 3; f++)
			do_write(w, name[f], (uint64_t)j * 64 * KiB, 64 * KiB, 1 + (unsigned)f,
				 FS_FILE_SYNC);
	/* Twice: the chunk (not yet draining) holding most continuations. */
	for (int round = 0; round < 2 && !w->err; round++) {
		uint32_t k = 0, most = 0;
		for (uint32_t c = 1; c < fs_chunk_count(w->v); c++)
			if (fs_evac_info(w->v, c, &ei) == 0 && !ei.draining &&
			    ei.conts_left > most) {
				most = ei.conts_left;
				k = c;
			}
		if (!k)
			break;
		do_drain(w, k);
		for (; !w->err && do_evac_step(w, k); i++) {
			switch (i % 4) {
			case 0:
				do_write(w, name[i % 3], 300 * KiB + i * 1000, 100 * KiB, 10 + i,
					 FS_FILE_SYNC);
				break;
			case 1:
				snprintf(p, sizeof(p), "/big/s%u", i);
				do_put(w, p, 0644, 3000 + i * 100, 40 + i, FS_UNSTABLE);
				do_sync(w);
				break;
			case 2:
				do_write(w, name[(i + 1) % 3], 448 * KiB, 32 * KiB, 20 + i,
					 FS_DATA_SYNC);
				break;
			default:
				do_trunc(w, name[(i + 2) % 3], 400 * KiB + i);
				do_sync(w);
				break;
			}
		}
		if (!w->err && (fs_evac_info(w->v, k, &ei) < 0 || ei.conts_left != 0))
			op_failed(w, "continuations left after the last step", "", -EEXIST);
		moved += ei.conts_moved;
	}
	/* (the steps that empty a chunk move its inodes and drop its empty
	 * parts too, and a truncate between steps may take a continuation
	 * before it moves: at least one moves) */
	if (!w->err && moved < 1)
		op_failed(w, "no continuation moved", "", -ENOENT);
	/* Then the chunk homing /big's files (when it is not chunk 0 and not
	 * drained already): its first step fosters its map (one transaction
	 * over chunk 0, the host and it), and the files homed there change
	 * through the foster map: one removed (its number freed there), one
	 * written and cut, one made elsewhere. */
	if (!w->err) {
		struct fs_ino big;
		uint32_t k;
		if (resolve(w, "/big/a.bin", &big) == 0 && (k = (uint32_t)(big.num >> 32)) != 0 &&
		    fs_evac_info(w->v, k, &ei) == 0 && !ei.draining) {
			unsigned n = 0;
			/* Objects that hold nothing but their inode: they move. */
			do_create(w, "/big/empty", 0644);
			do_symlink(w, "/big/link", "a.bin");
			do_mkdir(w, "/big/emptydir", 0755);
			/* And the rest: a file with two links, a file whose
			 * first link went (an inode-area slot), a directory
			 * with an entry in it. */
			do_put(w, "/big/hl", 0644, 30000, 74, FS_FILE_SYNC);
			do_link(w, "/big/hl", "/big/hl2");
			do_put(w, "/big/sl", 0644, 9000, 75, FS_FILE_SYNC);
			do_link(w, "/big/sl", "/big/sl2");
			do_unlink(w, "/big/sl");
			do_mkdir(w, "/big/sub", 0755);
			do_put(w, "/big/sub/x", 0644, 5000, 76, FS_FILE_SYNC);
			do_sync(w);
			do_drain(w, k);
			do_evac_step(w, k);
			if (!w->err && (fs_evac_info(w->v, k, &ei) < 0 || !ei.fostered))
				op_failed(w, "the first step did not foster the map", "", -EINVAL);
			do_unlink(w, "/big/a.bin");
			do_sync(w);
			do_write(w, name[2], 100 * KiB, 8 * KiB, 70, FS_FILE_SYNC);
			do_put(w, "/big/after-foster", 0644, 5000, 71, FS_FILE_SYNC);
			do_trunc(w, "/big/s1", 100);
			do_sync(w);
			/* Every inode, one step each (a large file's tail a
			 * piece a step first), then the parts left empty, among
			 * changes; until the chunk is empty. */
			for (; !w->err && do_evac_step(w, k); n++) {
				if (n == 1)
					do_rename(w, "/big/link", "/big/link2");
				if (n == 2) {
					do_write(w, "/big/empty", 0, 100, 72, FS_FILE_SYNC);
					do_sync(w);
				}
				if (n == 4) {
					do_write(w, "/big/hl2", 4096, 5000, 77, FS_FILE_SYNC);
					do_link(w, "/big/sl2", "/big/sl3");
					do_sync(w);
				}
				if (n == 6) {
					do_write(w, name[1], 20 * KiB, 8 * KiB, 78, FS_FILE_SYNC);
					do_unlink(w, "/big/sl3");
					do_sync(w);
				}
			}
			if (!w->err && (fs_evac_info(w->v, k, &ei) < 0 || ei.inodes_moved < 7))
				op_failed(w, "fewer than seven inodes moved", "", -ENOENT);
			if (!w->err && (!ei.retired || ei.homed_here || ei.slots_left ||
					ei.conts_left || ei.blocks_used)) {
				w->err = -EEXIST;
				snprintf(w->what, sizeof(w->what),
					 "chunk %u not emptied and retired (%d): %u homed there, "
					 "%u slots, %u continuations, %llu blocks", k, ei.retired,
					 ei.homed_here,
					 ei.slots_left, ei.conts_left,
					 (unsigned long long)ei.blocks_used);
			}
			if (!w->err)
				printf("crash: evac: chunk %u fostered into chunk %u, %llu inodes moved "
				       "in %u steps, %u left there\n", k, ei.foster_chunk,
				       (unsigned long long)ei.inodes_moved, n, ei.homed_here);
		}
	}
	if (!w->err)
		printf("crash: evac: %llu continuations moved, %u client operations between "
		       "steps\n", (unsigned long long)moved, i);
	do_write(w, "/c.bin", 600 * KiB, 64 * KiB, 60, FS_FILE_SYNC);
	do_unlink(w, "/big/b.bin");
	do_sync(w);
}

/* The chunk of path's inode (its number's home), or 0 with w->err set. */
static uint32_t home_of(struct wl *w, const char *path)
{
	struct fs_ino ino;
	int ret;

	if (w->err)
		return 0;
	ret = resolve(w, path, &ino);
	if (ret < 0)
		op_failed(w, "lookup", path, ret);
	return ret < 0 ? 0 : (uint32_t)(ino.num >> 32);
}

/* Evacuation steps of chunk k until nothing moves, a client operation on
 * path between every two; fails the workload unless k retired. */
static void evac_to_end(struct wl *w, uint32_t k, const char *path)
{
	struct fs_evac_info ei;

	for (unsigned n = 0; !w->err && do_evac_step(w, k); n++)
		do_write(w, path, (n % 4) * 1000, 700, 90 + n, FS_FILE_SYNC);
	if (!w->err && (fs_evac_info(w->v, k, &ei) < 0 || !ei.retired || ei.maps_hosted ||
			ei.guests_here || ei.homed_here)) {
		w->err = -EEXIST;
		snprintf(w->what, sizeof(w->what), "chunk %u not retired: %u maps, %u guests, "
			 "%u homed there", k, ei.maps_hosted, ei.guests_here, ei.homed_here);
	}
}

/* (h) A foster map moved off its host: chunk 0 is filled (the other
 * chunks draining meanwhile) so that chunk 1's map is fostered in chunk
 * 2, and two steps move some of chunk 1's inodes into chunk 2; chunk 0
 * gets room again, chunk 2 drains: its first step fosters its own map, the
 * next moves chunk 1's map into chunk 0 (one transaction over chunks 0,
 * 1 and 2), and the steps go on until chunk 2 retires (chunk 1's inodes
 * it held move out too), then chunk 1's, among writes to their files. */
static void wl_rehost(struct wl *w)
{
	static const char *const dir[] = { "/a", "/b", "/c", "/d", "/e", "/f" };
	const char *d1 = NULL, *d2 = NULL;
	struct fs_evac_info ei;
	char p[64];
	int ret;

	for (int i = 0; i < 6 && (!d1 || !d2); i++) {
		uint32_t c;
		do_mkdir(w, dir[i], 0755);
		c = home_of(w, dir[i]);
		if (c == 1 && !d1)
			d1 = dir[i];
		if (c == 2 && !d2)
			d2 = dir[i];
	}
	if (!w->err && (!d1 || !d2)) {
		op_failed(w, "directories in chunks 1 and 2", "", -ENOENT);
		return;
	}
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s/f%d", d1, i);
		do_put(w, p, 0644, i == 3 ? 12000 : 100 + 300 * (unsigned)i, 80 + (unsigned)i,
		       FS_FILE_SYNC);
	}
	snprintf(p, sizeof(p), "%s/sl", d1);
	do_symlink(w, p, "f0");
	snprintf(p, sizeof(p), "%s/g", d2);
	do_put(w, p, 0644, 9000, 85, FS_FILE_SYNC);
	do_sync(w);
	do_drain(w, 1);
	do_drain(w, 2);
	do_create(w, "/fill", 0644);
	if (!w->err) {
		static uint8_t buf[64 * KiB];
		struct fs_ino f;
		uint64_t off = 0;
		ret = resolve(w, "/fill", &f);
		while (ret == 0 && (ret = fs_write(w->v, NULL, f, off, sizeof(buf), buf,
						   FS_FILE_SYNC, NULL)) == 0) {
			off += sizeof(buf);
			w->checkpoint(w);
		}
		if (ret != -ENOSPC)
			op_failed(w, "fill chunk 0", "/fill", ret);
		do_sync(w);
	}
	do_drain_set(w, 2, 0);
	do_evac_step(w, 1);
	if (!w->err && (fs_evac_info(w->v, 1, &ei) < 0 || ei.foster_chunk != 2))
		op_failed(w, "chunk 1's map not fostered in chunk 2", "", -EINVAL);
	do_evac_step(w, 1);
	do_evac_step(w, 1);
	do_unlink(w, "/fill");
	do_sync(w);
	do_drain(w, 2);
	do_evac_step(w, 2);
	if (!w->err && (fs_evac_info(w->v, 2, &ei) < 0 || ei.maps_hosted != 1))
		op_failed(w, "chunk 2 does not host chunk 1's map", "", -EINVAL);
	do_evac_step(w, 2);
	if (!w->err && (fs_evac_info(w->v, 1, &ei) < 0 || ei.foster_chunk != 0))
		op_failed(w, "chunk 1's map not moved to chunk 0", "", -EINVAL);
	snprintf(p, sizeof(p), "%s/f3", d1);
	evac_to_end(w, 2, p);
	evac_to_end(w, 1, p);
	if (!w->err)
		printf("crash: rehost: chunk 1's map moved from chunk 2 to chunk 0; both retired\n");
}

/* (i) Chunk 0's foster table grows (fostertab): chunks 1-32 drain, and
 * two directories homed in chunks 33 and 34 get files; chunks 1-32 are
 * evacuated and retired in one stretch (their 32 records fill chunk 0's
 * header; one interval, no checkpoint inside), then chunks 33 and 34 step
 * by step among writes: chunk 33's map is the table's first record (its
 * unit made and the header naming it in the same transaction), chunk
 * 34's the second, and each retires (its record in the unit marked). */
static void wl_ftab(struct wl *w)
{
	char d33[16] = "", d34[16] = "", p33[32], p34[32];

	for (uint32_t k = 1; k <= 32; k++)
		do_drain(w, k);
	for (int i = 0; i < 64 && !w->err && (!d33[0] || !d34[0]); i++) {
		char d[16];
		uint32_t c;
		snprintf(d, sizeof(d), "/d%d", i);
		do_mkdir(w, d, 0755);
		c = home_of(w, d);
		if (c == 33 && !d33[0])
			snprintf(d33, sizeof(d33), "%s", d);
		if (c == 34 && !d34[0])
			snprintf(d34, sizeof(d34), "%s", d);
	}
	if (!w->err && (!d33[0] || !d34[0])) {
		op_failed(w, "directories in chunks 33 and 34", "", -ENOENT);
		return;
	}
	snprintf(p33, sizeof(p33), "%s/f", d33);
	snprintf(p34, sizeof(p34), "%s/f", d34);
	do_put(w, p33, 0644, 5000, 81, FS_FILE_SYNC);
	do_put(w, p34, 0644, 9000, 82, FS_FILE_SYNC);
	do_sync(w);
	for (uint32_t k = 1; k <= 32 && !w->err; k++) {
		struct fs_evac_info ei;
		unsigned n = 0;
		int ret;
		while ((ret = fs_evac_step(w->v, k, 0, &ei)) == 1 && n < 200)
			n++;
		if (ret < 0 || !ei.retired)
			op_failed(w, "retire chunk", "1-32", ret < 0 ? ret : -EBUSY);
	}
	do_sync(w);
	do_drain(w, 33);
	do_drain(w, 34);
	evac_to_end(w, 33, p34);
	evac_to_end(w, 34, p33);
	if (!w->err)
		printf("crash: ftab: 34 chunks retired, the last two named in chunk 0's table\n");
}

/* (i2) Chunk 0's foster table lost, made again by the open (fs/ftab_rebuild.c):
 * set up by wl_ftab (34 chunks retired, the last two records in the
 * table's one unit), unrecorded, then both copies of the unit spoilt; the
 * log starts before the read-write open, whose first transaction writes
 * the unit again (in a new pair, its block freed) and chunk 0's header,
 * and takes chunks 33 and 34 out of service; then a directory and a file,
 * synced. A state before that transaction holds the lost table (the only
 * problem fsck may find in it) and its open makes it again. */
static void ftab_spoil(uint8_t *img)
{
	struct od_chunk_header h0;

	if (od_header_parse(img, &h0, NULL, NULL, 0) < 0 || !h0.ftab_start)
		return; /* (the open then finds the table whole: the check fails) */
	for (int copy = 0; copy < 2; copy++)
		img[(size_t)(h0.ftab_start + (copy ? h0.nblocks / 2 : 0)) * 4096 + 100] ^= 0x5a;
}

static void wl_ftab_rebuilt(struct wl *w)
{
	struct fs_counters fc;

	if (!w->err && (fs_get_counters(w->v, &fc) < 0 || !fc.ftab_rebuilt || fc.read_only)) {
		op_failed(w, "the open did not make the table again", "", -EROFS);
		return;
	}
	do_mkdir(w, "/after", 0755);
	do_put(w, "/after/f", 0644, 6000, 91, FS_UNSTABLE);
	do_sync(w);
	if (!w->err)
		printf("crash: ftabfix: the lost table made again by the open\n");
}

/* Is path in the last acknowledged state (the checkpoint just taken:
 * what is on disk, for a disk-view workload) a file of size bytes whose
 * [off, off + len) are version seed's? "Committed data is never lost". */
static void expect_disk(struct wl *w, const char *path, uint64_t size, uint64_t off, size_t len,
			unsigned seed);

/* (g) Delayed allocation: files written by turns in 4 KiB UNSTABLE
 * pieces, one committed while the others stay in memory; a new file
 * renamed over an old one (an editor's save) with no sync of its own,
 * made durable by another file's commit: the rename's transaction holds
 * its data, so no crash state shows the old name empty; a buffered file
 * removed and one cut to 0; then a rename over a file whose buffer is
 * dropped with it. Checkpoints are what is on disk (struct workload's
 * disk_view): a file still buffered there is at its placed size. */
static void wl_dalloc(struct wl *w)
{
	static const char *const f[] = { "/w/a", "/w/b", "/w/c" };

	do_mkdir(w, "/w", 0755);
	do_sync(w);
	do_put(w, "/w/old", 0644, 20000, 1, FS_FILE_SYNC);
	expect_disk(w, "/w/old", 20000, 0, 20000, 1);
	for (int i = 0; i < 3; i++)
		do_create(w, f[i], 0644);
	do_sync(w);
	for (unsigned p = 0; p < 8; p++)
		for (int i = 0; i < 3; i++)
			do_write(w, f[i], p * 4096, 4096, 2 + (unsigned)i, FS_UNSTABLE);
	do_commit(w, "/w/a");
	expect_disk(w, "/w/a", 32768, 0, 32768, 2);
	/* not committed: its first piece (inline at once) alone on disk */
	expect_disk(w, "/w/b", 4096, 0, 4096, 3);
	do_create(w, "/w/new", 0644);
	do_write(w, "/w/new", 0, 6000, 5, FS_UNSTABLE); /* (over a block: not inline) */
	do_rename(w, "/w/new", "/w/old");
	do_commit(w, "/w/c");
	expect_disk(w, "/w/old", 6000, 0, 6000, 5);
	expect_disk(w, "/w/c", 32768, 0, 32768, 4);
	do_write(w, "/w/b", 32768, 8192, 3, FS_UNSTABLE);
	do_unlink(w, "/w/b");
	do_write(w, "/w/a", 32768, 10000, 6, FS_UNSTABLE);
	do_trunc(w, "/w/c", 0);
	do_write(w, "/w/c", 0, 3000, 7, FS_UNSTABLE);
	do_sync(w);
	expect_disk(w, "/w/a", 42768, 32768, 10000, 6);
	expect_disk(w, "/w/c", 3000, 0, 3000, 7);
	/* over a file whose own buffer goes with it */
	do_write(w, "/w/c", 3000, 9000, 8, FS_UNSTABLE);
	do_put(w, "/w/tmp", 0644, 9000, 9, FS_UNSTABLE);
	do_rename(w, "/w/tmp", "/w/c");
	do_write(w, "/w/a", 0, 4096, 10, FS_FILE_SYNC);
	expect_disk(w, "/w/c", 9000, 0, 9000, 9);
	expect_disk(w, "/w/a", 42768, 0, 4096, 10);
	do_put(w, "/w/last", 0644, 50000, 11, FS_UNSTABLE);
	do_commit(w, "/w/last");
	expect_disk(w, "/w/last", 50000, 0, 50000, 11);
}

/* (h) A large commit's data written outside the volume lock
 * (fs/dalloc_place.c): 1.5 MiB placed over two 1 MiB chunks (a
 * continuation made for blocks held in the second), an append of 1.25
 * MiB to it, and a file in two runs with a hole between. Every crash
 * state before a commit's transaction shows the file as it was, its held
 * blocks free (fsck clean); after, whole. Fails unless the three were
 * placed so. */
static void wl_bigplace(struct wl *w)
{
	struct fs_counters k;

	do_mkdir(w, "/p", 0755);
	do_create(w, "/p/big", 0644);
	do_create(w, "/p/sparse", 0644);
	do_sync(w);
	do_write(w, "/p/big", 0, 1536 * 1024, 1, FS_UNSTABLE);
	do_commit(w, "/p/big");
	expect_disk(w, "/p/big", 1536 * 1024, 0, 1536 * 1024, 1);
	do_write(w, "/p/big", 1536 * 1024, 1280 * 1024, 2, FS_UNSTABLE);
	do_commit(w, "/p/big");
	expect_disk(w, "/p/big", 2816 * 1024, 1536 * 1024, 1280 * 1024, 2);
	do_write(w, "/p/sparse", 0, 512 * 1024, 3, FS_UNSTABLE);
	do_write(w, "/p/sparse", 1024 * 1024, 768 * 1024, 4, FS_UNSTABLE);
	do_commit(w, "/p/sparse");
	expect_disk(w, "/p/sparse", 1792 * 1024, 1024 * 1024, 768 * 1024, 4);
	if (!w->err && (fs_get_counters(w->v, &k) < 0 || k.dalloc_unlocked != 3 ||
			k.dalloc_unlocked_redone != 0))
		op_failed(w, "placed outside the lock", "/p", -EPROTO);
}

static void do_prealloc(struct wl *w, const char *path, uint64_t size, unsigned flags,
			uint64_t want)
{
	struct fs_ino ino;
	uint64_t got = 0;
	int ret;

	if (w->err)
		return;
	ret = resolve(w, path, &ino);
	if (ret == 0)
		ret = fs_prealloc(w->v, ino, size, flags, &got);
	if (ret == 0 && got != want)
		ret = -ENOSPC;
	if (ret < 0)
		op_failed(w, "prealloc", path, ret);
}

static int count_one(void *ctx, const struct fs_extent *e)
{
	(void)e;
	(*(int *)ctx)++;
	return 0;
}

static void expect_extents(struct wl *w, const char *path, int want)
{
	struct fs_ino ino;
	int n = 0, ret;

	if (w->err)
		return;
	ret = resolve(w, path, &ino);
	if (ret == 0)
		ret = fs_file_extents(w->v, ino, count_one, &n);
	if (ret == 0 && n != want) {
		w->err = -EUCLEAN;
		snprintf(w->what, sizeof(w->what), "%s: %d extents, %d expected", path, n, want);
	} else if (ret < 0) {
		op_failed(w, "extents", path, ret);
	}
}

/* (i) Preallocation (fs/prealloc.c): reservations live in memory only,
 * so crash states fall between a reserve, partial writes (placed by
 * turns, each file's commit placing its pages in its reservation), the
 * commit that trims one, a stable write that trims another, a truncate
 * and a remove that release theirs, and syncs while blocks are reserved
 * and not written: no state may show a reserved block allocated that no
 * file owns (fsck and the invariants judge every one), and every
 * committed byte is there. Disk view: pages wait in memory between
 * commits. */
static void wl_prealloc(struct wl *w)
{
	do_mkdir(w, "/p", 0755);
	do_create(w, "/p/app.log", 0644);
	do_create(w, "/p/other", 0644);
	do_sync(w);
	do_prealloc(w, "/p/app.log", 64 * KiB, FS_PREALLOC_TRIM, 16);
	do_prealloc(w, "/p/other", 48 * KiB, 0, 12);
	do_sync(w); /* (reserved, nothing written: the bitmap on disk has none) */
	for (unsigned p = 0; p < 8; p++) {
		do_write(w, "/p/app.log", p * 4096, 4096, 80, FS_UNSTABLE);
		do_write(w, "/p/other", p * 4096, 4096, 81, FS_UNSTABLE);
		if (p % 2 == 1)
			do_commit(w, "/p/other"); /* its pages in its reservation, kept */
	}
	expect_disk(w, "/p/other", 32768, 0, 32768, 81);
	do_commit(w, "/p/app.log"); /* trims the 8 blocks not written */
	expect_disk(w, "/p/app.log", 32768, 0, 32768, 80);
	expect_extents(w, "/p/app.log", 1);
	expect_extents(w, "/p/other", 1);
	do_trunc(w, "/p/other", 4096); /* releases its last 4 */
	do_sync(w);
	expect_disk(w, "/p/other", 4096, 0, 4096, 81);
	do_prealloc(w, "/p/app.log", 128 * KiB, FS_PREALLOC_TRIM, 24);
	do_write(w, "/p/app.log", 32768, 8192, 82, FS_FILE_SYNC); /* trims 22 */
	expect_disk(w, "/p/app.log", 40960, 32768, 8192, 82);
	/* (the 8 free blocks after its end are fewer than 24: the first run
	 * that long lies past other's block, so its new data starts a second
	 * extent there) */
	expect_extents(w, "/p/app.log", 2);
	do_prealloc(w, "/p/other", 64 * KiB, 0, 15);
	do_write(w, "/p/other", 4096, 4096, 83, FS_UNSTABLE);
	do_unlink(w, "/p/other"); /* its reservation and its pages go */
	do_sync(w);
	do_put(w, "/p/late", 0644, 20000, 84, FS_FILE_SYNC);
	expect_disk(w, "/p/late", 20000, 0, 20000, 84);
	if (!w->err) {
		struct fs_prealloc_info pi;
		if (fs_prealloc_info(w->v, &pi) < 0 || pi.active != 0 || pi.trim_commit != 2 ||
		    pi.released != 2) {
			w->err = -EUCLEAN;
			snprintf(w->what, sizeof(w->what),
				 "prealloc: %u active, %llu trimmed at commit, %llu released "
				 "(0, 2, 2 expected)",
				 pi.active, (unsigned long long)pi.trim_commit,
				 (unsigned long long)pi.released);
		}
	}
}

/* The file's buffer placed (fs_place): not a durability point. */
static void do_place(struct wl *w, const char *path)
{
	do_file_call(w, path, fs_place, "place", 0);
}

/* (h) Reallocation on rewrite (fs/realloc.c): /r written in 8 pieces
 * between a spacer's, then rewritten whole from its start, UNSTABLE, and
 * committed: its new run is written, then one transaction points the
 * file at it and frees the old pieces; every crash state must show the
 * old bytes or the new ones, never a mixture. Then once more, placed
 * (reallocated, not committed) before another file's stable write that
 * needs blocks next to them: the old pieces, freed but not committed,
 * must not be what that write takes (a crash before the commit shows /q
 * in them; with the reservation of frees ignored, states fail).
 * The run checks that both rewrites were reallocations. */
static void wl_realloc(struct wl *w)
{
	fs_set_dalloc_limit(w->v, 0);
	do_put(w, "/s", 0644, 4096, 1, FS_FILE_SYNC);
	do_write(w, "/s", 4096, 4096, 1, FS_FILE_SYNC); /* (out of its entry) */
	do_create(w, "/r", 0644);
	do_create(w, "/q", 0644);
	for (unsigned i = 0; i < 8; i++) {
		do_write(w, "/r", i * 8192, 8192, 2, FS_FILE_SYNC);
		do_write(w, "/s", 8192 + i * 4096, 4096, 1, FS_FILE_SYNC);
		do_write(w, "/q", i * 8192, 8192, 5, FS_FILE_SYNC);
	}
	fs_set_dalloc_limit(w->v, 64u << 20);
	for (unsigned i = 0; i < 8; i++)
		do_write(w, "/r", i * 8192, 8192, 3, FS_UNSTABLE);
	do_commit(w, "/r");
	expect_disk(w, "/r", 65536, 0, 65536, 3);
	/* /q: placed into a new run, then the spacer grows by a stable
	 * write whose goal is the block after its last piece: /q's last
	 * old piece, freed by the placement but not committed. */
	for (unsigned i = 0; i < 8; i++)
		do_write(w, "/q", i * 8192, 8192, 6, FS_UNSTABLE);
	do_place(w, "/q");
	do_write(w, "/s", 40960, 8192, 1, FS_FILE_SYNC);
	expect_disk(w, "/q", 65536, 0, 65536, 6);
	expect_disk(w, "/s", 49152, 0, 49152, 1);
	do_unlink(w, "/s");
	do_sync(w);
}

/* (k) Reallocation at append (fs/realloc.c): two files appended by turns,
 * each piece UNSTABLE then committed, so that each append finds the
 * other file's blocks after its last extent and the file moves whole
 * with it into a new run, its old blocks freed in the same transaction;
 * /a's pieces end inside blocks (6000 bytes: its last block, placed,
 * is buffered again with the append). Then a stable write to /b whose
 * goal is the block after its run. Every committed piece survives every
 * crash state: mid-move, a state shows the file in its old blocks with
 * the pieces committed before, or in its new run with all of them. */
static void wl_appendmove(struct wl *w)
{
	struct fs_counters k;

	do_create(w, "/a", 0644);
	do_create(w, "/b", 0644);
	do_sync(w);
	for (unsigned i = 0; i < 6; i++) {
		do_write(w, "/a", i * 6000, 6000, 2 + i, FS_UNSTABLE);
		do_commit(w, "/a");
		do_write(w, "/b", i * 8192, 8192, 20 + i, FS_UNSTABLE);
		do_commit(w, "/b");
		for (unsigned j = 0; j <= i; j++) {
			expect_disk(w, "/a", (i + 1) * 6000, j * 6000, 6000, 2 + j);
			expect_disk(w, "/b", (i + 1) * 8192, j * 8192, 8192, 20 + j);
		}
	}
	do_write(w, "/b", 6 * 8192, 4096, 30, FS_FILE_SYNC);
	expect_disk(w, "/b", 7 * 8192 - 4096, 0, 8192, 20);
	expect_disk(w, "/b", 7 * 8192 - 4096, 6 * 8192, 4096, 30);
	expect_disk(w, "/a", 36000, 0, 6000, 2);
	if (!w->err && fs_get_counters(w->v, &k) == 0) {
		printf("crash: appendmove: %" PRIu64 " moves at append, %" PRIu64 " blocks\n",
		       k.append_moves, k.append_move_blocks);
		/* (3 here: a file moved into the free rest goes on in place) */
		if (k.append_moves < 3)
			op_failed(w, "count the moves at append of", "/a and /b", -EPROTO);
	}
}

/* Each on its own mkfs image of nchunks 1 MiB chunks; spill's sparse
 * inodes (32 a chunk) make chunk 0 run out of them part way. */
struct workload {
	const char *name;
	void (*run)(struct wl *w);
	uint32_t nchunks;
	uint32_t bytes_per_inode;
	/* Checkpoints are read from the bytes on disk (a read-only open of
	 * a copy), not through the live volume: files may hold buffered
	 * data (delayed allocation) that a commit of another file leaves in
	 * memory, which no crash state can show. */
	int disk_view;
	/* When set: run first on the fresh image, unrecorded, the volume
	 * closed after it; then damage spoils its bytes, and the log starts
	 * before the open (which may repair them, fs/ftab_rebuild.c). */
	void (*setup)(struct wl *w);
	void (*damage)(uint8_t *img);
};

static const struct workload workloads[] = {
	{ "tree", wl_tree, 4, 4096, 0, NULL, NULL },
	{ "grow", wl_grow, 6, 4096, 0, NULL, NULL },
	{ "spill", wl_spill, 4, 32768, 0, NULL, NULL },
	{ "inline", wl_inline, 4, 4096, 0, NULL, NULL },
	{ "turns", wl_turns, 2, 4096, 0, NULL, NULL },
	{ "evac", wl_evac, 6, 4096, 0, NULL, NULL },
	{ "rehost", wl_rehost, 3, 4096, 0, NULL, NULL },
	{ "ftab", wl_ftab, 36, 4096, 0, NULL, NULL },
	{ "ftabfix", wl_ftab_rebuilt, 36, 4096, 0, wl_ftab, ftab_spoil },
	{ "dalloc", wl_dalloc, 4, 4096, 1, NULL, NULL },
	{ "predict", wl_predict, 2, 4096, 0, NULL, NULL },
	{ "prealloc", wl_prealloc, 2, 4096, 1, NULL, NULL },
	{ "realloc", wl_realloc, 2, 4096, 1, NULL, NULL },
	{ "appendmove", wl_appendmove, 2, 4096, 1, NULL, NULL },
	{ "bigplace", wl_bigplace, 12, 4096, 1, NULL, NULL },
};

/* --- recording ------------------------------------------------------------ */

struct run {
	const struct workload *wk;
	struct recording rec;
	struct fs_volume *v;
	struct chunk_store **mem;  /* the volume's stores, while it is open */
	struct wl w;
	struct fs_counters fc; /* the workload's transactions, before close */
};

static void report_to_stderr(void *ctx, const char *msg)
{
	fprintf(stderr, "  invariant: %s\n", msg);
}

static int snapshot_now(struct run *r, struct snap *out)
{
	const struct recording *rec = &r->rec;
	char why[512];
	int ret = snap_take(r->v, rec->nck ? &rec->ck[rec->nck - 1].tree : NULL, out, why,
			    sizeof(why));

	if (ret < 0)
		snprintf(r->w.what, sizeof(r->w.what), "snapshot: %s", why);
	return ret;
}

/* What the disk holds now, through a read-only open of a copy. */
static int snapshot_disk(struct run *r, struct snap *out)
{
	const struct recording *rec = &r->rec;
	uint32_t n = rec->nchunks;
	uint8_t *img = malloc((size_t)n * CHUNK_SIZE);
	struct chunk_store **st = calloc(n, sizeof(*st));
	struct fs_volume *v = NULL;
	char why[512] = "";
	int ret = img && st ? 0 : -ENOMEM;

	for (uint32_t i = 0; ret == 0 && i < n; i++) {
		memcpy(img + (size_t)i * CHUNK_SIZE, store_mem_bytes(r->mem[i]), CHUNK_SIZE);
		ret = crash_store_new(img + (size_t)i * CHUNK_SIZE, CHUNK_SIZE, &st[i]);
	}
	if (ret == 0)
		ret = fs_open_stores(st, n, FS_OPEN_RDONLY, &v, why, sizeof(why));
	for (uint32_t i = 0; st && i < n; i++)
		if (st[i])
			store_close(st[i]); /* not taken over by the volume */
	if (ret == 0)
		ret = snap_take(v, rec->nck ? &rec->ck[rec->nck - 1].tree : NULL, out, why,
				sizeof(why));
	if (v)
		fs_close(v);
	if (ret < 0)
		snprintf(r->w.what, sizeof(r->w.what), "snapshot of the disk: %s", why);
	free(st);
	free(img);
	return ret;
}

static void expect_disk(struct wl *w, const char *path, uint64_t size, uint64_t off, size_t len,
			unsigned seed)
{
	struct run *r = w->ctx;
	const struct snap *t;
	uint8_t *want;

	if (w->err)
		return;
	t = &r->rec.ck[r->rec.nck - 1].tree;
	for (size_t i = 0; i < t->n; i++) {
		const struct snap_ent *e = &t->e[i];
		if (strcmp(e->path, path) != 0)
			continue;
		want = malloc(len ? len : 1);
		if (!want) {
			op_failed(w, "expect", path, -ENOMEM);
			return;
		}
		pattern(want, len, off, seed);
		if (!S_ISREG(e->type) || e->size != size || !e->bytes || e->bytes->len != size ||
		    memcmp(e->bytes->data + off, want, len) != 0) {
			w->err = -EUCLEAN;
			snprintf(w->what, sizeof(w->what),
				 "checkpoint %zu: %s on disk is not %llu bytes with version %u at "
				 "%llu..%llu (size %llu)",
				 r->rec.nck - 1, path, (unsigned long long)size, seed,
				 (unsigned long long)off, (unsigned long long)(off + len),
				 (unsigned long long)e->size);
		}
		free(want);
		return;
	}
	w->err = -ENOENT;
	snprintf(w->what, sizeof(w->what), "checkpoint %zu: %s is not on disk", r->rec.nck - 1,
		 path);
}

/* After every durability point: the volume must be valid, and what it
 * holds now is the expected state of crashes from here on. */
static void checkpoint(struct wl *w)
{
	struct run *r = w->ctx;
	struct snap s;
	int bad;

	if (w->err)
		return;
	bad = fs_check_invariants(r->v, report_to_stderr, NULL);
	if (bad) {
		w->err = -EUCLEAN;
		snprintf(w->what, sizeof(w->what),
			 "checkpoint %zu: %d invariant problems without a crash", r->rec.nck, bad);
		return;
	}
	w->err = r->wk->disk_view ? snapshot_disk(r, &s) : snapshot_now(r, &s);
	if (w->err == 0 && (w->err = recording_push(&r->rec, r->rec.log.n, &s)) < 0)
		snap_free(&s);
}

static int read_whole(const char *path, uint8_t *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	size_t got = 0;

	if (fd < 0)
		return -errno;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)got);
		if (n <= 0) {
			close(fd);
			return n < 0 ? -errno : -EIO;
		}
		got += (size_t)n;
	}
	close(fd);
	return 0;
}

/* mkfs to a temporary file, then its bytes. */
static int make_image(uint32_t nchunks, uint32_t bytes_per_inode, uint8_t **out)
{
	struct fs_mkfs_opts o = {
		.chunk_size = CHUNK_SIZE,
		.chunk_count = nchunks,
		.bytes_per_inode = bytes_per_inode,
		.force = 1,
	};
	const char *dir = getenv("TMPDIR");
	char path[512];
	uint8_t *img;
	int fd, ret;

	snprintf(path, sizeof(path), "%s/crash_test.XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	close(fd);
	img = malloc(nchunks * CHUNK_SIZE);
	ret = img ? fs_mkfs(path, &o) : -ENOMEM;
	if (ret == 0)
		ret = read_whole(path, img, nchunks * CHUNK_SIZE);
	unlink(path);
	if (ret < 0) {
		free(img);
		return ret;
	}
	*out = img;
	return 0;
}

static void no_checkpoint(struct wl *w)
{
	(void)w;
}

/* The workload's setup run on the image at init (unrecorded), the volume
 * closed, then its damage done to the bytes. */
static int set_up(struct run *r, uint8_t *init)
{
	uint32_t n = r->wk->nchunks;
	struct chunk_store **st = calloc(n, sizeof(*st));
	struct wl w = { .checkpoint = no_checkpoint };
	char why[256] = "";
	int ret = st ? 0 : -ENOMEM;

	for (uint32_t i = 0; ret == 0 && i < n; i++)
		ret = crash_store_new(init + i * CHUNK_SIZE, CHUNK_SIZE, &st[i]);
	if (ret == 0)
		ret = fs_open_stores(st, n, 0, &w.v, why, sizeof(why));
	for (uint32_t i = 0; st && i < n; i++)
		if (st[i])
			store_close(st[i]);
	free(st);
	if (ret == 0) {
		r->wk->setup(&w);
		ret = fs_close(w.v);
		if (w.err < 0)
			ret = w.err;
	}
	if (ret < 0) {
		fprintf(stderr, "crash: %s: setup failed: %s %s %s\n", r->wk->name, strerror(-ret),
			why, w.what);
		return ret;
	}
	r->wk->damage(init);
	return 0;
}

/* Run the workload over memory stores made from a fresh image, recording
 * from its first operation (from the open, for a workload with a setup) to
 * the end of fs_close. */
static int record(struct run *r)
{
	struct recording *rec = &r->rec;
	uint32_t n = r->wk->nchunks;
	struct chunk_store **st = calloc(n, sizeof(*st)), **mem = calloc(n, sizeof(*mem));
	struct snap s;
	char why[256] = "";
	int ret, cret;

	rec->name = r->wk->name;
	rec->nchunks = n;
	rec->chunk_size = CHUNK_SIZE;
	r->w.checkpoint = checkpoint;
	r->w.ctx = r;
	ret = st && mem ? make_image(n, r->wk->bytes_per_inode, &rec->init) : -ENOMEM;
	if (ret == 0 && r->wk->setup)
		ret = set_up(r, rec->init);
	for (uint32_t i = 0; ret == 0 && i < n; i++) {
		ret = store_mem_new(CHUNK_SIZE, rec->init + i * CHUNK_SIZE, &st[i]);
		if (ret == 0)
			store_mem_record(st[i], &rec->log, i);
		mem[i] = st[i];
	}
	rec->log.enabled = r->wk->setup != NULL;
	if (ret == 0)
		ret = fs_open_stores(st, n, 0, &r->v, why, sizeof(why));
	for (uint32_t i = 0; st && i < n; i++)
		if (st[i])
			store_close(st[i]); /* not taken over by the volume */
	free(st);
	if (ret < 0) {
		fprintf(stderr, "crash: %s: cannot set up the volume: %s %s\n", r->wk->name,
			strerror(-ret), why);
		free(mem);
		return ret;
	}
	/* Open may have written (recovering mkfs's last transaction): crash
	 * states start from the bytes recording starts at. */
	for (uint32_t i = 0; i < n && !r->wk->setup; i++)
		memcpy(rec->init + i * CHUNK_SIZE, store_mem_bytes(mem[i]), CHUNK_SIZE);
	r->mem = mem; /* the volume's until fs_close */
	r->w.v = r->v;
	ret = snapshot_now(r, &s);
	if (ret == 0 && (ret = recording_push(rec, 0, &s)) < 0)
		snap_free(&s);
	r->w.err = ret;
	rec->log.enabled = 1;
	r->wk->run(&r->w);
	/* fs_close is a transaction too: its state is the last one seen. */
	if (r->w.err == 0)
		r->w.err = snapshot_now(r, &s);
	fs_get_counters(r->v, &r->fc);
	cret = fs_close(r->v);
	r->v = NULL;
	free(r->mem);
	r->mem = NULL;
	rec->log.enabled = 0;
	if (r->w.err == 0 && cret < 0)
		op_failed(&r->w, "close", "", cret);
	if (r->w.err == 0 && (r->w.err = recording_push(rec, rec->log.n, &s)) < 0)
		snap_free(&s);
	if (r->w.err < 0) {
		fprintf(stderr, "crash: %s: the workload failed without a crash: %s\n",
			r->wk->name, r->w.what);
		return r->w.err;
	}
	return 0;
}

static long env_long(const char *name, long dflt)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return dflt;
	v = strtol(s, &end, 0);
	return *end ? dflt : v;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Environment: SEED (0 or unset: from the clock; always printed);
 * CRASH_STATES=N random subsets and N torn writes per interval (default 6
 * and 5); CRASH_WORKLOAD=name runs one workload; CRASH_STATE=i checks only
 * state #i of each workload run, verbosely, and CRASH_DUMP=path then writes
 * its image before opening it; CRASH_LOGDBG=1 lists the log records around
 * a failed state (writes with their unit type and txid, flushes). The
 * states of a workload depend only on the
 * seed, so SEED, CRASH_WORKLOAD and CRASH_STATE reproduce one failure. */
int main(void)
{
	const char *only_wl = getenv("CRASH_WORKLOAD");
	long per = env_long("CRASH_STATES", 0);
	uint64_t seed = (uint64_t)env_long("SEED", 0);
	size_t total = 0, failed = 0;
	uint64_t one_flush = 0, held = 0;
	double t0 = now();
	int status = 0;

	setvbuf(stdout, NULL, _IOLBF, 0); /* in order with the failures on stderr */
	if (!seed)
		seed = ((uint64_t)time(NULL) << 16) ^ (uint64_t)getpid();
	printf("crash: seed %llu%s\n", (unsigned long long)seed,
	       per > 0 ? "" : " (CRASH_STATES unset: the CI default)");
	for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++) {
		struct run r = { .wk = &workloads[i] };
		struct crash_opts o = {
			.seed = seed ^ (0x2545F4914F6CDD1Dull * (i + 1)),
			.nsub = per > 0 ? (size_t)per : 6,
			.ntorn = per > 0 ? (size_t)per : 5,
			.only = env_long("CRASH_STATE", -1),
			.dump = getenv("CRASH_DUMP"),
			.table_lost = workloads[i].damage == ftab_spoil,
		};
		struct crash_result res = { 0 };
		double t = now();

		if (only_wl && *only_wl && strcmp(only_wl, workloads[i].name) != 0)
			continue;
		if (record(&r) < 0 || crash_check(&r.rec, &o, &res) < 0) {
			status = 1;
			recording_free(&r.rec);
			continue;
		}
		printf("crash: %s: %zu log records, %zu barriers, %zu checkpoints, %llu "
		       "transactions (%llu with lists and first copies behind one flush, %llu "
		       "flushes), %zu states checked, %zu failed (%.1f s)\n",
		       r.wk->name, r.rec.log.n, res.barriers, r.rec.nck,
		       (unsigned long long)r.fc.txns, (unsigned long long)r.fc.txns_one_flush,
		       (unsigned long long)r.fc.txn_flushes, res.states, res.failed, now() - t);
		if (!strcmp(r.wk->name, "realloc") && r.fc.reallocs != 2) {
			fprintf(stderr, "crash: realloc: %llu reallocations, not 2: the path is "
				"untested\n", (unsigned long long)r.fc.reallocs);
			status = 1;
		}
		one_flush += r.fc.txns_one_flush;
		held += r.fc.held_named;
		total += res.states;
		failed += res.failed;
		recording_free(&r.rec);
	}
	printf("crash: %zu states checked, %zu failed (seed %llu, %.1f s)\n", total, failed,
	       (unsigned long long)seed, now() - t0);
	/* The workloads must keep reaching both kinds of commit. */
	if (!only_wl && held == 0) {
		fprintf(stderr, "crash: FAIL: no list named a held entry: that path is untested\n");
		status = 1;
	}
	if (!only_wl && one_flush == 0) {
		fprintf(stderr, "crash: FAIL: no transaction took one flush: that path is untested\n");
		status = 1;
	}
	return status || failed ? 1 : 0;
}
