/* Model-based randomized test of fs.h: random operation sequences run both
 * against a system under test (the library, or with MODEL_ORACLE=posix a real
 * directory tree) and against tests/model_ref.c; every result must agree.
 *
 * Environment: SEED (default: time-based), MODEL_SEQUENCES, MODEL_OPS (per
 * sequence), MODEL_START (first sequence number: SEED=s MODEL_START=n
 * MODEL_SEQUENCES=1 replays sequence n alone), MODEL_VERBOSE=1 (print every
 * operation), MODEL_PERMS=0 (no sequences with a non-root struct fs_cred),
 * MODEL_ORACLE=posix (check the model itself against Linux; needs root). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs.h"
#include "model_ref.h"
#include "tap.h"

#define KiB 1024u
#define MiB (1024u * 1024u)
#define MAX_IO (2 * MiB + 64 * KiB) /* the largest single write or read */

/* ------------------------------------------------------------------------
 * The system under test, behind one interface: the calls of fs.h with the
 * volume replaced by the backend, plus the life cycle of one volume.
 */
struct backend {
	const char *name;
	int has_statfs; /* statfs counts objects and blocks as the model can check */
	void *priv;
	int (*begin)(struct backend *be, uint32_t chunk_count, uint32_t bytes_per_inode);
	int (*reopen)(struct backend *be);
	void (*end)(struct backend *be, int keep);
	const char *(*where)(struct backend *be);
	int (*root)(struct backend *be, struct fs_ino *out);
	int (*statfs)(struct backend *be, struct fs_statfs *out);
	int (*check)(struct backend *be);
	int (*sync)(struct backend *be);
	int (*getattr)(struct backend *be, struct fs_ino ino, struct fs_attr *out);
	int (*setattr)(struct backend *be, const struct fs_cred *c, struct fs_ino ino,
		       const struct fs_setattr *sa, struct fs_attr *out);
	int (*access)(struct backend *be, const struct fs_cred *c, struct fs_ino ino,
		      uint32_t want, uint32_t *granted);
	int (*lookup)(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		      const char *name, struct fs_ino *out, struct fs_attr *attr);
	int (*create)(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		      const char *name, uint32_t mode, enum fs_create_how how, uint64_t verf,
		      struct fs_ino *out, struct fs_attr *attr);
	int (*mkdir)(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		     const char *name, uint32_t mode, struct fs_ino *out, struct fs_attr *attr);
	int (*symlink)(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		       const char *name, const char *target, uint32_t mode, struct fs_ino *out,
		       struct fs_attr *attr);
	int (*mknod)(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		     const char *name, uint32_t mode, uint32_t major, uint32_t minor,
		     struct fs_ino *out, struct fs_attr *attr);
	int (*remove)(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		      const char *name);
	int (*rmdir)(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		     const char *name);
	int (*rename)(struct backend *be, const struct fs_cred *c, struct fs_ino from_dir,
		      const char *from_name, struct fs_ino to_dir, const char *to_name);
	int (*link)(struct backend *be, const struct fs_cred *c, struct fs_ino ino,
		    struct fs_ino dir, const char *name);
	int (*readlink)(struct backend *be, struct fs_ino ino, char *buf, size_t size,
			size_t *len);
	int (*readdir)(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		       uint64_t cookie, uint64_t *verifier, int plus, fs_readdir_fn fn, void *ctx,
		       int *eof);
	int (*read)(struct backend *be, const struct fs_cred *c, struct fs_ino ino,
		    uint64_t offset, size_t len, void *buf, size_t *nread, int *eof);
	int (*write)(struct backend *be, const struct fs_cred *c, struct fs_ino ino,
		     uint64_t offset, size_t len, const void *buf, enum fs_stable_how stable,
		     struct fs_attr *post);
	int (*commit)(struct backend *be, struct fs_ino ino);
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		die("malloc");
	return p;
}

/* A fresh directory for one volume, under $TMPDIR. */
static void make_tempdir(char *buf, size_t size, const char *tag)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(buf, size, "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
	if (!mkdtemp(buf))
		die("mkdtemp");
}

#ifndef MODEL_POSIX_ONLY
/* --- the library ------------------------------------------------------- */

struct fsb {
	char dir[PATH_MAX];
	char img[PATH_MAX + 16];
	struct fs_volume *vol;
};

