/* The scrub: both copies of every metadata unit read and judged, a bounded
 * step at a time, and a bad copy queued for rewrite from the good one
 * through the cache (the next transaction writes it, under the normal
 * crash rules). It owns the walk over a chunk's units in block order and
 * the rule that decides which copy is good; scheduling is the caller's
 * (chunkfsd's server/scrub.c).
 *
 * The walk, by copy-0 block: the header (block 0); the newest dirty list
 * this session wrote (lists have one copy each: it is only verified);
 * the bitmap; the map up to map_watermark and the inode area up to
 * islot_watermark (blocks above were never written); then the metadata
 * zone [data_start, zone end): a block in use with its mirror in use is a
 * directory, extent or foster unit when one of its copies says so in its
 * header, else data; in chunk 0 a unit of the predictor's chain as this
 * session knows it is one whatever its copies say (both bad: the table,
 * whole in memory, is written again: vol_pred_damaged), and so is a unit
 * of the foster table (ftab_rewrite). Units placed past the zone (only once it is full) are not
 * walked: fsck --both-copies covers them.
 *
 * The rule (doc/format.md §10-11): every transaction writes both copies
 * of its units before it is answered, so every unit has both copies valid
 * and equal but for crc; a valid copy that differs is stale (a lost
 * write) and the one with the greater txid is taken. A unit changed in
 * memory (dirty) or being written is skipped: the next transaction writes
 * it anyway.
 *
 * The reads (doc/design.md, the scrub): a step first reads its window,
 * both copies of SCRUB_WINDOW blocks from the cursor, without the volume
 * lock, then walks it with the lock held, reading nothing more. Only a
 * verdict of "both copies whole and equal" is taken from the window; any
 * other is read again from the store, locked, before anything is counted
 * or healed (a transaction may have written the unit while the window was
 * read). The walk stops at the first read past the window; the next step
 * reads its window from there. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/internal.h"

/* Free or data blocks of the zone looked at per unit of the budget. */
#define SCRUB_SCAN_PER_UNIT 256u
/* Blocks of each copy a step reads without the volume lock: more than
 * the 32 units of a step usually span, and at least the largest unit. */
#define SCRUB_WINDOW 128u
_Static_assert(SCRUB_WINDOW >= OD_MAX_DIR_UNIT, "a unit must fit in the window");

struct scrub {
	struct fs_volume *v;
	struct chunk *c;
	struct fs_scrub_result *res;
	uint8_t *copy[2];              /* one unit of each copy, dir_unit blocks */
	uint8_t *win[2];               /* the window of each copy, read unlocked */
	uint32_t win_chunk, win_start, win_len; /* its chunk and copy-0 blocks */
	int direct;                    /* reads go to the store (the lock held) */
};

/* Copy k of [block, block + units) of s->c into dst: from the window, or
 * from the store when s->direct. -ERANGE: outside the window (the step
 * ends there); else 0 or the store's error. */
static int scrub_read(struct scrub *s, int k, uint32_t block, uint32_t units, uint8_t *dst)
{
	struct chunk *c = s->c;
	size_t len = (size_t)units * OD_BLOCK_SIZE;

	if (s->direct)
		return store_pread(c->store, dst, len,
				   (uint64_t)(k ? chunk_mirror(c, block) : block) * OD_BLOCK_SIZE);
	if (c->index != s->win_chunk || block < s->win_start ||
	    (uint64_t)block + units > (uint64_t)s->win_start + s->win_len)
		return -ERANGE;
	memcpy(dst, s->win[k] + (size_t)(block - s->win_start) * OD_BLOCK_SIZE, len);
	return 0;
}

/* Is data a whole, valid copy of the unit at block of this type? */
static int copy_valid(const struct chunk *c, const uint8_t *data, uint32_t block, uint32_t units,
		      uint16_t type)
{
	struct od_mb_header h;

	if (od_verify(data, (size_t)units * OD_BLOCK_SIZE) < 0)
		return 0;
	od_get_mb_header(data, &h);
	return h.type == type && h.units == units && h.chunk == c->index && h.block == block;
}

