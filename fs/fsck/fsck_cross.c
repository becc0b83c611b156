/* fsck: references that leave the chunk (invariant 2's back pointers). The
 * passes record them instead of following them; here they are printed as
 * the checks to make when the chunk is brought online, or, with -x on a
 * whole volume, confirmed by reading the one inode (or map entry) at the
 * other end through the volume image, read-only. Also: finding a chunk's
 * header in a volume image (fsck_volume_path locates chunks with it). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fsck/fsck_int.h"

/* --- reading other chunks ---------------------------------------------------- */

/* len bytes at off of another chunk of the volume image. */
int fsck_vol_pread(const struct fsck_vol *v, uint32_t chunk, void *buf, size_t len, uint64_t off)
{
	struct chunk_store *st = fsck_vol_placed(v, chunk);

	if (off + len > v->size[chunk])
		return -ERANGE;
	if (st)
		return store_pread(st, buf, len, off);
	return od_pread_full(v->fd, buf, len, v->base[chunk] + off);
}

static int src_store_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	return store_pread(ctx, buf, len, off);
}

/* Chunk i's header at base of the image, or at the start of its own store:
 * the newer valid copy (its index must be i); the mirror is looked for
 * where copy 0 says, else at every possible chunk size. */
int fsck_vol_read_header(struct fsck_vol *v, uint32_t i, uint64_t base, uint64_t avail,
			 uint32_t guess_nblocks)
{
	struct chunk_store *st = fsck_vol_placed(v, i);
	struct od_header_src src = od_header_src_fd(v->fd, base + avail);
	struct od_chunk_header h;

	if (st) {
		src.pread = src_store_pread;
		src.ctx = st;
		src.size = st->size;
		base = 0;
	}
	v->hdr_ok[i] = 0;
	if (od_header_read(&src, base, i, guess_nblocks, &h, NULL) < 0)
		return -EUCLEAN;
	v->hdr[i] = h;
	v->hdr_ok[i] = 1;
	return 0;
}

/* A unit of another chunk: the copy its newest dirty list makes current
 * when it names the unit (rolled forward or back, fsck_txn.c), else copy 0
 * when it is valid (copy 1 when it is not), or with both copies read
 * (c->both) the newer of the valid ones. */
int fsck_far_unit(struct fsck_ctx *c, uint32_t chunk, uint32_t block, uint16_t units,
		    uint16_t type, uint8_t *buf)
{
	struct fsck_vol *v = c->vol;
	size_t len = (size_t)units * OD_BLOCK_SIZE;
	uint8_t *other;
	uint64_t best = 0;
	int found = 0, only, ret;

	if (chunk >= v->nchunks || !v->hdr_ok[chunk])
		return -ENXIO;
	if ((uint64_t)block + units > v->hdr[chunk].nblocks / 2)
		return -ERANGE;
	ret = fsck_txn_far_copy(c, chunk, block, &only);
	if (ret < 0)
		return ret;
	other = malloc(len);
	if (!other)
		return -ENOMEM;
	for (int copy = 0; copy < 2; copy++) {
		uint64_t off = (uint64_t)(block + (copy ? v->hdr[chunk].nblocks / 2 : 0)) * OD_BLOCK_SIZE;
		struct od_mb_header h;
		if (only >= 0 && copy != only)
			continue;
		if (copy && (v->hdr[chunk].flags & OD_CHF_SINGLE_COPY))
			break;
		if (copy && found && !c->both)
			break; /* copy 0 is current: the other is read only if it fails */
		if (fsck_vol_pread(v, chunk, other, len, off) < 0 || od_verify(other, len) < 0)
			continue;
		od_get_mb_header(other, &h);
		if (h.chunk != chunk || h.block != block || h.type != type)
			continue;
		if (!found || h.txid > best) {
			memcpy(buf, other, len);
			best = h.txid;
			found = 1;
		}
	}
	free(other);
	return found ? 0 : -EUCLEAN;
}

