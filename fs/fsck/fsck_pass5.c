/* fsck pass 5: the block bitmap and the header counters against what the
 * passes before found.
 * Checks:   every bit of the bitmap against the expected one (the fixed
 *           regions of both halves plus every block claimed in pass 3): used
 *           blocks marked free, free blocks marked used, bits past the end
 *           of the chunk; a bitmap still BITMAP_UNINIT while blocks are in
 *           use; free_blocks against the zero bits of the bitmap as it will
 *           be; used_inodes against the used map entries. (Watermarks: what
 *           pass 4 found at or above them was reported there; map and slot
 *           watermarks within max_inodes and islots are part of the header
 *           check of pass 1.)
 * Repairs:  the bitmap rebuilt from what was found (marking blocks free only
 *           when every owner of blocks was read), the counters set.
 * Relies on pass 3 (c->owner) and pass 4 (c->used_map). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fsck/fsck_int.h"


static int bit(const uint8_t *map, uint32_t b)
{
	return (map[b >> 3] >> (b & 7)) & 1;
}

static void set_bit(uint8_t *map, uint32_t b, int v)
{
	if (v)
		map[b >> 3] |= (uint8_t)(1u << (b & 7));
	else
		map[b >> 3] &= (uint8_t)~(1u << (b & 7));
}

static uint64_t load_word(const uint8_t *p)
{
	uint64_t v = 0;

	for (int k = 7; k >= 0; k--)
		v = v << 8 | p[k];
	return v;
}

static void store_word(uint8_t *p, uint64_t v)
{
	for (int k = 0; k < 8; k++, v >>= 8)
		p[k] = (uint8_t)v;
}

/* Blocks b .. b+63 agree with the disk where it can be trusted: want gets
 * them at once (the common case, 64 at a time; a bitmap block's payload
 * is a whole number of 64-bit words, so they share its bitmap_unknown). */
static int word_agrees(const struct fsck_ctx *c, uint32_t b, uint32_t nb, uint8_t *want)
{
	uint64_t e;

	if ((b & 63) || b + 64 > nb || c->bitmap_unknown[b / OD_BITMAP_BITS_PER_BLOCK])
		return 0;
	e = c->owned[b >> 6];
	if (e != load_word(c->disk_bitmap + (b >> 3)))
		return 0;
	store_word(want + (b >> 3), e);
	return 1;
}

static int any_set(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 1;
	return 0;
}

/* Write the bitmap as it is to be into the bitmap units that differ. */
static int store_bitmap(struct fsck_ctx *c, const uint8_t *want, int all)
{
	const struct od_chunk_header *h = &c->hdr;

	for (uint32_t i = 0; i < h->bitmap_blocks; i++) {
		const uint8_t *src = want + (size_t)i * OD_MB_PAYLOAD;
		struct fsck_unit *u = fsck_unit_find(c, h->bitmap_start + i);
		if (!u) {
			/* Never read (BITMAP_UNINIT): made now. */
			u = calloc(1, sizeof(*u));
			if (!u)
				return fsck_oom(c);
			u->data = calloc(1, OD_BLOCK_SIZE);
			if (!u->data) {
				free(u);
				return fsck_oom(c);
			}
			u->block = h->bitmap_start + i;
			u->units = 1;
			u->type = OD_MB_BITMAP;
			u->cur = -1;
			{
				struct od_mb_header mh = { .magic = OD_MB_MAGIC, .type = OD_MB_BITMAP,
							   .units = 1, .chunk = c->index,
							   .block = u->block,
							   .txid = c->hdr_unit->txid };
				od_put_mb_header(u->data, &mh);
			}
			fsck_unit_add(c, u);
		}
		if (!u->data)
			continue;
		if (!all && memcmp(u->data + OD_MB_HEADER_SIZE, src, OD_MB_PAYLOAD) == 0)
			continue;
		memcpy(u->data + OD_MB_HEADER_SIZE, src, OD_MB_PAYLOAD);
		fsck_unit_modified(c, u);
	}
	return 0;
}

