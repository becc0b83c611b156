/* Directories: all knowledge of the directory-unit and entry layout. A
 * directory is its head inode plus one part (a continuation inode) in each
 * other chunk that holds entries for it; an entry always sits in the chunk
 * of the inode it names (invariant 2), embedding that inode when it is the
 * first link. Units are allocated with their mirror and freed once empty. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/format/crc32c.h"
#include "fs/internal.h"
#include "fs/lostfound.h"

#define COOKIE_OFF_BITS 12
#define COOKIE_SEQ_BITS 28

uint64_t dir_cookie(uint32_t chunk, uint32_t unit_seq, uint32_t off)
{
	return ((uint64_t)(chunk + 1) << (COOKIE_OFF_BITS + COOKIE_SEQ_BITS)) |
	       ((uint64_t)unit_seq << COOKIE_OFF_BITS) | (off >> 3);
}

static uint32_t unit_bytes(const struct chunk *c)
{
	return c->hdr.dir_unit * OD_BLOCK_SIZE;
}

/* Decode the entry at off, checking that it lies inside the unit. */
static int entry_at(const struct buf *b, uint32_t off, struct od_dirent *de)
{
	uint32_t size = b->units * OD_BLOCK_SIZE;

	if (off + OD_DIRENT_HEADER > size)
		return -EUCLEAN;
	od_get_dirent(b->data + off, de);
	if (de->rec_len < OD_DIRENT_HEADER || (de->rec_len & 7) || off + de->rec_len > size)
		return -EUCLEAN;
	if (de->kind > OD_DE_REF || od_dirent_used(b->data + off, de) > de->rec_len)
		return -EUCLEAN;
	return 0;
}

/* The part of dir that lives in chunk c: the head itself, or a part inode
 * found on (or, with create, appended to) the continuation chain. */
int dir_part_for(struct fs_volume *v, struct iref *dir, struct chunk *c, int create,
		 struct iref *part)
{
	struct iref cur = *dir, last;
	uint32_t hops = 0;
	int ret;

	if (dir->loc.chunk == c->index) {
		*part = *dir;
		return 0;
	}
	if (create) {
		/* A fresh chunk gets lost+found's part first (slot_alloc would
		 * make it below, behind a chain already walked): when dir is
		 * lost+found, that is the part wanted. */
		ret = lf_first_part(v, c);
		if (ret < 0)
			return ret;
	}
	while (cur.ino.next.chunk != OD_LOC_NONE) {
		if (++hops > v->nchunks)
			return -EUCLEAN;
		ret = ino_read(v, cur.ino.next, &cur);
		if (ret < 0)
			return ret;
		if (!(cur.ino.flags & OD_INF_CONT) || cur.ino.head_stable != dir->ino.stable)
			return -EUCLEAN;
		if (cur.loc.chunk == c->index) {
			*part = cur;
			return 0;
		}
	}
	if (!create)
		return -ENOENT;
	last = cur;
	memset(part, 0, sizeof(*part));
	ret = slot_alloc(c, &part->loc);
	if (ret < 0)
		return ret;
	part->ino.stable = 0;
	part->ino.mode = S_IFDIR;
	part->ino.flags = OD_INF_CONT;
	part->ino.head_chunk = dir->loc.chunk;
	part->ino.head_stable = dir->ino.stable;
	part->ino.next.chunk = OD_LOC_NONE;
	ret = ino_write(v, part);
	if (ret < 0)
		return ret;
	last.ino.next = part->loc;
	if (last.loc.chunk == dir->loc.chunk && last.loc.block == dir->loc.block &&
	    last.loc.off == dir->loc.off)
		dir->ino.next = part->loc; /* keep the caller's head current */
	return ino_write(v, &last);
}

/* Unlink an empty part from the chain and free its slot. */
static int part_drop(struct fs_volume *v, struct iref *dir, const struct iref *part)
{
	struct iref cur = *dir;
	uint32_t hops = 0;
	int ret;

	while (cur.ino.next.chunk != OD_LOC_NONE) {
		struct iref nxt;
		if (++hops > v->nchunks)
			return -EUCLEAN;
		ret = ino_read(v, cur.ino.next, &nxt);
		if (ret < 0)
			return ret;
		if (nxt.loc.chunk == part->loc.chunk) {
			cur.ino.next = nxt.ino.next;
			if (hops == 1)
				dir->ino.next = nxt.ino.next;
			ret = ino_write(v, hops == 1 ? dir : &cur);
			if (ret < 0)
				return ret;
			return slot_free(v, part->loc);
		}
		cur = nxt;
	}
	return -EUCLEAN;
}

