/* mkfs -d: a depth-first walk of the source tree through directory fds
 * (openat/fstatat, so no path handed to the kernel is longer than one name),
 * making each object through the library and then setting its attributes.
 * The rule it keeps: an object's times are set after the last change made to
 * it, so a directory's only once all of its entries exist. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fs/fs.h"
#include "tools/mkfs_populate.h"

/* File data moves in pieces this large: one pread, one fs_write. */
#define COPY_PIECE (1u << 20)
/* Unstable bytes written since the last fs_sync that trigger the next one.
 * It bounds what the library holds unflushed, without the flush per file
 * that would make a tree of small files as slow as that many fsyncs. */
#define SYNC_EVERY (256ull << 20)
/* Source directory fds held open along the current path (fewer when
 * RLIMIT_NOFILE is small). Deeper than this, a parent's fd is closed while
 * its subtree is copied and reopened through ".." afterwards, so the depth of
 * the tree is not bounded by the fd limit. */
#define DIR_FD_BUDGET 64

/* (st_dev, st_ino) of a source inode with more than one name -> the inode
 * made for its first name. Open addressing with linear probing, kept at most
 * half full. */
struct link_slot {
	dev_t dev;
	ino_t ino;
	struct fs_ino made;
	int used;
};

struct link_table {
	struct link_slot *slots;
	size_t cap; /* a power of two, or 0 before the first insert */
	size_t used;
};

struct populate {
	struct fs_volume *vol;
	struct mkfs_populate_stats *st;
	struct link_table links;
	unsigned char *buf;     /* COPY_PIECE bytes */
	uint64_t unsynced;      /* bytes written FS_UNSTABLE since the last fs_sync */
	unsigned int open_dirs; /* source directory fds open on the current path */
	unsigned int fd_budget; /* how many of them may stay open */
};

/* One source directory on the current path and where it is being copied. */
struct src_dir {
	int fd;           /* -1 while given back to save fds */
	dev_t dev;        /* its identity, to check a reopened fd */
	ino_t ino;
	const char *path; /* for messages only */
	struct fs_ino dest;
	int is_root;      /* the top of the tree, copied into the volume's root */
};

static int report(const struct src_dir *d, const char *name, const char *what, int ret)
{
	if (name)
		fprintf(stderr, "%s/%s: %s: %s\n", d->path, name, what, strerror(-ret));
	else
		fprintf(stderr, "%s: %s: %s\n", *d->path ? d->path : "/", what, strerror(-ret));
	return ret;
}

static size_t link_hash(dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)dev * 0xC2B2AE3D27D4EB4Full;

	return (size_t)(h ^ (h >> 29));
}

static struct link_slot *link_find(const struct link_table *t, dev_t dev, ino_t ino)
{
	size_t mask = t->cap - 1;

	if (!t->cap)
		return NULL;
	for (size_t i = link_hash(dev, ino) & mask;; i = (i + 1) & mask) {
		struct link_slot *s = &t->slots[i];

		if (!s->used)
			return NULL;
		if (s->dev == dev && s->ino == ino)
			return s;
	}
}

static void link_place(struct link_slot *slots, size_t cap, const struct link_slot *s)
{
	size_t i = link_hash(s->dev, s->ino) & (cap - 1);

	while (slots[i].used)
		i = (i + 1) & (cap - 1);
	slots[i] = *s;
}

