/* fsck's salvage: what survived a loss is kept. When units of the chunk
 * were lost in both copies (an inode-area block, a directory unit, the
 * map), the directory units that no inode reaches any more are found by
 * their own headers (type, chunk, block, owner, sequence number, checksum):
 * a part of a directory homed elsewhere is made again where its head's
 * chain expects it; otherwise they become a directory of their own (its
 * owner's number back when that was homed here), which pass 4 links into
 * lost+found. Their entries, the inodes embedded in them and the subtrees
 * under those are kept. Then, with the volume at hand, the chains through
 * this chunk: a directory head lost here is made again from its parts'
 * back pointers, a part gone with all it listed is bridged by an empty
 * one, lost+found's part is made again. Also the repair of what the
 * cross-chunk step finds cut off (fsck_adopt_far()): a directory part or a
 * file continuation whose head is gone becomes a directory or a file of
 * its own in lost+found.
 * Relies on pass 1 (slots, map, bitmap) and pass 2 (what is reached). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fs/fsck/fsck_int.h"

/* A directory unit found by its header and reached from no inode. */
struct found_unit {
	uint32_t block;
	uint32_t seq;
	uint64_t owner;
	uint64_t txid;
};

static int by_owner_seq(const void *a, const void *b)
{
	const struct found_unit *x = a, *y = b;

	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	/* the newer first: it wins over a stale unit with the same place */
	return x->txid > y->txid ? -1 : x->txid < y->txid;
}

static int bit_set(const struct fsck_ctx *c, uint32_t b)
{
	return (c->disk_bitmap[b >> 3] >> (b & 7)) & 1;
}

/* Could b start a directory unit in use, as far as the bitmap knows? */
static int maybe_used(const struct fsck_ctx *c, uint32_t b)
{
	uint32_t m = b + c->half;

	if (c->bitmap_unknown[b / OD_BITMAP_BITS_PER_BLOCK] ||
	    c->bitmap_unknown[m / OD_BITMAP_BITS_PER_BLOCK])
		return 1;
	return bit_set(c, b) && bit_set(c, m);
}

/* Does one copy of the unit at b (its bytes at p, or read) pass as a
 * directory unit of this chunk? Its header into *h. */
static int copy_is_unit(struct fsck_ctx *c, const uint8_t *p, uint32_t b, int copy,
			struct od_mb_header *h)
{
	size_t len = (size_t)c->hdr.dir_unit * OD_BLOCK_SIZE;
	char why[96];
	uint8_t *buf;
	int ok;

	od_get_mb_header(p, h);
	if (h->magic != OD_MB_MAGIC || h->type != OD_MB_DIR || h->chunk != c->index ||
	    h->block != b || h->units != c->hdr.dir_unit)
		return 0;
	buf = malloc(len);
	if (!buf)
		return fsck_oom(c);
	ok = fsck_read_copy(c, buf, len, (uint64_t)(b + (copy ? c->half : 0)) * OD_BLOCK_SIZE, why,
			    sizeof(why)) == 0 &&
	     fsck_copy_ok(c, buf, len, b, OD_MB_DIR, why, sizeof(why));
	if (ok)
		od_get_mb_header(buf, h);
	free(buf);
	return ok;
}

#define SCAN_BLOCKS 1024u

/* Every directory unit of the lower half's area that no unit read so far
 * covers, by its header in either copy. */
