/* fsck pass 4, the last step: inodes no entry names (orphans) are given a
 * name in the chunk's lost+found, "#<number>", the way the library would
 * have linked them, so that what they hold is kept and reachable.
 * The lost+found of a chunk is the directory "lost+found" of the root, when
 * the root's head lives in this chunk (chunk 0): found among the root's
 * entries here, or made here (an embedded directory in a root unit with
 * room, its map entry, one directory unit). In the other chunks it is
 * lost+found's part there, the directory part flagged OD_INF_LOSTFOUND that
 * the library makes in a chunk's first slot when the chunk is first used
 * (fs/lostfound.c); a chunk without one (an older image, or lost+found
 * removed) has its orphans reported and left (PR_4_ORPHAN_KEEP). Every byte
 * this writes is in this chunk, and so are the counts it changes (the
 * orphan's, and in chunk 0 lost+found's and the root's), but one: an orphan
 * directory linked into a part makes lost+found's link count, in its head,
 * one short. That is reported as deferred and set when lost+found's chunk is
 * checked with -x (its count is confirmed over its parts there).
 * Also the root made anew when its inode is lost (fsck_make_root()), so
 * that the orphans have somewhere to go.
 * Relies on passes 1-4 (records, entries, block owners, the map). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fs/format/crc32c.h"
#include "fs/fsck/fsck_int.h"

static int is_dir_rec(const struct fsck_ino *r)
{
	return S_ISDIR(r->ino.mode);
}

/* The root's record, when its head is in this chunk. */
static uint32_t root_rec(struct fsck_ctx *c)
{
	uint64_t root = c->hdr.root_stable;
	uint32_t ri;

	if ((uint32_t)root == 0 || OD_STABLE_CHUNK(root) != c->index)
		return FSCK_NONE;
	ri = fsck_rec_by_stable(c, root);
	if (ri == FSCK_NONE || c->recs[ri].dead || !is_dir_rec(&c->recs[ri]) ||
	    (c->recs[ri].ino.flags & OD_INF_CONT))
		return FSCK_NONE;
	return ri;
}

/* lost+found among the root's entries here, or FSCK_NONE. */
static uint32_t find_lf(struct fsck_ctx *c, uint32_t root)
{
	for (uint32_t di = 0; di < c->ndents; di++) {
		const struct fsck_dent *d = &c->dents[di];
		struct fsck_unit *u;
		if (d->cleared || d->dir != root || d->target == FSCK_NONE ||
		    d->name_len != OD_LF_NAME_LEN)
			continue;
		u = fsck_unit_find(c, d->unit);
		if (!u || !u->data ||
		    memcmp(u->data + d->off + OD_DIRENT_HEADER, OD_LF_NAME, OD_LF_NAME_LEN) != 0)
			continue;
		if (c->recs[d->target].dead || !is_dir_rec(&c->recs[d->target]))
			return FSCK_NONE;
		return d->target;
	}
	return FSCK_NONE;
}

/* lost+found's part in this chunk (mkfs made it), or FSCK_NONE. */
static uint32_t lf_part_rec(struct fsck_ctx *c)
{
	const uint32_t both = OD_INF_CONT | OD_INF_LOSTFOUND;

	for (uint32_t ri = 0; ri < c->nrecs; ri++) {
		const struct fsck_ino *r = &c->recs[ri];
		if (!r->dead && is_dir_rec(r) && (r->ino.flags & both) == both &&
		    OD_STABLE_CHUNK(r->ino.head_stable) == OD_STABLE_CHUNK(c->hdr.root_stable))
			return ri;
	}
	return FSCK_NONE;
}

/* lost+found's record here: the root's entry when the root is here, else
 * its part; FSCK_NONE when there is none (yet). */
static uint32_t lf_rec(struct fsck_ctx *c)
{
	uint32_t root = root_rec(c);

	return root != FSCK_NONE ? find_lf(c, root) : lf_part_rec(c);
}

/* The number of the directory record ri belongs to (its head's). */
static uint64_t lf_head_stable(const struct fsck_ctx *c, uint32_t ri)
{
	const struct fsck_ino *r = &c->recs[ri];

	return (r->ino.flags & OD_INF_CONT) ? r->ino.head_stable : r->ino.stable;
}

/* Where in unit u an entry of `need` bytes fits: *at and the rec_len the
 * holder keeps (*keep, 0 when the new entry takes a free first entry's
 * place). 0, or -ENOSPC. */