/* The same version: equal but for crc (bytes 8-11) and txid (24-31). */
static int same_version(const uint8_t *a, const uint8_t *b, size_t len)
{
	return memcmp(a, b, 8) == 0 && memcmp(a + 12, b + 12, 12) == 0 &&
	       memcmp(a + 32, b + 32, len - 32) == 0;
}

static uint64_t txid_of(const uint8_t *data)
{
	struct od_mb_header h;

	od_get_mb_header(data, &h);
	return h.txid;
}

static void mark_needs_repair(struct chunk *c)
{
	if (c->hdr.state != OD_STATE_NEEDS_REPAIR) {
		c->hdr.state = OD_STATE_NEEDS_REPAIR;
		c->header_dirty = 1;
	}
}

/* Queue copy bad of the unit for rewrite with good's content (or the
 * cached one, which is current when there is one). */
static int heal(struct scrub *s, uint32_t block, uint32_t units, uint16_t type, int bad,
		const uint8_t *good)
{
	struct chunk *c = s->c;
	struct buf *b;
	int ret;

	if (block == 0) {
		/* The header is written from memory (chunk_write_header). */
		c->header_heal = bad;
		c->header_dirty = 1;
		return 0;
	}
	b = buf_peek(c, block);
	if (b) {
		b->refs++;
	} else {
		ret = buf_fresh(c, block, units, type, 0, &b);
		if (ret < 0)
			return ret;
		memcpy(b->data, good, (size_t)units * OD_BLOCK_SIZE);
	}
	b->heal_copy = bad;
	buf_dirty(b);
	buf_put(b);
	return 0;
}

static void count_bad(struct scrub *s)
{
	s->res->bad++;
	s->c->scrub_bad++;
}

static void count_healed(struct scrub *s)
{
	s->res->healed++;
	s->c->scrub_healed++;
}

static void count_both_bad(struct scrub *s)
{
	s->res->both_bad++;
	s->c->scrub_both_bad++;
	mark_needs_repair(s->c);
}

/* Both copies of one unit, read (already, when given) and judged. */
static int scrub_unit(struct scrub *s, uint32_t block, uint32_t units, uint16_t type)
{
	struct chunk *c = s->c;
	size_t len = (size_t)units * OD_BLOCK_SIZE;
	struct buf *b = buf_peek(c, block);
	int ok[2], ret;

	if (b && (b->dirty || b->pinned || b->units != units)) {
		s->res->skipped++;
		return 0;
	}
	for (int k = 0; k < 2; k++) {
		ret = scrub_read(s, k, block, units, s->copy[k]);
		if (ret == -ERANGE || (ret < 0 && (ret != -EIO || store_lost(c->store))))
			return ret; /* a lost store judges no copy */
		ok[k] = ret == 0 && copy_valid(c, s->copy[k], block, units, type);
	}
	if (!s->direct && !(ok[0] && ok[1] && same_version(s->copy[0], s->copy[1], len))) {
		/* A verdict that acts: from the store, with the lock held. */
		s->direct = 1;
		ret = scrub_unit(s, block, units, type);
		s->direct = 0;
		return ret;
	}
	s->res->units++;
	s->res->bytes += 2 * len;
	c->scrub_units++;
	if (!ok[0] && !ok[1]) {
		count_bad(s);
		count_bad(s);
		/* The predictor's table is whole in memory: written again. */
		if (type == OD_MB_PREDICT && vol_pred_damaged(s->v, block) == 0) {
			count_healed(s);
			return 0;
		}
		/* So are chunk 0's foster records. */
		if (type == OD_MB_FTAB && ftab_rewrite(s->v, block) == 0) {
			count_healed(s);
			return 0;
		}
		count_both_bad(s);
		return 0;
	}
	if (ok[0] && ok[1]) {
		uint64_t t0, t1;
		int stale;
		if (same_version(s->copy[0], s->copy[1], len))
			return 0;
		/* Both whole, different versions (no answered transaction
		 * leaves them apart): one missed a write. The cached unit, else the
		 * greater txid, is the current one. */
		t0 = txid_of(s->copy[0]);
		t1 = txid_of(s->copy[1]);
		if (b)
			stale = same_version(b->data, s->copy[0], len) ? 1 : 0;
		else if (t0 != t1)
			stale = t0 < t1 ? 0 : 1;
		else
			stale = -1;
		count_bad(s);
		if (stale < 0) {
			count_both_bad(s);
			return 0;
		}
		ret = heal(s, block, units, type, stale, s->copy[1 - stale]);
		if (ret == 0)
			count_healed(s);
		return ret;
	}
	count_bad(s);
	ret = heal(s, block, units, type, ok[0] ? 1 : 0, s->copy[ok[0] ? 0 : 1]);
	if (ret == 0)
		count_healed(s);
	return ret;
}