static int scan(struct fsck_ctx *c, struct found_unit **out, uint32_t *nout)
{
	uint32_t du = c->hdr.dir_unit, end = c->half - du, n = 0, cap = 0;
	uint8_t *win[2];
	struct found_unit *f = NULL;
	int ret = 0;

	win[0] = malloc((size_t)SCAN_BLOCKS * OD_BLOCK_SIZE);
	win[1] = malloc((size_t)SCAN_BLOCKS * OD_BLOCK_SIZE);
	if (!win[0] || !win[1]) {
		ret = fsck_oom(c);
		goto out;
	}
	for (uint32_t start = c->hdr.data_start; start <= end && ret == 0; start += SCAN_BLOCKS) {
		uint32_t nb = end + 1 - start < SCAN_BLOCKS ? end + 1 - start : SCAN_BLOCKS;
		char why[96];
		int have[2], any = 0;

		/* (a window the bitmap says holds no unit is not read) */
		for (uint32_t i = 0; i < nb && !any; i++)
			any = maybe_used(c, start + i) && !fsck_unit_find(c, start + i);
		if (!any)
			continue;
		for (int k = 0; k < 2; k++)
			have[k] = fsck_read_copy(c, win[k], (size_t)nb * OD_BLOCK_SIZE,
						 (uint64_t)(start + (k ? c->half : 0)) * OD_BLOCK_SIZE,
						 why, sizeof(why)) == 0;
		for (uint32_t i = 0; i < nb; i++) {
			uint32_t b = start + i;
			struct fsck_unit *u = fsck_unit_find(c, b);
			struct od_mb_header h;
			int ok = 0;

			if (u) {
				i += u->units - 1u;
				continue;
			}
			if (!maybe_used(c, b))
				continue;
			for (int k = 0; k < 2 && !ok; k++) {
				if (!have[k])
					continue;
				ok = copy_is_unit(c, win[k] + (size_t)i * OD_BLOCK_SIZE, b, k, &h);
				if (ok < 0) {
					ret = ok;
					goto out;
				}
			}
			if (!ok)
				continue;
			if (fsck_grow(c, &f, &cap, sizeof(*f), n + 1) < 0) {
				ret = -ENOMEM;
				goto out;
			}
			f[n].block = b;
			f[n].seq = h.seq;
			f[n].owner = h.owner;
			f[n].txid = h.txid;
			n++;
			i += du - 1;
		}
	}
out:
	free(win[0]);
	free(win[1]);
	*out = f;
	*nout = n;
	return ret;
}

/* Is directory h still here, so that its units not reached are stale (a
 * unit freed long ago keeps its bytes)? Its head or part is found here, or
 * the map says its number is free. */
static int owner_alive_or_gone(struct fsck_ctx *c, uint64_t h)
{
	uint32_t idx = OD_STABLE_INDEX(h);
	uint32_t ri = fsck_hmap_get(&c->by_stable, h);

	if ((uint32_t)h == 0)
		return 1;
	if (ri != FSCK_NONE && !c->recs[ri].dead)
		return 1;
	for (uint32_t i = 0; i < c->nrecs; i++) {
		const struct fsck_ino *r = &c->recs[i];
		if (!r->dead && (r->ino.flags & OD_INF_CONT) && r->ino.head_stable == h)
			return 1;
	}
	if (OD_STABLE_CHUNK(h) != c->index)
		return 0;
	if (idx >= c->nmap)
		return 1;
	return c->map_lost[idx] == 0 && !(c->map[idx].flags & OD_MAPF_USED);
}

/* A free inode-area slot whose block is here: its place. The slots of a
 * block that was lost are taken last: other chunks may still name them,
 * and lost+found's part is made again in its own (fsck_lf_remake()). */
static int free_slot(struct fsck_ctx *c, uint32_t *slot, uint32_t *block, uint16_t *off)
{
	for (int lost = 0; lost < 2; lost++) {
		for (uint32_t k = 0; k < c->hdr.islot_watermark; k++) {
			uint32_t b = c->hdr.itable_start + k / OD_ISLOTS_PER_BLOCK;
			uint16_t o = (uint16_t)(OD_MB_HEADER_SIZE +
						(k % OD_ISLOTS_PER_BLOCK) * OD_INODE_SIZE);
			struct fsck_unit *u = fsck_unit_find(c, b);
			uint32_t ri = fsck_rec_at(c, b, o), z = 0;

			if (!u || !u->data || (u->cur < 0) != lost ||
			    (ri != FSCK_NONE && !c->recs[ri].dead))
				continue;
			for (uint32_t i = 0; i < OD_INODE_SIZE; i++)
				z |= u->data[o + i];
			if (z == 0) {
				*slot = k;
				*block = b;
				*off = o;
				return 0;
			}
		}
		if (!lost && c->hdr.islot_watermark < c->hdr.islots) {
			/* the next slot above the watermark, its block made
			 * anew when it is the first of its block */
			uint32_t k = c->hdr.islot_watermark;
			uint32_t b = c->hdr.itable_start + k / OD_ISLOTS_PER_BLOCK;
			struct fsck_unit *u = fsck_unit_find(c, b);
			if (!u && fsck_unit_new(c, b, 1, OD_MB_ITABLE, 0, &u) < 0)
				return -ENOMEM;
			if (u->data) {
				c->hdr.islot_watermark++;
				c->hdr_changed = 1;
				*slot = k;
				*block = b;
				*off = (uint16_t)(OD_MB_HEADER_SIZE +
						  (k % OD_ISLOTS_PER_BLOCK) * OD_INODE_SIZE);
				return 0;
			}
		}
	}
	return -ENOSPC;
}

