/* The reference model: what each fs.h call must return and how it changes
 * the tree, checked in the order fs.h promises (the inode argument, then the
 * name, then permissions, then what the directory holds). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model_ref.h"

static const struct fs_ino unset_ino = {UINT64_MAX, UINT32_MAX};

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size ? size : 1);
	if (!p) {
		perror("model_ref: realloc");
		exit(1);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(xrealloc(NULL, n), s, n);
}

static struct ref_res res_of(int rc, int obj)
{
	struct ref_res res = {rc, REF_NO_ALT, REF_NO_ALT, obj};

	return res;
}

/* The first of up to three errors that apply at once, the others as
 * alternatives: for checks whose order fs.h does not fix. */
static struct ref_res first_of(int e1, int e2, int e3, int obj)
{
	int errs[3] = {e1, e2, e3}, n = 0;
	struct ref_res res = res_of(0, obj);

	for (int i = 0; i < 3; i++) {
		if (!errs[i])
			continue;
		if (n == 0)
			res.rc = errs[i];
		else if (n == 1)
			res.alt = errs[i];
		else
			res.alt2 = errs[i];
		n++;
	}
	return res;
}

/* Combine a missing write permission with an error found under the name:
 * the library checks permission first, Linux often reports the state first,
 * and either is fine because neither changes anything. */
static struct ref_res perm_or(int wperm, int serr, int obj)
{
	struct ref_res res = res_of(serr, obj);

	if (wperm) {
		res.rc = wperm;
		res.alt = serr ? serr : REF_NO_ALT;
	}
	return res;
}

/* The same for a call that would succeed without changing anything (create
 * of an existing file, rename onto itself): then 0 is a safe alternative. */
static struct ref_res perm_or_nop(int wperm, int obj)
{
	struct ref_res res = res_of(0, obj);

	if (wperm) {
		res.rc = wperm;
		res.alt = 0;
	}
	return res;
}

static int new_obj(struct ref *r, uint32_t type, uint32_t mode, const struct fs_cred *c)
{
	struct ref_obj *o;

	if (r->nobjs == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->objs = xrealloc(r->objs, r->cap * sizeof(*r->objs));
	}
	o = &r->objs[r->nobjs];
	memset(o, 0, sizeof(*o));
	o->live = 1;
	o->type = type;
	o->perm = mode & 07777;
	o->nlink = 1;
	o->uid = c ? c->uid : 0;
	o->gid = c ? c->gid : 0;
	o->parent = -1;
	o->ino = unset_ino;
	r->nlive++;
	return r->nobjs++;
}

static void kill_obj(struct ref *r, int i)
{
	struct ref_obj *o = &r->objs[i];

	o->live = 0;
	o->nlink = 0;
	free(o->data);
	o->data = NULL;
	o->cap = 0;
	r->nlive--;
}

static void attach(struct ref *r, int dir, const char *name, int obj)
{
	struct ref_obj *d = &r->objs[dir];

	if (d->nents == d->ents_cap) {
		d->ents_cap = d->ents_cap ? d->ents_cap * 2 : 8;
		d->ents = xrealloc(d->ents, d->ents_cap * sizeof(*d->ents));
	}
	d->ents[d->nents].name = xstrdup(name);
	d->ents[d->nents].obj = obj;
	d->nents++;
	d->mtime_known = 0;
}

static void detach(struct ref *r, int dir, const char *name)
{
	struct ref_obj *d = &r->objs[dir];

	for (int i = 0; i < d->nents; i++) {
		if (strcmp(d->ents[i].name, name) == 0) {
			free(d->ents[i].name);
			d->ents[i] = d->ents[--d->nents];
			d->mtime_known = 0;
			return;
		}
	}
	fprintf(stderr, "model_ref: detach of missing name %s\n", name);
	abort();
}

void ref_init(struct ref *r, struct fs_ino root, const struct fs_attr *root_attr)
{
	struct fs_cred owner = {root_attr->uid, root_attr->gid, 0, {0}, 0};

	memset(r, 0, sizeof(*r));
	r->root = new_obj(r, S_IFDIR, root_attr->mode, &owner);
	r->objs[r->root].nlink = 2;
	r->objs[r->root].parent = r->root;
	r->objs[r->root].ino = root;
}

