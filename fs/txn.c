/* Transactions over doubled metadata, and recovery. A sync is one
 * transaction T over every chunk it touches:
 *   1. each chunk's dirty list (area T % 2) names the units T writes and
 *      the copy of each T writes first; every list, and all data written
 *      since the last sync, is flushed;
 *   2. T writes that copy of each unit; a flush. T is committed when every
 *      such copy of every participant verifies with txid T: there is no
 *      separate commit record, so there is nothing to tear;
 *   3. T writes the other copy of each unit with the same bytes (txid T);
 *      a flush. Only then are T's calls answered: every change a client
 *      was told about is on disk twice, so damage to one copy at any
 *      moment loses none of it.
 * The commit mark. A second copy carrying txid T is written only after
 * every first copy of T is durable, so no crash can leave one: recovery
 * and fsck that find any unit's second copy with txid T know T committed,
 * and take a first copy that no longer verifies (a bad sector, not a torn
 * write) from its second copy instead of rolling T back. Without a mark,
 * a first copy that does not verify is a torn write: T is rolled back,
 * and none of its calls was answered.
 * Recovery reads only the dirty lists and the units they name: the last
 * transaction is rolled forward (the first copy over the other) when it
 * committed, back (the other copy over the first) when it did not. After
 * every answered transaction both copies of every unit agree.
 *
 * One flush for steps 1 and 2, when a crash that lands some units of T and
 * not its lists is still undone by recovery. It is, when every
 * participant's newest list on disk is T-1's (in the other area, which T
 * does not touch) and names every unit T writes there, at the copy T does
 * not write first: recovery then finds T-1 newest where T's list is
 * missing, T-1 committed, and its roll forward overwrites every copy T
 * wrote. Copies are chosen by txid parity, so a unit changed by T-1 and T
 * qualifies. A unit T-1 did not name, a participant that sat T-1 out, or
 * data blocks written since the last transaction (they must be durable
 * before the metadata pointing at them) take the separate flush. Hot units
 * (a directory taking creates, its map block, the chunk header) are named
 * by every transaction, so a stream of metadata changes commits with two
 * flushes each.
 *
 * Held entries. A unit T-1 changed and T does not is still named by T's
 * list when T writes one in that chunk anyway: as held (OD_DLE_HELD: not
 * written; both its copies hold the current version, and the named one,
 * T's parity, is copied over the other by recovery whatever became of T),
 * for at most TXN_HOLD_MAX transactions. A stream that changes a few units
 * by turns (a CREATE in one directory, then in another, as several
 * clients do) then finds each unit it changes named by the list before,
 * and its transactions take two flushes instead of three. A unit is held
 * only while its blocks are in use: once freed they may take another
 * unit, which the held name must not overwrite. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/internal.h"

#define DL_ENTRY_SIZE 8u
#define TXN_HOLD_MAX 32u    /* transactions a unit stays named after its change */
#define TXN_HOLD_UNITS 64u  /* held entries in one chunk's list, at most */
#define DL_FIRST_HEADER 16u /* nblocks, nentries, nparts, reserved */

static uint32_t dl_capacity(const struct chunk *c)
{
	return (c->hdr.dirty_blocks * OD_MB_PAYLOAD - DL_FIRST_HEADER) / DL_ENTRY_SIZE;
}

static uint32_t dl_area(const struct chunk *c, uint64_t txid)
{
	return c->hdr.dirty_start + ((txid & 1) ? c->half : 0);
}

static uint64_t copy_offset(const struct chunk *c, uint32_t block, uint8_t copy)
{
	return (uint64_t)(copy ? chunk_mirror(c, block) : block) * OD_BLOCK_SIZE;
}

/* The entry for block in e[0..n), sorted by block, or NULL. */
static const struct dl_entry *entry_find(const struct dl_entry *e, uint32_t n, uint32_t block)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (e[mid].block < block)
			lo = mid + 1;
		else if (e[mid].block > block)
			hi = mid;
		else
			return &e[mid];
	}
	return NULL;
}

void txn_forget_ondisk(struct chunk *c)
{
	free(c->ondisk);
	c->ondisk = NULL;
	c->nondisk = 0;
	c->ondisk_txid = 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct dl_entry *x = a, *y = b;

	return x->block < y->block ? -1 : x->block > y->block;
}

/* --- the list of one transaction in one chunk ---------------------------- */

/* A unit the transaction writes: its content as it was when the
 * transaction was prepared (later changes belong to the next one). */
struct pending {
	uint32_t block;
	uint16_t units;
	uint8_t copy;       /* which copy this transaction writes first (held: names) */
	uint8_t held;       /* named, not written: a held entry (data NULL) */
	uint8_t age;        /* of a held one: its age in the chunk's newest list */
	uint8_t fresh;      /* the buffer's fresh: no committed state uses its blocks */
	int heal_copy;      /* the buffer's heal_copy, given back if the write fails */
	uint8_t *data;      /* sealed with the transaction's txid; owned */
};

