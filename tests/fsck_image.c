/* The known tree of the fsck tests: built through the library on a fresh
 * volume of FI_NCHUNKS small chunks, and read back file by file to count
 * what a damage (and its repair) left intact. Also whole-file reading and
 * copying of images. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/format/ondisk.h"
#include "tests/fsck_image.h"

uint8_t *fi_slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	uint8_t *buf;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size ? (size_t)st.st_size : 1);
	if (buf && pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

int fi_copy(const char *from, const char *to)
{
	size_t len = 0;
	uint8_t *buf = fi_slurp(from, &len);
	int fd, ret = 0;

	if (!buf)
		return -EIO;
	fd = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		ret = -errno;
	else if (pwrite(fd, buf, len, 0) != (ssize_t)len)
		ret = -EIO;
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

void fi_fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((i * 131 + seed * 7 + (i >> 12)) & 0xff);
}

#define T(x)                                                                          \
	do {                                                                          \
		ret = (x);                                                            \
		if (ret < 0) {                                                        \
			fprintf(stderr, "fi_build: %s: %s\n", #x, strerror(-ret));    \
			goto out;                                                     \
		}                                                                     \
	} while (0)

int fi_build(const char *image, struct fi_tree *t)
{
	struct fs_mkfs_opts mo = { .chunk_size = FI_CHUNK_SIZE, .chunk_count = FI_NCHUNKS,
				   .bytes_per_inode = 4096, .force = 1 };
	struct fs_ino root, d1, sub, f, many, x;
	struct fs_volume *v = NULL;
	uint8_t *big = malloc(FI_BIG_SIZE);
	char name[32];
	int ret = 0;

	if (!big)
		return -ENOMEM;
	memset(t, 0, sizeof(*t));
	T(fs_mkfs(image, &mo));
	T(fs_open(image, 0, &v));
	T(fs_root(v, &root));
	T(fs_mkdir(v, NULL, root, "d1", 0755, &d1, NULL));
	T(fs_create(v, NULL, d1, "small", 0644, FS_CREATE_GUARDED, 0, &f, NULL));
	T(fs_write(v, NULL, f, 0, 11, "hello small", FS_UNSTABLE, NULL));
	t->small = f.num;
	T(fs_create(v, NULL, d1, "gone", 0644, FS_CREATE_GUARDED, 0, &x, NULL));
	t->gone = x.num;
	T(fs_link(v, NULL, f, d1, "hl"));
	T(fs_mkdir(v, NULL, d1, "sub", 0700, &sub, NULL));
	t->sub = sub.num;
	T(fs_create(v, NULL, sub, "f2", 0600, FS_CREATE_GUARDED, 0, &x, NULL));
	T(fs_write(v, NULL, x, 0, 9, "second f2", FS_UNSTABLE, NULL));
	T(fs_symlink(v, NULL, root, "ln", "d1/small", 0777, NULL, NULL));
	/* A file whose inode lives in a slot: its first name removed. */
	fi_fill(big, FI_ORPH_SIZE, 5);
	T(fs_create(v, NULL, d1, "orph", 0644, FS_CREATE_GUARDED, 0, &x, NULL));
	T(fs_write(v, NULL, x, 0, FI_ORPH_SIZE, big, FS_UNSTABLE, NULL));
	T(fs_link(v, NULL, x, d1, "orph2"));
	T(fs_remove(v, NULL, d1, "orph"));
	t->orph = x.num;
	fi_fill(big, FI_DATA2_SIZE, 6);
	T(fs_create(v, NULL, d1, "data2", 0644, FS_CREATE_GUARDED, 0, &x, NULL));
	T(fs_write(v, NULL, x, 0, FI_DATA2_SIZE, big, FS_UNSTABLE, NULL));
	t->data2 = x.num;
	/* An inode relocated to a slot, then removed: a free slot below the
	 * watermark. */
	T(fs_create(v, NULL, d1, "rel", 0644, FS_CREATE_GUARDED, 0, &x, NULL));
	T(fs_link(v, NULL, x, d1, "rel2"));
	T(fs_remove(v, NULL, d1, "rel"));
	T(fs_remove(v, NULL, d1, "rel2"));
	/* More files than chunk 0 has numbers: "many" gets parts elsewhere. */
	T(fs_mkdir(v, NULL, root, "many", 0755, &many, NULL));
	t->many = many.num;
	for (int i = 0; i < FI_NMANY; i++) {
		snprintf(name, sizeof(name), "f%03d", i);
		T(fs_create(v, NULL, many, name, 0644, FS_CREATE_GUARDED, 0, &x, NULL));
		T(fs_write(v, NULL, x, 0, strlen(name), name, FS_UNSTABLE, NULL));
	}
	T(fs_mkdir(v, NULL, many, "late", 0755, &x, NULL));
	T(fs_mkdir(v, NULL, x, "deeper", 0755, NULL, NULL));
	/* A hard link from the root (chunk 0) to a file of another chunk. */
	T(fs_lookup(v, NULL, many, "f000", &x, NULL));
	if (OD_STABLE_CHUNK(x.num) == 0) {
		fprintf(stderr, "fi_build: many/f000 is in chunk 0\n");
		ret = -EINVAL;
		goto out;
	}
	T(fs_link(v, NULL, x, root, "far_link"));
	/* A file larger than what one chunk has room for. */
	fi_fill(big, FI_BIG_SIZE, 3);
	T(fs_create(v, NULL, root, "big", 0644, FS_CREATE_GUARDED, 0, &x, NULL));
	T(fs_write(v, NULL, x, 0, FI_BIG_SIZE, big, FS_UNSTABLE, NULL));
	t->big = x.num;
	/* A freed number, for an entry to name later. */
	T(fs_remove(v, NULL, d1, "gone"));
	T(fs_check_invariants(v, NULL, NULL));
	/* The image is left as a crash right after the last commit leaves it
	 * (its catch-ups pending, its lists in place): a clean close would
	 * settle both, so the copy taken before it is the one kept. */
	T(fs_sync(v));
	{
		char held[300];
		snprintf(held, sizeof(held), "%s.held", image);
		T(fi_copy(image, held));
		if (ret == 0)
			ret = fs_close(v);
		v = NULL;
		if (ret == 0 && rename(held, image) < 0)
			ret = -errno;
	}
