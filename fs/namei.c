/* Name operations: lookup, create, mkdir, symlink, mknod, link, remove,
 * rmdir, rename, readlink. New inodes are embedded in the entry of their
 * first link in the chunk chosen for them; every entry is placed in the
 * chunk of the inode it names (a directory part there if needed), and an
 * inode whose embedding entry goes away while links remain moves to an
 * inode-area slot of the same chunk, keeping its stable number. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/internal.h"
#include "fs/name_table.h"

#define FS_LINK_MAX 65000u

int name_check(const char *name, size_t *len)
{
	size_t n;

	if (!name)
		return -EINVAL;
	n = strnlen(name, FS_NAME_MAX + 1);
	if (n == 0)
		return -EINVAL;
	if (n > FS_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', n))
		return -EINVAL;
	if ((n == 1 && name[0] == '.') || (n == 2 && name[0] == '.' && name[1] == '.'))
		return -EINVAL;
	*len = n;
	return 0;
}

/* The directory an operation works in: it must exist and be a directory,
 * and cred must be allowed mask on it. */
static int get_dir(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino id, int mask,
		   struct iref *dir)
{
	int ret = ino_get(v, id, dir);

	if (ret < 0)
		return ret;
	if (!S_ISDIR(dir->ino.mode))
		return -ENOTDIR;
	return perm_check(cred, &dir->ino, mask);
}

static void fill_out(struct fs_volume *v, const struct iref *r, struct fs_ino *out,
		     struct fs_attr *attr)
{
	if (out) {
		out->num = r->ino.stable;
		out->gen = r->ino.generation;
	}
	if (attr)
		vol_attr(v, &r->ino, attr);
}

/* The inode an entry names, at its current location. */
static int entry_inode(struct fs_volume *v, const struct dirpos *pos, struct iref *r)
{
	int ret = ino_get_stable(v, pos->de.stable, r);

	if (ret == -ESTALE)
		return -EUCLEAN; /* an entry naming a free number: damage */
	return ret;
}

int fs_lookup(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino dir_id,
	      const char *name, struct fs_ino *out, struct fs_attr *attr)
{
	struct iref dir, r;
	struct dirpos pos;
	size_t len;
	int ret;

	vol_lock(v);
	ret = get_dir(v, cred, dir_id, 1, &dir);
	if (ret < 0)
		goto out;
	if (name && strcmp(name, ".") == 0) {
		r = dir;
	} else if (name && strcmp(name, "..") == 0) {
		ret = ino_get_stable(v, dir.ino.parent, &r);
	} else if ((ret = name_check(name, &len)) == 0) {
		ret = dir_find(v, &dir, name, len, &pos);
		if (ret == 0)
			ret = entry_inode(v, &pos, &r);
	}
	if (ret == 0)
		fill_out(v, &r, out, attr);
out:
	vol_unlock(v);
	return ret;
}

/* Which chunk a new inode goes to: a file (or symlink, device) to its
 * directory's chunk while that has room, names of large, written-once
 * files to large-file chunks; a directory near the top of the tree, or
 * whose parent's chunk is crowded, to the least loaded chunk (small-file
 * chunks first, then general ones), else to its parent's chunk. */
static int name_kind_hint(const char *name, size_t len)
{
	return name_table_kind(name, len); /* fs/name_table.c: the one table */
}

struct newobj {
	uint32_t mode;
	uint32_t rdev;
	uint64_t verifier;
	uint32_t flags;
	const void *inl;
	uint32_t inl_len;
};

/* Whether a new directory in dir is spread: near the top (dir is the root
 * or a child of it), or when dir's chunk is crowded; else it stays there. */
static int spread_dir(struct fs_volume *v, const struct iref *dir, struct chunk *home)
{
	return dir->ino.stable == v->root || dir->ino.parent == v->root ||
	       vol_chunk_crowded(v, home, FS_KIND_SMALL);
}

