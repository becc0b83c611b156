/* The model-based randomized test of fs.h: random operation sequences run
 * against a system under test (the library, or a real directory tree) and
 * against tests/model_ref.c, and every result, attribute and byte must agree. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
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

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/common_interface_defs.h>
#endif

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
	int (*access)(struct backend *be, const struct fs_cred *c, struct fs_ino ino, uint32_t want,
		      uint32_t *granted);
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
	int (*readlink)(struct backend *be, struct fs_ino ino, char *buf, size_t size, size_t *len);
	int (*readdir)(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		       uint64_t cookie, uint64_t *verifier, int plus, fs_readdir_fn fn, void *ctx,
		       int *eof);
	int (*read)(struct backend *be, const struct fs_cred *c, struct fs_ino ino, uint64_t offset,
		    size_t len, void *buf, size_t *nread, int *eof);
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

/* The free blocks as the model counts them: the learned predictor's table
 * in chunk 0 (both copies of its units, saved at a clean close) is the
 * volume's own, like its bitmap, and counts as free here. */
static int fsb_statfs(struct backend *be, struct fs_statfs *out)
{
	struct fs_predictor_info pi;
	int ret = fs_statfs(VOL(be), out);

	if (ret == 0 && fs_predictor_info(VOL(be), &pi) == 0)
		out->free_blocks += 2ull * pi.units;
	return ret;
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

static int fsb_access(struct backend *be, const struct fs_cred *c, struct fs_ino ino, uint32_t want,
		      uint32_t *granted)
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

static int fsb_readlink(struct backend *be, struct fs_ino ino, char *buf, size_t size, size_t *len)
{
	return fs_readlink(VOL(be), ino, buf, size, len);
}

static int fsb_readdir(struct backend *be, const struct fs_cred *c, struct fs_ino dir,
		       uint64_t cookie, uint64_t *verifier, int plus, fs_readdir_fn fn, void *ctx,
		       int *eof)
{
	return fs_readdir(VOL(be), c, dir, cookie, verifier, plus, fn, ctx, eof);
}

static int fsb_read(struct backend *be, const struct fs_cred *c, struct fs_ino ino, uint64_t offset,
		    size_t len, void *buf, size_t *nread, int *eof)
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

/* Times with at least one given: utimensat with the other left or set to
 * now; a user who does not own the object is refused (EPERM), as knfsd's
 * notify_change refuses a SETATTR with a client's time. */
static int px_utimens(int fd, const struct fs_setattr *sa)
{
	struct timespec ts[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};

	if (sa->valid & FS_SET_ATIME)
		ts[0] = sa->atime;
	if (sa->valid & FS_SET_ATIME_NOW)
		ts[0].tv_nsec = UTIME_NOW;
	if (sa->valid & FS_SET_MTIME)
		ts[1] = sa->mtime;
	if (sa->valid & FS_SET_MTIME_NOW)
		ts[1].tv_nsec = UTIME_NOW;
	return utimensat(fd, "", ts, AT_EMPTY_PATH) ? errno : 0;
}

/* Times to the server's clock alone are touched with a NULL times
 * argument, whose check (owner, or write permission: EACCES) is the one
 * knfsd makes for a SETATTR without a client's time (NFSD_MAY_WRITE with
 * the owner override). utimensat with one time now and the other omitted
 * would refuse a writer who is not the owner (EPERM: it counts as a time
 * given), so when one time was asked for, the other is put back as root
 * from before; st holds it. */
static void px_untouch(int fd, const struct stat *st, const struct fs_setattr *sa)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};

	if ((sa->valid & FS_SET_ATIME_NOW) && (sa->valid & FS_SET_MTIME_NOW))
		return;
	if (sa->valid & FS_SET_ATIME_NOW)
		ts[0].tv_nsec = UTIME_OMIT;
	else
		ts[1].tv_nsec = UTIME_OMIT;
	if (utimensat(fd, "", ts, AT_EMPTY_PATH))
		die("utimensat (putting a time back)");
}

static int pxb_setattr(struct backend *be, const struct fs_cred *c, struct fs_ino ino,
		       const struct fs_setattr *sa, struct fs_attr *out)
{
	struct pxb *p = be->priv;
	struct stat st;
	char proc[64];
	uint32_t perm;
	int fd, rc, err = 0, touched = 0;

	rc = px_get(p, ino, &fd, &st);
	if (rc)
		return rc;
	if ((sa->valid & FS_SET_SIZE) && S_ISDIR(st.st_mode))
		return -EISDIR;
	if ((sa->valid & FS_SET_SIZE) && !S_ISREG(st.st_mode))
		return -EINVAL;
	perm = sa->mode;
	if ((sa->valid & FS_SET_MODE) && (sa->valid & (FS_SET_UID | FS_SET_GID)) &&
	    !S_ISDIR(st.st_mode)) {
		/* One NFS SETATTR with a new owner and a mode: knfsd takes the
		 * set-id bits from the mode before it changes anything
		 * (nfsd_sanitize_attrs); chown then chmod would put them back. */
		perm &= ~(uint32_t)S_ISUID;
		if (perm & S_IXGRP)
			perm &= ~(uint32_t)S_ISGID;
	}
	px_proc(proc, sizeof(proc), fd);
	px_as(c);
	if ((sa->valid & FS_SET_SIZE) && truncate(proc, (off_t)sa->size))
		err = errno;
	if (!err && (sa->valid & (FS_SET_UID | FS_SET_GID)) &&
	    fchownat(fd, "", (sa->valid & FS_SET_UID) ? sa->uid : (uid_t)-1,
		     (sa->valid & FS_SET_GID) ? sa->gid : (gid_t)-1, AT_EMPTY_PATH))
		err = errno;
	if (!err && (sa->valid & FS_SET_MODE) && chmod(proc, perm & 07777))
		err = errno;
	if (!err && (sa->valid & (FS_SET_ATIME | FS_SET_MTIME))) {
		err = px_utimens(fd, sa);
	} else if (!err && (sa->valid & (FS_SET_ATIME_NOW | FS_SET_MTIME_NOW))) {
		if (fstat(fd, &st))
			die("fstat");
		if (utimensat(fd, "", NULL, AT_EMPTY_PATH))
			err = errno;
		else
			touched = 1;
	}
	px_unas(c);
	if (touched)
		px_untouch(fd, &st, sa);
	if (err)
		return -err;
	return out ? px_getattr(p, ino, out) : 0;
}

static int pxb_access(struct backend *be, const struct fs_cred *c, struct fs_ino ino, uint32_t want,
		      uint32_t *granted)
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

/* After creating dir/name as c: its identity and its attrs. */
static int px_created(struct pxb *p, int dfd, const char *name, struct fs_ino *out,
		      struct fs_attr *attr)
{
	int rc = px_found(p, dfd, name, out, NULL);

	if (rc)
		return rc;
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
	fd = openat(dfd, name, O_CREAT | O_EXCL | O_RDONLY | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
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
	return px_created(p, dfd, name, out, attr);
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
	return px_created(p, dfd, name, out, attr);
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
	return px_created(p, dfd, name, out, attr);
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

static int pxb_readlink(struct backend *be, struct fs_ino ino, char *buf, size_t size, size_t *len)
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

static int pxb_read(struct backend *be, const struct fs_cred *c, struct fs_ino ino, uint64_t offset,
		    size_t len, void *buf, size_t *nread, int *eof)
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
	int fd;
	int rc = px_open_file(be->priv, c, ino, O_WRONLY, &fd, &st);

	if (rc)
		return rc;
	/* As the caller, as knfsd writes: a write by anyone but root takes
	 * the file's set-id bits (file_remove_privs). */
	px_as(c);
	while (done < len) {
		ssize_t n =
		    pwrite(fd, (const char *)buf + done, len - done, (off_t)(offset + done));

		if (n < 0) {
			rc = -errno;
			break;
		}
		done += (size_t)n;
	}
	px_unas(c);
	close(fd);
	if (rc)
		return rc;
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

/* ------------------------------------------------------------------------
 * The driver. One run at a time, so its state is one static struct.
 */

/* Operations the posix oracle skips because Linux answers differently from
 * the spec; the column is the reason printed in the totals. */
enum skip_reason {
	SK_NAME,     /* "." / ".." / empty / "a/b": fs.h says -EINVAL */
	SK_EXCL,     /* exclusive create: no verifier in POSIX */
	SK_UNCHECK,  /* unchecked create over a non-file, or as a user (Linux opens it) */
	SK_DIRMOVE,  /* a user moving a directory it cannot write: Linux says -EACCES */
	SK_LNKMODE,  /* symlink modes are always 0777 in Linux */
	SK_MKNOD,    /* devices and sockets are not made here; invalid types */
	SK_HARDLINK, /* protected_hardlinks: a user linking a file it does not own */
	SK_TARGET,   /* empty symlink target: Linux says -ENOENT */
	SK_COUNT
};

static const char *const skip_names[SK_COUNT] = {
	"dot/empty/slash names",
	"exclusive create",
	"unchecked create of non-file or as user",
	"user moving unwritable dir",
	"symlink mode",
	"mknod non-fifo",
	"user hard link",
	"empty symlink target",
};

static struct {
	struct backend *be;
	struct ref ref;
	uint64_t seed;
	uint64_t rng;
	long seq;
	long opno;
	int posix;	   /* the oracle is Linux: skip where it differs from fs.h */
	int perms_enabled; /* MODEL_PERMS */
	int perms;	   /* this sequence uses credentials */
	int verbose;
	char desc[1400]; /* the operation being checked, for messages */
	struct fs_statfs fresh;
	unsigned char *wbuf;
	unsigned char *rbuf;
	uint64_t write_id;
	long nseq, nops, nenospc, nreopen, nalt;
	int check_each; /* MODEL_CHECK_EACH=1: the invariants after every operation */
	long nskip[SK_COUNT];
} M;

/* The fixed sequence's number in messages: it runs before sequence 0. */
#define FIXED_SEQ (-1L)

static const struct fs_cred user_cred = {1000, 1000, 2, {1000, 2000}, 0};
static const struct fs_cred root_cred = {0, 0, 0, {0}, 0};

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd64(void)
{
	M.rng += 0x9e3779b97f4a7c15ull;
	return mix64(M.rng);
}

static uint32_t rnd(uint32_t n)
{
	return n ? (uint32_t)(rnd64() % n) : 0;
}

static int chance(int percent)
{
	return rnd(100) < (uint32_t)percent;
}

/* The bytes of write number id: distinct for every write of the run. */
static void fill_pattern(unsigned char *buf, size_t len, uint64_t id)
{
	uint64_t s = mix64(M.seed ^ (id * 0x2545f4914f6cdd1dull));

	if (id % 23 == 0) {
		memset(buf, 0, len); /* zeros must not be taken for a hole, or vice versa */
		return;
	}
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v;

		s += 0x9e3779b97f4a7c15ull;
		v = mix64(s);
		memcpy(buf + i, &v, len - i < 8 ? len - i : 8);
	}
}

static char *scratch(void)
{
	static char bufs[12][800];
	static unsigned next;

	return bufs[next++ % 12];
}

static const char *name_str(const char *name)
{
	char *b = scratch();
	size_t len = strlen(name), o = 0;

	b[o++] = '"';
	for (size_t i = 0; i < len && i < 32; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
			b[o++] = (char)ch;
		else
			o += (size_t)sprintf(b + o, "\\x%02x", ch);
	}
	b[o++] = '"';
	b[o] = '\0';
	if (len > 32)
		sprintf(b + o, "...(%zu bytes)", len);
	return b;
}

static const char *ino_str(struct fs_ino ino)
{
	char *b = scratch();
	char path[512];
	int obj = ref_find_ino(&M.ref, ino);

	if (obj < 0) {
		snprintf(b, 800, "bogus(%" PRIu64 ":%u)", ino.num, ino.gen);
	} else if (!M.ref.objs[obj].live) {
		snprintf(b, 800, "deleted#%d(%" PRIu64 ":%u)", obj, ino.num, ino.gen);
	} else {
		ref_path(&M.ref, obj, path, sizeof(path));
		snprintf(b, 800, "#%d %s(%" PRIu64 ":%u)", obj, path, ino.num, ino.gen);
	}
	return b;
}

static const char *obj_str(int obj)
{
	return ino_str(M.ref.objs[obj].ino);
}

static const char *cred_str(const struct fs_cred *c)
{
	if (!c)
		return "nocred";
	return c->uid == 0 ? "root" : "user";
}

static const char *errname(int rc)
{
#define E(e) {e, #e}
	static const struct {
		int err;
		const char *name;
	} names[] = {
		E(EPERM), E(ENOENT), E(EIO), E(EBADF), E(ENOMEM), E(EACCES), E(EBUSY),
		E(EEXIST), E(EXDEV), E(ENOTDIR), E(EISDIR), E(EINVAL), E(EFBIG), E(ENOSPC),
		E(EROFS), E(EMLINK), E(ERANGE), E(ENOSYS), E(ELOOP), E(ENOTEMPTY), E(EUCLEAN),
		E(EOPNOTSUPP), E(ENAMETOOLONG), E(ESTALE), {FS_EBADCOOKIE, "EBADCOOKIE"},
	};
#undef E
	char *b;

	if (rc == 0)
		return "0";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (-rc == names[i].err)
			return names[i].name;
	b = scratch();
	snprintf(b, 800, "%d", rc);
	return b;
}

/* How to run the failing sequence again, alone. */
static void print_replay(void)
{
	const char *oracle = M.posix ? " MODEL_ORACLE=posix" : "";
	const char *perms = M.perms_enabled ? "" : " MODEL_PERMS=0";

	if (M.seq == FIXED_SEQ)
		fprintf(stderr,
			"model: replay: MODEL_SEQUENCES=0 MODEL_VERBOSE=1%s (the fixed sequence "
			"comes first in a run without SEED)\n",
			oracle);
	else
		fprintf(stderr,
			"model: replay: SEED=%" PRIu64
			" MODEL_START=%ld MODEL_SEQUENCES=1 MODEL_VERBOSE=1%s%s\n",
			M.seed, M.seq, oracle, perms);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr,
		"model: MISMATCH: seed %" PRIu64 ", sequence %ld, operation %ld (oracle %s)\n",
		M.seed, M.seq, M.opno, M.be->name);
	fprintf(stderr, "model:   operation: %s\n", M.desc);
	fprintf(stderr, "model:   ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	print_replay();
	fprintf(stderr, "model: the volume is kept in %s\n", M.be->where(M.be));
	M.be->end(M.be, 1);
	exit(1);
}

/* A crash inside the library must still say which operation it was. */
static void report_crash(void)
{
	fprintf(stderr, "model: CRASH: seed %" PRIu64 ", sequence %ld, operation %ld (oracle %s)\n",
		M.seed, M.seq, M.opno, M.be ? M.be->name : "?");
	fprintf(stderr, "model:   operation: %s\n", M.desc);
	print_replay();
}

#ifndef __SANITIZE_ADDRESS__
static void on_fatal_signal(int sig)
{
	report_crash();
	signal(sig, SIG_DFL);
	raise(sig);
}
#endif

static void catch_crashes(void)
{
#ifdef __SANITIZE_ADDRESS__
	__sanitizer_set_death_callback(report_crash);
#else
	signal(SIGSEGV, on_fatal_signal);
	signal(SIGBUS, on_fatal_signal);
	signal(SIGABRT, on_fatal_signal);
	signal(SIGFPE, on_fatal_signal);
#endif
}

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		test_checks++;                                                                     \
		if (!(cond))                                                                       \
			fail(__VA_ARGS__);                                                         \
	} while (0)

