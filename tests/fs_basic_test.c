/* The library end to end on small volumes: every operation's success path
 * and its POSIX errors, inline data, its move to room and its move out,
 * relocation of an inode whose first link goes, continuations across
 * chunks, readdir cookies, reopen, and the invariants after each step;
 * mkfs writing nothing in chunks but 0 beyond their headers, and
 * lost+found's part made in a chunk's first slot. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/format/ondisk.h"
#include "fs/fs.h"
#include "tap.h"

static char image[256];

static void report(void *ctx, const char *msg)
{
	fprintf(stderr, "invariant: %s\n", msg);
}

static int invariants(struct fs_volume *v)
{
	return fs_check_invariants(v, report, NULL);
}

/* The blocks the learned predictor's table takes in chunk 0 (both copies
 * of its units): a clean close saves it, so free counts across a reopen
 * differ by them. */
static uint64_t pred_blocks(struct fs_volume *v)
{
	struct fs_predictor_info pi;

	return fs_predictor_info(v, &pi) == 0 ? 2ull * pi.units : 0;
}

static struct fs_volume *make(uint32_t chunks, uint64_t chunk_size, uint32_t bpi)
{
	struct fs_mkfs_opts o = {
		.chunk_size = chunk_size,
		.chunk_count = chunks,
		.bytes_per_inode = bpi,
		.force = 1,
	};
	struct fs_volume *v = NULL;

	CHECK_EQ(fs_mkfs(image, &o), 0);
	CHECK_EQ(fs_open(image, 0, &v), 0);
	return v;
}

static struct fs_volume *reopen(struct fs_volume *v)
{
	CHECK_EQ(fs_close(v), 0);
	v = NULL;
	CHECK_EQ(fs_open(image, 0, &v), 0);
	return v;
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((i * 131 + seed * 7 + (i >> 12)) & 0xff);
}

struct names {
	char list[64][64];
	uint64_t cookies[64];
	int n;
};

static int collect(void *ctx, const struct fs_dirent *d)
{
	struct names *nm = ctx;

	if (nm->n >= 64)
		return 1;
	snprintf(nm->list[nm->n], sizeof(nm->list[0]), "%s", d->name);
	nm->cookies[nm->n] = d->cookie;
	nm->n++;
	return 0;
}

static int has(const struct names *nm, const char *name)
{
	for (int i = 0; i < nm->n; i++)
		if (strcmp(nm->list[i], name) == 0)
			return 1;
	return 0;
}