/* The inode at loc in another chunk. */
int fsck_far_inode(struct fsck_ctx *c, struct od_loc loc, struct od_inode *ino)
{
	const struct od_chunk_header *h;
	uint16_t units, type;
	uint8_t *buf;
	int ret;

	if (loc.chunk >= c->vol->nchunks || !c->vol->hdr_ok[loc.chunk])
		return -ENXIO;
	h = &c->vol->hdr[loc.chunk];
	if (loc.block >= h->itable_start && loc.block < h->data_start) {
		units = 1;
		type = OD_MB_ITABLE;
	} else {
		units = (uint16_t)h->dir_unit;
		type = OD_MB_DIR;
	}
	if (loc.off < OD_MB_HEADER_SIZE || loc.off + OD_INODE_SIZE > units * OD_BLOCK_SIZE)
		return -EUCLEAN;
	buf = malloc((size_t)units * OD_BLOCK_SIZE);
	if (!buf)
		return -ENOMEM;
	ret = fsck_far_unit(c, loc.chunk, loc.block, units, type, buf);
	if (ret == 0)
		od_get_inode(buf + loc.off, ino);
	free(buf);
	return ret;
}

/* The map entry of number s, in its home chunk (this one or another). */
int fsck_map_entry_of(struct fsck_ctx *c, uint64_t s, struct od_map_entry *e)
{
	uint32_t home = OD_STABLE_CHUNK(s), idx = OD_STABLE_INDEX(s);
	uint8_t buf[OD_BLOCK_SIZE];
	const struct od_chunk_header *h;
	int ret;

	if ((uint32_t)s == 0)
		return -ESTALE;
	/* A fostered home's map: the foster map chunk 0's header names. */
	if (c->vol && c->vol->nchunks) {
		for (uint32_t i = 0; i < c->vol->fost0.n; i++) {
			const struct od_foster *f = &c->vol->fost0.rec[i];
			if (f->home != home)
				continue;
			if (idx >= f->entries)
				return -ESTALE;
			if (f->chunk == c->index) {
				ret = fsck_foster_entry_here(c, s, e);
				if (ret != 0)
					return ret < 0 ? ret : 0;
			}
			ret = fsck_far_unit(c, f->chunk, f->start + idx / OD_MAP_PER_BLOCK, 1,
					    OD_MB_FOSTER, buf);
			if (ret == 0)
				od_get_map_entry(buf + OD_MB_HEADER_SIZE +
							 (idx % OD_MAP_PER_BLOCK) * OD_MAP_ENTRY_SIZE, e);
			return ret;
		}
	}
	if (home == c->index) {
		if (idx >= c->nmap)
			return -ESTALE;
		*e = c->map[idx];
		return 0;
	}
	if (home >= c->vol->nchunks || !c->vol->hdr_ok[home])
		return -ENXIO;
	h = &c->vol->hdr[home];
	/* fostered with no record of its map found: its own map area is
	 * stale, and nothing can be confirmed */
	if (h->flags & OD_CHF_FOSTERED)
		return -ENXIO;
	/* (not the header's watermark: the header read at the start may be
	 * older than a repair that gave out a number since) */
	if (idx >= h->max_inodes)
		return -ESTALE;
	ret = fsck_far_unit(c, home, h->map_start + idx / OD_MAP_PER_BLOCK, 1, OD_MB_MAP, buf);
	if (ret == 0)
		od_get_map_entry(buf + OD_MB_HEADER_SIZE + (idx % OD_MAP_PER_BLOCK) * OD_MAP_ENTRY_SIZE,
				 e);
	return ret;
}

/* An inode anywhere: this chunk's records, or a read of the other one. */
static int any_inode(struct fsck_ctx *c, struct od_loc loc, struct od_inode *ino)
{
	if (loc.chunk == c->index) {
		uint32_t ri = fsck_rec_at(c, loc.block, loc.off);
		if (ri == FSCK_NONE || c->recs[ri].dead)
			return -ENOENT;
		*ino = c->recs[ri].ino;
		return 0;
	}
	return fsck_far_inode(c, loc, ino);
}