void ref_free(struct ref *r)
{
	for (int i = 0; i < r->nobjs; i++) {
		struct ref_obj *o = &r->objs[i];

		for (int j = 0; j < o->nents; j++)
			free(o->ents[j].name);
		free(o->ents);
		free(o->data);
		free(o->target);
	}
	free(r->objs);
	memset(r, 0, sizeof(*r));
}

int ref_find_ino(const struct ref *r, struct fs_ino ino)
{
	int dead = -1;

	for (int i = 0; i < r->nobjs; i++) {
		if (r->objs[i].ino.num != ino.num || r->objs[i].ino.gen != ino.gen)
			continue;
		if (r->objs[i].live)
			return i;
		dead = i;
	}
	return dead;
}

int ref_dir_find(const struct ref *r, int dir, const char *name)
{
	const struct ref_obj *d = &r->objs[dir];

	for (int i = 0; i < d->nents; i++)
		if (strcmp(d->ents[i].name, name) == 0)
			return d->ents[i].obj;
	return -1;
}

int ref_is_under(const struct ref *r, int obj, int dir)
{
	for (;;) {
		if (obj == dir)
			return 1;
		if (obj == r->root || r->objs[obj].type != S_IFDIR)
			return 0;
		obj = r->objs[obj].parent;
	}
}

void ref_attr(const struct ref *r, int obj, struct fs_attr *out)
{
	const struct ref_obj *o = &r->objs[obj];

	memset(out, 0, sizeof(*out));
	out->mode = o->type | o->perm;
	out->nlink = o->nlink;
	out->uid = o->uid;
	out->gid = o->gid;
	if (o->type == S_IFREG)
		out->size = o->size;
	else if (o->type == S_IFLNK)
		out->size = strlen(o->target);
	if (o->type == S_IFCHR || o->type == S_IFBLK) {
		out->rdev_major = o->rdev_major;
		out->rdev_minor = o->rdev_minor;
	}
	out->fileid = o->ino.num;
	out->gen = o->ino.gen;
	if (o->atime_known)
		out->atime = o->atime;
	if (o->mtime_known)
		out->mtime = o->mtime;
}

/* A name under which obj is linked, searching every live directory. */
static const char *some_name(const struct ref *r, int obj, int *dir)
{
	for (int d = 0; d < r->nobjs; d++) {
		const struct ref_obj *o = &r->objs[d];

		if (!o->live || o->type != S_IFDIR)
			continue;
		for (int i = 0; i < o->nents; i++) {
			if (o->ents[i].obj == obj) {
				*dir = d;
				return o->ents[i].name;
			}
		}
	}
	return NULL;
}

void ref_path(const struct ref *r, int obj, char *buf, size_t size)
{
	const char *names[32];
	int depth = 0;
	size_t o = 0;

	if (obj < 0 || obj >= r->nobjs || !r->objs[obj].live) {
		snprintf(buf, size, "(deleted)");
		return;
	}
	while (obj != r->root && depth < 32) {
		int dir;
		const char *name = some_name(r, obj, &dir);

		if (!name)
			break;
		names[depth++] = name;
		obj = dir;
	}
	buf[0] = '\0';
	if (depth == 0)
		snprintf(buf, size, "/");
	while (depth-- > 0 && o + 1 < size) {
		int n = snprintf(buf + o, size - o, "/%.24s%s", names[depth],
				 strlen(names[depth]) > 24 ? "..." : "");

		if (n < 0)
			break;
		o += (size_t)n;
	}
}

static int in_group(const struct fs_cred *c, uint32_t gid)
{
	if (c->gid == gid)
		return 1;
	for (uint32_t i = 0; i < c->ngroups && i < FS_MAX_GROUPS; i++)
		if (c->groups[i] == gid)
			return 1;
	return 0;
}

/* Root (or the library itself), or a member of gid: may keep S_ISGID on
 * a file of that group. */
static int may_keep_sgid(const struct fs_cred *c, uint32_t gid)
{
	return !c || c->uid == 0 || in_group(c, gid);
}

/* Linux's owner and group of a new object obj made by c in dir
 * (inode_init_owner, mkdir's mode mask): the caller's ids, or dir's group
 * when dir is setgid, where a new directory becomes setgid too and a
 * file's S_ISGID (with group execute) is dropped for a caller outside the
 * group; mkdir keeps only the permission and sticky bits. */