/* An entry in the units of el with at least need bytes of slack, in the
 * newest unit that has one (the likeliest to be in the last transaction
 * already), split so that the slack is free from *where to *slack_end: 1,
 * with its unit in *bp (held) and its logical index in *seq; 0 when no
 * unit has room (*seq: the index a new unit takes). */
static int find_slack(struct chunk *c, const struct extlist *el, uint32_t need, struct buf **bp,
		      uint32_t *where, uint32_t *slack_end, uint32_t *seq)
{
	*seq = 0;
	for (uint32_t i = el->n; i-- > 0;) {
		const struct buf *known = buf_peek(c, el->e[i].pblk);
		uint32_t off, room = 0;
		struct buf *b;
		int ret;
		if (known && known->room >= 0 && (uint32_t)known->room < need) {
			if (el->e[i].lblk >= *seq)
				*seq = (uint32_t)el->e[i].lblk + 1;
			continue; /* full for this entry, as last seen */
		}
		ret = buf_read(c, el->e[i].pblk, c->hdr.dir_unit, &b);
		if (ret < 0)
			return ret;
		for (off = OD_MB_HEADER_SIZE; off < unit_bytes(c);) {
			struct od_dirent prev;
			uint32_t used;
			ret = entry_at(b, off, &prev);
			if (ret < 0) {
				buf_put(b);
				return ret;
			}
			used = od_dirent_used(b->data + off, &prev);
			if ((uint32_t)prev.rec_len - used > room)
				room = (uint32_t)prev.rec_len - used;
			if ((uint32_t)prev.rec_len - used >= need) {
				*slack_end = off + prev.rec_len;
				*where = off + used;
				if (used) {
					prev.rec_len = (uint16_t)used;
					od_put_dirent(b->data + off, &prev);
				}
				*seq = (uint32_t)el->e[i].lblk;
				*bp = b;
				return 1;
			}
			off += prev.rec_len;
		}
		b->room = (int32_t)room;
		buf_put(b);
		if (el->e[i].lblk >= *seq)
			*seq = (uint32_t)el->e[i].lblk + 1;
	}
	return 0;
}

/* Room for an entry in a unit: b (held), free from where to end. */
struct dir_room {
	struct buf *b;
	uint32_t where, end;
};

/* A new unit, with its mirror, at the end of part (its logical index seq,
 * its owner dir's stable number): its extent added to el, the part's
 * extents and inode written, the unit held in *bp. */
static int unit_append(struct fs_volume *v, uint64_t owner, struct iref *part, struct chunk *c,
		       struct extlist *el, uint32_t seq, struct buf **bp)
{
	struct od_extent e;
	struct od_mb_header h;
	struct buf *b;
	uint32_t blk;
	int ret;

	ret = alloc_meta(c, c->hdr.dir_unit, &blk);
	if (ret < 0)
		return ret;
	ret = buf_fresh(c, blk, c->hdr.dir_unit, OD_MB_DIR, owner, &b);
	if (ret < 0) {
		free_meta(c, blk, c->hdr.dir_unit);
		return ret;
	}
	b->fresh = 1; /* frees commit before their blocks are reused */
	od_get_mb_header(b->data, &h);
	h.seq = seq;
	od_put_mb_header(b->data, &h);
	e.lblk = seq;
	e.pblk = blk;
	e.len = c->hdr.dir_unit;
	if (el->n == el->cap) {
		uint32_t ncap = el->cap ? el->cap * 2 : 8;
		struct od_extent *p = realloc(el->e, ncap * sizeof(*p));
		if (!p) {
			ret = -ENOMEM;
			goto out_free_unit;
		}
		el->e = p;
		el->cap = ncap;
	}
	el->e[el->n++] = e;
	ret = ext_store(v, part, el);
	if (ret == 0)
		ret = ino_write(v, part);
	if (ret < 0) {
		el->n--;
		goto out_free_unit;
	}
	*bp = b;
	return 0;
out_free_unit:
	buf_put(b);
	free_meta(c, blk, c->hdr.dir_unit);
	return ret;
}