#define VOL(be) (((struct fsb *)(be)->priv)->vol)

static int fsb_begin(struct backend *be, uint32_t chunk_count, uint32_t bytes_per_inode)
{
	struct fsb *f = be->priv;
	struct fs_mkfs_opts opts;
	int rc;

	make_tempdir(f->dir, sizeof(f->dir), "model-fs");
	snprintf(f->img, sizeof(f->img), "%s/volume.img", f->dir);
	memset(&opts, 0, sizeof(opts));
	opts.chunk_size = MiB;
	opts.chunk_count = chunk_count;
	opts.bytes_per_inode = bytes_per_inode;
	opts.kind = FS_KIND_GENERAL;
	opts.label = "model";
	rc = fs_mkfs(f->img, &opts);
	if (rc == -ENOENT) {
		/* fs.h does not say whether mkfs creates the file. */
		int fd = open(f->img, O_CREAT | O_RDWR | O_CLOEXEC, 0600);

		if (fd < 0)
			die(f->img);
		close(fd);
		rc = fs_mkfs(f->img, &opts);
	}
	if (rc) {
		fprintf(stderr, "model: fs_mkfs(%s, %u chunks of 1 MiB, %u bytes/inode) = %d\n",
			f->img, chunk_count, bytes_per_inode, rc);
		return rc;
	}
	rc = fs_open(f->img, 0, &f->vol);
	if (rc)
		fprintf(stderr, "model: fs_open(%s) = %d\n", f->img, rc);
	return rc;
}

static int fsb_reopen(struct backend *be)
{
	struct fsb *f = be->priv;
	int rc = fs_close(f->vol);

	f->vol = NULL;
	if (rc)
		return rc;
	return fs_open(f->img, 0, &f->vol);
}

static void fsb_end(struct backend *be, int keep)
{
	struct fsb *f = be->priv;

	if (f->vol)
		fs_close(f->vol);
	f->vol = NULL;
	if (keep)
		return;
	unlink(f->img);
	rmdir(f->dir);
}

static const char *fsb_where(struct backend *be)
{
	return ((struct fsb *)be->priv)->img;
}

static int fsb_root(struct backend *be, struct fs_ino *out)
{
	return fs_root(VOL(be), out);
}

static int fsb_statfs(struct backend *be, struct fs_statfs *out)
{
	return fs_statfs(VOL(be), out);
}

static void fsb_report(void *ctx, const char *msg)
{
	fprintf(stderr, "model: invariant: %s\n", msg);
}

static int fsb_check(struct backend *be)
{
	return fs_check_invariants(VOL(be), fsb_report, NULL);
}

static int fsb_sync(struct backend *be)
{
	return fs_sync(VOL(be));
}

static int fsb_getattr(struct backend *be, struct fs_ino ino, struct fs_attr *out)
{
	return fs_getattr(VOL(be), ino, out);
}

static int fsb_setattr(struct backend *be, const struct fs_cred *c, struct fs_ino ino,
		       const struct fs_setattr *sa, struct fs_attr *out)
{
	return fs_setattr(VOL(be), c, ino, sa, out);
}

static int fsb_access(struct backend *be, const struct fs_cred *c, struct fs_ino ino,
		      uint32_t want, uint32_t *granted)
{
	return fs_access(VOL(be), c, ino, want, granted);
}

static int fsb_lookup(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		      const char *name, struct fs_ino *out, struct fs_attr *attr)
{
	return fs_lookup(VOL(be), c, dir, name, out, attr);
}

static int fsb_create(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		      const char *name, uint32_t mode, enum fs_create_how how, uint64_t verf,
		      struct fs_ino *out, struct fs_attr *attr)
{
	return fs_create(VOL(be), c, dir, name, mode, how, verf, out, attr);
}

static int fsb_mkdir(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		     const char *name, uint32_t mode, struct fs_ino *out, struct fs_attr *attr)
{
	return fs_mkdir(VOL(be), c, dir, name, mode, out, attr);
}

static int fsb_symlink(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		       const char *name, const char *target, uint32_t mode, struct fs_ino *out,
		       struct fs_attr *attr)
{
	return fs_symlink(VOL(be), c, dir, name, target, mode, out, attr);
}

