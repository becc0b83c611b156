/* fsck pass 4: names, link counts, the stable-number map and continuation
 * chains -- invariant 2 seen from one chunk. Every entry naming an inode
 * sits in that inode's chunk, so the entries found here are all the names a
 * file of this chunk has, and its link count is checked locally; a
 * directory's count (2 + its subdirectories) is exact here when it has no
 * parts in other chunks, and deferred otherwise.
 * Checks:   the map entries homed here (and those of the foster maps hosted
 *           here, fsck_foster.c) against the inodes found (a used
 *           entry must lead to an inode with its number and generation);
 *           each inode homed here against its map entry (a slot the map
 *           does not lead to is garbage); what each entry names (a free
 *           number, a missing inode, one elsewhere); link counts; that a
 *           directory is named once and its parent is the directory holding
 *           its entry; next pointers inside the chunk; that a continuation
 *           whose head is in this chunk has it; the root (made anew, empty,
 *           when it is lost).
 * Repairs:  clear entries naming free or missing inodes, fix link counts,
 *           link orphans into lost+found (fsck_pass4_lost.c),
 *           zero garbage slots, free map entries leading nowhere (or point
 *           them at the inode when it is here), rebuild entries of a map
 *           block that was replaced.
 * Defers:   continuations' heads in other chunks, next pointers into other
 *           chunks, map entries placing an inode elsewhere, inodes here whose
 *           number is homed elsewhere, link counts of directories with
 *           parts elsewhere, entries naming an inode of another chunk that is
 *           not here.
 * Relies on passes 1-3 (records, entries, block owners for unclaiming). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fsck/fsck_int.h"

static int is_dir(const struct fsck_ino *r)
{
	return S_ISDIR(r->ino.mode);
}

/* The number of the file an inode belongs to (its head's). */
static uint64_t head_of(const struct fsck_ino *r)
{
	return (r->ino.flags & OD_INF_CONT) ? r->ino.head_stable : r->ino.stable;
}

static struct od_loc here(const struct fsck_ctx *c, const struct fsck_ino *r)
{
	struct od_loc l = { .chunk = c->index, .block = r->block, .off = r->off };

	return l;
}

void fsck_write_map_entry(struct fsck_ctx *c, uint32_t idx)
{
	struct fsck_unit *u = fsck_unit_find(c, c->hdr.map_start + idx / OD_MAP_PER_BLOCK);

	if (!u || !u->data)
		return;
	od_put_map_entry(u->data + OD_MB_HEADER_SIZE + (idx % OD_MAP_PER_BLOCK) * OD_MAP_ENTRY_SIZE,
			 &c->map[idx]);
	fsck_unit_modified(c, u);
}

void fsck_set_nlink(struct fsck_ctx *c, uint32_t ri, uint32_t nlink)
{
	struct fsck_ino *r = &c->recs[ri];
	struct fsck_unit *u = fsck_unit_find(c, r->block);
	struct od_inode ino;

	r->ino.nlink = nlink;
	if (!u || !u->data)
		return;
	od_get_inode(u->data + r->off, &ino);
	ino.nlink = nlink;
	od_put_inode(u->data + r->off, &ino);
	fsck_unit_modified(c, u);
}

/* Remove the entry as the library does: merged into its predecessor, or
 * turned into the free first entry; its name, inode and inline data go. */
void fsck_clear_entry(struct fsck_ctx *c, uint32_t di)
{
	struct fsck_dent *d = &c->dents[di];
	struct fsck_unit *u = fsck_unit_find(c, d->unit);
	uint32_t prev = 0;
	struct od_dirent de;

	if (!u || !u->data)
		return;
	for (uint32_t off = OD_MB_HEADER_SIZE; off < d->off;) {
		struct od_dirent x;
		od_get_dirent(u->data + off, &x);
		if (x.rec_len == 0)
			return;
		prev = off;
		off += x.rec_len;
	}
	if (d->kind == OD_DE_EMBEDDED) {
		uint32_t ri = fsck_rec_at(c, d->unit,
					  (uint16_t)(d->off + OD_DIRENT_HEADER + od_align8(d->name_len)));
		if (ri != FSCK_NONE) {
			fsck_unclaim(c, ri);
			c->recs[ri].dead = 1;
		}
	}
	od_get_dirent(u->data + d->off, &de);
	memset(u->data + d->off, 0, de.rec_len);
	if (prev) {
		struct od_dirent pd;
		od_get_dirent(u->data + prev, &pd);
		pd.rec_len = (uint16_t)(pd.rec_len + de.rec_len);
		od_put_dirent(u->data + prev, &pd);
	} else {
		struct od_dirent fr = { .rec_len = de.rec_len, .kind = OD_DE_FREE };
		od_put_dirent(u->data + d->off, &fr);
	}
	fsck_unit_modified(c, u);
	d->cleared = 1;
}