/* --- the checks -------------------------------------------------------------- */

/* The far end could not be read: the check stays deferred, no problem. */
static const char unreadable[] = "cannot be read";

static int loc_eq(struct od_loc a, struct od_loc b)
{
	return a.chunk == b.chunk && a.block == b.block && a.off == b.off;
}

static int kind_ok(const struct od_inode *head, const struct od_inode *cont)
{
	if (S_ISDIR(cont->mode))
		return S_ISDIR(head->mode);
	return S_ISREG(head->mode) || S_ISLNK(head->mode);
}

/* A continuation here: its head exists where it says, and its chain reaches
 * it. *chain: what failed is the chain (the head is there). */
static const char *confirm_head(struct fsck_ctx *c, const struct fsck_ino *t, char *buf, size_t n,
				int *chain)
{
	struct od_loc me = { .chunk = c->index, .block = t->block, .off = t->off }, at;
	struct od_map_entry e;
	struct od_inode ino;
	uint32_t hops = 0;

	int ret = fsck_map_entry_of(c, t->ino.head_stable, &e);

	if (ret < 0 && ret != -ESTALE)
		return unreadable;
	if (ret < 0 || !(e.flags & OD_MAPF_USED))
		return "is free";
	if (e.loc.chunk != t->ino.head_chunk) {
		snprintf(buf, n, "is in chunk %u", e.loc.chunk);
		return buf;
	}
	if (any_inode(c, e.loc, &ino) < 0)
		return unreadable;
	if (ino.stable != t->ino.head_stable || ino.mode == 0 || (ino.flags & OD_INF_CONT))
		return "is not where its map entry says";
	if (!kind_ok(&ino, &t->ino))
		return "is not of this continuation's type";
	*chain = 1;
	for (at = ino.next; at.chunk != OD_LOC_NONE; at = ino.next) {
		if (loc_eq(at, me))
			return NULL;
		if (++hops > c->vol->nchunks * 64u)
			return "has a chain that loops";
		ret = any_inode(c, at, &ino);
		if (ret == -ENXIO || ret == -EIO || ret == -ENOMEM || ret == -EUCLEAN)
			return unreadable; /* a chunk on the way cannot be read now:
					    * its own check may make the piece again */
		if (ret < 0 || !(ino.flags & OD_INF_CONT) || ino.head_stable != t->ino.head_stable)
			return "has a broken chain";
	}
	return "does not reach it through its chain";
}

static const char *confirm_next(struct fsck_ctx *c, const struct fsck_ino *r)
{
	uint32_t head_chunk = (r->ino.flags & OD_INF_CONT) ? r->ino.head_chunk : c->index;
	uint64_t head = (r->ino.flags & OD_INF_CONT) ? r->ino.head_stable : r->ino.stable;
	struct od_inode ino;

	if (fsck_far_inode(c, r->ino.next, &ino) < 0)
		return unreadable;
	if (ino.mode == 0)
		return "names a free slot";
	if (!(ino.flags & OD_INF_CONT))
		return "names an inode that is not a continuation";
	if (ino.head_stable != head || ino.head_chunk != head_chunk)
		return "names a continuation whose back pointer is elsewhere";
	if (!!S_ISDIR(ino.mode) != !!S_ISDIR(r->ino.mode))
		return "names a continuation of another type";
	return NULL;
}

static const char *confirm_map_loc(struct fsck_ctx *c, const struct fsck_deferred *d)
{
	struct od_inode ino;

	if (fsck_far_inode(c, d->loc, &ino) < 0)
		return unreadable;
	if (ino.mode == 0 || ino.stable != d->stable || (ino.flags & OD_INF_CONT))
		return "is no such inode";
	if (ino.generation != (d->kind == DEF_FOSTER_LOC ? d->gen : c->map[d->idx].generation))
		return "is another generation";
	return NULL;
}