static int unit_room(const struct fsck_unit *u, uint32_t need, uint32_t *holder, uint32_t *at,
		     uint32_t *keep)
{
	uint32_t size = (uint32_t)u->units * OD_BLOCK_SIZE;

	for (uint32_t off = OD_MB_HEADER_SIZE; off + OD_DIRENT_HEADER <= size;) {
		struct od_dirent de;
		uint32_t used;
		od_get_dirent(u->data + off, &de);
		if (de.rec_len < OD_DIRENT_HEADER || (de.rec_len & 7) || off + de.rec_len > size)
			return -ENOSPC;
		used = od_dirent_used(u->data + off, &de);
		if (used <= de.rec_len && de.rec_len - used >= need) {
			*holder = off;
			*at = off + used;
			*keep = used;
			return 0;
		}
		off += de.rec_len;
	}
	return -ENOSPC;
}

/* A walked unit of directory ri with room for `need` bytes. */
static int dir_room(struct fsck_ctx *c, uint32_t ri, uint32_t need, struct fsck_unit **out,
		    uint32_t *holder, uint32_t *at, uint32_t *keep)
{
	struct fsck_exts x = { 0 };
	int ret = fsck_extents(c, ri, &x);

	if (ret < 0) {
		fsck_exts_free(&x);
		return ret;
	}
	ret = -ENOSPC;
	for (uint32_t i = 0; i < x.n && ret == -ENOSPC; i++) {
		struct fsck_unit *u = fsck_unit_find(c, x.ext[i].pblk);
		if (!u || !u->data || !u->walked || u->type != OD_MB_DIR)
			continue;
		if (unit_room(u, need, holder, at, keep) == 0) {
			*out = u;
			ret = 0;
		}
	}
	fsck_exts_free(&x);
	return ret;
}

/* Free: no owner, and not marked used, unless the bitmap block has no
 * valid copy (pass 5 rebuilds it from the owners, all of which were seen:
 * cannot_link() insists on it). */
static int block_free(const struct fsck_ctx *c, uint32_t b)
{
	if (c->owner[b])
		return 0;
	return c->bitmap_unknown[b / OD_BITMAP_BITS_PER_BLOCK] ||
	       !((c->disk_bitmap[b >> 3] >> (b & 7)) & 1);
}

/* A place for a new directory unit: copy 0 and its mirror free. */
static int unit_place(const struct fsck_ctx *c, uint32_t *blk)
{
	uint32_t du = c->hdr.dir_unit;

	for (uint32_t b = c->hdr.data_start; b + du <= c->half; b++) {
		uint32_t k;
		for (k = 0; k < du; k++)
			if (!block_free(c, b + k) || !block_free(c, b + c->half + k))
				break;
		if (k == du) {
			*blk = b;
			return 0;
		}
	}
	return -ENOSPC;
}

/* A map index for a new number: a free entry below the watermark that no
 * inode found here has (even a dead one), an entry of a replaced map block
 * included (its entries are rebuilt from the inodes found, so an index no
 * inode has is free), else the watermark when its block is here. */
int fsck_map_slot(const struct fsck_ctx *c, uint32_t *idx)
{
	for (uint32_t i = 0; i < c->nmap; i++) {
		if (c->map_lost[i] == 1 || (c->map[i].flags & OD_MAPF_USED) ||
		    fsck_hmap_get(&c->by_stable, OD_STABLE(c->index, i)) != FSCK_NONE)
			continue;
		*idx = i;
		return 0;
	}
	if (c->nmap < c->hdr.max_inodes) {
		/* (fsck_map_claim() makes its block when it is the first) */
		*idx = c->nmap;
		return 0;
	}
	return -ENOSPC;
}