static void test_names(void)
{
	struct fs_volume *v = make(2, 1 << 20, 4096);
	struct fs_ino root, f, d, l, dev, got;
	struct fs_attr a;
	char buf[64];
	size_t n;
	char longname[300];

	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_getattr(v, root, &a), 0);
	CHECK(S_ISDIR(a.mode));
	CHECK_EQ(a.nlink, 3); /* lost+found, which mkfs makes */
	CHECK_EQ(fs_lookup(v, NULL, root, "lost+found", &got, &a), 0);
	CHECK_EQ(a.mode, S_IFDIR | 0700);
	CHECK_EQ(a.nlink, 2);
	CHECK_EQ(fs_create(v, NULL, root, "lost+found", 0644, FS_CREATE_GUARDED, 0, NULL, NULL),
		 -EEXIST);

	CHECK_EQ(fs_create(v, NULL, root, "a", 0644, FS_CREATE_GUARDED, 0, &f, &a), 0);
	CHECK(S_ISREG(a.mode));
	CHECK_EQ(a.mode & 07777, 0644);
	CHECK_EQ(fs_create(v, NULL, root, "a", 0644, FS_CREATE_GUARDED, 0, NULL, NULL), -EEXIST);
	CHECK_EQ(fs_create(v, NULL, root, "a", 0600, FS_CREATE_UNCHECKED, 0, &got, NULL), 0);
	CHECK_EQ(got.num, f.num);
	CHECK_EQ(fs_create(v, NULL, root, "x", 0644, FS_CREATE_EXCLUSIVE, 42, &got, NULL), 0);
	CHECK_EQ(fs_create(v, NULL, root, "x", 0644, FS_CREATE_EXCLUSIVE, 42, &l, NULL), 0);
	CHECK_EQ(l.num, got.num);
	CHECK_EQ(fs_create(v, NULL, root, "x", 0644, FS_CREATE_EXCLUSIVE, 43, NULL, NULL), -EEXIST);

	memset(longname, 'n', sizeof(longname));
	longname[256] = '\0';
	CHECK_EQ(fs_create(v, NULL, root, longname, 0644, 0, 0, NULL, NULL), -ENAMETOOLONG);
	longname[255] = '\0';
	CHECK_EQ(fs_create(v, NULL, root, longname, 0644, 0, 0, NULL, NULL), 0);
	CHECK_EQ(fs_lookup(v, NULL, root, longname, &got, NULL), 0);
	CHECK_EQ(fs_create(v, NULL, root, "a/b", 0644, 0, 0, NULL, NULL), -EINVAL);
	CHECK_EQ(fs_create(v, NULL, root, "", 0644, 0, 0, NULL, NULL), -EINVAL);
	CHECK_EQ(fs_create(v, NULL, root, "..", 0644, 0, 0, NULL, NULL), -EINVAL);
	CHECK_EQ(fs_create(v, NULL, f, "z", 0644, 0, 0, NULL, NULL), -ENOTDIR);

	CHECK_EQ(fs_mkdir(v, NULL, root, "d", 0755, &d, &a), 0);
	CHECK_EQ(a.nlink, 2);
	CHECK_EQ(fs_getattr(v, root, &a), 0);
	CHECK_EQ(a.nlink, 4);
	CHECK_EQ(fs_lookup(v, NULL, d, "..", &got, NULL), 0);
	CHECK_EQ(got.num, root.num);
	CHECK_EQ(fs_lookup(v, NULL, d, ".", &got, NULL), 0);
	CHECK_EQ(got.num, d.num);
	CHECK_EQ(fs_lookup(v, NULL, root, "nope", &got, NULL), -ENOENT);

	CHECK_EQ(fs_symlink(v, NULL, d, "l", "../a", 0777, &l, &a), 0);
	CHECK(S_ISLNK(a.mode));
	CHECK_EQ(a.size, 4);
	CHECK_EQ(fs_readlink(v, l, buf, sizeof(buf), &n), 0);
	CHECK_EQ(n, 4);
	CHECK(memcmp(buf, "../a", 4) == 0);
	CHECK_EQ(fs_readlink(v, f, buf, sizeof(buf), &n), -EINVAL);
	CHECK_EQ(fs_symlink(v, NULL, d, "e", "", 0777, NULL, NULL), -EINVAL);

	CHECK_EQ(fs_mknod(v, NULL, d, "c", S_IFCHR | 0600, 4, 64, &dev, &a), 0);
	CHECK_EQ(a.rdev_major, 4);
	CHECK_EQ(a.rdev_minor, 64);
	CHECK_EQ(fs_mknod(v, NULL, d, "p", S_IFIFO | 0600, 0, 0, NULL, NULL), 0);
	CHECK_EQ(fs_mknod(v, NULL, d, "r", S_IFREG | 0600, 0, 0, NULL, NULL), -EINVAL);

	CHECK_EQ(fs_remove(v, NULL, root, "d"), -EISDIR);
	CHECK_EQ(fs_rmdir(v, NULL, root, "a"), -ENOTDIR);
	CHECK_EQ(fs_rmdir(v, NULL, root, "d"), -ENOTEMPTY);
	CHECK_EQ(fs_link(v, NULL, d, root, "dl"), -EPERM);
	CHECK_EQ(fs_link(v, NULL, f, d, "a2"), 0);
	CHECK_EQ(fs_getattr(v, f, &a), 0);
	CHECK_EQ(a.nlink, 2);
	CHECK_EQ(fs_link(v, NULL, f, d, "a2"), -EEXIST);
	CHECK_EQ(invariants(v), 0);

	/* The first link goes: the inode moves, its identity does not. */
	CHECK_EQ(fs_remove(v, NULL, root, "a"), 0);
	CHECK_EQ(fs_getattr(v, f, &a), 0);
	CHECK_EQ(a.nlink, 1);
	CHECK_EQ(a.fileid, f.num);
	CHECK_EQ(fs_lookup(v, NULL, d, "a2", &got, NULL), 0);
	CHECK_EQ(got.num, f.num);
	CHECK_EQ(got.gen, f.gen);
	CHECK_EQ(invariants(v), 0);
	CHECK_EQ(fs_remove(v, NULL, d, "a2"), 0);
	CHECK_EQ(fs_getattr(v, f, &a), -ESTALE);
	CHECK_EQ(invariants(v), 0);

	/* rename */
	CHECK_EQ(fs_mkdir(v, NULL, d, "sub", 0755, &got, NULL), 0);
	CHECK_EQ(fs_rename(v, NULL, root, "d", got, "d"), -EINVAL);
	CHECK_EQ(fs_rename(v, NULL, root, "d", d, "x"), -EINVAL);
	CHECK_EQ(fs_rename(v, NULL, root, "x", d, "moved"), 0);
	CHECK_EQ(fs_lookup(v, NULL, root, "x", NULL, NULL), -ENOENT);
	CHECK_EQ(fs_lookup(v, NULL, d, "moved", &l, NULL), 0);
	CHECK_EQ(fs_rename(v, NULL, d, "moved", d, "sub"), -EISDIR);
	CHECK_EQ(fs_rename(v, NULL, d, "sub", d, "moved"), -ENOTDIR);
	CHECK_EQ(fs_rename(v, NULL, d, "sub", root, "top"), 0);
	CHECK_EQ(fs_lookup(v, NULL, got, "..", &l, NULL), 0);
	CHECK_EQ(l.num, root.num);
	CHECK_EQ(fs_getattr(v, d, &a), 0);
	CHECK_EQ(a.nlink, 2);
	CHECK_EQ(fs_rename(v, NULL, root, "top", d, "p"), -ENOTDIR);
	CHECK_EQ(fs_mkdir(v, NULL, root, "empty", 0755, NULL, NULL), 0);
	CHECK_EQ(fs_rename(v, NULL, root, "top", root, "empty"), 0);
	CHECK_EQ(fs_getattr(v, root, &a), 0);
	CHECK_EQ(a.nlink, 5);
	CHECK_EQ(invariants(v), 0);

	v = reopen(v);
	CHECK_EQ(fs_lookup(v, NULL, root, "empty", &got, NULL), 0);
	CHECK_EQ(fs_lookup(v, NULL, d, "c", &got, &a), 0);
	CHECK_EQ(got.num, dev.num);
	CHECK_EQ(a.rdev_minor, 64);
	CHECK_EQ(invariants(v), 0);
	CHECK_EQ(fs_close(v), 0);
}

