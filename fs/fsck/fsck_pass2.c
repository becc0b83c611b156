/* fsck pass 2: the directory units reachable from this chunk's inodes.
 * Every directory inode found here (the root, a part, or a directory
 * embedded in an entry) owns the units its extents list, all in this chunk;
 * the directories embedded in those units are walked in turn, until no new
 * unit is found. Nothing outside the chunk is read.
 * Checks:   each unit extent (a dir_unit-long metadata place, increasing
 *           sequence numbers), both copies of each unit, its owner (the head
 *           directory's number), and every entry: the rec_len chain from
 *           byte 48 to the unit's end (multiples of 8, at least 16, inside
 *           the unit, no less than the entry uses), its kind, its name (1 to
 *           255 bytes, no '/', no NUL, not "." or ".."), its hash (CRC32C of
 *           the name), free entries only first, an embedded inode that is an
 *           inode with the entry's number, its inline data length (through
 *           fsck_check_inode()).
 * Collects: c->dents (every entry, for pass 4), a record for every embedded
 *           inode, c->res.dir_units.
 * Relies on pass 1 for the header and the records of the slots. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/format/crc32c.h"
#include "fs/fsck/fsck_int.h"

static int add_dent(struct fsck_ctx *c, uint32_t unit, uint32_t off, const struct od_dirent *de,
		    uint32_t dir, uint32_t *idx)
{
	struct fsck_dent *d;

	if (fsck_grow(c, &c->dents, &c->capdents, sizeof(*c->dents), c->ndents + 1) < 0)
		return -ENOMEM;
	d = &c->dents[c->ndents];
	memset(d, 0, sizeof(*d));
	d->unit = unit;
	d->off = off;
	d->stable = de->stable;
	d->dir = dir;
	d->target = FSCK_NONE;
	d->kind = de->kind;
	d->name_len = de->name_len;
	*idx = c->ndents++;
	return 0;
}

/* What is wrong with a name, or NULL. */
static const char *name_problem(const uint8_t *name, uint32_t len)
{
	if (len == 0)
		return "empty";
	if (memchr(name, '/', len))
		return "contains '/'";
	if (memchr(name, '\0', len))
		return "contains a NUL byte";
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return "'.' or '..'";
	return NULL;
}

/* What is wrong with the inode embedded in an entry, or NULL. */
static const char *embedded_problem(const struct od_inode *ino, char *buf, size_t n)
{
	if (ino->mode == 0)
		return "mode 0";
	if (!fsck_mode_ok(ino->mode)) {
		snprintf(buf, n, "mode 0%o", ino->mode);
		return buf;
	}
	if (ino->flags & OD_INF_CONT)
		return "a continuation, which lives in a slot";
	if ((uint32_t)ino->stable == 0)
		return "no number";
	return NULL;
}

static int embedded(struct fsck_ctx *c, struct fsck_unit *u, uint32_t off,
		    const struct od_dirent *de, uint32_t di)
{
	uint32_t ino_off = off + OD_DIRENT_HEADER + od_align8(de->name_len);
	const uint8_t *name = u->data + off + OD_DIRENT_HEADER;
	struct fsck_pctx p = { .blk = u->block, .name = name, .name_len = de->name_len };
	struct od_inode ino;
	const char *bad;
	char buf[64];
	uint32_t ri;
	int ret;

	od_get_inode(u->data + ino_off, &ino);
	bad = embedded_problem(&ino, buf, sizeof(buf));
	if (bad) {
		p.str = bad;
		fix_problem(c, PR_2_EMBED_BAD, &p);
		c->incomplete = 1; /* whatever it held is not known */
		return 0;
	}
	if (ino.stable != de->stable) {
		p.ino = de->stable;
		p.ino2 = ino.stable;
		fix_problem(c, PR_2_EMBED_STABLE, &p);
	}
	ret = fsck_add_rec(c, &ino, u->block, (uint16_t)ino_off, FSCK_NONE, di, &ri);
	if (ret < 0)
		return ret;
	fsck_check_inode(c, ri);
	return 0;
}