/* Is loc a free slot of this chunk (its block here, zero, no live inode)?
 * Its slot number then. */
static int slot_free_at(struct fsck_ctx *c, struct od_loc loc, uint32_t *slot)
{
	struct fsck_unit *u;
	uint32_t ri;

	if (loc.chunk != c->index || loc.block < c->hdr.itable_start ||
	    loc.block >= c->hdr.data_start || loc.off < OD_MB_HEADER_SIZE ||
	    (loc.off - OD_MB_HEADER_SIZE) % OD_INODE_SIZE != 0 ||
	    loc.off + OD_INODE_SIZE > OD_MB_HEADER_SIZE + OD_ISLOTS_PER_BLOCK * OD_INODE_SIZE)
		return 0;
	u = fsck_unit_find(c, loc.block);
	ri = fsck_rec_at(c, loc.block, loc.off);
	if (!u || !u->data || (ri != FSCK_NONE && !c->recs[ri].dead))
		return 0;
	for (uint32_t i = 0; i < OD_INODE_SIZE; i++)
		if (u->data[loc.off + i])
			return 0;
	*slot = (loc.block - c->hdr.itable_start) * OD_ISLOTS_PER_BLOCK +
		(loc.off - OD_MB_HEADER_SIZE) / OD_INODE_SIZE;
	return 1;
}

/* Where the chain of head h expects its piece in this chunk, when that is
 * a free slot here (*slot), the piece after it, and the head's chunk. */
static int chain_place(struct fsck_ctx *c, uint64_t h, struct od_loc *want, struct od_loc *next,
		       uint32_t *head_chunk, uint32_t *slot)
{
	struct od_map_entry e;
	struct od_inode ino;
	int ret;

	if (!c->vol || c->single_copy || fsck_vol_ready(c) < 0 || fsck_map_entry_of(c, h, &e) < 0 ||
	    !(e.flags & OD_MAPF_USED) || e.loc.chunk == c->index ||
	    fsck_far_inode(c, e.loc, &ino) < 0 || ino.stable != h || !S_ISDIR(ino.mode))
		return -ENOENT;
	ret = fsck_chain_gap(c, h, &ino, want, next);
	if (ret < 0)
		return ret;
	*head_chunk = e.loc.chunk;
	return slot_free_at(c, *want, slot) ? 0 : -ENOENT;
}

/* A directory part of head h (in chunk head_chunk) written at loc (slot),
 * its chain going on to next, listing exts; its record. */
static int put_part(struct fsck_ctx *c, struct od_loc loc, uint32_t slot, uint64_t h,
		    uint32_t head_chunk, struct od_loc next, uint32_t flags,
		    const struct od_extent *ext, uint32_t n, uint32_t *out)
{
	struct od_inode ino;

	memset(&ino, 0, sizeof(ino));
	ino.mode = S_IFDIR;
	ino.flags = OD_INF_CONT | flags;
	ino.head_chunk = head_chunk;
	ino.head_stable = h;
	ino.next = next;
	if (n)
		memcpy(ino.ext, ext, n * sizeof(*ext));
	ino.nextents = (uint16_t)n;
	return fsck_slot_put(c, loc.block, loc.off, slot, &ino, out);
}

/* A directory of up to OD_INODE_EXTENTS of the units f[0 .. n-1] (one
 * owner, by sequence number) in a free slot, numbered by
 * fsck_salvage_finish() once every inode of the chunk is known: the
 * owner's own inode may still be found in a unit walked later. */
