/* The learned predictor kept in the volume (doc/design.md, "The learned
 * predictor", and doc/format.md, "Predictor units"): the table's entries
 * in use, packed into a chain of OD_MB_PREDICT units in chunk 0 that the
 * header's pred_start names, under the ro_compat bit
 * OD_FEATURE_RO_COMPAT_PREDICT. Read at open, where a unit with no good
 * copy (or that cannot be one of the chain) drops the table, counted,
 * without failing the open; staged into an ordinary transaction by
 * vol_prepare when due, rewriting the chain in place, so that both copies
 * of every unit agree as any unit's do. Under the volume lock. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/internal.h"
#include "fs/vol_pred.h"

_Static_assert(OD_PRED_ENTRY_SIZE == PRED_ENTRY_BYTES, "predictor entry size");

/* The current copy of the predictor unit at block in c, index idx of its
 * chain, into data: the newer valid copy (by txid), or the cached unit.
 * 0, 1 (the other copy is bad or older: to be rewritten), -EBADMSG (no
 * copy is that unit). */
static int read_unit(struct chunk *c, uint32_t block, uint32_t idx, uint8_t *data,
		     uint8_t *other)
{
	struct buf *b = buf_peek(c, block);
	uint64_t best = 0, seen[2] = { 0, 0 };

	if (b) {
		if (b->units != 1)
			return -EBADMSG;
		memcpy(data, b->data, OD_BLOCK_SIZE);
		best = 1;
	} else {
		for (int copy = 0; copy < 2; copy++) {
			uint8_t *buf = copy ? other : data;
			struct od_mb_header h;
			if (copy && (c->hdr.flags & OD_CHF_SINGLE_COPY))
				break;
			if (store_pread(c->store, buf, OD_BLOCK_SIZE,
					(uint64_t)(copy ? chunk_mirror(c, block) : block) *
						OD_BLOCK_SIZE) < 0)
				continue;
			if (od_verify(buf, OD_BLOCK_SIZE) < 0)
				continue;
			od_get_mb_header(buf, &h);
			if (h.magic != OD_MB_MAGIC || h.chunk != c->index || h.block != block ||
			    h.units != 1)
				continue;
			seen[copy] = h.txid + 1;
			if (h.txid + 1 > best) {
				if (copy)
					memcpy(data, other, OD_BLOCK_SIZE);
				best = h.txid + 1;
			}
		}
	}
	if (!best)
		return -EBADMSG;
	{
		struct od_mb_header h;
		od_get_mb_header(data, &h);
		if (h.type != OD_MB_PREDICT || h.seq != idx)
			return -EBADMSG;
	}
	return !b && !(c->hdr.flags & OD_CHF_SINGLE_COPY) && seen[0] != seen[1];
}

int vol_pred_load(struct fs_volume *v)
{
	struct vol_pred *vp = v->pred;
	struct chunk *c = vol_chunk(v, 0);
	struct predictor *t;
	struct od_pred_head first = { 0 };
	uint8_t *data, *other;
	uint32_t block, got = 0;
	int bad = 0;

	if (!vp || !c || c->offline || !(c->hdr.feature_ro_compat & OD_FEATURE_RO_COMPAT_PREDICT) ||
	    !c->hdr.pred_start)
		return 0;
	t = calloc(1, sizeof(*t));
	data = malloc(OD_BLOCK_SIZE);
	other = malloc(OD_BLOCK_SIZE);
	if (!t || !data || !other) {
		free(t);
		free(data);
		free(other);
		return -ENOMEM;
	}
	pred_init(t);
	vp->nunits = 0;
	for (block = c->hdr.pred_start; block && !bad; vp->nunits++) {
		struct od_mb_header h;
		struct od_pred_head ph;
		int r;
		if (vp->nunits >= PRED_MAX_UNITS || block < c->hdr.data_start ||
		    block >= c->half) {
			bad = 1;
			break;
		}
		/* Ours, whatever its copies hold: a good unit named it (or
		 * the header did), so the next save reuses it. */
		vp->units[vp->nunits] = block;
		r = read_unit(c, block, vp->nunits, data, other);
		if (r < 0) {
			bad = 1;
			vp->nunits++;
			break;
		}
		vp->heal |= r;
		od_get_mb_header(data, &h);
		od_get_pred_head(data + OD_MB_HEADER_SIZE, &ph);
		if (vp->nunits == 0)
			first = ph;
		if (ph.count > OD_PRED_PER_UNIT || ph.total != first.total ||
		    ph.nunits != first.nunits || got + ph.count > first.total) {
			bad = 1;
			vp->nunits++;
			break;
		}
		for (uint32_t i = 0; i < ph.count && !bad; i++)
			bad = pred_entry_get(t, data + OD_MB_HEADER_SIZE + OD_PRED_HEAD_SIZE +
						       i * OD_PRED_ENTRY_SIZE) < 0;
		got += ph.count;
		block = h.next;
	}
	if (!bad && (got != first.total || vp->nunits != first.nunits))
		bad = 1;
	if (bad) {
		vp->dropped++;
	} else {
		memcpy(vp->p.slot, t->slot, sizeof(vp->p.slot));
		vp->p.observed = first.observed;
		vp->p.lives = first.lives;
		vp->p.evicted = first.evicted;
		vp->saved_changes = vp->p.changes;
		vp->last_save = first.saved;
		vp->loaded = 1;
		vp->loaded_entries = got;
	}
	free(t);
	free(data);
	free(other);
	return 0;
}