int fsck_map_claim(struct fsck_ctx *c, uint32_t idx, const struct fsck_ino *r)
{
	struct od_map_entry *e;

	if (idx == c->nmap) {
		struct od_map_entry *m = realloc(c->map, (c->nmap + 1) * sizeof(*m));
		uint32_t blk = c->hdr.map_start + idx / OD_MAP_PER_BLOCK;
		struct fsck_unit *mu = fsck_unit_find(c, blk);
		uint8_t *l;
		if (!mu && fsck_unit_new(c, blk, 1, OD_MB_MAP, 0, &mu) < 0)
			return -ENOMEM;
		if (!m)
			return fsck_oom(c);
		c->map = m;
		l = realloc(c->map_lost, c->nmap + 1);
		if (!l)
			return fsck_oom(c);
		c->map_lost = l;
		memset(&c->map[c->nmap], 0, sizeof(*m));
		c->map_lost[c->nmap] = 0;
		c->nmap++;
		c->hdr.map_watermark = c->nmap;
		c->hdr_changed = 1;
	}
	e = &c->map[idx];
	if (!(e->flags & OD_MAPF_USED))
		c->used_map++;
	e->loc.chunk = c->index;
	e->loc.block = r->block;
	e->loc.off = r->off;
	e->flags = OD_MAPF_USED;
	e->generation = r->ino.generation;
	if (c->map_lost[idx] == 2)
		c->map_lost[idx] = 0;
	fsck_write_map_entry(c, idx);
	return 0;
}

/* The generation a new number at map index idx gets. */
uint32_t fsck_map_next_gen(const struct fsck_ctx *c, uint32_t idx)
{
	uint32_t g = idx < c->nmap ? c->map[idx].generation + 1 : 1;

	return g ? g : 1;
}

/* Why the orphan ri cannot be linked into lost+found now, or NULL. */
static const char *cannot_link(struct fsck_ctx *c, uint32_t ri)
{
	uint32_t root = root_rec(c), lf, dummy, u32;
	struct fsck_unit *u;
	uint32_t ref_need = od_dirent_size(24, 0, 0);

	if (c->recs[ri].slot == FSCK_NONE)
		return "it is embedded in an entry that names another number";
	lf = lf_rec(c);
	if (root == FSCK_NONE && lf == FSCK_NONE && (c->hdr.flags & OD_CHF_FOSTERED))
		return "this chunk is being evacuated and its lost+found part is gone (the "
		       "evacuation drops it last; only the root's own chunk can make one): the "
		       "chunk cannot retire while the orphan stays";
	if (root == FSCK_NONE && lf == FSCK_NONE)
		return "this chunk holds no lost+found (only the root's own chunk can make one)";
	if (c->incomplete)
		return "some owners of blocks could not be read (no block can be taken)";
	if (!c->owner || !c->disk_bitmap)
		return "the blocks in use are not known";
	if (c->hdr.flags & OD_CHF_BITMAP_UNINIT)
		return "the block bitmap was never written";
	if (lf != FSCK_NONE) {
		if (dir_room(c, lf, ref_need, &u, &dummy, &dummy, &dummy) == 0)
			return NULL;
		if (c->recs[lf].ino.nextents >= OD_INODE_EXTENTS || c->recs[lf].ino.ext_block)
			return "lost+found is full";
		return unit_place(c, &u32) == 0 ? NULL : "no room for a directory unit";
	}
	if (dir_room(c, root, od_dirent_size(OD_LF_NAME_LEN, 1, 0), &u, &dummy, &dummy, &dummy) < 0 &&
	    (c->recs[root].ino.nextents >= OD_INODE_EXTENTS || c->recs[root].ino.ext_block))
		return "no room in the root's units for lost+found";
	if (fsck_map_slot(c, &u32) < 0)
		return "no free inode number for lost+found";
	if (unit_place(c, &u32) < 0)
		return "no room for a directory unit";
	return NULL;
}

/* Write the entry (and its embedded inode) into u at `at`. */
static void put_entry(struct fsck_ctx *c, struct fsck_unit *u, uint32_t holder, uint32_t at,
		      uint32_t keep, const char *name, uint64_t stable, const struct od_inode *embed)
{
	uint32_t len = (uint32_t)strlen(name), end;
	struct od_dirent hd, de = { .name_len = (uint8_t)len,
				    .kind = embed ? OD_DE_EMBEDDED : OD_DE_REF,
				    .hash = crc32c(0, name, len), .stable = stable };

	od_get_dirent(u->data + holder, &hd);
	end = holder + hd.rec_len;
	if (keep) {
		hd.rec_len = (uint16_t)keep;
		od_put_dirent(u->data + holder, &hd);
	}
	de.rec_len = (uint16_t)(end - at);
	memset(u->data + at, 0, od_dirent_size(len, embed != NULL, 0));
	od_put_dirent(u->data + at, &de);
	memcpy(u->data + at + OD_DIRENT_HEADER, name, len);
	if (embed)
		od_put_inode(u->data + at + OD_DIRENT_HEADER + od_align8(len), embed);
	fsck_unit_modified(c, u);
}

