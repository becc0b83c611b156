/* Evacuation's moves of inodes with more than their one embedding entry:
 * an inode in an inode-area slot of a draining, fostered chunk K (a file
 * whose first link went) or one embedded with several links (hard links)
 * carried into another chunk T together with every entry that names it
 * (invariant 2 keeps those entries in K, in the parts or heads of their
 * directories there: found by a scan of K's directory units), each entry
 * added to its directory's part in T and removed from K, the foster map
 * entry pointed at the inode's new place, number and generation kept.
 * Also K's empty directory parts, lost+found's among them, unlinked from
 * their chains once their entries have moved. Each move is one
 * transaction (the caller commits), so a crash leaves the inode and all
 * its entries in K or all in T. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/evac.h"

/* An entry naming the inode being moved. */
struct lent {
	uint64_t dir;      /* its directory's head */
	struct dirpos pos;
	char name[FS_NAME_MAX + 1];
	size_t len;
};

struct lscan {
	uint64_t dir;
	struct lent *e;
	uint32_t n, cap;
};

static int collect(struct fs_volume *v, void *ctx, const struct dir_walk_ent *we)
{
	struct lscan *ls = ctx;
	struct lent *l;

	(void)v;
	if (ls->n == ls->cap) {
		uint32_t ncap = ls->cap ? 2 * ls->cap : 4;
		struct lent *p = realloc(ls->e, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		ls->e = p;
		ls->cap = ncap;
	}
	l = &ls->e[ls->n++];
	l->dir = ls->dir;
	l->pos = we->pos;
	l->len = we->pos.de.name_len;
	memcpy(l->name, we->name, l->len);
	l->name[l->len] = 0;
	return 0;
}

static struct od_loc slot_loc(const struct chunk *c, uint32_t slot)
{
	struct od_loc loc = {
		.chunk = c->index,
		.block = c->hdr.itable_start + slot / OD_ISLOTS_PER_BLOCK,
		.off = (uint16_t)(OD_MB_HEADER_SIZE + (slot % OD_ISLOTS_PER_BLOCK) * OD_INODE_SIZE),
	};
	return loc;
}

/* Every entry of K's directory units naming stable: the units of
 * directory parts in K's slots, and of directory heads placed in K (found
 * through the foster maps: K's, and those of chunks evacuated into K). */
static int scan_entries(struct fs_volume *v, struct chunk *k, uint64_t stable, struct lscan *ls)
{
	struct od_loc loc;
	int ret = 0;

	for (uint32_t s = 0; ret == 0 && s < k->hdr.islot_watermark; s++) {
		struct iref p;
		ret = ino_read(v, slot_loc(k, s), &p);
		if (ret < 0)
			break;
		if (p.ino.mode == 0 || !S_ISDIR(p.ino.mode) || !(p.ino.flags & OD_INF_CONT))
			continue;
		ls->dir = p.ino.head_stable;
		ret = dir_seg_entries_of(v, &p, stable, collect, ls);
	}
	for (uint32_t r = 0; ret == 0 && r < v->fost.n; r++) {
		uint32_t home = v->fost.rec[r].home, idx = 0;
		while (ret == 0 &&
		       (ret = evac_foster_next(v, home, k->index, idx, &idx, &loc)) == 1) {
			struct iref d;
			idx++;
			ret = ino_read(v, loc, &d);
			if (ret < 0)
				break;
			if (d.ino.mode == 0 || !S_ISDIR(d.ino.mode) || (d.ino.flags & OD_INF_CONT))
				continue;
			ls->dir = d.ino.stable;
			ret = dir_seg_entries_of(v, &d, stable, collect, ls);
		}
	}
	return ret;
}

static int in_slot(const struct chunk *k, struct od_loc loc)
{
	return loc.block >= k->hdr.itable_start &&
	       loc.block < k->hdr.itable_start + k->hdr.itable_blocks;
}

static int linked_movable(const struct chunk *k, const struct iref *r)
{
	const struct od_inode *ino = &r->ino;

	if (ino->mode == 0 || S_ISDIR(ino->mode) ||
	    (ino->flags & (OD_INF_CONT | OD_INF_LOSTFOUND)) || ino->nlink == 0)
		return 0;
	if (!in_slot(k, r->loc) && ino->nlink == 1)
		return 0; /* evac_inode.c's */
	return ino->blocks <= EVAC_INODE_BLOCKS;
}

int evac_linked_movable(struct fs_volume *v, const struct od_loc *loc)
{
	struct chunk *k = vol_chunk(v, loc->chunk);
	struct iref r;

	if (!k || ino_read(v, *loc, &r) < 0)
		return 0;
	return linked_movable(k, &r);
}

/* The entries added in t so far taken out again. */
static void unadd(struct fs_volume *v, const struct lent *e, const struct dirpos *npos,
		  uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct iref dir;
		if (ino_get_stable(v, e[i].dir, &dir) == 0)
			dir_remove_entry(v, &dir, &npos[i]);
	}
}