/* The chain's n units freed and pred_start cleared. */
static void drop_chain(struct chunk *c, struct vol_pred *vp, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		free_meta(c, vp->units[k], 1);
	vp->nunits = 0;
	if (c->hdr.pred_start) {
		c->hdr.pred_start = 0;
		c->header_dirty = 1;
	}
}

void vol_pred_save(struct fs_volume *v, int closing)
{
	struct vol_pred *vp = v->pred;
	struct chunk *c = vol_chunk(v, 0);
	struct od_pred_head ph;
	uint32_t n, need, slot = 0, have;
	int64_t now = (int64_t)time(NULL);

	if (!vp || v->rdonly || !c || c->offline)
		return;
	/* (a copy found bad at open is rewritten by the next transaction,
	 * as a read through the cache would have it) */
	if (!vp->heal && vp->p.changes == vp->saved_changes)
		return;
	if (!vp->heal && !closing &&
	    (vp->p.changes - vp->saved_changes < vp->save_min ||
	     now - vp->save_clock < (int64_t)vp->save_interval))
		return;
	n = pred_entries(&vp->p);
	need = (n + OD_PRED_PER_UNIT - 1) / OD_PRED_PER_UNIT;
	if (need == 0)
		return; /* (changes taken back from a table that holds nothing) */
	have = vp->nunits;
	for (uint32_t k = have; k < need; k++) {
		if (alloc_meta(c, 1, &vp->units[k]) < 0) {
			while (k-- > have)
				free_meta(c, vp->units[k], 1);
			vp->save_failed++;
			return;
		}
	}
	memset(&ph, 0, sizeof(ph));
	ph.total = n;
	ph.nunits = need;
	ph.observed = vp->p.observed;
	ph.lives = vp->p.lives;
	ph.evicted = vp->p.evicted;
	ph.saved = now;
	for (uint32_t k = 0; k < need; k++) {
		struct od_mb_header h;
		struct buf *b;
		uint8_t *e;
		if (buf_fresh(c, vp->units[k], 1, OD_MB_PREDICT, 0, &b) < 0) {
			/* (no memory for a buffer) the units before k are
			 * rewritten already: the whole chain goes, in this
			 * same transaction, and the next save starts anew */
			drop_chain(c, vp, need > have ? need : have);
			vp->save_failed++;
			return;
		}
		od_get_mb_header(b->data, &h);
		h.seq = k;
		h.next = k + 1 < need ? vp->units[k + 1] : 0;
		od_put_mb_header(b->data, &h);
		e = b->data + OD_MB_HEADER_SIZE + OD_PRED_HEAD_SIZE;
		ph.count = 0;
		for (; slot < PRED_SLOTS && ph.count < OD_PRED_PER_UNIT; slot++) {
			if (!vp->p.slot[slot].key)
				continue;
			pred_entry_put(&vp->p, slot, e + ph.count * OD_PRED_ENTRY_SIZE);
			ph.count++;
		}
		od_put_pred_head(b->data + OD_MB_HEADER_SIZE, &ph);
		buf_put(b);
	}
	/* the units the table no longer needs */
	for (uint32_t k = need; k < have; k++)
		free_meta(c, vp->units[k], 1);
	vp->nunits = need;
	if (c->hdr.pred_start != vp->units[0] ||
	    !(c->hdr.feature_ro_compat & OD_FEATURE_RO_COMPAT_PREDICT)) {
		c->hdr.pred_start = vp->units[0];
		c->hdr.feature_ro_compat |= OD_FEATURE_RO_COMPAT_PREDICT;
		c->header_dirty = 1;
	}
	vp->saved_changes = vp->p.changes;
	vp->last_save = now;
	vp->save_clock = now;
	vp->saves++;
	vp->heal = 0;
}

int vol_pred_damaged(struct fs_volume *v, uint32_t block)
{
	struct vol_pred *vp = v->pred;
	struct chunk *c = vol_chunk(v, 0);
	uint32_t k = 0;

	if (!vp || !c)
		return -ENOENT;
	while (k < vp->nunits && vp->units[k] != block)
		k++;
	if (k == vp->nunits)
		return -ENOENT;
	if (pred_entries(&vp->p) == 0)
		drop_chain(c, vp, vp->nunits); /* (a table dropped at open) */
	else
		vp->heal = 1;
	return 0;
}

uint32_t vol_pred_units(struct fs_volume *v, const uint32_t **units)
{
	if (!v->pred)
		return 0;
	*units = v->pred->units;
	return v->pred->nunits;
}

void fs_predictor_save_policy(struct fs_volume *v, uint32_t min_changes, uint32_t interval)
{
	vol_lock(v);
	if (v->pred) {
		v->pred->save_min = min_changes;
		v->pred->save_interval = interval;
	}
	vol_unlock(v);
}