/* --- the map ---------------------------------------------------------------- */

/* Entries of a map block that had to be replaced: from the inodes found. */
static void rebuild_map(struct fsck_ctx *c)
{
	uint32_t n = 0;

	for (uint32_t ri = 0; ri < c->nrecs; ri++) {
		struct fsck_ino *r = &c->recs[ri];
		uint32_t idx = OD_STABLE_INDEX(r->ino.stable);
		if (r->dead || (r->ino.flags & OD_INF_CONT) || OD_STABLE_CHUNK(r->ino.stable) != c->index ||
		    idx >= c->nmap || c->map_lost[idx] != 2 || (c->map[idx].flags & OD_MAPF_USED))
			continue;
		c->map[idx].loc = here(c, r);
		c->map[idx].flags = OD_MAPF_USED;
		c->map[idx].generation = r->ino.generation;
		fsck_write_map_entry(c, idx);
		n++;
	}
	if (n)
		fsck_note(c, "%u map entries rebuilt from the inodes found", n);
}

int fsck_map_entry_found(struct fsck_ctx *c, uint64_t s, const struct od_map_entry *e,
			 struct fsck_pctx *p)
{
	uint32_t ri = e->loc.chunk == c->index ? fsck_rec_at(c, e->loc.block, e->loc.off)
					       : FSCK_NONE;

	if (ri == FSCK_NONE || c->recs[ri].dead || c->recs[ri].ino.stable != s ||
	    (c->recs[ri].ino.flags & OD_INF_CONT))
		return 0;
	if (c->recs[ri].ino.generation != e->generation) {
		p->rec = &c->recs[ri];
		p->num = c->recs[ri].ino.generation;
		p->num2 = e->generation;
		fix_problem(c, PR_4_MAP_GEN, p);
	}
	return 1;
}

static void check_map(struct fsck_ctx *c)
{
	uint32_t count = fsck_chunk_count(c);

	c->used_map = 0;
	for (uint32_t idx = 0; idx < c->nmap; idx++) {
		struct od_map_entry *e = &c->map[idx];
		uint64_t s = OD_STABLE(c->index, idx);
		struct fsck_pctx p = { .num = idx, .ino = s, .blk = e->loc.block };
		uint32_t found;

		if (c->map_lost[idx] == 1 || !(e->flags & OD_MAPF_USED))
			continue;
		c->used_map++;
		if (e->loc.chunk != c->index && e->loc.chunk != OD_LOC_NONE && e->loc.chunk < count) {
			fsck_defer(c, DEF_MAP_LOC, FSCK_NONE, idx, s, e->loc);
			continue;
		}
		if (fsck_map_entry_found(c, s, e, &p))
			continue;
		/* Leads nowhere: to the inode if it is here after all, else freed. */
		found = fsck_hmap_get(&c->by_stable, s);
		if (found != FSCK_NONE && !c->recs[found].dead) {
			p.rec2 = &c->recs[found];
			if (fix_problem(c, PR_4_MAP_WRONG_LOC, &p)) {
				e->loc = here(c, &c->recs[found]);
				fsck_write_map_entry(c, idx);
			}
			continue;
		}
		/* (counted as it will be: the repair frees it) */
		c->used_map--;
		if (fix_problem(c, PR_4_MAP_DANGLING, &p)) {
			e->flags = 0;
			e->loc.chunk = OD_LOC_NONE;
			fsck_write_map_entry(c, idx);
		}
	}
}

/* --- entries ---------------------------------------------------------------- */

/* What keeps an embedded entry naming a free number from being cleared. */
static const char *keep_reason(struct fsck_ctx *c, const struct fsck_dent *d, char *buf,
			       size_t n)
{
	uint32_t ri;

	if (d->kind != OD_DE_EMBEDDED)
		return NULL;
	ri = fsck_rec_at(c, d->unit, (uint16_t)(d->off + OD_DIRENT_HEADER + od_align8(d->name_len)));
	if (ri == FSCK_NONE || c->recs[ri].dead)
		return NULL;
	if (is_dir(&c->recs[ri]) && (c->recs[ri].ino.nextents || c->recs[ri].ino.ext_block))
		return "a directory holding entries";
	if (c->recs[ri].ino.stable != d->stable &&
	    fsck_rec_by_stable(c, c->recs[ri].ino.stable) == ri) {
		snprintf(buf, n, "inode %llu, which is in use",
			 (unsigned long long)c->recs[ri].ino.stable);
		return buf;
	}
	return NULL;
}