static int fsb_mknod(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		     const char *name, uint32_t mode, uint32_t major, uint32_t minor,
		     struct fs_ino *out, struct fs_attr *attr)
{
	return fs_mknod(VOL(be), c, dir, name, mode, major, minor, out, attr);
}

static int fsb_remove(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		      const char *name)
{
	return fs_remove(VOL(be), c, dir, name);
}

static int fsb_rmdir(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		     const char *name)
{
	return fs_rmdir(VOL(be), c, dir, name);
}

static int fsb_rename(struct backend *be, const struct fs_cred *c, struct fs_ino from_dir,
		      const char *from_name, struct fs_ino to_dir, const char *to_name)
{
	return fs_rename(VOL(be), c, from_dir, from_name, to_dir, to_name);
}

static int fsb_link(struct backend *be, const struct fs_cred *c, struct fs_ino ino,
		    struct fs_ino dir, const char *name)
{
	return fs_link(VOL(be), c, ino, dir, name);
}

static int fsb_readlink(struct backend *be, struct fs_ino ino, char *buf, size_t size,
			size_t *len)
{
	return fs_readlink(VOL(be), ino, buf, size, len);
}

static int fsb_readdir(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		       uint64_t cookie, uint64_t *verifier, int plus, fs_readdir_fn fn, void *ctx,
		       int *eof)
{
	return fs_readdir(VOL(be), c, dir, cookie, verifier, plus, fn, ctx, eof);
}

static int fsb_read(struct backend *be, const struct fs_cred *c, struct fs_ino ino,
		    uint64_t offset, size_t len, void *buf, size_t *nread, int *eof)
{
	return fs_read(VOL(be), c, ino, offset, len, buf, nread, eof);
}

static int fsb_write(struct backend *be, const struct fs_cred *c, struct fs_ino ino,
		     uint64_t offset, size_t len, const void *buf, enum fs_stable_how stable,
		     struct fs_attr *post)
{
	return fs_write(VOL(be), c, ino, offset, len, buf, stable, post);
}

static int fsb_commit(struct backend *be, struct fs_ino ino)
{
	return fs_commit(VOL(be), ino);
}

static struct fsb fsb_state;

static struct backend fs_backend = {
	.name = "fs",
	.has_statfs = 1,
	.priv = &fsb_state,
	.begin = fsb_begin,
	.reopen = fsb_reopen,
	.end = fsb_end,
	.where = fsb_where,
	.root = fsb_root,
	.statfs = fsb_statfs,
	.check = fsb_check,
	.sync = fsb_sync,
	.getattr = fsb_getattr,
	.setattr = fsb_setattr,
	.access = fsb_access,
	.lookup = fsb_lookup,
	.create = fsb_create,
	.mkdir = fsb_mkdir,
	.symlink = fsb_symlink,
	.mknod = fsb_mknod,
	.remove = fsb_remove,
	.rmdir = fsb_rmdir,
	.rename = fsb_rename,
	.link = fsb_link,
	.readlink = fsb_readlink,
	.readdir = fsb_readdir,
	.read = fsb_read,
	.write = fsb_write,
	.commit = fsb_commit,
};
#endif /* MODEL_POSIX_ONLY */

/* --- the posix oracle ----------------------------------------------------
 * A real directory tree driven with *at() syscalls, to check the model
 * against Linux. Each object is held by an O_PATH descriptor, so an fs_ino
 * is (st_ino, a generation we assign) and a deleted object is one whose
 * descriptor shows nlink 0 (-ESTALE). A struct fs_cred is played with
 * setfsuid/setfsgid/setgroups, which also drops root's file capabilities.
 * Where fs.h promises what Linux cannot say (-ESTALE, the order of type
 * checks, "." and ".." of the root, readdir cookies), this code answers as
 * the library must; what Linux does differently is skipped by the driver.
 */
struct px_node {
	uint64_t num;
	uint32_t gen;
	int fd;
};

struct pxb {
	char dir[PATH_MAX];
	struct px_node *nodes;
	int n;
	int cap;
	uint32_t next_gen;
	uint64_t root_num;
};

static struct pxb pxb_state;

static void px_proc(char *buf, size_t size, int fd)
{
	snprintf(buf, size, "/proc/self/fd/%d", fd);
}

