/* Evacuation's inode moves: an inode embedded in a directory entry of a
 * draining, fostered chunk K carried with its entry into the directory's
 * part in another chunk T (invariant 2: an entry sits in its inode's
 * chunk), its foster map entry pointed there, number and generation kept.
 * This build moves the inodes that hold nothing in K but themselves: no
 * data block, extent unit, continuation or directory unit (an inline or
 * empty file, a symlink, a device, FIFO or socket, an empty directory),
 * with one link. The entry's old unit is released by dir_remove_entry
 * when it empties, and with its last unit a directory part in K leaves its
 * chain. Each move is one transaction over K, T and the host of the foster
 * map; a crash leaves the entry in K or in T, never both. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/evac.h"

/* Does r hold nothing in its chunk but itself? */
static int movable(const struct od_inode *ino)
{
	if (ino->mode == 0 || (ino->flags & (OD_INF_CONT | OD_INF_LOSTFOUND)))
		return 0;
	if (ino->nextents || ino->ext_block || ino->next.chunk != OD_LOC_NONE || ino->blocks)
		return 0;
	return S_ISDIR(ino->mode) ? ino->nlink == 2 : ino->nlink == 1;
}

int evac_inode_movable(struct fs_volume *v, const struct od_loc *loc)
{
	struct chunk *k = vol_chunk(v, loc->chunk);
	struct iref r;

	if (!k || loc->block < k->hdr.data_start)
		return 0; /* a slot: not moved by this build */
	if (ino_read(v, *loc, &r) < 0)
		return 0;
	return movable(&r.ino);
}

int evac_move_embedded(struct fs_volume *v, uint64_t stable, struct chunk *t)
{
	struct od_mb_header uh;
	struct iref r, dir;
	struct dirpos pos, npos;
	struct chunk *k;
	struct buf *b;
	char name[FS_NAME_MAX + 1];
	uint8_t *inl = NULL;
	size_t len = 0;
	int ret = ino_get_stable(v, stable, &r);

	if (ret < 0)
		return ret;
	k = vol_chunk(v, r.loc.chunk);
	if (!k || k == t || r.loc.block < k->hdr.data_start || !movable(&r.ino))
		return -EINVAL;
	/* The directory holding the entry: its unit's owner (the head). */
	ret = buf_read(k, r.loc.block, k->hdr.dir_unit, &b);
	if (ret < 0)
		return ret;
	od_get_mb_header(b->data, &uh);
	buf_put(b);
	if (uh.type != OD_MB_DIR)
		return -EUCLEAN;
	ret = ino_get_stable(v, uh.owner, &dir);
	if (ret == 0)
		ret = dir_embedded_name(v, &r, name, &len);
	if (ret == 0)
		ret = dir_find(v, &dir, name, len, &pos);
	if (ret < 0)
		return ret == -ENOENT ? -EUCLEAN : ret;
	if (pos.de.stable != stable || pos.unit.chunk != k->index)
		return -EUCLEAN;
	if (r.ino.flags & OD_INF_INLINE) {
		inl = malloc(r.ino.inline_len ? r.ino.inline_len : 1);
		if (!inl)
			return -ENOMEM;
		ret = dir_read_inline(v, &r, inl, r.ino.inline_len);
		if (ret < 0)
			goto out;
	}
	/* The new entry first: without room for it nothing changed. */
	ret = dir_add(v, &dir, t, name, len, stable, &r.ino, inl,
		      (r.ino.flags & OD_INF_INLINE) ? r.ino.inline_len : 0, &npos);
	if (ret < 0)
		goto out;
	ret = map_set_loc(v, stable, dir_embedded_loc(&npos));
	if (ret < 0) {
		dir_remove_entry(v, &dir, &npos); /* the old entry is still there */
		goto out;
	}
	ret = dir_remove_entry(v, &dir, &pos);
	if (ret < 0) {
		/* (the old entry stays, with the inode in it) */
		map_set_loc(v, stable, r.loc);
		dir_remove_entry(v, &dir, &npos);
	}
out:
	free(inl);
	return ret;
}
