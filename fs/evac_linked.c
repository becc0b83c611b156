/* Evacuation's moves of inodes with more than their one embedding entry:
 * an inode in an inode-area slot of a draining, fostered chunk K (a file
 * whose first link went) or one embedded with several links (hard links)
 * carried into another chunk T together with every entry that names it
 * (invariant 2 keeps those entries in K, in the parts or heads of their
 * directories there: found through an index of K's directory units made
 * by one scan a step), each entry
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
	struct lent *e;
	uint32_t n, cap;
};

/* An entry of K's directory units as the step's index keeps it. */
struct lrec {
	uint64_t stable;   /* the inode it names */
	uint64_t dir;      /* its directory's head */
	struct od_loc unit;
	uint32_t off;
	uint32_t seq;      /* the order the scan found it in */
};

/* Every entry of K's directory units (the units of directory parts in K's
 * slots, and of directory heads placed in K, found through the foster
 * maps: K's, and those of chunks evacuated into K), sorted by the number
 * it names: made by one scan at a step's first move of an inode with
 * several entries (or in a slot), kept until the step lets the lock go
 * (evac_lindex_drop), so that each further move of the step finds its
 * entries by a search instead of a scan. Within one hold of the lock
 * nothing adds an entry to K (a draining chunk takes none; the step's
 * moves add theirs in other chunks) and the moves remove only the moved
 * inodes' own entries; each entry found is read again where it is and
 * must still name the inode, else the index is made again. */
struct evac_lindex {
	struct chunk *k;
	uint64_t dir;      /* (while scanning: the directory of the segment) */
	struct lrec *r;
	uint32_t n, cap;
};

static int index_entry(struct fs_volume *v, void *ctx, const struct dir_walk_ent *we)
{
	struct evac_lindex *x = ctx;

	(void)v;
	if (x->n == x->cap) {
		uint32_t ncap = x->cap ? 2 * x->cap : 64;
		struct lrec *p = realloc(x->r, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		x->r = p;
		x->cap = ncap;
	}
	x->r[x->n] = (struct lrec){ .stable = we->pos.de.stable, .dir = x->dir,
				    .unit = we->pos.unit, .off = we->pos.off, .seq = x->n };
	x->n++;
	return 0;
}

static int lrec_cmp(const void *a, const void *b)
{
	const struct lrec *x = a, *y = b;

	if (x->stable != y->stable)
		return x->stable < y->stable ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The index of k's entries made (by a scan of its directory units). */
static int index_build(struct fs_volume *v, struct chunk *k, struct evac_lindex *x)
{
	struct od_loc loc;
	int ret = 0;

	k->evac_entry_scans++;
	x->k = k;
	x->n = 0;
	for (uint32_t s = 0; ret == 0 && s < k->hdr.islot_watermark; s++) {
		struct iref p;
		ret = ino_read(v, evac_slot_at(k, s), &p);
		if (ret < 0)
			break;
		if (p.ino.mode == 0 || !S_ISDIR(p.ino.mode) || !(p.ino.flags & OD_INF_CONT))
			continue;
		x->dir = p.ino.head_stable;
		ret = dir_seg_entries_of(v, &p, DIR_ALL_ENTRIES, index_entry, x);
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
			x->dir = d.ino.stable;
			ret = dir_seg_entries_of(v, &d, DIR_ALL_ENTRIES, index_entry, x);
		}
	}
	if (ret == 0)
		qsort(x->r, x->n, sizeof(*x->r), lrec_cmp);
	return ret;
}

void evac_lindex_drop(struct fs_volume *v)
{
	struct evac_lindex *x = v->evac_lindex;

	if (!x)
		return;
	free(x->r);
	free(x);
	v->evac_lindex = NULL;
}

/* The entries the index has for stable, read where they are into ls: 0,
 * -ESTALE when one no longer names it (the index is to be made again), or
 * another negative errno. */
static int index_find(struct fs_volume *v, const struct evac_lindex *x, uint64_t stable,
		      struct lscan *ls)
{
	uint32_t lo = 0, hi = x->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (x->r[mid].stable < stable)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (uint32_t i = lo; i < x->n && x->r[i].stable == stable; i++) {
		struct lent *l;
		int ret;
		if (ls->n == ls->cap) {
			uint32_t ncap = ls->cap ? 2 * ls->cap : 4;
			struct lent *p = realloc(ls->e, ncap * sizeof(*p));
			if (!p)
				return -ENOMEM;
			ls->e = p;
			ls->cap = ncap;
		}
		l = &ls->e[ls->n];
		ret = dir_entry_at(v, &x->r[i].unit, x->r[i].off, l->name, &l->pos);
		if (ret == -ENOENT || (ret == 0 && l->pos.de.stable != stable))
			return -ESTALE;
		if (ret < 0)
			return ret;
		l->dir = x->r[i].dir;
		l->len = l->pos.de.name_len;
		ls->n++;
	}
	return 0;
}

/* Every entry of K's directory units naming stable, through the step's
 * index of them (made now when there is none for k, or again when it
 * has gone stale). */
static int scan_entries(struct fs_volume *v, struct chunk *k, uint64_t stable, struct lscan *ls)
{
	struct evac_lindex *x = v->evac_lindex;
	int ret, fresh = 0;

	if (x && x->k != k)
		evac_lindex_drop(v);
	if (!v->evac_lindex) {
		x = calloc(1, sizeof(*x));
		if (!x)
			return -ENOMEM;
		v->evac_lindex = x;
		ret = index_build(v, k, x);
		if (ret < 0) {
			evac_lindex_drop(v);
			return ret;
		}
		fresh = 1;
	}
	ret = index_find(v, x, stable, ls);
	if (ret == -ESTALE && !fresh) {
		ls->n = 0;
		ret = index_build(v, k, x);
		if (ret == 0)
			ret = index_find(v, x, stable, ls);
	}
	if (ret < 0)
		evac_lindex_drop(v);
	return ret == -ESTALE ? -EUCLEAN : ret;
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
	uint32_t added = 0, emb = UINT32_MAX, spill = 0;
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
	if (emb != UINT32_MAX)
		spill = evac_inline_spill(t, ls.e[emb].len, &bare);
	for (uint32_t i = 0; i < ls.n; i++) {
		struct iref dir;
		int e = i == emb;
		ret = ino_get_stable(v, ls.e[i].dir, &dir);
		if (ret == 0)
			ret = dir_add(v, &dir, t, ls.e[i].name, ls.e[i].len, stable,
				      e ? &bare : NULL, e && !spill ? inl : NULL,
				      e && (bare.flags & OD_INF_INLINE) ? bare.inline_len : 0,
				      &npos[i]);
		if (ret < 0)
			break;
		added = i + 1;
		if (e) {
			r2.loc = dir_embedded_loc(&npos[i]);
			r2.ino = bare;
		}
	}
	if (ret == 0 && (has_data || spill)) {
		ret = spill ? file_fill_new(v, &r2, inl, spill)
			    : evac_move_data(v, k, &r, &r2, t, blocks);
		data_moved = ret == 0; /* blocks taken in t, freed on a failure */
		if (ret == 0 && spill)
			ret = ino_write(v, &r2);
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
		int ret = ino_read(v, evac_slot_at(k, s), &p);
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
