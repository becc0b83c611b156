/* Chunk 0's foster table made again by the volume itself, at a read-write
 * open that found it not whole (doc/format.md §6 "A lost table"): when the
 * records found again are complete (none lost, as many as chunk 0's header
 * counts, its table fields of a possible shape), the table is laid out as
 * fsck.chunkfs -fy lays it (the old chain's blocks it knows first, then
 * free metadata pairs of chunk 0, the old blocks left over freed; but not
 * in the lost unit's own block), chunk 0's header set with it, the chunks
 * the lost records name retired taken out of service, and all of it
 * committed in one transaction before the open goes on. This file owns
 * that decision and that repair. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/internal.h"

int ftab_complete(const struct fs_volume *v, uint32_t nlost)
{
	const struct od_chunk_header *h0 = &v->chunks[0].hdr;

	/* A chunk offline and not known retired may be the home or host
	 * whose header says more (a retired home's size, where its map
	 * went): what was found without it is not written. */
	for (uint32_t i = 1; i < v->nchunks; i++)
		if (v->chunks[i].offline && !v->chunks[i].retired)
			return 0;
	return !v->rdonly && nlost == 0 && od_fosters_shape_ok(h0) &&
	       v->fost.n == h0->nfosters + h0->ftab_count;
}

/* Is block b of chunk 0 a metadata pair in use, and not yet in blocks[]? */
static int old_block(struct chunk *c0, uint32_t b, const uint32_t *blocks, uint32_t n)
{
	if (b < c0->hdr.data_start || b >= c0->half || !bitmap_test(c0, b) ||
	    !bitmap_test(c0, chunk_mirror(c0, b)))
		return 0;
	for (uint32_t k = 0; k < n; k++)
		if (blocks[k] == b)
			return 0;
	return 1;
}

/* Chunk c, opened as a live chunk from its own header, retired as the
 * records found again say (its size nb): taken out of service as open
 * would have left it had the table been whole (never read or written). */
static int retire_opened(struct fs_volume *v, struct chunk *c, uint32_t nb)
{
	int ret;

	if (!c->offline) {
		ret = cache_drop_chunk(c);
		if (ret == 0)
			ret = vol_chunk_release(v, c->index);
		if (ret < 0)
			return ret;
		chunk_unload(c);
		txn_forget_ondisk(c);
	}
	store_close(c->store);
	c->store = store_dead_new();
	if (!c->store)
		return -ENOMEM;
	vol_retired_header(&v->chunks[0].hdr, c->index, nb, &c->hdr);
	c->half = nb / 2;
	c->offline = 1;
	c->retired = 1;
	c->header_dirty = 0;
	c->header_heal = -1;
	snprintf(c->why_offline, sizeof(c->why_offline), "retired (evacuated)");
	return 0;
}

/* Is p (a copy at block b of chunk 0) unit seq of the old chain, as its
 * header says, with the records the list in memory has? */
static int rest_unit(const struct fs_volume *v, const uint8_t *p, uint32_t b, uint32_t *seq)
{
	const struct od_chunk_header *h0 = &v->chunks[0].hdr;
	struct od_mb_header mh;
	uint32_t want;

	if (od_verify(p, OD_BLOCK_SIZE) < 0)
		return 0;
	od_get_mb_header(p, &mh);
	if (mh.magic != OD_MB_MAGIC || mh.type != OD_MB_FTAB || mh.units != 1 || mh.chunk != 0 ||
	    mh.block != b || mh.owner != 0 || mh.seq >= h0->ftab_units)
		return 0;
	want = mh.seq + 1 < h0->ftab_units ? OD_FTAB_PER_UNIT
					   : h0->ftab_count - mh.seq * OD_FTAB_PER_UNIT;
	p += OD_MB_HEADER_SIZE;
	if (od_get_ftab_count(p) != want)
		return 0;
	for (uint32_t e = 0; e < want; e++) {
		struct od_foster f;
		uint32_t nb;
		int i;
		od_get_ftab_entry(p, e, &f, &nb);
		i = od_fosters_find(&v->fost, f.home);
		if (i < 0 || v->fost.retired[i] != nb || v->fost.rec[i].chunk != f.chunk ||
		    v->fost.rec[i].start != f.start || v->fost.rec[i].nblocks != f.nblocks ||
		    v->fost.rec[i].entries != f.entries || v->fost.rec[i].flags != f.flags)
			return 0;
	}
	*seq = mh.seq;
	return 1;
}

/* The units of the old chain past the one lost (their links went with it),
 * old[from .. to), found among chunk 0's metadata pairs in use: both copies
 * the same unit of the table (rest_unit), each index once. 0, -ENOENT (one
 * is not found, or found twice: what[] says), -ENOMEM or -EIO. */