/* Take ownership of fd; an object already known keeps its first fd. */
static int px_adopt(struct pxb *p, int fd, struct fs_ino *out)
{
	struct stat st;

	if (fstat(fd, &st))
		die("fstat");
	for (int i = 0; i < p->n; i++) {
		if (p->nodes[i].num == st.st_ino) {
			close(fd);
			out->num = p->nodes[i].num;
			out->gen = p->nodes[i].gen;
			return 0;
		}
	}
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 256;
		p->nodes = realloc(p->nodes, p->cap * sizeof(*p->nodes));
		if (!p->nodes)
			die("realloc");
	}
	p->nodes[p->n].num = st.st_ino;
	p->nodes[p->n].gen = ++p->next_gen;
	p->nodes[p->n].fd = fd;
	out->num = st.st_ino;
	out->gen = p->next_gen;
	p->n++;
	return 0;
}

static int px_get(struct pxb *p, struct fs_ino ino, int *fd, struct stat *st)
{
	for (int i = 0; i < p->n; i++) {
		if (p->nodes[i].num != ino.num)
			continue;
		if (p->nodes[i].gen != ino.gen)
			return -ESTALE;
		if (fstat(p->nodes[i].fd, st))
			die("fstat");
		if (st->st_nlink == 0)
			return -ESTALE;
		*fd = p->nodes[i].fd;
		return 0;
	}
	return -ESTALE;
}

static int px_dir(struct pxb *p, struct fs_ino ino, int *fd)
{
	struct stat st;
	int rc = px_get(p, ino, fd, &st);

	if (rc)
		return rc;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* Become the credential for one syscall, and back to root after it. */
static void px_as(const struct fs_cred *c)
{
	gid_t groups[FS_MAX_GROUPS];

	if (!c)
		return;
	for (uint32_t i = 0; i < c->ngroups && i < FS_MAX_GROUPS; i++)
		groups[i] = c->groups[i];
	if (setgroups(c->ngroups, groups))
		die("setgroups");
	setfsgid(c->gid);
	setfsuid(c->uid);
}

static void px_unas(const struct fs_cred *c)
{
	if (!c)
		return;
	setfsuid(0);
	setfsgid(0);
	if (setgroups(0, NULL))
		die("setgroups");
}

static void px_fill(const struct stat *st, uint32_t gen, struct fs_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->mode = st->st_mode;
	a->nlink = st->st_nlink;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->size = st->st_size;
	a->used = (uint64_t)st->st_blocks * 512;
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		a->rdev_major = major(st->st_rdev);
		a->rdev_minor = minor(st->st_rdev);
	}
	a->fileid = st->st_ino;
	a->gen = gen;
	a->atime = st->st_atim;
	a->mtime = st->st_mtim;
	a->ctime = st->st_ctim;
}

static int px_getattr(struct pxb *p, struct fs_ino ino, struct fs_attr *out)
{
	struct stat st;
	int fd;
	int rc = px_get(p, ino, &fd, &st);

	if (!rc)
		px_fill(&st, ino.gen, out);
	return rc;
}

static int pxb_getattr(struct backend *be, struct fs_ino ino, struct fs_attr *out)
{
	return px_getattr(be->priv, ino, out);
}

/* Open the name as root and report its identity and attributes. */
static int px_found(struct pxb *p, int dirfd, const char *name, struct fs_ino *out,
		    struct fs_attr *attr)
{
	int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	px_adopt(p, fd, out);
	return attr ? px_getattr(p, *out, attr) : 0;
}

/* Linux drops set-id bits (on mkdir, chown, a user's write or chmod) where
 * fs.h keeps exactly what was asked; put them back as root. */
static void px_fix_mode(int fd, uint32_t perm)
{
	char proc[64];
	struct stat st;

	if (fstat(fd, &st))
		die("fstat");
	if (S_ISLNK(st.st_mode) || (st.st_mode & 07777) == (perm & 07777))
		return;
	px_proc(proc, sizeof(proc), fd);
	if (chmod(proc, perm & 07777))
		die("chmod (mode fixup)");
}