static void test_data(void)
{
	struct fs_volume *v = make(4, 1 << 20, 4096);
	static uint8_t wbuf[3 << 20], rbuf[3 << 20];
	struct fs_statfs s0, s1;
	struct fs_ino root, f, g;
	struct fs_attr a;
	size_t n;
	int eof;

	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_statfs(v, &s0), 0);

	/* Inline at creation, out on the next change. */
	CHECK_EQ(fs_create(v, NULL, root, "small", 0644, 0, 0, &f, NULL), 0);
	fill(wbuf, 3000, 1);
	CHECK_EQ(fs_write(v, NULL, f, 0, 3000, wbuf, FS_FILE_SYNC, &a), 0);
	CHECK_EQ(a.size, 3000);
	CHECK_EQ(a.used, 3000);
	CHECK_EQ(fs_read(v, NULL, f, 0, 4096, rbuf, &n, &eof), 0);
	CHECK_EQ(n, 3000);
	CHECK_EQ(eof, 1);
	CHECK(memcmp(wbuf, rbuf, 3000) == 0);
	CHECK_EQ(fs_write(v, NULL, f, 3000, 100, wbuf + 3000, FS_UNSTABLE, &a), 0);
	CHECK_EQ(a.used, 4096);
	CHECK_EQ(fs_read(v, NULL, f, 0, 4096, rbuf, &n, &eof), 0);
	CHECK_EQ(n, 3100);
	CHECK(memcmp(wbuf, rbuf, 3100) == 0);
	CHECK_EQ(invariants(v), 0);

	/* Holes read as zeros; truncate shrinks and extends. */
	CHECK_EQ(fs_create(v, NULL, root, "holes", 0644, 0, 0, &g, NULL), 0);
	fill(wbuf, 10000, 2);
	CHECK_EQ(fs_write(v, NULL, g, 50000, 10000, wbuf, FS_UNSTABLE, NULL), 0);
	CHECK_EQ(fs_read(v, NULL, g, 0, 60000, rbuf, &n, &eof), 0);
	CHECK_EQ(n, 60000);
	{
		int zeros = 1;
		for (int i = 0; i < 50000; i++)
			zeros &= rbuf[i] == 0;
		CHECK(zeros);
	}
	CHECK(memcmp(rbuf + 50000, wbuf, 10000) == 0);
	{
		struct fs_setattr sa = { .valid = FS_SET_SIZE, .size = 51000 };
		CHECK_EQ(fs_setattr(v, NULL, g, &sa, &a), 0);
		sa.size = 70000;
		CHECK_EQ(fs_setattr(v, NULL, g, &sa, &a), 0);
		CHECK_EQ(a.size, 70000);
	}
	CHECK_EQ(fs_read(v, NULL, g, 50000, 20000, rbuf, &n, &eof), 0);
	CHECK_EQ(n, 20000);
	CHECK(memcmp(rbuf, wbuf, 1000) == 0);
	{
		int zeros = 1;
		for (int i = 1000; i < 20000; i++)
			zeros &= rbuf[i] == 0;
		CHECK(zeros);
	}
	CHECK_EQ(invariants(v), 0);

	/* A file bigger than a chunk continues in others. */
	CHECK_EQ(fs_create(v, NULL, root, "big", 0644, 0, 0, &f, NULL), 0);
	fill(wbuf, sizeof(wbuf) - (1 << 20), 3);
	CHECK_EQ(fs_write(v, NULL, f, 0, 2 << 20, wbuf, FS_UNSTABLE, &a), 0);
	CHECK_EQ(a.size, 2 << 20);
	CHECK_EQ(fs_read(v, NULL, f, 0, 2 << 20, rbuf, &n, &eof), 0);
	CHECK_EQ(n, 2 << 20);
	CHECK(memcmp(wbuf, rbuf, 2 << 20) == 0);
	CHECK_EQ(invariants(v), 0);
	v = reopen(v);
	CHECK_EQ(fs_read(v, NULL, f, 0, 2 << 20, rbuf, &n, &eof), 0);
	CHECK(memcmp(wbuf, rbuf, 2 << 20) == 0);
	CHECK_EQ(invariants(v), 0);

	/* The volume fills: -ENOSPC, and nothing leaks. */
	{
		struct fs_statfs sb, sa;
		struct fs_ino h;
		CHECK_EQ(fs_create(v, NULL, root, "huge", 0644, 0, 0, &h, NULL), 0);
		CHECK_EQ(fs_statfs(v, &sb), 0);
		CHECK_EQ(fs_write(v, NULL, h, 0, 3 << 20, wbuf, FS_UNSTABLE, NULL), -ENOSPC);
		CHECK_EQ(fs_statfs(v, &sa), 0);
		CHECK_EQ(sa.free_blocks, sb.free_blocks);
		CHECK_EQ(fs_getattr(v, h, &a), 0);
		CHECK_EQ(a.size, 0);
		CHECK_EQ(invariants(v), 0);
	}

	CHECK_EQ(fs_remove(v, NULL, root, "big"), 0);
	CHECK_EQ(fs_remove(v, NULL, root, "huge"), 0);
	CHECK_EQ(fs_remove(v, NULL, root, "holes"), 0);
	CHECK_EQ(fs_remove(v, NULL, root, "small"), 0);
	CHECK_EQ(fs_statfs(v, &s1), 0);
	CHECK_EQ(s1.free_blocks + pred_blocks(v), s0.free_blocks); /* s0: no table yet */
	CHECK_EQ(s1.free_inodes, s0.free_inodes);
	CHECK_EQ(invariants(v), 0);
	CHECK_EQ(fs_close(v), 0);
}