static void describe(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void describe(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(M.desc, sizeof(M.desc), fmt, ap);
	va_end(ap);
	M.opno++;
	M.nops++;
	if (M.verbose)
		printf("model: %ld.%ld %s\n", M.seq, M.opno, M.desc);
}

/* Set the context of the checks that follow without counting an op. */
static void context(const char *what)
{
	snprintf(M.desc, sizeof(M.desc), "%s", what);
}

static void skip(enum skip_reason why)
{
	M.nskip[why]++;
	if (M.verbose)
		printf("model:   skipped on Linux: %s\n", skip_names[why]);
}

enum outcome { OUT_EXP, OUT_ALT, OUT_ENOSPC };

/* The call's return code against the model's; -ENOSPC is accepted where
 * the model expects success and the call may allocate. */
static enum outcome expect(const char *call, struct ref_res res, int got, int enospc_ok)
{
	test_checks++;
	if (M.verbose)
		printf("model:   -> %s\n", errname(got));
	if (got == res.rc)
		return OUT_EXP;
	if ((res.alt != REF_NO_ALT && got == res.alt) ||
	    (res.alt2 != REF_NO_ALT && got == res.alt2)) {
		M.nalt++;
		return OUT_ALT;
	}
	if (enospc_ok && res.rc == 0 && got == -ENOSPC) {
		M.nenospc++;
		return OUT_ENOSPC;
	}
	if (res.alt2 != REF_NO_ALT)
		fail("%s returned %s, expected %s, %s or %s", call, errname(got), errname(res.rc),
		     errname(res.alt), errname(res.alt2));
	if (res.alt != REF_NO_ALT)
		fail("%s returned %s, expected %s or %s", call, errname(got), errname(res.rc),
		     errname(res.alt));
	fail("%s returned %s, expected %s", call, errname(got), errname(res.rc));
}

static struct fs_ino ino_of(int obj)
{
	return M.ref.objs[obj].ino;
}

static int live_obj(struct fs_ino ino)
{
	int i = ref_find_ino(&M.ref, ino);

	return i >= 0 && M.ref.objs[i].live ? i : -1;
}

static void cmp_time(const char *what, const char *field, int obj, struct timespec got,
		     struct timespec exp)
{
	EXPECT(got.tv_sec == exp.tv_sec && got.tv_nsec == exp.tv_nsec,
	       "%s of %s: %s %lld.%09ld, expected %lld.%09ld (set explicitly)", what, obj_str(obj),
	       field, (long long)got.tv_sec, got.tv_nsec, (long long)exp.tv_sec, exp.tv_nsec);
}

static void cmp_attr(const char *what, int obj, const struct fs_attr *got)
{
	const struct ref_obj *o = &M.ref.objs[obj];
	struct fs_attr exp;

	ref_attr(&M.ref, obj, &exp);
	EXPECT(got->mode == exp.mode, "%s of %s: mode 0%o, expected 0%o", what, obj_str(obj),
	       got->mode, exp.mode);
	EXPECT(got->nlink == exp.nlink, "%s of %s: nlink %u, expected %u", what, obj_str(obj),
	       got->nlink, exp.nlink);
	EXPECT(got->uid == exp.uid && got->gid == exp.gid,
	       "%s of %s: uid:gid %u:%u, expected %u:%u", what, obj_str(obj), got->uid, got->gid,
	       exp.uid, exp.gid);
	if (o->type != S_IFDIR)
		EXPECT(got->size == exp.size, "%s of %s: size %" PRIu64 ", expected %" PRIu64, what,
		       obj_str(obj), got->size, exp.size);
	EXPECT(got->rdev_major == exp.rdev_major && got->rdev_minor == exp.rdev_minor,
	       "%s of %s: rdev %u:%u, expected %u:%u", what, obj_str(obj), got->rdev_major,
	       got->rdev_minor, exp.rdev_major, exp.rdev_minor);
	EXPECT(got->fileid == exp.fileid && got->gen == exp.gen,
	       "%s of %s: fileid:gen %" PRIu64 ":%u, expected the ino's %" PRIu64 ":%u", what,
	       obj_str(obj), got->fileid, got->gen, exp.fileid, exp.gen);
	if (o->atime_known)
		cmp_time(what, "atime", obj, got->atime, exp.atime);
	if (o->mtime_known)
		cmp_time(what, "mtime", obj, got->mtime, exp.mtime);
}

static void same_ino(const char *what, struct fs_ino got, int obj)
{
	struct fs_ino exp = ino_of(obj);

	EXPECT(got.num == exp.num && got.gen == exp.gen, "%s gave ino %" PRIu64 ":%u, expected %s",
	       what, got.num, got.gen, obj_str(obj));
}

/* A new object's identity must be new: no live object has its number and
 * no deleted one had exactly this identity (a stale handle would reach it). */
static void adopt(int obj, struct fs_ino ino)
{
	for (int i = 0; i < M.ref.nobjs; i++) {
		const struct ref_obj *o = &M.ref.objs[i];

		if (i == obj || o->ino.num != ino.num)
			continue;
		EXPECT(!o->live, "new object got fileid %" PRIu64 ", which live %s has", ino.num,
		       obj_str(i));
		EXPECT(o->ino.gen != ino.gen,
		       "new object got ino %" PRIu64 ":%u, the identity of deleted #%d", ino.num,
		       ino.gen, i);
	}
	M.ref.objs[obj].ino = ino;
}

static void check_obj(int obj)
{
	struct fs_attr a;
	int rc = M.be->getattr(M.be, ino_of(obj), &a);

	EXPECT(rc == 0, "getattr of %s returned %s", obj_str(obj), errname(rc));
	cmp_attr("getattr", obj, &a);
}

static void check_data(int obj)
{
	uint64_t off = 0;

	/* reads may update atime */
	M.ref.objs[obj].atime_known = 0;
	for (;;) {
		const struct ref_obj *o = &M.ref.objs[obj];
		size_t len = (64 * KiB) << rnd(5), nread = 0;
		uint64_t want = off >= o->size ? 0 : o->size - off;
		int eof = -1;
		int rc = M.be->read(M.be, NULL, o->ino, off, len, M.rbuf, &nread, &eof);

		if (want > len)
			want = len;
		EXPECT(rc == 0, "read of %s at %" PRIu64 " returned %s", obj_str(obj), off,
		       errname(rc));
		EXPECT(nread == want,
		       "read of %s at %" PRIu64 " len %zu gave %zu bytes, expected %" PRIu64,
		       obj_str(obj), off, len, nread, want);
		EXPECT(eof == (off + nread >= o->size),
		       "read of %s at %" PRIu64 " (%zu bytes, size %" PRIu64 ") gave eof %d",
		       obj_str(obj), off, nread, o->size, eof);
		if (nread && memcmp(M.rbuf, o->data + off, nread) != 0) {
			size_t i = 0;

			while (M.rbuf[i] == o->data[off + i])
				i++;
			fail("data of %s differs at byte %" PRIu64 " (size %" PRIu64
			     "): 0x%02x, expected 0x%02x",
			     obj_str(obj), off + i, o->size, M.rbuf[i], o->data[off + i]);
		}
		off += nread;
		if (eof || nread == 0)
			break;
	}
}

static void check_link(int obj)
{
	char buf[FS_SYMLINK_MAX + 2];
	const char *target = M.ref.objs[obj].target;
	size_t len = 0;
	int rc = M.be->readlink(M.be, ino_of(obj), buf, sizeof(buf) - 1, &len);

	M.ref.objs[obj].atime_known = 0; /* readlink may update atime */
	EXPECT(rc == 0, "readlink of %s returned %s", obj_str(obj), errname(rc));
	EXPECT(len < sizeof(buf), "readlink of %s claims %zu bytes", obj_str(obj), len);
	buf[len] = '\0';
	EXPECT(len == strlen(target) && memcmp(buf, target, len) == 0,
	       "readlink of %s gave %zu bytes %s, expected %zu bytes %s", obj_str(obj), len,
	       name_str(buf), strlen(target), name_str(target));
}

/* A deleted object's ino must be refused by everything that takes one. */
static void check_stale(int obj)
{
	struct fs_ino ino = ino_of(obj);
	struct fs_attr a;
	size_t nread;
	int eof;
	int rc = M.be->getattr(M.be, ino, &a);

	EXPECT(rc == -ESTALE, "getattr of deleted %s returned %s, expected ESTALE", obj_str(obj),
	       errname(rc));
	if (M.ref.objs[obj].type != S_IFREG)
		return;
	rc = M.be->read(M.be, NULL, ino, 0, 16, M.rbuf, &nread, &eof);
	EXPECT(rc == -ESTALE, "read of deleted %s returned %s, expected ESTALE", obj_str(obj),
	       errname(rc));
	if (chance(50)) {
		rc = M.be->write(M.be, NULL, ino, 0, 1, "x", FS_UNSTABLE, NULL);
		EXPECT(rc == -ESTALE, "write to deleted %s returned %s, expected ESTALE",
		       obj_str(obj), errname(rc));
	}
}

static void check_statfs(void)
{
	struct fs_statfs st;
	int rc;

	if (!M.be->has_statfs)
		return;
	rc = M.be->statfs(M.be, &st);
	EXPECT(rc == 0, "statfs returned %s", errname(rc));
	EXPECT(st.total_inodes >= st.free_inodes &&
		   st.total_inodes - st.free_inodes == (uint64_t)M.ref.nlive,
	       "statfs: %" PRIu64 " of %" PRIu64 " inodes in use, the model has %d objects",
	       st.total_inodes - st.free_inodes, st.total_inodes, M.ref.nlive);
	EXPECT(st.free_blocks <= st.total_blocks, "statfs: %" PRIu64 " free of %" PRIu64 " blocks",
	       st.free_blocks, st.total_blocks);
}

static void check_invariants(const char *when)
{
	int rc = M.be->check(M.be);

	EXPECT(rc == 0, "fs_check_invariants %s found %d problems", when, rc);
}

/* --- directory listings ------------------------------------------------ */

struct lent {
	char *name;
	uint64_t fileid;
	uint64_t cookie;
	struct fs_ino ino;
	struct fs_attr attr;
};

struct listing {
	struct lent *e;
	int n;
	int cap;
	int limit;   /* entries to take in one call; 0: all */
	int taken;   /* in this call */
	int refused; /* the callback returned nonzero in this call */
};

static int list_cb(void *ctx, const struct fs_dirent *ent)
{
	struct listing *l = ctx;
	struct lent *e;

	if (l->limit && l->taken >= l->limit) {
		l->refused = 1;
		return 1;
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 32;
		l->e = realloc(l->e, l->cap * sizeof(*l->e));
		if (!l->e)
			die("realloc");
	}
	e = &l->e[l->n++];
	e->name = xmalloc(ent->name_len + 1);
	memcpy(e->name, ent->name, ent->name_len);
	e->name[ent->name_len] = '\0';
	e->fileid = ent->fileid;
	e->cookie = ent->cookie;
	e->ino = ent->ino;
	e->attr = ent->attr;
	l->taken++;
	return 0;
}

static void list_free(struct listing *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->e[i].name);
	free(l->e);
	memset(l, 0, sizeof(*l));
}