static int pxb_begin(struct backend *be, uint32_t chunk_count, uint32_t bytes_per_inode)
{
	struct pxb *p = be->priv;
	struct fs_ino root;
	int fd;

	make_tempdir(p->dir, sizeof(p->dir), "model-posix");
	if (chmod(p->dir, 0755))
		die("chmod");
	fd = open(p->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		die(p->dir);
	px_adopt(p, fd, &root);
	p->root_num = root.num;
	return 0;
}

static int pxb_reopen(struct backend *be)
{
	return 0;
}

static void pxb_end(struct backend *be, int keep)
{
	struct pxb *p = be->priv;

	for (int i = 0; i < p->n; i++)
		close(p->nodes[i].fd);
	free(p->nodes);
	p->nodes = NULL;
	p->n = p->cap = 0;
	if (!keep)
		rmdir(p->dir);
}

static const char *pxb_where(struct backend *be)
{
	return ((struct pxb *)be->priv)->dir;
}

static int pxb_root(struct backend *be, struct fs_ino *out)
{
	struct pxb *p = be->priv;

	for (int i = 0; i < p->n; i++) {
		if (p->nodes[i].num == p->root_num) {
			out->num = p->root_num;
			out->gen = p->nodes[i].gen;
			return 0;
		}
	}
	return -ESTALE;
}

static int pxb_statfs(struct backend *be, struct fs_statfs *out)
{
	return -EOPNOTSUPP;
}

static int pxb_check(struct backend *be)
{
	return 0;
}

static int pxb_sync(struct backend *be)
{
	return 0;
}

static int pxb_setattr(struct backend *be, const struct fs_cred *c, struct fs_ino ino,
		       const struct fs_setattr *sa, struct fs_attr *out)
{
	struct pxb *p = be->priv;
	struct stat st;
	char proc[64];
	uint32_t perm;
	int fd, rc, err = 0;

	rc = px_get(p, ino, &fd, &st);
	if (rc)
		return rc;
	if ((sa->valid & FS_SET_SIZE) && S_ISDIR(st.st_mode))
		return -EISDIR;
	if ((sa->valid & FS_SET_SIZE) && !S_ISREG(st.st_mode))
		return -EINVAL;
	perm = (sa->valid & FS_SET_MODE) ? sa->mode : st.st_mode;
	px_proc(proc, sizeof(proc), fd);
	px_as(c);
	if ((sa->valid & FS_SET_SIZE) && truncate(proc, (off_t)sa->size))
		err = errno;
	if (!err && (sa->valid & (FS_SET_UID | FS_SET_GID)) &&
	    fchownat(fd, "", (sa->valid & FS_SET_UID) ? sa->uid : (uid_t)-1,
		     (sa->valid & FS_SET_GID) ? sa->gid : (gid_t)-1, AT_EMPTY_PATH))
		err = errno;
	if (!err && (sa->valid & FS_SET_MODE) && chmod(proc, sa->mode & 07777))
		err = errno;
	if (!err && (sa->valid & (FS_SET_ATIME | FS_SET_MTIME | FS_SET_ATIME_NOW |
				  FS_SET_MTIME_NOW))) {
		struct timespec ts[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};

		if (sa->valid & FS_SET_ATIME)
			ts[0] = sa->atime;
		if (sa->valid & FS_SET_ATIME_NOW)
			ts[0].tv_nsec = UTIME_NOW;
		if (sa->valid & FS_SET_MTIME)
			ts[1] = sa->mtime;
		if (sa->valid & FS_SET_MTIME_NOW)
			ts[1].tv_nsec = UTIME_NOW;
		if (utimensat(fd, "", ts, AT_EMPTY_PATH))
			err = errno;
	}
	px_unas(c);
	if (err)
		return -err;
	px_fix_mode(fd, perm);
	return out ? px_getattr(p, ino, out) : 0;
}

static int pxb_access(struct backend *be, const struct fs_cred *c, struct fs_ino ino,
		      uint32_t want, uint32_t *granted)
{
	struct pxb *p = be->priv;
	struct stat st;
	char proc[64];
	uint32_t g = 0;
	int fd;
	int rc = px_get(p, ino, &fd, &st);

	if (rc)
		return rc;
	px_proc(proc, sizeof(proc), fd);
	px_as(c);
	if (faccessat(AT_FDCWD, proc, R_OK, AT_EACCESS) == 0)
		g |= FS_ACCESS_READ;
	if (faccessat(AT_FDCWD, proc, W_OK, AT_EACCESS) == 0)
		g |= FS_ACCESS_MODIFY | FS_ACCESS_EXTEND;
	if (faccessat(AT_FDCWD, proc, X_OK, AT_EACCESS) == 0)
		g |= S_ISDIR(st.st_mode) ? FS_ACCESS_LOOKUP : FS_ACCESS_EXECUTE;
	px_unas(c);
	*granted = g & want;
	return 0;
}

static int pxb_lookup(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		      const char *name, struct fs_ino *out, struct fs_attr *attr)
{
	struct pxb *p = be->priv;
	int dfd, fd, err;
	int rc = px_dir(p, dir, &dfd);

	if (rc)
		return rc;
	/* fs.h: the root is its own parent. */
	if (strcmp(name, "..") == 0 && dir.num == p->root_num)
		name = ".";
	px_as(c);
	fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	err = errno;
	px_unas(c);
	if (fd < 0)
		return -err;
	px_adopt(p, fd, out);
	return attr ? px_getattr(p, *out, attr) : 0;
}

/* After creating dir/name as c: its identity, its exact mode, its attrs. */
static int px_created(struct pxb *p, int dfd, const char *name, uint32_t perm,
		      struct fs_ino *out, struct fs_attr *attr)
{
	struct stat st;
	int fd;
	int rc = px_found(p, dfd, name, out, NULL);

	if (rc)
		return rc;
	if (px_get(p, *out, &fd, &st))
		return -ESTALE;
	px_fix_mode(fd, perm);
	return attr ? px_getattr(p, *out, attr) : 0;
}

static int pxb_create(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		      const char *name, uint32_t mode, enum fs_create_how how, uint64_t verf,
		      struct fs_ino *out, struct fs_attr *attr)
{
	struct pxb *p = be->priv;
	int dfd, fd, err, created;
	int rc = px_dir(p, dir, &dfd);

	if (rc)
		return rc;
	if (how == FS_CREATE_EXCLUSIVE)
		return -EOPNOTSUPP; /* the driver skips these */
	px_as(c);
	fd = openat(dfd, name, O_CREAT | O_EXCL | O_RDONLY | O_NOFOLLOW | O_CLOEXEC,
		    mode & 07777);
	err = errno;
	created = fd >= 0;
	if (fd < 0 && err == EEXIST && how == FS_CREATE_UNCHECKED) {
		fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		err = errno;
	}
	px_unas(c);
	if (fd < 0)
		return -err;
	close(fd);
	if (!created)
		return px_found(p, dfd, name, out, attr);
	return px_created(p, dfd, name, mode, out, attr);
}

static int pxb_mkdir(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		     const char *name, uint32_t mode, struct fs_ino *out, struct fs_attr *attr)
{
	struct pxb *p = be->priv;
	int dfd, err = 0;
	int rc = px_dir(p, dir, &dfd);

	if (rc)
		return rc;
	px_as(c);
	if (mkdirat(dfd, name, mode & 07777))
		err = errno;
	px_unas(c);
	if (err)
		return -err;
	return px_created(p, dfd, name, mode, out, attr);
}

static int pxb_symlink(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		       const char *name, const char *target, uint32_t mode, struct fs_ino *out,
		       struct fs_attr *attr)
{
	struct pxb *p = be->priv;
	int dfd, err = 0;
	int rc = px_dir(p, dir, &dfd);

	if (rc)
		return rc;
	px_as(c);
	if (symlinkat(target, dfd, name))
		err = errno;
	px_unas(c);
	if (err)
		return -err;
	return px_found(p, dfd, name, out, attr);
}

static int pxb_mknod(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		     const char *name, uint32_t mode, uint32_t maj, uint32_t min,
		     struct fs_ino *out, struct fs_attr *attr)
{
	struct pxb *p = be->priv;
	int dfd, err = 0;
	int rc = px_dir(p, dir, &dfd);

	if (rc)
		return rc;
	px_as(c);
	if (mknodat(dfd, name, (mode & S_IFMT) | (mode & 07777), makedev(maj, min)))
		err = errno;
	px_unas(c);
	if (err)
		return -err;
	return px_created(p, dfd, name, mode, out, attr);
}

static int px_unlink(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		     const char *name, int flags)
{
	int dfd, err = 0;
	int rc = px_dir(be->priv, dir, &dfd);

	if (rc)
		return rc;
	px_as(c);
	if (unlinkat(dfd, name, flags))
		err = errno;
	px_unas(c);
	return -err;
}

static int pxb_remove(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		      const char *name)
{
	return px_unlink(be, c, dir, name, 0);
}

static int pxb_rmdir(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		     const char *name)
{
	return px_unlink(be, c, dir, name, AT_REMOVEDIR);
}

static int pxb_rename(struct backend *be, const struct fs_cred *c, struct fs_ino from_dir,
		      const char *from_name, struct fs_ino to_dir, const char *to_name)
{
	int fdfd, tdfd, err = 0;
	int rc = px_dir(be->priv, from_dir, &fdfd);

	if (!rc)
		rc = px_dir(be->priv, to_dir, &tdfd);
	if (rc)
		return rc;
	px_as(c);
	if (renameat(fdfd, from_name, tdfd, to_name))
		err = errno;
	px_unas(c);
	return -err;
}

static int pxb_link(struct backend *be, const struct fs_cred *c, struct fs_ino ino,
		    struct fs_ino dir, const char *name)
{
	struct pxb *p = be->priv;
	struct stat st;
	char proc[64];
	int fd, dfd, err = 0;
	int rc = px_get(p, ino, &fd, &st);

	if (!rc)
		rc = px_dir(p, dir, &dfd);
	if (rc)
		return rc;
	px_proc(proc, sizeof(proc), fd);
	px_as(c);
	/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH, which a user lacks. */
	if (c ? linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW)
	      : linkat(fd, "", dfd, name, AT_EMPTY_PATH))
		err = errno;
	px_unas(c);
	return -err;
}