/* The chunk for a new inode, skipping those already found full. */
static struct chunk *pick_home(struct fs_volume *v, struct iref *dir, int is_dir, int hint,
			       const uint8_t *tried)
{
	struct chunk *home = vol_chunk(v, dir->loc.chunk);
	struct chunk *c = NULL;

	if (is_dir) {
		/* A directory holds small files inline, whatever its name. */
		if (spread_dir(v, dir, home))
			c = vol_pick_spread(v, home, FS_KIND_SMALL, tried);
		return c ? c : vol_pick_chunk(v, home, FS_KIND_SMALL, 1, tried);
	}
	if (hint == FS_KIND_LARGE) {
		c = vol_pick_chunk(v, NULL, hint, 1, tried);
		if (c && c->hdr.kind != FS_KIND_LARGE)
			c = NULL;
	}
	return c ? c : vol_pick_chunk(v, home, hint, 1, tried);
}

/* Make a new inode embedded in a new entry name of dir in chunk c. */
static int make_entry_in(struct fs_volume *v, const struct fs_cred *cred, struct iref *dir,
			 struct chunk *c, const char *name, size_t len, const struct newobj *no,
			 struct iref *out)
{
	struct dirpos pos;
	struct iref r;
	int ret;

	memset(&r, 0, sizeof(r));
	ret = map_alloc(c, (struct od_loc){ .chunk = OD_LOC_NONE }, &r.ino.stable,
			&r.ino.generation);
	if (ret < 0)
		return ret;
	r.ino.mode = no->mode;
	r.ino.nlink = S_ISDIR(no->mode) ? 2 : 1;
	attr_init_owner(cred, &dir->ino, &r.ino);
	r.ino.flags = no->flags;
	r.ino.rdev = no->rdev;
	r.ino.verifier = no->verifier;
	r.ino.parent = S_ISDIR(no->mode) ? dir->ino.stable : 0;
	r.ino.next.chunk = OD_LOC_NONE;
	r.ino.size = no->inl_len;
	r.ino.inline_len = no->inl_len;
	ino_touch(&r.ino, 1, 1, 1);
	ret = dir_add(v, dir, c, name, len, r.ino.stable, &r.ino, no->inl, no->inl_len, &pos);
	if (ret == 0) {
		r.loc = dir_embedded_loc(&pos);
		ret = map_set_loc(v, r.ino.stable, r.loc);
		if (ret < 0)
			dir_remove_entry(v, dir, &pos);
	}
	if (ret < 0) {
		map_free(v, r.ino.stable);
		return ret;
	}
	*out = r;
	return 0;
}

/* A chunk can look roomy and still have no place for a directory unit
 * (data took its lower half): then the next chunk is tried. */
static int make_entry(struct fs_volume *v, const struct fs_cred *cred, struct iref *dir,
		      const char *name, size_t len, const struct newobj *no, struct iref *out)
{
	int hint = name_kind_hint(name, len);
	uint8_t *tried = calloc(v->nchunks, 1);

	/* What this volume's files of this name, owner and mode grew to
	 * says more than the table, once it has seen enough of them. */
	if (S_ISREG(no->mode))
		hint = vol_pred_kind(v, name, len, cred ? cred->uid : 0, no->mode, hint);
	int ret = -ENOSPC;

	if (!tried)
		return -ENOMEM;
	for (;;) {
		struct chunk *c = pick_home(v, dir, S_ISDIR(no->mode), hint, tried);
		if (!c)
			break;
		ret = make_entry_in(v, cred, dir, c, name, len, no, out);
		if (ret != -ENOSPC)
			break;
		tried[c->index] = 1;
	}
	free(tried);
	return ret;
}

/* The common part of create, mkdir, symlink and mknod. */
static int new_object(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino dir_id,
		      const char *name, const struct newobj *no, struct fs_ino *out,
		      struct fs_attr *attr)
{
	struct iref dir, r;
	struct dirpos pos;
	size_t len;
	int ret;