static void init_owner(struct ref *r, int obj, int dir, const struct fs_cred *c)
{
	struct ref_obj *o = &r->objs[obj];
	const struct ref_obj *d = &r->objs[dir];

	if (o->type == S_IFDIR)
		o->perm &= 0777 | S_ISVTX;
	if (!(d->perm & S_ISGID))
		return;
	o->gid = d->gid;
	if (o->type == S_IFDIR)
		o->perm |= S_ISGID;
	else if ((o->perm & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) &&
		 !may_keep_sgid(c, d->gid))
		o->perm &= ~(uint32_t)S_ISGID;
}

/* A write or a size change by anyone but root: S_ISUID goes from a
 * regular file, S_ISGID too when group execute is set or the writer is
 * not in the file's group (file_remove_privs). */
static void kill_priv(struct ref_obj *o, const struct fs_cred *c)
{
	if (!c || c->uid == 0 || o->type != S_IFREG)
		return;
	o->perm &= ~(uint32_t)S_ISUID;
	if ((o->perm & S_IXGRP) || !in_group(c, o->gid))
		o->perm &= ~(uint32_t)S_ISGID;
}

int ref_may(const struct ref *r, const struct fs_cred *c, int obj, int want)
{
	const struct ref_obj *o = &r->objs[obj];
	uint32_t bits;

	if (!c)
		return 1;
	if (c->uid == 0) {
		if ((want & 1) && o->type != S_IFDIR)
			return (o->perm & 0111) != 0;
		return 1;
	}
	if (c->uid == o->uid)
		bits = (o->perm >> 6) & 7;
	else if (in_group(c, o->gid))
		bits = (o->perm >> 3) & 7;
	else
		bits = o->perm & 7;
	return (bits & (uint32_t)want) == (uint32_t)want;
}

/* In a sticky directory only root and the owner of the directory or of the
 * entry's object may remove or replace the entry (Linux, and the library). */
static int ref_sticky_ok(const struct ref *r, const struct fs_cred *c, int dir, int obj)
{
	const struct ref_obj *d = &r->objs[dir];

	if (!c || c->uid == 0 || !(d->perm & S_ISVTX))
		return 1;
	return c->uid == d->uid || c->uid == r->objs[obj].uid;
}

static int check_name(const char *name, int dots_ok)
{
	size_t len = strlen(name);

	if (len == 0 || strchr(name, '/'))
		return -EINVAL;
	if (len > FS_NAME_MAX)
		return -ENAMETOOLONG;
	if (!dots_ok && (strcmp(name, ".") == 0 || strcmp(name, "..") == 0))
		return -EINVAL;
	return 0;
}

static int live_arg(const struct ref *r, struct fs_ino ino, int *obj)
{
	int i = ref_find_ino(r, ino);

	if (i < 0 || !r->objs[i].live)
		return -ESTALE;
	*obj = i;
	return 0;
}

static int dir_arg(const struct ref *r, struct fs_ino ino, int *dir)
{
	int rc = live_arg(r, ino, dir);

	if (rc)
		return rc;
	return r->objs[*dir].type == S_IFDIR ? 0 : -ENOTDIR;
}

/* Search permission is needed to find the name at all; a missing write
 * permission comes back in *wperm for perm_or(). */
static int dir_perm(const struct ref *r, const struct fs_cred *c, int dir, int *wperm)
{
	if (!ref_may(r, c, dir, 1))
		return -EACCES;
	*wperm = ref_may(r, c, dir, 2) ? 0 : -EACCES;
	return 0;
}

/* The checks every name-creating or name-removing call starts with. */
static int dir_name_perm(const struct ref *r, const struct fs_cred *c, struct fs_ino ino,
			 const char *name, int *dir, int *wperm)
{
	int rc = dir_arg(r, ino, dir);

	if (!rc)
		rc = check_name(name, 0);
	if (!rc)
		rc = dir_perm(r, c, *dir, wperm);
	return rc;
}

struct ref_res ref_getattr(struct ref *r, struct fs_ino ino)
{
	int obj = -1;
	int rc = live_arg(r, ino, &obj);