static int pxb_readlink(struct backend *be, struct fs_ino ino, char *buf, size_t size,
			size_t *len)
{
	struct stat st;
	ssize_t n;
	int fd;
	int rc = px_get(be->priv, ino, &fd, &st);

	if (rc)
		return rc;
	if (!S_ISLNK(st.st_mode))
		return -EINVAL; /* Linux: -ENOENT for an empty path */
	n = readlinkat(fd, "", buf, size);
	if (n < 0)
		return -errno;
	*len = (size_t)n;
	return 0;
}

struct px_name {
	char *name;
	uint64_t fileid;
};

static int px_name_cmp_dots(const struct px_name *n)
{
	if (strcmp(n->name, ".") == 0)
		return 0;
	if (strcmp(n->name, "..") == 0)
		return 1;
	return 2;
}

/* Cookie i+1 follows entry i of the listing with "." and ".." moved to the
 * front: fine for a test, as nothing changes between its calls. */
static int pxb_readdir(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		       uint64_t cookie, uint64_t *verifier, int plus, fs_readdir_fn fn, void *ctx,
		       int *eof)
{
	struct pxb *p = be->priv;
	struct px_name *names = NULL;
	struct dirent *de;
	char proc[64];
	DIR *d;
	int dfd, lfd, err, n = 0, cap = 0;
	int rc = px_dir(p, dir, &dfd);

	if (rc)
		return rc;
	if (cookie != 0 && *verifier != 1)
		return -FS_EBADCOOKIE;
	px_proc(proc, sizeof(proc), dfd);
	px_as(c);
	lfd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	err = errno;
	px_unas(c);
	if (lfd < 0)
		return -err;
	d = fdopendir(lfd);
	if (!d)
		die("fdopendir");
	while ((de = readdir(d)) != NULL) {
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			names = realloc(names, cap * sizeof(*names));
			if (!names)
				die("realloc");
		}
		names[n].name = strdup(de->d_name);
		names[n].fileid = de->d_ino;
		if (!names[n].name)
			die("strdup");
		if (strcmp(de->d_name, "..") == 0 && dir.num == p->root_num)
			names[n].fileid = p->root_num;
		n++;
	}
	/* a stable partition: dots first, the rest in readdir order */
	for (int pass = 0, k = 0; pass < 3; pass++) {
		for (int i = k; i < n; i++) {
			if (px_name_cmp_dots(&names[i]) == pass) {
				struct px_name t = names[i];

				memmove(&names[k + 1], &names[k], (size_t)(i - k) * sizeof(*names));
				names[k++] = t;
			}
		}
	}
	*verifier = 1;
	*eof = 1;
	if (cookie > (uint64_t)n)
		rc = -FS_EBADCOOKIE;
	for (uint64_t i = cookie; !rc && i < (uint64_t)n; i++) {
		struct fs_dirent ent;

		memset(&ent, 0, sizeof(ent));
		ent.name = names[i].name;
		ent.name_len = strlen(names[i].name);
		ent.fileid = names[i].fileid;
		ent.cookie = i + 1;
		if (plus) {
			const char *nm = names[i].name;

			if (strcmp(nm, "..") == 0 && dir.num == p->root_num)
				nm = ".";
			rc = px_found(p, dirfd(d), nm, &ent.ino, &ent.attr);
			if (rc)
				break;
		}
		if (fn(ctx, &ent)) {
			*eof = 0;
			break;
		}
	}
	closedir(d);
	for (int i = 0; i < n; i++)
		free(names[i].name);
	free(names);
	return rc;
}

