/* fsck: the dirty lists, and what became of the transaction each chunk's
 * newest list names -- the decision fs/txn.c's recovery makes at open, taken
 * here so that the check reads every unit as the volume will be read after
 * it.
 *
 * A chunk's list (its valid list with the greater txid T, as recovery
 * picks it) is rolled FORWARD (the written copy of each unit it names is
 * the current one) or BACK (the other copy is; a unit with no valid other
 * copy was new in T and has no version before it):
 *   - back when some written copy in this chunk does not verify with txid
 *     T: the chunk's part of T is incomplete, so T did not commit as far as
 *     this chunk can tell. Taking the other copy of every unit the list
 *     names gives the chunk exactly as it was before T (T wrote only those
 *     units, and their other copies hold the version before T), never a
 *     mix of two transactions;
 *   - with the whole volume at hand, also back when T is the volume's
 *     newest transaction and some other participant's part does not verify
 *     or the number of participants does not match the lists' nparts
 *     (recovery's rule: T did not commit);
 *   - forward otherwise.
 * Why this agrees with fs_open afterwards. Recovery rolls the volume's
 * newest transaction back when one of its written copies does not carry
 * it, and every older list forward. A chunk rolled back here and repaired
 * (-p/-y) has its written copies overwritten with their older versions
 * (write_out's settling), so they carry an older txid from then on: if T is
 * the newest, recovery finds it uncommitted and rolls it back in every
 * participant, as the check assumed; if a later transaction exists,
 * recovery copies the written copies over the others, which now hold the
 * same bytes. A chunk rolled forward keeps its written copies. Lists are
 * never spent by fsck, so recovery still sees them.
 * Crash states. Only the volume's newest transaction can be incomplete
 * after a crash (a transaction starts after the previous one's last
 * flush), so a chunk whose newest list is the volume's newest and is
 * incomplete is normal: a note, not a problem, and nothing is written for
 * it alone. When a later transaction exists (seen only with the whole
 * volume), an incomplete list is damage to a committed transaction:
 * PR_0_TXN_DAMAGED. A chunk checked alone (an image of one chunk, NBD)
 * cannot tell the two apart: its part is rolled back, each written copy
 * that does not verify is reported as a bad copy (the rollback rewrites it
 * from the other copy), and -p/-y write the whole part back as rolled
 * back, which is what recovery does to a newest transaction anyway. (A
 * written copy that verifies but carries an older txid, as after that
 * repair, is no problem.) Such a chunk sees only its own part of a
 * transaction of several chunks (nparts > 1): its part is taken forward
 * when it is complete, and a repair written then commits it there; the
 * cross-chunk references that end up broken are -x's to confirm.
 * Held entries (OD_DLE_HELD) name a copy that is current whichever way the
 * list goes, and take no part in deciding it. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fsck/fsck_int.h"

#define DL_HEAD 16u /* nblocks, nentries, nparts, reserved */

/* Bytes of one chunk: this one through its store, another through the
 * volume image. */
struct src {
	struct fsck_ctx *c;
	uint32_t chunk;
	const struct od_chunk_header *h;
};

static int src_read(const struct src *s, void *buf, size_t len, uint64_t off)
{
	if (s->chunk == s->c->index) {
		if (off + len > s->c->st->size)
			return -ERANGE;
		return store_pread(s->c->st, buf, len, off);
	}
	return fsck_vol_pread(s->c->vol, s->chunk, buf, len, off);
}

/* The list in one area (parity: the txid's parity the area may hold).
 * 0, -ENOENT when it holds no valid list, -ENOMEM. */