/* List dir from cookie, page entries per call (0: all in one call), until
 * eof. Returns the first call's result; later calls must succeed. */
static int list_dir(struct fs_ino dir, uint64_t cookie, uint64_t *verf, int plus, int page,
		    struct listing *l)
{
	int calls = 0;

	memset(l, 0, sizeof(*l));
	for (;;) {
		int eof = -1;
		int before = l->n;
		int rc;

		l->limit = page;
		l->taken = 0;
		l->refused = 0;
		rc = M.be->readdir(M.be, NULL, dir, cookie, verf, plus, list_cb, l, &eof);
		if (rc && calls == 0)
			return rc;
		calls++;
		EXPECT(rc == 0, "readdir of %s resumed at cookie %" PRIu64 " returned %s",
		       ino_str(dir), cookie, errname(rc));
		EXPECT(eof == 0 || eof == 1, "readdir of %s left eof at %d", ino_str(dir), eof);
		EXPECT(!(eof && l->refused),
		       "readdir of %s reported eof although the callback stopped it (the refused "
		       "entry is lost)",
		       ino_str(dir));
		if (eof)
			return 0;
		EXPECT(l->n > before, "readdir of %s from cookie %" PRIu64 " made no progress",
		       ino_str(dir), cookie);
		EXPECT(calls < 100000, "readdir of %s does not end", ino_str(dir));
		cookie = l->e[l->n - 1].cookie;
	}
}

/* The listing against the model: "." and ".." first, then exactly the
 * model's names with their fileids; with plus, inos and attrs too. */
static void cmp_listing(int dir, const struct listing *l, int plus)
{
	const struct ref_obj *d = &M.ref.objs[dir];
	int parent = d->parent;

	EXPECT(l->n >= 2 && strcmp(l->e[0].name, ".") == 0 && strcmp(l->e[1].name, "..") == 0,
	       "readdir of %s starts with %s, %s; expected \".\", \"..\"", obj_str(dir),
	       name_str(l->e[0].name), name_str(l->e[1].name));
	for (int i = 0; i < l->n; i++) {
		const struct lent *e = &l->e[i];
		int obj = i == 0 ? dir : i == 1 ? parent : ref_dir_find(&M.ref, dir, e->name);

		EXPECT(obj >= 0, "readdir of %s lists %s, which the model does not have",
		       obj_str(dir), name_str(e->name));
		for (int j = 0; j < i; j++)
			EXPECT(strcmp(l->e[j].name, e->name) != 0, "readdir of %s lists %s twice",
			       obj_str(dir), name_str(e->name));
		EXPECT(e->fileid == ino_of(obj).num,
		       "readdir of %s: %s has fileid %" PRIu64 ", expected %s", obj_str(dir),
		       name_str(e->name), e->fileid, obj_str(obj));
		if (plus) {
			struct fs_attr a;
			int rc;

			same_ino("readdirplus entry", e->ino, obj);
			cmp_attr("readdirplus attr", obj, &e->attr);
			rc = M.be->getattr(M.be, e->ino, &a);
			EXPECT(rc == 0, "getattr of %s returned %s", obj_str(obj), errname(rc));
			EXPECT(a.mode == e->attr.mode && a.nlink == e->attr.nlink &&
				   a.uid == e->attr.uid && a.gid == e->attr.gid &&
				   a.size == e->attr.size && a.used == e->attr.used &&
				   a.rdev_major == e->attr.rdev_major &&
				   a.rdev_minor == e->attr.rdev_minor &&
				   a.fileid == e->attr.fileid && a.gen == e->attr.gen &&
				   a.mtime.tv_sec == e->attr.mtime.tv_sec &&
				   a.mtime.tv_nsec == e->attr.mtime.tv_nsec,
			       "readdirplus attr of %s in %s differs from getattr's (size %" PRIu64
			       "/%" PRIu64 ", used %" PRIu64 "/%" PRIu64 ")",
			       name_str(e->name), obj_str(dir), e->attr.size, a.size, e->attr.used,
			       a.used);
		}
	}
	/* every listed name is the model's and none twice: so count the rest */
	for (int i = 0; i < d->nents; i++) {
		int listed = 0;

		for (int j = 2; j < l->n && !listed; j++)
			listed = strcmp(l->e[j].name, d->ents[i].name) == 0;
		EXPECT(listed, "readdir of %s does not list %s (%s)", obj_str(dir),
		       name_str(d->ents[i].name), obj_str(d->ents[i].obj));
	}
}

/* Resuming from any entry's cookie gives exactly the entries after it. */
static void check_resume(struct fs_ino dir, const struct listing *full, uint64_t verf, int plus)
{
	struct listing rest;
	int k = (int)rnd((uint32_t)full->n);
	int rc;

	rc = list_dir(dir, full->e[k].cookie, &verf, plus, chance(50) ? 0 : 1 + (int)rnd(4), &rest);
	EXPECT(rc == 0, "readdir of %s resumed after %s returned %s", ino_str(dir),
	       name_str(full->e[k].name), errname(rc));
	EXPECT(rest.n == full->n - k - 1,
	       "readdir of %s resumed after entry %d (%s) gave %d entries, expected %d",
	       ino_str(dir), k, name_str(full->e[k].name), rest.n, full->n - k - 1);
	for (int i = 0; i < rest.n; i++) {
		const struct lent *a = &rest.e[i], *b = &full->e[k + 1 + i];

		EXPECT(strcmp(a->name, b->name) == 0 && a->fileid == b->fileid,
		       "readdir of %s resumed after %s: entry %d is %s, expected %s", ino_str(dir),
		       name_str(full->e[k].name), i, name_str(a->name), name_str(b->name));
	}
	list_free(&rest);
}

static void check_dir(int dir)
{
	struct listing l;
	uint64_t verf = 0;
	int plus = chance(50);
	int rc = list_dir(ino_of(dir), 0, &verf, plus, chance(60) ? 0 : 1 + (int)rnd(7), &l);

	M.ref.objs[dir].atime_known = 0;
	EXPECT(rc == 0, "readdir of %s returned %s", obj_str(dir), errname(rc));
	cmp_listing(dir, &l, plus);
	if (chance(30))
		check_resume(ino_of(dir), &l, verf, plus);
	list_free(&l);
}

static void walk(int dir, char *seen)
{
	const struct ref_obj *d = &M.ref.objs[dir];

	check_obj(dir);
	check_dir(dir);
	for (int i = 0; i < d->nents; i++) {
		const char *name = d->ents[i].name;
		int child = d->ents[i].obj;
		struct fs_ino got;
		struct fs_attr a;
		int rc = M.be->lookup(M.be, NULL, ino_of(dir), name, &got, &a);

		EXPECT(rc == 0, "lookup of %s in %s returned %s", name_str(name), obj_str(dir),
		       errname(rc));
		same_ino("lookup", got, child);
		cmp_attr("lookup attr", child, &a);
		if (seen[child])
			continue;
		seen[child] = 1;
		check_obj(child);
		switch (M.ref.objs[child].type) {
		case S_IFREG:
			check_data(child);
			break;
		case S_IFLNK:
			check_link(child);
			break;
		case S_IFDIR:
			walk(child, seen);
			break;
		}
	}
}

/* Walk both trees from the root and compare everything. */
static void compare_tree(const char *when)
{
	char *seen = calloc((size_t)M.ref.nobjs + 1, 1);
	char what[128];

	if (!seen)
		die("calloc");
	snprintf(what, sizeof(what), "full comparison %s", when);
	context(what);
	seen[M.ref.root] = 1;
	walk(M.ref.root, seen);
	for (int i = 0; i < M.ref.nobjs; i++)
		EXPECT(!M.ref.objs[i].live || seen[i], "live %s was not reached", obj_str(i));
	free(seen);
	check_statfs();
}

/* --- one checked operation each ---------------------------------------- */

static int linux_bad_name(const char *name, int dots_ok)
{
	if (!*name || strchr(name, '/'))
		return 1;
	return !dots_ok && (strcmp(name, ".") == 0 || strcmp(name, "..") == 0);
}

static int dir_has_bits(struct fs_ino dir, uint32_t bits)
{
	int d = live_obj(dir);

	return d >= 0 && M.ref.objs[d].type == S_IFDIR && (M.ref.objs[d].perm & bits);
}

static int is_user(const struct fs_cred *c)
{
	return c && c->uid != 0;
}

static void x_lookup(const struct fs_cred *c, struct fs_ino dir, const char *name)
{
	struct fs_ino out = {0, 0};
	struct fs_attr attr;
	int with_attr = chance(75);
	struct ref_res res;
	int rc;

	describe("lookup(%s, %s, %s)", cred_str(c), ino_str(dir), name_str(name));
	if (M.posix && linux_bad_name(name, 1))
		return skip(SK_NAME);
	res = ref_lookup(&M.ref, c, dir, name);
	rc = M.be->lookup(M.be, c, dir, name, &out, with_attr ? &attr : NULL);
	expect("lookup", res, rc, 0);
	if (rc)
		return;
	same_ino("lookup", out, res.obj);
	if (with_attr)
		cmp_attr("lookup attr", res.obj, &attr);
}

/* The common end of create, mkdir, symlink and mknod that succeeded. */
static void created(const char *call, struct ref_res res, int before, struct fs_ino out,
		    const struct fs_attr *attr, struct fs_ino dir)
{
	int d = live_obj(dir);

	if (res.obj >= before)
		adopt(res.obj, out);
	else
		same_ino(call, out, res.obj);
	if (attr)
		cmp_attr(call, res.obj, attr);
	check_obj(res.obj);
	check_obj(d);
}

static void x_create(const struct fs_cred *c, struct fs_ino dir, const char *name, uint32_t mode,
		     enum fs_create_how how, uint64_t verf)
{
	static const char *const hows[] = {"UNCHECKED", "GUARDED", "EXCLUSIVE"};
	struct fs_ino out = {0, 0};
	struct fs_attr attr;
	int with_attr = chance(75);
	int before = M.ref.nobjs;
	struct ref_res res;
	int rc, d;

	describe("create(%s, %s, %s, 0%o, %s, verf %" PRIx64 ")", cred_str(c), ino_str(dir),
		 name_str(name), mode, hows[how], verf);
	if (M.posix) {
		int existing = -1;

		d = live_obj(dir);
		if (d >= 0 && M.ref.objs[d].type == S_IFDIR && !linux_bad_name(name, 0))
			existing = ref_dir_find(&M.ref, d, name);
		if (linux_bad_name(name, 0))
			return skip(SK_NAME);
		if (how == FS_CREATE_EXCLUSIVE)
			return skip(SK_EXCL);
		if (how == FS_CREATE_UNCHECKED && existing >= 0 &&
		    (c || M.ref.objs[existing].type != S_IFREG))
			return skip(SK_UNCHECK);
	}
	res = ref_create(&M.ref, c, dir, name, mode, how, verf, 0);
	rc = M.be->create(M.be, c, dir, name, mode, how, verf, &out, with_attr ? &attr : NULL);
	switch (expect("create", res, rc, 1)) {
	case OUT_ENOSPC:
		check_dir(live_obj(dir));
		return;
	case OUT_ALT:
		if (rc == 0)
			same_ino("create of an existing file", out, res.obj);
		return;
	case OUT_EXP:
		break;
	}
	if (rc)
		return;
	res = ref_create(&M.ref, c, dir, name, mode, how, verf, 1);
	created("create", res, before, out, with_attr ? &attr : NULL, dir);
}

