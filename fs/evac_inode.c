/* Evacuation's inode moves: an inode embedded in a directory entry of a
 * draining, fostered chunk K carried with its entry into the directory's
 * part in another chunk T (invariant 2: an entry sits in its inode's
 * chunk), its foster map entry pointed there, number and generation kept.
 * This build moves inodes with one link and no directory unit in K: an
 * inline or empty file, a symlink, a device, FIFO or socket, a directory
 * whose entries are all in parts elsewhere, and a regular file or symlink
 * whose data in K (at most EVAC_INODE_BLOCKS blocks) is copied into T
 * first and mapped there by the moved inode (invariant 1), its extent
 * units made in T and K's blocks and units freed. A head with
 * continuations (or parts) elsewhere keeps them: each one's back pointer
 * (head_chunk) is set to T in the same transaction; T is never a chunk
 * the chain already has a segment in. The entry's old unit is released by dir_remove_entry
 * when it empties, and with its last unit a directory part in K leaves its
 * chain. Each move is one transaction over K, T and the host of the foster
 * map; a crash leaves the entry in K or in T, never both. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/evac.h"

/* Does the inode hold nothing in its chunk but itself? */
static int holds_nothing(const struct od_inode *ino)
{
	return !ino->nextents && !ino->ext_block && !ino->blocks;
}

static int movable(const struct od_inode *ino)
{
	if (ino->mode == 0 || (ino->flags & (OD_INF_CONT | OD_INF_LOSTFOUND)))
		return 0;
	if (S_ISDIR(ino->mode))
		return holds_nothing(ino); /* one entry names it, whatever its count */
	if (ino->nlink != 1)
		return 0;
	return holds_nothing(ino) ||
	       ((S_ISREG(ino->mode) || S_ISLNK(ino->mode)) && !(ino->flags & OD_INF_INLINE) &&
		ino->blocks <= EVAC_INODE_BLOCKS);
}

/* r's data (its extents, all in its chunk k) copied into t and mapped by
 * the inode moved there (at r2->loc): its extent units made in t. */
int evac_move_data(struct fs_volume *v, struct chunk *k, const struct iref *r,
		     struct iref *r2, struct chunk *t, uint64_t *blocks)
{
	struct extlist el = { 0 }, nel = { 0 };
	struct ext_plan plan;
	int ret = ext_load(v, r, &el);

	if (ret == 0)
		ret = evac_copy_extents(v, k, &el, t, &nel, blocks);
	if (ret < 0)
		goto out;
	ret = ext_prepare(v, r2, &nel, &plan);
	if (ret < 0) {
		for (uint32_t i = 0; i < nel.n; i++)
			free_blocks(t, nel.e[i].pblk, nel.e[i].len);
		goto out;
	}
	ret = ext_commit(v, r2, &nel, &plan);
	if (ret == 0)
		ret = ino_write(v, r2);
out:
	ext_release(&el);
	ext_release(&nel);
	return ret;
}

/* The segments after a head (continuations, or a directory's parts),
 * from next on: none may be in t (a chain never has two segments in one
 * chunk: -ENOSPC, try another), and with set, each names t as its head's
 * chunk from now on. */
int evac_rehead_chain(struct fs_volume *v, struct od_loc next, struct chunk *t, int set)
{
	for (uint32_t n = 0; next.chunk != OD_LOC_NONE; n++) {
		struct iref c;
		int ret;
		if (n > OD_MAX_CHUNKS)
			return -EUCLEAN; /* a loop */
		if (next.chunk == t->index)
			return -ENOSPC;
		ret = ino_read(v, next, &c);
		if (ret < 0)
			return ret;
		if (!(c.ino.flags & OD_INF_CONT))
			return -EUCLEAN;
		if (set) {
			c.ino.head_chunk = t->index;
			ret = ino_write(v, &c);
			if (ret < 0)
				return ret;
		}
		next = c.ino.next;
	}
	return 0;
}

/* What r held in k given back: its data blocks and extent units. */
int evac_free_old(struct fs_volume *v, struct chunk *k, struct iref *r)
{
	struct extlist el = { 0 }, none = { 0 };
	int ret = ext_load(v, r, &el);

	for (uint32_t i = 0; ret == 0 && i < el.n; i++)
		free_blocks(k, el.e[i].pblk, el.e[i].len);
	if (ret == 0)
		ret = ext_store(v, r, &none); /* frees its extent units */
	ext_release(&el);
	return ret;
}

/* The segment of head's chain just before part (the head itself, or a
 * part before it). */
static int part_pred(struct fs_volume *v, const struct iref *head, const struct iref *part,
		     struct iref *pred)
{
	struct iref cur = *head;

	for (uint32_t n = 0; cur.ino.next.chunk != OD_LOC_NONE; n++) {
		struct iref nxt;
		int ret;
		if (n > OD_MAX_CHUNKS)
			return -EUCLEAN;
		if (cur.ino.next.chunk == part->loc.chunk && cur.ino.next.block == part->loc.block &&
		    cur.ino.next.off == part->loc.off) {
			*pred = cur;
			return 0;
		}
		ret = ino_read(v, cur.ino.next, &nxt);
		if (ret < 0)
			return ret;
		cur = nxt;
	}
	return -EUCLEAN;
}

/* The units of a directory's part in t handed to the head moved there (at
 * r2, in t): its extent list stored in the head (written). */