static void clear_for(struct fsck_ctx *c, uint32_t di, uint32_t code, struct fsck_pctx *p)
{
	char buf[80];
	const char *keep = keep_reason(c, &c->dents[di], buf, sizeof(buf));

	if (keep) {
		p->str = keep;
		fix_problem(c, PR_4_ENT_FREE_KEEP, p);
		return;
	}
	if (fix_problem(c, code, p))
		fsck_clear_entry(c, di);
}

static void resolve_entries(struct fsck_ctx *c)
{
	uint32_t count = fsck_chunk_count(c);

	for (uint32_t di = 0; di < c->ndents; di++) {
		struct fsck_dent *d = &c->dents[di];
		struct fsck_unit *u = fsck_unit_find(c, d->unit);
		uint64_t s = d->stable;
		uint32_t home = OD_STABLE_CHUNK(s), idx = OD_STABLE_INDEX(s), ri;
		struct fsck_pctx p = { .blk = d->unit, .ino = s, .name_len = d->name_len };

		if (d->cleared || !u || !u->data)
			continue;
		p.name = u->data + d->off + OD_DIRENT_HEADER;
		if ((uint32_t)s == 0 || home >= count) {
			clear_for(c, di, PR_4_ENT_BAD_NUMBER, &p);
			continue;
		}
		if (home == c->index && !fsck_fostered(c)) {
			const struct od_map_entry *e = idx < c->nmap ? &c->map[idx] : NULL;
			if (e && c->map_lost[idx] == 1) {
				ri = fsck_hmap_get(&c->by_stable, s); /* the map is not known */
			} else if (!e || !(e->flags & OD_MAPF_USED)) {
				clear_for(c, di, PR_4_ENT_FREE, &p);
				continue;
			} else if (e->loc.chunk != c->index) {
				p.num = e->loc.chunk;
				fix_problem(c, PR_4_ENT_ELSEWHERE, &p);
				continue;
			} else {
				ri = fsck_rec_by_stable(c, s);
			}
			if (ri == FSCK_NONE || c->recs[ri].dead) {
				clear_for(c, di, PR_4_ENT_MISSING, &p);
				continue;
			}
		} else {
			ri = fsck_rec_by_stable(c, s);
			if (ri == FSCK_NONE) {
				struct od_loc none = { .chunk = home, .block = 0, .off = 0 };
				p.num = home;
				fix_problem(c, PR_4_ENT_NOT_HERE, &p);
				fsck_defer(c, DEF_ENTRY, FSCK_NONE, di, s, none);
				continue;
			}
		}
		d->target = ri;
		c->recs[ri].links++;
		if (is_dir(&c->recs[ri]))
			c->recs[d->dir].subdirs++;
	}
}

/* --- link counts, homes ------------------------------------------------------ */

static void check_links(struct fsck_ctx *c)
{
	for (uint32_t ri = 0; ri < c->nrecs; ri++) {
		struct fsck_ino *r = &c->recs[ri];
		struct fsck_pctx p = { .rec = r, .ino = r->ino.stable };
		int root = r->ino.stable == c->hdr.root_stable;
		uint32_t want;

		if (r->dead || (r->ino.flags & OD_INF_CONT))
			continue;
		c->res.inodes++;
		if (!is_dir(r)) {
			if (r->links == 0) {
				r->orphan = 1; /* reported by fsck_lost_found() */
			} else if (r->ino.nlink != r->links) {
				p.num = r->ino.nlink;
				p.num2 = r->links;
				if (fix_problem(c, PR_4_LINK_COUNT, &p))
					fsck_set_nlink(c, ri, r->links);
			}
			continue;
		}
		if (root) {
			if (r->links) {
				p.str = "named by an entry";
				fix_problem(c, PR_4_ROOT, &p);
			}
			if (r->ino.parent != r->ino.stable) {
				p.str = "its parent is not itself";
				fix_problem(c, PR_4_ROOT, &p);
			}
		} else if (r->links > 1) {
			p.num = r->links;
			fix_problem(c, PR_4_DIR_NAMES, &p);
		} else if (r->links == 0) {
			r->orphan = 1; /* reported by fsck_lost_found() */
		}
		if (!root && r->dent != FSCK_NONE && !c->dents[r->dent].cleared) {
			const struct fsck_ino *holder = &c->recs[c->dents[r->dent].dir];
			if (r->ino.parent != head_of(holder)) {
				p.ino = r->ino.parent;
				p.ino2 = head_of(holder);
				fix_problem(c, PR_4_DIR_PARENT, &p);
			}
		}
		want = 2 + r->subdirs;
		if (r->ino.next.chunk != OD_LOC_NONE) {
			/* Parts in other chunks hold more subdirectories. */
			fsck_defer(c, DEF_DIR_LINKS, ri, 0, r->ino.stable, r->ino.next);
		} else if (r->ino.nlink != want) {
			p.num = r->ino.nlink;
			p.num2 = want;
			if (fix_problem(c, PR_4_LINK_COUNT, &p))
				fsck_set_nlink(c, ri, want);
		}
	}
}