	return res_of(rc, rc ? -1 : obj);
}

struct ref_res ref_commit(struct ref *r, struct fs_ino ino)
{
	return ref_getattr(r, ino);
}

static void set_size(struct ref_obj *o, uint64_t size)
{
	if (size > o->cap) {
		o->data = xrealloc(o->data, size);
		o->cap = size;
	}
	if (size > o->size)
		memset(o->data + o->size, 0, size - o->size);
	o->size = size;
}

struct ref_res ref_setattr(struct ref *r, const struct fs_cred *c, struct fs_ino ino,
			   const struct fs_setattr *sa, int commit)
{
	struct ref_obj *o;
	int obj = -1;
	int rc = live_arg(r, ino, &obj);

	if (rc)
		return res_of(rc, -1);
	o = &r->objs[obj];
	if (sa->valid & FS_SET_SIZE) {
		if (o->type == S_IFDIR)
			return res_of(-EISDIR, obj);
		if (o->type != S_IFREG)
			return res_of(-EINVAL, obj);
	}
	if (c && c->uid != 0) {
		int owner = c->uid == o->uid;

		/* POSIX with _POSIX_CHOWN_RESTRICTED: only root gives a file
		 * away; its owner may change the group to one of its own.
		 * Setting the same value by a non-owner changes nothing, and
		 * whether it is refused is not said (Linux refuses). */
		if ((sa->valid & FS_SET_UID) && sa->uid != o->uid)
			return res_of(-EPERM, obj);
		if ((sa->valid & FS_SET_GID) && sa->gid != o->gid &&
		    (!owner || !in_group(c, sa->gid)))
			return res_of(-EPERM, obj);
		if ((sa->valid & (FS_SET_UID | FS_SET_GID)) && !owner &&
		    !(sa->valid & ~(uint32_t)(FS_SET_UID | FS_SET_GID))) {
			struct ref_res res = res_of(-EPERM, obj);

			res.alt = 0;
			return res;
		}
		if ((sa->valid & FS_SET_MODE) && !owner)
			return res_of(-EPERM, obj);
		if ((sa->valid & (FS_SET_ATIME | FS_SET_MTIME)) && !owner)
			return res_of(-EPERM, obj);
		if ((sa->valid & (FS_SET_ATIME_NOW | FS_SET_MTIME_NOW)) && !owner &&
		    !ref_may(r, c, obj, 2))
			return res_of(-EACCES, obj);
		if ((sa->valid & FS_SET_SIZE) && !ref_may(r, c, obj, 2))
			return res_of(-EACCES, obj);
	}
	if (!commit)
		return res_of(0, obj);
	if (sa->valid & FS_SET_SIZE)
		kill_priv(o, c); /* as truncate(2), whatever the size */
	if ((sa->valid & (FS_SET_UID | FS_SET_GID)) && o->type != S_IFDIR) {
		/* A new owner or group takes the set-id bits: S_ISUID always,
		 * S_ISGID with group execute or for one who may not keep it;
		 * with a mode in the same call, from that mode (knfsd). */
		if (sa->valid & FS_SET_MODE) {
			o->perm = sa->mode & 07777 & ~(uint32_t)S_ISUID;
			if (o->perm & S_IXGRP)
				o->perm &= ~(uint32_t)S_ISGID;
		} else {
			o->perm &= ~(uint32_t)S_ISUID;
			if ((o->perm & S_IXGRP) || !may_keep_sgid(c, o->gid))
				o->perm &= ~(uint32_t)S_ISGID;
		}
	} else if (sa->valid & FS_SET_MODE) {
		o->perm = sa->mode & 07777;
	}
	if (sa->valid & FS_SET_UID)
		o->uid = sa->uid;
	if (sa->valid & FS_SET_GID)
		o->gid = sa->gid;
	/* chmod by one outside the file's group drops S_ISGID, silently. */
	if ((sa->valid & FS_SET_MODE) && !may_keep_sgid(c, o->gid))
		o->perm &= ~(uint32_t)S_ISGID;
	if (sa->valid & FS_SET_SIZE) {
		set_size(o, sa->size);
		o->mtime_known = 0;
	}
	if (sa->valid & FS_SET_ATIME) {
		o->atime = sa->atime;
		o->atime_known = 1;
	}
	if (sa->valid & FS_SET_MTIME) {
		o->mtime = sa->mtime;
		o->mtime_known = 1;
	}
	if (sa->valid & FS_SET_ATIME_NOW)
		o->atime_known = 0;
	if (sa->valid & FS_SET_MTIME_NOW)
		o->mtime_known = 0;
	o->excl_unsure = 1;
	return res_of(0, obj);
}