static void x_mkdir(const struct fs_cred *c, struct fs_ino dir, const char *name, uint32_t mode)
{
	struct fs_ino out = {0, 0};
	struct fs_attr attr;
	int with_attr = chance(75);
	int before = M.ref.nobjs;
	struct ref_res res;
	int rc;

	describe("mkdir(%s, %s, %s, 0%o)", cred_str(c), ino_str(dir), name_str(name), mode);
	if (M.posix && linux_bad_name(name, 0))
		return skip(SK_NAME);
	res = ref_mkdir(&M.ref, c, dir, name, mode, 0);
	rc = M.be->mkdir(M.be, c, dir, name, mode, &out, with_attr ? &attr : NULL);
	if (expect("mkdir", res, rc, 1) == OUT_ENOSPC)
		check_dir(live_obj(dir));
	if (rc || res.rc)
		return;
	res = ref_mkdir(&M.ref, c, dir, name, mode, 1);
	created("mkdir", res, before, out, with_attr ? &attr : NULL, dir);
	check_dir(res.obj);
}

static void x_symlink(const struct fs_cred *c, struct fs_ino dir, const char *name,
		      const char *target, uint32_t mode)
{
	struct fs_ino out = {0, 0};
	struct fs_attr attr;
	int with_attr = chance(75);
	int before = M.ref.nobjs;
	struct ref_res res;
	int rc;

	describe("symlink(%s, %s, %s, target %s, 0%o)", cred_str(c), ino_str(dir), name_str(name),
		 name_str(target), mode);
	if (M.posix && linux_bad_name(name, 0))
		return skip(SK_NAME);
	if (M.posix && !*target)
		return skip(SK_TARGET);
	if (M.posix && mode != 0777)
		return skip(SK_LNKMODE);
	res = ref_symlink(&M.ref, c, dir, name, target, mode, 0);
	rc = M.be->symlink(M.be, c, dir, name, target, mode, &out, with_attr ? &attr : NULL);
	if (expect("symlink", res, rc, 1) == OUT_ENOSPC)
		check_dir(live_obj(dir));
	if (rc || res.rc)
		return;
	res = ref_symlink(&M.ref, c, dir, name, target, mode, 1);
	created("symlink", res, before, out, with_attr ? &attr : NULL, dir);
	check_link(res.obj);
}

static void x_mknod(const struct fs_cred *c, struct fs_ino dir, const char *name, uint32_t mode,
		    uint32_t maj, uint32_t min)
{
	struct fs_ino out = {0, 0};
	struct fs_attr attr;
	int with_attr = chance(75);
	int before = M.ref.nobjs;
	struct ref_res res;
	int rc;

	describe("mknod(%s, %s, %s, 0%o, %u:%u)", cred_str(c), ino_str(dir), name_str(name), mode,
		 maj, min);
	if (M.posix && linux_bad_name(name, 0))
		return skip(SK_NAME);
	if (M.posix && (mode & S_IFMT) != S_IFIFO)
		return skip(SK_MKNOD);
	res = ref_mknod(&M.ref, c, dir, name, mode, maj, min, 0);
	rc = M.be->mknod(M.be, c, dir, name, mode, maj, min, &out, with_attr ? &attr : NULL);
	if (expect("mknod", res, rc, 1) == OUT_ENOSPC)
		check_dir(live_obj(dir));
	if (rc || res.rc)
		return;
	res = ref_mknod(&M.ref, c, dir, name, mode, maj, min, 1);
	created("mknod", res, before, out, with_attr ? &attr : NULL, dir);
}

/* After a name went away: the directory, and the object (gone or not). */
static void unlinked(int dir, int victim)
{
	check_obj(dir);
	if (victim < 0)
		return;
	if (M.ref.objs[victim].live)
		check_obj(victim);
	else
		check_stale(victim);
}

static void x_remove(const struct fs_cred *c, struct fs_ino dir, const char *name)
{
	struct ref_res res;
	enum outcome out;
	int relocates, rc;

	describe("remove(%s, %s, %s)", cred_str(c), ino_str(dir), name_str(name));
	if (M.posix && linux_bad_name(name, 0))
		return skip(SK_NAME);
	res = ref_remove(&M.ref, c, dir, name, 0);
	/* Dropping one of several links may move an inode that was embedded
	 * in that entry to a slot of its own, which can run out. */
	relocates = res.obj >= 0 && M.ref.objs[res.obj].nlink > 1;
	rc = M.be->remove(M.be, c, dir, name);
	out = expect("remove", res, rc, relocates);
	if (out == OUT_ENOSPC) {
		check_dir(live_obj(dir));
		check_obj(res.obj);
	}
	if (out != OUT_EXP || rc)
		return;
	res = ref_remove(&M.ref, c, dir, name, 1);
	unlinked(live_obj(dir), res.obj);
}

static void x_rmdir(const struct fs_cred *c, struct fs_ino dir, const char *name)
{
	struct ref_res res;
	int rc;

	describe("rmdir(%s, %s, %s)", cred_str(c), ino_str(dir), name_str(name));
	if (M.posix && linux_bad_name(name, 0))
		return skip(SK_NAME);
	res = ref_rmdir(&M.ref, c, dir, name, 0);
	rc = M.be->rmdir(M.be, c, dir, name);
	if (expect("rmdir", res, rc, 0) != OUT_EXP || rc)
		return;
	res = ref_rmdir(&M.ref, c, dir, name, 1);
	unlinked(live_obj(dir), res.obj);
}

static void x_rename(const struct fs_cred *c, struct fs_ino from_dir, const char *from_name,
		     struct fs_ino to_dir, const char *to_name)
{
	struct ref_res res;
	int fd, td, src = -1, tgt = -1;
	int rc;

	describe("rename(%s, %s, %s -> %s, %s)", cred_str(c), ino_str(from_dir),
		 name_str(from_name), ino_str(to_dir), name_str(to_name));
	fd = live_obj(from_dir);
	td = live_obj(to_dir);
	if (fd >= 0 && M.ref.objs[fd].type == S_IFDIR)
		src = ref_dir_find(&M.ref, fd, from_name);
	if (td >= 0 && M.ref.objs[td].type == S_IFDIR)
		tgt = ref_dir_find(&M.ref, td, to_name);
	if (M.posix) {
		if (linux_bad_name(from_name, 0) || linux_bad_name(to_name, 0))
			return skip(SK_NAME);
		if (is_user(c) && src >= 0 && M.ref.objs[src].type == S_IFDIR && fd != td &&
		    !ref_may(&M.ref, c, src, 2))
			return skip(SK_DIRMOVE);
	}
	res = ref_rename(&M.ref, c, from_dir, from_name, to_dir, to_name, 0);
	rc = M.be->rename(M.be, c, from_dir, from_name, to_dir, to_name);
	switch (expect("rename", res, rc, 1)) {
	case OUT_ENOSPC:
		check_dir(fd);
		if (td != fd)
			check_dir(td);
		return;
	case OUT_ALT:
		return;
	case OUT_EXP:
		break;
	}
	if (rc)
		return;
	res = ref_rename(&M.ref, c, from_dir, from_name, to_dir, to_name, 1);
	check_obj(fd);
	check_obj(td);
	check_obj(src);
	if (tgt >= 0 && tgt != src) {
		if (M.ref.objs[tgt].live)
			check_obj(tgt);
		else
			check_stale(tgt);
	}
	{
		struct fs_ino got;
		int lrc = M.be->lookup(M.be, NULL, to_dir, to_name, &got, NULL);

		EXPECT(lrc == 0, "lookup of the renamed %s returned %s", name_str(to_name),
		       errname(lrc));
		same_ino("lookup of the renamed name", got, src);
	}
}

static void x_link(const struct fs_cred *c, struct fs_ino ino, struct fs_ino dir, const char *name)
{
	struct ref_res res;
	int obj, rc;

	describe("link(%s, %s, into %s, %s)", cred_str(c), ino_str(ino), ino_str(dir),
		 name_str(name));
	obj = live_obj(ino);
	if (M.posix) {
		if (linux_bad_name(name, 0))
			return skip(SK_NAME);
		if (is_user(c) && obj >= 0 &&
		    (M.ref.objs[obj].type == S_IFLNK || M.ref.objs[obj].uid != c->uid))
			return skip(SK_HARDLINK);
	}
	res = ref_link(&M.ref, c, ino, dir, name, 0);
	rc = M.be->link(M.be, c, ino, dir, name);
	if (expect("link", res, rc, 1) == OUT_ENOSPC) {
		check_dir(live_obj(dir));
		check_obj(obj);
	}
	if (rc || res.rc)
		return;
	ref_link(&M.ref, c, ino, dir, name, 1);
	check_obj(obj);
	check_obj(live_obj(dir));
	{
		struct fs_ino got;
		int lrc = M.be->lookup(M.be, NULL, dir, name, &got, NULL);

		EXPECT(lrc == 0, "lookup of the new link %s returned %s", name_str(name),
		       errname(lrc));
		same_ino("lookup of the new link", got, obj);
	}
}

static void x_getattr(struct fs_ino ino)
{
	struct fs_attr a;
	struct ref_res res;
	int rc;

	describe("getattr(%s)", ino_str(ino));
	res = ref_getattr(&M.ref, ino);
	rc = M.be->getattr(M.be, ino, &a);
	expect("getattr", res, rc, 0);
	if (!rc)
		cmp_attr("getattr", res.obj, &a);
}

static const char *sa_str(const struct fs_setattr *sa)
{
	char *b = scratch();
	int o = 0;

	b[0] = '\0';
	if (sa->valid & FS_SET_MODE)
		o += snprintf(b + o, 100, " mode 0%o", sa->mode);
	if (sa->valid & FS_SET_UID)
		o += snprintf(b + o, 100, " uid %u", sa->uid);
	if (sa->valid & FS_SET_GID)
		o += snprintf(b + o, 100, " gid %u", sa->gid);
	if (sa->valid & FS_SET_SIZE)
		o += snprintf(b + o, 100, " size %" PRIu64, sa->size);
	if (sa->valid & FS_SET_ATIME)
		o += snprintf(b + o, 100, " atime %lld.%09ld", (long long)sa->atime.tv_sec,
			      sa->atime.tv_nsec);
	if (sa->valid & FS_SET_MTIME)
		o += snprintf(b + o, 100, " mtime %lld.%09ld", (long long)sa->mtime.tv_sec,
			      sa->mtime.tv_nsec);
	if (sa->valid & FS_SET_ATIME_NOW)
		o += snprintf(b + o, 100, " atime now");
	if (sa->valid & FS_SET_MTIME_NOW)
		o += snprintf(b + o, 100, " mtime now");
	if (!o)
		snprintf(b, 100, " nothing");
	return b + 1;
}

static void x_setattr(const struct fs_cred *c, struct fs_ino ino, const struct fs_setattr *sa)
{
	struct fs_attr out;
	int with_out = chance(70);
	struct ref_res res;
	int obj = live_obj(ino);
	int rc;

	describe("setattr(%s, %s, %s)", cred_str(c), ino_str(ino), sa_str(sa));
	if (M.posix && obj >= 0) {
		const struct ref_obj *o = &M.ref.objs[obj];

		if (o->type == S_IFLNK && (sa->valid & FS_SET_MODE))
			return skip(SK_LNKMODE);
	}
	res = ref_setattr(&M.ref, c, ino, sa, 0);
	rc = M.be->setattr(M.be, c, ino, sa, with_out ? &out : NULL);
	if (expect("setattr", res, rc, (sa->valid & FS_SET_SIZE) != 0) == OUT_ENOSPC) {
		check_obj(obj);
		check_data(obj);
	}
	if (rc || res.rc)
		return;
	ref_setattr(&M.ref, c, ino, sa, 1);
	if (with_out)
		cmp_attr("setattr result", obj, &out);
	check_obj(obj);
	if ((sa->valid & FS_SET_SIZE) && chance(50))
		check_data(obj);
}

static void x_access(const struct fs_cred *c, struct fs_ino ino, uint32_t want)
{
	struct ref_res res;
	uint32_t exp = 0, got = 0, checked;
	int rc;

	describe("access(%s, %s, want 0x%x)", cred_str(c), ino_str(ino), want);
	res = ref_access(&M.ref, c, ino, want, &exp);
	rc = M.be->access(M.be, c, ino, want, &got);
	expect("access", res, rc, 0);
	if (rc)
		return;
	/* Only the bits whose meaning fs.h and NFS make plain. */
	if (M.ref.objs[res.obj].type == S_IFDIR)
		checked = FS_ACCESS_READ | FS_ACCESS_LOOKUP;
	else
		checked = FS_ACCESS_READ | FS_ACCESS_MODIFY | FS_ACCESS_EXTEND |
			  (c ? FS_ACCESS_EXECUTE : 0);
	EXPECT((got & ~want) == 0, "access granted 0x%x, more than the 0x%x asked", got, want);
	EXPECT((got & checked) == (exp & checked), "access granted 0x%x, expected 0x%x (of 0x%x)",
	       got & checked, exp & checked, checked);
}

