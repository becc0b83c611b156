/* fsck's chunk header made again when both its copies are lost: what the
 * volume shares (its identity, the geometry of a chunk of this size, the
 * root's number, the handle key) from another chunk's header of the same
 * size, and what is this chunk's own from its bytes: the watermarks from
 * the last map and inode-area blocks that hold a valid copy, the bitmap
 * as never written when no block of it does. The counters are recounted
 * by pass 5. Needs the volume: a lone chunk has no other header. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fsck/fsck_int.h"

/* Does block b of this chunk hold a valid copy of a unit of type t? */
static int has_valid_copy(struct fsck_ctx *c, uint32_t b, uint16_t t, uint8_t *buf)
{
	char why[96];

	for (int copy = 0; copy < 2; copy++) {
		uint64_t off = (uint64_t)(b + (copy ? c->half : 0)) * OD_BLOCK_SIZE;
		if (fsck_read_copy(c, buf, OD_BLOCK_SIZE, off, why, sizeof(why)) == 0 &&
		    fsck_copy_ok(c, buf, OD_BLOCK_SIZE, b, t, why, sizeof(why)))
			return 1;
	}
	return 0;
}

/* One past the last of n blocks from start that holds a valid copy. */
static uint32_t last_valid(struct fsck_ctx *c, uint32_t start, uint32_t n, uint16_t t,
			   uint8_t *buf)
{
	for (uint32_t i = n; i > 0; i--)
		if (has_valid_copy(c, start + i - 1, t, buf))
			return i;
	return 0;
}

/* The foster records of a header made again (evacuation): not the donor's
 * but this chunk's, as the other headers carry them: for chunk K, the
 * records naming K as home or host (chunk 0's, its table's too, first,
 * which decide, then the others'); for chunk 0, every record the other
 * headers give back (od_fosters_recover: the hosts', then the homes'), the
 * first 32 in the header and the rest in a table made again after pass 4
 * (c->ftab_new, fsck_ftab.c). FOSTERED and the feature bits follow the
 * records; the evacuation's state and cursors start again (a draining
 * chunk's evacuation scans from the start), and the predictor's chain is
 * chunk 0's own. */
static int rebuild_fosters(struct fsck_ctx *c, uint32_t index, struct od_chunk_header *h)
{
	const struct fsck_vol *v = c->vol;
	struct od_fosters l;

	memset(&l, 0, sizeof(l));
	h->nfosters = 0;
	memset(h->fosters, 0, sizeof(h->fosters));
	memset(h->retired_nblocks, 0, sizeof(h->retired_nblocks));
	h->flags &= ~OD_CHF_FOSTERED;
	h->feature_incompat &= ~(OD_FEATURE_INCOMPAT_FOSTER | OD_FEATURE_INCOMPAT_RETIRED);
	h->feature_compat &= ~OD_FEATURE_COMPAT_EVAC;
	h->evac_state = h->evac_slot = h->evac_map = 0;
	h->ftab_start = h->ftab_count = h->ftab_units = 0;
	h->feature_incompat &= ~OD_FEATURE_INCOMPAT_FTAB;
	if (index != 0)
		h->pred_start = 0;
	if (index == 0) {
		int ret = fsck_ftab_found(c, &l, h, 0, "chunk 0's header is lost");
		if (ret < 0) {
			od_fosters_free(&l);
			return ret == -1 ? -ENOENT : ret;
		}
	} else {
		/* chunk 0's records (its table's too), then the other headers' */
		int ret = 0;
		for (uint32_t i = 0; i < v->fost0.n && ret == 0; i++) {
			const struct od_foster *f = &v->fost0.rec[i];
			if (f->home == index || f->chunk == index)
				ret = od_fosters_add(&l, f, 0);
		}
		for (uint32_t j = 1; j < v->nchunks && ret == 0; j++) {
			const struct od_chunk_header *d = &v->hdr[j];
			for (uint32_t r = 0; j != index && v->hdr_ok[j] && r < d->nfosters &&
					     r < OD_MAX_FOSTERS && ret == 0; r++) {
				const struct od_foster *f = &d->fosters[r];
				if ((f->home == index || f->chunk == index) &&
				    od_fosters_find(&l, f->home) < 0)
					ret = od_fosters_add(&l, f, 0);
			}
		}
		if (ret < 0) {
			od_fosters_free(&l);
			return fsck_oom(c);
		}
	}
	h->nfosters = l.n < OD_MAX_FOSTERS ? l.n : OD_MAX_FOSTERS;
	for (uint32_t k = 0; k < h->nfosters; k++) {
		const struct od_foster *f = &l.rec[k];
		h->fosters[k] = *f;
		h->feature_incompat |= OD_FEATURE_INCOMPAT_FOSTER;
		if (f->home == index)
			h->flags |= OD_CHF_FOSTERED;
		if (f->flags & OD_FOSTER_RETIRED) {
			h->feature_incompat |= OD_FEATURE_INCOMPAT_RETIRED;
			if (index == 0)
				h->retired_nblocks[k] = l.retired[k];
		}
	}
	if (h->flags & OD_CHF_FOSTERED)
		h->used_inodes = 0; /* its numbers are counted in the foster map */
	if (index == 0 && l.n > OD_MAX_FOSTERS) {
		/* (the table's fields are set when its units are written) */
		fsck_ftab_plan(c, &l);
		return 0;
	}
	od_fosters_free(&l);
	return 0;
}

int fsck_header_rebuild(struct fsck_ctx *c, uint32_t index, struct od_chunk_header *out,
			uint32_t *donor, const char **why)
{
	uint32_t nb = (uint32_t)(c->st->size / OD_BLOCK_SIZE), j, n;
	int ret;
	const struct fsck_vol *v = c->vol;
	struct od_chunk_header h;
	uint8_t *buf;

	if (!v) {
		*why = "a chunk checked alone has no other header to take it from";
		return -ENOENT;
	}
	for (j = 0; j < v->nchunks; j++)
		if (j != index && v->hdr_ok[j] && v->hdr[j].nblocks == nb)
			break;
	if (j == v->nchunks) {
		*why = "no other chunk of its size has a header";
		return -ENOENT;
	}
	buf = malloc(OD_BLOCK_SIZE);
	if (!buf)
		return fsck_oom(c);
	h = v->hdr[j];
	h.chunk_index = index;
	h.state = OD_STATE_NEEDS_REPAIR;
	h.last_check_time = 0;
	c->index = index;
	c->half = nb / 2;
	n = last_valid(c, h.map_start, h.map_blocks, OD_MB_MAP, buf) * OD_MAP_PER_BLOCK;
	h.map_watermark = n < h.max_inodes ? n : h.max_inodes;
	n = last_valid(c, h.itable_start, h.itable_blocks, OD_MB_ITABLE, buf) * OD_ISLOTS_PER_BLOCK;
	h.islot_watermark = n < h.islots ? n : h.islots;
	/* The donor's evacuation is not this chunk's: a header made again
	 * does not drain (an evacuation of this chunk is started again). */
	h.flags &= ~(OD_CHF_BITMAP_UNINIT | OD_CHF_DRAINING);
	if (!last_valid(c, h.bitmap_start, h.bitmap_blocks, OD_MB_BITMAP, buf))
		h.flags |= OD_CHF_BITMAP_UNINIT;
	ret = rebuild_fosters(c, index, &h);
	free(buf);
	if (ret == -ENOENT)
		*why = "a foster record is in no header it can be taken from: repair its host's "
		       "header, then check chunk 0 again";
	if (ret < 0)
		return ret;
	*out = h;
	*donor = j;
	return 0;
}