static int make_dir(struct fsck_ctx *c, const struct found_unit *f, uint32_t n)
{
	uint32_t slot, block, ri, head_chunk;
	uint16_t off;
	struct od_inode ino;
	struct od_loc want, next;
	int ret;

	if (OD_STABLE_CHUNK(f[0].owner) != c->index &&
	    chain_place(c, f[0].owner, &want, &next, &head_chunk, &slot) == 0) {
		/* The part of a directory homed elsewhere, whose slot was
		 * lost: made again where its head's chain expects it. */
		struct od_extent ext[OD_INODE_EXTENTS];
		uint64_t lf = 0;
		for (uint32_t i = 0; i < n; i++) {
			ext[i].lblk = f[i].seq;
			ext[i].pblk = f[i].block;
			ext[i].len = c->hdr.dir_unit;
		}
		fsck_far_lf_head(c, &lf);
		ret = put_part(c, want, slot, f[0].owner, head_chunk, next,
			       lf == f[0].owner ? OD_INF_LOSTFOUND : 0, ext, n, &ri);
		if (ret < 0)
			return ret;
		c->recs[ri].salvaged = 3;
		c->recs[ri].salv_owner = f[0].owner;
		fsck_note(c, "a part of directory %llu made again at block %u offset %u (%u units), "
			     "its chain going on to chunk %d", (unsigned long long)f[0].owner,
			  want.block, want.off, n, next.chunk == OD_LOC_NONE ? -1 : (int)next.chunk);
		return 0;
	}
	ret = free_slot(c, &slot, &block, &off);
	if (ret < 0)
		return ret;
	memset(&ino, 0, sizeof(ino));
	ino.generation = 1;
	ino.mode = S_IFDIR | 0700;
	ino.nlink = 2;
	ino.next.chunk = OD_LOC_NONE;
	ino.atime = ino.mtime = ino.ctime = (int64_t)time(NULL);
	for (uint32_t i = 0; i < n; i++) {
		ino.ext[i].lblk = f[i].seq;
		ino.ext[i].pblk = f[i].block;
		ino.ext[i].len = c->hdr.dir_unit;
	}
	ino.nextents = (uint16_t)n;
	if ((ret = fsck_slot_put(c, block, off, slot, &ino, &ri)) < 0)
		return ret;
	c->recs[ri].salvaged = 1;
	c->recs[ri].salv_owner = f[0].owner;
	return 0;
}

int fsck_salvage_units(struct fsck_ctx *c)
{
	struct found_unit *f = NULL;
	uint32_t n = 0, made = 0;
	int ret;

	if (!c->lost_units || c->single_copy)
		return 0;
	ret = scan(c, &f, &n);
	if (ret < 0)
		goto out;
	fsck_note(c, "%u units lost in both copies: %u directory units looked at that no inode "
		     "reached", c->lost_units, n);
	if (n)
		qsort(f, n, sizeof(*f), by_owner_seq);
	for (uint32_t i = 0; i < n && ret == 0;) {
		uint32_t j = i, k = 0;
		struct found_unit g[OD_INODE_EXTENTS];
		struct fsck_pctx p = { .ino = f[i].owner, .blk = f[i].block };

		while (j < n && f[j].owner == f[i].owner)
			j++;
		if (owner_alive_or_gone(c, f[i].owner)) {
			i = j;
			continue;
		}
		p.num = j - i;
		if (!fix_problem(c, PR_2_UNITS_ORPHAN, &p)) {
			c->incomplete = 1;
			i = j;
			continue;
		}
		/* A directory for every OD_INODE_EXTENTS units (same
		 * sequence number twice: the newer unit). */
		for (; i < j && ret == 0; i++) {
			if (k && g[k - 1].seq == f[i].seq)
				continue;
			g[k++] = f[i];
			if (k == OD_INODE_EXTENTS || i + 1 == j) {
				ret = make_dir(c, g, k);
				if (ret == 0)
					made++;
				k = 0;
			}
		}
		if (k && ret == 0 && (ret = make_dir(c, g, k)) == 0)
			made++;
	}
out:
	/* (f is the context's memory: given back with it) */
	if (ret == -ENOSPC) {
		fsck_note(c, "no free inode-area slot for a found directory: left to a later run");
		c->incomplete = 1;
		ret = 0;
	}
	return ret < 0 ? ret : (int)made;
}

/* The inode embedded in entry di, or FSCK_NONE. */
static uint32_t embedded_rec(const struct fsck_ctx *c, uint32_t di)
{
	const struct fsck_dent *d = &c->dents[di];

	if (d->kind != OD_DE_EMBEDDED)
		return FSCK_NONE;
	return fsck_rec_at(c, d->unit, (uint16_t)(d->off + OD_DIRENT_HEADER +
						   od_align8(d->name_len)));
}