static int push_dent(struct fsck_ctx *c, uint32_t unit, uint32_t off, uint64_t stable,
		     uint32_t dir, uint32_t target, uint8_t kind, uint8_t name_len)
{
	struct fsck_dent *d;

	if (fsck_grow(c, &c->dents, &c->capdents, sizeof(*c->dents), c->ndents + 1) < 0)
		return -ENOMEM;
	d = &c->dents[c->ndents++];
	memset(d, 0, sizeof(*d));
	d->unit = unit;
	d->off = off;
	d->stable = stable;
	d->dir = dir;
	d->target = target;
	d->kind = kind;
	d->name_len = name_len;
	return 0;
}

/* A new directory unit for lost+found (record lf): its only entry free. */
static int new_unit(struct fsck_ctx *c, uint32_t lf, uint64_t lf_stable, struct fsck_unit **out)
{
	uint32_t du = c->hdr.dir_unit, blk, seq = 0;
	struct fsck_ino *r = &c->recs[lf];
	struct fsck_unit *u;
	struct od_extent e;

	if (unit_place(c, &blk) < 0 || r->ino.nextents >= OD_INODE_EXTENTS)
		return -ENOSPC;
	for (uint32_t i = 0; i < r->ino.nextents; i++)
		if (r->ino.ext[i].lblk >= seq)
			seq = (uint32_t)r->ino.ext[i].lblk + 1;
	if (fsck_unit_new(c, blk, (uint16_t)du, OD_MB_DIR, lf_stable, &u) < 0)
		return -ENOMEM;
	{
		struct od_mb_header h;
		od_get_mb_header(u->data, &h);
		h.seq = seq;
		od_put_mb_header(u->data, &h);
	}
	for (uint32_t k = 0; k < du; k++) {
		uint32_t b[2] = { blk + k, blk + k + c->half };
		for (int m = 0; m < 2; m++) {
			fsck_set_owner(c, b[m], lf + 1);
			c->disk_bitmap[b[m] >> 3] |= (uint8_t)(1u << (b[m] & 7));
		}
	}
	c->hdr.free_blocks -= 2 * du;
	c->hdr_changed = 1;
	e.lblk = seq;
	e.pblk = blk;
	e.len = du;
	r->ino.ext[r->ino.nextents++] = e;
	c->res.dir_units++;
	*out = u;
	return 0;
}

/* The inode of record ri, as it is now, back into its unit. */
void fsck_store_inode(struct fsck_ctx *c, uint32_t ri)
{
	struct fsck_ino *r = &c->recs[ri];
	struct fsck_unit *u = fsck_unit_find(c, r->block);

	if (!u || !u->data)
		return;
	od_put_inode(u->data + r->off, &r->ino);
	fsck_unit_modified(c, u);
}

/* Make lost+found in the root (record root): an embedded directory, in a
 * new unit of the root's when its units have no room. */
static int make_lf(struct fsck_ctx *c, uint32_t root, uint32_t *lf_out)
{
	uint32_t idx, holder, at, keep, ri, di;
	struct fsck_unit *u;
	struct od_inode ino;
	uint64_t s;
	int ret;

	if (fsck_map_slot(c, &idx) < 0)
		return -ENOSPC;
	ret = dir_room(c, root, od_dirent_size(OD_LF_NAME_LEN, 1, 0), &u, &holder, &at, &keep);
	if (ret == -ENOSPC) {
		ret = new_unit(c, root, c->recs[root].ino.stable, &u);
		if (ret < 0)
			return ret;
		fsck_store_inode(c, root);
		holder = at = OD_MB_HEADER_SIZE;
		keep = 0;
	}
	if (ret < 0)
		return ret;
	s = OD_STABLE(c->index, idx);
	memset(&ino, 0, sizeof(ino));
	ino.stable = s;
	ino.generation = fsck_map_next_gen(c, idx);
	ino.mode = S_IFDIR | 0700;
	ino.nlink = 2;
	ino.parent = c->recs[root].ino.stable;
	ino.next.chunk = OD_LOC_NONE;
	ino.atime = ino.mtime = ino.ctime = (int64_t)time(NULL);
	put_entry(c, u, holder, at, keep, OD_LF_NAME, s, &ino);
	di = c->ndents;
	ret = push_dent(c, u->block, at, s, root, FSCK_NONE, OD_DE_EMBEDDED, OD_LF_NAME_LEN);
	if (ret < 0)
		return ret;
	ret = fsck_add_rec(c, &ino, u->block, (uint16_t)(at + OD_DIRENT_HEADER + od_align8(OD_LF_NAME_LEN)),
			   FSCK_NONE, di, &ri);
	if (ret < 0)
		return ret;
	c->recs[ri].links = 1;
	c->recs[ri].walked = 1;
	c->recs[ri].ext_done = 1;
	c->dents[di].target = ri;
	ret = fsck_map_claim(c, idx, &c->recs[ri]);
	if (ret < 0)
		return ret;
	c->hdr.used_inodes++;
	c->hdr_changed = 1;
	c->res.inodes++;
	/* The root gains a subdirectory. */
	c->recs[root].subdirs++;
	c->recs[root].ino.nlink++;
	fsck_store_inode(c, root);
	fsck_note(c, "lost+found made: inode %llu", (unsigned long long)s);
	*lf_out = ri;
	return 0;
}