/* Room for an entry of need bytes in part (its extents el): want bytes
 * when some unit has them, else need bytes, else a new unit at its end. */
static int room_find(struct fs_volume *v, uint64_t owner, struct iref *part, struct chunk *c,
		     struct extlist *el, uint32_t need, uint32_t want, struct dir_room *room)
{
	uint32_t seq = 0;
	int ret;

	ret = find_slack(c, el, want, &room->b, &room->where, &room->end, &seq);
	if (ret == 0 && want != need)
		ret = find_slack(c, el, need, &room->b, &room->where, &room->end, &seq);
	if (ret < 0)
		return ret;
	if (ret > 0)
		return 0;
	ret = unit_append(v, owner, part, c, el, seq, &room->b);
	if (ret < 0)
		return ret;
	room->where = OD_MB_HEADER_SIZE;
	room->end = unit_bytes(c);
	return 0;
}

/* What dir_add writes: the name, the stable number it names, the inode
 * to embed (and its inline data) or none, and the entry's size. */
struct dir_new_entry {
	const char *name;
	size_t len;
	uint64_t stable;
	const struct od_inode *embed;
	const void *inl;
	uint32_t inl_len;
	uint32_t need;
};

/* Write ne into room (its unit in chunk c), tell dir's name index, and
 * say in *pos where it is. */
static void entry_put(struct fs_volume *v, uint64_t dir, struct chunk *c,
		      const struct dir_room *room, const struct dir_new_entry *ne,
		      struct dirpos *pos)
{
	struct od_dirent de = {
		.rec_len = (uint16_t)(room->end - room->where),
		.name_len = (uint8_t)ne->len,
		.kind = ne->embed ? OD_DE_EMBEDDED : OD_DE_REF,
		.hash = crc32c(0, ne->name, ne->len),
		.stable = ne->stable,
	};
	uint8_t *p = room->b->data + room->where;

	memset(p, 0, ne->need);
	od_put_dirent(p, &de);
	memcpy(p + OD_DIRENT_HEADER, ne->name, ne->len);
	if (ne->embed) {
		uint8_t *ip = p + OD_DIRENT_HEADER + od_align8((uint32_t)ne->len);
		od_put_inode(ip, ne->embed);
		if (ne->inl_len)
			memcpy(ip + OD_INODE_SIZE, ne->inl, ne->inl_len);
	}
	buf_dirty(room->b);
	pos->unit.chunk = c->index;
	pos->unit.block = room->b->block;
	pos->unit.off = 0;
	pos->off = room->where;
	pos->de = de;
	dindex_added(v, dir, pos);
}

/* Add an entry for name in dir's units in chunk c, embedding the inode
 * (and its inline data) when given. A fresh regular file's entry goes
 * where a small first write will fit beside it when some unit has that
 * room (dir_set_inline then needs no move), else wherever it fits. */
int dir_add(struct fs_volume *v, struct iref *dir, struct chunk *c, const char *name,
	    size_t len, uint64_t stable, const struct od_inode *embed, const void *inl,
	    uint32_t inl_len, struct dirpos *pos)
{
	struct dir_new_entry ne = {
		.name = name,
		.len = len,
		.stable = stable,
		.embed = embed,
		.inl = inl,
		.inl_len = inl_len,
		.need = od_dirent_size((uint32_t)len, embed != NULL, inl_len),
	};
	uint32_t want = ne.need;
	struct iref tmp, *part;
	struct extlist el = { 0 };
	struct dir_room room = { 0 };
	int new_part = 0, ret;

	if (ne.need > unit_bytes(c) - OD_MB_HEADER_SIZE)
		return -ENAMETOOLONG;
	if (embed && !inl_len && S_ISREG(embed->mode) &&
	    ne.need + OD_BLOCK_SIZE <= unit_bytes(c) - OD_MB_HEADER_SIZE)
		want = ne.need + OD_BLOCK_SIZE;
	if (dir->loc.chunk == c->index) {
		part = dir;
	} else {
		ret = dir_part_for(v, dir, c, 0, &tmp);
		if (ret == -ENOENT) {
			ret = dir_part_for(v, dir, c, 1, &tmp);
			new_part = 1;
		}
		if (ret < 0)
			return ret;
		part = &tmp;
	}
	ret = ext_load(v, part, &el);
	if (ret == 0)
		ret = room_find(v, dir->ino.stable, part, c, &el, ne.need, want, &room);
	if (ret == 0) {
		entry_put(v, dir->ino.stable, c, &room, &ne, pos);
		buf_put(room.b);
	}
	ext_release(&el);
	if (ret < 0 && new_part)
		part_drop(v, dir, part); /* leave no empty part behind */
	return ret;
}