int fsck_pass5(struct fsck_ctx *c)
{
	const struct od_chunk_header *h = &c->hdr;
	size_t bytes = (size_t)h->bitmap_blocks * OD_MB_PAYLOAD;
	uint32_t nb = h->nblocks, nbits = (uint32_t)(bytes * 8);
	uint32_t n_used_free = 0, n_free_used = 0, n_tail = 0, first_uf = 0, first_fu = 0;
	uint32_t zeros = 0, uninit = !!(h->flags & OD_CHF_BITMAP_UNINIT);
	uint8_t *want = calloc(1, bytes ? bytes : 1);
	int fix_uf = 0, fix_fu = 0, fix_tail = 0, ret = 0;

	if (!want)
		return fsck_oom(c);
	/* The bitmap as it will be: what was found, and, where some owner of
	 * blocks could not be read, what the disk says on top. */
	for (uint32_t b = 0; b < nbits; b++) {
		int unknown, exp, disk;
		if (word_agrees(c, b, nb, want)) {
			b += 63;
			continue;
		}
		if (!(b & 63) && b >= nb && b + 64 <= nbits &&
		    (c->bitmap_unknown[b / OD_BITMAP_BITS_PER_BLOCK] ||
		     !load_word(c->disk_bitmap + (b >> 3)))) {
			b += 63; /* past the end, clear (want is 0 there) */
			continue;
		}
		unknown = c->bitmap_unknown[b / OD_BITMAP_BITS_PER_BLOCK];
		exp = b < nb && c->owner[b] != 0;
		disk = bit(c->disk_bitmap, b);
		if (b >= nb) {
			n_tail += disk && !unknown;
			continue;
		}
		if (unknown) {
			set_bit(want, b, exp);
			continue;
		}
		if (exp && !disk && n_used_free++ == 0)
			first_uf = b;
		if (!exp && disk && n_free_used++ == 0)
			first_fu = b;
		set_bit(want, b, exp || (disk && c->incomplete));
	}
	if (uninit && n_used_free) {
		struct fsck_pctx p = { .num = n_used_free };
		if (fix_problem(c, PR_5_BITMAP_UNINIT, &p)) {
			ret = store_bitmap(c, want, 1);
			c->clear_uninit = 1;
			c->hdr_changed = 1;
		}
	} else if (!uninit) {
		if (n_used_free) {
			struct fsck_pctx p = { .num = n_used_free, .blk = first_uf };
			fix_uf = fix_problem(c, PR_5_USED_MARKED_FREE, &p);
		}
		if (n_free_used) {
			struct fsck_pctx p = { .num = n_free_used, .blk = first_fu };
			fix_fu = fix_problem(c, PR_5_FREE_MARKED_USED, &p);
		}
		if (n_tail) {
			struct fsck_pctx p = { .num = n_tail };
			fix_tail = fix_problem(c, PR_5_BITMAP_TAIL, &p);
		}
		/* The repairs accepted, applied to what the disk says (blocks
		 * with no valid copy take the rebuilt bits at once). */
		{
			uint8_t *out = malloc(bytes ? bytes : 1);
			if (!out) {
				free(want);
				return fsck_oom(c);
			}
			memcpy(out, c->disk_bitmap, bytes);
			if (!fix_uf && !fix_fu && !fix_tail &&
			    !any_set(c->bitmap_unknown, h->bitmap_blocks))
				nbits = 0; /* out is the disk's bitmap */
			for (uint32_t b = 0; b < nbits; b++) {
				int unknown = c->bitmap_unknown[b / OD_BITMAP_BITS_PER_BLOCK];
				int w = bit(want, b), d = bit(out, b);
				if (unknown || (fix_uf && w && !d) || (fix_fu && !w && d) ||
				    (fix_tail && b >= nb))
					set_bit(out, b, b < nb ? w : 0);
			}
			ret = store_bitmap(c, out, 0);
			free(out);
		}
	}
	for (uint32_t b = 0; b < nb; b++) {
		if (!(b & 63) && b + 64 <= nb) {
			zeros += 64 - (uint32_t)__builtin_popcountll(load_word(want + (b >> 3)));
			b += 63;
			continue;
		}
		zeros += !bit(want, b);
	}
	c->res.blocks_used = nb - zeros;
	if (ret == 0 && h->free_blocks != zeros) {
		struct fsck_pctx p = { .num = h->free_blocks, .num2 = zeros };
		if (fix_problem(c, PR_5_FREE_BLOCKS, &p)) {
			c->hdr.free_blocks = zeros;
			c->hdr_changed = 1;
		}
	}
	if (ret == 0 && h->used_inodes != c->used_map) {
		struct fsck_pctx p = { .num = h->used_inodes, .num2 = c->used_map };
		if (fix_problem(c, PR_5_USED_INODES, &p)) {
			c->hdr.used_inodes = c->used_map;
			c->hdr_changed = 1;
		}
	}
	free(want);
	return ret;
}
