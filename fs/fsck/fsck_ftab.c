/* fsck: chunk 0's foster table made again (issue 23, doc/format.md §6 "A
 * lost table"). Every record chunk 0 names also lives in its host's header
 * (when the host is not chunk 0) and in its home's: a table that is not
 * whole, or a header of chunk 0 made again, gets the records it lacks from
 * those headers (od_fosters_recover: what decides when they disagree), read
 * from the volume, never written. This file owns:
 *   the recovery (pass 1): chunk 0's surviving records and those found
 *           again, kept in c->ftab_new; the maps found hosted in chunk 0
 *           read (so pass 3 claims them); the records that cannot be found
 *           again reported (PR_1_FTAB_REC_LOST, PR_1_FTAB_RECS_MISSING: the
 *           table is then left as it is);
 *   the write (after pass 4): the table's units laid out again from
 *           c->ftab_new in the old chain's blocks (more taken from free
 *           metadata pairs when needed), chunk 0's header fields with them.
 * The units and the header go out with fsck's write-out: every unit's copy
 * 0, then the header's, then the copies 1; a crash before the header's copy
 * 0 leaves the old (lost) table, which the next check makes again. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fsck/fsck_int.h"

/* Is block b of chunk 0 in use, as its bitmap says (unknown, or not read
 * yet: a header made again, yes)? */
static int allocated(void *ctx, uint32_t b)
{
	const struct fsck_ctx *c = ctx;

	return !c->disk_bitmap || c->bitmap_unknown[b / OD_BITMAP_BITS_PER_BLOCK] ||
	       ((c->disk_bitmap[b >> 3] >> (b & 7)) & 1);
}

static int src_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	return store_pread(ctx, buf, len, off);
}

/* The headers the records are looked for in (hdr, ok: n of each, to be
 * freed): the volume's, and those of the chunks its view took for retired
 * and did not read. That view reads chunk 0's newer copies, which this
 * check may have rolled back (a crash in the transaction of the open that
 * made the table again, fs/ftab_rebuild.c): the records of the chunks it
 * named retired are then lost again, and only their own headers hold
 * them. 0 or -ENOMEM. */
static int headers_for(const struct fsck_vol *v, struct od_chunk_header **hdr, uint8_t **ok)
{
	struct fsck_vol probe = *v;

	probe.hdr = malloc(v->nchunks * sizeof(*probe.hdr));
	probe.hdr_ok = malloc(v->nchunks);
	if (!probe.hdr || !probe.hdr_ok) {
		free(probe.hdr);
		free(probe.hdr_ok);
		return -ENOMEM;
	}
	memcpy(probe.hdr, v->hdr, v->nchunks * sizeof(*probe.hdr));
	memcpy(probe.hdr_ok, v->hdr_ok, v->nchunks);
	for (uint32_t i = 1; i < v->nchunks; i++)
		if (!v->hdr_ok[i] && od_fosters_retired(&v->fost0, i) && v->size[i])
			fsck_vol_read_header(&probe, i, v->base[i], v->size[i], v->hdr[0].nblocks);
	*hdr = probe.hdr;
	*ok = probe.hdr_ok;
	return 0;
}

int fsck_ftab_found(struct fsck_ctx *c, struct od_fosters *l, const struct od_chunk_header *h0,
		    uint32_t block, const char *why)
{
	const struct fsck_vol *v = c->vol;
	struct od_header_src hs = { .pread = src_pread, .ctx = c->st, .size = c->st->size };
	struct od_fosters_chunk0 c0 = { .src = &hs, .h0 = h0, .allocated = allocated, .ctx = c };
	struct od_chunk_header *hdr = NULL;
	uint8_t *ok = NULL;
	uint32_t *lost, nlost = 0;
	int ret;

	lost = calloc(v->nchunks + 1, sizeof(*lost));
	if (!lost || headers_for(v, &hdr, &ok) < 0) {
		free(lost);
		return fsck_oom(c);
	}
	ret = od_fosters_recover(l, hdr, ok, v->nchunks, h0->nblocks, &c0, lost, &nlost);
	free(hdr);
	free(ok);
	if (ret < 0) {
		free(lost);
		return fsck_oom(c);
	}
	for (uint32_t i = 0; i < nlost; i++) {
		const struct od_chunk_header *h = &v->hdr[lost[i]];
		struct fsck_pctx p = { .blk = block, .str = why, .num = lost[i] };
		char host[120] = "";
		for (uint32_t r = 0; r < h->nfosters && r < OD_MAX_FOSTERS; r++)
			if (h->fosters[r].home == lost[i]) {
				p.num2 = h->fosters[r].entries;
				snprintf(host, sizeof(host), "retired, its own header names chunk %u, "
					 "whose header %s, and chunk 0 holds no map of it",
					 h->fosters[r].chunk,
					 h->fosters[r].chunk < v->nchunks && v->hdr_ok[h->fosters[r].chunk]
						 ? "does not list it" : "cannot be read");
			}
		p.str2 = host;
		fix_problem(c, PR_1_FTAB_REC_LOST, &p);
	}
	free(lost);
	return nlost ? -1 : 0;
}

void fsck_ftab_plan(struct fsck_ctx *c, struct od_fosters *l)
{
	od_fosters_free(&c->ftab_new);
	c->ftab_new = *l;
	c->ftab_make = 1;
	memset(l, 0, sizeof(*l));
}