/* Each inode here with a number: its map entry must lead to it. */
static void check_homes(struct fsck_ctx *c)
{
	for (uint32_t ri = 0; ri < c->nrecs; ri++) {
		struct fsck_ino *r = &c->recs[ri];
		uint64_t s = r->ino.stable;
		uint32_t idx = OD_STABLE_INDEX(s), other;
		struct fsck_pctx p = { .rec = r, .ino = s };
		const struct od_map_entry *e;

		if (r->dead || (r->ino.flags & OD_INF_CONT))
			continue;
		if (OD_STABLE_CHUNK(s) != c->index || fsck_fostered(c)) {
			struct od_map_entry fe;
			int fr = fsck_foster_entry_here(c, s, &fe);
			if (fr == 0) {
				fsck_defer(c, DEF_MAP_HOME, ri, 0, s, here(c, r));
				continue;
			}
			/* Its home's foster map is here: checked now. */
			if (fr < 0 || ((fe.flags & OD_MAPF_USED) && fe.loc.chunk == c->index &&
				       fe.loc.block == r->block && fe.loc.off == r->off))
				continue;
			if (!(fe.flags & OD_MAPF_USED))
				p.str = "(in a foster map here) is free";
			else if (fe.loc.chunk == c->index)
				continue; /* reported by fsck_foster_check (pointed here if fixed) */
			else
				p.str = "(in a foster map here) places it in another chunk";
			if (r->slot != FSCK_NONE) {
				if (fix_problem(c, PR_4_SLOT_UNMAPPED, &p)) {
					fsck_unclaim(c, ri);
					fsck_zero_slot(c, ri);
				}
			} else {
				fix_problem(c, PR_4_EMBED_UNMAPPED, &p);
			}
			continue;
		}
		if (idx >= c->nmap) {
			p.str = "inode number index";
			p.num = idx;
			p.num2 = c->nmap;
			fix_problem(c, PR_4_WATERMARK, &p);
			continue;
		}
		if (c->map_lost[idx] == 1)
			continue;
		e = &c->map[idx];
		if ((e->flags & OD_MAPF_USED) && e->loc.chunk == c->index && e->loc.block == r->block &&
		    e->loc.off == r->off)
			continue;
		other = (e->flags & OD_MAPF_USED) ? fsck_rec_by_stable(c, s) : FSCK_NONE;
		if (!(e->flags & OD_MAPF_USED))
			p.str = "is free";
		else if (e->loc.chunk != c->index)
			p.str = "places it in another chunk";
		else if (other != FSCK_NONE)
			p.str = "leads to another copy of it";
		else
			continue; /* the map entry was reported (pointed here if fixed) */
		if (r->slot != FSCK_NONE) {
			if (fix_problem(c, PR_4_SLOT_UNMAPPED, &p)) {
				fsck_unclaim(c, ri);
				fsck_zero_slot(c, ri);
			}
		} else {
			fix_problem(c, PR_4_EMBED_UNMAPPED, &p);
		}
	}
}

/* --- continuation chains ---------------------------------------------------- */

void fsck_cut_chain(struct fsck_ctx *c, uint32_t ri)
{
	struct fsck_ino *r = &c->recs[ri];
	struct fsck_unit *u = fsck_unit_find(c, r->block);
	struct od_inode ino;

	r->ino.next.chunk = OD_LOC_NONE;
	r->ino.next.block = 0;
	r->ino.next.off = 0;
	if (!u || !u->data)
		return;
	od_get_inode(u->data + r->off, &ino);
	ino.next = r->ino.next;
	od_put_inode(u->data + r->off, &ino);
	fsck_unit_modified(c, u);
}

