/* Attributes and permissions: getattr, setattr (chmod, chown, truncate,
 * times), and the owner/group/other access check with supplementary groups
 * that every name and data operation goes through. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/internal.h"

static int in_group(const struct fs_cred *cred, uint32_t gid)
{
	if (cred->gid == gid)
		return 1;
	for (uint32_t i = 0; i < cred->ngroups && i < FS_MAX_GROUPS; i++)
		if (cred->groups[i] == gid)
			return 1;
	return 0;
}

int data_perm_check(const struct fs_cred *cred, const struct od_inode *ino, int mask)
{
	if (cred && (cred->flags & FS_CRED_OWNER_OVERRIDE) && cred->uid == ino->uid)
		return 0;
	return perm_check(cred, ino, mask);
}

int perm_check(const struct fs_cred *cred, const struct od_inode *ino, int mask)
{
	uint32_t bits;

	if (!cred)
		return 0;
	if (cred->uid == 0) {
		/* root: read and write always; execute if anyone may, and
		 * search of directories always. */
		if (!(mask & 1) || S_ISDIR(ino->mode) || (ino->mode & 0111))
			return 0;
		return -EACCES;
	}
	if (cred->uid == ino->uid)
		bits = (ino->mode >> 6) & 7;
	else if (in_group(cred, ino->gid))
		bits = (ino->mode >> 3) & 7;
	else
		bits = ino->mode & 7;
	return ((uint32_t)mask & ~bits) ? -EACCES : 0;
}

/* In a sticky directory only the owner of the entry or of the directory
 * (or root) may remove or rename it. */
int dir_sticky_ok(const struct fs_cred *cred, const struct od_inode *dir,
		  const struct od_inode *victim)
{
	if (!cred || !(dir->mode & S_ISVTX) || cred->uid == 0)
		return 1;
	return cred->uid == dir->uid || cred->uid == victim->uid;
}

int fs_getattr(struct fs_volume *v, struct fs_ino id, struct fs_attr *out)
{
	struct iref r;
	int ret;

	vol_lock(v);
	ret = ino_get(v, id, &r);
	if (ret == 0)
		ino_to_attr(&r.ino, out);
	vol_unlock(v);
	return ret;
}

static int setattr_allowed(const struct fs_cred *cred, const struct od_inode *ino,
			   const struct fs_setattr *sa)
{
	int owner = !cred || cred->uid == 0 || cred->uid == ino->uid;

	if ((sa->valid & FS_SET_MODE) && !owner)
		return -EPERM;
	if (cred && cred->uid != 0) {
		/* chown: only root; chgrp: the owner, to a group it is in. */
		if ((sa->valid & FS_SET_UID) && sa->uid != ino->uid)
			return -EPERM;
		if ((sa->valid & FS_SET_GID) && sa->gid != ino->gid &&
		    (!owner || !in_group(cred, sa->gid)))
			return -EPERM;
	}
	if (sa->valid & (FS_SET_ATIME | FS_SET_MTIME)) {
		if (!owner)
			return -EPERM;
	} else if (sa->valid & (FS_SET_ATIME_NOW | FS_SET_MTIME_NOW)) {
		if (!owner && perm_check(cred, ino, 2) < 0)
			return -EACCES;
	}
	if (sa->valid & FS_SET_SIZE) {
		if (S_ISDIR(ino->mode))
			return -EISDIR;
		if (!S_ISREG(ino->mode))
			return -EINVAL;
		if (data_perm_check(cred, ino, 2) < 0)
			return -EACCES;
	}
	return 0;
}

int fs_setattr(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino id,
	       const struct fs_setattr *sa, struct fs_attr *out)
{
	struct iref r;
	int ret;

	if (v->rdonly)
		return -EROFS;
	vol_lock(v);
	ret = ino_get(v, id, &r);
	if (ret < 0)
		goto out;
	ret = setattr_allowed(cred, &r.ino, sa);
	if (ret < 0)
		goto out;
	if ((sa->valid & FS_SET_SIZE) && sa->size > (1ull << 44)) {
		ret = -EFBIG;
		goto out;
	}
	if ((sa->valid & FS_SET_SIZE) && sa->size != r.ino.size) {
		ret = file_truncate(v, &r, sa->size);
		if (ret < 0) {
			ino_write(v, &r); /* inline data may have moved out */
			goto out;
		}
		ino_touch(&r.ino, 0, 1, 0);
	}
	if (sa->valid & FS_SET_MODE)
		r.ino.mode = (r.ino.mode & S_IFMT) | (sa->mode & 07777);
	if (sa->valid & FS_SET_UID)
		r.ino.uid = sa->uid;
	if (sa->valid & FS_SET_GID)
		r.ino.gid = sa->gid;
	if (sa->valid & FS_SET_ATIME_NOW)
		ino_touch(&r.ino, 1, 0, 0);
	if (sa->valid & FS_SET_MTIME_NOW)
		ino_touch(&r.ino, 0, 1, 0);
	if (sa->valid & FS_SET_ATIME) {
		r.ino.atime = sa->atime.tv_sec;
		r.ino.atime_ns = (uint32_t)sa->atime.tv_nsec;
	}
	if (sa->valid & FS_SET_MTIME) {
		r.ino.mtime = sa->mtime.tv_sec;
		r.ino.mtime_ns = (uint32_t)sa->mtime.tv_nsec;
	}
	ino_touch(&r.ino, 0, 0, 1);
	ret = ino_write(v, &r);
	if (ret == 0 && out)
		ino_to_attr(&r.ino, out);
out:
	vol_unlock(v);
	return ret;
}

int fs_access(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino id, uint32_t want,
	      uint32_t *granted)
{
	struct iref r;
	uint32_t g = 0;
	int ret;

	vol_lock(v);
	ret = ino_get(v, id, &r);
	vol_unlock(v);
	if (ret < 0)
		return ret;
	if (perm_check(cred, &r.ino, 4) == 0)
		g |= FS_ACCESS_READ;
	if (perm_check(cred, &r.ino, 2) == 0 && !v->rdonly)
		g |= FS_ACCESS_MODIFY | FS_ACCESS_EXTEND |
		     (S_ISDIR(r.ino.mode) ? FS_ACCESS_DELETE : 0);
	if (perm_check(cred, &r.ino, 1) == 0)
		g |= S_ISDIR(r.ino.mode) ? FS_ACCESS_LOOKUP : FS_ACCESS_EXECUTE;
	*granted = g & want;
	return 0;
}