int fsck_ftab_recover(struct fsck_ctx *c, const struct od_fosters *have, const char *why)
{
	struct fsck_pctx p = { .blk = c->hdr.ftab_start, .str = why };
	uint32_t want = c->hdr.nfosters + c->hdr.ftab_count;
	struct od_fosters l;
	int ret, lost;

	memset(&l, 0, sizeof(l));
	if (fsck_vol_ready(c) < 0) {
		p.str2 = "the chunk is checked alone: the other chunks' headers that hold its "
			 "records are not at hand (check the volume)";
		fix_problem(c, PR_1_FTAB_RECS_MISSING, &p);
		return 0;
	}
	fsck_note(c, "the foster records chunk 0 lacks are looked for in the other chunks' "
		     "headers and its own foster map units (read only: only chunk 0 is written)");
	for (uint32_t i = 0; i < have->n; i++)
		if (od_fosters_add(&l, &have->rec[i], have->retired[i]) < 0)
			goto oom;
	lost = fsck_ftab_found(c, &l, &c->hdr, p.blk, why);
	if (lost == -ENOMEM)
		goto oom;
	/* the maps found again that chunk 0 hosts: read, and so claimed */
	for (uint32_t i = have->n; i < l.n; i++)
		if (l.rec[i].chunk == 0 && (ret = fsck_foster_hosted(c, &l.rec[i])) < 0) {
			od_fosters_free(&l);
			return ret;
		}
	if (lost == 0 && l.n < want) {
		char s[120];
		snprintf(s, sizeof(s), "%u of its %u records are in no other chunk's header", want - l.n,
			 want);
		p.str2 = s;
		fix_problem(c, PR_1_FTAB_RECS_MISSING, &p);
		lost = -1;
	}
	p.num = l.n - have->n;
	if (lost == 0 && fix_problem(c, PR_1_FTAB_BAD, &p)) {
		fsck_ftab_plan(c, &l);
		return 0;
	}
	od_fosters_free(&l);
	return 0;
oom:
	od_fosters_free(&l);
	return fsck_oom(c);
}

/* A free metadata pair for a new unit (both halves free), or 0. */
static uint32_t free_pair(const struct fsck_ctx *c)
{
	for (uint32_t b = c->hdr.data_start; b < c->half; b++) {
		int used = 0;
		for (int m = 0; m < 2 && !used; m++) {
			uint32_t x = b + (m ? c->half : 0);
			used = c->owner[x] || (!c->bitmap_unknown[x / OD_BITMAP_BITS_PER_BLOCK] &&
					       ((c->disk_bitmap[x >> 3] >> (x & 7)) & 1));
		}
		if (!used)
			return b;
	}
	return 0;
}

static void mark_pair(struct fsck_ctx *c, uint32_t b, int used)
{
	for (int m = 0; m < 2; m++) {
		uint32_t x = b + (m ? c->half : 0);
		fsck_set_owner(c, x, used ? OWNER_FIXED : 0);
		if (used)
			c->disk_bitmap[x >> 3] |= (uint8_t)(1u << (x & 7));
		else
			c->disk_bitmap[x >> 3] &= (uint8_t) ~(1u << (x & 7));
	}
	if (used)
		c->hdr.free_blocks -= 2;
	else
		c->hdr.free_blocks += 2;
}

int fsck_ftab_make(struct fsck_ctx *c)
{
	const struct od_fosters *l = &c->ftab_new;
	uint32_t need = od_fosters_units_needed(l->n), blocks[OD_FTAB_MAX_UNITS], n = 0;
	struct od_chunk_header *h = &c->hdr;

	if (!c->ftab_make || c->o->mode == FSCK_CHECK_ONLY)
		return 0;
	c->ftab_make = 0;
	/* the old chain's blocks first (a unit with no good copy included:
	 * the chain named it), then free pairs; blocks left over freed */
	for (uint32_t k = 0; k < c->nftab && n < need; k++)
		blocks[n++] = c->ftab[k];
	for (uint32_t k = n; k < need; k++) {
		uint32_t b = free_pair(c);
		if (!b) {
			fsck_note(c, "no room in chunk 0 for the foster table's unit %u: the table "
				     "is left as it is", k);
			while (k-- > n)
				mark_pair(c, blocks[k], 0);
			c->res.unfixed++;
			return 0;
		}
		mark_pair(c, b, 1);
		blocks[k] = b;
	}
	for (uint32_t k = n; k < c->nftab; k++)
		mark_pair(c, c->ftab[k], 0);
	for (uint32_t k = 0; k < need; k++) {
		struct fsck_unit *u;
		struct od_mb_header mh;
		int ret = fsck_unit_new(c, blocks[k], 1, OD_MB_FTAB, 0, &u);
		if (ret < 0)
			return ret;
		od_get_mb_header(u->data, &mh);
		mh.seq = k;
		mh.next = k + 1 < need ? blocks[k + 1] : 0;
		od_put_mb_header(u->data, &mh);
		od_fosters_put_unit(l, k, u->data + OD_MB_HEADER_SIZE);
		c->ftab[k] = blocks[k];
	}
	c->nftab = need;
	od_fosters_put_header(l, need ? blocks[0] : 0, h);
	c->hdr_changed = 1;
	fsck_note(c, "foster records written again: %u in the header, %u in %u table unit%s "
		     "from block %u", h->nfosters, h->ftab_count, need, need == 1 ? "" : "s",
		  h->ftab_start);
	return 0;
}