static int find_rest(struct fs_volume *v, uint32_t *old, uint32_t from, uint32_t to, char *what,
		     size_t len)
{
	struct chunk *c0 = &v->chunks[0];
	struct od_header_src hs = store_header_src(c0->store);
	uint8_t *buf = malloc(2 * OD_BLOCK_SIZE);
	uint32_t found = 0, seq;
	int twice = 0;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (uint32_t k = from; k < to; k++)
		old[k] = 0;
	/* every pair in use is looked at: a unit found twice is a block
	 * left in use that nothing would name */
	for (uint32_t b = c0->hdr.data_start; b < c0->half && !twice && ret == 0; b++) {
		if (!old_block(c0, b, old, to))
			continue;
		if (hs.pread(hs.ctx, buf, OD_BLOCK_SIZE, (uint64_t)b * OD_BLOCK_SIZE) < 0 ||
		    !rest_unit(v, buf, b, &seq) || seq < from)
			continue;
		if (hs.pread(hs.ctx, buf + OD_BLOCK_SIZE, OD_BLOCK_SIZE,
			     (uint64_t)chunk_mirror(c0, b) * OD_BLOCK_SIZE) < 0 ||
		    memcmp(buf, buf + OD_BLOCK_SIZE, OD_BLOCK_SIZE) != 0)
			continue;
		twice = old[seq] != 0;
		found += !twice;
		old[seq] = b;
	}
	free(buf);
	if (twice || found < to - from) {
		snprintf(what, len, "a unit of the old chain past the lost one is %s",
			 twice ? "found twice" : "not found");
		return -ENOENT;
	}
	return 0;
}

/* The table's blocks: the old chain's units that have a good copy (those
 * read whole, those past the lost one) first, free pairs for more; the
 * old ones left over freed, and the lost unit's block too. That block has
 * no version a rollback could go back to: written in place, a crash
 * before the commit would leave a unit in use that is neither the old
 * nor the new one; a fresh pair is free again when the transaction rolls
 * back. Every block of the old chain must be known: a block left in use
 * that nothing names is not made. */
static int lay_out(struct fs_volume *v, uint32_t *blocks, uint32_t need, uint32_t *nfree,
		   char *what, size_t len)
{
	struct chunk *c0 = &v->chunks[0];
	uint32_t old[OD_FTAB_MAX_UNITS + 1], nold = 0, n = 0, lost = 0;
	int ret = chunk_load(c0);

	if (ret < 0)
		return ret;
	for (uint32_t k = 0; k < v->fost.nunits; k++)
		old[nold++] = v->fost.units[k];
	if (v->fost.lost_block && old_block(c0, v->fost.lost_block, old, nold))
		lost = old[nold++] = v->fost.lost_block;
	if (nold < c0->hdr.ftab_units) {
		ret = find_rest(v, old, nold, c0->hdr.ftab_units, what, len);
		if (ret < 0)
			return ret;
		nold = c0->hdr.ftab_units;
	}
	if (lost) { /* (the lost unit's block last: freed) */
		uint32_t at = v->fost.nunits;
		memmove(&old[at], &old[at + 1], (nold - at - 1) * sizeof(old[0]));
		old[nold - 1] = lost;
	}
	for (; n < need && n < nold - (lost != 0); n++)
		blocks[n] = old[n];
	for (uint32_t k = n; k < need; k++) {
		ret = alloc_meta(c0, 1, &blocks[k]);
		if (ret < 0) {
			snprintf(what, len, "no free metadata pair in chunk 0 for unit %u", k);
			while (k-- > n)
				free_meta(c0, blocks[k], 1);
			return ret;
		}
	}
	*nfree = nold - n;
	for (uint32_t k = n; k < nold; k++) {
		buf_forget(c0, old[k]);
		free_meta(c0, old[k], 1);
	}
	return 0;
}

int ftab_rebuild(struct fs_volume *v, char *msg, size_t len)
{
	struct chunk *c0 = &v->chunks[0];
	struct od_chunk_header *h = &c0->hdr;
	const struct od_fosters *l = &v->fost;
	uint32_t need = od_fosters_units_needed(l->n), blocks[OD_FTAB_MAX_UNITS], nfree = 0;
	uint32_t nretired = 0;
	int ret;

	msg[0] = '\0';
	ret = lay_out(v, blocks, need, &nfree, msg, len);
	if (ret < 0)
		goto fail;
	memcpy(v->fost.units, blocks, need * sizeof(blocks[0]));
	v->fost.nunits = need;
	v->fost.lost_block = 0;
	for (uint32_t k = 0; k < need && ret == 0; k++)
		ret = ftab_rewrite(v, blocks[k]);
	if (ret < 0)
		goto fail;
	od_fosters_put_header(l, need ? blocks[0] : 0, h);
	c0->header_dirty = 1;
	/* the chunks only the lost records named retired: opened from their
	 * own headers, as live chunks; never read or written from here on */
	for (uint32_t i = 1; i < v->nchunks && ret == 0; i++) {
		uint32_t nb = od_fosters_retired(l, i);
		if (nb && !v->chunks[i].retired) {
			ret = retire_opened(v, &v->chunks[i], nb);
			nretired++;
		}
	}
	if (ret == 0 && (ret = vol_sync(v, 0)) < 0)
		snprintf(msg, len, "writing it failed: %s", strerror(-ret));
	if (ret < 0)
		goto fail;
	v->ftab_rebuilt = 1;
	snprintf(msg, len, "the table is made again: %u in the header, %u in %u unit%s from block "
		 "%u (%u old block%s freed), %u retired chunk%s taken out of service; the "
		 "volume is read-write", h->nfosters, h->ftab_count, need, need == 1 ? "" : "s",
		 h->ftab_start, nfree, nfree == 1 ? "" : "s", nretired, nretired == 1 ? "" : "s");
	return 0;
fail:
	if (!msg[0])
		snprintf(msg, len, "%s", strerror(-ret));
	return ret;
}