	if (v->rdonly)
		return -EROFS;
	vol_lock(v);
	ret = get_dir(v, cred, dir_id, 3, &dir);
	if (ret < 0)
		goto out;
	ret = name_check(name, &len);
	if (ret < 0)
		goto out;
	ret = dir_find(v, &dir, name, len, &pos);
	if (ret == 0) {
		ret = -EEXIST;
		goto out;
	}
	if (ret != -ENOENT)
		goto out;
	/* Devices are root's to make (mknod(2) wants CAP_MKNOD). */
	if ((S_ISCHR(no->mode) || S_ISBLK(no->mode)) && cred && cred->uid != 0) {
		ret = -EPERM;
		goto out;
	}
	if (S_ISDIR(no->mode) && dir.ino.nlink >= FS_LINK_MAX) {
		ret = -EMLINK;
		goto out;
	}
	ret = make_entry(v, cred, &dir, name, len, no, &r);
	if (ret == -ENOSPC && vol_enospc_retry(v))
		ret = make_entry(v, cred, &dir, name, len, no, &r);
	if (ret < 0)
		goto out;
	/* (what the packing of small files knows of directories being filled) */
	if (S_ISREG(no->mode))
		dir_fill_create(v, dir.ino.stable);
	if (S_ISDIR(no->mode)) {
		dir_fill_mkdir(v, r.ino.stable);
		dir.ino.nlink++;
	}
	ino_touch(&dir.ino, 0, 1, 1);
	ret = ino_write(v, &dir);
	if (ret == 0)
		fill_out(v, &r, out, attr);
out:
	vol_unlock(v);
	return ret;
}

int fs_create(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino dir_id,
	      const char *name, uint32_t mode, enum fs_create_how how, uint64_t verifier,
	      struct fs_ino *out, struct fs_attr *attr)
{
	struct newobj no = {
		.mode = S_IFREG | (mode & 07777),
		.flags = OD_INF_FRESH,
	};
	int ret;

	if (how == FS_CREATE_EXCLUSIVE) {
		no.verifier = verifier;
		no.flags |= OD_INF_EXCL;
	} else if (how != FS_CREATE_UNCHECKED && how != FS_CREATE_GUARDED) {
		return -EINVAL;
	}
	ret = new_object(v, cred, dir_id, name, &no, out, attr);
	if (ret == -EEXIST && how != FS_CREATE_GUARDED) {
		/* UNCHECKED opens an existing regular file; EXCLUSIVE succeeds
		 * again only for the file it created (a retransmission). */
		struct fs_ino found;
		struct fs_attr a;
		struct iref r;
		int lr = fs_lookup(v, cred, dir_id, name, &found, &a);
		if (lr < 0 || !S_ISREG(a.mode))
			return ret;
		if (how == FS_CREATE_EXCLUSIVE) {
			vol_lock(v);
			lr = ino_get(v, found, &r);
			vol_unlock(v);
			if (lr < 0 || !(r.ino.flags & OD_INF_EXCL) || r.ino.verifier != verifier)
				return ret;
		}
		if (out)
			*out = found;
		if (attr)
			*attr = a;
		return 0;
	}
	return ret;
}

int fs_mkdir(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino dir_id,
	     const char *name, uint32_t mode, struct fs_ino *out, struct fs_attr *attr)
{
	struct newobj no = { .mode = S_IFDIR | (mode & 07777) };

	return new_object(v, cred, dir_id, name, &no, out, attr);
}

int fs_mknod(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino dir_id,
	     const char *name, uint32_t mode, uint32_t major, uint32_t minor, struct fs_ino *out,
	     struct fs_attr *attr)
{
	struct newobj no = { .mode = (mode & S_IFMT) | (mode & 07777) };

	switch (mode & S_IFMT) {
	case S_IFCHR:
	case S_IFBLK:
		if (major >= (1u << 12) || minor >= (1u << 20))
			return -EINVAL;
		no.rdev = (major << 20) | minor;
		break;
	case S_IFIFO:
	case S_IFSOCK:
		break;
	default:
		return -EINVAL;
	}
	return new_object(v, cred, dir_id, name, &no, out, attr);
}

int fs_symlink(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino dir_id,
	       const char *name, const char *target, uint32_t mode, struct fs_ino *out,
	       struct fs_attr *attr)
{
	struct newobj no = { .mode = S_IFLNK | 0777, .flags = OD_INF_INLINE };
	size_t tlen = target ? strnlen(target, FS_SYMLINK_MAX + 1) : 0;
	struct fs_ino id;
	int ret;