static void x_readlink(struct fs_ino ino)
{
	struct ref_res res;
	char buf[FS_SYMLINK_MAX + 2];
	size_t len = 0;
	int rc;

	describe("readlink(%s)", ino_str(ino));
	res = ref_readlink(&M.ref, ino);
	rc = M.be->readlink(M.be, ino, buf, sizeof(buf), &len);
	expect("readlink", res, rc, 0);
	if (!rc)
		check_link(res.obj);
}

static void x_read(const struct fs_cred *c, struct fs_ino ino, uint64_t off, size_t len)
{
	struct ref_res res;
	size_t nread = 0;
	int eof = -1;
	int rc;

	describe("read(%s, %s, off %" PRIu64 ", len %zu)", cred_str(c), ino_str(ino), off, len);
	res = ref_read(&M.ref, c, ino, 0);
	rc = M.be->read(M.be, c, ino, off, len, M.rbuf, &nread, &eof);
	expect("read", res, rc, 0);
	if (rc)
		return;
	ref_read(&M.ref, c, ino, 1);
	{
		const struct ref_obj *o = &M.ref.objs[res.obj];
		uint64_t want = off >= o->size ? 0 : o->size - off;

		if (want > len)
			want = len;
		EXPECT(nread == want,
		       "read gave %zu bytes, expected %" PRIu64 " (size %" PRIu64 ")", nread, want,
		       o->size);
		EXPECT(eof == (off + nread >= o->size), "read gave eof %d (size %" PRIu64 ")", eof,
		       o->size);
		if (nread && memcmp(M.rbuf, o->data + off, nread) != 0) {
			size_t i = 0;

			while (M.rbuf[i] == o->data[off + i])
				i++;
			fail("read: byte %" PRIu64 " is 0x%02x, expected 0x%02x", off + i,
			     M.rbuf[i], o->data[off + i]);
		}
	}
}

static void x_write(const struct fs_cred *c, struct fs_ino ino, uint64_t off, size_t len,
		    enum fs_stable_how stable)
{
	struct fs_attr post;
	int with_post = chance(70);
	uint64_t id = ++M.write_id;
	struct ref_res res;
	int rc;

	describe("write(%s, %s, off %" PRIu64 ", len %zu, pattern %" PRIu64 ", stable %d)",
		 cred_str(c), ino_str(ino), off, len, id, stable);
	fill_pattern(M.wbuf, len, id);
	res = ref_write(&M.ref, c, ino, off, len, M.wbuf, 0);
	rc = M.be->write(M.be, c, ino, off, len, M.wbuf, stable, with_post ? &post : NULL);
	if (expect("write", res, rc, 1) == OUT_ENOSPC) {
		check_obj(res.obj);
		check_data(res.obj);
	}
	if (rc || res.rc)
		return;
	ref_write(&M.ref, c, ino, off, len, M.wbuf, 1);
	if (with_post)
		cmp_attr("write post attr", res.obj, &post);
	if (chance(25))
		check_data(res.obj);
}

/* Listings are checked without a credential: fs.h does not say what
 * permission readdir needs. */
static void x_readdir(struct fs_ino dir, int plus, int page)
{
	struct ref_res res;
	struct listing l;
	uint64_t verf = 0;
	int rc;

	describe("readdir(%s, plus %d, %d per call)", ino_str(dir), plus, page);
	res = ref_readdir(&M.ref, NULL, dir);
	rc = list_dir(dir, 0, &verf, plus, page, &l);
	expect("readdir", res, rc, 0);
	if (!rc) {
		cmp_listing(res.obj, &l, plus);
		check_resume(dir, &l, verf, plus);
	}
	list_free(&l);
}

static void x_commit(struct fs_ino ino)
{
	struct ref_res res;
	int rc;

	describe("commit(%s)", ino_str(ino));
	res = ref_commit(&M.ref, ino);
	rc = M.be->commit(M.be, ino);
	expect("commit", res, rc, 0);
}

static void x_sync(void)
{
	int rc;

	describe("sync()");
	rc = M.be->sync(M.be);
	EXPECT(rc == 0, "sync returned %s", errname(rc));
}

static void x_reopen(void)
{
	int rc;

	describe("close and open the volume");
	rc = M.be->reopen(M.be);
	EXPECT(rc == 0, "reopen returned %s", errname(rc));
	M.nreopen++;
}

/* --- choosing operations ----------------------------------------------- */

/* Short names collide often, which is the point; the rest exercise the
 * allocation hints (*.log, *lock*, *.mp3, *.iso) and odd bytes. */
static const char *const name_pool[] = {
	"a", "b", "c", "d", "e", "f", "g", "data", "dir", "x.log", "lock", "song.mp3", "big.iso",
	"with space", "caf\xc3\xa9", "\xff\xfe", "...", ".hidden", "-", "UPPER", "a.b.c",
};
#define NAME_POOL (sizeof(name_pool) / sizeof(name_pool[0]))
#define NAME_BUF (FS_NAME_MAX + 64)

static void random_chars(char *buf, size_t len, int slashes)
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyz0123456789._-~ ";

	for (size_t i = 0; i < len; i++) {
		buf[i] = set[rnd(sizeof(set) - 1)];
		if (slashes && chance(10))
			buf[i] = '/';
		if (!slashes && chance(2))
			buf[i] = (char)(0x80 + rnd(0x80)); /* any byte but '/' and NUL */
	}
	buf[len] = '\0';
}

static const char *new_name(char *buf)
{
	uint32_t r = rnd(100);
	size_t len;

	if (r < 85)
		return name_pool[rnd(NAME_POOL)];
	len = r < 95 ? 1 + rnd(40) : (chance(30) ? FS_NAME_MAX : 200 + rnd(56));
	random_chars(buf, len, 0);
	if (strcmp(buf, ".") == 0 || strcmp(buf, "..") == 0)
		buf[0] = 'x';
	return buf;
}

static const char *bad_name(char *buf, int dots_ok)
{
	switch (rnd(dots_ok ? 4 : 6)) {
	case 0:
		return "";
	case 1:
		return chance(50) ? "a/b" : "/";
	case 2:
	case 3: {
		/* Too long, and nothing else wrong with it: every byte is set
		 * (a byte left from an earlier name could be a '/'). */
		size_t len = FS_NAME_MAX + 1 + (chance(50) ? rnd(8) : 0);
		memset(buf, 'n', len);
		buf[len] = '\0';
		return buf;
	}
	case 4:
		return ".";
	default:
		return "..";
	}
}

static int is_any(const struct ref_obj *o)
{
	return 1;
}

static int is_dir(const struct ref_obj *o)
{
	return o->type == S_IFDIR;
}

static int is_reg(const struct ref_obj *o)
{
	return o->type == S_IFREG;
}

static int is_nondir(const struct ref_obj *o)
{
	return o->type != S_IFDIR;
}

static int is_lnk(const struct ref_obj *o)
{
	return o->type == S_IFLNK;
}

static int is_other(const struct ref_obj *o)
{
	return o->type != S_IFDIR && o->type != S_IFREG;
}

static int is_full_dir(const struct ref_obj *o)
{
	return o->type == S_IFDIR && o->nents > 0;
}

static int has_subdir(const struct ref_obj *o)
{
	if (o->type != S_IFDIR)
		return 0;
	for (int i = 0; i < o->nents; i++)
		if (M.ref.objs[o->ents[i].obj].type == S_IFDIR)
			return 1;
	return 0;
}

/* A uniformly chosen live object passing the filter, or -1. */
static int pick(int (*filter)(const struct ref_obj *))
{
	int chosen = -1, seen = 0;

	for (int i = 0; i < M.ref.nobjs; i++) {
		if (!M.ref.objs[i].live || !filter(&M.ref.objs[i]))
			continue;
		if (rnd((uint32_t)++seen) == 0)
			chosen = i;
	}
	return chosen;
}

static int pick_dead(void)
{
	int chosen = -1, seen = 0;

	for (int i = 0; i < M.ref.nobjs; i++)
		if (!M.ref.objs[i].live && rnd((uint32_t)++seen) == 0)
			chosen = i;
	return chosen;
}

static int pick_dir(void)
{
	return chance(15) ? M.ref.root : pick(is_dir);
}

/* A deleted object's ino, or a live one's with the wrong generation. */
static struct fs_ino stale_ino(void)
{
	int dead = pick_dead();
	struct fs_ino ino;

	if (dead >= 0 && chance(60))
		return ino_of(dead);
	ino = ino_of(pick(is_any));
	ino.gen ^= 0x40000000u;
	return ino;
}

static struct fs_ino nondir_ino(void)
{
	int obj = pick(is_nondir);

	return obj >= 0 ? ino_of(obj) : stale_ino();
}

/* An existing entry's name (copied: the entry may go away), or a new one. */
static const char *entry_or_new(int dir, char *buf, int pct_existing)
{
	const struct ref_obj *d = &M.ref.objs[dir];

	if (d->type == S_IFDIR && d->nents > 0 && chance(pct_existing)) {
		snprintf(buf, NAME_BUF, "%s", d->ents[rnd((uint32_t)d->nents)].name);
		return buf;
	}
	return new_name(buf);
}

/* A faulty directory argument or name, about one call in five. */
static int fault_dir_name(const struct fs_cred *c, struct fs_ino *dir, const char **name, char *buf,
			  int dots_ok)
{
	if (!chance(20))
		return 0;
	switch (rnd(3)) {
	case 0:
		*dir = stale_ino();
		break;
	case 1:
		*dir = nondir_ino();
		break;
	default:
		/* a user's bad name could fail either way: the order is unsaid */
		if (c)
			return 0;
		*name = bad_name(buf, dots_ok);
		break;
	}
	return 1;
}

static const struct fs_cred *pick_cred(int names_op)
{
	uint32_t r;

	if (!M.perms)
		return NULL;
	r = rnd(100);
	if (r < 40)
		return &user_cred;
	/* root's right to search a directory without x bits is unsaid */
	if (!names_op && r < 48)
		return &root_cred;
	return NULL;
}

static uint32_t pick_mode(void)
{
	static const uint32_t common[] = {0755, 0644, 0700, 0777, 0600, 0000, 0555, 0711, 0333,
					  0666, 0750, 0640, 0070, 0007, 0770, 0707, 0300, 0100};
	/* with credentials, enough is allowed that users get work done */
	static const uint32_t open[] = {0777, 0777, 0775, 0766, 01777, 0757, 0677, 0666};

	if (M.perms && chance(40))
		return open[rnd(sizeof(open) / sizeof(open[0]))];
	if (chance(85))
		return common[rnd(sizeof(common) / sizeof(common[0]))];
	return rnd(010000);
}

static uint32_t pick_id(void)
{
	static const uint32_t ids[] = {0, 1000, 1001, 2000, 3000, 65534};

	if (M.perms && chance(30))
		return 1000;
	return chance(90) ? ids[rnd(6)] : rnd(100000);
}

static size_t pick_len(void)
{
	uint32_t r = rnd(100);

	if (r < 2)
		return 0;
	if (r < 40)
		return 1 + rnd(4096);
	if (r < 75)
		return 1 + rnd(64 * KiB);
	if (r < 95)
		return 1 + rnd(300 * KiB);
	return MiB + rnd(MiB + 1); /* crosses a 1 MiB chunk */
}

static uint64_t pick_off(uint64_t size)
{
	uint32_t r = rnd(100);

	if (r < 15)
		return 0;
	if (r < 50)
		return rnd((uint32_t)size + 1);
	if (r < 75)
		return size;
	return size + rnd(256 * KiB + 1); /* leaves a hole */
}

/* A file for read/write, or about one call in five something else. */
static struct fs_ino pick_io_target(void)
{
	int obj;

	if (chance(20)) {
		switch (rnd(3)) {
		case 0:
			return stale_ino();
		case 1:
			obj = pick(is_dir);
			break;
		default:
			obj = pick(is_other);
			break;
		}
		if (obj >= 0)
			return ino_of(obj);
	}
	obj = pick(is_reg);
	return ino_of(obj >= 0 ? obj : pick(is_any));
}

