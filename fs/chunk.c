/* One chunk: the block bitmap and block allocation (its geometry and
 * header checks are fs/format/header.c's). Keeps invariant 1 at the
 * source: blocks are handed out only to inodes of this chunk, and metadata
 * units always with their mirror. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/internal.h"

static uint32_t meta_zone_end(const struct chunk *c);

int bitmap_test(const struct chunk *c, uint32_t block)
{
	return (c->bitmap[block >> 3] >> (block & 7)) & 1;
}

static void bitmap_set(struct chunk *c, uint32_t block, int used)
{
	uint8_t bit = (uint8_t)(1u << (block & 7));

	if (used) {
		c->bitmap[block >> 3] |= bit;
		c->pairs_low -= c->pairs_low != 0; /* (a pair spoiled, at most) */
	} else {
		c->bitmap[block >> 3] &= (uint8_t)~bit;
	}
	c->bitmap_dirty[block / OD_BITMAP_BITS_PER_BLOCK] = 1;
}

/* Freed blocks stay reserved until the transaction freeing them commits:
 * reused earlier, a crash that rolls the free back would find them
 * overwritten. */
static int block_busy(const struct chunk *c, uint32_t b)
{
	return bitmap_test(c, b) || ((c->reserved[b >> 3] >> (b & 7)) & 1) ||
	       ((c->frozen[b >> 3] >> (b & 7)) & 1) || ((c->pa_map[b >> 3] >> (b & 7)) & 1) ||
	       ((c->hold_map[b >> 3] >> (b & 7)) & 1);
}

void chunk_freeze_frees(struct chunk *c)
{
	uint8_t *t;

	if (!c->loaded || !c->any_reserved)
		return;
	/* Only one transaction is written at a time: frozen is empty. */
	t = c->frozen;
	c->frozen = c->reserved;
	c->reserved = t;
	c->any_frozen = 1;
	c->any_reserved = 0;
	c->frozen_outside = c->reserved_outside;
	c->reserved_outside = 0;
}

void chunk_thaw_frees(struct chunk *c, int committed)
{
	size_t bytes = (size_t)c->hdr.bitmap_blocks * OD_MB_PAYLOAD;

	if (!c->any_frozen)
		return;
	if (committed) {
		c->free_outside += c->frozen_outside;
		vol_blocks_reusable(c->vol);
	} else {
		for (size_t i = 0; i < bytes; i++)
			c->reserved[i] |= c->frozen[i];
		c->any_reserved = 1;
		c->reserved_outside += c->frozen_outside;
	}
	memset(c->frozen, 0, bytes);
	c->any_frozen = 0;
	c->frozen_outside = 0;
}

static int data_usable(const struct chunk *c, uint32_t b);
static int in_meta_zone(const struct chunk *c, uint32_t b);

/* Free blocks data can take without spoiling a metadata pair. */
static int outside_zone(const struct chunk *c, uint32_t b)
{
	return data_usable(c, b) && !in_meta_zone(c, b);
}

static void mark_range(struct chunk *c, uint32_t start, uint32_t len, int used)
{
	for (uint32_t b = start; b < start + len; b++) {
		bitmap_set(c, b, used);
		/* A freed block counts as free room only once its free commits. */
		if (outside_zone(c, b)) {
			if (used)
				c->free_outside--;
			else
				c->reserved_outside++;
		}
		if (!used)
			c->reserved[b >> 3] |= (uint8_t)(1u << (b & 7));
	}
	if (!used && len)
		c->any_reserved = 1;
	if (used)
		c->hdr.free_blocks -= len;
	else
		c->hdr.free_blocks += len;
	c->header_dirty = 1;
}

static int load_bitmap(struct chunk *c)
{
	const struct od_chunk_header *h = &c->hdr;
	size_t bytes = (size_t)h->bitmap_blocks * OD_MB_PAYLOAD;

	c->bitmap = calloc(1, bytes);
	c->reserved = calloc(1, bytes);
	c->frozen = calloc(1, bytes);
	c->pa_map = calloc(1, bytes);
	c->hold_map = calloc(1, bytes);
	c->bitmap_dirty = calloc(h->bitmap_blocks, 1);
	if (!c->bitmap || !c->reserved || !c->frozen || !c->pa_map || !c->hold_map ||
	    !c->bitmap_dirty)
		return -ENOMEM;
	if (h->flags & OD_CHF_BITMAP_UNINIT) {
		/* Never written: the fixed metadata of both halves is used,
		 * everything else free. Written out at the next sync. */
		for (uint32_t b = 0; b < h->data_start; b++) {
			bitmap_set(c, b, 1);
			bitmap_set(c, chunk_mirror(c, b), 1);
		}
		memset(c->bitmap_dirty, 1, h->bitmap_blocks); /* every block: none exists yet */
		c->hdr.flags &= ~OD_CHF_BITMAP_UNINIT;
		c->header_dirty = 1;
		return 0;
	}
	for (uint32_t i = 0; i < h->bitmap_blocks; i++) {
		struct buf *b;
		int ret = buf_read(c, h->bitmap_start + i, 1, &b);
		if (ret < 0)
			return ret;
		memcpy(c->bitmap + (size_t)i * OD_MB_PAYLOAD, b->data + OD_MB_HEADER_SIZE,
		       OD_MB_PAYLOAD);
		buf_put(b);
	}
	return 0;
}