	if (tlen == 0)
		return -EINVAL;
	if (tlen > FS_SYMLINK_MAX)
		return -ENAMETOOLONG;
	no.inl = target;
	no.inl_len = (uint32_t)tlen;
	/* A target too long to sit in the entry goes to a data block. */
	if (tlen > dir_inline_max(&v->chunks[0], name ? strnlen(name, FS_NAME_MAX + 1) : 0)) {
		no.inl = NULL;
		no.inl_len = 0;
		no.flags = 0;
	}
	ret = new_object(v, cred, dir_id, name, &no, &id, attr);
	if (ret == 0 && !no.inl) {
		struct iref r;
		vol_lock(v);
		ret = ino_get(v, id, &r);
		if (ret == 0)
			ret = file_write(v, &r, 0, tlen, target);
		if (ret == 0)
			ret = ino_write(v, &r);
		if (ret == 0 && attr)
			ino_to_attr(&r.ino, attr);
		vol_unlock(v);
	}
	if (ret == 0 && out)
		*out = id;
	return ret;
}

int fs_readlink(struct fs_volume *v, struct fs_ino id, char *buf, size_t bufsize, size_t *len)
{
	struct iref r;
	int ret;

	vol_lock(v);
	ret = ino_get(v, id, &r);
	if (ret == 0 && !S_ISLNK(r.ino.mode))
		ret = -EINVAL;
	if (ret == 0 && r.ino.size > bufsize)
		ret = -ERANGE;
	if (ret == 0)
		ret = file_read(v, &r, 0, (size_t)r.ino.size, buf, 0);
	if (ret == 0)
		*len = (size_t)r.ino.size;
	vol_unlock(v);
	return ret;
}

/* Move an inode out of the entry that embeds it into an inode-area slot of
 * the same chunk (its stable number and generation stay). */
static int relocate_to_slot(struct fs_volume *v, struct iref *r)
{
	struct chunk *c = vol_chunk(v, r->loc.chunk);
	struct od_loc slot;
	int ret = file_uninline(v, r);

	if (ret < 0)
		return ret;
	ret = slot_alloc(c, &slot);
	if (ret < 0)
		return ret;
	r->loc = slot;
	ret = ino_write(v, r);
	if (ret == 0)
		ret = map_set_loc(v, r->ino.stable, slot);
	return ret;
}

static int is_embedded_at(const struct dirpos *pos, const struct iref *r)
{
	struct od_loc l = dir_embedded_loc(pos);

	return pos->de.kind == OD_DE_EMBEDDED && l.chunk == r->loc.chunk &&
	       l.block == r->loc.block && l.off == r->loc.off;
}

/* Drop one link of r through the entry name at pos in dir (a regular
 * file's last: the predictor learns its lifetime). */
static int unlink_entry(struct fs_volume *v, struct iref *dir, const struct dirpos *pos,
			struct iref *r, const char *name, size_t len)
{
	int embedded = is_embedded_at(pos, r);
	int ret;

	if (S_ISDIR(r->ino.mode) || r->ino.nlink <= 1) {
		struct od_inode gone = r->ino;

		/* The last link: the inode and everything it holds go. */
		if (S_ISDIR(r->ino.mode))
			ret = dir_free_all(v, r);
		else
			ret = file_release(v, r);
		if (ret == 0)
			ret = map_free(v, r->ino.stable);
		if (ret == 0 && !embedded)
			ret = slot_free(v, r->loc);
		if (ret == 0)
			ret = dir_remove_entry(v, dir, pos);
		if (ret == 0)
			vol_pred_removed(v, &gone, name, len);
		return ret;
	}
	if (embedded) {
		ret = relocate_to_slot(v, r);
		if (ret < 0)
			return ret;
	}
	ret = dir_remove_entry(v, dir, pos);
	if (ret < 0)
		return ret;
	r->ino.nlink--;
	ino_touch(&r->ino, 0, 0, 1);
	return ino_write(v, r);
}