out:
	if (v) {
		int r = fs_close(v);
		if (ret == 0)
			ret = r;
	}
	free(big);
	return ret;
}

/* Does the file at dir/name hold exactly want[0..len)? */
static int same_file(struct fs_volume *v, struct fs_ino dir, const char *name, const void *want,
		     size_t len)
{
	uint8_t *buf = malloc(len + 1);
	struct fs_ino x;
	size_t n = 0;
	int eof = 0, ok = 0;

	if (buf && fs_lookup(v, NULL, dir, name, &x, NULL) == 0 &&
	    fs_read(v, NULL, x, 0, len + 1, buf, &n, &eof) == 0)
		ok = n == len && memcmp(buf, want, len) == 0;
	free(buf);
	return ok;
}

static int same_link(struct fs_volume *v, struct fs_ino dir, const char *name, const char *want)
{
	char buf[64];
	struct fs_ino x;
	size_t n = 0;

	return fs_lookup(v, NULL, dir, name, &x, NULL) == 0 &&
	       fs_readlink(v, x, buf, sizeof(buf), &n) == 0 && n == strlen(want) &&
	       memcmp(buf, want, n) == 0;
}

unsigned fi_survivors(struct fs_volume *v, unsigned *total)
{
	struct fs_ino root, d1, sub, many;
	uint8_t *big = malloc(FI_BIG_SIZE);
	unsigned ok = 0;
	char name[16];

	*total = 8 + FI_NMANY;
	if (!big || fs_root(v, &root) < 0) {
		free(big);
		return 0;
	}
	if (fs_lookup(v, NULL, root, "d1", &d1, NULL) == 0) {
		ok += same_file(v, d1, "small", "hello small", 11);
		ok += same_file(v, d1, "hl", "hello small", 11);
		if (fs_lookup(v, NULL, d1, "sub", &sub, NULL) == 0)
			ok += same_file(v, sub, "f2", "second f2", 9);
		fi_fill(big, FI_ORPH_SIZE, 5);
		ok += same_file(v, d1, "orph2", big, FI_ORPH_SIZE);
		fi_fill(big, FI_DATA2_SIZE, 6);
		ok += same_file(v, d1, "data2", big, FI_DATA2_SIZE);
	}
	ok += same_link(v, root, "ln", "d1/small");
	fi_fill(big, FI_BIG_SIZE, 3);
	ok += same_file(v, root, "big", big, FI_BIG_SIZE);
	ok += same_file(v, root, "far_link", "f000", 4);
	if (fs_lookup(v, NULL, root, "many", &many, NULL) == 0) {
		for (int i = 0; i < FI_NMANY; i++) {
			snprintf(name, sizeof(name), "f%03d", i);
			ok += same_file(v, many, name, name, 4);
		}
	}
	free(big);
	return ok;
}