/* Orphan directory ri, now named in lost+found (record lf): its parent is
 * lost+found, which gains a subdirectory. Its count is in its head: here
 * when lf is the head, else in another chunk (deferred). */
static void adopt_dir(struct fsck_ctx *c, uint32_t ri, uint32_t lf)
{
	struct fsck_ino *l = &c->recs[lf];
	uint64_t lf_stable = lf_head_stable(c, lf);

	c->recs[ri].ino.parent = lf_stable;
	fsck_store_inode(c, ri);
	l->subdirs++;
	if (!(l->ino.flags & OD_INF_CONT)) {
		l->ino.nlink++;
		fsck_store_inode(c, lf);
		return;
	}
	fsck_note(c, "deferred: lost+found (inode %llu of chunk %u) gains subdirectory %llu here: "
		     "its link count is set when chunk %u is checked with -x",
		  (unsigned long long)lf_stable, OD_STABLE_CHUNK(lf_stable),
		  (unsigned long long)c->recs[ri].ino.stable, OD_STABLE_CHUNK(lf_stable));
}

/* Link orphan ri into lost+found as name. */
/* Link ri into directory lf (lost+found, or the root for lost+found's
 * own head made again) as name. */
static int link_into(struct fsck_ctx *c, uint32_t ri, uint32_t lf, const char *name)
{
	uint32_t holder, at, keep, need;
	uint64_t lf_stable = lf_head_stable(c, lf);
	struct fsck_unit *u;
	int ret;

	need = od_dirent_size((uint32_t)strlen(name), 0, 0);
	if (dir_room(c, lf, need, &u, &holder, &at, &keep) < 0) {
		ret = new_unit(c, lf, lf_stable, &u);
		if (ret < 0)
			return ret;
		fsck_store_inode(c, lf);
		holder = at = OD_MB_HEADER_SIZE;
		keep = 0;
	}
	put_entry(c, u, holder, at, keep, name, c->recs[ri].ino.stable, NULL);
	ret = push_dent(c, u->block, at, c->recs[ri].ino.stable, lf, ri, OD_DE_REF,
			(uint8_t)strlen(name));
	if (ret < 0)
		return ret;
	c->recs[ri].links = 1;
	if (is_dir_rec(&c->recs[ri]))
		adopt_dir(c, ri, lf);
	else if (c->recs[ri].ino.nlink != 1) {
		fsck_set_nlink(c, ri, 1);
	}
	return 0;
}

int fsck_link_orphan(struct fsck_ctx *c, uint32_t ri, const char *name)
{
	uint32_t root = root_rec(c), lf = lf_rec(c);
	int ret;

	if (lf == FSCK_NONE) {
		if (root == FSCK_NONE)
			return -ENOENT;
		/* lost+found's own head made again from its parts: named
		 * lost+found in the root again */
		if ((c->recs[ri].ino.flags & OD_INF_LOSTFOUND) && is_dir_rec(&c->recs[ri]) &&
		    !(c->recs[ri].ino.flags & OD_INF_CONT))
			return link_into(c, ri, root, OD_LF_NAME);
		ret = make_lf(c, root, &lf);
		if (ret < 0)
			return ret;
	}
	return link_into(c, ri, lf, name);
}

/* --- a root lost with its inode ------------------------------------------- */

/* Where a new root can go: a free slot below the watermark whose block is
 * here, and its map entry. NULL and *slot, or why not. */