/* fs.h's type checks come first; a fifo must never be opened here. */
static int px_open_file(struct pxb *p, const struct fs_cred *c, struct fs_ino ino, int flags,
			int *fd, struct stat *st)
{
	char proc[64];
	int pfd, err;
	int rc = px_get(p, ino, &pfd, st);

	if (rc)
		return rc;
	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	px_proc(proc, sizeof(proc), pfd);
	px_as(c);
	*fd = open(proc, flags | O_CLOEXEC);
	err = errno;
	px_unas(c);
	return *fd < 0 ? -err : 0;
}

static int pxb_read(struct backend *be, const struct fs_cred *c, struct fs_ino ino,
		    uint64_t offset, size_t len, void *buf, size_t *nread, int *eof)
{
	struct stat st;
	size_t done = 0;
	int fd;
	int rc = px_open_file(be->priv, c, ino, O_RDONLY, &fd, &st);

	if (rc)
		return rc;
	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(offset + done));

		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	if (!rc && fstat(fd, &st))
		die("fstat");
	close(fd);
	*nread = done;
	*eof = offset + done >= (uint64_t)st.st_size;
	return rc;
}

static int pxb_write(struct backend *be, const struct fs_cred *c, struct fs_ino ino,
		     uint64_t offset, size_t len, const void *buf, enum fs_stable_how stable,
		     struct fs_attr *post)
{
	struct stat st;
	size_t done = 0;
	uint32_t mode;
	int fd;
	int rc = px_open_file(be->priv, c, ino, O_WRONLY, &fd, &st);