static int read_area(const struct src *s, uint32_t area, int parity, struct fsck_txlist *l)
{
	const struct od_chunk_header *h = s->h;
	uint32_t per_first = (OD_MB_PAYLOAD - DL_HEAD) / 8, per_block = OD_MB_PAYLOAD / 8;
	uint32_t cap = (h->dirty_blocks * OD_MB_PAYLOAD - DL_HEAD) / 8, k = 0;
	uint8_t blk[OD_BLOCK_SIZE];
	struct od_mb_header mh;
	struct od_dl_head dh;

	if (src_read(s, blk, sizeof(blk), (uint64_t)area * OD_BLOCK_SIZE) < 0 ||
	    od_verify(blk, sizeof(blk)) < 0)
		return -ENOENT;
	od_get_mb_header(blk, &mh);
	od_get_dl_head(blk + OD_MB_HEADER_SIZE, &dh);
	if (mh.type != OD_MB_DIRTY_LIST || mh.seq != 0 || dh.nblocks == 0 ||
	    dh.nblocks > h->dirty_blocks || dh.nentries > cap || (int)(mh.txid & 1) != parity)
		return -ENOENT;
	l->txid = mh.txid;
	l->nparts = dh.nparts;
	l->n = 0;
	l->e = calloc(dh.nentries ? dh.nentries : 1, sizeof(*l->e));
	if (!l->e)
		return -ENOMEM;
	for (uint32_t i = 0; i < dh.nblocks; i++) {
		uint32_t room = i == 0 ? per_first : per_block;
		const uint8_t *p = blk + OD_MB_HEADER_SIZE + (i == 0 ? DL_HEAD : 0);
		if (i > 0) {
			if (src_read(s, blk, sizeof(blk), (uint64_t)(area + i) * OD_BLOCK_SIZE) < 0 ||
			    od_verify(blk, sizeof(blk)) < 0)
				goto bad;
			od_get_mb_header(blk, &mh);
			if (mh.type != OD_MB_DIRTY_LIST || mh.seq != i || mh.txid != l->txid)
				goto bad;
		}
		for (uint32_t j = 0; j < room && k < dh.nentries; j++, k++) {
			struct od_dl_entry *e = &l->e[k];
			od_get_dl_entry(p + 8 * j, e);
			if (e->units == 0 || e->units > h->dir_unit || e->copy > 1 ||
			    (uint64_t)e->block + e->units > h->nblocks / 2 ||
			    (e->flags & ~OD_DLE_KNOWN) ||
			    ((e->flags & OD_DLE_HELD) &&
			     !(h->feature_incompat & OD_FEATURE_INCOMPAT_HELD_ENTRIES)))
				goto bad;
		}
	}
	l->n = dh.nentries;
	return 0;
bad:
	free(l->e);
	l->e = NULL;
	return -ENOENT;
}

/* Does the copy of e hold a whole unit of this chunk written by txid (or,
 * with newer set, by txid or a later transaction)? */
static int copy_carries(const struct src *s, const struct od_dl_entry *e, int copy, uint64_t txid,
			int newer, uint8_t *buf)
{
	size_t len = (size_t)e->units * OD_BLOCK_SIZE;
	uint64_t off = (uint64_t)(e->block + (copy ? s->h->nblocks / 2 : 0)) * OD_BLOCK_SIZE;
	struct od_mb_header mh;

	if (src_read(s, buf, len, off) < 0 || od_verify(buf, len) < 0)
		return 0;
	od_get_mb_header(buf, &mh);
	return mh.chunk == s->chunk && mh.block == e->block &&
	       (mh.txid == txid || (newer && mh.txid > txid));
}

/* The chunk's list, as recovery picks it, and how many of its written
 * copies do not verify. 0 (l->present says whether there is one), -ENOMEM. */
static int load(struct fsck_ctx *c, uint32_t chunk, const struct od_chunk_header *h,
		struct fsck_txlist *l)
{
	struct src s = { .c = c, .chunk = chunk, .h = h };
	struct fsck_txlist a[2];
	uint8_t *buf;
	int ok[2], pick;