struct ref_res ref_access(struct ref *r, const struct fs_cred *c, struct fs_ino ino, uint32_t want,
			  uint32_t *granted)
{
	int obj = -1;
	int rc = live_arg(r, ino, &obj);
	uint32_t g = 0;

	*granted = 0;
	if (rc)
		return res_of(rc, -1);
	if (ref_may(r, c, obj, 4))
		g |= FS_ACCESS_READ;
	if (ref_may(r, c, obj, 2))
		g |= FS_ACCESS_MODIFY | FS_ACCESS_EXTEND;
	if (r->objs[obj].type == S_IFDIR) {
		if (ref_may(r, c, obj, 1))
			g |= FS_ACCESS_LOOKUP;
	} else if (ref_may(r, c, obj, 1)) {
		g |= FS_ACCESS_EXECUTE;
	}
	*granted = g & want;
	return res_of(0, obj);
}

struct ref_res ref_lookup(struct ref *r, const struct fs_cred *c, struct fs_ino dir,
			  const char *name)
{
	struct ref_res res;
	int d = -1;
	int found;
	int rc = dir_arg(r, dir, &d);

	if (!rc)
		rc = check_name(name, 1);
	if (!rc && !ref_may(r, c, d, 1))
		rc = -EACCES;
	if (rc)
		return res_of(rc, -1);
	if (strcmp(name, ".") == 0)
		found = d;
	else if (strcmp(name, "..") == 0)
		found = r->objs[d].parent;
	else
		found = ref_dir_find(r, d, name);
	res = res_of(found < 0 ? -ENOENT : 0, found);
	/* uid 0 "needs some x bit for execute": whether that covers searching
	 * a directory is not said; Linux lets root search anything. */
	if (c && c->uid == 0 && !(r->objs[d].perm & 0111))
		res.alt = -EACCES;
	return res;
}

struct ref_res ref_create(struct ref *r, const struct fs_cred *c, struct fs_ino dir,
			  const char *name, uint32_t mode, enum fs_create_how how, uint64_t verf,
			  int commit)
{
	struct ref_res res;
	int d = -1;
	int wperm = 0;
	int child;
	int obj;
	int rc = dir_name_perm(r, c, dir, name, &d, &wperm);

	if (rc)
		return res_of(rc, -1);
	child = ref_dir_find(r, d, name);
	if (child >= 0) {
		const struct ref_obj *co = &r->objs[child];
		int serr = -EEXIST;
		int unsure = 0;

		if (co->type == S_IFREG && how == FS_CREATE_UNCHECKED)
			serr = 0;
		if (co->type == S_IFREG && how == FS_CREATE_EXCLUSIVE && co->excl &&
		    co->verf == verf) {
			serr = 0;
			unsure = co->excl_unsure;
		}
		res = serr ? perm_or(wperm, serr, child) : perm_or_nop(wperm, child);
		if (!wperm && unsure)
			res.alt = -EEXIST;
		return res;
	}
	if (wperm)
		return res_of(wperm, -1);
	if (!commit)
		return res_of(0, -1);
	obj = new_obj(r, S_IFREG, mode, c);
	init_owner(r, obj, d, c);
	if (how == FS_CREATE_EXCLUSIVE) {
		r->objs[obj].excl = 1;
		r->objs[obj].verf = verf;
	}
	attach(r, d, name, obj);
	return res_of(0, obj);
}