static int remove_common(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino dir_id,
			 const char *name, int want_dir)
{
	struct iref dir, r;
	struct dirpos pos;
	size_t len;
	int ret;

	if (v->rdonly)
		return -EROFS;
	vol_lock(v);
	ret = get_dir(v, cred, dir_id, 3, &dir);
	if (ret < 0)
		goto out;
	ret = name_check(name, &len);
	if (ret < 0)
		goto out;
	ret = dir_find(v, &dir, name, len, &pos);
	if (ret == 0)
		ret = entry_inode(v, &pos, &r);
	if (ret < 0)
		goto out;
	if (want_dir && !S_ISDIR(r.ino.mode)) {
		ret = -ENOTDIR;
		goto out;
	}
	if (!want_dir && S_ISDIR(r.ino.mode)) {
		ret = -EISDIR;
		goto out;
	}
	if (!dir_sticky_ok(cred, &dir.ino, &r.ino)) {
		ret = -EPERM;
		goto out;
	}
	if (want_dir && (ret = dir_is_empty(v, &r)) <= 0) {
		ret = ret < 0 ? ret : -ENOTEMPTY;
		goto out;
	}
	ret = unlink_entry(v, &dir, &pos, &r, name, len);
	if (ret < 0)
		goto out;
	if (want_dir)
		dir.ino.nlink--;
	ino_touch(&dir.ino, 0, 1, 1);
	ret = ino_write(v, &dir);
out:
	vol_unlock(v);
	return ret;
}

int fs_remove(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino dir_id,
	      const char *name)
{
	return remove_common(v, cred, dir_id, name, 0);
}

int fs_rmdir(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino dir_id,
	     const char *name)
{
	return remove_common(v, cred, dir_id, name, 1);
}

int fs_link(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino id,
	    struct fs_ino dir_id, const char *name)
{
	struct iref dir, r;
	struct dirpos pos;
	size_t len;
	int ret;

	if (v->rdonly)
		return -EROFS;
	vol_lock(v);
	ret = ino_get(v, id, &r);
	if (ret < 0)
		goto out;
	ret = get_dir(v, cred, dir_id, 3, &dir);
	if (ret < 0)
		goto out;
	if (S_ISDIR(r.ino.mode)) {
		ret = -EPERM;
		goto out;
	}
	ret = name_check(name, &len);
	if (ret < 0)
		goto out;
	ret = dir_find(v, &dir, name, len, &pos);
	if (ret == 0)
		ret = -EEXIST;
	if (ret != -ENOENT)
		goto out;
	if (r.ino.nlink >= FS_LINK_MAX) {
		ret = -EMLINK;
		goto out;
	}
	if (S_ISREG(r.ino.mode) && dalloc_has(v, r.ino.stable)) {
		/* Placed while it has one link: a small file written whole
		 * stays inline in its entry, as it would have without delayed
		 * allocation (a file with two links keeps none inline). */
		ret = dalloc_place(v, r.ino.stable);
		if (ret == 0)
			ret = ino_get(v, id, &r);
		if (ret < 0)
			goto out;
	}
	/* The entry goes where the inode is (invariant 2). */
	ret = dir_add(v, &dir, vol_chunk(v, r.loc.chunk), name, len, r.ino.stable, NULL, NULL, 0,
		      &pos);
	if (ret == -ENOSPC && vol_enospc_retry(v))
		ret = dir_add(v, &dir, vol_chunk(v, r.loc.chunk), name, len, r.ino.stable, NULL,
			      NULL, 0, &pos);
	if (ret < 0)
		goto out;
	/* The inode may sit in the unit dir_add changed: reread it. */
	ret = ino_get(v, id, &r);
	if (ret < 0)
		goto out;
	r.ino.nlink++;
	ino_touch(&r.ino, 0, 0, 1);
	ret = ino_write(v, &r);
	if (ret < 0)
		goto out;
	ino_touch(&dir.ino, 0, 1, 1);
	ret = ino_write(v, &dir);
out:
	vol_unlock(v);
	return ret;
}

/* Is ancestor on the path from d up to the root? */
static int is_ancestor(struct fs_volume *v, uint64_t ancestor, const struct iref *d)
{
	uint64_t cur = d->ino.stable;

	for (uint32_t depth = 0; depth < 1u << 20; depth++) {
		struct iref r;
		int ret;
		if (cur == ancestor)
			return 1;
		if (cur == v->root)
			return 0;
		ret = ino_get_stable(v, cur, &r);
		if (ret < 0)
			return ret;
		cur = r.ino.parent;
	}
	return -ELOOP;
}