static const char *confirm_map_home(struct fsck_ctx *c, const struct fsck_ino *r)
{
	struct od_loc me = { .chunk = c->index, .block = r->block, .off = r->off };
	struct od_map_entry e;

	int ret = fsck_map_entry_of(c, r->ino.stable, &e);

	if (ret == -ESTALE)
		return "is beyond its map's watermark";
	if (ret < 0)
		return unreadable;
	if (!(e.flags & OD_MAPF_USED))
		return "is free";
	if (!loc_eq(e.loc, me))
		return "places it elsewhere";
	if (e.generation != r->ino.generation)
		return "has another generation";
	return NULL;
}

/* Subdirectories in the units of one part in another chunk. */
static int far_part_subdirs(struct fsck_ctx *c, struct od_loc loc, const struct od_inode *part,
			    uint32_t *count)
{
	const struct od_chunk_header *h = &c->vol->hdr[loc.chunk];
	size_t ulen = (size_t)h->dir_unit * OD_BLOCK_SIZE;
	uint8_t *buf = malloc(ulen), eb[OD_BLOCK_SIZE];
	uint32_t next = part->ext_block, hops = 0;
	struct od_extent ext[OD_INODE_EXTENTS + OD_EXT_PER_UNIT];
	uint32_t n = part->nextents < OD_INODE_EXTENTS ? part->nextents : OD_INODE_EXTENTS;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	memcpy(ext, part->ext, n * sizeof(ext[0]));
	for (;;) {
		for (uint32_t i = 0; i < n && ret == 0; i++) {
			uint32_t off = OD_MB_HEADER_SIZE;
			ret = fsck_far_unit(c, loc.chunk, ext[i].pblk, (uint16_t)h->dir_unit, OD_MB_DIR, buf);
			while (ret == 0 && off + OD_DIRENT_HEADER <= ulen) {
				struct od_dirent de;
				od_get_dirent(buf + off, &de);
				if (de.rec_len < OD_DIRENT_HEADER || off + de.rec_len > ulen)
					break;
				if (de.kind == OD_DE_EMBEDDED &&
				    off + OD_DIRENT_HEADER + od_align8(de.name_len) + OD_INODE_SIZE <= ulen) {
					struct od_inode ino;
					od_get_inode(buf + off + OD_DIRENT_HEADER + od_align8(de.name_len),
						     &ino);
					*count += S_ISDIR(ino.mode) != 0;
				} else if (de.kind == OD_DE_REF) {
					struct od_map_entry e;
					struct od_inode ino;
					if (fsck_map_entry_of(c, de.stable, &e) == 0 &&
					    (e.flags & OD_MAPF_USED) && any_inode(c, e.loc, &ino) == 0)
						*count += S_ISDIR(ino.mode) != 0;
				}
				off += de.rec_len;
			}
		}
		if (ret < 0 || !next)
			break;
		if (++hops > h->nblocks) {
			ret = -ELOOP;
			break;
		}
		ret = fsck_far_unit(c, loc.chunk, next, 1, OD_MB_EXTENTS, eb);
		if (ret < 0)
			break;
		{
			struct od_mb_header mh;
			od_get_mb_header(eb, &mh);
			n = mh.seq < OD_EXT_PER_UNIT ? mh.seq : OD_EXT_PER_UNIT;
			for (uint32_t i = 0; i < n; i++)
				od_get_extent(eb + OD_MB_HEADER_SIZE + 16 * i, &ext[i]);
			next = mh.next;
		}
	}
	free(buf);
	return ret;
}