struct chunk_txn {
	struct chunk *c;
	struct pending *p;
	uint32_t n, cap;
	int single_copy;    /* read at prepare: the header is not read unlocked */
	int list_last;      /* the list is the chunk's last write before a flush */
};

/* A buffer for a copy of a unit of units blocks. Copies come back to a
 * few spares per size when their transaction ends: from malloc and back,
 * glibc gave their pages back at each free and every commit faulted them
 * in again. */
static uint8_t *copy_buf(struct fs_volume *v, uint16_t units)
{
	if (units >= 1 && units <= OD_MAX_DIR_UNIT && v->nunit_spare[units - 1])
		return v->unit_spare[units - 1][--v->nunit_spare[units - 1]];
	return malloc((size_t)units * OD_BLOCK_SIZE);
}

static void copy_buf_done(struct fs_volume *v, uint8_t *buf, uint16_t units)
{
	if (buf && units >= 1 && units <= OD_MAX_DIR_UNIT &&
	    v->nunit_spare[units - 1] < TXN_SPARE_PER_SIZE)
		v->unit_spare[units - 1][v->nunit_spare[units - 1]++] = buf;
	else
		free(buf);
}

void txn_free_spares(struct fs_volume *v)
{
	for (uint32_t u = 0; u < OD_MAX_DIR_UNIT; u++)
		while (v->nunit_spare[u])
			free(v->unit_spare[u][--v->nunit_spare[u]]);
}

/* Room for one more unit in ct: 0 or -ENOMEM. */
static int pend_room(struct chunk_txn *ct)
{
	uint32_t ncap;
	struct pending *np;

	if (ct->n < ct->cap)
		return 0;
	ncap = ct->cap ? ct->cap * 2 : 64;
	np = realloc(ct->p, ncap * sizeof(*np));
	if (!np)
		return -ENOMEM;
	ct->p = np;
	ct->cap = ncap;
	return 0;
}

/* Queue a unit whose content is data (units blocks, sealed here). */
static int pend_push(struct chunk_txn *ct, uint32_t block, uint16_t units, const uint8_t *data,
		     int heal_copy, uint64_t txid)
{
	size_t len = (size_t)units * OD_BLOCK_SIZE;
	struct od_mb_header h;
	struct pending *p;

	if (pend_room(ct) < 0)
		return -ENOMEM;
	p = &ct->p[ct->n];
	p->data = copy_buf(ct->c->vol, units);
	if (!p->data)
		return -ENOMEM;
	memcpy(p->data, data, len);
	od_get_mb_header(p->data, &h);
	h.txid = txid;
	od_put_mb_header(p->data, &h);
	od_seal(p->data, len);
	p->block = block;
	p->units = units;
	p->held = 0;
	p->age = 0;
	p->fresh = 0;
	p->heal_copy = heal_copy;
	/* First the copy on the side of this transaction's list (dl_area):
	 * the chunk header, the list's neighbour, then goes out in the same
	 * write, and a unit T-1 wrote is written at the other copy first. A
	 * bad copy is rewritten first: the good one stays whole until the new
	 * version is durable. */
	p->copy = (uint8_t)(txid & 1);
	if (heal_copy >= 0)
		p->copy = (uint8_t)heal_copy;
	if (ct->c->hdr.flags & OD_CHF_SINGLE_COPY)
		p->copy = 0;
	ct->n++;
	return 0;
}

/* Name e's unit in the list without writing it: a held entry, at the copy
 * this transaction writes first, so that the next one, writing the other
 * copy first, may take one flush (the top of the file). */
static int pend_hold(struct chunk_txn *ct, const struct dl_entry *e, uint64_t txid)
{
	struct pending *p;

	if (pend_room(ct) < 0)
		return -ENOMEM;
	p = &ct->p[ct->n++];
	memset(p, 0, sizeof(*p));
	p->block = e->block;
	p->units = e->units;
	p->copy = (uint8_t)(txid & 1);
	p->held = 1;
	p->age = e->age;
	p->heal_copy = -1;
	return 0;
}

/* May e, named by the chunk's newest list, be named once more? The chunk
 * writes a list anyway (units of its own are queued), the unit is not
 * written by this transaction, and its blocks are still in use (freed,
 * they may take another unit, which the held name must not overwrite). */
static int may_hold(const struct chunk_txn *ct, const struct dl_entry *e, uint32_t nheld)
{
	struct chunk *c = ct->c;
	const struct buf *b = buf_peek(c, e->block);

	if (!(c->hdr.feature_incompat & OD_FEATURE_INCOMPAT_HELD_ENTRIES) || !c->bitmap ||
	    ct->single_copy || e->age >= TXN_HOLD_MAX || nheld >= TXN_HOLD_UNITS ||
	    (b && b->dirty))
		return 0;
	for (uint32_t k = e->block; k < e->block + e->units; k++)
		if (!bitmap_test(c, k))
			return 0;
	return 1;
}