/* Does the copy at block of the zone look like a directory or extent
 * unit? Its type and length, or 0. */
static int looks_like_unit(struct scrub *s, int k, uint32_t block, uint16_t *type,
			   uint32_t *units, uint64_t *owner)
{
	const struct chunk *c = s->c;
	struct od_mb_header h;
	int ret = scrub_read(s, k, block, 1, s->copy[0]);

	if (ret == -ERANGE)
		return ret;
	if (ret < 0)
		return 0;
	od_get_mb_header(s->copy[0], &h);
	if (h.magic != OD_MB_MAGIC || h.chunk != c->index || h.block != block)
		return 0;
	if (!(h.type == OD_MB_DIR && h.units == c->hdr.dir_unit) &&
	    !(h.type == OD_MB_EXTENTS && h.units == 1) && !(h.type == OD_MB_FOSTER && h.units == 1) &&
	    !((h.type == OD_MB_PREDICT || h.type == OD_MB_FTAB) && h.units == 1 && c->index == 0))
		return 0;
	if (block + h.units > c->half)
		return 0;
	*type = h.type;
	*units = h.units;
	*owner = h.owner;
	return 1;
}

/* Is block a unit of the predictor's chain as this session knows it? */
static int pred_unit_known(struct fs_volume *v, uint32_t block)
{
	const uint32_t *units;
	uint32_t n = vol_pred_units(v, &units);

	for (uint32_t k = 0; k < n; k++)
		if (units[k] == block)
			return 1;
	return 0;
}

/* The zone block at block: a unit (judged) or data. Its length in blocks. */
static int scrub_zone_block(struct scrub *s, uint32_t block, uint32_t *step)
{
	struct chunk *c = s->c;
	struct buf *b = buf_peek(c, block);
	uint32_t units;
	uint64_t owner;
	uint16_t type;
	int seen0, seen1;

	*step = 1;
	if (b) {
		struct od_mb_header h;
		od_get_mb_header(b->data, &h);
		*step = b->units;
		return scrub_unit(s, block, b->units, h.type);
	}
	seen0 = looks_like_unit(s, 0, block, &type, &units, &owner);
	seen1 = seen0 ? 0 : looks_like_unit(s, 1, block, &type, &units, &owner);
	if (seen0 < 0 || seen1 < 0)
		return -ERANGE;
	if (!seen0 && !seen1) {
		/* (the predictor's chain and the foster table are known
		 * whatever their copies hold) */
		if (c->index == 0 && pred_unit_known(s->v, block))
			return scrub_unit(s, block, 1, OD_MB_PREDICT);
		if (c->index == 0 && ftab_unit_index(s->v, block) >= 0)
			return scrub_unit(s, block, 1, OD_MB_FTAB);
		s->res->probed++;
		return 0;
	}
	if (seen0) {
		int both = looks_like_unit(s, 1, block, &type, &units, &owner);
		if (both < 0)
			return both;
		seen1 = both;
	}
	if (!seen0 || !seen1) {
		/* One copy alone says "unit": so might a data block that holds
		 * an image of one. Believed only when its owner is live. */
		struct od_map_entry e;
		if (type == OD_MB_PREDICT ? !pred_unit_known(s->v, block)
		    : type == OD_MB_FTAB  ? ftab_unit_index(s->v, block) < 0
					  : map_lookup(s->v, owner, &e) < 0) {
			s->res->probed++;
			return 0;
		}
	}
	*step = units;
	for (uint32_t k = 0; k < units; k++)
		if (!bitmap_test(c, block + k) || !bitmap_test(c, chunk_mirror(c, block + k)))
			return 0; /* not a whole unit in use: leave it to fsck */
	return scrub_unit(s, block, units, type);
}