/* Every entry of one unit, in rec_len order. */
static int walk_unit(struct fsck_ctx *c, uint32_t dir, struct fsck_unit *u)
{
	uint32_t size = (uint32_t)u->units * OD_BLOCK_SIZE, off = OD_MB_HEADER_SIZE;
	int ret;

	while (off < size) {
		struct fsck_pctx p = { .blk = u->block, .num = off };
		const uint8_t *name;
		struct od_dirent de;
		uint32_t base, used, di = 0;
		const char *bad;

		if (off + OD_DIRENT_HEADER > size) {
			p.num2 = size - off;
			fix_problem(c, PR_2_REC_LEN, &p);
			c->incomplete = 1;
			break;
		}
		od_get_dirent(u->data + off, &de);
		if (de.rec_len < OD_DIRENT_HEADER || (de.rec_len & 7) || off + de.rec_len > size) {
			p.num2 = de.rec_len;
			fix_problem(c, PR_2_REC_LEN, &p);
			c->incomplete = 1;
			break;
		}
		if (de.kind > OD_DE_REF) {
			p.num2 = de.kind;
			fix_problem(c, PR_2_KIND, &p);
			c->incomplete = 1;
			off += de.rec_len;
			continue;
		}
		if (de.kind == OD_DE_FREE) {
			if (off != OD_MB_HEADER_SIZE)
				fix_problem(c, PR_2_FREE_MIDDLE, &p);
			off += de.rec_len;
			continue;
		}
		base = OD_DIRENT_HEADER + od_align8(de.name_len);
		used = base + (de.kind == OD_DE_EMBEDDED ? OD_INODE_SIZE : 0);
		if (used <= de.rec_len)
			used = od_dirent_used(u->data + off, &de);
		if (used > de.rec_len) {
			p.num2 = used;
			fix_problem(c, PR_2_USED, &p);
			c->incomplete = 1;
			off += de.rec_len;
			continue;
		}
		name = u->data + off + OD_DIRENT_HEADER;
		p.name = name;
		p.name_len = de.name_len;
		bad = name_problem(name, de.name_len);
		if (bad) {
			p.str = bad;
			fix_problem(c, PR_2_NAME, &p);
		} else if (crc32c(0, name, de.name_len) != de.hash) {
			p.num = de.hash;
			p.num2 = crc32c(0, name, de.name_len);
			fix_problem(c, PR_2_HASH, &p);
		}
		ret = add_dent(c, u->block, off, &de, dir, &di);
		if (ret < 0)
			return ret;
		if (de.kind == OD_DE_EMBEDDED && (ret = embedded(c, u, off, &de, di)) < 0)
			return ret;
		off += de.rec_len;
	}
	return 0;
}

static int walk_dir(struct fsck_ctx *c, uint32_t ri, struct fsck_exts *x)
{
	uint64_t head, prev = 0;
	int ret;

	c->recs[ri].walked = 1;
	head = (c->recs[ri].ino.flags & OD_INF_CONT) ? c->recs[ri].ino.head_stable
						      : c->recs[ri].ino.stable;
	if (c->recs[ri].salvaged == 1 || c->recs[ri].salvaged == 2)
		head = c->recs[ri].salv_owner; /* numbered after pass 2 */
	ret = fsck_extents(c, ri, x);
	for (uint32_t i = 0; i < x->n && ret == 0 && !c->fatal; i++) {
		const struct od_extent *e = &x->ext[i];
		struct fsck_pctx p = { .rec = &c->recs[ri], .num = e->lblk, .blk = e->pblk,
				       .num2 = e->len };
		struct od_mb_header h;
		struct fsck_unit *u;

		if (e->len != c->hdr.dir_unit || !fsck_meta_place(c, e->pblk, e->len)) {
			fix_problem(c, PR_2_DIR_EXTENT, &p);
			continue;
		}
		if (i > 0 && e->lblk <= prev) {
			p.num2 = prev;
			fix_problem(c, PR_2_DIR_SEQ, &p);
		}
		prev = e->lblk;
		ret = fsck_unit_get(c, e->pblk, (uint16_t)c->hdr.dir_unit, OD_MB_DIR, head, &u);
		if (ret == -EUCLEAN) {
			ret = 0; /* a unit read as something else: pass 3 reports the claims */
			continue;
		}
		if (ret < 0 || !u->data || u->walked)
			continue; /* listed twice: pass 3 reports it */
		u->walked = 1;
		c->res.dir_units++;
		od_get_mb_header(u->data, &h);
		if (h.owner != head) {
			p.ino2 = h.owner;
			fix_problem(c, PR_2_UNIT_OWNER, &p);
		}
		ret = walk_unit(c, ri, u);
	}
	return ret;
}

int fsck_pass2(struct fsck_ctx *c)
{
	struct fsck_exts x = { 0 };
	int ret = 0;

	if (fsck_prefetch_zone(c) < 0)
		return -ENOMEM;
	/* Records grow while units are walked: every directory embedded in a
	 * unit gets its turn. Then the units no inode reached, when units
	 * were lost, and what they hold. */
	for (int salvage = 0; salvage < 2 && ret == 0; salvage++) {
		for (uint32_t i = 0; i < c->nrecs && ret == 0; i++) {
			if (c->recs[i].dead || c->recs[i].walked || !S_ISDIR(c->recs[i].ino.mode))
				continue;
			if (fsck_cancelled(c))
				break;
			ret = walk_dir(c, i, &x);
		}
		if (ret == 0 && !salvage && (ret = fsck_salvage_units(c)) > 0) {
			c->salvage_walk = 1;
			ret = 0;
		} else if (ret == 0 && !salvage) {
			break;
		}
	}
	c->salvage_walk = 0;
	fsck_exts_free(&x);
	if (ret == 0)
		ret = fsck_salvage_finish(c);
	return ret;
}