static int add_held(struct chunk_txn *ct, uint64_t txid)
{
	struct chunk *c = ct->c;
	uint32_t nheld = 0;
	int ret = 0;

	if (!ct->n)
		return 0;
	for (uint32_t i = 0; i < c->nondisk && ret == 0; i++)
		if (may_hold(ct, &c->ondisk[i], nheld)) {
			ret = pend_hold(ct, &c->ondisk[i], txid);
			nheld++;
		}
	return ret;
}

static int write_list(struct chunk_txn *ct, uint64_t txid, uint32_t nparts)
{
	struct chunk *c = ct->c;
	uint32_t per_first = (OD_MB_PAYLOAD - DL_FIRST_HEADER) / DL_ENTRY_SIZE;
	uint32_t per_block = OD_MB_PAYLOAD / DL_ENTRY_SIZE;
	uint32_t nblocks = 1 + (ct->n > per_first ? (ct->n - per_first + per_block - 1) / per_block : 0);
	uint32_t area = dl_area(c, txid), k = 0;
	uint8_t blk[OD_BLOCK_SIZE];

	if (ct->n > dl_capacity(c))
		return -EFBIG;
	for (uint32_t i = 0; i < nblocks; i++) {
		struct od_mb_header h = {
			.magic = OD_MB_MAGIC,
			.type = OD_MB_DIRTY_LIST,
			.units = 1,
			.chunk = c->index,
			.block = c->hdr.dirty_start + i,
			.seq = i,
			.txid = txid,
		};
		uint8_t *p = blk + OD_MB_HEADER_SIZE;
		uint32_t room = i == 0 ? per_first : per_block;
		int ret;

		memset(blk, 0, sizeof(blk));
		od_put_mb_header(blk, &h);
		if (i == 0) {
			struct od_dl_head dh = { .nblocks = nblocks, .nentries = ct->n,
						 .nparts = nparts };
			od_put_dl_head(p, &dh);
			p += DL_FIRST_HEADER;
		}
		for (uint32_t j = 0; j < room && k < ct->n; j++, k++) {
			struct od_dl_entry e = {
				.block = ct->p[k].block,
				.units = ct->p[k].units,
				.copy = ct->p[k].copy,
				.flags = ct->p[k].held ? OD_DLE_HELD : 0,
			};
			od_put_dl_entry(p + j * DL_ENTRY_SIZE, &e);
		}
		od_seal(blk, sizeof(blk));
		if (ct->list_last && i + 1 == nblocks) /* FUA where it saves the flush */
			ret = store_pwrite_last(c->store, blk, sizeof(blk),
						(uint64_t)(area + i) * OD_BLOCK_SIZE);
		else
			ret = store_pwrite(c->store, blk, sizeof(blk),
					   (uint64_t)(area + i) * OD_BLOCK_SIZE);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static void chunk_txn_release(struct chunk_txn *ct)
{
	for (uint32_t i = 0; i < ct->n; i++)
		copy_buf_done(ct->c->vol, ct->p[i].data, ct->p[i].units);
	free(ct->p);
	ct->p = NULL;
	ct->n = ct->cap = 0;
}

/* After the transaction committed: its list is the chunk's newest on disk
 * (without memory for it, it stays unknown: the next one takes two flushes). */
static void set_ondisk(struct chunk_txn *ct, uint64_t txid)
{
	struct chunk *c = ct->c;
	struct dl_entry *e = malloc((ct->n ? ct->n : 1) * sizeof(*e));

	txn_forget_ondisk(c);
	if (!e)
		return;
	for (uint32_t i = 0; i < ct->n; i++) {
		e[i].block = ct->p[i].block;
		e[i].units = ct->p[i].units;
		e[i].copy = ct->p[i].copy;
		e[i].age = ct->p[i].held ? (uint8_t)(ct->p[i].age + 1) : 0;
	}
	qsort(e, ct->n, sizeof(*e), cmp_entry);
	c->ondisk = e;
	c->nondisk = ct->n;
	c->ondisk_txid = txid;
}

/* Does the list on disk name a range overlapping p's at the copy p writes? */
static int ondisk_overlaps(const struct chunk *c, const struct pending *p)
{
	for (uint32_t i = 0; i < c->nondisk; i++) {
		const struct dl_entry *e = &c->ondisk[i];
		if (e->copy == p->copy && e->block < p->block + p->units &&
		    p->block < e->block + e->units)
			return 1;
	}
	return 0;
}

/* May t write its lists and units behind one flush? (the top of the file)
 * A fresh unit need not be named by the list before: where t's list is
 * lost, nothing the last committed state holds points at its blocks, and
 * the roll forward of the list before cannot reach the copy t wrote. */
static int one_flush_ok(const struct txn *t)
{
	for (uint32_t i = 0; i < t->nchunks; i++) {
		const struct chunk_txn *ct = &t->ct[i];
		const struct chunk *c = ct->c;
		if (!ct->n)
			continue;
		if (ct->single_copy || c->ondisk_txid + 1 != t->txid)
			return 0;
		for (uint32_t k = 0; k < ct->n; k++) {
			const struct pending *p = &ct->p[k];
			const struct dl_entry *e;
			if (p->held)
				continue; /* not written */
			e = entry_find(c->ondisk, c->nondisk, p->block);
			if (!e && p->fresh && !ondisk_overlaps(c, p))
				continue;
			if (!e || e->units != p->units || e->copy == p->copy)
				return 0;
		}
	}
	return 1;
}

/* --- prepare, write, finish ---------------------------------------------- */

static void txn_free(struct txn *t)
{
	for (uint32_t i = 0; i < t->nchunks; i++)
		chunk_txn_release(&t->ct[i]);
	free(t->ct);
	t->ct = NULL;
}

int txn_prepare(struct fs_volume *v, struct txn *t)
{
	struct buf *b;
	int ret = 0;

	memset(t, 0, sizeof(*t));
	t->ct = calloc(v->nchunks, sizeof(*t->ct));
	if (!t->ct)
		return -ENOMEM;
	t->nchunks = v->nchunks;
	t->txid = v->txid + 1;
	for (uint32_t i = 0; i < v->nchunks; i++) {
		t->ct[i].c = &v->chunks[i];
		t->ct[i].single_copy = !!(v->chunks[i].hdr.flags & OD_CHF_SINGLE_COPY);
	}
	for (b = v->dirty.dirty_next; b != &v->dirty && ret == 0; b = b->dirty_next) {
		struct chunk_txn *ct = &t->ct[b->c->index];
		ret = pend_push(ct, b->block, (uint16_t)b->units, b->data, b->heal_copy, t->txid);
		if (ret == 0)
			ct->p[ct->n - 1].fresh = (uint8_t)b->fresh;
	}
	for (uint32_t i = 0; i < v->nchunks && ret == 0; i++)
		ret = add_held(&t->ct[i], t->txid);
	if (ret < 0) {
		txn_free(t);
		return ret;
	}
	for (uint32_t i = 0; i < v->nchunks; i++)
		t->nparts += t->ct[i].n > 0;
	if (t->nparts == 0) {
		txn_free(t);
		return 0;
	}
	t->one_flush = !v->data_written && one_flush_ok(t);
	v->data_written = 0; /* this transaction's flushes cover it */
	/* What is queued is the transaction's: the buffers are clean again
	 * (a change from now on is the next one's) and stay cached until it
	 * ends, so that nothing reads the copies it is writing. */
	while ((b = v->dirty.dirty_next) != &v->dirty) {
		b->heal_copy = -1;
		b->pinned = 1;
		buf_undirty(b);
	}
	for (uint32_t i = 0; i < v->nchunks; i++)
		chunk_freeze_frees(&v->chunks[i]);
	return 0;
}

/* Every unit of t at its first copy (second: the other one). A flush
 * follows, so each chunk's last unit goes through store_pwrite_last (FUA
 * over NBD where it saves that store's flush; store.h). */
static int write_copies(struct txn *t, int second)
{
	int ret = 0;

	for (uint32_t i = 0; i < t->nchunks && ret == 0; i++) {
		struct chunk_txn *ct = &t->ct[i];
		uint32_t last = ct->n;
		if (second && ct->single_copy)
			continue;
		for (uint32_t k = 0; k < ct->n; k++)
			if (!ct->p[k].held)
				last = k;
		for (uint32_t k = 0; k < ct->n && ret == 0; k++) {
			const struct pending *p = &ct->p[k];
			uint8_t copy = (uint8_t)(second ? 1 - p->copy : p->copy);
			size_t len = (size_t)p->units * OD_BLOCK_SIZE;
			if (p->held)
				continue;
			if (k == last)
				ret = store_pwrite_last(ct->c->store, p->data, len,
							copy_offset(ct->c, p->block, copy));
			else
				ret = store_pwrite(ct->c->store, p->data, len,
						   copy_offset(ct->c, p->block, copy));
		}
	}
	return ret;
}

int txn_write(struct fs_volume *v, struct txn *t)
{
	int ret = 0;

	/* 1: the lists; one flush makes them durable together with every data
	 * block written since the last sync (unless they may share the units'
	 * flush: one_flush_ok). */
	for (uint32_t i = 0; i < t->nchunks && ret == 0; i++)
		if (t->ct[i].n && !t->ct[i].single_copy) {
			t->ct[i].list_last = !t->one_flush;
			ret = write_list(&t->ct[i], t->txid, t->nparts);
		}
	if (ret == 0 && !t->one_flush && (ret = vol_flush(v)) == 0)
		t->flushes++;
	/* 2: the first copy of every unit; durable, T is committed. */
	if (ret == 0)
		ret = write_copies(t, 0);
	if (ret == 0 && (ret = vol_flush(v)) == 0)
		t->flushes++;
	/* 3: the second copy, the commit mark; durable, T may be answered. */
	if (ret == 0)
		ret = write_copies(t, 1);
	if (ret == 0 && (ret = vol_flush(v)) == 0)
		t->flushes++;
	return ret;
}

int txn_finish(struct fs_volume *v, struct txn *t, int result)
{
	int ret = result;

	for (uint32_t i = 0; i < t->nchunks; i++) {
		struct chunk_txn *ct = &t->ct[i];
		for (uint32_t k = 0; k < ct->n; k++) {
			struct pending *p = &ct->p[k];
			struct buf *b = p->held ? NULL : buf_peek(ct->c, p->block);
			if (!b)
				continue; /* held, or freed meanwhile */
			b->pinned = 0;
			if (result == 0 && p->fresh)
				b->fresh = 0; /* committed: in use from now on */
			/* Failed: what it carried is to be written again. */
			if (result < 0) {
				buf_dirty(b);
				if (b->heal_copy < 0)
					b->heal_copy = p->heal_copy;
			}
		}
	}
	if (result == 0) {
		v->txns++;
		v->txns_one_flush += t->one_flush != 0;
		v->txn_flushes += t->flushes;
		for (uint32_t i = 0; i < t->nchunks; i++) {
			if (!t->ct[i].n)
				continue;
			for (uint32_t k = 0; k < t->ct[i].n; k++)
				v->held_named += t->ct[i].p[k].held;
			set_ondisk(&t->ct[i], t->txid);
		}
	} else {
		/* What reached the disk is not known: lists may be half there,
		 * data not yet durable, first copies committed and second ones
		 * half written. The next transaction takes two flushes and the
		 * next txid: rewriting this one's list in place could tear it
		 * and leave the list before to roll second copies forward. */
		for (uint32_t i = 0; i < v->nchunks; i++)
			txn_forget_ondisk(&v->chunks[i]);
		v->data_written = 1;
	}
	v->txid = t->txid;
	for (uint32_t i = 0; i < v->nchunks; i++)
		chunk_thaw_frees(&v->chunks[i], result == 0);
	txn_free(t);
	t->finished = 1;
	return ret;
}


/* --- recovery ------------------------------------------------------------ */

struct dlist {
	uint64_t txid;
	uint32_t nparts;
	uint32_t n;
	struct od_dl_entry *e;
};

/* Read the list in one area; -ENOENT when it holds no valid list. */
static int read_list(struct chunk *c, uint32_t area, struct dlist *out)
{
	uint8_t blk[OD_BLOCK_SIZE];
	struct od_mb_header h;
	struct od_dl_head dh;
	uint32_t per_first = (OD_MB_PAYLOAD - DL_FIRST_HEADER) / DL_ENTRY_SIZE;
	uint32_t per_block = OD_MB_PAYLOAD / DL_ENTRY_SIZE;
	uint32_t k = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = store_pread(c->store, blk, sizeof(blk), (uint64_t)area * OD_BLOCK_SIZE);
	if (ret < 0)
		return ret;
	if (od_verify(blk, sizeof(blk)) < 0)
		return -ENOENT;
	od_get_mb_header(blk, &h);
	od_get_dl_head(blk + OD_MB_HEADER_SIZE, &dh);
	if (h.type != OD_MB_DIRTY_LIST || h.seq != 0 || dh.nblocks == 0 ||
	    dh.nblocks > c->hdr.dirty_blocks || dh.nentries > dl_capacity(c))
		return -ENOENT;
	out->txid = h.txid;
	out->nparts = dh.nparts;
	out->e = calloc(dh.nentries ? dh.nentries : 1, sizeof(*out->e));
	if (!out->e)
		return -ENOMEM;
	for (uint32_t i = 0; i < dh.nblocks; i++) {
		uint32_t room = i == 0 ? per_first : per_block;
		const uint8_t *p = blk + OD_MB_HEADER_SIZE + (i == 0 ? DL_FIRST_HEADER : 0);
		if (i > 0) {
			ret = store_pread(c->store, blk, sizeof(blk),
					  (uint64_t)(area + i) * OD_BLOCK_SIZE);
			if (ret < 0)
				goto bad;
			od_get_mb_header(blk, &h);
			if (od_verify(blk, sizeof(blk)) < 0 || h.type != OD_MB_DIRTY_LIST ||
			    h.seq != i || h.txid != out->txid)
				goto bad;
		}
		for (uint32_t j = 0; j < room && k < dh.nentries; j++, k++) {
			od_get_dl_entry(p + j * DL_ENTRY_SIZE, &out->e[k]);
			if (out->e[k].units == 0 || out->e[k].units > c->hdr.dir_unit ||
			    out->e[k].copy > 1 || out->e[k].block + out->e[k].units > c->half ||
			    (out->e[k].flags & ~OD_DLE_KNOWN) ||
			    ((out->e[k].flags & OD_DLE_HELD) &&
			     !(c->hdr.feature_incompat & OD_FEATURE_INCOMPAT_HELD_ENTRIES)))
				goto bad;
		}
	}
	out->n = dh.nentries;
	return 0;
bad:
	free(out->e);
	memset(out, 0, sizeof(*out));
	return -ENOENT;
}

/* The newest valid list of c (out->e NULL: none); *had gets bit k set when
 * area k held a valid list. Each area holds only txids of its parity. */
static int read_newest_list(struct chunk *c, struct dlist *out, uint8_t *had)
{
	struct dlist a, b;
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = read_list(c, dl_area(c, 0), &a)) < 0 && ret != -ENOENT)
		return ret;
	if ((ret = read_list(c, dl_area(c, 1), &b)) < 0 && ret != -ENOENT) {
		free(a.e);
		return ret;
	}
	if (a.e && (a.txid & 1))
		free(a.e), memset(&a, 0, sizeof(a));
	if (b.e && !(b.txid & 1))
		free(b.e), memset(&b, 0, sizeof(b));
	*had = (uint8_t)((a.e != NULL) | (b.e != NULL) << 1);
	if (a.e && (!b.e || a.txid > b.txid)) {
		*out = a;
		free(b.e);
	} else {
		*out = b;
		free(a.e);
	}
	return 0;
}