/* Set the owner in the header of unit u (a directory or extent unit). */
static void set_owner(struct fsck_ctx *c, uint32_t block, uint64_t s)
{
	struct fsck_unit *u = fsck_unit_find(c, block);
	struct od_mb_header h;

	if (!u || !u->data || (u->type != OD_MB_DIR && u->type != OD_MB_EXTENTS))
		return;
	od_get_mb_header(u->data, &h);
	h.owner = s;
	od_put_mb_header(u->data, &h);
	fsck_unit_modified(c, u);
}

/* Inode ri takes number s: the owner of its extent units and directory
 * units, and its subdirectories' parent, follow. */
static int renumber(struct fsck_ctx *c, uint32_t ri, uint64_t s)
{
	struct fsck_exts x = { 0 };
	int dir = S_ISDIR(c->recs[ri].ino.mode);
	int ret = fsck_extents(c, ri, &x);

	if (ret < 0)
		return ret;
	for (uint32_t k = 0; k < x.nunits; k++)
		set_owner(c, x.units[k], s);
	for (uint32_t i = 0; dir && i < x.n; i++)
		set_owner(c, x.ext[i].pblk, s);
	fsck_exts_free(&x);
	for (uint32_t di = 0; dir && di < c->ndents; di++) {
		uint32_t t = c->dents[di].dir == ri ? embedded_rec(c, di) : FSCK_NONE;
		if (t != FSCK_NONE && !c->recs[t].dead && S_ISDIR(c->recs[t].ino.mode)) {
			c->recs[t].ino.parent = s;
			fsck_store_inode(c, t);
		}
	}
	c->recs[ri].ino.stable = s;
	fsck_store_inode(c, ri);
	return 0;
}

/* Give a directory or file made of what the cross-chunk step or the scan
 * found cut off a number of this chunk, and its map entry. */
int fsck_salvage_number(struct fsck_ctx *c, uint32_t ri)
{
	uint32_t idx;
	uint64_t s;
	int ret;

	if (fsck_map_slot(c, &idx) < 0) {
		fsck_note(c, "no free inode number here for what was found");
		return -ENOSPC;
	}
	s = OD_STABLE(c->index, idx);
	c->recs[ri].ino.generation = fsck_map_next_gen(c, idx);
	ret = renumber(c, ri, s);
	if (ret < 0)
		return ret;
	if (fsck_hmap_put(&c->by_stable, s, ri) < 0)
		return fsck_oom(c);
	ret = fsck_map_claim(c, idx, &c->recs[ri]);
	if (ret == 0)
		c->hdr.used_inodes++;
	return ret;
}

/* The owner's own inode was found after all (embedded in a unit walked
 * later): the units of salvaged record ri that it lists are its, with
 * their entries; a unit it does not list is stale (freed long ago, its
 * bytes left behind): its entries, and what they embed, are not counted.
 * ri goes. */
static int dissolve(struct fsck_ctx *c, uint32_t ri, uint32_t owner)
{
	struct fsck_exts x = { 0 };
	int ret = fsck_extents(c, owner, &x);

	if (ret < 0)
		return ret;
	for (uint32_t di = 0; di < c->ndents; di++) {
		struct fsck_dent *d = &c->dents[di];
		int listed = 0;
		if (d->dir != ri)
			continue;
		for (uint32_t i = 0; i < x.n && !listed; i++)
			listed = x.ext[i].pblk == d->unit;
		if (listed) {
			d->dir = owner;
		} else {
			uint32_t t = embedded_rec(c, di);
			d->cleared = 1;
			if (t != FSCK_NONE)
				c->recs[t].dead = 1;
		}
	}
	fsck_exts_free(&x);
	fsck_zero_slot(c, ri);
	return 0;
}

static int settle_numbers(struct fsck_ctx *c);

/* Salvaged record ri goes, and the entries found in its units with it. */
static void drop(struct fsck_ctx *c, uint32_t ri)
{
	for (uint32_t di = 0; di < c->ndents; di++) {
		uint32_t t;
		if (c->dents[di].dir != ri || c->dents[di].cleared)
			continue;
		c->dents[di].cleared = 1;
		t = embedded_rec(c, di);
		if (t != FSCK_NONE)
			c->recs[t].dead = 1;
	}
	fsck_zero_slot(c, ri);
	settle_numbers(c);
}