static int take_units(struct fs_volume *v, const struct iref *part, struct iref *r2)
{
	struct extlist el = { 0 };
	int ret = ext_load(v, part, &el);

	if (ret == 0)
		ret = ext_store(v, r2, &el);
	if (ret == 0) {
		r2->ino.blocks = part->ino.blocks;
		ret = ino_write(v, r2);
	}
	ext_release(&el);
	return ret;
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

int evac_bare_copy(struct fs_volume *v, const struct iref *r, struct od_inode *bare,
		   uint8_t **inl)
{
	*inl = NULL;
	if (r->ino.flags & OD_INF_INLINE) {
		int ret;
		*inl = malloc(r->ino.inline_len ? r->ino.inline_len : 1);
		if (!*inl)
			return -ENOMEM;
		ret = dir_read_inline(v, r, *inl, r->ino.inline_len);
		if (ret < 0)
			return ret; /* (*inl is the caller's to free) */
	}
	*bare = r->ino;
	bare->nextents = 0;
	bare->ext_block = 0;
	memset(bare->ext, 0, sizeof(bare->ext));
	return 0;
}

uint32_t evac_inline_spill(const struct chunk *t, size_t name_len, struct od_inode *bare)
{
	uint32_t n = bare->inline_len;

	if (!(bare->flags & OD_INF_INLINE) || n <= dir_inline_max(t, name_len))
		return 0;
	bare->flags &= ~OD_INF_INLINE;
	bare->inline_len = 0;
	return n;
}

int evac_move_embedded(struct fs_volume *v, uint64_t stable, struct chunk *t,
		       uint64_t *blocks)
{
	struct od_mb_header uh;
	struct iref r, r2, dir;
	struct od_inode bare;
	struct iref part, pred;
	struct dirpos pos, npos;
	struct chunk *k;
	struct buf *b;
	char name[FS_NAME_MAX + 1];
	uint8_t *inl = NULL;
	size_t len = 0;
	uint32_t spill;
	int has_part = 0;
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
	/* Its entry read where the inode is: a lookup by name would build
	 * the directory's name index first (10 ms of CPU under the lock for
	 * 3,000 entries at the step's first move). */
	if (ret == 0)
		ret = dir_embedded_pos(v, &r, name, &len, &pos);
	if (ret < 0)
		return ret == -ENOENT ? -EUCLEAN : ret;
	if (pos.de.stable != stable || pos.unit.chunk != k->index)
		return -EUCLEAN;
	/* A directory with a part in t: the head moved there takes the
	 * part's units over, and the part leaves the chain (a chain has one
	 * segment a chunk). pred: the segment before the part. */
	if (S_ISDIR(r.ino.mode)) {
		ret = dir_part_for(v, &r, t, 0, &part);
		if (ret == 0) {
			has_part = 1;
			ret = part_pred(v, &r, &part, &pred);
		} else if (ret == -ENOENT) {
			ret = 0;
		}
		if (ret < 0)
			return ret;
	}
	/* Its continuations or parts, read (and none in t but that part)
	 * before anything changes. */
	ret = evac_rehead_chain(v, has_part && pred.loc.chunk == r.loc.chunk ? part.ino.next
									: r.ino.next,
				t, 0);
	if (ret == 0 && has_part && pred.loc.chunk != r.loc.chunk)
		ret = evac_rehead_chain(v, part.ino.next, t, 0);
	if (ret < 0)
		return ret;
	/* The new entry first: without room for it nothing changed. It
	 * embeds the inode without extents; a file's data is copied and
	 * mapped there next. */
	ret = evac_bare_copy(v, &r, &bare, &inl);
	if (ret < 0)
		goto out;
	if (has_part && pred.loc.chunk == r.loc.chunk)
		bare.next = part.ino.next;
	spill = evac_inline_spill(t, len, &bare);
	ret = dir_add(v, &dir, t, name, len, stable, &bare, spill ? NULL : inl,
		      (bare.flags & OD_INF_INLINE) ? bare.inline_len : 0, &npos);
	if (ret < 0)
		goto out;
	r2.loc = dir_embedded_loc(&npos);
	r2.ino = bare;
	if (has_part) {
		ret = take_units(v, &part, &r2);
		if (ret < 0) {
			dir_remove_entry(v, &dir, &npos);
			goto out;
		}
	}
	if (spill) {
		ret = file_fill_new(v, &r2, inl, spill);
		if (ret == 0 && (ret = ino_write(v, &r2)) < 0)
			evac_free_old(v, t, &r2); /* the block just filled */
	} else if (!holds_nothing(&r.ino)) {
		ret = evac_move_data(v, k, &r, &r2, t, blocks);
	}
	if (ret < 0) {
		dir_remove_entry(v, &dir, &npos); /* the old entry is still there */
		goto out;
	}
	ret = map_set_loc(v, stable, r2.loc);
	if (ret < 0) {
		if (spill || !holds_nothing(&r.ino))
			evac_free_old(v, t, &r2);
		if (has_part) {
			struct extlist none = { 0 };
			ext_store(v, &r2, &none); /* the part still maps its units */
		}
		dir_remove_entry(v, &dir, &npos);
		goto out;
	}
	/* From here on the inode is in t: what it held in k goes, and its
	 * chain's back pointers name t; a part in t leaves the chain, its
	 * slot freed (its units are the head's now). */
	if (has_part) {
		struct extlist none = { 0 };
		if (pred.loc.chunk != r.loc.chunk) {
			pred.ino.next = part.ino.next;
			ret = ino_write(v, &pred);
		}
		if (ret == 0)
			ret = ext_store(v, &part, &none);
		if (ret == 0)
			ret = slot_free(v, part.loc);
	}
	if (ret == 0)
		ret = evac_rehead_chain(v, r2.ino.next, t, 1);
	if (ret == 0 && !holds_nothing(&r.ino))
		ret = evac_free_old(v, k, &r);
	if (ret == 0)
		ret = dir_remove_entry(v, &dir, &pos);
out:
	free(inl);
	return ret;
}