const char *fsck_root_place(struct fsck_ctx *c, uint32_t *slot)
{
	uint32_t idx = OD_STABLE_INDEX(c->hdr.root_stable);

	if (idx >= c->nmap || c->map_lost[idx] == 1 ||
	    !fsck_unit_find(c, c->hdr.map_start + idx / OD_MAP_PER_BLOCK))
		return "its map entry cannot be read";
	if (c->incomplete || !c->owner || !c->disk_bitmap)
		return "some owners of blocks could not be read";
	for (uint32_t k = 0; k < c->hdr.islot_watermark; k++) {
		uint32_t block = c->hdr.itable_start + k / OD_ISLOTS_PER_BLOCK;
		uint16_t off = (uint16_t)(OD_MB_HEADER_SIZE + (k % OD_ISLOTS_PER_BLOCK) * OD_INODE_SIZE);
		struct fsck_unit *u = fsck_unit_find(c, block);
		uint32_t ri = fsck_rec_at(c, block, off);
		uint32_t z = 0;
		if (!u || !u->data || (ri != FSCK_NONE && !c->recs[ri].dead))
			continue;
		for (uint32_t i = 0; i < OD_INODE_SIZE; i++)
			z |= u->data[off + i];
		if (z == 0 || ri != FSCK_NONE) {
			*slot = k;
			return NULL;
		}
	}
	return "no free inode-area slot below the watermark";
}

/* An empty root directory in slot `slot`, with the root's number and its
 * map entry's generation: the orphans of this chunk then go to its
 * lost+found. What the lost root listed is not found again here: inodes
 * embedded in its units went with it, and their map entries were freed. */
int fsck_make_root(struct fsck_ctx *c, uint32_t slot)
{
	uint64_t root = c->hdr.root_stable;
	uint32_t idx = OD_STABLE_INDEX(root), block, ri;
	uint16_t off = (uint16_t)(OD_MB_HEADER_SIZE + (slot % OD_ISLOTS_PER_BLOCK) * OD_INODE_SIZE);
	struct od_map_entry *e = &c->map[idx];
	struct fsck_unit *u, *mu;
	struct od_inode ino;
	int ret;

	block = c->hdr.itable_start + slot / OD_ISLOTS_PER_BLOCK;
	u = fsck_unit_find(c, block);
	mu = fsck_unit_find(c, c->hdr.map_start + idx / OD_MAP_PER_BLOCK);
	if (!u || !u->data || !mu || !mu->data)
		return -EUCLEAN;
	memset(&ino, 0, sizeof(ino));
	ino.stable = root;
	ino.generation = e->generation ? e->generation : 1;
	ino.mode = S_IFDIR | 0755;
	ino.nlink = 2;
	ino.parent = root;
	ino.next.chunk = OD_LOC_NONE;
	ino.atime = ino.mtime = ino.ctime = (int64_t)time(NULL);
	if ((ret = fsck_slot_put(c, block, off, slot, &ino, &ri)) < 0)
		return ret;
	c->recs[ri].walked = 1;
	c->recs[ri].ext_done = 1;
	if (!(e->flags & OD_MAPF_USED))
		c->used_map++;
	e->loc.chunk = c->index;
	e->loc.block = block;
	e->loc.off = off;
	e->flags = OD_MAPF_USED;
	e->generation = ino.generation;
	if (c->map_lost[idx] == 2)
		c->map_lost[idx] = 0;
	od_put_map_entry(mu->data + OD_MB_HEADER_SIZE + (idx % OD_MAP_PER_BLOCK) * OD_MAP_ENTRY_SIZE,
			 e);
	fsck_unit_modified(c, mu);
	c->res.inodes++;
	fsck_note(c, "root directory %llu made anew in slot %u", (unsigned long long)root, slot);
	return 0;
}

/* An orphan that cannot be linked anywhere can still go: when it sits in
 * a slot and its number is mapped here (a number mapped elsewhere is that
 * chunk's). */
static int clearable(const struct fsck_ctx *c, uint32_t ri)
{
	const struct fsck_ino *r = &c->recs[ri];

	/* (never what the salvage found: kept for a run that can link it) */
	return r->slot != FSCK_NONE && !r->salvaged && OD_STABLE_CHUNK(r->ino.stable) == c->index &&
	       OD_STABLE_INDEX(r->ino.stable) < c->nmap;
}