/* After stale units went: what was found under what they embedded goes
 * too, and each number leads to a live inode that has it. */
static int settle_numbers(struct fsck_ctx *c)
{
	for (uint32_t di = 0; di < c->ndents; di++) {
		uint32_t t;
		if (c->dents[di].cleared || !c->recs[c->dents[di].dir].dead)
			continue;
		c->dents[di].cleared = 1;
		t = embedded_rec(c, di);
		if (t != FSCK_NONE)
			c->recs[t].dead = 1;
	}
	for (uint32_t ri = 0; ri < c->nrecs; ri++) {
		const struct fsck_ino *r = &c->recs[ri];
		uint32_t first;
		if (r->dead || (r->ino.flags & OD_INF_CONT) || !r->ino.stable)
			continue;
		first = fsck_hmap_get(&c->by_stable, r->ino.stable);
		if (first == FSCK_NONE || c->recs[first].dead) {
			if (fsck_hmap_set(&c->by_stable, r->ino.stable, ri) < 0)
				return fsck_oom(c);
		} else if (first != ri) {
			struct fsck_pctx p = { .rec = r, .ino = r->ino.stable,
					       .rec2 = &c->recs[first] };
			fix_problem(c, PR_1_INO_DUP_STABLE, &p);
		}
	}
	return 0;
}

/* Directory heads of this chunk lost with their unit whose parts survive
 * in other chunks: made again from the parts' back pointers (a directory
 * made of units found with the head's number gets them as well), their
 * chain starting at the part that no other names. Pass 4 links a head
 * made here into lost+found (lost+found's own into the root). */
static int rebuild_heads(struct fsck_ctx *c)
{
	uint64_t prev = 0;

	if (!c->lost_units || c->single_copy || !c->vol)
		return 0;
	if (fsck_far_build(c) < 0)
		return 0; /* (the volume cannot be located: nothing made) */
	for (uint32_t i = 0; i < c->nfarp; i++) {
		uint64_t h = c->farp[i].head;
		uint32_t first, n, start, idx = OD_STABLE_INDEX(h), ri, slot, block;
		struct fsck_pctx p = { .ino = h };
		struct od_inode ino;
		uint16_t off;
		int ret;

		if (h == prev)
			continue;
		prev = h;
		fsck_far_pieces(c, h, &first, &n);
		if (OD_STABLE_CHUNK(h) != c->index || !c->farp[first].dir ||
		    c->farp[first].head_chunk != c->index || idx >= c->nmap || c->map_lost[idx] == 1 ||
		    (c->map_lost[idx] == 0 && !(c->map[idx].flags & OD_MAPF_USED)))
			continue; /* another chunk's, a file, or a number freed */
		start = fsck_chain_start(c, first, n);
		ri = fsck_hmap_get(&c->by_stable, h);
		if (ri != FSCK_NONE && !c->recs[ri].dead) {
			struct fsck_ino *r = &c->recs[ri];
			if (r->salvaged == 1 && r->ino.next.chunk == OD_LOC_NONE && start != FSCK_NONE) {
				r->ino.next = c->farp[start].at;
				fsck_store_inode(c, ri);
			}
			continue;
		}
		if (start == FSCK_NONE)
			continue;
		p.num = n;
		if (!fix_problem(c, PR_4_HEAD_REBUILT, &p))
			continue;
		if ((ret = free_slot(c, &slot, &block, &off)) < 0)
			return ret == -ENOSPC ? 0 : ret;
		memset(&ino, 0, sizeof(ino));
		ino.stable = h;
		ino.generation = c->map_lost[idx] == 0 ? c->map[idx].generation : 1;
		ino.mode = S_IFDIR | 0700;
		ino.nlink = 2;
		ino.flags = c->farp[first].flags & OD_INF_LOSTFOUND;
		if (h == c->hdr.root_stable) {
			/* the root made again: its own parent, not an orphan */
			ino.mode = S_IFDIR | 0755;
			ino.parent = h;
		}
		ino.next = c->farp[start].at;
		ino.atime = ino.mtime = ino.ctime = (int64_t)time(NULL);
		if ((ret = fsck_slot_put(c, block, off, slot, &ino, &ri)) < 0)
			return ret;
		c->recs[ri].walked = 1;
		c->recs[ri].ext_done = 1;
		if (fsck_hmap_set(&c->by_stable, h, ri) < 0)
			return fsck_oom(c);
		if ((ret = fsck_map_claim(c, idx, &c->recs[ri])) < 0)
			return ret;
		fsck_note(c, "directory %llu made again in slot %u, its chain starting in chunk %u",
			  (unsigned long long)h, slot, c->farp[start].at.chunk);
	}
	return 0;
}