	if (rc)
		return rc;
	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done,
				   (off_t)(offset + done));

		if (n < 0) {
			rc = -errno;
			break;
		}
		done += (size_t)n;
	}
	close(fd);
	if (rc)
		return rc;
	mode = st.st_mode; /* from before the write, which may drop set-id bits */
	if (px_get(be->priv, ino, &fd, &st) == 0)
		px_fix_mode(fd, mode);
	return post ? px_getattr(be->priv, ino, post) : 0;
}

static int pxb_commit(struct backend *be, struct fs_ino ino)
{
	struct stat st;
	int fd;

	return px_get(be->priv, ino, &fd, &st);
}

static struct backend posix_backend = {
	.name = "posix",
	.has_statfs = 0,
	.priv = &pxb_state,
	.begin = pxb_begin,
	.reopen = pxb_reopen,
	.end = pxb_end,
	.where = pxb_where,
	.root = pxb_root,
	.statfs = pxb_statfs,
	.check = pxb_check,
	.sync = pxb_sync,
	.getattr = pxb_getattr,
	.setattr = pxb_setattr,
	.access = pxb_access,
	.lookup = pxb_lookup,
	.create = pxb_create,
	.mkdir = pxb_mkdir,
	.symlink = pxb_symlink,
	.mknod = pxb_mknod,
	.remove = pxb_remove,
	.rmdir = pxb_rmdir,
	.rename = pxb_rename,
	.link = pxb_link,
	.readlink = pxb_readlink,
	.readdir = pxb_readdir,
	.read = pxb_read,
	.write = pxb_write,
	.commit = pxb_commit,
};