/* Is a copy of e's unit whole? Its bytes into buf, its txid into *txid. */
static int copy_whole(struct chunk *c, const struct od_dl_entry *e, uint8_t copy, uint8_t *buf,
		      uint64_t *txid)
{
	size_t len = (size_t)e->units * OD_BLOCK_SIZE;
	struct od_mb_header h;

	if (store_pread(c->store, buf, len, copy_offset(c, e->block, copy)) < 0)
		return 0;
	if (od_verify(buf, len) < 0)
		return 0;
	od_get_mb_header(buf, &h);
	*txid = h.txid;
	return h.chunk == c->index && h.block == e->block;
}

/* Does a copy of e's unit carry a whole unit of transaction txid (0: any)? */
static int copy_is(struct chunk *c, const struct od_dl_entry *e, uint8_t copy, uint64_t txid,
		   uint8_t *buf)
{
	uint64_t t;

	return copy_whole(c, e, copy, buf, &t) && (txid == 0 || t == txid);
}

/* Which copy of e holds the current version once the list of transaction
 * txid is rolled forward or back; its bytes into buf. -1 when none does.
 * Back: the other copy. Forward: the copy carrying txid, the written one
 * first; the other one carries it when the written one was hit by a bad
 * sector (or lost its write) after the commit, being the commit mark.
 * Failing both, the written copy where whole: fsck's rollback repair
 * leaves older bytes in both. A held entry names one of two equal copies
 * that took no part in txid: the whole one with the greater txid below
 * txid (a stale one lost a write; a newer one is a next transaction's,
 * torn), the named one when they tie. */