static uint32_t blocks_for(uint32_t n, uint32_t per)
{
	return (uint32_t)(((uint64_t)n + per - 1) / per);
}

/* Where the walk of c ends: the end of its metadata zone. */
static uint32_t scrub_span(const struct chunk *c)
{
	return chunk_meta_zone_end(c);
}

/* One item of c at *block (a unit, the lists, or a run of the zone's
 * blocks), with *budget units left; *block advanced past it. */
static int scrub_item_at(struct scrub *s, uint32_t *block, uint32_t *budget)
{
	struct chunk *c = s->c;
	const struct od_chunk_header *h = &c->hdr;
	uint32_t b = *block, map_end, itable_end, zone_end = scrub_span(c), scan;
	int uninit = !c->loaded && (h->flags & OD_CHF_BITMAP_UNINIT);
	int ret;

	map_end = h->map_start + blocks_for(h->map_watermark, OD_MAP_PER_BLOCK);
	itable_end = h->itable_start + blocks_for(h->islot_watermark, OD_ISLOTS_PER_BLOCK);
	if (b == 0) {
		*block = h->dirty_start;
		(*budget)--;
		return scrub_unit(s, 0, 1, OD_MB_CHUNK_HEADER);
	}
	if (b < h->bitmap_start) {
		*block = h->bitmap_start;
		(*budget)--;
		ret = txn_check_ondisk_list(c);
		if (ret == -EBADMSG) {
			/* A transaction soon puts a list in the other area. */
			s->res->lists_bad++;
			c->header_dirty = 1;
			return 0;
		}
		return ret < 0 ? ret : 0;
	}
	if (b < h->map_start) {
		*block = b + 1;
		if (uninit)
			return 0; /* never written */
		(*budget)--;
		return scrub_unit(s, b, 1, OD_MB_BITMAP);
	}
	if (b < h->itable_start) {
		if (b >= map_end) {
			*block = h->itable_start;
			return 0;
		}
		*block = b + 1;
		(*budget)--;
		return scrub_unit(s, b, 1, OD_MB_MAP);
	}
	if (b < h->data_start) {
		if (b >= itable_end) {
			*block = h->data_start;
			return 0;
		}
		*block = b + 1;
		(*budget)--;
		return scrub_unit(s, b, 1, OD_MB_ITABLE);
	}
	if (uninit) {
		*block = zone_end; /* never loaded: no unit was ever placed */
		return 0;
	}
	ret = chunk_load(c);
	if (ret == -EIO || ret == -EUCLEAN) {
		/* Its bitmap or free lists cannot be read (the chunk is marked
		 * needs-repair): the zone cannot be told from data. */
		*block = zone_end;
		return 0;
	}
	if (ret < 0)
		return ret;
	/* A run of the zone: free blocks cost little, a block read costs a unit. */
	for (scan = 0; b < zone_end && *budget && scan < *budget * SCRUB_SCAN_PER_UNIT; scan++) {
		uint32_t step;
		if (!bitmap_test(c, b) || !bitmap_test(c, chunk_mirror(c, b))) {
			b++;
			continue;
		}
		ret = scrub_zone_block(s, b, &step);
		if (ret == -ERANGE)
			break; /* the next window begins here */
		(*budget)--;
		b += step;
		if (ret < 0) {
			*block = b;
			return ret;
		}
	}
	*block = b;
	return ret;
}

/* One item, or -ERANGE with *block where the next window must begin. */
static int scrub_item(struct scrub *s, uint32_t *block, uint32_t *budget)
{
	uint32_t at = *block;
	int ret = scrub_item_at(s, block, budget);

	/* A unit outside the window: it is walked again from the next one.
	 * (A run of the zone stops at its own block.) */
	if (ret == -ERANGE && at < s->c->hdr.data_start)
		*block = at;
	return ret;
}