struct ref_res ref_mkdir(struct ref *r, const struct fs_cred *c, struct fs_ino dir,
			 const char *name, uint32_t mode, int commit)
{
	int d = -1;
	int wperm = 0;
	int child;
	int obj;
	int rc = dir_name_perm(r, c, dir, name, &d, &wperm);

	if (rc)
		return res_of(rc, -1);
	child = ref_dir_find(r, d, name);
	if (child >= 0)
		return perm_or(wperm, -EEXIST, child);
	if (wperm)
		return res_of(wperm, -1);
	if (!commit)
		return res_of(0, -1);
	obj = new_obj(r, S_IFDIR, mode, c);
	init_owner(r, obj, d, c);
	r->objs[obj].nlink = 2;
	r->objs[obj].parent = d;
	r->objs[d].nlink++;
	attach(r, d, name, obj);
	return res_of(0, obj);
}

struct ref_res ref_symlink(struct ref *r, const struct fs_cred *c, struct fs_ino dir,
			   const char *name, const char *target, uint32_t mode, int commit)
{
	int d = -1;
	int wperm = 0;
	int child;
	int obj;
	int rc = dir_arg(r, dir, &d);

	if (!rc)
		rc = check_name(name, 0);
	if (!rc && target[0] == '\0')
		rc = -EINVAL;
	if (!rc && strlen(target) > FS_SYMLINK_MAX)
		rc = -ENAMETOOLONG;
	if (!rc)
		rc = dir_perm(r, c, d, &wperm);
	if (rc)
		return res_of(rc, -1);
	child = ref_dir_find(r, d, name);
	if (child >= 0)
		return perm_or(wperm, -EEXIST, child);
	if (wperm)
		return res_of(wperm, -1);
	if (!commit)
		return res_of(0, -1);
	obj = new_obj(r, S_IFLNK, 0777, c); /* symlinks are always 0777, whatever is asked */
	init_owner(r, obj, d, c);
	r->objs[obj].target = xstrdup(target);
	attach(r, d, name, obj);
	return res_of(0, obj);
}

struct ref_res ref_mknod(struct ref *r, const struct fs_cred *c, struct fs_ino dir,
			 const char *name, uint32_t mode, uint32_t major, uint32_t minor,
			 int commit)
{
	uint32_t type = mode & S_IFMT;
	int d = -1;
	int wperm = 0;
	int child;
	int obj;
	int rc = dir_arg(r, dir, &d);

	if (!rc)
		rc = check_name(name, 0);
	if (!rc && type != S_IFCHR && type != S_IFBLK && type != S_IFIFO && type != S_IFSOCK)
		rc = -EINVAL;
	if (!rc)
		rc = dir_perm(r, c, d, &wperm);
	if (rc)
		return res_of(rc, -1);
	child = ref_dir_find(r, d, name);
	if (child >= 0)
		return perm_or(wperm, -EEXIST, child);
	if (wperm)
		return res_of(wperm, -1);
	if ((type == S_IFCHR || type == S_IFBLK) && c && c->uid != 0)
		return res_of(-EPERM, -1); /* devices are root's to make */
	if (!commit)
		return res_of(0, -1);
	obj = new_obj(r, type, mode, c);
	init_owner(r, obj, d, c);
	if (type == S_IFCHR || type == S_IFBLK) {
		r->objs[obj].rdev_major = major;
		r->objs[obj].rdev_minor = minor;
	}
	attach(r, d, name, obj);
	return res_of(0, obj);
}

/* Drop the entry dir/name for a non-directory and its link. */
static void unlink_file(struct ref *r, int dir, const char *name, int obj)
{
	detach(r, dir, name);
	if (--r->objs[obj].nlink == 0)
		kill_obj(r, obj);
}

/* Drop the entry dir/name for an empty directory, which then is gone. */
static void unlink_dir(struct ref *r, int dir, const char *name, int obj)
{
	detach(r, dir, name);
	r->objs[dir].nlink--;
	kill_obj(r, obj);
}

struct ref_res ref_remove(struct ref *r, const struct fs_cred *c, struct fs_ino dir,
			  const char *name, int commit)
{
	int d = -1;
	int wperm = 0;
	int child;
	int serr = 0;
	int rc = dir_name_perm(r, c, dir, name, &d, &wperm);

	if (rc)
		return res_of(rc, -1);
	child = ref_dir_find(r, d, name);
	if (child < 0)
		return perm_or(wperm, -ENOENT, child);
	if (r->objs[child].type == S_IFDIR)
		serr = -EISDIR;
	if (wperm)
		return perm_or(wperm, serr, child);
	if (serr || !ref_sticky_ok(r, c, d, child))
		return first_of(serr, ref_sticky_ok(r, c, d, child) ? 0 : -EPERM, 0, child);
	if (commit)
		unlink_file(r, d, name, child);
	return res_of(0, child);
}