static int recovery_source(struct chunk *c, const struct od_dl_entry *e, uint64_t txid,
			   int forward, uint8_t *buf)
{
	uint8_t other = (uint8_t)(1 - e->copy);
	uint64_t t;

	if (e->flags & OD_DLE_HELD) {
		uint64_t tn = 0;
		int named = copy_whole(c, e, e->copy, buf, &tn) && tn < txid;
		if (copy_whole(c, e, other, buf, &t) && t < txid && (!named || t > tn))
			return other; /* (buf holds it) */
		if (!named)
			return -1;
		copy_whole(c, e, e->copy, buf, &tn);
		return e->copy;
	}
	if (!forward)
		return copy_is(c, e, other, 0, buf) ? other : -1;
	if (copy_is(c, e, e->copy, txid, buf))
		return e->copy;
	if (copy_is(c, e, other, txid, buf))
		return other;
	return copy_is(c, e, e->copy, 0, buf) ? e->copy : -1;
}

int txn_recover(struct fs_volume *v, struct fs_recovery_stats *st)
{
	struct dlist *dl = calloc(v->nchunks, sizeof(*dl));
	uint8_t *had = calloc(v->nchunks, 1);
	uint8_t *buf = malloc((size_t)OD_BLOCK_SIZE * OD_MAX_DIR_UNIT);
	uint64_t newest = 0;
	uint32_t parts = 0, nparts = 0;
	int committed = 1, marked = 0, ret = 0;

	memset(st, 0, sizeof(*st));
	if (!dl || !had || !buf) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < v->nchunks; i++) {
		struct chunk *c = &v->chunks[i];
		if ((c->hdr.flags & OD_CHF_SINGLE_COPY) || c->offline)
			continue;
		if ((ret = read_newest_list(c, &dl[i], &had[i])) < 0)
			goto out;
		if (dl[i].e && dl[i].txid > newest)
			newest = dl[i].txid;
		st->lists_read += (had[i] & 1) + (had[i] >> 1);
	}
	/* Did the newest transaction commit? Yes if any second copy of it was
	 * written (the mark: the top of the file); else if every first copy
	 * of every participant carries it. */
	for (uint32_t i = 0; i < v->nchunks && newest; i++) {
		struct chunk *c = &v->chunks[i];
		if (!dl[i].e || dl[i].txid != newest)
			continue;
		parts++;
		nparts = dl[i].nparts;
		for (uint32_t k = 0; k < dl[i].n; k++) {
			const struct od_dl_entry *e = &dl[i].e[k];
			if (e->flags & OD_DLE_HELD)
				continue;
			if (!marked && copy_is(c, e, (uint8_t)(1 - e->copy), newest, buf))
				marked = 1;
			if (committed && !copy_is(c, e, e->copy, newest, buf))
				committed = 0;
		}
	}
	/* A participant missing from the count is either one whose list never
	 * became durable (then no copy was written anywhere: not committed) or
	 * an offline chunk, which fsck repairs; the others decide. A retired
	 * chunk is never a participant. */
	{
		uint32_t offline = 0;
		for (uint32_t i = 0; i < v->nchunks; i++)
			offline += v->chunks[i].offline && !v->chunks[i].retired;
		if (parts > nparts || parts + offline < nparts)
			committed = 0;
	}
	committed |= marked;
	st->newest_txid = newest;
	st->committed = newest ? committed : 1;
	st->marked = marked;
	for (uint32_t i = 0; i < v->nchunks; i++) {
		struct chunk *c = &v->chunks[i];
		int forward = !dl[i].e || dl[i].txid != newest || committed;
		for (uint32_t k = 0; k < dl[i].n; k++) {
			const struct od_dl_entry *e = &dl[i].e[k];
			int from = recovery_source(c, e, dl[i].txid, forward, buf);
			size_t len = (size_t)e->units * OD_BLOCK_SIZE;
			if (from < 0) {
				/* Rolling back a unit that never had an older
				 * version (fresh in that transaction) is fine;
				 * anything else is damage for fsck. */
				if (forward || (e->flags & OD_DLE_HELD)) {
					c->hdr.state = OD_STATE_NEEDS_REPAIR;
					st->damaged++;
				}
				continue;
			}
			st->healed += forward && !(e->flags & OD_DLE_HELD) && from != e->copy;
			ret = store_pwrite(c->store, buf, len, copy_offset(c, e->block, (uint8_t)(1 - from)));
			if (ret < 0)
				goto out;
			st->units_copied++;
		}
	}
	if (st->units_copied && (ret = vol_flush(v)) < 0)
		goto out;
	/* Both copies agree now: the lists are spent. Left in place, a later
	 * recovery would replay them against copies that have aged since. */
	memset(buf, 0, OD_BLOCK_SIZE);
	for (uint32_t i = 0; i < v->nchunks && ret == 0; i++)
		for (uint32_t k = 0; k < 2 && ret == 0; k++)
			if (had[i] & (1u << k))
				ret = store_pwrite(v->chunks[i].store, buf, OD_BLOCK_SIZE,
						   (uint64_t)dl_area(&v->chunks[i], k) * OD_BLOCK_SIZE);
	if (ret == 0 && st->lists_read)
		ret = vol_flush(v);
	for (uint32_t i = 0; i < v->nchunks; i++)
		txn_forget_ondisk(&v->chunks[i]);
	if (newest > v->txid)
		v->txid = newest;