static void gen_create(void)
{
	static const enum fs_create_how hows[] = {FS_CREATE_GUARDED, FS_CREATE_UNCHECKED,
						  FS_CREATE_EXCLUSIVE};
	const struct fs_cred *c = pick_cred(1);
	int d = pick_dir();
	char buf[NAME_BUF];
	const char *name = entry_or_new(d, buf, 30);
	struct fs_ino dir = ino_of(d);
	uint32_t r = rnd(100);
	enum fs_create_how how = hows[r < 45 ? 0 : r < 85 ? 1 : 2];
	uint64_t verf = rnd64();
	int child = ref_dir_find(&M.ref, d, name);

	if (how == FS_CREATE_EXCLUSIVE && child >= 0 && M.ref.objs[child].excl && chance(70))
		verf = M.ref.objs[child].verf;
	fault_dir_name(c, &dir, &name, buf, 0);
	x_create(c, dir, name, pick_mode(), how, verf);
}

static void gen_mkdir(void)
{
	const struct fs_cred *c = pick_cred(1);
	int d = pick_dir();
	char buf[NAME_BUF];
	const char *name = entry_or_new(d, buf, 15);
	struct fs_ino dir = ino_of(d);

	fault_dir_name(c, &dir, &name, buf, 0);
	x_mkdir(c, dir, name, pick_mode());
}

static void gen_symlink(void)
{
	static char target[FS_SYMLINK_MAX + 64];
	const struct fs_cred *c = pick_cred(1);
	int d = pick_dir();
	char buf[NAME_BUF];
	const char *name = entry_or_new(d, buf, 15);
	struct fs_ino dir = ino_of(d);
	uint32_t r = rnd(100);
	size_t len = r < 70 ? 1 + rnd(60) : r < 95 ? 60 + rnd(1000) : 4000 + rnd(96);

	if (len > FS_SYMLINK_MAX || chance(30))
		len = r >= 95 ? FS_SYMLINK_MAX : len;
	random_chars(target, len, 1);
	if (!fault_dir_name(c, &dir, &name, buf, 0) && !c && chance(5)) {
		if (chance(50))
			target[0] = '\0';
		else
			random_chars(target, FS_SYMLINK_MAX + 1 + rnd(50), 1);
	}
	x_symlink(c, dir, name, target, chance(85) ? 0777 : pick_mode());
}

static void gen_mknod(void)
{
	static const uint32_t types[] = {S_IFIFO, S_IFIFO, S_IFCHR, S_IFBLK, S_IFSOCK};
	static const uint32_t bad_types[] = {S_IFREG, S_IFDIR, S_IFLNK, 0};
	const struct fs_cred *c = pick_cred(1);
	int d = pick_dir();
	char buf[NAME_BUF];
	const char *name = entry_or_new(d, buf, 15);
	struct fs_ino dir = ino_of(d);
	uint32_t type = types[rnd(5)];

	if (!fault_dir_name(c, &dir, &name, buf, 0) && !c && chance(10))
		type = bad_types[rnd(4)];
	x_mknod(c, dir, name, type | pick_mode(), rnd(256), rnd(65536));
}

static void gen_remove(void)
{
	const struct fs_cred *c = pick_cred(1);
	int d = chance(90) ? pick(is_full_dir) : pick_dir();
	char buf[NAME_BUF];
	const char *name;
	struct fs_ino dir;

	if (d < 0)
		d = M.ref.root;
	name = entry_or_new(d, buf, 85);
	dir = ino_of(d);
	fault_dir_name(c, &dir, &name, buf, 0);
	x_remove(c, dir, name);
}

static void gen_rmdir(void)
{
	const struct fs_cred *c = pick_cred(1);
	int d = chance(85) ? pick(has_subdir) : pick_dir();
	char buf[NAME_BUF];
	const char *name = NULL;
	struct fs_ino dir;

	if (d < 0)
		d = pick_dir();
	if (chance(75)) {
		/* a subdirectory, preferring an empty one */
		const struct ref_obj *o = &M.ref.objs[d];

		for (int tries = 0; tries < 8 && o->nents > 0; tries++) {
			const struct ref_dirent *e = &o->ents[rnd((uint32_t)o->nents)];
			const struct ref_obj *ch = &M.ref.objs[e->obj];

			if (ch->type == S_IFDIR && (ch->nents == 0 || tries >= 4)) {
				snprintf(buf, sizeof(buf), "%s", e->name);
				name = buf;
				break;
			}
		}
	}
	if (!name)
		name = entry_or_new(d, buf, 70);
	dir = ino_of(d);
	fault_dir_name(c, &dir, &name, buf, 0);
	x_rmdir(c, dir, name);
}

/* Two names of one file with several links, for "rename onto itself". */
static int pick_link_pair(int *d1, char *n1, int *d2, char *n2)
{
	int f = -1, seen = 0, found = 0;

	for (int i = 0; i < M.ref.nobjs; i++)
		if (M.ref.objs[i].live && M.ref.objs[i].nlink > 1 &&
		    M.ref.objs[i].type != S_IFDIR && rnd((uint32_t)++seen) == 0)
			f = i;
	if (f < 0)
		return 0;
	for (int d = 0; d < M.ref.nobjs; d++) {
		const struct ref_obj *o = &M.ref.objs[d];

		if (!o->live || o->type != S_IFDIR)
			continue;
		for (int i = 0; i < o->nents; i++) {
			if (o->ents[i].obj != f)
				continue;
			if (found == 0 || chance(50)) {
				*d1 = d;
				snprintf(n1, NAME_BUF, "%s", o->ents[i].name);
			} else {
				*d2 = d;
				snprintf(n2, NAME_BUF, "%s", o->ents[i].name);
			}
			found++;
		}
	}
	if (found < 2 || *d2 < 0)
		return 0;
	return 1;
}

static void gen_rename(void)
{
	const struct fs_cred *c = pick_cred(1);
	char fbuf[NAME_BUF], tbuf[NAME_BUF];
	const char *fname, *tname;
	int fd = -1, td = -1, src;
	struct fs_ino fdi, tdi;

	if (chance(5) && pick_link_pair(&fd, fbuf, &td, tbuf)) {
		x_rename(c, ino_of(fd), fbuf, ino_of(td), tbuf);
		return;
	}
	fd = chance(90) ? pick(is_full_dir) : pick_dir();
	if (fd < 0)
		fd = M.ref.root;
	fname = entry_or_new(fd, fbuf, 85);
	src = ref_dir_find(&M.ref, fd, fname);
	if (src >= 0 && M.ref.objs[src].type == S_IFDIR && chance(15)) {
		/* into its own subtree */
		int seen = 0;

		for (int i = 0; i < M.ref.nobjs; i++)
			if (M.ref.objs[i].live && M.ref.objs[i].type == S_IFDIR &&
			    ref_is_under(&M.ref, i, src) && rnd((uint32_t)++seen) == 0)
				td = i;
	}
	if (td < 0)
		td = chance(30) ? fd : pick_dir();
	tname = entry_or_new(td, tbuf, 40);
	fdi = ino_of(fd);
	tdi = ino_of(td);
	if (chance(20)) {
		switch (rnd(4)) {
		case 0:
			if (chance(50))
				fdi = stale_ino();
			else
				tdi = stale_ino();
			break;
		case 1:
			if (chance(50))
				fdi = nondir_ino();
			else
				tdi = nondir_ino();
			break;
		default:
			/* a bad name beside an existing source: Linux looks up the
			 * source first, fs.h checks both names first */
			if (c || src < 0)
				break;
			if (chance(50))
				tname = bad_name(tbuf, 0);
			else
				fname = bad_name(fbuf, 0);
			break;
		}
	}
	x_rename(c, fdi, fname, tdi, tname);
}

static void gen_link(void)
{
	const struct fs_cred *c = pick_cred(1);
	int obj = pick(is_nondir);
	int d = pick_dir();
	char buf[NAME_BUF];
	const char *name = entry_or_new(d, buf, 20);
	struct fs_ino dir = ino_of(d);

	if (obj < 0 || chance(8)) {
		/* -EPERM, and nothing else wrong: its order is not said */
		x_link(NULL, ino_of(pick(is_dir)), dir, name);
		return;
	}
	if (chance(5)) {
		x_link(c, stale_ino(), dir, name);
		return;
	}
	fault_dir_name(c, &dir, &name, buf, 0);
	x_link(c, ino_of(obj), dir, name);
}

static void gen_lookup(void)
{
	const struct fs_cred *c = pick_cred(0);
	int d = pick_dir();
	char buf[NAME_BUF];
	const char *name = entry_or_new(d, buf, 60);
	struct fs_ino dir = ino_of(d);

	if (chance(15))
		name = chance(50) ? "." : "..";
	fault_dir_name(c, &dir, &name, buf, 1);
	x_lookup(c, dir, name);
}

static void gen_getattr(void)
{
	x_getattr(chance(85) ? ino_of(pick(is_any)) : stale_ino());
}

static void gen_setattr(void)
{
	const struct fs_cred *c = pick_cred(0);
	struct fs_setattr sa;
	int obj = chance(60) ? pick(is_reg) : pick(is_any);
	struct fs_ino ino;

	if (obj < 0)
		obj = pick(is_any);
	ino = ino_of(obj);
	memset(&sa, 0, sizeof(sa));
	sa.mode = pick_mode();
	sa.uid = pick_id();
	sa.gid = pick_id();
	if (chance(30))
		sa.size = 0;
	else if (chance(60))
		sa.size = rnd((uint32_t)M.ref.objs[obj].size + 1);
	else
		sa.size = M.ref.objs[obj].size + rnd(3 * MiB / 2);
	sa.atime.tv_sec = rnd(1u << 31);
	sa.atime.tv_nsec = rnd(1000000000);
	sa.mtime.tv_sec = rnd(1u << 31);
	sa.mtime.tv_nsec = rnd(1000000000);
	if (is_user(c)) {
		/* One field at a time (which rule goes first is unsaid), or
		 * times alone: a given time is the owner's, the server's clock
		 * also a writer's, on whatever was picked, the user's or not. */
		static const uint32_t one[] = {FS_SET_MODE, FS_SET_MODE, FS_SET_UID, FS_SET_GID,
					       FS_SET_SIZE};
		static const uint32_t times[] = {FS_SET_ATIME,
						 FS_SET_MTIME,
						 FS_SET_ATIME | FS_SET_MTIME,
						 FS_SET_ATIME_NOW,
						 FS_SET_MTIME_NOW,
						 FS_SET_ATIME_NOW | FS_SET_MTIME_NOW,
						 FS_SET_ATIME | FS_SET_MTIME_NOW};

		if (chance(25))
			sa.valid = times[rnd(sizeof(times) / sizeof(times[0]))];
		else
			sa.valid = one[rnd(5)];
		if (sa.valid == FS_SET_SIZE && M.ref.objs[obj].type != S_IFREG)
			sa.valid = FS_SET_MODE;
	} else {
		int is_file = M.ref.objs[obj].type == S_IFREG;

		if (chance(30))
			sa.valid |= FS_SET_MODE;
		if (chance(12))
			sa.valid |= FS_SET_UID;
		if (chance(12))
			sa.valid |= FS_SET_GID;
		if ((is_file && chance(40)) || chance(4))
			sa.valid |= FS_SET_SIZE;
		if (chance(15))
			sa.valid |= chance(80) ? FS_SET_ATIME : FS_SET_ATIME_NOW;
		if (chance(15))
			sa.valid |= chance(80) ? FS_SET_MTIME : FS_SET_MTIME_NOW;
		if (!sa.valid && chance(80))
			sa.valid = FS_SET_MODE;
	}
	if (chance(5))
		ino = stale_ino();
	x_setattr(c, ino, &sa);
}

static void gen_access(void)
{
	const struct fs_cred *c = pick_cred(0);
	int obj = chance(70) ? pick(is_reg) : pick(is_dir);
	uint32_t want = 1 + rnd(0x3f);

	if (obj < 0)
		obj = pick(is_dir);
	x_access(c, chance(5) ? stale_ino() : ino_of(obj), want);
}

static void gen_read(void)
{
	const struct fs_cred *c = pick_cred(0);
	struct fs_ino ino = pick_io_target();
	int obj = live_obj(ino);
	uint64_t size = obj >= 0 ? M.ref.objs[obj].size : 0;
	uint64_t off = chance(10) ? size + rnd(8192) : rnd((uint32_t)size + 1);
	size_t len = chance(3) ? 0 : 1 + rnd(chance(80) ? 64 * KiB : 300 * KiB);

	x_read(c, ino, off, len);
}

static void gen_write(void)
{
	const struct fs_cred *c = pick_cred(0);
	struct fs_ino ino = pick_io_target();
	int obj = live_obj(ino);
	uint64_t size = obj >= 0 ? M.ref.objs[obj].size : 0;

	x_write(c, ino, pick_off(size), pick_len(), (enum fs_stable_how)rnd(3));
}

static void gen_readlink(void)
{
	int obj = chance(80) ? pick(is_lnk) : pick(is_any);

	x_readlink(obj < 0 || chance(5) ? stale_ino() : ino_of(obj));
}