static int link_add(struct link_table *t, dev_t dev, ino_t ino, struct fs_ino made)
{
	struct link_slot s = { .dev = dev, .ino = ino, .made = made, .used = 1 };

	if ((t->used + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct link_slot *slots = calloc(cap, sizeof(*slots));

		if (!slots)
			return -ENOMEM;
		for (size_t i = 0; i < t->cap; i++)
			if (t->slots[i].used)
				link_place(slots, cap, &t->slots[i]);
		free(t->slots);
		t->slots = slots;
		t->cap = cap;
	}
	link_place(t->slots, t->cap, &s);
	t->used++;
	return 0;
}

/* Gives ino the source's owner, times and (but for a symlink) mode, plus
 * the size when the file ends in a hole that no write reached. */
static int set_attrs(struct populate *p, struct fs_ino ino, const struct stat *st, uint32_t extra,
		     uint64_t size)
{
	struct fs_setattr sa = { 0 };
	struct fs_attr out;
	int ret;

	sa.valid = FS_SET_UID | FS_SET_GID | FS_SET_ATIME | FS_SET_MTIME | extra;
	if (!S_ISLNK(st->st_mode))
		sa.valid |= FS_SET_MODE;
	sa.mode = st->st_mode & 07777;
	sa.uid = st->st_uid;
	sa.gid = st->st_gid;
	sa.size = size;
	sa.atime = st->st_atim;
	sa.mtime = st->st_mtim;
	ret = fs_setattr(p->vol, NULL, ino, &sa, &out);
	if (ret < 0)
		return ret;
	/* A change of owner may clear the set-id bits, as chown(2) does, in
	 * whichever order the library applies the fields: set the mode again
	 * on its own when it did not survive. */
	if ((sa.valid & FS_SET_MODE) && (out.mode & 07777) != sa.mode) {
		sa.valid = FS_SET_MODE;
		ret = fs_setattr(p->vol, NULL, ino, &sa, &out);
	}
	return ret;
}

/* The next range of data at or after pos: [*data, *hole). Returns 0 when
 * there is one, 1 when the rest of the file is a hole. Where SEEK_DATA is
 * not supported the whole file is data. */
static int next_data(int fd, off_t pos, off_t end, off_t *data, off_t *hole)
{
	off_t d, h;

	d = lseek(fd, pos, SEEK_DATA);
	if (d < 0) {
		if (errno == ENXIO)
			return 1;
		*data = pos;
		*hole = end;
		return 0;
	}
	if (d >= end)
		return 1;
	h = lseek(fd, d, SEEK_HOLE);
	if (h < 0 || h > end)
		h = end;
	*data = d;
	*hole = h;
	return 0;
}

/* Copies the data of fd up to end, leaving holes as holes; *written_end is
 * where the last write ended. A file that shrinks meanwhile keeps what was
 * read; its size is still set to end by the caller. */
static int copy_file_data(struct populate *p, const struct src_dir *d, const char *name, int fd,
			  struct fs_ino ino, off_t end, uint64_t *written_end)
{
	struct fs_attr post;
	off_t pos = 0, data, hole;
	int ret;

	while (pos < end && next_data(fd, pos, end, &data, &hole) == 0) {
		for (off_t off = data; off < hole;) {
			size_t want = (size_t)(hole - off < COPY_PIECE ? hole - off : COPY_PIECE);
			ssize_t n = pread(fd, p->buf, want, off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return report(d, name, "read", -errno);
			if (n == 0)
				return 0;
			ret = fs_write(p->vol, NULL, ino, (uint64_t)off, (size_t)n, p->buf,
				       FS_UNSTABLE, &post);
			if (ret < 0)
				return report(d, name, "fs_write", ret);
			off += n;
			*written_end = (uint64_t)off;
			p->st->bytes += (uint64_t)n;
			p->unsynced += (uint64_t)n;
			if (p->unsynced >= SYNC_EVERY) {
				ret = fs_sync(p->vol);
				if (ret < 0)
					return report(d, name, "fs_sync", ret);
				p->unsynced = 0;
			}
		}
		pos = hole;
	}
	/* Whole: its size is known, so it is placed now (delayed
	 * allocation, fs/dalloc.c), and the chunks' loads that place the
	 * directories made next (fs/vol_spread.c) count its blocks. */
	ret = fs_place(p->vol, ino);
	if (ret < 0)
		return report(d, name, "placing the data", ret);
	return 0;
}

static int open_source_file(const struct src_dir *d, const char *name)
{
	int flags = O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC;
	int fd;

	/* Leave the source's atime alone where we may (owner or CAP_FOWNER). */
	fd = openat(d->fd, name, flags | O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = openat(d->fd, name, flags);
	return fd < 0 ? -errno : fd;
}

static int copy_regular(struct populate *p, const struct src_dir *d, const char *name,
			const struct stat *lst, struct fs_ino *made)
{
	uint64_t written_end = 0;
	struct fs_ino ino;
	struct stat st;
	int fd, ret;

	fd = open_source_file(d, name);
	if (fd < 0)
		return report(d, name, "open", fd);
	if (fstat(fd, &st) < 0) {
		ret = report(d, name, "fstat", -errno);
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_dev != lst->st_dev || st.st_ino != lst->st_ino) {
		ret = report(d, name, "changed while being copied", -ESTALE);
		goto out;
	}
	ret = fs_create(p->vol, NULL, d->dest, name, st.st_mode & 07777, FS_CREATE_GUARDED, 0, &ino,
			NULL);
	if (ret < 0) {
		report(d, name, "fs_create", ret);
		goto out;
	}
	/* Its exact size is known: reserved before the first byte
	 * (fs/prealloc.c), so the file lands in one extent however often a
	 * sync places part of it. A file of one block cannot be in pieces.
	 * No room for a run is no error: the copy goes on unreserved. What
	 * the copy did not write (holes, a file that shrank) is given back
	 * below. */
	if (st.st_size > 4096) {
		uint64_t got;
		ret = fs_prealloc(p->vol, ino, (uint64_t)st.st_size, FS_PREALLOC_TRIM, &got);
		if (ret < 0 && ret != -ENOSPC) {
			report(d, name, "fs_prealloc", ret);
			goto out;
		}
	}
	ret = copy_file_data(p, d, name, fd, ino, st.st_size, &written_end);
	if (st.st_size > 4096)
		(void)fs_prealloc_release(p->vol, ino); /* (-ENOENT: used up, or none) */
	if (ret < 0)
		goto out;
	ret = set_attrs(p, ino, &st, written_end < (uint64_t)st.st_size ? FS_SET_SIZE : 0,
			(uint64_t)st.st_size);
	if (ret < 0) {
		report(d, name, "fs_setattr", ret);
		goto out;
	}
	p->st->files++;
	*made = ino;
out:
	close(fd);
	return ret;
}

static int copy_symlink(struct populate *p, const struct src_dir *d, const char *name,
			const struct stat *lst, struct fs_ino *made)
{
	char target[FS_SYMLINK_MAX + 2];
	struct fs_ino ino;
	ssize_t n;
	int ret;

	n = readlinkat(d->fd, name, target, sizeof(target) - 1);
	if (n < 0)
		return report(d, name, "readlink", -errno);
	if (n > FS_SYMLINK_MAX)
		return report(d, name, "symlink target", -ENAMETOOLONG);
	target[n] = '\0';
	ret = fs_symlink(p->vol, NULL, d->dest, name, target, lst->st_mode & 07777, &ino, NULL);
	if (ret < 0)
		return report(d, name, "fs_symlink", ret);
	ret = set_attrs(p, ino, lst, 0, 0);
	if (ret < 0)
		return report(d, name, "fs_setattr", ret);
	p->st->symlinks++;
	*made = ino;
	return 0;
}

/* Devices, fifos and sockets: nothing but an inode. */
static int copy_node(struct populate *p, const struct src_dir *d, const char *name,
		     const struct stat *lst, struct fs_ino *made)
{
	int is_dev = S_ISCHR(lst->st_mode) || S_ISBLK(lst->st_mode);
	uint32_t rmajor = is_dev ? major(lst->st_rdev) : 0;
	uint32_t rminor = is_dev ? minor(lst->st_rdev) : 0;
	struct fs_ino ino;
	int ret;

	ret = fs_mknod(p->vol, NULL, d->dest, name, lst->st_mode & (S_IFMT | 07777), rmajor, rminor,
		       &ino, NULL);
	if (ret < 0)
		return report(d, name, "fs_mknod", ret);
	ret = set_attrs(p, ino, lst, 0, 0);
	if (ret < 0)
		return report(d, name, "fs_setattr", ret);
	if (is_dev)
		p->st->devices++;
	else if (S_ISFIFO(lst->st_mode))
		p->st->fifos++;
	else
		p->st->sockets++;
	*made = ino;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The names in d but "." and "..", sorted, so that images made from the
 * same tree come out the same and the first name of a hard link is stable.
 * Read to the end before any is copied: the listing needs its own fd
 * (fdopendir owns it) and must not stay open while the subtree is walked. */
static int list_names(const struct src_dir *d, char ***out, size_t *count)
{
	char **names = NULL, **grown;
	size_t n = 0, cap = 0;
	struct dirent *ent;
	DIR *dir;
	int fd, ret = 0;

	fd = fcntl(d->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		ret = -errno;
		close(fd);
		return ret;
	}
	rewinddir(dir);
	for (;;) {
		errno = 0;
		ent = readdir(dir);
		if (!ent) {
			ret = -errno;
			break;
		}
		if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			grown = realloc(names, cap * sizeof(*names));
			if (!grown) {
				ret = -ENOMEM;
				break;
			}
			names = grown;
		}
		names[n] = strdup(ent->d_name);
		if (!names[n]) {
			ret = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(dir);
	if (ret < 0) {
		free_names(names, n);
		return ret;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	*out = names;
	*count = n;
	return 0;
}

static int copy_children(struct populate *p, struct src_dir *d);

/* After a deep subtree: the parent's fd back, through "..", provided it is
 * still the same directory. */
static int reopen_parent(struct src_dir *parent, const struct src_dir *child)
{
	struct stat st;
	int fd;

	fd = openat(child->fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return report(parent, NULL, "reopen", -errno);
	if (fstat(fd, &st) < 0 || st.st_dev != parent->dev || st.st_ino != parent->ino) {
		close(fd);
		return report(parent, NULL, "moved while being copied", -ESTALE);
	}
	parent->fd = fd;
	return 0;
}

static int copy_subdir(struct populate *p, struct src_dir *parent, const char *name,
		       const struct stat *lst)
{
	struct src_dir child = { .fd = -1 };
	struct stat st;
	char *path;
	int ret;

	if (asprintf(&path, "%s/%s", parent->path, name) < 0)
		return report(parent, name, "path", -ENOMEM);
	child.path = path;
	child.fd = openat(parent->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (child.fd < 0) {
		ret = report(&child, NULL, "open", -errno);
		goto out;
	}
	if (fstat(child.fd, &st) < 0) {
		ret = report(&child, NULL, "fstat", -errno);
		goto out;
	}
	if (st.st_dev != lst->st_dev || st.st_ino != lst->st_ino) {
		ret = report(&child, NULL, "changed while being copied", -ESTALE);
		goto out;
	}
	child.dev = st.st_dev;
	child.ino = st.st_ino;
	ret = fs_mkdir(p->vol, NULL, parent->dest, name, st.st_mode & 07777, &child.dest, NULL);
	if (ret == -EEXIST && parent->is_root && !strcmp(name, "lost+found")) {
		/* mkfs made it (with a part in every chunk): the source's goes
		 * into it, and its attributes are the source's. */
		ret = fs_lookup(p->vol, NULL, parent->dest, name, &child.dest, NULL);
	}
	if (ret < 0) {
		report(&child, NULL, "fs_mkdir", ret);
		goto out;
	}
	p->st->dirs++;

	p->open_dirs++;
	if (p->open_dirs > p->fd_budget) {
		close(parent->fd);
		parent->fd = -1;
	}
	ret = copy_children(p, &child);
	if (ret == 0 && parent->fd < 0)
		ret = reopen_parent(parent, &child);
	p->open_dirs--;
	if (ret < 0)
		goto out;

	/* Last, so that making the entries does not move its times. */
	ret = set_attrs(p, child.dest, &st, 0, 0);
	if (ret < 0)
		report(&child, NULL, "fs_setattr", ret);
out:
	if (child.fd >= 0)
		close(child.fd);
	free(path);
	return ret;
}

static int copy_entry(struct populate *p, struct src_dir *d, const char *name)
{
	struct fs_ino made;
	struct link_slot *seen;
	struct stat lst;
	int ret;

	if (fstatat(d->fd, name, &lst, AT_SYMLINK_NOFOLLOW) < 0)
		return report(d, name, "stat", -errno);
	if (S_ISDIR(lst.st_mode))
		return copy_subdir(p, d, name, &lst);

	if (lst.st_nlink > 1) {
		seen = link_find(&p->links, lst.st_dev, lst.st_ino);
		if (seen) {
			ret = fs_link(p->vol, NULL, seen->made, d->dest, name);
			if (ret < 0)
				return report(d, name, "fs_link", ret);
			p->st->hardlinks++;
			return 0;
		}
	}

	switch (lst.st_mode & S_IFMT) {
	case S_IFREG:
		ret = copy_regular(p, d, name, &lst, &made);
		break;
	case S_IFLNK:
		ret = copy_symlink(p, d, name, &lst, &made);
		break;
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		ret = copy_node(p, d, name, &lst, &made);
		break;
	default:
		return report(d, name, "unsupported file type", -EOPNOTSUPP);
	}
	if (ret < 0)
		return ret;
	if (lst.st_nlink > 1) {
		ret = link_add(&p->links, lst.st_dev, lst.st_ino, made);
		if (ret < 0)
			return report(d, name, "hard link table", ret);
	}
	return 0;
}

static int copy_children(struct populate *p, struct src_dir *d)
{
	char **names = NULL;
	size_t n = 0;
	int ret;

	ret = list_names(d, &names, &n);
	if (ret < 0)
		return report(d, NULL, "readdir", ret);
	for (size_t i = 0; i < n && ret == 0; i++)
		ret = copy_entry(p, d, names[i]);
	free_names(names, n);
	return ret;
}

/* A quarter of the fd limit, leaving the rest to the library and stdio. */
static unsigned int dir_fd_budget(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur / 4 >= DIR_FD_BUDGET)
		return DIR_FD_BUDGET;
	return rl.rlim_cur / 4 > 2 ? (unsigned int)(rl.rlim_cur / 4) : 2;
}

int mkfs_populate(struct fs_volume *vol, const char *dir, struct mkfs_populate_stats *st)
{
	struct populate p = { .vol = vol, .st = st };
	struct src_dir root = { .fd = -1 };
	struct stat rst;
	char *path;
	size_t len;
	int ret;

	memset(st, 0, sizeof(*st));
	/* "src/" and "src" name the same tree; messages read "src/a/b". */
	path = strdup(dir);
	if (!path)
		return -ENOMEM;
	len = strlen(path);
	while (len > 0 && path[len - 1] == '/')
		path[--len] = '\0';
	root.path = path;
	root.is_root = 1;

	p.buf = malloc(COPY_PIECE);
	if (!p.buf) {
		ret = report(&root, NULL, "copy buffer", -ENOMEM);
		goto out;
	}
	root.fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root.fd < 0) {
		ret = report(&root, NULL, "open", -errno);
		goto out;
	}
	if (fstat(root.fd, &rst) < 0) {
		ret = report(&root, NULL, "fstat", -errno);
		goto out;
	}
	root.dev = rst.st_dev;
	root.ino = rst.st_ino;
	ret = fs_root(vol, &root.dest);
	if (ret < 0) {
		report(&root, NULL, "fs_root", ret);
		goto out;
	}

	p.open_dirs = 1;
	p.fd_budget = dir_fd_budget();
	ret = copy_children(&p, &root);
	if (ret < 0)
		goto out;
	ret = set_attrs(&p, root.dest, &rst, 0, 0);
	if (ret < 0) {
		report(&root, NULL, "fs_setattr", ret);
		goto out;
	}
	ret = fs_sync(vol);
	if (ret < 0)
		report(&root, NULL, "fs_sync", ret);
out:
	if (root.fd >= 0)
		close(root.fd);
	free(p.links.slots);
	free(p.buf);
	free(path);
	return ret;
}
