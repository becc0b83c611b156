/* Attributes and permissions: getattr, setattr (chmod, chown, truncate,
 * times), the owner/group/other access check with supplementary groups
 * that every name and data operation goes through, and the set-id rules
 * of Linux: the owner and group of a new object (setgid directories), and
 * the set-id bits a write, a size change, a chown or a chmod takes away. */
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

/* Root, or a member of group gid: may keep S_ISGID on a file of gid
 * (Linux: in_group_or_capable with CAP_FSETID). */
static int may_keep_sgid(const struct fs_cred *cred, uint32_t gid)
{
	return !cred || cred->uid == 0 || in_group(cred, gid);
}

void attr_init_owner(const struct fs_cred *cred, const struct od_inode *dir, struct od_inode *ino)
{
	ino->uid = cred ? cred->uid : 0;
	ino->gid = cred ? cred->gid : 0;
	if (S_ISDIR(ino->mode))
		ino->mode &= S_IFMT | 0777 | S_ISVTX; /* mkdir keeps no set-id bit asked for */
	if (!(dir->mode & S_ISGID))
		return;
	ino->gid = dir->gid;
	if (S_ISDIR(ino->mode))
		ino->mode |= S_ISGID;
	else if ((ino->mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) &&
		 !may_keep_sgid(cred, dir->gid))
		ino->mode &= ~(uint32_t)S_ISGID;
}

void attr_kill_priv(const struct fs_cred *cred, struct od_inode *ino)
{
	if (!cred || cred->uid == 0 || !S_ISREG(ino->mode))
		return;
	ino->mode &= ~(uint32_t)S_ISUID;
	if ((ino->mode & S_IXGRP) || !in_group(cred, ino->gid))
		ino->mode &= ~(uint32_t)S_ISGID;
}

/* The mode after a SETATTR that changes the owner or group of a
 * non-directory (whoever asks, root included): S_ISUID goes, and S_ISGID
 * where group execute is set or the caller may not keep it; with a new
 * mode in the same call, the bits go from that mode instead (knfsd's
 * nfsd_sanitize_attrs). */
static uint32_t chown_mode(const struct fs_cred *cred, const struct od_inode *ino,
			   const struct fs_setattr *sa)
{
	uint32_t mode = ino->mode;

	if (sa->valid & FS_SET_MODE) {
		mode = (mode & S_IFMT) | (sa->mode & 07777 & ~(uint32_t)S_ISUID);
		if (mode & S_IXGRP)
			mode &= ~(uint32_t)S_ISGID;
		return mode;
	}
	mode &= ~(uint32_t)S_ISUID;
	if ((mode & S_IXGRP) || !may_keep_sgid(cred, ino->gid))
		mode &= ~(uint32_t)S_ISGID;
	return mode;
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
		vol_attr(v, &r.ino, out);
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
	/* A cut ends the file's reservation (fs/prealloc.c); a size set
	 * to what it is, or grown, keeps it. */
	if ((sa->valid & FS_SET_SIZE) && S_ISREG(r.ino.mode) && sa->size < dalloc_size(v, &r))
		prealloc_drop(v, r.ino.stable);
	if ((sa->valid & FS_SET_SIZE) && S_ISREG(r.ino.mode) && dalloc_has(v, r.ino.stable)) {
		/* A file with buffered data (fs/dalloc.c): cut to 0, the
		 * buffer goes; grown, the buffer's size grows; cut part way,
		 * the buffer is placed and the file cut on disk below. */
		uint64_t seen = dalloc_size(v, &r);
		if (sa->size == 0) {
			dalloc_drop(v, r.ino.stable);
		} else if (sa->size >= seen) {
			ret = dalloc_extend(v, r.ino.stable, sa->size);
			if (ret == 0 && sa->size != seen)
				ino_touch(&r.ino, 0, 1, 0);
			if (ret < 0)
				goto out;
		} else {
			ret = dalloc_place(v, r.ino.stable);
			if (ino_get(v, id, &r) < 0 && ret == 0)
				ret = -EIO;
			if (ret < 0)
				goto out;
		}
		if (sa->size == 0 && r.ino.size == 0 && seen != 0)
			ino_touch(&r.ino, 0, 1, 0);
	}
	if ((sa->valid & FS_SET_SIZE) && sa->size != dalloc_size(v, &r)) {
		ret = file_truncate(v, &r, sa->size);
		if (ret < 0) {
			ino_write(v, &r); /* inline data may have moved out */
			goto out;
		}
		ino_touch(&r.ino, 0, 1, 0);
	}
	if (sa->valid & FS_SET_SIZE)
		attr_kill_priv(cred, &r.ino); /* as truncate(2), whatever the size */
	/* (A non-owner's chown to the values the file has is let through as
	 * a no-op, where Linux refuses it: it takes no bits either.) */
	if ((sa->valid & (FS_SET_UID | FS_SET_GID)) && !S_ISDIR(r.ino.mode) &&
	    (!cred || cred->uid == 0 || cred->uid == r.ino.uid))
		r.ino.mode = chown_mode(cred, &r.ino, sa);
	else if (sa->valid & FS_SET_MODE)
		r.ino.mode = (r.ino.mode & S_IFMT) | (sa->mode & 07777);
	if (sa->valid & FS_SET_UID)
		r.ino.uid = sa->uid;
	if (sa->valid & FS_SET_GID)
		r.ino.gid = sa->gid;
	/* chmod by one who is not in the file's group: S_ISGID is dropped,
	 * without an error (Linux's setattr_copy). */
	if ((sa->valid & FS_SET_MODE) && !may_keep_sgid(cred, r.ino.gid))
		r.ino.mode &= ~(uint32_t)S_ISGID;
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
		vol_attr(v, &r.ino, out);
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