/* A directory's chain through this chunk whose part here is gone with
 * everything it listed (its slot lost, no unit of it found): bridged by an
 * empty part where the chain expects it, going on to the part after it,
 * so that the parts beyond stay reachable. */
static int bridge_chains(struct fsck_ctx *c)
{
	uint64_t prev = 0, lf = 0;

	if (!c->lost_units || c->single_copy || !c->farp_built)
		return 0;
	fsck_far_lf_head(c, &lf);
	for (uint32_t i = 0; i < c->nfarp; i++) {
		uint64_t h = c->farp[i].head;
		uint32_t head_chunk, slot, ri;
		struct od_loc want, next;
		struct fsck_pctx p = { .ino = h };
		char where[64];
		int ret;

		if (h == prev || !c->farp[i].dir || OD_STABLE_CHUNK(h) == c->index)
			continue;
		prev = h;
		if (chain_place(c, h, &want, &next, &head_chunk, &slot) < 0)
			continue;
		snprintf(where, sizeof(where), "block %u offset %u", want.block, want.off);
		p.str = where;
		if (!fix_problem(c, PR_4_PART_BRIDGE, &p))
			continue;
		ret = put_part(c, want, slot, h, head_chunk, next, h == lf ? OD_INF_LOSTFOUND : 0,
			       NULL, 0, &ri);
		if (ret < 0)
			return ret;
		c->recs[ri].walked = 1;
		c->recs[ri].ext_done = 1;
		c->recs[ri].salvaged = 3;
		c->recs[ri].salv_owner = h;
	}
	return 0;
}

/* What the salvage does once every inode of the chunk is known. */
static int salvage_chains(struct fsck_ctx *c)
{
	int ret = rebuild_heads(c);

	return ret < 0 ? ret : bridge_chains(c);
}

int fsck_salvage_finish(struct fsck_ctx *c)
{
	int salvaged = 0, ret;

	for (uint32_t ri = 0; ri < c->nrecs; ri++)
		salvaged |= c->recs[ri].salvaged;
	if (!salvaged)
		return salvage_chains(c);
	if ((ret = settle_numbers(c)) < 0)
		return ret;
	for (uint32_t ri = 0; ri < c->nrecs; ri++) {
		struct fsck_ino *r = &c->recs[ri];
		uint32_t own = r->salvaged ? fsck_hmap_get(&c->by_stable, r->salv_owner) : FSCK_NONE;

		if (r->salvaged && r->salvaged != 3 && !r->dead && own != FSCK_NONE &&
		    !c->recs[own].dead &&
		    S_ISDIR(c->recs[own].ino.mode) && (ret = dissolve(c, ri, own)) < 0)
			return ret;
	}
	if ((ret = settle_numbers(c)) < 0)
		return ret;
	for (uint32_t ri = 0; ri < c->nrecs; ri++) {
		struct fsck_ino *r = &c->recs[ri];
		uint64_t h = r->salv_owner;
		uint32_t subdirs = 0, own, idx = OD_STABLE_INDEX(h);

		if (!r->salvaged || r->salvaged == 3 || r->dead)
			continue;
		own = fsck_hmap_get(&c->by_stable, h);
		for (uint32_t di = 0; di < c->ndents; di++) {
			uint32_t t;
			if (c->dents[di].dir != ri || c->dents[di].cleared)
				continue;
			t = embedded_rec(c, di);
			subdirs += t != FSCK_NONE && S_ISDIR(c->recs[t].ino.mode);
		}
		r->ino.nlink = 2 + subdirs;
		if (OD_STABLE_CHUNK(h) == c->index && (uint32_t)h &&
		    (own == FSCK_NONE || c->recs[own].dead) &&
		    idx < c->hdr.max_inodes && idx < c->nmap) {
			/* the directory's head was here: it has its number back
			 * (the root stays the root) */
			r->ino.stable = h;
			if (h == c->hdr.root_stable) {
				r->ino.parent = h;
				r->ino.mode = S_IFDIR | 0755;
			}
			if (c->map_lost[idx] == 0 && (c->map[idx].flags & OD_MAPF_USED))
				r->ino.generation = c->map[idx].generation;
			fsck_store_inode(c, ri);
			if (fsck_hmap_set(&c->by_stable, h, ri) < 0)
				return fsck_oom(c);
			if ((ret = fsck_map_claim(c, idx, r)) < 0)
				return ret;
		} else {
			/* a part of a directory homed elsewhere, or a second
			 * directory of the same owner: a number of its own */
			ret = fsck_salvage_number(c, ri);
			if (ret == -ENOSPC) {
				/* no number to give: what it found is lost after all */
				drop(c, ri);
				continue;
			}
			if (ret < 0)
				return ret;
		}
		fsck_note(c, "directory %llu made of units found (%u of them, %u subdirectories)",
			  (unsigned long long)r->ino.stable, r->ino.nextents, subdirs);
	}
	return salvage_chains(c);
}