out:
	for (uint32_t i = 0; dl && i < v->nchunks; i++)
		free(dl[i].e);
	free(dl);
	free(had);
	free(buf);
	return ret;
}

/* --- the scrub's look at the newest list ---------------------------------- */

int txn_check_ondisk_list(struct chunk *c)
{
	uint32_t area, nblocks = 1;
	uint8_t blk[OD_BLOCK_SIZE];
	struct od_mb_header h;
	struct od_dl_head dh;

	if (!c->ondisk_txid || (c->hdr.flags & OD_CHF_SINGLE_COPY))
		return 1;
	area = dl_area(c, c->ondisk_txid);
	for (uint32_t i = 0; i < nblocks; i++) {
		int ret = store_pread(c->store, blk, sizeof(blk), (uint64_t)(area + i) * OD_BLOCK_SIZE);
		if (ret < 0)
			return ret;
		od_get_mb_header(blk, &h);
		if (od_verify(blk, sizeof(blk)) < 0 || h.type != OD_MB_DIRTY_LIST || h.seq != i ||
		    h.txid != c->ondisk_txid || h.chunk != c->index)
			goto bad;
		if (i == 0) {
			od_get_dl_head(blk + OD_MB_HEADER_SIZE, &dh);
			if (dh.nblocks == 0 || dh.nblocks > c->hdr.dirty_blocks)
				goto bad;
			nblocks = dh.nblocks;
		}
	}
	return 0;
bad:
	txn_forget_ondisk(c);
	return -EBADMSG;
}

