/* Chunk 0's foster records in the open volume (fostertab): the list every
 * reader of the records uses (v->fost, read at open from chunk 0's header
 * and its table), and each change of it put where the record lives, the
 * header's fosters[] for the first OD_MAX_FOSTERS, a unit of the
 * OD_MB_FTAB chain for the others, in the caller's transaction (buffers
 * and header staged like any unit's). The chain only grows: chunk 0's
 * records are never removed. Under the volume lock. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/internal.h"

int vol_fosters_load(struct fs_volume *v, char *why, size_t n)
{
	struct chunk *c0 = &v->chunks[0];
	struct od_header_src hs = store_header_src(c0->store);

	od_fosters_free(&v->fost);
	if (c0->offline)
		return 0;
	return od_fosters_read(&hs, 0, &c0->hdr, -1, &v->fost, why, n);
}

/* Is block b of chunk 0 in use (od_fosters_chunk0's allocated: a map
 * found in chunk 0 is one in use, not a copy left in free blocks)? Its
 * bitmap loaded on first use; unknown counts as in use. */
static int c0_allocated(void *ctx, uint32_t b)
{
	struct chunk *c0 = ctx;

	return chunk_load(c0) < 0 || bitmap_test(c0, b);
}

int vol_fosters_degraded(struct fs_volume *v, const char *fwhy, char *why, size_t whylen)
{
	uint32_t n = v->nchunks, nlost = 0, had = v->fost.n;
	struct od_chunk_header *hdr = calloc(n, sizeof(*hdr));
	uint32_t *lost = calloc(n + 1, sizeof(*lost));
	uint8_t *ok = calloc(n, 1);
	size_t used = why ? strlen(why) : 0;
	int ret = -ENOMEM;
	char tail[400] = "the volume is read-only until fsck.chunkfs -fy makes the table again";
	struct od_header_src hs = store_header_src(v->chunks[0].store);
	struct od_fosters_chunk0 c0 = { .src = &hs, .h0 = &v->chunks[0].hdr,
					.allocated = c0_allocated, .ctx = &v->chunks[0] };

	if (!hdr || !lost || !ok)
		goto out;
	for (uint32_t i = 1; i < n; i++) {
		const struct chunk *c = &v->chunks[i];
		ok[i] = !c->offline && !c->retired;
		if (ok[i])
			hdr[i] = c->hdr;
	}
	ret = od_fosters_recover(&v->fost, hdr, ok, n, v->chunks[0].hdr.nblocks, &c0, lost, &nlost);
	if (ret < 0)
		goto out;
	if (ftab_complete(v, nlost)) {
		/* every record is at hand: the table is made again and the
		 * volume stays read-write (ftab_rebuild.c) */
		char fail[256] = "";
		ret = ftab_rebuild(v, fail, sizeof(fail));
		if (ret == -ENOMEM)
			goto out;
		if (ret < 0)
			snprintf(tail, sizeof(tail), "the table is not made again (%s): the volume "
				 "is read-only until fsck.chunkfs -fy makes it", fail);
		else
			snprintf(tail, sizeof(tail), "%s", fail);
	}
	if (!v->ftab_rebuilt) {
		/* Nothing is written with records that may be incomplete:
		 * the volume serves what it can, read-only, until fsck makes
		 * the table again (fsck.chunkfs -fy). */
		v->rdonly = 1;
		v->ftab_lost = 1;
	}
	if (why && used + 1 < whylen) {
		int m = snprintf(why + used, whylen - used,
				 "%schunk 0: %s; %u foster records found again in the other chunks' "
				 "headers (%u in chunk 0), %u of %u: %s",
				 used ? "; " : "", fwhy, v->fost.n - had, had, v->fost.n,
				 v->chunks[0].hdr.nfosters + v->chunks[0].hdr.ftab_count, tail);
		for (uint32_t i = 0; i < nlost && m > 0 && used + (size_t)m + 1 < whylen; i++) {
			used += (size_t)m;
			m = snprintf(why + used, whylen - used,
				     "; chunk %u's record is not found: its numbers cannot be reached",
				     lost[i]);
		}
	}
	ret = 0;
out:
	free(hdr);
	free(lost);
	free(ok);
	return ret;
}