/* A directory head here with parts elsewhere: its whole link count. */
static void confirm_dir_links(struct fsck_ctx *c, uint32_t ri)
{
	uint32_t total = c->recs[ri].subdirs, hops = 0;
	struct od_loc at = c->recs[ri].ino.next;
	struct fsck_pctx p = { .rec = &c->recs[ri] };

	while (at.chunk != OD_LOC_NONE) {
		struct od_inode part;
		int ret;
		if (++hops > c->vol->nchunks || at.chunk == c->index ||
		    fsck_far_inode(c, at, &part) < 0 || !(part.flags & OD_INF_CONT) ||
		    part.head_stable != c->recs[ri].ino.stable) {
			fsck_note(c, "could not confirm the link count of inode %llu: its chain of "
				     "parts is broken at chunk %u",
				  (unsigned long long)c->recs[ri].ino.stable, at.chunk);
			return;
		}
		ret = far_part_subdirs(c, at, &part, &total);
		if (ret < 0) {
			fsck_note(c, "could not confirm the link count of inode %llu: %s",
				  (unsigned long long)c->recs[ri].ino.stable, strerror(-ret));
			return;
		}
		at = part.next;
	}
	if (c->recs[ri].ino.nlink != 2 + total) {
		p.num = c->recs[ri].ino.nlink;
		p.num2 = 2 + total;
		if (fix_problem(c, PR_4_LINK_COUNT, &p))
			fsck_set_nlink(c, ri, 2 + total);
	}
}

static const char *confirm_entry(struct fsck_ctx *c, const struct fsck_deferred *d, char *buf,
				 size_t n)
{
	struct od_map_entry e;

	int ret = fsck_map_entry_of(c, d->stable, &e);

	if (ret == -ESTALE)
		return "is beyond its map's watermark";
	if (ret < 0)
		return unreadable;
	if (!(e.flags & OD_MAPF_USED))
		return "is free";
	if (e.loc.chunk == c->index)
		return "its map places in this chunk, where it is not";
	snprintf(buf, n, "lives in chunk %u: the entry should be there", e.loc.chunk);
	return buf;
}

/* One line saying what is to be checked. */
static void describe_def(struct fsck_ctx *c, const struct fsck_deferred *d, char *out, size_t n)
{
	char who[160] = "";

	if (d->rec != FSCK_NONE)
		fsck_describe(c, &c->recs[d->rec], who, sizeof(who));
	switch (d->kind) {
	case DEF_HEAD:
		snprintf(out, n, "%s: its head %llu in chunk %u must exist and reach it", who,
			 (unsigned long long)d->stable, d->loc.chunk);
		break;
	case DEF_NEXT:
		snprintf(out, n, "%s: its next continuation at chunk %u block %u offset %u", who,
			 d->loc.chunk, d->loc.block, d->loc.off);
		break;
	case DEF_MAP_LOC:
		snprintf(out, n, "map entry %u (inode %llu): the inode at chunk %u block %u offset %u",
			 d->idx, (unsigned long long)d->stable, d->loc.chunk, d->loc.block,
			 d->loc.off);
		break;
	case DEF_FOSTER_LOC:
		snprintf(out, n, "foster map of chunk %u, entry %u (inode %llu): the inode at chunk "
				 "%u block %u offset %u", OD_STABLE_CHUNK(d->stable), d->idx,
			 (unsigned long long)d->stable, d->loc.chunk, d->loc.block, d->loc.off);
		break;
	case DEF_MAP_HOME:
		snprintf(out, n, "%s: its map entry in chunk %u must place it here", who,
			 OD_STABLE_CHUNK(d->stable));
		break;
	case DEF_DIR_LINKS:
		snprintf(out, n, "%s: link count %u, %u subdirectories here, the rest in its parts "
				 "in other chunks", who, c->recs[d->rec].ino.nlink,
			 c->recs[d->rec].subdirs);
		break;
	case DEF_ENTRY:
		snprintf(out, n, "an entry names inode %llu of chunk %u",
			 (unsigned long long)d->stable, OD_STABLE_CHUNK(d->stable));
		break;
	}
}