static int unit_is_empty(const struct buf *b)
{
	for (uint32_t off = OD_MB_HEADER_SIZE; off < b->units * OD_BLOCK_SIZE;) {
		struct od_dirent de;
		if (entry_at(b, off, &de) < 0)
			return 0;
		if (de.kind != OD_DE_FREE)
			return 0;
		off += de.rec_len;
	}
	return 1;
}

/* Free a now-empty unit, and the part that held it when it was its last
 * (but for a part of lost+found's, which stays for fsck to link into). */
static int unit_release(struct fs_volume *v, struct iref *dir, struct chunk *c, uint32_t blk)
{
	struct iref tmp, *part;
	struct extlist el;
	uint32_t k;
	int ret;

	if (dir->loc.chunk == c->index) {
		part = dir;
	} else {
		ret = dir_part_for(v, dir, c, 0, &tmp);
		if (ret < 0)
			return ret;
		part = &tmp;
	}
	ret = ext_load(v, part, &el);
	if (ret < 0)
		return ret;
	for (k = 0; k < el.n && el.e[k].pblk != blk; k++)
		;
	if (k == el.n) {
		ext_release(&el);
		return -EUCLEAN;
	}
	memmove(&el.e[k], &el.e[k + 1], (el.n - k - 1) * sizeof(el.e[0]));
	el.n--;
	ret = ext_store(v, part, &el);
	if (ret == 0)
		free_meta(c, blk, c->hdr.dir_unit);
	if (ret == 0 && part != dir && el.n == 0 && !lf_is_part(part))
		ret = part_drop(v, dir, part);
	else if (ret == 0)
		ret = ino_write(v, part);
	ext_release(&el);
	return ret;
}

int dir_remove_entry(struct fs_volume *v, struct iref *dir, const struct dirpos *pos)
{
	struct chunk *c = vol_chunk(v, pos->unit.chunk);
	uint32_t prev = 0;
	struct od_dirent de;
	struct buf *b;
	int empty, ret;

	ret = buf_read(c, pos->unit.block, c->hdr.dir_unit, &b);
	if (ret < 0)
		return ret;
	for (uint32_t off = OD_MB_HEADER_SIZE; off < pos->off;) {
		ret = entry_at(b, off, &de);
		if (ret < 0)
			goto out;
		prev = off;
		off += de.rec_len;
	}
	ret = entry_at(b, pos->off, &de);
	if (ret < 0)
		goto out;
	{
		struct dirpos gone = *pos;
		gone.de = de;
		dindex_removed(v, dir->ino.stable, &gone);
	}
	/* The name, inode and inline data go with the entry: nothing of a
	 * removed file stays readable in the unit. */
	memset(b->data + pos->off, 0, de.rec_len);
	if (prev) {
		struct od_dirent pd;
		od_get_dirent(b->data + prev, &pd);
		pd.rec_len = (uint16_t)(pd.rec_len + de.rec_len);
		od_put_dirent(b->data + prev, &pd);
	} else {
		struct od_dirent fr = { .rec_len = de.rec_len, .kind = OD_DE_FREE };
		od_put_dirent(b->data + pos->off, &fr);
	}
	buf_dirty(b);
	empty = unit_is_empty(b);
	buf_put(b);
	return empty ? unit_release(v, dir, c, pos->unit.block) : 0;
out:
	buf_put(b);
	return ret;
}

int dir_part_drop_empty(struct fs_volume *v, const struct iref *part)
{
	struct iref head;
	int ret;

	if (!(part->ino.flags & OD_INF_CONT) || !S_ISDIR(part->ino.mode))
		return -EINVAL;
	if (part->ino.nextents || part->ino.ext_block)
		return -ENOTEMPTY;
	ret = ino_get_stable(v, part->ino.head_stable, &head);
	if (ret < 0)
		return ret;
	if (!S_ISDIR(head.ino.mode) || head.loc.chunk == part->loc.chunk)
		return -EUCLEAN;
	return part_drop(v, &head, part);
}