static void clear_orphan(struct fsck_ctx *c, uint32_t ri)
{
	uint32_t idx = OD_STABLE_INDEX(c->recs[ri].ino.stable);

	/* A directory takes its units' entries with it: the chunk is checked
	 * again, and what they named is an orphan then. */
	if (S_ISDIR(c->recs[ri].ino.mode))
		c->restart = 1;
	fsck_unclaim(c, ri);
	fsck_zero_slot(c, ri);
	if (c->map[idx].flags & OD_MAPF_USED) {
		c->map[idx].flags = 0;
		c->map[idx].loc.chunk = OD_LOC_NONE;
		fsck_write_map_entry(c, idx);
		c->used_map--;
	}
}

/* lost+found's part here, made again where its chain expects it when it
 * was lost (and the volume is at hand): once per check. */
static int lf_ensure(struct fsck_ctx *c)
{
	uint32_t lf;
	int ret;

	if (c->lf_tried || lf_rec(c) != FSCK_NONE || root_rec(c) != FSCK_NONE)
		return 0;
	c->lf_tried = 1;
	ret = fsck_lf_remake(c, &lf);
	return ret == -ENOMEM ? ret : 0;
}

const char *fsck_adopt_blocker(struct fsck_ctx *c, uint32_t ri)
{
	uint32_t idx;

	if (fsck_map_slot(c, &idx) < 0)
		return "no free inode number here";
	if (lf_ensure(c) < 0)
		return "out of memory";
	return cannot_link(c, ri);
}

int fsck_adopt_orphan(struct fsck_ctx *c, uint32_t ri)
{
	struct fsck_pctx p = { .rec = &c->recs[ri], .ino = c->recs[ri].ino.stable };
	const char *why;
	char name[32];
	int ret = lf_ensure(c);

	if (ret < 0)
		return ret;
	why = cannot_link(c, ri);
	if (why) {
		/* Nowhere to put it: an inode of a slot whose number is this
		 * chunk's goes, as e2fsck clears an unattached inode it cannot
		 * connect; any other is reported and kept. */
		p.str = why;
		if (clearable(c, ri)) {
			if (fix_problem(c, PR_4_ORPHAN_CLEAR, &p))
				clear_orphan(c, ri);
		} else {
			fix_problem(c, PR_4_ORPHAN_KEEP, &p);
		}
		return 0;
	}
	snprintf(name, sizeof(name), "#%llu", (unsigned long long)c->recs[ri].ino.stable);
	if ((c->recs[ri].ino.flags & (OD_INF_LOSTFOUND | OD_INF_CONT)) == OD_INF_LOSTFOUND &&
	    lf_rec(c) == FSCK_NONE)
		snprintf(name, sizeof(name), "%s", OD_LF_NAME); /* its own head, made again */
	p.str = name;
	if (!fix_problem(c, PR_4_ORPHAN, &p))
		return 0;
	ret = fsck_link_orphan(c, ri, name);
	if (ret < 0 && ret != -ENOMEM) {
		/* cannot_link() said it could: a bug here, not the disk's */
		fsck_note(c, "linking inode %llu into lost+found failed: %s",
			  (unsigned long long)c->recs[ri].ino.stable, strerror(-ret));
		c->oper = ret;
	}
	return ret;
}

int fsck_lost_found(struct fsck_ctx *c)
{
	/* lost+found's own head made again goes first, so that the others
	 * go into it */
	for (uint32_t ri = 0; ri < c->nrecs; ri++) {
		struct fsck_ino *r = &c->recs[ri];
		int ret;
		if (!r->orphan || r->dead || !(r->ino.flags & OD_INF_LOSTFOUND) ||
		    (r->ino.flags & OD_INF_CONT))
			continue;
		r->orphan = 0;
		if ((ret = fsck_adopt_orphan(c, ri)) < 0)
			return ret;
	}
	/* Units were lost: lost+found's part may have been one of them, and
	 * the chain through this chunk is mended now, orphans or not. */
	if (c->lost_units && c->o->mode != FSCK_CHECK_ONLY) {
		int ret = lf_ensure(c);
		if (ret < 0)
			return ret;
	}
	for (uint32_t ri = 0; ri < c->nrecs && !c->oper; ri++) {
		int ret;

		if (!c->recs[ri].orphan || c->recs[ri].dead)
			continue;
		c->recs[ri].orphan = 0;
		ret = fsck_adopt_orphan(c, ri);
		if (ret < 0)
			return ret;
	}
	return 0;
}