/* --- a chunk going offline -------------------------------------------------- */

int txn_empty_list(struct fs_volume *v, struct chunk *c)
{
	struct chunk_txn ct = { .c = c };
	uint64_t txid = v->txid + 1;
	int ret;

	if (c->hdr.flags & OD_CHF_SINGLE_COPY)
		return 0;
	ret = write_list(&ct, txid, 1);
	if (ret == 0)
		ret = store_flush(c->store);
	if (ret < 0) {
		txn_forget_ondisk(c);
		return ret;
	}
	v->txid = txid;
	v->txns++;
	set_ondisk(&ct, txid);
	return 0;
}

/* --- a chunk coming back online ------------------------------------------- */

int txn_settle_chunk(struct chunk *c, uint64_t vol_txid)
{
	uint8_t *buf = malloc((size_t)OD_BLOCK_SIZE * c->hdr.dir_unit);
	struct dlist newest = { 0 }, *last = &newest;
	uint32_t copied = 0;
	uint8_t had = 0;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	if (c->hdr.flags & OD_CHF_SINGLE_COPY)
		goto out;
	if ((ret = read_newest_list(c, &newest, &had)) < 0 || !last->e)
		goto out;
	if (last->txid > vol_txid) {
		ret = -EUCLEAN;
		goto out;
	}
	/* Committed before the chunk went offline: the copy it names is the
	 * current one wherever it is whole (fsck has settled the others). */
	for (uint32_t k = 0; k < last->n && ret == 0; k++) {
		const struct od_dl_entry *e = &last->e[k];
		uint64_t txid = (e->flags & OD_DLE_HELD) ? 0 : last->txid;
		if (!copy_is(c, e, e->copy, txid, buf))
			continue;
		ret = store_pwrite(c->store, buf, (size_t)e->units * OD_BLOCK_SIZE,
				   copy_offset(c, e->block, (uint8_t)(1 - e->copy)));
		copied++;
	}
	if (ret == 0 && copied)
		ret = store_flush(c->store);
	memset(buf, 0, OD_BLOCK_SIZE);
	for (uint32_t k = 0; k < 2 && ret == 0; k++)
		ret = store_pwrite(c->store, buf, OD_BLOCK_SIZE,
				   (uint64_t)dl_area(c, k) * OD_BLOCK_SIZE);
	if (ret == 0)
		ret = store_flush(c->store);
out:
	txn_forget_ondisk(c);
	free(newest.e);
	free(buf);
	return ret;
}