	l->loaded = 1;
	if (h->flags & OD_CHF_SINGLE_COPY)
		return 0;
	for (int k = 0; k < 2; k++) {
		int ret;
		memset(&a[k], 0, sizeof(a[k]));
		ret = read_area(&s, h->dirty_start + (k ? h->nblocks / 2 : 0), k, &a[k]);
		if (ret == -ENOMEM) {
			free(a[0].e);
			return ret;
		}
		ok[k] = ret == 0;
	}
	if (!ok[0] && !ok[1])
		return 0;
	pick = ok[0] && (!ok[1] || a[0].txid > a[1].txid) ? 0 : 1;
	free(a[1 - pick].e);
	l->present = 1;
	l->txid = a[pick].txid;
	l->nparts = a[pick].nparts;
	l->n = a[pick].n;
	l->e = a[pick].e;
	buf = malloc((size_t)h->dir_unit * OD_BLOCK_SIZE);
	if (!buf)
		return -ENOMEM;
	for (uint32_t k = 0; k < l->n; k++) {
		const struct od_dl_entry *e = &l->e[k];
		if (e->flags & OD_DLE_HELD) /* held: not written by it */
			continue;
		/* (a later transaction whose list is lost since wrote both
		 * copies anew: that is no sign of this one being torn) */
		l->bad += !copy_carries(&s, e, e->copy, l->txid, 1, buf);
		if (!l->marked)
			l->marked = (uint8_t)copy_carries(&s, e, 1 - e->copy, l->txid, 0, buf);
	}
	free(buf);
	return 0;
}

/* The list of chunk i of the volume (this chunk's is c->tx_own). */
static struct fsck_txlist *list_of(struct fsck_ctx *c, uint32_t i, int *err)
{
	struct fsck_txlist *l;

	*err = 0;
	if (i == c->index)
		return &c->tx_own;
	if (c->vol && c->vol->partial && (*err = fsck_vol_complete(c->vol)) < 0) {
		fsck_note(c, "the whole volume, walked chunk by chunk, puts this chunk elsewhere "
			     "than chunk 0's size does: check the volume without -c");
		return NULL;
	}
	if (!c->vol || i >= c->vol->nchunks || !c->vol->hdr_ok[i])
		return NULL;
	if (!c->tx_far) {
		c->tx_far = calloc(c->vol->nchunks, sizeof(*c->tx_far));
		if (!c->tx_far) {
			*err = -ENOMEM;
			return NULL;
		}
	}
	l = &c->tx_far[i];
	if (!l->loaded && (*err = load(c, i, &c->vol->hdr[i], l)) < 0)
		return NULL;
	return l;
}

/* The volume's newest transaction and whether it committed, as recovery
 * decides it: a participant's second copy carries it (the commit mark), or
 * else every participant's written copies carry it and the participants
 * counted match nparts (chunks without a readable header may be missing
 * ones). */
static int volume_newest(struct fsck_ctx *c)
{
	uint32_t parts = 0, nparts = 0, offline = 0;
	int err, marked = 0;

	if (c->tx_newest_known)
		return 0;
	c->tx_newest = 0;
	c->tx_newest_committed = 1;
	for (uint32_t i = 0; i < c->vol->nchunks; i++) {
		struct fsck_txlist *l = list_of(c, i, &err);
		if (err < 0)
			return err;
		if (!l) {
			offline++;
			continue;
		}
		if (l->present && l->txid > c->tx_newest)
			c->tx_newest = l->txid;
	}
	for (uint32_t i = 0; i < c->vol->nchunks && c->tx_newest; i++) {
		struct fsck_txlist *l = list_of(c, i, &err);
		if (!l || !l->present || l->txid != c->tx_newest)
			continue;
		parts++;
		nparts = l->nparts;
		marked |= l->marked;
		if (l->bad)
			c->tx_newest_committed = 0;
	}
	if (c->tx_newest && (parts > nparts || parts + offline < nparts))
		c->tx_newest_committed = 0;
	if (marked)
		c->tx_newest_committed = 1;
	c->tx_newest_known = 1;
	return 0;
}