/* With the lock held: read the window at the cursor (both copies of up
 * to SCRUB_WINDOW blocks of its chunk) with the lock dropped meanwhile.
 * No window when the cursor is at no chunk's blocks; a read that fails
 * leaves the step reading the store, locked, as the judging reads do. */
static void read_window(struct scrub *s, const struct fs_scrub_cursor *cur)
{
	struct fs_volume *v = s->v;
	struct chunk *c = cur->chunk < v->nchunks ? &v->chunks[cur->chunk] : NULL;
	struct chunk_store *st;
	uint32_t span, len, half;
	int r0, r1;

	s->win_len = 0;
	if (!c || c->offline || (c->hdr.flags & OD_CHF_SINGLE_COPY))
		return;
	span = scrub_span(c);
	if (cur->block >= span)
		return;
	len = span - cur->block < SCRUB_WINDOW ? span - cur->block : SCRUB_WINDOW;
	st = c->store;
	half = c->half;
	chunk_pin(c);
	vol_unlock(v);
	r0 = store_pread(st, s->win[0], (size_t)len * OD_BLOCK_SIZE,
			 (uint64_t)cur->block * OD_BLOCK_SIZE);
	r1 = store_pread(st, s->win[1], (size_t)len * OD_BLOCK_SIZE,
			 ((uint64_t)cur->block + half) * OD_BLOCK_SIZE);
	chunk_unpin(c);
	vol_lock(v);
	if (r0 < 0 || r1 < 0) {
		s->direct = 1;
		return;
	}
	s->win_chunk = cur->chunk;
	s->win_start = cur->block;
	s->win_len = len;
}

int fs_scrub_step(struct fs_volume *v, struct fs_scrub_cursor *cur, uint32_t max_units,
		  struct fs_scrub_result *res)
{
	struct scrub s = { .v = v, .res = res };
	uint32_t budget = max_units ? max_units : 1;
	size_t unit_len = (size_t)OD_MAX_DIR_UNIT * OD_BLOCK_SIZE;
	size_t win_len = (size_t)SCRUB_WINDOW * OD_BLOCK_SIZE;
	int ret = 0;

	memset(res, 0, sizeof(*res));
	if (v->rdonly)
		return -EROFS;
	for (int k = 0; k < 2; k++) {
		s.copy[k] = malloc(unit_len);
		s.win[k] = malloc(win_len);
		if (!s.copy[k] || !s.win[k])
			ret = -ENOMEM;
	}
	if (ret < 0)
		goto out;
	vol_lock(v);
	if (!v->inflight)
		read_window(&s, cur);
	if (v->inflight) {
		/* Its copies are being written without the lock. */
		vol_unlock(v);
		ret = -EAGAIN;
		goto out;
	}
	while (budget && ret == 0) {
		struct chunk *c;
		if (cur->chunk >= v->nchunks) {
			cur->chunk = 0;
			cur->block = 0;
			res->wrapped = 1;
			break;
		}
		c = &v->chunks[cur->chunk];
		if (c->offline || (c->hdr.flags & OD_CHF_SINGLE_COPY) ||
		    cur->block >= scrub_span(c)) {
			if (!c->offline && !(c->hdr.flags & OD_CHF_SINGLE_COPY)) {
				c->scrub_last = time(NULL);
				res->chunks_done++;
			}
			cur->chunk++;
			cur->block = 0;
			continue;
		}
		s.c = c;
		ret = scrub_item(&s, &cur->block, &budget);
		if (ret != -ERANGE)
			continue;
		ret = 0;
		if (!s.win_len || cur->chunk != s.win_chunk || cur->block != s.win_start)
			break; /* the next step reads on from here */
		s.direct = 1; /* nothing here fits a window: read locked */
	}
	if (cur->chunk < v->nchunks && !v->chunks[cur->chunk].offline)
		res->span = scrub_span(&v->chunks[cur->chunk]);
	vol_unlock(v);
out:
	for (int k = 0; k < 2; k++) {
		free(s.copy[k]);
		free(s.win[k]);
	}
	return ret;
}
