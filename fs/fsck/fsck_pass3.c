/* fsck pass 3: block ownership (invariant 1). Every block referenced by an
 * inode of this chunk -- data extents of files and symlinks, the extent
 * units of every inode and their mirrors, the directory units and their
 * mirrors -- must be claimed once, inside the area it may use: data outside
 * both fixed regions, metadata units with copy 0 in [data_start, H - units].
 * Checks:   ranges, double claims, file extents in order, not before the
 *           continuation start, and a block count equal to what they map;
 *           extent units (type, owner, count) through fsck_extents().
 * Repairs:  a data extent claimed by a second file is copied to free
 *           blocks for that file (resolve_dups()).
 * Collects: c->owner[], one entry per block: the record that claims it, or
 *           OWNER_FIXED for the fixed metadata of both halves and the
 *           foster map units hosted here (fsck_foster.c). That is the
 *           expected bitmap pass 5 compares with the one on disk.
 * The predictor's chain in chunk 0 is checked and claimed (fsck_pred.c).
 * Relies on pass 1 and 2 for the records of every inode of the chunk. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fsck/fsck_int.h"

static int push_ext(struct od_extent **e, uint32_t *n, uint32_t *cap, const struct od_extent *x)
{
	if (*n == *cap) {
		uint32_t ncap = *cap ? *cap * 2 : 16;
		struct od_extent *p = realloc(*e, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		*e = p;
		*cap = ncap;
	}
	(*e)[(*n)++] = *x;
	return 0;
}

static int push_u32(uint32_t **a, uint32_t *n, uint32_t *cap, uint32_t v)
{
	if (*n == *cap) {
		uint32_t ncap = *cap ? *cap * 2 : 8;
		uint32_t *p = realloc(*a, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		*a = p;
		*cap = ncap;
	}
	(*a)[(*n)++] = v;
	return 0;
}

void fsck_exts_free(struct fsck_exts *x)
{
	free(x->ext);
	free(x->units);
	memset(x, 0, sizeof(*x));
}

int fsck_extents(struct fsck_ctx *c, uint32_t ri, struct fsck_exts *x)
{
	const struct od_inode *ino = &c->recs[ri].ino;
	uint64_t owner = ino->stable;
	int report = !c->recs[ri].ext_done;
	uint32_t hops = 0, next = ino->ext_block;
	uint32_t n_in = ino->nextents < OD_INODE_EXTENTS ? ino->nextents : OD_INODE_EXTENTS;

	c->recs[ri].ext_done = 1;
	x->n = x->nunits = 0;
	for (uint32_t i = 0; i < n_in; i++)
		if (push_ext(&x->ext, &x->n, &x->cap, &ino->ext[i]) < 0)
			goto oom;
	while (next) {
		struct fsck_pctx p = { .rec = &c->recs[ri], .blk = next, .num = 1 };
		struct od_mb_header h;
		struct fsck_unit *u;
		char why[96];
		int ret, loop = 0;

		for (uint32_t k = 0; k < x->nunits; k++)
			loop |= x->units[k] == next;
		if (loop || ++hops > c->hdr.nblocks) {
			p.str = "the chain loops";
			if (report)
				fix_problem(c, PR_3_EXTU_BAD, &p);
			c->incomplete = 1;
			break;
		}
		if (!fsck_meta_place(c, next, 1)) {
			p.str = "extent unit";
			if (report)
				fix_problem(c, PR_3_RANGE, &p);
			c->incomplete = 1;
			break;
		}
		if (push_u32(&x->units, &x->nunits, &x->ucap, next) < 0)
			goto oom;
		ret = fsck_unit_get(c, next, 1, OD_MB_EXTENTS, owner, &u);
		if (ret == -EUCLEAN) {
			c->incomplete = 1;
			break;
		}
		if (ret < 0)
			return ret;
		if (!u->data)
			break; /* both copies bad, not replaced: c->incomplete is set */
		od_get_mb_header(u->data, &h);
		if (h.seq > OD_EXT_PER_UNIT || h.owner != owner) {
			if (h.seq > OD_EXT_PER_UNIT)
				snprintf(why, sizeof(why), "says it holds %u extents", h.seq);
			else
				snprintf(why, sizeof(why), "owner %llu, the inode's number is %llu",
					 (unsigned long long)h.owner, (unsigned long long)owner);
			p.str = why;
			if (report)
				fix_problem(c, PR_3_EXTU_BAD, &p);
			c->incomplete = 1;
			break;
		}
		for (uint32_t i = 0; i < h.seq; i++) {
			struct od_extent e;
			od_get_extent(u->data + OD_MB_HEADER_SIZE + 16 * i, &e);
			if (push_ext(&x->ext, &x->n, &x->cap, &e) < 0)
				goto oom;
		}
		next = h.next;
	}
	return 0;