/* --- a clean close -------------------------------------------------------- */

/* The txid of the list in area parity of c, or 0 when it holds none. */
static uint64_t list_txid(struct chunk *c, uint32_t parity)
{
	uint8_t blk[OD_BLOCK_SIZE];
	struct od_mb_header h;

	if (store_pread(c->store, blk, sizeof(blk), (uint64_t)dl_area(c, parity) * OD_BLOCK_SIZE) < 0 ||
	    od_verify(blk, sizeof(blk)) < 0)
		return 0;
	od_get_mb_header(blk, &h);
	return h.type == OD_MB_DIRTY_LIST && (h.txid & 1) == parity ? h.txid : 0;
}

int txn_settle_all(struct fs_volume *v)
{
	uint8_t *buf = calloc(1, OD_BLOCK_SIZE);
	int ret = buf ? 0 : -ENOMEM;

	/* The lists are spent: a later open has nothing to replay. Each
	 * chunk's older list goes first: cut short in between, what is left
	 * is each chunk's newest list, as after any transaction. */
	for (int pass = 0; pass < 2 && ret == 0; pass++) {
		for (uint32_t i = 0; i < v->nchunks && ret == 0; i++) {
			struct chunk *c = &v->chunks[i];
			uint64_t t0, t1;
			uint32_t newer;
			if (c->offline || (c->hdr.flags & OD_CHF_SINGLE_COPY))
				continue;
			t0 = list_txid(c, 0);
			t1 = list_txid(c, 1);
			if (!t0 && !t1)
				continue;
			newer = t1 > t0 ? 1 : 0;
			ret = store_pwrite(c->store, buf, OD_BLOCK_SIZE,
					   (uint64_t)dl_area(c, pass ? newer : 1 - newer) * OD_BLOCK_SIZE);
		}
		if (ret == 0)
			ret = vol_flush(v);
	}
	for (uint32_t i = 0; i < v->nchunks; i++)
		txn_forget_ondisk(&v->chunks[i]); /* lists cleared, or not known */
	free(buf);
	return ret;
}