int dir_seg_entries_of(struct fs_volume *v, const struct iref *seg, uint64_t stable,
		       dir_walk_fn fn, void *ctx)
{
	struct chunk *c = vol_chunk(v, seg->loc.chunk);
	struct extlist el = { 0 };
	int ret;

	if (!c)
		return -EUCLEAN;
	ret = ext_load(v, seg, &el);
	for (uint32_t i = 0; ret == 0 && i < el.n; i++) {
		struct buf *b;
		ret = buf_read(c, el.e[i].pblk, c->hdr.dir_unit, &b);
		if (ret < 0)
			break;
		for (uint32_t off = OD_MB_HEADER_SIZE; off < unit_bytes(c);) {
			struct dir_walk_ent we;
			ret = entry_at(b, off, &we.pos.de);
			if (ret < 0)
				break;
			if (we.pos.de.kind != OD_DE_FREE &&
			    (stable == DIR_ALL_ENTRIES || we.pos.de.stable == stable)) {
				we.pos.unit.chunk = c->index;
				we.pos.unit.block = el.e[i].pblk;
				we.pos.unit.off = 0;
				we.pos.off = off;
				we.name = (const char *)b->data + off + OD_DIRENT_HEADER;
				we.part = c->index;
				we.unit_seq = (uint32_t)el.e[i].lblk;
				ret = fn(v, ctx, &we);
				if (ret != 0)
					break;
			}
			off += we.pos.de.rec_len;
		}
		buf_put(b);
	}
	ext_release(&el);
	return ret;
}

/* --- walking ------------------------------------------------------------ */

/* The next part of a directory's chain; a part in an offline chunk comes
 * from what was recorded when it went offline (*ghost set). */
static int next_part(struct fs_volume *v, struct od_loc loc, struct iref *part, int *ghost)
{
	struct chunk *c = vol_chunk(v, loc.chunk);
	int ret;

	*ghost = 0;
	if (c && c->offline) {
		*ghost = 1;
		return chunk_ghost_part(c, loc, part);
	}
	ret = ino_read(v, loc, part);
	return ret;
}

int dir_walk(struct fs_volume *v, const struct iref *dir, uint64_t from_cookie, dir_walk_fn fn,
	     void *ctx)
{
	int skipped = 0;
	int ret = dir_walk_skipping(v, dir, from_cookie, fn, ctx, &skipped);

	return ret == 0 && skipped ? -EIO : ret;
}

int dir_walk_skipping(struct fs_volume *v, const struct iref *dir, uint64_t from_cookie,
		      dir_walk_fn fn, void *ctx, int *skipped)
{
	int ghost = 0;
	uint32_t want_chunk = 0, want_seq = 0, want_off = 0, hops = 0;
	int seeking = from_cookie != 0;
	struct iref part = *dir;
	struct extlist el = { 0 };
	int ret;

	if (seeking) {
		uint64_t top = from_cookie >> (COOKIE_OFF_BITS + COOKIE_SEQ_BITS);
		if (top == 0 || top > v->nchunks)
			return -FS_EBADCOOKIE;
		want_chunk = (uint32_t)top - 1;
		want_seq = (uint32_t)(from_cookie >> COOKIE_OFF_BITS) & ((1u << COOKIE_SEQ_BITS) - 1);
		want_off = (uint32_t)(from_cookie & ((1u << COOKIE_OFF_BITS) - 1)) << 3;
	}
	for (;;) {
		struct chunk *c = vol_chunk(v, part.loc.chunk);
		int here = seeking && part.loc.chunk == want_chunk;

		if (ghost) {
			/* Its entries are out of reach: the walk goes on after it
			 * (a cookie inside it resumes at the next part). */
			*skipped = 1;
			if (here)
				seeking = 0;
		} else if (!seeking || here) {
			ret = ext_load(v, &part, &el);
			if (ret < 0)
				return ret;
			for (uint32_t i = 0; i < el.n; i++) {
				uint32_t seq = (uint32_t)el.e[i].lblk;
				struct buf *b;
				if (here && seq < want_seq)
					continue;
				ret = buf_read(c, el.e[i].pblk, c->hdr.dir_unit, &b);
				if (ret < 0)
					goto fail;
				for (uint32_t off = OD_MB_HEADER_SIZE; off < unit_bytes(c);) {
					struct dir_walk_ent we;
					ret = entry_at(b, off, &we.pos.de);
					if (ret < 0)
						break;
					if (we.pos.de.kind != OD_DE_FREE &&
					    !(here && seq == want_seq && off <= want_off)) {
						we.pos.unit.chunk = c->index;
						we.pos.unit.block = el.e[i].pblk;
						we.pos.unit.off = 0;
						we.pos.off = off;
						we.name = (const char *)b->data + off + OD_DIRENT_HEADER;
						we.part = c->index;
						we.unit_seq = seq;
						ret = fn(v, ctx, &we);
						if (ret != 0)
							break;
					}
					off += we.pos.de.rec_len;
				}
				buf_put(b);
				if (ret != 0)
					goto fail;
			}
			ext_release(&el);
			seeking = 0;
		}
		if (part.ino.next.chunk == OD_LOC_NONE)
			break;
		if (++hops > v->nchunks)
			return -EUCLEAN;
		ret = next_part(v, part.ino.next, &part, &ghost);
		if (ret < 0)
			return ret;
		if (!(part.ino.flags & OD_INF_CONT) || part.ino.head_stable != dir->ino.stable)
			return -EUCLEAN;
	}
	return seeking ? -FS_EBADCOOKIE : 0;
fail:
	ext_release(&el);
	return ret;
}