static void test_readdir(void)
{
	struct fs_volume *v = make(3, 1 << 20, 4096);
	struct fs_ino root;
	struct names all = { 0 }, rest = { 0 };
	uint64_t verf = 0;
	char name[32];
	int eof;

	CHECK_EQ(fs_root(v, &root), 0);
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "file-%02d", i);
		CHECK_EQ(fs_create(v, NULL, root, name, 0644, 0, 0, NULL, NULL), 0);
	}
	CHECK_EQ(fs_readdir(v, NULL, root, 0, &verf, 1, collect, &all, &eof), 0);
	CHECK_EQ(eof, 1);
	CHECK_EQ(all.n, 43); /* ".", "..", lost+found and the 40 */
	CHECK(strcmp(all.list[0], ".") == 0);
	CHECK(strcmp(all.list[1], "..") == 0);
	CHECK(has(&all, "file-00") && has(&all, "file-39"));
	/* Resume after the 20th entry: exactly the rest. */
	CHECK_EQ(fs_readdir(v, NULL, root, all.cookies[19], &verf, 0, collect, &rest, &eof), 0);
	CHECK_EQ(rest.n, 23);
	for (int i = 0; i < rest.n && i + 20 < all.n; i++)
		CHECK(strcmp(rest.list[i], all.list[i + 20]) == 0);
	{
		uint64_t bad = verf ^ 4;
		struct names x = { 0 };
		CHECK_EQ(fs_readdir(v, NULL, root, all.cookies[19], &bad, 0, collect, &x, &eof),
			 -FS_EBADCOOKIE);
	}
	CHECK_EQ(invariants(v), 0);
	CHECK_EQ(fs_close(v), 0);
}