/* Copy an entry to a new name in to (in the chunk of its inode), carrying
 * the embedded inode and its inline data along when it has them. */
static int move_entry(struct fs_volume *v, struct iref *to, const char *name, size_t len,
		      const struct dirpos *from, struct iref *r, struct dirpos *npos)
{
	int embedded = is_embedded_at(from, r);
	struct chunk *c = vol_chunk(v, r->loc.chunk);
	uint8_t *inl = NULL;
	int ret;

	/* Inline data sized for the old name may not fit beside a longer
	 * one in a unit: it goes to a data block first (the file is then as
	 * after a write too large to stay inline). */
	if (embedded && (r->ino.flags & OD_INF_INLINE) &&
	    r->ino.inline_len > dir_inline_max(c, len)) {
		ret = file_uninline(v, r);
		if (ret < 0)
			return ret;
	}
	if (embedded && (r->ino.flags & OD_INF_INLINE)) {
		inl = malloc(r->ino.inline_len ? r->ino.inline_len : 1);
		if (!inl)
			return -ENOMEM;
		ret = dir_read_inline(v, r, inl, r->ino.inline_len);
		if (ret < 0)
			goto out;
	}
	ret = dir_add(v, to, c, name, len, r->ino.stable, embedded ? &r->ino : NULL, inl,
		      embedded ? r->ino.inline_len : 0, npos);
	if (ret == 0 && embedded) {
		r->loc = dir_embedded_loc(npos);
		ret = map_set_loc(v, r->ino.stable, r->loc);
	}
out:
	free(inl);
	return ret;
}

/* A rename that would tie the tree in a loop, refused before the target
 * is looked at, as Linux does (lock_rename's trap): a directory moved into
 * itself or below it is -EINVAL; a target that is the source's directory
 * or one above it (it holds the source, so it is not empty) -ENOTEMPTY. */
static int rename_loops(struct fs_volume *v, const struct iref *fdir, const struct iref *tdir,
			const struct iref *src, const struct iref *dst, int have_dst)
{
	int ret;

	if (S_ISDIR(src->ino.mode) && tdir != fdir) {
		ret = is_ancestor(v, src->ino.stable, tdir);
		if (ret != 0)
			return ret > 0 ? -EINVAL : ret;
	}
	if (have_dst && S_ISDIR(dst->ino.mode)) {
		ret = is_ancestor(v, dst->ino.stable, fdir);
		if (ret != 0)
			return ret > 0 ? -ENOTEMPTY : ret;
	}
	return 0;
}

static int rename_checks(struct fs_volume *v, const struct iref *src, const struct iref *dst,
			 int have_dst)
{
	if (!have_dst)
		return 0;
	if (S_ISDIR(src->ino.mode) && !S_ISDIR(dst->ino.mode))
		return -ENOTDIR;
	if (!S_ISDIR(src->ino.mode) && S_ISDIR(dst->ino.mode))
		return -EISDIR;
	if (S_ISDIR(dst->ino.mode)) {
		int empty = dir_is_empty(v, dst);
		if (empty <= 0)
			return empty < 0 ? empty : -ENOTEMPTY;
	}
	return 0;
}