oom:
	x->n = x->nunits = 0;
	return fsck_oom(c);
}

/* Claim [start, start + len) (and the mirror) for record ri; a double
 * claim is reported once per range. */
static void claim(struct fsck_ctx *c, uint32_t ri, uint32_t start, uint32_t len, int mirror)
{
	int reported = 0;

	for (int m = 0; m <= mirror; m++) {
		for (uint32_t k = 0; k < len; k++) {
			uint32_t b = start + k + (m ? c->half : 0);
			uint32_t o = c->owner[b];
			if (o == 0) {
				fsck_set_owner(c, b, ri + 1);
			} else if (!reported) {
				struct fsck_pctx p = { .rec2 = &c->recs[ri], .blk = b };
				p.rec = o == OWNER_FIXED ? NULL : &c->recs[o - 1];
				fix_problem(c, PR_3_DUP, &p);
				reported = 1;
			}
		}
	}
}

/* The blocks of the range no one claims yet, for ri (no report). */
static void claim_unowned(struct fsck_ctx *c, uint32_t ri, uint32_t start, uint32_t len)
{
	for (uint32_t k = 0; k < len; k++)
		if (!c->owner[start + k])
			fsck_set_owner(c, start + k, ri + 1);
}

void fsck_unclaim(struct fsck_ctx *c, uint32_t ri)
{
	if (!c->owner)
		return;
	for (uint32_t b = 0; b < c->hdr.nblocks; b++)
		if (c->owner[b] == ri + 1)
			fsck_set_owner(c, b, 0);
}

/* A data extent claimed, in part, by another inode first: resolved once
 * every inode has claimed its blocks (resolve_dups()). */
struct dup {
	uint32_t ri;    /* the later claimer */
	uint32_t ext;   /* its extent, in the order fsck_extents() gives */
	uint32_t other; /* owner + 1 of the first block claimed twice */
	uint32_t blk;   /* that block */
	struct od_extent e;
};

struct dups {
	struct dup *d;
	uint32_t n, cap;
};

static int push_dup(struct dups *l, const struct dup *x)
{
	if (l->n == l->cap) {
		uint32_t ncap = l->cap ? l->cap * 2 : 8;
		struct dup *p = realloc(l->d, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		l->d = p;
		l->cap = ncap;
	}
	l->d[l->n++] = *x;
	return 0;
}

static int file_extents(struct fsck_ctx *c, uint32_t ri, const struct od_extent *ext, uint32_t n,
			struct dups *dl)
{
	uint64_t sum = 0, prev_end = 0;
	int order_told = 0, start_told = 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct od_extent *e = &ext[i];
		struct fsck_pctx p = { .rec = &c->recs[ri], .blk = e->pblk, .num = e->len };
		struct dup d = { .ri = ri, .ext = i, .e = *e };
		if (!fsck_in_data_area(c, e->pblk, e->len)) {
			p.str = "data extent";
			fix_problem(c, PR_3_RANGE, &p);
			c->incomplete = 1;
			continue;
		}
		for (uint32_t k = 0; k < e->len && !d.other; k++)
			if (c->owner[e->pblk + k]) {
				d.other = c->owner[e->pblk + k];
				d.blk = e->pblk + k;
			}
		if (d.other) {
			if (push_dup(dl, &d) < 0)
				return fsck_oom(c);
		} else {
			claim(c, ri, e->pblk, e->len, 0);
		}
		sum += e->len;
		if (i > 0 && e->lblk < prev_end && !order_told) {
			p.num = e->lblk;
			fix_problem(c, PR_3_EXT_ORDER, &p);
			order_told = 1;
		}
		if (e->lblk < c->recs[ri].ino.cont_start && !start_told) {
			p.num = e->lblk;
			p.num2 = c->recs[ri].ino.cont_start;
			fix_problem(c, PR_3_EXT_START, &p);
			start_told = 1;
		}
		prev_end = e->lblk + e->len;
	}
	if (sum != c->recs[ri].ino.blocks) {
		struct fsck_pctx p = { .rec = &c->recs[ri], .num = sum,
				       .num2 = c->recs[ri].ino.blocks };
		fix_problem(c, PR_3_BLOCKS, &p);
	}
	return 0;
}