/* A fresh file whose entry has no room left for its first write (later
 * entries took the unit's slack) moves, whole, to where it fits inline:
 * same handle, one entry, the neighbours untouched, nothing leaked. Over
 * a block, or with a second link, it goes to blocks instead. */
static void test_inline_move(void)
{
	struct fs_volume *v = make(2, 1 << 20, 4096);
	static uint8_t wbuf[8192], rbuf[8192];
	struct fs_ino root, d, first, big, x;
	struct fs_statfs s0, s1;
	struct names all = { 0 };
	uint64_t verf = 0;
	struct fs_attr a;
	char name[32];
	size_t n;
	int eof;

	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_mkdir(v, NULL, root, "d", 0755, &d, NULL), 0);
	CHECK_EQ(fs_statfs(v, &s0), 0);
	CHECK_EQ(fs_create(v, NULL, d, "first", 0644, 0, 0, &first, NULL), 0);
	CHECK_EQ(fs_create(v, NULL, d, "big", 0644, 0, 0, &big, NULL), 0);
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "empty-%02d", i);
		CHECK_EQ(fs_create(v, NULL, d, name, 0644, 0, 0, NULL, NULL), 0);
	}
	fill(wbuf, sizeof(wbuf), 9);
	CHECK_EQ(fs_write(v, NULL, first, 0, 4000, wbuf, FS_FILE_SYNC, &a), 0);
	CHECK_EQ(a.size, 4000);
	CHECK_EQ(a.used, 4000); /* inline (a block would be 4096) */
	CHECK_EQ(a.fileid, first.num);
	CHECK_EQ(fs_write(v, NULL, big, 0, 4097, wbuf, FS_FILE_SYNC, &a), 0);
	CHECK_EQ(a.used, 8192); /* two blocks: not inline */
	/* A fresh file with a second link is not moved: its data takes a block. */
	CHECK_EQ(fs_create(v, NULL, d, "linked", 0644, 0, 0, &x, NULL), 0);
	CHECK_EQ(fs_create(v, NULL, d, "after-linked", 0644, 0, 0, NULL, NULL), 0);
	CHECK_EQ(fs_link(v, NULL, x, d, "linked2"), 0);
	CHECK_EQ(fs_write(v, NULL, x, 0, 4000, wbuf, FS_FILE_SYNC, &a), 0);
	CHECK_EQ(a.used, 4096);
	CHECK_EQ(a.nlink, 2);
	CHECK_EQ(invariants(v), 0);
	v = reopen(v);
	CHECK_EQ(fs_lookup(v, NULL, d, "first", &x, NULL), 0);
	CHECK_EQ(x.num, first.num);
	CHECK_EQ(x.gen, first.gen);
	CHECK_EQ(fs_read(v, NULL, first, 0, sizeof(rbuf), rbuf, &n, &eof), 0);
	CHECK_EQ(n, 4000);
	CHECK(memcmp(rbuf, wbuf, 4000) == 0);
	CHECK_EQ(fs_readdir(v, NULL, d, 0, &verf, 0, collect, &all, &eof), 0);
	CHECK_EQ(all.n, 47); /* ".", "..", first, big, the linked three and the 40 */
	{
		int firsts = 0;
		for (int i = 0; i < all.n; i++)
			firsts += strcmp(all.list[i], "first") == 0;
		CHECK_EQ(firsts, 1);
	}
	CHECK(has(&all, "empty-00") && has(&all, "empty-39"));
	CHECK_EQ(fs_remove(v, NULL, d, "first"), 0);
	CHECK_EQ(fs_remove(v, NULL, d, "big"), 0);
	{
		struct fs_ino l2;
		CHECK_EQ(fs_lookup(v, NULL, d, "linked2", &l2, NULL), 0);
		CHECK_EQ(fs_read(v, NULL, l2, 0, sizeof(rbuf), rbuf, &n, &eof), 0);
		CHECK_EQ(n, 4000);
		CHECK(memcmp(rbuf, wbuf, 4000) == 0);
	}
	CHECK_EQ(fs_remove(v, NULL, d, "linked"), 0);
	CHECK_EQ(fs_remove(v, NULL, d, "linked2"), 0);
	CHECK_EQ(fs_remove(v, NULL, d, "after-linked"), 0);
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "empty-%02d", i);
		CHECK_EQ(fs_remove(v, NULL, d, name), 0);
	}
	CHECK_EQ(fs_statfs(v, &s1), 0);
	CHECK_EQ(s1.free_blocks + pred_blocks(v), s0.free_blocks); /* s0: no table yet */
	CHECK_EQ(s1.free_inodes, s0.free_inodes);
	CHECK_EQ(invariants(v), 0);
	CHECK_EQ(fs_close(v), 0);
}