int fsck_cross(struct fsck_ctx *c)
{
	int confirm = c->o->cross && c->vol;

	c->res.deferred = c->ndefs;
	for (uint32_t i = 0; i < c->ndefs && !fsck_cancelled(c); i++) {
		const struct fsck_deferred *d = &c->defs[i];
		const struct fsck_ino *r = d->rec != FSCK_NONE ? &c->recs[d->rec] : NULL;
		struct fsck_pctx p = { .rec = r, .ino = d->stable };
		const char *bad = NULL;
		char line[400], buf[120];
		uint32_t code = 0;

		if (r && r->dead)
			continue;
		if (!confirm) {
			describe_def(c, d, line, sizeof(line));
			fsck_note(c, "deferred: %s", line);
			continue;
		}
		switch (d->kind) {
		case DEF_HEAD: {
			int chain = 0;
			bad = confirm_head(c, r, buf, sizeof(buf), &chain);
			code = PR_6_HEAD;
			/* lost+found's part is never made something else while
			 * its head is there: the chain is mended where it broke
			 * (fsck_lf_remake()) */
			if (bad && bad != unreadable && chain && (r->ino.flags & OD_INF_LOSTFOUND))
				code = PR_6_LF_UNREACHED;
			p.num = d->loc.chunk;
			break;
		}
		case DEF_NEXT:
			bad = confirm_next(c, r);
			code = PR_6_NEXT;
			p.num = d->loc.chunk;
			p.blk = d->loc.block;
			break;
		case DEF_MAP_LOC:
		case DEF_FOSTER_LOC:
			bad = confirm_map_loc(c, d);
			code = PR_6_MAP_LOC;
			p.num = d->idx;
			p.num2 = d->loc.chunk;
			p.blk = d->loc.block;
			break;
		case DEF_MAP_HOME:
			bad = confirm_map_home(c, r);
			code = PR_6_MAP_HOME;
			p.num = OD_STABLE_CHUNK(d->stable);
			break;
		case DEF_DIR_LINKS:
			confirm_dir_links(c, d->rec);
			break;
		case DEF_ENTRY: {
			const struct fsck_dent *de = &c->dents[d->idx];
			struct fsck_unit *u = fsck_unit_find(c, de->unit);
			bad = confirm_entry(c, d, buf, sizeof(buf));
			code = PR_6_ENTRY;
			p.num = OD_STABLE_CHUNK(d->stable);
			if (u && u->data) {
				p.name = u->data + de->off + OD_DIRENT_HEADER;
				p.name_len = de->name_len;
			}
			break;
		}
		}
		if (bad == unreadable) {
			describe_def(c, d, line, sizeof(line));
			fsck_note(c, "deferred (the other end cannot be read): %s", line);
		} else if (bad) {
			p.str = bad;
			if (code == PR_6_HEAD && (p.str2 = fsck_adopt_blocker(c, d->rec)))
				code = PR_6_HEAD_CLEAR;
			if (!fix_problem(c, code, &p))
				continue;
			if (code == PR_6_NEXT) {
				fsck_cut_chain(c, d->rec);
			} else if (code == PR_6_HEAD) {
				/* Nothing reaches it: it becomes a directory or a
				 * file of its own, in lost+found. */
				int ret = fsck_adopt_far(c, d->rec);
				if (ret == -ENOMEM)
					return ret;
			} else if (code == PR_6_HEAD_CLEAR) {
				/* Nowhere to keep it: its slot and blocks are
				 * freed (pass 5 comes after this step). A directory
				 * part takes the entries of its units with it, which
				 * the passes before counted: the chunk is checked
				 * again. */
				if (S_ISDIR(r->ino.mode))
					c->restart = 1;
				fsck_unclaim(c, d->rec);
				fsck_zero_slot(c, d->rec);
			}
		}
	}
	return 0;
}