static void check_chains(struct fsck_ctx *c)
{
	/* Who points at whom inside the chunk. */
	for (uint32_t ri = 0; ri < c->nrecs; ri++) {
		struct fsck_ino *r = &c->recs[ri];
		struct od_loc nx = r->ino.next;
		struct fsck_pctx p = { .rec = r, .blk = nx.block, .num = nx.off };
		uint32_t ti;

		if (r->dead || nx.chunk == OD_LOC_NONE || nx.chunk >= fsck_chunk_count(c))
			continue;
		if (nx.chunk != c->index) {
			fsck_defer(c, DEF_NEXT, ri, 0, head_of(r), nx);
			continue;
		}
		ti = fsck_rec_at(c, nx.block, nx.off);
		if (ti == FSCK_NONE || c->recs[ti].dead)
			p.str = "where there is no inode";
		else if (!(c->recs[ti].ino.flags & OD_INF_CONT))
			p.str = "which is not a continuation";
		else if (c->recs[ti].ino.head_stable != head_of(&c->recs[ri]))
			p.str = "a continuation of another inode";
		else if (is_dir(&c->recs[ti]) != is_dir(&c->recs[ri]))
			p.str = "a continuation of another type";
		else
			p.str = NULL;
		if (p.str) {
			if (fix_problem(c, PR_4_NEXT_BAD, &p))
				fsck_cut_chain(c, ri);
			continue;
		}
		c->recs[ti].preds++;
	}
	for (uint32_t ti = 0; ti < c->nrecs; ti++) {
		struct fsck_ino *t = &c->recs[ti];
		struct fsck_pctx p = { .rec = t, .ino = t->ino.head_stable };
		struct od_loc head_at = { .chunk = t->ino.head_chunk, .block = 0, .off = 0 };
		uint32_t hi;

		if (t->dead || !(t->ino.flags & OD_INF_CONT))
			continue;
		if (t->preds > 1) {
			p.num = t->preds;
			fix_problem(c, PR_4_CONT_TWICE, &p);
		}
		if (t->ino.head_chunk != c->index) {
			if (t->ino.head_chunk < fsck_chunk_count(c))
				fsck_defer(c, DEF_HEAD, ti, 0, t->ino.head_stable, head_at);
			continue;
		}
		if (is_dir(t))
			fix_problem(c, PR_4_PART_HOME, &p);
		hi = fsck_rec_by_stable(c, t->ino.head_stable);
		if (hi == FSCK_NONE) {
			/* Its head says it is here and is not: nothing reaches it. */
			if (fix_problem(c, PR_4_CONT_ORPHAN, &p)) {
				fsck_unclaim(c, ti);
				fsck_zero_slot(c, ti);
			}
			continue;
		}
		if (is_dir(&c->recs[hi]) != is_dir(t) ||
		    (!is_dir(t) && !S_ISREG(c->recs[hi].ino.mode) && !S_ISLNK(c->recs[hi].ino.mode))) {
			p.rec2 = &c->recs[hi];
			p.str = is_dir(t) ? "not a directory" : "not a file or symlink";
			fix_problem(c, PR_4_CONT_BAD_HEAD, &p);
			continue;
		}
		if (t->preds == 0) /* reached through another chunk */
			fsck_defer(c, DEF_HEAD, ti, 0, t->ino.head_stable, head_at);
	}
}

static void check_root(struct fsck_ctx *c)
{
	uint64_t root = c->hdr.root_stable;
	struct fsck_pctx p = { .ino = root };
	uint32_t ri;

	if (c->index != 0 || OD_STABLE_CHUNK(root) != 0)
		return;
	ri = fsck_rec_by_stable(c, root);
	if (ri == FSCK_NONE) {
		uint32_t slot;
		const char *why = fsck_root_place(c, &slot);
		char buf[160];
		if (why) {
			snprintf(buf, sizeof(buf), "not found in this chunk, and cannot be made anew: %s",
				 why);
			p.str = buf;
			fix_problem(c, PR_4_ROOT, &p);
		} else if (fix_problem(c, PR_4_ROOT_LOST, &p)) {
			int ret = fsck_make_root(c, slot);
			if (ret < 0 && !c->oper)
				c->oper = ret;
		}
	} else if (!is_dir(&c->recs[ri])) {
		p.str = "not a directory";
		fix_problem(c, PR_4_ROOT, &p);
	} else if (c->recs[ri].slot == FSCK_NONE) {
		p.str = "embedded in an entry, not in an inode-area slot";
		fix_problem(c, PR_4_ROOT, &p);
	}
}

int fsck_pass4(struct fsck_ctx *c)
{
	rebuild_map(c);
	check_map(c);
	fsck_foster_check(c);
	resolve_entries(c);
	if (fsck_cancelled(c))
		return 0;
	check_homes(c);
	check_chains(c);
	check_links(c);
	check_root(c);
	if (c->oper)
		return c->oper;
	return fsck_lost_found(c);
}