static int block_free(const struct fsck_ctx *c, uint32_t b)
{
	return c->owner[b] == 0 && !c->bitmap_unknown[b / OD_BITMAP_BITS_PER_BLOCK] &&
	       !((c->disk_bitmap[b >> 3] >> (b & 7)) & 1);
}

/* len free data blocks in a row (free in the bitmap too, claimed by none). */
static int free_run(const struct fsck_ctx *c, uint32_t len, uint32_t *out)
{
	uint32_t run = 0;

	for (uint32_t b = c->hdr.data_start; b < c->hdr.nblocks; b++) {
		if ((b >= c->half && b < c->half + c->hdr.data_start) || !block_free(c, b)) {
			run = 0;
			continue;
		}
		if (++run == len) {
			*out = b + 1 - len;
			return 0;
		}
	}
	return -ENOSPC;
}

/* Point extent number `ext` of record ri at pblk, where it is stored. */
static int set_extent(struct fsck_ctx *c, uint32_t ri, uint32_t ext, uint32_t pblk)
{
	struct fsck_ino *r = &c->recs[ri];
	uint32_t n_in = r->ino.nextents < OD_INODE_EXTENTS ? r->ino.nextents : OD_INODE_EXTENTS;
	uint32_t next = r->ino.ext_block, k, hops = 0;
	struct fsck_unit *u;

	if (ext < n_in) {
		struct od_inode ino;
		u = fsck_unit_find(c, r->block);
		if (!u || !u->data)
			return -EIO;
		r->ino.ext[ext].pblk = pblk;
		od_get_inode(u->data + r->off, &ino);
		ino.ext[ext].pblk = pblk;
		od_put_inode(u->data + r->off, &ino);
		fsck_unit_modified(c, u);
		return 0;
	}
	k = ext - n_in;
	while (next && hops++ <= c->hdr.nblocks) {
		struct od_mb_header h;
		u = fsck_unit_find(c, next);
		if (!u || !u->data)
			return -EIO;
		od_get_mb_header(u->data, &h);
		if (k < h.seq) {
			struct od_extent e;
			uint8_t *at = u->data + OD_MB_HEADER_SIZE + 16 * k;
			od_get_extent(at, &e);
			e.pblk = pblk;
			od_put_extent(at, &e);
			fsck_unit_modified(c, u);
			return 0;
		}
		k -= h.seq;
		next = h.next;
	}
	return -EIO;
}

/* Copy len data blocks from `from` to `to` (a repair: written at once,
 * into blocks no one uses). */