struct find_ctx {
	const char *name;
	size_t len;
	uint32_t hash;
	struct dirpos *pos;
};

static int find_fn(struct fs_volume *v, void *vctx, const struct dir_walk_ent *e)
{
	struct find_ctx *fc = vctx;

	if (e->pos.de.hash != fc->hash || e->pos.de.name_len != fc->len ||
	    memcmp(e->name, fc->name, fc->len) != 0)
		return 0;
	*fc->pos = e->pos;
	return 1;
}

int dir_entry_at(struct fs_volume *v, const struct od_loc *unit, uint32_t off, char *name,
		 struct dirpos *pos)
{
	struct chunk *c = vol_chunk(v, unit->chunk);
	struct od_dirent de;
	struct buf *b;
	int ret;

	if (!c)
		return -EUCLEAN;
	ret = buf_read(c, unit->block, c->hdr.dir_unit, &b);
	if (ret < 0)
		return ret;
	ret = entry_at(b, off, &de);
	if (ret == 0 && de.kind == OD_DE_FREE)
		ret = -ENOENT;
	if (ret == 0) {
		memcpy(name, b->data + off + OD_DIRENT_HEADER, de.name_len);
		name[de.name_len] = '\0';
		pos->unit = *unit;
		pos->unit.off = 0;
		pos->off = off;
		pos->de = de;
	}
	buf_put(b);
	return ret;
}

int dir_entry_matches(struct fs_volume *v, const struct od_loc *unit, uint32_t off,
		      const char *name, size_t len, struct dirpos *pos)
{
	char got[FS_NAME_MAX + 1];
	struct dirpos p;
	int ret = dir_entry_at(v, unit, off, got, &p);

	if (ret == 0 && (p.de.name_len != len || memcmp(got, name, len) != 0))
		ret = -ENOENT;
	if (ret == 0)
		*pos = p;
	return ret;
}

int dir_find(struct fs_volume *v, const struct iref *dir, const char *name, size_t len,
	     struct dirpos *pos)
{
	struct find_ctx fc = { name, len, crc32c(0, name, len), pos };
	int ret = dindex_find(v, dir, name, len, fc.hash, pos);

	if (ret != -EAGAIN)
		return ret;
	ret = dir_walk(v, dir, 0, find_fn, &fc);
	if (ret < 0)
		return ret; /* -EIO: not found, but a part in an offline chunk may hold it */
	return ret == 1 ? 0 : -ENOENT;
}

static int any_fn(struct fs_volume *v, void *ctx, const struct dir_walk_ent *e)
{
	return 1;
}

int dir_is_empty(struct fs_volume *v, const struct iref *dir)
{
	int ret = dir_walk(v, dir, 0, any_fn, NULL);

	return ret < 0 ? ret : ret == 0;
}

/* The location of the inode embedded in the entry at pos. */
struct od_loc dir_embedded_loc(const struct dirpos *pos)
{
	struct od_loc l = pos->unit;