/* --- the whole tree through the library ------------------------------------ */

struct walk_list {
	struct fs_dirent *e;
	char (*names)[256];
	size_t n, cap;
};

static int walk_collect(void *ctx, const struct fs_dirent *ent)
{
	struct walk_list *l = ctx;

	if ((ent->name_len == 1 && ent->name[0] == '.') ||
	    (ent->name_len == 2 && ent->name[0] == '.' && ent->name[1] == '.'))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct fs_dirent *e = realloc(l->e, cap * sizeof(*e));
		char (*nm)[256] = e ? realloc(l->names, cap * sizeof(*nm)) : NULL;
		if (e)
			l->e = e;
		if (!nm)
			return -ENOMEM;
		l->names = nm;
		l->cap = cap;
	}
	l->e[l->n] = *ent;
	memcpy(l->names[l->n], ent->name, ent->name_len);
	l->names[l->n][ent->name_len] = 0;
	l->e[l->n].name = l->names[l->n];
	l->n++;
	return 0;
}

static void walk_dir(struct fs_volume *v, struct fs_ino dir, unsigned depth, struct fi_walk *w)
{
	struct walk_list l = { 0 };
	uint64_t cookie = 0, verf = 0;
	int eof = 0;
	uint8_t *buf = malloc(65536);

	w->dirs++;
	while (!eof) {
		size_t before = l.n;
		if (!buf || fs_readdir(v, NULL, dir, cookie, &verf, 1, walk_collect, &l, &eof) < 0) {
			w->errors++;
			break;
		}
		if (l.n == before && !eof) {
			w->errors++; /* no progress */
			break;
		}
		if (l.n)
			cookie = l.e[l.n - 1].cookie;
	}
	for (size_t i = 0; i < l.n; i++) {
		const struct fs_attr *a = &l.e[i].attr;
		if (S_ISDIR(a->mode)) {
			if (depth < 64)
				walk_dir(v, l.e[i].ino, depth + 1, w);
		} else if (S_ISREG(a->mode)) {
			uint64_t off = 0;
			int feof = 0;
			w->files++;
			while (!feof && buf) {
				size_t n = 0;
				if (fs_read(v, NULL, l.e[i].ino, off, 65536, buf, &n, &feof) < 0) {
					w->errors++;
					break;
				}
				off += n;
				if (n == 0)
					break;
			}
		} else if (S_ISLNK(a->mode)) {
			char t[4096];
			size_t n = 0;
			w->files++;
			if (fs_readlink(v, l.e[i].ino, t, sizeof(t), &n) < 0)
				w->errors++;
		}
	}
	free(l.e);
	free(l.names);
	free(buf);
}

void fi_walk(struct fs_volume *v, struct fi_walk *w)
{
	struct fs_ino root;

	memset(w, 0, sizeof(*w));
	if (fs_root(v, &root) < 0) {
		w->errors++;
		return;
	}
	walk_dir(v, root, 0, w);
}
