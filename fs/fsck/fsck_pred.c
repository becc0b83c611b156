/* fsck, part of pass 3: the learned predictor's table in chunk 0
 * (doc/format.md, "Predictor units"). Its chain of OD_MB_PREDICT units,
 * named by the header's pred_start, is owned by the volume as the bitmap
 * is: every unit, both copies, is claimed OWNER_FIXED after the inodes
 * have claimed theirs.
 * Checks:  pred_start only in chunk 0 and only with the ro_compat bit;
 *          each unit inside the metadata area, claimed by nothing else,
 *          with a good copy, of the type, at its index in the chain; its
 *          counts within a unit and adding up to the chain's; no loop, at
 *          most OD_PRED_MAX_UNITS units.
 * Repairs: a damaged chain is cleared (pred_start = 0); its units are then
 *          claimed by no one and pass 5 frees them. No file is touched:
 *          the table is a hint, learnt again. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "fs/fsck/fsck_int.h"

int fsck_any_copy_ok(struct fsck_ctx *c, uint32_t block, uint16_t type)
{
	uint8_t buf[OD_BLOCK_SIZE];
	char why[96];

	if (fsck_unit_find(c, block))
		return 1; /* read already: fsck_unit_get judges it */
	for (int copy = 0; copy < (c->single_copy ? 1 : 2); copy++)
		if (fsck_read_copy(c, buf, sizeof(buf),
				   (uint64_t)(block + (copy ? c->half : 0)) * OD_BLOCK_SIZE, why,
				   sizeof(why)) == 0 &&
		    fsck_copy_ok(c, buf, sizeof(buf), block, type, why, sizeof(why)))
			return 1;
	return 0;
}

/* Why the chain from pred_start is not whole (why[0] == 0: it is), with
 * its units in units[] (*n of them). 0 or a negative errno. */
static int walk(struct fsck_ctx *c, uint32_t *units, uint32_t *n, char *why, size_t wlen)
{
	struct od_pred_head first = { 0 };
	uint32_t block = c->hdr.pred_start, got = 0;

	*n = 0;
	if (c->hdr.chunk_index != 0) {
		snprintf(why, wlen, "set in chunk %u (only chunk 0 keeps the table)",
			 c->hdr.chunk_index);
		return 0;
	}
	if (!(c->hdr.feature_ro_compat & OD_FEATURE_RO_COMPAT_PREDICT)) {
		snprintf(why, wlen, "set without the ro_compat feature 0x%x",
			 OD_FEATURE_RO_COMPAT_PREDICT);
		return 0;
	}
	while (block) {
		struct od_mb_header h;
		struct od_pred_head ph;
		struct fsck_unit *u;
		int ret, incomplete = c->incomplete;
		uint32_t lost = c->lost_units;

		if (*n >= OD_PRED_MAX_UNITS) {
			snprintf(why, wlen, "more than %u units", OD_PRED_MAX_UNITS);
			return 0;
		}
		for (uint32_t k = 0; k < *n; k++)
			if (units[k] == block) {
				snprintf(why, wlen, "the chain loops at block %u", block);
				return 0;
			}
		if (!fsck_meta_place(c, block, 1)) {
			snprintf(why, wlen, "unit %u outside the metadata area", block);
			return 0;
		}
		if (c->owner[block] || c->owner[block + c->half]) {
			snprintf(why, wlen, "unit %u is claimed by something else too", block);
			return 0;
		}
		if (!fsck_any_copy_ok(c, block, OD_MB_PREDICT)) {
			snprintf(why, wlen, "unit %u has no good copy", block);
			return 0;
		}
		ret = fsck_unit_get(c, block, 1, OD_MB_PREDICT, 0, &u);
		if (ret == -EUCLEAN) {
			snprintf(why, wlen, "unit %u is read as another kind of unit", block);
			return 0;
		}
		if (ret < 0)
			return ret;
		if (!u->data || u->modified) {
			/* (lost with the chain, which goes: nothing else to
			 * look for, no owner unseen) */
			c->incomplete = incomplete;
			c->lost_units = lost;
			snprintf(why, wlen, "unit %u has no good copy", block);
			return 0;
		}
		od_get_mb_header(u->data, &h);
		od_get_pred_head(u->data + OD_MB_HEADER_SIZE, &ph);
		if (*n == 0)
			first = ph;
		if (h.seq != *n || ph.count > OD_PRED_PER_UNIT || ph.total != first.total ||
		    ph.nunits != first.nunits || got + ph.count > first.total) {
			snprintf(why, wlen, "unit %u: index %u, %u entries of %u, chain of %u units",
				 block, h.seq, ph.count, ph.total, ph.nunits);
			return 0;
		}
		got += ph.count;
		units[(*n)++] = block;
		block = h.next;
	}
	if (got != first.total || *n != first.nunits)
		snprintf(why, wlen, "%u entries in %u units, its units say %u in %u", got, *n,
			 first.total, first.nunits);
	return 0;
}

int fsck_pred(struct fsck_ctx *c)
{
	uint32_t units[OD_PRED_MAX_UNITS], n = 0;
	char why[128] = "";
	int ret;

	if (!c->hdr.pred_start)
		return 0;
	ret = walk(c, units, &n, why, sizeof(why));
	if (ret < 0)
		return ret;
	if (why[0]) {
		struct fsck_pctx p = { .blk = c->hdr.pred_start, .str = why };
		if (fix_problem(c, PR_3_PRED_BAD, &p)) {
			c->hdr.pred_start = 0;
			c->hdr_changed = 1;
			return 0;
		}
		/* (left as it is: the units read are still the table's) */
	}
	for (uint32_t k = 0; k < n; k++) {
		fsck_set_owner(c, units[k], OWNER_FIXED);
		fsck_set_owner(c, units[k] + c->half, OWNER_FIXED);
	}
	return 0;
}