static void gen_readdir(void)
{
	struct fs_ino dir = ino_of(pick_dir());

	if (chance(10))
		dir = chance(50) ? stale_ino() : nondir_ino();
	x_readdir(dir, chance(50), chance(50) ? 0 : 1 + (int)rnd(5));
}

static void gen_commit(void)
{
	int obj = pick(is_reg);

	if (obj >= 0)
		x_commit(ino_of(obj));
}

static void gen_reopen(void)
{
	x_reopen();
	if (chance(30))
		compare_tree("after a random reopen");
}

/* The operation mix. gen: makes and checks one random call; weight: its
 * share in a plain sequence; perm_weight: its share in a sequence with
 * credentials, where setattr and access matter more. */
static const struct {
	void (*gen)(void);
	int weight;
	int perm_weight;
} op_table[] = {
	{gen_create, 14, 12},
	{gen_mkdir, 8, 8},
	{gen_write, 14, 10},
	{gen_rename, 10, 8},
	{gen_link, 7, 5},
	{gen_remove, 8, 7},
	{gen_rmdir, 4, 4},
	{gen_lookup, 6, 8},
	{gen_getattr, 3, 3},
	{gen_setattr, 7, 14},
	{gen_read, 6, 6},
	{gen_symlink, 3, 3},
	{gen_mknod, 2, 2},
	{gen_readlink, 2, 1},
	{gen_readdir, 3, 2},
	{gen_access, 2, 6},
	{gen_commit, 1, 1},
	{x_sync, 1, 0},
	{gen_reopen, 1, 1},
};
#define NOPS (sizeof(op_table) / sizeof(op_table[0]))

static void random_op(void)
{
	int total = 0, r;

	for (size_t i = 0; i < NOPS; i++)
		total += M.perms ? op_table[i].perm_weight : op_table[i].weight;
	r = (int)rnd((uint32_t)total);
	for (size_t i = 0; i < NOPS; i++) {
		r -= M.perms ? op_table[i].perm_weight : op_table[i].weight;
		if (r < 0) {
			op_table[i].gen();
			return;
		}
	}
}

/* --- one sequence ------------------------------------------------------- */

/* One pass deleting what it can under d, deepest first; returns how many
 * names went. A remove may meet -ENOSPC (see x_remove) while another link
 * of the file is still elsewhere; a later pass gets it. */
static int teardown_pass(int d)
{
	int gone = 0;

	for (int i = M.ref.objs[d].nents - 1; i >= 0; i--) {
		const struct ref_dirent *e;
		char name[NAME_BUF];
		int child, before;

		if (i >= M.ref.objs[d].nents)
			continue;
		e = &M.ref.objs[d].ents[i];
		child = e->obj;
		snprintf(name, sizeof(name), "%s", e->name);
		if (M.ref.objs[child].type == S_IFDIR) {
			gone += teardown_pass(child);
			if (M.ref.objs[child].nents > 0)
				continue;
		}
		if (d == M.ref.root && strcmp(name, "lost+found") == 0)
			continue; /* kept, as mkfs made it */
		before = M.ref.objs[d].nents;
		if (M.ref.objs[child].type == S_IFDIR)
			x_rmdir(NULL, ino_of(d), name);
		else
			x_remove(NULL, ino_of(d), name);
		check_statfs();
		gone += before - M.ref.objs[d].nents;
	}
	return gone;
}

/* Back to what mkfs made: the root and an empty lost+found (made again
 * when a sequence removed it: it then costs the same blocks). */
static void teardown(void)
{
	int root = M.ref.root;

	while (M.ref.objs[root].nents > (ref_dir_find(&M.ref, root, "lost+found") >= 0))
		EXPECT(teardown_pass(root) > 0, "deleting everything made no progress");
	if (ref_dir_find(&M.ref, root, "lost+found") >= 0) {
		teardown_pass(root);
	} else {
		/* A setgid root would pass its group on in Linux (the posix
		 * oracle skips such a mkdir): the root loses the bit first. */
		if (M.posix && dir_has_bits(ino_of(root), S_ISGID)) {
			struct fs_setattr sa = { .valid = FS_SET_MODE,
						 .mode = M.ref.objs[root].perm & ~(uint32_t)S_ISGID };
			x_setattr(NULL, ino_of(root), &sa);
		}
		x_mkdir(NULL, ino_of(root), "lost+found", 0700);
	}
}

static void check_fresh_blocks(const char *when)
{
	struct fs_statfs st;
	int rc;

	if (!M.be->has_statfs)
		return;
	rc = M.be->statfs(M.be, &st);
	EXPECT(rc == 0, "statfs returned %s", errname(rc));
	EXPECT(st.free_blocks == M.fresh.free_blocks,
	       "%s: %" PRIu64 " blocks free, the fresh volume had %" PRIu64 " (%" PRId64 " leaked)",
	       when, st.free_blocks, M.fresh.free_blocks,
	       (int64_t)(M.fresh.free_blocks - st.free_blocks));
}

/* mkfs makes /lost+found (0700, empty); the reference starts with it, and
 * so does a Linux oracle, which makes it. */
static void start_with_lost_found(struct fs_ino root)
{
	struct fs_ino lf = {0, 0};
	struct ref_res res;
	int rc;

	if (M.posix)
		rc = M.be->mkdir(M.be, NULL, root, "lost+found", 0700, &lf, NULL);
	else
		rc = M.be->lookup(M.be, NULL, root, "lost+found", &lf, NULL);
	EXPECT(rc == 0, "lost+found of the fresh volume: %s", errname(rc));
	res = ref_mkdir(&M.ref, NULL, root, "lost+found", 0700, 1);
	EXPECT(res.rc == 0 && res.obj >= 0, "the reference cannot make lost+found");
	if (res.rc == 0 && res.obj >= 0)
		M.ref.objs[res.obj].ino = lf;
}

/* A fresh volume of chunks chunks and the reference beside it, compared. */
static void begin_volume(uint32_t chunks, uint32_t bpi)
{
	struct fs_ino root;
	struct fs_attr attr;
	int rc;

	context("making the volume");
	rc = M.be->begin(M.be, chunks, bpi);
	EXPECT(rc == 0, "making a volume of %u chunks returned %s", chunks, errname(rc));
	rc = M.be->root(M.be, &root);
	EXPECT(rc == 0, "root returned %s", errname(rc));
	rc = M.be->getattr(M.be, root, &attr);
	EXPECT(rc == 0, "getattr of the root returned %s", errname(rc));
	EXPECT(S_ISDIR(attr.mode) && attr.nlink == (M.posix ? 2u : 3u) && attr.fileid == root.num,
	       "the fresh root has mode 0%o, nlink %u, fileid %" PRIu64 " (ino %" PRIu64 ")",
	       attr.mode, attr.nlink, attr.fileid, root.num);
	ref_init(&M.ref, root, &attr);
	start_with_lost_found(root);
	if (M.be->has_statfs) {
		rc = M.be->statfs(M.be, &M.fresh);
		EXPECT(rc == 0, "statfs returned %s", errname(rc));
		check_statfs();
	}
	compare_tree("of the fresh volume");
}

/* The end of every sequence: everything compared after a reopen, then
 * deleted, and the volume must be as mkfs left it. */
static void end_volume(void)
{
	x_reopen();
	compare_tree("at the end of the sequence");
	check_invariants("at the end of the sequence");

	context("deleting everything");
	teardown();
	EXPECT(M.ref.nlive == 2, "the model still has %d objects (the root and lost+found)",
	       M.ref.nlive);
	check_fresh_blocks("after deleting everything");
	x_reopen();
	compare_tree("of the emptied volume");
	check_fresh_blocks("after deleting everything and reopening");
	check_invariants("on the emptied volume");

	M.be->end(M.be, 0);
	ref_free(&M.ref);
	M.nseq++;
}

static void run_sequence(long seq, int nops)
{
	uint32_t chunks, bpi;

	M.seq = seq;
	M.opno = 0;
	M.rng = mix64(M.seed ^ mix64((uint64_t)seq + 1));
	chunks = 2 + rnd(3);
	bpi = chance(50) ? 4096 : 16384;
	M.perms = M.perms_enabled && seq % 4 == 3;
	if (M.verbose)
		printf("model: sequence %ld: %u chunks of 1 MiB, %u bytes per inode%s\n", seq,
		       chunks, bpi, M.perms ? ", with credentials" : "");
	begin_volume(chunks, bpi);
	if (M.perms) {
		/* let the user create at the top, sometimes in a sticky root */
		struct fs_setattr sa = {.valid = FS_SET_MODE, .mode = chance(50) ? 0777 : 01777};

		x_setattr(NULL, ino_of(M.ref.root), &sa);
	}

	for (int i = 0; i < nops; i++) {
		if (i == nops / 2) {
			x_reopen();
			compare_tree("after the mid-sequence reopen");
			check_invariants("in mid-sequence");
		}
		random_op();
		check_statfs();
		if (M.check_each)
			check_invariants("after this operation");
	}
	end_volume();
}

/* Sequences that once found a bug, replayed first in every run of the fs
 * oracle (with the default 200 operations): seed and sequence number. */
static const struct {
	uint64_t seed;
	long seq;
} regressions[] = {
	/* lost+found's head rewritten from a stale copy: a rename of a file
	 * out of lost+found over a symlink with two links sent the symlink's
	 * data to a fresh chunk, whose lost+found part was chained after the
	 * head, and the rename wrote back its older copy of that head. */
	{ 1796475823524151ull, 219 },
};

static void run_regressions(int nops)
{
	uint64_t seed = M.seed;

	if (nops != 200)
		return;
	for (size_t i = 0; i < sizeof(regressions) / sizeof(regressions[0]); i++) {
		M.seed = regressions[i].seed;
		run_sequence(regressions[i].seq, nops);
	}
	M.seed = seed;
}

/* --- the fixed sequence ------------------------------------------------- */

/* The fixed sequence's object dir/name, which must be there. */
static int fx_obj(int dir, const char *name)
{
	int obj = ref_dir_find(&M.ref, dir, name);

	EXPECT(obj >= 0, "the fixed sequence's %s is missing", name_str(name));
	return obj;
}

/* The reference's answer to the call about to be made is the rule's. */
static void fx_rc(const char *what, struct ref_res res, int want)
{
	EXPECT(res.rc == want, "fixed sequence: the reference answers %s to %s, the rule says %s",
	       errname(res.rc), what, errname(want));
}

/* dir/name has the mode bits and group the rule says, in the reference
 * and in the system under test. */
static void fx_is(int dir, const char *name, uint32_t perm, uint32_t gid)
{
	int obj = fx_obj(dir, name);
	const struct ref_obj *o = &M.ref.objs[obj];

	EXPECT(o->perm == perm && o->gid == gid,
	       "fixed sequence: %s is 0%o gid %u in the reference, the rule says 0%o gid %u",
	       obj_str(obj), o->perm, o->gid, perm, gid);
	check_obj(obj);
}

static void fx_setattr(const struct fs_cred *c, int obj, const struct fs_setattr *sa, int want)
{
	fx_rc(sa_str(sa), ref_setattr(&M.ref, c, ino_of(obj), sa, 0), want);
	x_setattr(c, ino_of(obj), sa);
}

/* A SETATTR of one of mode, uid, gid or size (valid says which) to v. */
static void fx_set(const struct fs_cred *c, int obj, uint32_t valid, uint32_t v, int want)
{
	struct fs_setattr sa = {.valid = valid, .mode = v, .uid = v, .gid = v, .size = v};

	fx_setattr(c, obj, &sa, want);
}

/* A SETATTR of times: given ones (FS_SET_ATIME, FS_SET_MTIME) from at and
 * mt, the server's clock (the _NOW flags). */
static void fx_times(const struct fs_cred *c, int obj, uint32_t valid, struct timespec at,
		     struct timespec mt, int want)
{
	struct fs_setattr sa = {.valid = valid, .atime = at, .mtime = mt};

	fx_setattr(c, obj, &sa, want);
}

static void fx_create(const struct fs_cred *c, int dir, const char *name, uint32_t mode)
{
	fx_rc(name, ref_create(&M.ref, c, ino_of(dir), name, mode, FS_CREATE_GUARDED, 0, 0), 0);
	x_create(c, ino_of(dir), name, mode, FS_CREATE_GUARDED, 0);
}

static void fx_write(const struct fs_cred *c, int dir, const char *name)
{
	x_write(c, ino_of(fx_obj(dir, name)), 0, 100, FS_FILE_SYNC);
}

/* Rules the random operations seldom meet, in one order, in every run
 * that is not a replay: uid 1000 (groups 1000 and 2000, not 3000) in a
 * setgid directory of group 3000, the set-id bits its writes, size
 * changes, chown and chmod take, times set by one who is not the owner, a
 * sticky directory, a hard link to a directory. With MODEL_ORACLE=posix
 * the kernel answers each call. */