static int push_u32(uint32_t **arr, uint32_t *n, uint32_t *cap, uint32_t v)
{
	if (*n == *cap) {
		uint32_t ncap = *cap ? *cap * 2 : 64;
		uint32_t *p = realloc(*arr, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		*arr = p;
		*cap = ncap;
	}
	(*arr)[(*n)++] = v;
	return 0;
}

/* Free map entries and inode slots below the watermarks. Pushed in reverse
 * so that the lowest index is handed out first. */
static int load_free_lists(struct chunk *c)
{
	const struct od_chunk_header *h = &c->hdr;
	int ret = map_load_free(c, &c->free_map, &c->nfree_map, &c->cap_free_map, push_u32);

	for (uint32_t i = h->islot_watermark; i-- > 0 && ret == 0;) {
		struct od_inode ino;
		struct buf *b;
		ret = buf_read(c, h->itable_start + i / OD_ISLOTS_PER_BLOCK, 1, &b);
		if (ret < 0)
			break;
		od_get_inode(b->data + OD_MB_HEADER_SIZE + (i % OD_ISLOTS_PER_BLOCK) *
							   OD_INODE_SIZE, &ino);
		buf_put(b);
		if (ino.mode == 0)
			ret = push_u32(&c->free_slots, &c->nfree_slots, &c->cap_free_slots, i);
	}
	return ret;
}

void chunk_unload(struct chunk *c)
{
	if (c->loaded) {
		vol_blocks_reusable(c->vol); /* its frees are forgotten */
		c->unloads++;         /* (and its reservations: dalloc_place.c) */
	}
	prealloc_chunk_gone(c);       /* (its reservations with them) */
	free(c->bitmap);
	free(c->pa_map);
	free(c->hold_map);            /* (holds too: hold_alive sees unloads move) */
	c->pa_map = c->hold_map = NULL;
	c->pa_blocks = c->hold_blocks = c->pairs_low = 0;
	free(c->reserved);
	free(c->frozen);
	free(c->bitmap_dirty);
	free(c->free_map);
	free(c->free_slots);
	c->bitmap = c->bitmap_dirty = c->reserved = c->frozen = NULL;
	c->free_map = c->free_slots = NULL;
	c->nfree_map = c->cap_free_map = c->nfree_slots = c->cap_free_slots = 0;
	c->any_reserved = c->any_frozen = 0;
	c->reserved_outside = c->frozen_outside = c->free_outside = 0;
	c->loaded = 0;
}

int chunk_load(struct chunk *c)
{
	int ret;

	if (c->loaded)
		return 0;
	if (c->offline)
		return -EIO;
	if (vol_nowait(c->vol))
		return vol_would_wait();
	ret = load_bitmap(c);
	if (ret == 0)
		ret = load_free_lists(c);
	if (ret < 0) {
		chunk_unload(c);
		return ret;
	}
	c->alloc_hint_meta = c->hdr.data_start;
	c->alloc_hint_data = meta_zone_end(c);
	memset(&c->pack, 0, sizeof(c->pack));
	memset(&c->pack_burst, 0, sizeof(c->pack_burst));
	c->pack_dir = 0;
	c->pack_streak = 0;
	c->free_outside = 0;
	for (uint32_t b = 0; b < c->hdr.nblocks; b++)
		c->free_outside += outside_zone(c, b) && !bitmap_test(c, b);
	c->loaded = 1;
	return 0;
}

int chunk_write_header(struct chunk *c)
{
	uint32_t state = c->hdr.state; /* buf_fresh() would mark it dirty */
	struct buf *b;
	int ret = buf_fresh(c, 0, 1, OD_MB_CHUNK_HEADER, 0, &b);

	if (ret < 0)
		return ret;
	c->hdr.state = state;
	if (c->header_heal >= 0)
		b->heal_copy = c->header_heal;
	c->header_heal = -1;
	od_put_chunk_header(b->data, &c->hdr);
	buf_put(b);
	c->header_dirty = 0;
	return 0;
}

int chunk_write_bitmap(struct chunk *c)
{
	if (!c->loaded)
		return 0;
	for (uint32_t i = 0; i < c->hdr.bitmap_blocks; i++) {
		struct buf *b;
		int ret;
		if (!c->bitmap_dirty[i])
			continue;
		ret = buf_fresh(c, c->hdr.bitmap_start + i, 1, OD_MB_BITMAP, 0, &b);
		if (ret < 0)
			return ret;
		memcpy(b->data + OD_MB_HEADER_SIZE, c->bitmap + (size_t)i * OD_MB_PAYLOAD,
		       OD_MB_PAYLOAD);
		buf_put(b);
		c->bitmap_dirty[i] = 0;
	}
	return 0;
}

uint32_t chunk_free_blocks(const struct chunk *c)
{
	return c->hdr.free_blocks;
}

/* Blocks a data allocation may use: anything outside the fixed metadata of
 * either half. */
static int data_usable(const struct chunk *c, uint32_t b)
{
	return !(b < c->hdr.data_start) && !(b >= c->half && b < c->half + c->hdr.data_start);
}

/* A metadata unit needs a free block in the lower half AND its mirror, so
 * a data block in either half spoils one pair. The metadata zone, the
 * first part of each half after the fixed metadata, is therefore left to
 * metadata while data fits elsewhere; its size follows the chunk's kind
 * (small-file chunks are mostly directory units with inline data). */
static uint32_t meta_zone_end(const struct chunk *c)
{
	uint32_t room = c->half - c->hdr.data_start;
	uint32_t share = c->hdr.kind == FS_KIND_SMALL ? 2 : c->hdr.kind == FS_KIND_LARGE ? 16 : 4;

	return c->hdr.data_start + room / share;
}

uint32_t chunk_meta_zone_end(const struct chunk *c)
{
	return meta_zone_end(c);
}

static int in_meta_zone(const struct chunk *c, uint32_t b)
{
	uint32_t off = b >= c->half ? b - c->half : b;

	return off < meta_zone_end(c);
}

/* The other block of b's metadata pair (b in either half). */
static uint32_t twin(const struct chunk *c, uint32_t b)
{
	return b >= c->half ? b - c->half : b + c->half;
}

/* The passes of a data allocation: outside the metadata zones; then, only
 * when that is full, zone blocks whose twin is busy (no pair is spoiled);
 * then zone blocks of free pairs, while more than zone_reserve(c) pairs
 * stay free for the units that must follow the data (the extent units
 * recording it, directory units). Before the middle pass a zone filled in
 * block order, its pairs all spoiled by the lower half's data while the
 * upper half's twins stayed free: a write was refused at 80% full, with
 * 100 MiB free, for want of one extent unit. */
enum data_pass { PASS_OUTSIDE, PASS_ORPHANS, PASS_PAIRS };

static int pass_takes(const struct chunk *c, uint32_t b, enum data_pass pass)
{
	if (!data_usable(c, b) || block_busy(c, b))
		return 0;
	if (pass == PASS_OUTSIDE)
		return !in_meta_zone(c, b);
	if (!in_meta_zone(c, b))
		return 0;
	return (pass == PASS_ORPHANS) == !!block_busy(c, twin(c, b));
}

/* Pairs of the zone kept free from data: 1/32 of it (0.8% of a general
 * chunk: 8 MiB of a 1 GiB one), at least 2. */
static uint32_t zone_reserve(const struct chunk *c)
{
	uint32_t zone = meta_zone_end(c) - c->hdr.data_start;

	return zone / 32 > 2 ? zone / 32 : 2;
}

/* --- free runs, a word at a time ------------------------------------------- */

/* Blocks [64w, 64w + 64) that no allocation may take now (bit b % 64):
 * used, freed but not committed, or reserved (block_busy). Past the
 * maps: all busy. */
static uint64_t busy_word(const struct chunk *c, uint32_t w)
{
	const uint8_t *maps[] = { c->bitmap, c->reserved, c->frozen, c->pa_map, c->hold_map };
	size_t at = (size_t)w * 8;
	uint64_t busy = 0;

	if (at + 8 > (size_t)c->hdr.bitmap_blocks * OD_MB_PAYLOAD)
		return ~0ull;
	for (size_t m = 0; m < sizeof(maps) / sizeof(maps[0]); m++)
		for (int i = 0; i < 8; i++)
			busy |= (uint64_t)maps[m][at + i] << (8 * i);
	return busy;
}

/* The same for the 64 blocks from b on. */
static uint64_t busy64(const struct chunk *c, uint32_t b)
{
	uint64_t lo = busy_word(c, b >> 6);

	if (!(b & 63))
		return lo;
	return (lo >> (b & 63)) | (busy_word(c, (b >> 6) + 1) << (64 - (b & 63)));
}

/* Blocks b + i (bit i) a data allocation may take in pass, ranges aside
 * (the caller keeps to the pass's ranges, where twin(b + i) is twin(b) +
 * i). */
static uint64_t takes64(const struct chunk *c, uint32_t b, enum data_pass pass)
{
	uint64_t free = ~busy64(c, b);

	if (pass == PASS_OUTSIDE)
		return free;
	if (pass == PASS_ORPHANS)
		return free & busy64(c, twin(c, b));
	return free & ~busy64(c, twin(c, b));
}

/* The first block of [b, end) that pass may take (take 1) or not (take
 * 0); end when none is. */
static uint32_t next_block(const struct chunk *c, uint32_t b, uint32_t end, enum data_pass pass,
			   int take)
{
	while (b < end) {
		uint64_t w = takes64(c, b, pass);
		if (!take)
			w = ~w;
		if (w) {
			b += (uint32_t)__builtin_ctzll(w);
			return b < end ? b : end;
		}
		b += 64;
	}
	return end;
}

struct run_pick {
	enum data_pass pass;
	uint32_t want;
	uint32_t min;                /* no run shorter will do */
	uint32_t want_at, want_len;  /* the first run of at least want (len 0: none) */
	uint32_t long_at, long_len;  /* the longest */
};

/* The runs pk->pass may take that start in [lo, hi) (a run ends at the
 * first block it may not take, at end at the latest); 1 when the first
 * run of pk->want is found. */
static int pick_in(const struct chunk *c, uint32_t lo, uint32_t hi, uint32_t end,
		   struct run_pick *pk)
{
	for (uint32_t b = next_block(c, lo, hi, pk->pass, 1); b < hi;
	     b = next_block(c, b, hi, pk->pass, 1)) {
		uint32_t e = next_block(c, b, end, pk->pass, 0), len = e - b;
		if (len >= pk->want) {
			pk->want_at = b;
			pk->want_len = len;
			return 1;
		}
		if (len > pk->long_len) {
			pk->long_at = b;
			pk->long_len = len;
		}
		b = e;
	}
	return 0;
}

/* The run a data allocation of want blocks takes in pass: outside the
 * zones, [zone end, half) and [half + zone end, nblocks), searched from
 * goal on and then from the start (a run found again before goal is seen
 * whole); in the zones, [data_start, zone end) of either half, from the
 * start. The first run of at least want blocks, else the longest, so
 * that a file is cut into as few pieces as the free space allows; not
 * first fit, which cut a file written whole into whatever holes came
 * first (doc/design.md, "Allocation on an aged volume"). -ENOSPC when
 * the pass has no run of pk->min. */
static int pick_run(const struct chunk *c, uint32_t goal, struct run_pick *pk, uint32_t *start,
		    uint32_t *len)
{
	uint32_t ze = meta_zone_end(c), ds = c->hdr.data_start;
	uint32_t lo[2] = { ze, c->half + ze }, hi[2] = { c->half, c->hdr.nblocks };
	int found = 0;

	/* (no scan when the count says nothing outside the zones is free) */
	if (pk->pass == PASS_OUTSIDE && !c->free_outside)
		return -ENOSPC;
	if (pk->pass != PASS_OUTSIDE) {
		lo[0] = ds;
		lo[1] = c->half + ds;
		hi[0] = ze;
		hi[1] = c->half + ze;
		goal = 0;
	}
	for (int part = 0; part < 2 && !found; part++)
		for (int r = 0; r < 2 && !found; r++) {
			uint32_t a = lo[r], z = hi[r];
			if (part == 0 && goal > a)
				a = goal < z ? goal : z;
			if (part == 1 && goal < z)
				z = goal > a ? goal : a;
			found = pick_in(c, a, z, hi[r], pk);
		}
	if (found) {
		*start = pk->want_at;
		*len = pk->want_len;
	} else if (pk->long_len && pk->long_len >= pk->min) {
		*start = pk->long_at;
		*len = pk->long_len;
	} else {
		return -ENOSPC;
	}
	return 0;
}

/* Blocks [start, start + len) taken; past them the next data goes
 * when it has no goal of its own. */
static void take(struct chunk *c, uint32_t start, uint32_t len, enum data_pass pass)
{
	mark_range(c, start, len, 1);
	if (pass == PASS_OUTSIDE)
		c->alloc_hint_data = start + len < c->hdr.nblocks ? start + len : c->half;
}

/* want blocks (at most) of the run pick_run chooses in pass, or
 * -ENOSPC when the longest is shorter than min. */
static int take_run(struct chunk *c, uint32_t goal, uint32_t want, enum data_pass pass,
		    uint32_t min, uint32_t *start, uint32_t *got)
{
	/* (first fit, fs_set_alloc_policy: the first run from goal, any length) */
	struct run_pick pk = { .pass = pass, .want = c->vol->alloc_first_fit ? 1 : want };
	uint32_t len;
	int ret;

	pk.min = min;
	ret = pick_run(c, goal, &pk, start, &len);
	if (ret < 0)
		return ret;
	*got = len < want ? len : want;
	take(c, *start, *got, pass);
	return 0;
}

/* Free pairs of the zones (both blocks free). */
static uint32_t zone_free_pairs(const struct chunk *c)
{
	uint32_t n = 0, ze = meta_zone_end(c);

	for (uint32_t b = c->hdr.data_start; b < ze; b += 64) {
		uint64_t w = takes64(c, b, PASS_PAIRS);
		if (ze - b < 64)
			w &= (1ull << (ze - b)) - 1;
		n += (uint32_t)__builtin_popcountll(w);
	}
	return n;
}

uint32_t chunk_zone_reserve(const struct chunk *c)
{
	return zone_reserve(c);
}

/* The zone's pairs that data leaves free: reserve, or the pairs promised
 * to buffered data's extent units (fs/dalloc_room.c) when more. */
static uint32_t pairs_kept(const struct chunk *c, uint32_t reserve)
{
	uint64_t promised = c->vol->da_units;

	return promised > reserve ? (promised > UINT32_MAX ? UINT32_MAX : (uint32_t)promised)
				  : reserve;
}

int chunk_meta_room(struct chunk *c, uint64_t want)
{
	/* (counted again only when the bound kept since is short: a
	 * buffered write asks at every call) */
	if (c->pairs_low < want)
		c->pairs_low = zone_free_pairs(c);
	return c->pairs_low >= want;
}

/* Free pairs of the zones taken for data (first a run that holds it,
 * else the longest of at least min) while more than reserve stay free
 * for metadata units (the extent units recording the data, directory
 * units); each block taken spoils a pair, its twin going to the orphans'
 * pass next time. */
static int pair_run(struct chunk *c, uint32_t want, uint32_t min, uint32_t reserve,
		    uint32_t *start, uint32_t *got)
{
	uint32_t pairs = zone_free_pairs(c);

	reserve = pairs_kept(c, reserve);
	if (pairs <= reserve || pairs - reserve < min)
		return -ENOSPC;
	want = want < pairs - reserve ? want : pairs - reserve;
	return take_run(c, 0, want, PASS_PAIRS, min, start, got);
}

/* alloc_policy = first-fit (fs_set_alloc_policy): the allocation as it
 * was before runs were looked for, for comparison. The first free blocks
 * from goal outside the zones; DATA_ANY then zone blocks whose twin is
 * busy, then free pairs; DATA_RUNS as DATA_OUTSIDE; DATA_PAIR_RUNS none. */
static int data_first_fit(struct chunk *c, uint32_t goal, uint32_t want, enum data_zone zone,
			  uint32_t *start, uint32_t *got)
{
	int ret;

	if (zone == DATA_PAIR_RUNS)
		return -ENOSPC;
	ret = take_run(c, goal, want, PASS_OUTSIDE, 1, start, got);
	if (ret != -ENOSPC || zone != DATA_ANY)
		return ret;
	ret = take_run(c, 0, want, PASS_ORPHANS, 1, start, got);
	if (ret == -ENOSPC)
		ret = pair_run(c, want, 1, zone_reserve(c), start, got);
	return ret;
}

/* The run of at least min blocks that pass may take, outside the zones
 * or in them: the smallest (the lowest of equal ones); or, when near (a
 * block, 0: none), the one nearest to it among those shorter than
 * DATA_LONG_RUN (the runs a long write wants are left), from near itself
 * when it lies in it; its start and length, or -ENOSPC. */
static int best_run(const struct chunk *c, enum data_pass pass, uint32_t min, uint32_t near,
		    uint32_t *start, uint32_t *len)
{
	uint32_t ze = meta_zone_end(c), best = 0, best_len = UINT32_MAX;
	uint32_t lo = pass == PASS_OUTSIDE ? ze : c->hdr.data_start;
	uint32_t hi = pass == PASS_OUTSIDE ? c->half : ze;
	uint32_t close = 0, close_len = 0, close_d = UINT32_MAX;

	for (int r = 0; r < 2; r++) {
		uint32_t a = r ? c->half + lo : lo, z = r ? c->half + hi : hi;
		for (uint32_t b = next_block(c, a, z, pass, 1); b < z;
		     b = next_block(c, b, z, pass, 1)) {
			uint32_t e = next_block(c, b, z, pass, 0);
			uint32_t d = near < b ? b - near : near < e ? 0 : near - e + 1;
			if (e - b >= min && e - b < best_len) {
				best = b;
				best_len = e - b;
			}
			if (near && e - b >= min && e - b < DATA_LONG_RUN && d < close_d) {
				close = d == 0 && e - near >= min ? near : b;
				close_len = e - close;
				close_d = d;
			}
			b = e;
		}
	}
	if (close_d != UINT32_MAX) {
		best = close;
		best_len = close_len;
	}
	if (best_len == UINT32_MAX)
		return -ENOSPC;
	*start = best;
	*len = best_len;
	return 0;
}

/* Free blocks outside the zones in [b, e) (one range's part). */
static uint32_t free_in(const struct chunk *c, uint32_t b, uint32_t e)
{
	uint32_t n = 0;

	for (; b < e; b += 64) {
		uint64_t w = takes64(c, b, PASS_OUTSIDE);
		if (e - b < 64)
			w &= (1ull << (e - b)) - 1;
		n += (uint32_t)__builtin_popcountll(w);
	}
	return n;
}

/* The window of size blocks (from the start of either range outside the
 * zones, in steps of size) with the most free blocks, at least a quarter
 * of it and at least want, but not all of it: holes where the small files
 * written together will lie closest; -ENOSPC when none has so many. */
static int emptiest_window(const struct chunk *c, uint32_t size, uint32_t want, uint32_t *start,
			   uint32_t *end)
{
	uint32_t ze = meta_zone_end(c), best = 0;

	for (int r = 0; r < 2; r++) {
		uint32_t lo = r ? c->half + ze : ze, hi = r ? c->hdr.nblocks : c->half;
		for (uint32_t w = lo; w < hi; w += size) {
			uint32_t e = hi - w > size ? w + size : hi, n = free_in(c, w, e);
			if (n > best && n < e - w && n >= size / 4 && n >= want) {
				best = n;
				*start = w;
				*end = e;
			}
		}
	}
	return best ? 0 : -ENOSPC;
}

/* A dense region for a burst (cur): a free run of size blocks outside the
 * zones, the one nearest to near (the directory's unit) of those shorter
 * than DATA_LONG_RUN, else the smallest (best_run); else the upper part
 * of the smallest run of the zones' free pairs, from halfway between its
 * start and its last size blocks, while half of them stay free (as a run
 * of other data may take them, fs/chain.c): the zone's units are taken
 * from its start up (alloc_meta), and the files of a region at a run's
 * start had the units made meanwhile between them. */
static int dense_region(struct chunk *c, struct pack_cursor *cur, uint32_t size, uint32_t near,
			uint32_t *start)
{
	uint32_t len;

	cur->pairs = 0;
	if (best_run(c, PASS_OUTSIDE, size, near, start, &len) == 0) {
		cur->end = *start + len;
		return 0;
	}
	if (zone_free_pairs(c) < pairs_kept(c, (meta_zone_end(c) - c->hdr.data_start) / 2) + size ||
	    best_run(c, PASS_PAIRS, size, 0, start, &len) < 0)
		return -ENOSPC;
	cur->end = *start + len;
	*start += (len - size) / 2;
	cur->pairs = 1;
	return 0;
}

/* A new packing region for a placement of want blocks ([*start,
 * cur->end)), or -ENOSPC. A burst's is dense (dense_region); else
 * (never of the zones' pairs) the window of pack_region blocks after the last region when a quarter of it
 * is free (the files go on in the order they were written), else the
 * emptiest window with holes, else the smallest free run of pack_region
 * blocks outside the zones (the long runs last). */
static int new_region(struct chunk *c, struct pack_cursor *cur, uint32_t want, int burst,
		      uint32_t near, uint32_t *start)
{
	uint32_t size = c->vol->pack_region > want ? c->vol->pack_region : want, e = cur->end;
	uint32_t hi = e < c->half ? c->half : c->hdr.nblocks, least = size / 4, len;

	if (burst)
		return dense_region(c, cur, size, near, start);
	if (want > least)
		least = want;
	if (e && e != c->half && e < hi) {
		uint32_t end = hi - e > size ? e + size : hi;
		if (free_in(c, e, end) >= least) {
			*start = e;
			cur->end = end;
			return 0;
		}
	}
	if (emptiest_window(c, size, want, start, &cur->end) == 0)
		return 0;
	if (best_run(c, PASS_OUTSIDE, size, 0, start, &len) < 0)
		return -ENOSPC;
	cur->end = *start + len;
	return 0;
}

/* Small files packed (fs_set_small_pack): a placement of at most
 * PACK_MAX blocks with no extent before it (a new file's data, written
 * together with its neighbours' under delayed allocation) goes to the
 * first free blocks that hold it from the cursor on, within its region
 * (new_region). Files written one after another then lie close
 * together, as in a young volume, rather than each in the first hole from
 * the hint, across the chunk (doc/design.md, "Small files packed").
 * -ENOSPC when no region holds it: the caller fills holes from the hint
 * as before. The hint does not move: other data keeps its own order. */
static int take_packed(struct chunk *c, struct pack_cursor *cur, uint32_t want, int burst,
		       uint32_t near, uint32_t *start, uint32_t *got)
{
	struct run_pick pk = { .pass = cur->pairs ? PASS_PAIRS : PASS_OUTSIDE, .want = want,
			       .min = want };

	/* (a run of the zones' pairs is left while half of them stay free;
	 * a burst's region only while it goes on free from the cursor: other
	 * data may have taken its blocks since) */
	if (cur->pairs &&
	    zone_free_pairs(c) < pairs_kept(c, (meta_zone_end(c) - c->hdr.data_start) / 2) + want)
		cur->end = 0;
	if (cur->at >= cur->end || !pick_in(c, cur->at, cur->end, cur->end, &pk) ||
	    (burst && pk.want_at != cur->at)) {
		int ret = new_region(c, cur, want, burst, near, start);
		if (ret < 0) {
			cur->at = cur->end = 0;
			return ret;
		}
		c->vol->pack_regions++;
		pk.pass = cur->pairs ? PASS_PAIRS : PASS_OUTSIDE;
		if (!pick_in(c, *start, cur->end, cur->end, &pk)) {
			cur->at = cur->end = 0; /* (its holes all shorter than want) */
			return -ENOSPC;
		}
	}
	*start = pk.want_at;
	mark_range(c, *start, want, 1);
	cur->at = *start + want;
	*got = want;
	c->vol->small_packs++;
	return 0;
}

/* A burst (PACK_BURST small placements in a row in c from one directory,
 * or a directory being filled: dir_fill.c) goes on in the directory's
 * region while it has room, else in the chunk's burst region, else a new
 * dense one near the directory's unit; with none, and any other small
 * placement, into the chunk's region of holes. */
int alloc_packed(struct chunk *c, uint32_t want, uint64_t dir, uint32_t near, uint32_t *start,
		 uint32_t *got)
{
	int ret;

	if (!c->vol->pack_region || c->vol->alloc_first_fit || want == 0 || want > PACK_MAX)
		return -ENOSPC;
	ret = chunk_load(c);
	if (ret < 0)
		return ret;
	if (chunk_avail_blocks(c) < want)
		return -ENOSPC;
	if (!dir || dir != c->pack_dir) {
		c->pack_dir = dir;
		c->pack_streak = 0;
	}
	c->pack_streak++;
	if (c->pack_streak >= PACK_BURST || dir_fill_busy(c->vol, dir)) {
		struct dir_fill *f = dir_fill_find(c->vol, dir);
		if (f && f->chunk == c->index && f->unloads == c->unloads && f->cur.at < f->cur.end)
			c->pack_burst = f->cur;
		ret = take_packed(c, &c->pack_burst, want, 1, near, start, got);
		if (ret == 0 && f) {
			f->chunk = c->index;
			f->unloads = c->unloads;
			f->cur = c->pack_burst;
		}
		if (ret != -ENOSPC)
			return ret;
	}
	return take_packed(c, &c->pack, want, 0, 0, start, got);
}

int alloc_data(struct chunk *c, uint32_t goal, uint32_t want, enum data_zone zone,
	       uint32_t *start, uint32_t *got)
{
	uint32_t need = want < DATA_PIECE ? want : DATA_PIECE;
	int ret = chunk_load(c);

	if (ret < 0)
		return ret;
	if (want == 0 || chunk_avail_blocks(c) == 0)
		return -ENOSPC;
	if (goal == 0 || goal >= c->hdr.nblocks || !data_usable(c, goal) || in_meta_zone(c, goal))
		goal = c->alloc_hint_data;
	else if (pass_takes(c, goal, PASS_OUTSIDE)) {
		/* right after the file's previous block: the same extent */
		uint32_t end = goal < c->half ? c->half : c->hdr.nblocks;
		if (want < end - goal)
			end = goal + want;
		*start = goal;
		*got = next_block(c, goal, end, PASS_OUTSIDE, 0) - goal;
		take(c, *start, *got, PASS_OUTSIDE);
		return 0;
	}
	if (zone == DATA_OUTSIDE)
		return take_run(c, goal, want, PASS_OUTSIDE, 1, start, got);
	if (c->vol->alloc_first_fit)
		return data_first_fit(c, goal, want, zone, start, got);
	/* A run that holds the data (or DATA_PIECE of it) outside the
	 * zones, else of zone blocks whose twin is busy (no pair
	 * spoiled); only then pieces, outside first, and free pairs last.
	 * DATA_PAIR_RUNS: such a run of free pairs while half the zone's
	 * pairs stay free. */
	if (zone == DATA_LONG || zone == DATA_LONG_PAIRS)
		need = want < DATA_LONG_RUN ? want : DATA_LONG_RUN;
	if (zone == DATA_PAIR_RUNS || zone == DATA_LONG_PAIRS)
		return pair_run(c, want, need, (meta_zone_end(c) - c->hdr.data_start) / 2, start,
				got);
	ret = take_run(c, goal, want, PASS_OUTSIDE, need, start, got);
	if (ret == -ENOSPC && need > 1)
		ret = take_run(c, 0, want, PASS_ORPHANS, need, start, got);
	if (ret != -ENOSPC || zone == DATA_RUNS || zone == DATA_LONG)
		return ret;
	ret = take_run(c, goal, want, PASS_OUTSIDE, 1, start, got);
	if (ret == -ENOSPC)
		ret = take_run(c, 0, want, PASS_ORPHANS, 1, start, got);
	if (ret == -ENOSPC)
		ret = pair_run(c, want, 1, zone_reserve(c), start, got);
	return ret;
}

int chunk_has_run(struct chunk *c, uint32_t run)
{
	struct run_pick pk = { .pass = PASS_OUTSIDE, .want = run, .min = run };
	uint32_t start, len;

	return chunk_load(c) == 0 && pick_run(c, 0, &pk, &start, &len) == 0;
}

/* Reallocation (fs/realloc.c): want blocks in one piece, outside the
 * metadata zones, or -ENOSPC. Best fit: the smallest free run that holds
 * them (the lowest of equal ones), so that a file gathered into one
 * extent takes the large runs last. */
int alloc_data_run(struct chunk *c, uint32_t want, uint32_t *start)
{
	uint32_t len;
	int ret = chunk_load(c);

	if (ret < 0)
		return ret;
	if (want == 0 || chunk_avail_blocks(c) < want || c->free_outside < want)
		return -ENOSPC;
	ret = best_run(c, PASS_OUTSIDE, want, 0, start, &len);
	if (ret == 0)
		mark_range(c, *start, want, 1);
	return ret;
}

uint32_t chunk_free_after(struct chunk *c, uint32_t b, uint32_t want)
{
	uint32_t end;

	if (chunk_load(c) < 0 || b >= c->hdr.nblocks || !pass_takes(c, b, PASS_OUTSIDE))
		return 0;
	end = b < c->half ? c->half : c->hdr.nblocks;
	if (want < end - b)
		end = b + want;
	return next_block(c, b, end, PASS_OUTSIDE, 0) - b;
}

int alloc_meta(struct chunk *c, uint32_t units, uint32_t *start)
{
	uint32_t lo = c->hdr.data_start, hi = c->half - units, ze = meta_zone_end(c);
	int keep = 0, ret = chunk_load(c);

	if (ret < 0)
		return ret;
	if (chunk_avail_blocks(c) < 2 * units || hi < lo)
		return -ENOSPC;
	if (!dalloc_may_take(c->vol, 2 * units)) /* (the blocks of buffered pages) */
		return -ENOSPC;
	/* The zone's pairs promised to buffered data's extent units
	 * (fs/dalloc_room.c) are left to its placement: none of the zone
	 * taken unless it has that many and these free. */
	if (c->vol->da_units && !dalloc_placing)
		keep = !chunk_meta_room(c, c->vol->da_units + units);
	for (uint32_t i = 0; i <= hi - lo; i++) {
		uint32_t b = lo + (c->alloc_hint_meta - lo + i) % (hi - lo + 1);
		uint32_t k;
		if (keep && b < ze)
			continue;
		for (k = 0; k < units; k++)
			if (block_busy(c, b + k) || block_busy(c, chunk_mirror(c, b + k)))
				break;
		if (k < units)
			continue;
		mark_range(c, b, units, 1);
		mark_range(c, chunk_mirror(c, b), units, 1);
		*start = b;
		c->alloc_hint_meta = b + units;
		return 0;
	}
	return -ENOSPC;
}

/* Frees come from inodes read from this chunk, but its allocation state
 * may not be loaded yet (first touch after an open). */
void free_blocks(struct chunk *c, uint32_t start, uint32_t len)
{
	if (c->vol->evac_pre)
		evac_pre_hit(c->vol, c->index, start, len);
	if (chunk_load(c) < 0) {
		c->hdr.state = OD_STATE_NEEDS_REPAIR; /* fsck recounts the bitmap */
		return;
	}
	mark_range(c, start, len, 0);
}

void free_meta(struct chunk *c, uint32_t start, uint32_t units)
{
	buf_forget(c, start);
	free_blocks(c, start, units);
	free_blocks(c, chunk_mirror(c, start), units);
}

/* --- preallocation's blocks (fs/prealloc.c) ------------------------------ */

/* A reserved block is busy for every allocation (block_busy) but stays
 * free in the bitmap and in hdr.free_blocks, which are on disk: the
 * reservation lives in memory only. It is taken from free_outside at once
 * (every reserved block lies outside the zone), so chunk choices see it
 * as used. */
uint32_t chunk_avail_blocks(const struct chunk *c)
{
	uint64_t busy = (uint64_t)c->pa_blocks + c->hold_blocks;

	return c->hdr.free_blocks > busy ? c->hdr.free_blocks - (uint32_t)busy : 0;
}

/* A block's bit in a map of reserved blocks (pa_map, or hold_map for a
 * placement's holds), set or cleared with its count (*count). */
static int res_test(const uint8_t *map, uint32_t b)
{
	return (map[b >> 3] >> (b & 7)) & 1;
}

static void res_set(struct chunk *c, uint8_t *map, uint32_t *count, uint32_t b, int on)
{
	uint8_t bit = (uint8_t)(1u << (b & 7));

	if (on) {
		map[b >> 3] |= bit;
		(*count)++;
		c->pairs_low -= c->pairs_low != 0;
	} else {
		map[b >> 3] &= (uint8_t)~bit;
		(*count)--;
	}
	if (outside_zone(c, b)) /* (an evacuation's copy may lie inside) */
		c->free_outside += on ? (uint32_t)-1 : 1u;
}

static void pa_set(struct chunk *c, uint32_t b, int on)
{
	res_set(c, c->pa_map, &c->pa_blocks, b, on);
}

/* Blocks [start, start + len) that the running operation allocated put
 * back free in the bitmap (not as a free to commit: nothing on disk ever
 * had them) and reserved in map instead. */
static void unallocate_into(struct chunk *c, uint8_t *map, uint32_t *count, uint32_t start,
			    uint32_t len)
{
	for (uint32_t b = start; b < start + len; b++) {
		bitmap_set(c, b, 0);
		if (outside_zone(c, b))
			c->free_outside++;
		res_set(c, map, count, b, 1);
	}
	c->hdr.free_blocks += len;
}

/* The reserved blocks of map from start on (at most want, while
 * reserved) allocated: how many. */
static uint32_t take_from(struct chunk *c, uint8_t *map, uint32_t *count, uint32_t start,
			  uint32_t want)
{
	uint32_t len = 0;

	if (!c->loaded)
		return 0;
	while (len < want && start + len < c->hdr.nblocks && res_test(map, start + len)) {
		res_set(c, map, count, start + len, 0);
		len++;
	}
	if (len)
		mark_range(c, start, len, 1);
	return len;
}

/* The blocks of [start, start + len) still reserved in map released. */
static uint32_t release_from(struct chunk *c, uint8_t *map, uint32_t *count, uint32_t start,
			     uint32_t len)
{
	uint32_t n = 0;

	if (!c->loaded)
		return 0;
	for (uint32_t b = start; b < start + len && b < c->hdr.nblocks; b++)
		if (res_test(map, b)) {
			res_set(c, map, count, b, 0);
			n++;
		}
	return n;
}

int chunk_pa_reserve_data(struct chunk *c, uint32_t goal, uint32_t want, uint32_t *start,
			  uint32_t *got)
{
	int ret = alloc_data(c, goal, want, DATA_ANY, start, got);

	if (ret == 0)
		unallocate_into(c, c->pa_map, &c->pa_blocks, *start, *got);
	return ret;
}

void chunk_hold(struct chunk *c, uint32_t start, uint32_t len)
{
	unallocate_into(c, c->hold_map, &c->hold_blocks, start, len);
}

int chunk_pa_find(struct chunk *c, uint32_t goal, uint32_t want, uint32_t *start, uint32_t *got)
{
	uint32_t n, best = 0, best_len = 0;
	int ret = chunk_load(c);

	if (ret < 0)
		return ret;
	n = c->hdr.nblocks;
	if (want == 0)
		return -EINVAL;
	if (goal == 0 || goal >= n || !outside_zone(c, goal))
		goal = c->alloc_hint_data;
	/* From goal to the end, then from the start: a run does not wrap. */
	for (uint32_t i = 0; i < n && best_len < want;) {
		uint32_t b = (goal + i) % n, len = 0;
		if (!pass_takes(c, b, PASS_OUTSIDE)) {
			i++;
			continue;
		}
		while (len < want && b + len < n && pass_takes(c, b + len, PASS_OUTSIDE))
			len++;
		if (len > best_len) {
			best = b;
			best_len = len;
		}
		i += len;
	}
	if (best_len == 0)
		return -ENOSPC;
	for (uint32_t b = best; b < best + best_len; b++)
		pa_set(c, b, 1);
	*start = best;
	*got = best_len;
	return 0;
}

uint32_t chunk_hold_take(struct chunk *c, uint32_t start, uint32_t want)
{
	return take_from(c, c->hold_map, &c->hold_blocks, start, want);
}

uint32_t chunk_hold_release(struct chunk *c, uint32_t start, uint32_t len)
{
	return release_from(c, c->hold_map, &c->hold_blocks, start, len);
}

uint32_t chunk_pa_take(struct chunk *c, uint32_t start, uint32_t want)
{
	uint32_t len = take_from(c, c->pa_map, &c->pa_blocks, start, want);

	if (len)
		c->alloc_hint_data = start + len < c->hdr.nblocks ? start + len : c->half;
	return len;
}

uint32_t chunk_pa_release(struct chunk *c, uint32_t start, uint32_t len)
{
	return release_from(c, c->pa_map, &c->pa_blocks, start, len);
}