static int copy_blocks(struct fsck_ctx *c, uint32_t from, uint32_t to, uint32_t len)
{
	uint8_t buf[OD_BLOCK_SIZE];

	for (uint32_t k = 0; k < len; k++) {
		int ret = store_pread(c->st, buf, sizeof(buf), (uint64_t)(from + k) * OD_BLOCK_SIZE);
		if (ret == 0)
			ret = store_pwrite(c->st, buf, sizeof(buf), (uint64_t)(to + k) * OD_BLOCK_SIZE);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Data blocks claimed twice: the later claimer gets a copy of its extent
 * in free blocks (both keep what they read now), when there is room and
 * every owner of blocks was seen; else the problem is left. */
static int resolve_dups(struct fsck_ctx *c, struct dups *dl)
{
	for (uint32_t i = 0; i < dl->n; i++) {
		const struct dup *d = &dl->d[i];
		struct fsck_pctx p = { .rec2 = &c->recs[d->ri], .blk = d->blk, .num = d->e.len };
		uint32_t to;
		int ret;

		p.rec = d->other == OWNER_FIXED ? NULL : &c->recs[d->other - 1];
		if (c->incomplete || c->recs[d->ri].dead || free_run(c, d->e.len, &to) < 0) {
			claim(c, d->ri, d->e.pblk, d->e.len, 0); /* reports PR_3_DUP */
			continue;
		}
		if (!fix_problem(c, PR_3_DUP_CLONE, &p)) {
			claim_unowned(c, d->ri, d->e.pblk, d->e.len);
			continue;
		}
		ret = copy_blocks(c, d->e.pblk, to, d->e.len);
		if (ret == 0)
			ret = set_extent(c, d->ri, d->ext, to);
		if (ret < 0) {
			fsck_note(c, "copying blocks %u-%u failed: %s", d->e.pblk,
				  d->e.pblk + d->e.len - 1, strerror(-ret));
			c->oper = ret;
			return ret;
		}
		/* The copy is in use from now on, on disk as in the counts. */
		claim(c, d->ri, to, d->e.len, 0);
		for (uint32_t k = 0; k < d->e.len; k++)
			c->disk_bitmap[(to + k) >> 3] |= (uint8_t)(1u << ((to + k) & 7));
		c->hdr.free_blocks -= d->e.len;
		c->hdr_changed = 1;
	}
	return 0;
}

int fsck_pass3(struct fsck_ctx *c)
{
	uint32_t nb = c->hdr.nblocks;
	struct dups dl = { 0 };
	struct fsck_exts x = { 0 };
	int ret = 0;

	c->owner = fsck_alloc(c, (size_t)nb * sizeof(*c->owner));
	c->owned = fsck_alloc(c, (nb / 64 + 1) * sizeof(*c->owned));
	if (!c->owner || !c->owned)
		return fsck_oom(c);
	memset(c->owner, 0, (size_t)nb * sizeof(*c->owner));
	memset(c->owned, 0, (nb / 64 + 1) * sizeof(*c->owned));
	for (uint32_t b = 0; b < c->hdr.data_start; b++) {
		fsck_set_owner(c, b, OWNER_FIXED);
		fsck_set_owner(c, b + c->half, OWNER_FIXED);
	}
	fsck_foster_claim(c);
	for (uint32_t ri = 0; ri < c->nrecs; ri++) {
		const struct od_extent *ext;
		uint32_t n, type = c->recs[ri].ino.mode & S_IFMT;

		if (c->recs[ri].dead)
			continue;
		if (fsck_cancelled(c))
			goto out;
		ret = fsck_extents(c, ri, &x);
		if (ret < 0)
			goto out;
		ext = x.ext;
		n = x.n;
		for (uint32_t k = 0; k < x.nunits; k++)
			claim(c, ri, x.units[k], 1, 1);
		if (type == S_IFDIR) {
			for (uint32_t i = 0; i < n; i++)
				if (ext[i].len == c->hdr.dir_unit &&
				    fsck_meta_place(c, ext[i].pblk, ext[i].len))
					claim(c, ri, ext[i].pblk, ext[i].len, 1);
		} else if (type == S_IFREG || type == S_IFLNK) {
			ret = file_extents(c, ri, ext, n, &dl);
		} else if (n || x.nunits) {
			struct fsck_pctx p = { .rec = &c->recs[ri],
					       .str = "a device, FIFO or socket with extents" };
			fix_problem(c, PR_3_EXT_NONFILE, &p);
			/* Claimed anyway: the blocks are not known to be free. */
			for (uint32_t i = 0; i < n; i++)
				if (fsck_in_data_area(c, ext[i].pblk, ext[i].len))
					claim(c, ri, ext[i].pblk, ext[i].len, 0);
		}
		if (ret < 0)
			goto out;
	}
	/* the volume's own units, after every inode's */
	ret = fsck_pred(c);
	if (ret == 0)
		ret = resolve_dups(c, &dl);
out:
	fsck_exts_free(&x);
	free(dl.d);
	return ret;
}