static int decide(struct fsck_ctx *c, struct fsck_txlist *l)
{
	int ret;

	if (l->decided || !l->present)
		return 0;
	l->decided = 1;
	l->rollback = l->bad != 0 && !l->marked;
	if (!c->vol)
		return 0;
	ret = volume_newest(c);
	if (ret < 0)
		return ret;
	/* The volume's newest transaction goes one way in every chunk, as
	 * recovery takes it: another participant's mark commits it here too. */
	if (l->txid == c->tx_newest)
		l->rollback = !c->tx_newest_committed;
	return 0;
}

int fsck_txn_read(struct fsck_ctx *c)
{
	struct fsck_txlist *l = &c->tx_own;
	struct fsck_pctx p = { 0 };
	int ret = load(c, c->index, &c->hdr, l);

	if (ret == 0)
		ret = decide(c, l);
	if (ret < 0)
		return fsck_oom(c);
	c->lists_present = l->present;
	if (!l->present)
		return 0;
	c->pend_txid = l->txid;
	c->rollback = l->rollback;
	for (uint32_t k = 0; k < l->n; k++) {
		/* A held entry's named copy is current either way: recorded
		 * as the copy "written", flipped when the part is rolled back,
		 * so that the rollback's "other copy" is the named one. */
		const struct od_dl_entry *e = &l->e[k];
		int held = !!(e->flags & OD_DLE_HELD);
		uint32_t copy = held && c->rollback ? 1u - e->copy : e->copy;
		if (fsck_hmap_put(&c->pend, (uint64_t)e->block + 1,
				  copy | ((uint32_t)e->units << 8) |
					  (held ? FSCK_PEND_HELD : 0)) < 0)
			return fsck_oom(c);
	}
	if (!c->rollback) {
		if (l->bad)
			fsck_note(c, "transaction %llu committed (second copies carry it): %u of "
				     "its %u first copies do not, damage since, read from their "
				     "second copies",
				  (unsigned long long)l->txid, l->bad, l->n);
		return 0;
	}
	p.num = l->txid;
	p.num2 = l->bad;
	p.ino = l->n;
	if (!l->bad) {
		fsck_note(c, "transaction %llu did not commit in every chunk it took part in: this "
			     "chunk's part is read as rolled back", (unsigned long long)l->txid);
	} else if (c->vol && l->txid < c->tx_newest) {
		p.ino2 = c->tx_newest;
		if (fix_problem(c, PR_0_TXN_DAMAGED, &p))
			c->force_write = 1;
	} else {
		fsck_note(c, "transaction %llu did not complete in this chunk (%u of its %u written "
			     "copies do not carry it): its units are read from their older copies, "
			     "as recovery rolls it back", (unsigned long long)l->txid, l->bad, l->n);
		/* Alone, the chunk cannot tell a torn newest transaction from a
		 * damaged older one: a written copy that does not verify is
		 * reported (as a bad copy, which the rollback rewrites from the
		 * other), and a repair run writes the rollback, which recovery
		 * then keeps in both cases. */
		if (!c->vol) {
			c->txn_report = 1;
			if (c->o->mode != FSCK_CHECK_ONLY)
				c->force_write = 1;
		}
	}
	return 0;
}

int fsck_txn_far_copy(struct fsck_ctx *c, uint32_t chunk, uint32_t block, int *copy)
{
	struct fsck_txlist *l;
	int err;

	*copy = -1;
	l = list_of(c, chunk, &err);
	if (err < 0)
		return err;
	if (!l || !l->present)
		return 0;
	if ((err = decide(c, l)) < 0)
		return err;
	for (uint32_t k = 0; k < l->n; k++)
		if (l->e[k].block == block) {
			int flip = l->rollback && !(l->e[k].flags & OD_DLE_HELD);
			*copy = flip ? 1 - l->e[k].copy : l->e[k].copy;
			break;
		}
	return 0;
}

void fsck_txn_free(struct fsck_ctx *c)
{
	free(c->tx_own.e);
	for (uint32_t i = 0; c->tx_far && i < c->vol->nchunks; i++)
		free(c->tx_far[i].e);
	free(c->tx_far);
}