static void run_fixed(void)
{
	const struct fs_cred *u = &user_cred, *r = &root_cred;
	const struct timespec t1 = {1234567, 500}, t2 = {7654321, 0};
	int root, sg, own, st, tw, tr;

	M.seq = FIXED_SEQ;
	M.opno = 0;
	M.rng = mix64(M.seed ^ 0xf1cedull);
	M.perms = 1;
	if (M.verbose)
		printf("model: the fixed sequence\n");
	begin_volume(2, 4096);
	root = M.ref.root;

	/* sg: setgid, group 3000, open to everyone; own: open to everyone,
	 * where the user's files take its group 1000. */
	x_mkdir(NULL, ino_of(root), "sg", 0777);
	sg = fx_obj(root, "sg");
	fx_set(NULL, sg, FS_SET_GID, 3000, 0);
	fx_set(NULL, sg, FS_SET_MODE, 02777, 0);
	x_mkdir(NULL, ino_of(root), "own", 0777);
	own = fx_obj(root, "own");

	/* What uid 1000 makes in sg takes group 3000 and a directory is
	 * setgid; a file or FIFO asked for with S_ISGID and group execute
	 * loses S_ISGID (the user is not in 3000), one without group execute
	 * keeps it, and so does root's. */
	fx_create(u, sg, "f", 02750);
	fx_is(sg, "f", 0750, 3000);
	fx_create(u, sg, "g", 02745);
	fx_is(sg, "g", 02745, 3000);
	x_mknod(u, ino_of(sg), "p", S_IFIFO | 02750, 0, 0);
	fx_is(sg, "p", 0750, 3000);
	x_mkdir(u, ino_of(sg), "d", 0755);
	fx_is(sg, "d", 02755, 3000);
	fx_create(r, sg, "rf", 02750);
	fx_is(sg, "rf", 02750, 3000);

	/* A write or a size change (any size, the same one too) by uid 1000
	 * takes S_ISUID, and S_ISGID with group execute or from a writer
	 * outside the file's group; root's take nothing. */
	fx_create(u, own, "w6", 06755);
	fx_is(own, "w6", 06755, 1000);
	fx_write(u, own, "w6");
	fx_is(own, "w6", 0755, 1000);
	fx_create(u, own, "t6", 06755);
	fx_set(u, fx_obj(own, "t6"), FS_SET_SIZE, 100, 0);
	fx_is(own, "t6", 0755, 1000);
	fx_write(u, sg, "g");
	fx_is(sg, "g", 0745, 3000);
	fx_create(u, sg, "t2", 02745);
	fx_set(u, fx_obj(sg, "t2"), FS_SET_SIZE, 0, 0);
	fx_is(sg, "t2", 0745, 3000);
	fx_create(u, own, "k2", 02745);
	fx_write(u, own, "k2");
	fx_set(u, fx_obj(own, "k2"), FS_SET_SIZE, 10, 0);
	fx_is(own, "k2", 02745, 1000);
	fx_create(r, own, "r6", 06777);
	fx_write(r, own, "r6");
	fx_set(r, fx_obj(own, "r6"), FS_SET_SIZE, 10, 0);
	fx_is(own, "r6", 06777, 0);
	fx_write(u, own, "r6");
	fx_is(own, "r6", 0777, 0);

	/* chown by uid 1000 of its files: to its group 2000 takes S_ISUID,
	 * and S_ISGID only with group execute (1000, the old group, is its
	 * own); to its own uid, no change of ids, still takes S_ISUID; to
	 * another uid, or a group not its own, EPERM. */
	fx_create(u, own, "c6", 06755);
	fx_set(u, fx_obj(own, "c6"), FS_SET_GID, 2000, 0);
	fx_is(own, "c6", 0755, 2000);
	fx_create(u, own, "c2", 02745);
	fx_set(u, fx_obj(own, "c2"), FS_SET_GID, 2000, 0);
	fx_is(own, "c2", 02745, 2000);
	fx_create(u, own, "c4", 04755);
	fx_set(u, fx_obj(own, "c4"), FS_SET_UID, 1000, 0);
	fx_is(own, "c4", 0755, 1000);
	fx_set(u, fx_obj(own, "c4"), FS_SET_UID, 0, -EPERM);
	fx_set(u, fx_obj(own, "c4"), FS_SET_GID, 3000, -EPERM);

	/* chmod with S_ISGID by an owner outside the group drops the bit
	 * without an error, a directory's too; in the group, or as root, it
	 * stays. */
	fx_set(u, fx_obj(sg, "f"), FS_SET_MODE, 02750, 0);
	fx_is(sg, "f", 0750, 3000);
	fx_set(u, fx_obj(sg, "d"), FS_SET_MODE, 02775, 0);
	fx_is(sg, "d", 0775, 3000);
	fx_set(u, fx_obj(own, "k2"), FS_SET_MODE, 02755, 0);
	fx_is(own, "k2", 02755, 1000);
	fx_set(r, fx_obj(sg, "f"), FS_SET_MODE, 02750, 0);
	fx_is(sg, "f", 02750, 3000);

	/* Times of root's files set by uid 1000: a given time is the
	 * owner's (EPERM); the server's clock, one time or both, needs write
	 * permission (EACCES on 0644) and moves only the time asked for
	 * (the other one is known and compared). The owner sets either. */
	fx_create(r, own, "tw", 0666);
	fx_create(r, own, "tr", 0644);
	tw = fx_obj(own, "tw");
	tr = fx_obj(own, "tr");
	fx_times(r, tw, FS_SET_ATIME | FS_SET_MTIME, t1, t2, 0);
	fx_times(u, tw, FS_SET_ATIME, t2, t2, -EPERM);
	fx_times(u, tw, FS_SET_MTIME, t1, t1, -EPERM);
	fx_times(u, tw, FS_SET_ATIME | FS_SET_MTIME_NOW, t2, t2, -EPERM);
	fx_times(u, tw, FS_SET_ATIME_NOW, t2, t2, 0);
	fx_times(r, tw, FS_SET_ATIME, t1, t1, 0);
	fx_times(u, tw, FS_SET_MTIME_NOW, t2, t2, 0);
	fx_times(u, tw, FS_SET_ATIME_NOW | FS_SET_MTIME_NOW, t2, t2, 0);
	fx_times(u, tr, FS_SET_ATIME_NOW, t2, t2, -EACCES);
	fx_times(u, tr, FS_SET_MTIME_NOW, t2, t2, -EACCES);
	fx_times(u, tr, FS_SET_ATIME_NOW | FS_SET_MTIME_NOW, t2, t2, -EACCES);
	fx_times(u, tr, FS_SET_MTIME, t1, t1, -EPERM);
	fx_create(u, own, "ow", 0444);
	fx_times(u, fx_obj(own, "ow"), FS_SET_MTIME_NOW, t1, t1, 0);
	fx_times(u, fx_obj(own, "ow"), FS_SET_ATIME | FS_SET_MTIME, t2, t1, 0);

	/* A sticky directory of root's: uid 1000 may neither remove, rmdir
	 * nor rename root's entries, nor rename its own over one of them; its
	 * own it removes. */
	x_mkdir(NULL, ino_of(root), "st", 01777);
	st = fx_obj(root, "st");
	fx_create(r, st, "rfile", 0666);
	x_mkdir(r, ino_of(st), "rdir", 0777);
	fx_create(u, st, "ufile", 0666);
	fx_rc("remove of root's file in a sticky directory",
	      ref_remove(&M.ref, u, ino_of(st), "rfile", 0), -EPERM);
	x_remove(u, ino_of(st), "rfile");
	fx_rc("rmdir of root's directory in a sticky directory",
	      ref_rmdir(&M.ref, u, ino_of(st), "rdir", 0), -EPERM);
	x_rmdir(u, ino_of(st), "rdir");
	fx_rc("rename of root's file in a sticky directory",
	      ref_rename(&M.ref, u, ino_of(st), "rfile", ino_of(st), "moved", 0), -EPERM);
	x_rename(u, ino_of(st), "rfile", ino_of(st), "moved");
	fx_rc("rename over root's file in a sticky directory",
	      ref_rename(&M.ref, u, ino_of(st), "ufile", ino_of(st), "rfile", 0), -EPERM);
	x_rename(u, ino_of(st), "ufile", ino_of(st), "rfile");
	fx_rc("remove of one's own file in a sticky directory",
	      ref_remove(&M.ref, u, ino_of(st), "ufile", 0), 0);
	x_remove(u, ino_of(st), "ufile");

	/* A hard link to a directory: EPERM, as link(2) (over NFS, ISDIR). */
	fx_rc("link of a directory", ref_link(&M.ref, NULL, ino_of(sg), ino_of(root), "dl", 0),
	      -EPERM);
	x_link(NULL, ino_of(sg), ino_of(root), "dl");

	check_statfs();
	end_volume();
}

static long env_long(const char *name, long dflt)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return dflt;
	v = strtol(s, &end, 0);
	if (*end) {
		fprintf(stderr, "model: %s=%s is not a number\n", name, s);
		exit(1);
	}
	return v;
}

/* Environment: SEED (default: from the clock; a run without SEED plays the
 * fixed sequence first, and with the fs oracle the regressions), MODEL_SEQUENCES,
 * MODEL_OPS (per sequence), MODEL_START (the first sequence number, so that SEED=s
 * MODEL_START=n MODEL_SEQUENCES=1 replays sequence n alone), MODEL_VERBOSE=1
 * (print every operation and its result), MODEL_PERMS=0 (no sequences with
 * credentials, nor the fixed one), MODEL_ORACLE=posix (check the model against
 * Linux; root), MODEL_CHECK_EACH=1 (fs_check_invariants after every operation). */
int main(void)
{
	const char *oracle = getenv("MODEL_ORACLE");
	const char *seed_env = getenv("SEED");
	long start = env_long("MODEL_START", 0);
	long count = env_long("MODEL_SEQUENCES", 300);
	long nops = env_long("MODEL_OPS", 200);
	long skipped = 0;

	M.check_each = (int)env_long("MODEL_CHECK_EACH", 0);
	struct timeval tv;

	setvbuf(stdout, NULL, _IOLBF, 0);
	catch_crashes();
	M.verbose = env_long("MODEL_VERBOSE", 0) != 0;
	M.perms_enabled = env_long("MODEL_PERMS", 1) != 0;
	M.posix = oracle && strcmp(oracle, "posix") == 0;
#ifdef MODEL_POSIX_ONLY
	if (!M.posix)
		printf("model: built with MODEL_POSIX_ONLY: using the posix oracle\n");
	M.posix = 1;
#endif
	if (oracle && !M.posix && strcmp(oracle, "fs") != 0) {
		fprintf(stderr, "model: MODEL_ORACLE=%s: use fs or posix\n", oracle);
		return 1;
	}
	if (M.posix) {
		if (geteuid() != 0) {
			printf("model: SKIP: the posix oracle needs root (chown, setfsuid)\n");
			return 77;
		}
		umask(0);
		M.be = &posix_backend;
	} else {
#ifndef MODEL_POSIX_ONLY
		M.be = &fs_backend;
#endif
	}
	if (seed_env && *seed_env) {
		M.seed = strtoull(seed_env, NULL, 0);
	} else {
		gettimeofday(&tv, NULL);
		M.seed = (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
	}
	printf("model: seed %" PRIu64 "\n", M.seed);
	printf("model: oracle %s, sequences %ld..%ld, %ld operations each%s\n", M.be->name, start,
	       start + count - 1, nops, M.perms_enabled ? "" : ", no credentials");
	M.wbuf = xmalloc(MAX_IO);
	M.rbuf = xmalloc(MAX_IO);
	if (!(seed_env && *seed_env) && M.perms_enabled)
		run_fixed();
	if (!(seed_env && *seed_env) && !M.posix)
		run_regressions((int)nops);
	for (long s = start; s < start + count; s++)
		run_sequence(s, (int)nops);
	for (int i = 0; i < SK_COUNT; i++)
		skipped += M.nskip[i];
	printf("model: %ld sequences, %ld operations, %ld ENOSPC, %ld reopens, %ld alternative "
	       "results accepted\n",
	       M.nseq, M.nops, M.nenospc, M.nreopen, M.nalt);
	if (M.posix) {
		printf("model: %ld operations skipped where Linux differs from fs.h:", skipped);
		for (int i = 0; i < SK_COUNT; i++)
			printf("%s %s %ld", i ? "," : "", skip_names[i], M.nskip[i]);
		printf("\n");
	}
	free(M.wbuf);
	free(M.rbuf);
	return test_done("model");
}