int evac_move_linked(struct fs_volume *v, uint64_t stable, struct chunk *t, uint64_t *blocks)
{
	struct lscan ls = { 0 };
	struct dirpos *npos = NULL;
	struct iref r, r2;
	struct od_inode bare;
	struct chunk *k;
	uint8_t *inl = NULL;
	uint32_t added = 0, emb = UINT32_MAX;
	int slot, has_data, data_moved = 0, ret = ino_get_stable(v, stable, &r);

	if (ret < 0)
		return ret;
	k = vol_chunk(v, r.loc.chunk);
	if (!k || k == t || !linked_movable(k, &r))
		return -EINVAL;
	slot = in_slot(k, r.loc);
	has_data = r.ino.nextents || r.ino.ext_block || r.ino.blocks;
	ret = scan_entries(v, k, stable, &ls);
	if (ret < 0)
		goto out;
	if (ls.n != r.ino.nlink) {
		ret = -EUCLEAN; /* fsck's to settle */
		goto out;
	}
	for (uint32_t i = 0; i < ls.n; i++) {
		if (ls.e[i].pos.de.kind != OD_DE_EMBEDDED)
			continue;
		if (slot || emb != UINT32_MAX || !evac_loc_eq(dir_embedded_loc(&ls.e[i].pos), r.loc)) {
			ret = -EUCLEAN;
			goto out;
		}
		emb = i;
	}
	if (!slot && emb == UINT32_MAX) {
		ret = -EUCLEAN;
		goto out;
	}
	ret = evac_rehead_chain(v, r.ino.next, t, 0);
	if (ret < 0)
		goto out;
	npos = calloc(ls.n, sizeof(*npos));
	if (!npos) {
		ret = -ENOMEM;
		goto out;
	}
	/* The inode's new place first (a slot of t, or its embedding entry
	 * in t), bare of extents; then every other entry, by reference. */
	ret = evac_bare_copy(v, &r, &bare, &inl);
	if (ret < 0)
		goto out;
	if (slot) {
		ret = slot_alloc(t, &r2.loc);
		if (ret < 0)
			goto out;
		r2.ino = bare;
		ret = ino_write(v, &r2);
		if (ret < 0) {
			slot_free(v, r2.loc);
			goto out;
		}
	}
	for (uint32_t i = 0; i < ls.n; i++) {
		struct iref dir;
		int e = i == emb;
		ret = ino_get_stable(v, ls.e[i].dir, &dir);
		if (ret == 0)
			ret = dir_add(v, &dir, t, ls.e[i].name, ls.e[i].len, stable,
				      e ? &bare : NULL, e ? inl : NULL,
				      e && (r.ino.flags & OD_INF_INLINE) ? r.ino.inline_len : 0,
				      &npos[i]);
		if (ret < 0)
			break;
		added = i + 1;
		if (e) {
			r2.loc = dir_embedded_loc(&npos[i]);
			r2.ino = bare;
		}
	}
	if (ret == 0 && has_data) {
		ret = evac_move_data(v, k, &r, &r2, t, blocks);
		data_moved = ret == 0;
	}
	if (ret == 0)
		ret = map_set_loc(v, stable, r2.loc);
	if (ret < 0) {
		if (data_moved)
			evac_free_old(v, t, &r2);
		unadd(v, ls.e, npos, added);
		if (slot)
			slot_free(v, r2.loc);
		goto out;
	}
	/* From here on the inode is in t: what it held in k goes, its
	 * chain's back pointers name t, and its entries in k go. */
	ret = evac_rehead_chain(v, r.ino.next, t, 1);
	if (ret == 0 && has_data)
		ret = evac_free_old(v, k, &r);
	for (uint32_t i = 0; ret == 0 && i < ls.n; i++) {
		struct iref dir;
		ret = ino_get_stable(v, ls.e[i].dir, &dir);
		if (ret == 0)
			ret = dir_remove_entry(v, &dir, &ls.e[i].pos);
	}
	if (ret == 0 && slot)
		ret = slot_free(v, r.loc);
out:
	free(inl);
	free(npos);
	free(ls.e);
	return ret;
}

int evac_drop_empty_part(struct fs_volume *v, struct chunk *k, int lf)
{
	for (uint32_t s = 0; s < k->hdr.islot_watermark; s++) {
		struct iref p;
		int ret = ino_read(v, slot_loc(k, s), &p);
		if (ret < 0)
			return ret;
		if (p.ino.mode == 0 || !S_ISDIR(p.ino.mode) || !(p.ino.flags & OD_INF_CONT) ||
		    p.ino.nextents || p.ino.ext_block || !lf != !(p.ino.flags & OD_INF_LOSTFOUND))
			continue;
		ret = dir_part_drop_empty(v, &p);
		if (ret == -EIO || ret == -EUCLEAN || ret == -ESTALE)
			continue; /* its head cannot be read now: it stays, counted */
		return ret < 0 ? ret : 1;
	}
	return 0;
}