struct ref_res ref_rmdir(struct ref *r, const struct fs_cred *c, struct fs_ino dir,
			 const char *name, int commit)
{
	int d = -1;
	int wperm = 0;
	int child;
	int serr = 0;
	int rc = dir_name_perm(r, c, dir, name, &d, &wperm);

	if (rc)
		return res_of(rc, -1);
	child = ref_dir_find(r, d, name);
	if (child < 0)
		return perm_or(wperm, -ENOENT, child);
	if (r->objs[child].type != S_IFDIR)
		serr = -ENOTDIR;
	else if (r->objs[child].nents > 0)
		serr = -ENOTEMPTY;
	if (wperm)
		return perm_or(wperm, serr, child);
	if (serr || !ref_sticky_ok(r, c, d, child))
		return first_of(serr, ref_sticky_ok(r, c, d, child) ? 0 : -EPERM, 0, child);
	if (commit)
		unlink_dir(r, d, name, child);
	return res_of(0, child);
}

/* Why a rename of src (in fd) over tgt (may be -1) in td must fail: the
 * subtree rule, the target's type, the sticky bit, in no promised order. */
static struct ref_res rename_state(const struct ref *r, const struct fs_cred *c, int fd, int src,
				   int td, int tgt)
{
	int sdir = r->objs[src].type == S_IFDIR;
	int terr = 0, serr = 0;

	if (tgt >= 0) {
		int tdir = r->objs[tgt].type == S_IFDIR;

		if (sdir && !tdir)
			terr = -ENOTDIR;
		else if (!sdir && tdir)
			terr = -EISDIR;
		else if (tdir && r->objs[tgt].nents > 0)
			terr = -ENOTEMPTY;
	}
	/* A loop is refused before the target's type is looked at (Linux's
	 * lock_rename trap): a directory into itself or below, -EINVAL; over
	 * the source's directory or one above it, -ENOTEMPTY. */
	if (sdir && ref_is_under(r, td, src))
		return res_of(-EINVAL, src);
	if (tgt >= 0 && r->objs[tgt].type == S_IFDIR && ref_is_under(r, fd, tgt))
		return res_of(-ENOTEMPTY, src);
	if (!ref_sticky_ok(r, c, fd, src) || (tgt >= 0 && !ref_sticky_ok(r, c, td, tgt)))
		serr = -EPERM;
	return first_of(terr, serr, 0, src);
}

struct ref_res ref_rename(struct ref *r, const struct fs_cred *c, struct fs_ino from_dir,
			  const char *from_name, struct fs_ino to_dir, const char *to_name,
			  int commit)
{
	struct ref_res res;
	int fd = -1, td = -1;
	int fw = 0, tw = 0;
	int src, tgt;
	int rc = dir_arg(r, from_dir, &fd);

	if (rc)
		return res_of(rc, -1);
	rc = dir_arg(r, to_dir, &td);
	if (rc) {
		/* The from directory's permission may be checked first. */
		res = res_of(rc, -1);
		if (!ref_may(r, c, fd, 3))
			res.alt = -EACCES;
		return res;
	}
	rc = check_name(from_name, 0);
	if (!rc)
		rc = check_name(to_name, 0);
	if (!rc)
		rc = dir_perm(r, c, fd, &fw);
	if (!rc)
		rc = dir_perm(r, c, td, &tw);
	if (rc)
		return res_of(rc, -1);
	src = ref_dir_find(r, fd, from_name);
	if (src < 0)
		return perm_or(fw ? fw : tw, -ENOENT, -1);
	tgt = ref_dir_find(r, td, to_name);
	if (tgt == src)
		return perm_or_nop(fw ? fw : tw, src); /* the same file: nothing to do */
	res = rename_state(r, c, fd, src, td, tgt);
	if ((fw || tw) && res.rc) {
		/* Linux checks one directory at a time: its permission, then
		 * the sticky bit and the type of the name in it. */
		res.alt2 = res.alt;
		res.alt = res.rc;
		res.rc = -EACCES;
		return res;
	}
	if (fw || tw)
		return res_of(-EACCES, src);
	if (res.rc)
		return res;
	if (!commit)
		return res_of(0, src);
	if (tgt >= 0) {
		if (r->objs[tgt].type == S_IFDIR)
			unlink_dir(r, td, to_name, tgt);
		else
			unlink_file(r, td, to_name, tgt);
	}
	detach(r, fd, from_name);
	attach(r, td, to_name, src);
	if (r->objs[src].type == S_IFDIR) {
		r->objs[fd].nlink--;
		r->objs[td].nlink++;
		r->objs[src].parent = td;
	}
	return res_of(0, src);
}