/* Table unit k written from v->fost (a fresh unit when fresh), its link
 * to the next unit included. */
static int unit_write(struct fs_volume *v, uint32_t k, int fresh)
{
	struct chunk *c0 = &v->chunks[0];
	uint32_t block = v->fost.units[k];
	struct od_mb_header h;
	struct buf *b;
	int ret = fresh ? buf_fresh(c0, block, 1, OD_MB_FTAB, 0, &b) : buf_read(c0, block, 1, &b);

	if (ret < 0)
		return ret;
	od_get_mb_header(b->data, &h);
	h.seq = k;
	h.next = k + 1 < v->fost.nunits ? v->fost.units[k + 1] : 0;
	od_put_mb_header(b->data, &h);
	od_fosters_put_unit(&v->fost, k, b->data + OD_MB_HEADER_SIZE);
	buf_dirty(b);
	buf_put(b);
	return 0;
}

int ftab_put(struct fs_volume *v, uint32_t r)
{
	struct chunk *c0 = &v->chunks[0];

	if (r < OD_MAX_FOSTERS) {
		c0->hdr.fosters[r] = v->fost.rec[r];
		c0->hdr.retired_nblocks[r] = v->fost.retired[r];
		c0->header_dirty = 1;
		return 0;
	}
	return unit_write(v, (r - OD_MAX_FOSTERS) / OD_FTAB_PER_UNIT, 0);
}

int ftab_room(struct fs_volume *v)
{
	struct chunk *c0 = &v->chunks[0];
	uint32_t k = v->fost.nunits, block;
	int ret;

	if (od_fosters_units_needed(v->fost.n + 1) <= k)
		return 0;
	if (v->fost.n + 1 > OD_MAX_CHUNKS)
		return -ENOSPC;
	ret = alloc_meta(c0, 1, &block);
	if (ret < 0)
		return ret;
	v->fost.units[v->fost.nunits++] = block;
	ret = unit_write(v, k, 1);
	if (ret == 0 && k > 0)
		ret = unit_write(v, k - 1, 0); /* its link to the new one */
	if (ret < 0) {
		buf_forget(c0, block);
		free_meta(c0, block, 1);
		v->fost.nunits--;
		return ret;
	}
	if (k == 0)
		c0->hdr.ftab_start = block;
	c0->hdr.ftab_units = v->fost.nunits;
	c0->hdr.feature_incompat |= OD_FEATURE_INCOMPAT_FTAB;
	c0->header_dirty = 1;
	return 0;
}

int ftab_append(struct fs_volume *v, const struct od_foster *rec)
{
	struct chunk *c0 = &v->chunks[0];
	uint32_t r = v->fost.n;
	int ret;

	if (od_fosters_units_needed(r + 1) > v->fost.nunits)
		return -ENOSPC; /* (ftab_room first) */
	ret = od_fosters_add(&v->fost, rec, 0);
	if (ret < 0)
		return ret;
	if (r < OD_MAX_FOSTERS)
		c0->hdr.nfosters = r + 1;
	else
		c0->hdr.ftab_count = r + 1 - OD_MAX_FOSTERS;
	c0->hdr.feature_incompat |= OD_FEATURE_INCOMPAT_FOSTER;
	c0->header_dirty = 1;
	return ftab_put(v, r);
}

int ftab_unit_index(const struct fs_volume *v, uint32_t block)
{
	for (uint32_t k = 0; k < v->fost.nunits; k++)
		if (v->fost.units[k] == block)
			return (int)k;
	return -1;
}

int ftab_rewrite(struct fs_volume *v, uint32_t block)
{
	int k = ftab_unit_index(v, block);

	return k < 0 ? -ENOENT : unit_write(v, (uint32_t)k, 1);
}