/* --- cut off from the head: adopted ------------------------------------------ */

int fsck_adopt_far(struct fsck_ctx *c, uint32_t ri)
{
	struct fsck_ino *r = &c->recs[ri];
	uint64_t head = r->ino.head_stable;
	int ret;

	if (!S_ISDIR(r->ino.mode)) {
		/* A file of the data this continuation holds, at the offsets
		 * it held them (a hole before). */
		struct fsck_exts x = { 0 };
		uint64_t end = 0;
		ret = fsck_extents(c, ri, &x);
		if (ret < 0)
			return ret;
		for (uint32_t i = 0; i < x.n; i++)
			if ((x.ext[i].lblk + x.ext[i].len) * OD_BLOCK_SIZE > end)
				end = (x.ext[i].lblk + x.ext[i].len) * OD_BLOCK_SIZE;
		fsck_exts_free(&x);
		r = &c->recs[ri];
		r->ino.mode = S_IFREG | 0600;
		r->ino.size = end;
		r->ino.nlink = 1;
	} else {
		r->ino.mode = S_IFDIR | 0700;
		r->ino.nlink = 2 + r->subdirs;
	}
	r->ino.flags &= ~OD_INF_CONT;
	r->ino.head_chunk = 0;
	r->ino.head_stable = 0;
	r->ino.cont_start = 0;
	r->ino.next.chunk = OD_LOC_NONE;
	r->ino.next.block = 0;
	r->ino.next.off = 0;
	r->ino.atime = r->ino.mtime = r->ino.ctime = (int64_t)time(NULL);
	ret = fsck_salvage_number(c, ri);
	if (ret < 0)
		return ret == -ENOSPC ? 0 : ret;
	r = &c->recs[ri];
	fsck_note(c, "%s of inode %llu is inode %llu now",
		  S_ISDIR(r->ino.mode) ? "a directory part" : "a continuation",
		  (unsigned long long)head, (unsigned long long)r->ino.stable);
	return fsck_adopt_orphan(c, ri);
}

/* --- lost+found's part, made anew ---------------------------------------------- */

int fsck_lf_remake(struct fsck_ctx *c, uint32_t *lf)
{
	uint64_t lf_head = 0;
	uint32_t head_chunk, slot, ri;
	struct od_loc want, next;
	struct fsck_pctx p = { 0 };
	char where[64];
	int ret;

	if (!c->vol || c->single_copy)
		return -ENOENT;
	ret = fsck_far_lf_head(c, &lf_head);
	if (ret == 0)
		ret = chain_place(c, lf_head, &want, &next, &head_chunk, &slot);
	if (ret < 0)
		return ret;
	snprintf(where, sizeof(where), "block %u offset %u", want.block, want.off);
	p.str = where;
	if (!fix_problem(c, PR_4_LF_PART_LOST, &p))
		return -ENOENT;
	ret = put_part(c, want, slot, lf_head, head_chunk, next, OD_INF_LOSTFOUND, NULL, 0, &ri);
	if (ret < 0)
		return ret;
	c->recs[ri].walked = 1;
	c->recs[ri].ext_done = 1;
	fsck_note(c, "lost+found's part made anew at %s, its chain going on to chunk %d", where,
		  next.chunk == OD_LOC_NONE ? -1 : (int)next.chunk);
	*lf = ri;
	return 0;
}