	l.off = (uint16_t)(pos->off + OD_DIRENT_HEADER + od_align8(pos->de.name_len));
	return l;
}

int dir_read_inline(struct fs_volume *v, const struct iref *r, void *buf, uint32_t len)
{
	struct chunk *c = vol_chunk(v, r->loc.chunk);
	struct buf *b;
	int ret;

	if (len > r->ino.inline_len ||
	    (uint32_t)r->loc.off + OD_INODE_SIZE + len > unit_bytes(c))
		return -EUCLEAN;
	ret = buf_read(c, r->loc.block, c->hdr.dir_unit, &b);
	if (ret < 0)
		return ret;
	memcpy(buf, b->data + r->loc.off + OD_INODE_SIZE, len);
	buf_put(b);
	return 0;
}

/* The largest inline data an entry with this name can carry. */
uint32_t dir_inline_max(const struct chunk *c, size_t name_len)
{
	uint32_t room = unit_bytes(c) - OD_MB_HEADER_SIZE;
	uint32_t fixed = od_dirent_size((uint32_t)name_len, 1, 0);

	return room > fixed ? (room - fixed) & ~7u : 0;
}

/* An empty directory keeps no units or parts; anything left is freed. */
int dir_free_all(struct fs_volume *v, struct iref *dir)
{
	struct iref part = *dir;
	int first = 1, ret;
	uint32_t hops = 0;

	dindex_drop(v, dir->ino.stable);
	for (;;) {
		struct chunk *c = vol_chunk(v, part.loc.chunk);
		struct od_loc next = part.ino.next;
		struct extlist el;
		ret = ext_load(v, &part, &el);
		if (ret < 0)
			return ret;
		for (uint32_t i = 0; i < el.n; i++)
			free_meta(c, el.e[i].pblk, c->hdr.dir_unit);
		el.n = 0;
		ret = ext_store(v, &part, &el);
		ext_release(&el);
		if (ret < 0)
			return ret;
		if (first) {
			dir->ino = part.ino;
			dir->ino.next.chunk = OD_LOC_NONE;
		} else {
			ret = slot_free(v, part.loc);
			if (ret < 0)
				return ret;
		}
		first = 0;
		if (next.chunk == OD_LOC_NONE)
			break;
		if (++hops > v->nchunks)
			return -EUCLEAN;
		ret = ino_read(v, next, &part);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Move the embedded entry at old (its name, inode and now inline data, at
 * most a block of it) to where the data fits, in the same directory and
 * chunk: the directory's other units or a fresh one; the stable number's
 * map entry follows it.
 * Done in the order add, map, remove, each undone when a later one fails. */
static int move_for_inline(struct fs_volume *v, struct iref *r, const struct dirpos *old,
			   uint64_t owner, const char *name, const void *data, uint32_t len)
{
	struct chunk *c = vol_chunk(v, old->unit.chunk);
	struct od_inode ino = r->ino;
	struct od_loc loc, old_loc = r->loc;
	struct dirpos npos;
	struct iref dir;
	int ret;

	if (ino.nlink != 1 || len > OD_BLOCK_SIZE || len > dir_inline_max(c, old->de.name_len))
		return -EAGAIN; /* more than a block is as well in blocks */
	ret = ino_get_stable(v, owner, &dir);
	if (ret < 0)
		return ret;
	if (!S_ISDIR(dir.ino.mode))
		return -EUCLEAN;
	ino.flags = (ino.flags | OD_INF_INLINE) & ~OD_INF_FRESH;
	ino.inline_len = len;
	ino.size = len;
	ret = dir_add(v, &dir, c, name, old->de.name_len, ino.stable, &ino, data, len, &npos);
	if (ret < 0)
		return ret == -ENOSPC ? -EAGAIN : ret; /* a data block elsewhere may do */
	loc = dir_embedded_loc(&npos);
	ret = map_set_loc(v, ino.stable, loc);
	if (ret == 0) {
		ret = dir_remove_entry(v, &dir, old);
		if (ret < 0)
			map_set_loc(v, ino.stable, old_loc);
	}
	if (ret < 0) {
		dir_remove_entry(v, &dir, &npos);
		return ret;
	}
	r->loc = loc;
	r->ino = ino;
	return 0;
}

/* Keep a fresh file's first write inline in its directory entry: in place
 * when the entry's slack holds it, else by moving the entry to where it
 * fits. -EAGAIN: not embedded in a directory unit, linked twice, or too
 * large for any entry. */
/* The entry of unit b whose embedded inode is at ino_off: 0 with its
 * offset and header, -ENOENT when none is, -EUCLEAN for a broken unit. */
static int embedded_entry(const struct chunk *c, const struct buf *b, uint32_t ino_off,
			  uint32_t *off_out, struct od_dirent *de)
{
	for (uint32_t off = OD_MB_HEADER_SIZE; off < unit_bytes(c);) {
		if (entry_at(b, off, de) < 0)
			return -EUCLEAN;
		if (de->kind == OD_DE_EMBEDDED &&
		    off + OD_DIRENT_HEADER + od_align8(de->name_len) == ino_off) {
			*off_out = off;
			return 0;
		}
		off += de->rec_len;
	}
	return -ENOENT;
}

int dir_embedded_pos(struct fs_volume *v, const struct iref *r, char *name, size_t *len,
		     struct dirpos *pos)
{
	struct chunk *c = vol_chunk(v, r->loc.chunk);
	struct od_dirent de;
	struct buf *b;
	uint32_t off;
	int ret;

	if (r->loc.block < c->hdr.data_start)
		return -ENOENT; /* an inode-area slot: no name of its own */
	ret = buf_read(c, r->loc.block, c->hdr.dir_unit, &b);
	if (ret < 0)
		return ret;
	ret = embedded_entry(c, b, r->loc.off, &off, &de);
	if (ret == 0) {
		memcpy(name, b->data + off + OD_DIRENT_HEADER, de.name_len);
		name[de.name_len] = '\0';
		*len = de.name_len;
		if (pos) {
			pos->unit = r->loc;
			pos->unit.off = 0;
			pos->off = off;
			pos->de = de;
		}
	}
	buf_put(b);
	return ret;
}

int dir_embedded_name(struct fs_volume *v, const struct iref *r, char *name, size_t *len)
{
	return dir_embedded_pos(v, r, name, len, NULL);
}

int dir_embedded_owner(struct fs_volume *v, const struct iref *r, uint64_t *owner)
{
	struct chunk *c = vol_chunk(v, r->loc.chunk);
	struct od_mb_header h;
	struct buf *b;
	int ret;

	if (r->loc.block < c->hdr.data_start)
		return -ENOENT;
	ret = buf_read(c, r->loc.block, c->hdr.dir_unit, &b);
	if (ret < 0)
		return ret;
	od_get_mb_header(b->data, &h);
	buf_put(b);
	*owner = h.owner;
	return 0;
}

int dir_set_inline(struct fs_volume *v, struct iref *r, const void *data, uint32_t len)
{
	struct chunk *c = vol_chunk(v, r->loc.chunk);
	char name[FS_NAME_MAX + 1];
	struct od_mb_header h;
	struct od_dirent de;
	struct dirpos pos;
	struct buf *b;
	uint32_t off;
	int ret;

	if (r->loc.block < c->hdr.data_start)
		return -EAGAIN; /* an inode-area slot has no room for data */
	ret = buf_read(c, r->loc.block, c->hdr.dir_unit, &b);
	if (ret < 0)
		return ret;
	ret = embedded_entry(c, b, r->loc.off, &off, &de);
	if (ret == 0 && r->loc.off + OD_INODE_SIZE + od_align8(len) <= off + de.rec_len) {
		memcpy(b->data + r->loc.off + OD_INODE_SIZE, data, len);
		buf_dirty(b);
		r->ino.flags = (r->ino.flags | OD_INF_INLINE) & ~OD_INF_FRESH;
		r->ino.inline_len = len;
		r->ino.size = len;
	} else if (ret == 0) {
		pos.unit = r->loc;
		pos.unit.off = 0;
		pos.off = off;
		pos.de = de;
		memcpy(name, b->data + off + OD_DIRENT_HEADER, de.name_len);
		name[de.name_len] = '\0';
		ret = -EAGAIN;
	}
	od_get_mb_header(b->data, &h);
	buf_put(b);
	if (ret == -EAGAIN)
		ret = move_for_inline(v, r, &pos, h.owner, name, data, len);
	return ret == -ENOENT ? -EAGAIN : ret; /* not embedded there after all */
}