/* A file whose inline data fits beside its short name but not beside a
 * long one is renamed to the long one (model_test found it answered
 * ENAMETOOLONG): the rename succeeds, the data goes to a block, the
 * handle and every byte stay; renamed back, still whole. */
#define FILE_INLINE 15900 /* a fresh 16 KiB directory unit holds it beside a 1-byte name */
static void test_inline_rename(void)
{
	struct fs_volume *v = make(2, 1 << 20, 4096);
	static uint8_t wbuf[FILE_INLINE], rbuf[2 * FILE_INLINE];
	char longname[251];
	struct fs_ino root, d, f, x;
	struct fs_attr a;
	size_t n;
	int eof;

	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	CHECK_EQ(fs_root(v, &root), 0);
	CHECK_EQ(fs_mkdir(v, NULL, root, "d", 0755, &d, NULL), 0);
	/* the first entry of a new directory: its slack is the whole unit */
	CHECK_EQ(fs_create(v, NULL, d, "f", 0644, 0, 0, &f, NULL), 0);
	fill(wbuf, FILE_INLINE, 5);
	CHECK_EQ(fs_write(v, NULL, f, 0, FILE_INLINE, wbuf, FS_FILE_SYNC, &a), 0);
	CHECK_EQ(a.used, FILE_INLINE); /* inline beside "f"; a 250-byte name leaves room for less */
	CHECK_EQ(fs_rename(v, NULL, d, "f", root, longname), 0);
	CHECK_EQ(fs_lookup(v, NULL, root, longname, &x, &a), 0);
	CHECK_EQ(x.num, f.num);
	CHECK_EQ(x.gen, f.gen);
	CHECK_EQ(a.size, FILE_INLINE);
	CHECK_EQ(a.used, 4 * 4096); /* blocks now */
	CHECK_EQ(fs_lookup(v, NULL, d, "f", &x, NULL), -ENOENT);
	CHECK_EQ(invariants(v), 0);
	v = reopen(v);
	CHECK_EQ(fs_read(v, NULL, f, 0, sizeof(rbuf), rbuf, &n, &eof), 0);
	CHECK_EQ(n, FILE_INLINE);
	CHECK(memcmp(rbuf, wbuf, FILE_INLINE) == 0);
	CHECK_EQ(fs_rename(v, NULL, root, longname, d, "f"), 0);
	CHECK_EQ(fs_read(v, NULL, f, 0, sizeof(rbuf), rbuf, &n, &eof), 0);
	CHECK_EQ(n, FILE_INLINE);
	CHECK(memcmp(rbuf, wbuf, FILE_INLINE) == 0);
	CHECK_EQ(invariants(v), 0);
	CHECK_EQ(fs_close(v), 0);
}