int fs_rename(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino from_id,
	      const char *from_name, struct fs_ino to_id, const char *to_name)
{
	struct iref fdir, tdir_store, *tdir, src, dst;
	struct dirpos spos, dpos, npos;
	struct od_loc old_loc;
	size_t flen, tlen;
	int have_dst, ret;

	if (v->rdonly)
		return -EROFS;
	vol_lock(v);
	ret = get_dir(v, cred, from_id, 3, &fdir);
	if (ret < 0)
		goto out;
	if (to_id.num == from_id.num) {
		tdir = &fdir;
		if (to_id.gen != from_id.gen) {
			ret = -ESTALE;
			goto out;
		}
	} else {
		tdir = &tdir_store;
		ret = get_dir(v, cred, to_id, 3, tdir);
		if (ret < 0)
			goto out;
	}
	if ((ret = name_check(from_name, &flen)) < 0 || (ret = name_check(to_name, &tlen)) < 0)
		goto out;
	ret = dir_find(v, &fdir, from_name, flen, &spos);
	if (ret == 0)
		ret = entry_inode(v, &spos, &src);
	if (ret < 0)
		goto out;
	if (tdir == &fdir && flen == tlen && memcmp(from_name, to_name, flen) == 0)
		goto out; /* renaming a name to itself */
	if (S_ISREG(src.ino.mode) && dalloc_has(v, src.ino.stable)) {
		/* ext4's auto_da_alloc lesson: a file renamed (over another,
		 * as editors save) must not come back empty after a crash.
		 * Its buffered data is placed now, so the transaction that
		 * commits the rename holds it (its data flushed before). */
		ret = dalloc_place(v, src.ino.stable);
		if (ret == 0)
			ret = dir_find(v, &fdir, from_name, flen, &spos);
		if (ret == 0)
			ret = entry_inode(v, &spos, &src);
		if (ret < 0)
			goto out;
	}
	ret = dir_find(v, tdir, to_name, tlen, &dpos);
	have_dst = ret == 0;
	if (ret < 0 && ret != -ENOENT)
		goto out;
	if (have_dst && (ret = entry_inode(v, &dpos, &dst)) < 0)
		goto out;
	if (have_dst && dst.ino.stable == src.ino.stable) {
		ret = 0; /* two links of one file: nothing to do */
		goto out;
	}
	ret = rename_loops(v, &fdir, tdir, &src, &dst, have_dst);
	if (ret == 0)
		ret = rename_checks(v, &src, &dst, have_dst);
	if (ret < 0)
		goto out;
	if (!dir_sticky_ok(cred, &fdir.ino, &src.ino) ||
	    (have_dst && !dir_sticky_ok(cred, &tdir->ino, &dst.ino))) {
		ret = -EPERM;
		goto out;
	}
	if (S_ISDIR(src.ino.mode) && tdir != &fdir && !have_dst &&
	    tdir->ino.nlink >= FS_LINK_MAX) {
		ret = -EMLINK;
		goto out;
	}
	/* The new entry first: if there is no room for it, nothing changed. */
	old_loc = src.loc;
	ret = move_entry(v, tdir, to_name, tlen, &spos, &src, &npos);
	if (ret == -ENOSPC && vol_enospc_retry(v))
		ret = move_entry(v, tdir, to_name, tlen, &spos, &src, &npos);
	if (ret < 0)
		goto out;
	if (have_dst) {
		/* dst's entry may have gained slack; it did not move. */
		ret = entry_inode(v, &dpos, &dst);
		if (ret == 0)
			ret = unlink_entry(v, tdir, &dpos, &dst, to_name, tlen);
		if (ret < 0) {
			/* (no room to relocate dst's inode) undo the new entry:
			 * the old one, and the inode in it, are still there */
			if (src.loc.block != old_loc.block || src.loc.off != old_loc.off ||
			    src.loc.chunk != old_loc.chunk)
				map_set_loc(v, src.ino.stable, old_loc);
			dir_remove_entry(v, tdir, &npos);
			goto out;
		}
		if (S_ISDIR(dst.ino.mode))
			tdir->ino.nlink--;
		/* Removing dst may have freed the unit holding the old source
		 * entry's neighbour, never the source entry itself. */
	}
	ret = dir_remove_entry(v, &fdir, &spos);
	if (ret < 0)
		goto out;
	if (S_ISDIR(src.ino.mode)) {
		src.ino.parent = tdir->ino.stable;
		if (tdir != &fdir) {
			fdir.ino.nlink--;
			tdir->ino.nlink++;
		}
	}
	ino_touch(&src.ino, 0, 0, 1);
	ret = ino_write(v, &src);
	if (ret < 0)
		goto out;
	ino_touch(&fdir.ino, 0, 1, 1);
	ret = ino_write(v, &fdir);
	if (ret == 0 && tdir != &fdir) {
		ino_touch(&tdir->ino, 0, 1, 1);
		ret = ino_write(v, tdir);
	}
out:
	vol_unlock(v);
	return ret;
}