struct ref_res ref_link(struct ref *r, const struct fs_cred *c, struct fs_ino ino,
			struct fs_ino dir, const char *name, int commit)
{
	struct ref_res res;
	int obj = -1, d = -1;
	int wperm = 0;
	int child;
	int rc = live_arg(r, ino, &obj);

	if (!rc)
		rc = dir_arg(r, dir, &d);
	if (!rc)
		rc = check_name(name, 0);
	if (rc)
		return res_of(rc, -1);
	child = ref_dir_find(r, d, name);
	if (r->objs[obj].type == S_IFDIR) {
		/* Which comes first is not said; Linux checks the new name (search
		 * permission, existence, write permission) before the type. */
		res = res_of(-EPERM, obj);
		if (!ref_may(r, c, d, 1))
			res.alt = -EACCES;
		else if (child >= 0)
			res.alt = -EEXIST;
		else if (!ref_may(r, c, d, 2))
			res.alt = -EACCES;
		return res;
	}
	rc = dir_perm(r, c, d, &wperm);
	if (rc)
		return res_of(rc, -1);
	if (child >= 0)
		return perm_or(wperm, -EEXIST, child);
	if (wperm)
		return res_of(wperm, -1);
	if (commit) {
		r->objs[obj].nlink++;
		attach(r, d, name, obj);
	}
	return res_of(0, obj);
}

struct ref_res ref_readlink(struct ref *r, struct fs_ino ino)
{
	int obj = -1;
	int rc = live_arg(r, ino, &obj);

	if (rc)
		return res_of(rc, -1);
	if (r->objs[obj].type != S_IFLNK)
		return res_of(-EINVAL, obj);
	r->objs[obj].atime_known = 0;
	return res_of(0, obj);
}

struct ref_res ref_readdir(struct ref *r, const struct fs_cred *c, struct fs_ino dir)
{
	int d = -1;
	int rc = dir_arg(r, dir, &d);

	if (rc)
		return res_of(rc, -1);
	if (!ref_may(r, c, d, 4))
		return res_of(-EACCES, d);
	r->objs[d].atime_known = 0;
	return res_of(0, d);
}

/* read and write share their checks: the type, then the permission. */
static int io_check(struct ref *r, const struct fs_cred *c, struct fs_ino ino, int want, int *obj)
{
	int rc = live_arg(r, ino, obj);

	if (rc)
		return rc;
	if (r->objs[*obj].type == S_IFDIR)
		return -EISDIR;
	if (r->objs[*obj].type != S_IFREG)
		return -EINVAL;
	if (!ref_may(r, c, *obj, want))
		return -EACCES;
	return 0;
}

struct ref_res ref_read(struct ref *r, const struct fs_cred *c, struct fs_ino ino, int commit)
{
	int obj = -1;
	int rc = io_check(r, c, ino, 4, &obj);

	if (!rc && commit)
		r->objs[obj].atime_known = 0;
	return res_of(rc, obj);
}

struct ref_res ref_write(struct ref *r, const struct fs_cred *c, struct fs_ino ino, uint64_t offset,
			 size_t len, const void *buf, int commit)
{
	struct ref_obj *o;
	int obj = -1;
	int rc = io_check(r, c, ino, 2, &obj);

	if (rc || !commit)
		return res_of(rc, obj);
	o = &r->objs[obj];
	o->mtime_known = 0;
	o->excl_unsure = 1;
	if (len == 0)
		return res_of(0, obj);
	kill_priv(o, c);
	if (offset + len > o->size)
		set_size(o, offset + len);
	memcpy(o->data + offset, buf, len);
	return res_of(0, obj);
}