static void read_image(uint8_t *buf, size_t len)
{
	FILE *f = fopen(image, "rb");

	CHECK(f != NULL);
	CHECK_EQ(fread(buf, 1, len, f), len);
	fclose(f);
}

/* mkfs writes a header pair per chunk and nothing else outside chunk 0,
 * but for lost+found's first part in chunk 1's slot 0 (its inode-area block
 * and the bitmap, first written then, each in both copies); the first slot of
 * every chunk used afterwards is lost+found's part. */
static void test_mkfs_lazy(void)
{
	enum { NCHUNKS = 16, CHUNK = 1 << 20, NB = CHUNK / OD_BLOCK_SIZE };
	static uint8_t img[NCHUNKS * CHUNK];
	struct fs_volume *v = make(NCHUNKS, CHUNK, 4096);
	struct fs_ino root, d;
	uint32_t used = 0;

	CHECK_EQ(fs_close(v), 0);
	read_image(img, sizeof(img));
	for (uint32_t k = 1; k < NCHUNKS; k++) {
		struct od_chunk_header h;
		uint32_t nonzero = 0, expected = 0;
		CHECK_EQ(od_get_chunk_header(img + (size_t)k * CHUNK, &h), 0);
		for (uint32_t b = 0; b < NB; b++) {
			const uint8_t *p = img + (size_t)k * CHUNK + (size_t)b * OD_BLOCK_SIZE;
			uint32_t own = b % (NB / 2);
			int any = 0, allowed = own == 0;
			for (uint32_t i = 0; i < OD_BLOCK_SIZE && !any; i++)
				any = p[i] != 0;
			if (k == 1)
				allowed |= own == h.itable_start || own == h.bitmap_start;
			nonzero += any && !allowed;
			expected += any && allowed && own != 0;
		}
		CHECK_EQ(nonzero, 0);
		CHECK_EQ(expected, k == 1 ? 4u : 0u);
		CHECK_EQ(h.islot_watermark, k == 1 ? 1u : 0u);
	}

	/* Directories spread over the chunks; each chunk they reach gets
	 * lost+found's part in its slot 0 first. */
	CHECK_EQ(fs_open(image, 0, &v), 0);
	CHECK_EQ(fs_root(v, &root), 0);
	for (int i = 0; i < 40; i++) {
		char name[16];
		snprintf(name, sizeof(name), "d%d", i);
		CHECK_EQ(fs_mkdir(v, NULL, root, name, 0755, &d, NULL), 0);
	}
	CHECK_EQ(invariants(v), 0);
	CHECK_EQ(fs_close(v), 0);
	read_image(img, sizeof(img));
	for (uint32_t k = 1; k < NCHUNKS; k++) {
		const uint8_t *base = img + (size_t)k * CHUNK;
		struct od_chunk_header h;
		struct od_inode ino;
		CHECK_EQ(od_get_chunk_header(base, &h), 0);
		if (h.islot_watermark == 0)
			continue;
		od_get_inode(base + (size_t)h.itable_start * OD_BLOCK_SIZE + OD_MB_HEADER_SIZE, &ino);
		CHECK_EQ(ino.flags & (OD_INF_CONT | OD_INF_LOSTFOUND), OD_INF_CONT | OD_INF_LOSTFOUND);
		CHECK_EQ(ino.head_stable, 2); /* lost+found */
		used++;
	}
	CHECK(used >= 4); /* the directories reached several chunks */
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(image, sizeof(image), "%s/fs_basic_test.%d.img", tmp ? tmp : "/tmp",
		 (int)getpid());
	test_names();
	test_data();
	test_readdir();
	test_inline_move();
	test_inline_rename();
	test_mkfs_lazy();
	unlink(image);
	return test_done("fs_basic");
}
