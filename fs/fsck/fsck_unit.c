/* fsck's metadata units: each read through its two copies, the copy to
 * believe decided with the chunk's dirty lists, problems about copies
 * reported once, and the units kept by block for the passes. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fsck/fsck_int.h"

struct fsck_unit *fsck_unit_find(struct fsck_ctx *c, uint32_t block)
{
	struct fsck_unit *u;

	if (!c->uhash)
		return NULL;
	u = c->uhash[(uint32_t)(fsck_hkey(block) >> 32) & (c->uhash_size - 1)];
	while (u && u->block != block)
		u = u->hnext;
	return u;
}

void fsck_unit_add(struct fsck_ctx *c, struct fsck_unit *u)
{
	uint32_t h = (uint32_t)(fsck_hkey(u->block) >> 32) & (c->uhash_size - 1);

	u->hnext = c->uhash[h];
	c->uhash[h] = u;
}

void fsck_unit_modified(struct fsck_ctx *c, struct fsck_unit *u)
{
	u->modified = 1;
}

/* Same version: equal but for the crc and txid fields. */
static int same_content(const uint8_t *a, const uint8_t *b, size_t len)
{
	return memcmp(a, b, 8) == 0 && memcmp(a + 12, b + 12, 12) == 0 &&
	       memcmp(a + 32, b + 32, len - 32) == 0;
}

static uint64_t raw_txid(const uint8_t *buf)
{
	struct od_mb_header h;

	od_get_mb_header(buf, &h);
	return h.txid;
}

/* Do the two valid, different copies of a unit the newest dirty list
 * names look like that transaction (written: copy `written`)? Either it
 * wrote its copy (which is then the newer, with the list's txid), or it
 * had not yet (both older than the list). A copy newer than the list means
 * the list that would explain it is lost: recovery would then take the
 * older version for the current one. A held entry's named copy is the
 * newer, from a transaction before the list's. */
static int list_explains(const struct fsck_ctx *c, uint32_t written, int held, int newer,
			 uint64_t tnewer)
{
	if (tnewer > c->pend_txid)
		return 0;
	if (held)
		return (uint32_t)newer == written && tnewer < c->pend_txid;
	if ((uint32_t)newer == written)
		return tnewer == c->pend_txid;
	return 1;
}

/* Choose the current copy of u from the two read (valid[i]: it passed its
 * checks, why[i]: else what failed), and report what is wrong with the
 * other. The newer valid txid wins; a difference that the newest dirty
 * list explains (a transaction that did not reach the unit's second copy,
 * cut short by a crash, or a list of an older version whose catch-ups
 * were pending) is no problem: the repair, or recovery at the next open,
 * writes the current copy over the other. (A mark elsewhere in that list
 * does not make it damage: a crash while the second copies were written
 * leaves some written and some not.) raw[] stays the caller's. */
int fsck_unit_decide(struct fsck_ctx *c, struct fsck_unit *u, uint8_t *raw[2], const int valid[2],
		     const char *why[2])
{
	size_t len = (size_t)u->units * OD_BLOCK_SIZE;
	uint32_t pc = fsck_hmap_get(&c->pend, (uint64_t)u->block + 1);
	int is_hdr = u->type == OD_MB_CHUNK_HEADER;
	struct fsck_pctx p = { .blk = u->block, .str = od_unit_name(u->type) };
	int held;

	u->pending = pc != FSCK_NONE;
	held = u->pending && (pc & FSCK_PEND_HELD);
	pc &= 0xff;
	u->cur = -1;
	if (u->pending && c->rollback) {
		/* The transaction is rolled back (fsck_txn.c): the copy it
		 * did not write holds the version before it. */
		int old = 1 - (int)pc;
		if (valid[old]) {
			u->cur = (int8_t)old;
			if (!valid[pc] && c->txn_report) {
				/* Alone, a bad written copy may be damage as well as a
				 * crash: reported; the rollback rewrites it anyway. */
				p.copy = (int)pc;
				if (is_hdr)
					p.str = why[pc];
				else
					p.str2 = why[pc];
				u->heal[pc] = fix_problem(c, is_hdr ? PR_1_HDR_COPY_BAD
								    : PR_0_UNIT_COPY_BAD, &p)
						      ? FSCK_HEAL_FIX
						      : FSCK_HEAL_SETTLE;
			} else if (!valid[pc] || memcmp(raw[0], raw[1], len) != 0) {
				u->heal[pc] = FSCK_HEAL_SETTLE;
			}
		} else if (is_hdr && valid[pc]) {
			/* No header before it: the transaction's own is all there is. */
			u->cur = (int8_t)pc;
			p.copy = old;
			p.str = why[old];
			if (fix_problem(c, PR_1_HDR_COPY_BAD, &p))
				u->heal[old] = FSCK_HEAL_FIX;
		} else {
			u->no_older = 1; /* new in the transaction */
		}
	} else if (valid[0] && valid[1]) {
		uint64_t t0 = raw_txid(raw[0]), t1 = raw_txid(raw[1]);
		int newer = t1 > t0 ? 1 : 0;
		/* Rolled forward, the copy the list wrote is current even when
		 * the other carries a later txid: the next transaction wrote it
		 * behind one flush and its list never landed (fs/txn.c, "one
		 * flush"); recovery's roll forward overwrites it. */
		if (u->pending && newer != (int)pc && (newer ? t1 : t0) > c->pend_txid)
			newer = (int)pc;
		u->cur = (int8_t)newer;
		if (!same_content(raw[0], raw[1], len)) {
			p.copy = 1 - newer;
			if (!u->pending) {
				if (fix_problem(c, is_hdr ? PR_1_HDR_COPIES_DIFFER
							  : PR_0_UNIT_COPIES_DIFFER, &p))
					u->heal[1 - newer] = FSCK_HEAL_FIX;
			} else if (list_explains(c, pc, held, newer, newer ? t1 : t0)) {
				u->heal[1 - newer] = FSCK_HEAL_SETTLE;
			} else {
				p.num = c->pend_txid;
				if (fix_problem(c, PR_0_UNIT_LIST_MISMATCH, &p))
					u->heal[1 - newer] = FSCK_HEAL_FIX;
			}
		}
	} else if (valid[0] || valid[1]) {
		int good = valid[0] ? 0 : 1;
		u->cur = (int8_t)good;
		if (c->single_copy && good == 0) {
			/* copy 1 is never kept in a SINGLE_COPY chunk */
		} else if (u->pending && pc == (uint32_t)good &&
			   (held ? raw_txid(raw[good]) < c->pend_txid
				 : raw_txid(raw[good]) == c->pend_txid)) {
			/* New in that transaction; or held, the other copy
			 * torn by a next transaction whose list was lost. */
			u->heal[1 - good] = FSCK_HEAL_SETTLE;
		} else {
			p.copy = 1 - good;
			if (is_hdr)
				p.str = why[1 - good];
			else
				p.str2 = why[1 - good];
			if (fix_problem(c, is_hdr ? PR_1_HDR_COPY_BAD : PR_0_UNIT_COPY_BAD, &p))
				u->heal[1 - good] = FSCK_HEAL_FIX;
		}
	}
	return 0;
}

int fsck_copy_ok(struct fsck_ctx *c, const uint8_t *buf, size_t len, uint32_t block,
		 uint16_t type, char *why, size_t n)
{
	struct od_mb_header h;

	od_get_mb_header(buf, &h);
	if (h.magic != OD_MB_MAGIC) {
		snprintf(why, n, "no unit header");
		return 0;
	}
	if ((size_t)h.units * OD_BLOCK_SIZE != len) {
		snprintf(why, n, "%u blocks long, expected %zu", h.units, len / OD_BLOCK_SIZE);
		return 0;
	}
	if (od_verify(buf, len) < 0) {
		snprintf(why, n, "checksum mismatch");
		return 0;
	}
	if (h.chunk != c->index || h.block != block) {
		snprintf(why, n, "it is block %u of chunk %u", h.block, h.chunk);
		return 0;
	}
	if (type && h.type != type) {
		snprintf(why, n, "a %s", od_unit_name(h.type));
		return 0;
	}
	return 1;
}

int fsck_read_copy(struct fsck_ctx *c, uint8_t *buf, size_t len, uint64_t off, char *why,
		   size_t n)
{
	int ret;

	if (off + len > c->st->size) {
		snprintf(why, n, "beyond the end of the chunk");
		return -ERANGE;
	}
	ret = store_pread(c->st, buf, len, off);
	if (ret < 0)
		snprintf(why, n, "read error: %s", strerror(-ret));
	return ret;
}

/* An empty unit replacing one with no valid copy (a repair that loses
 * what the unit held). */
static void unit_fresh(struct fsck_ctx *c, struct fsck_unit *u, uint64_t owner)
{
	size_t len = (size_t)u->units * OD_BLOCK_SIZE;
	struct od_mb_header h = {
		.magic = OD_MB_MAGIC,
		.type = u->type,
		.units = u->units,
		.chunk = c->index,
		.block = u->block,
		.txid = c->hdr_unit ? c->hdr_unit->txid : 0,
		.owner = (u->type == OD_MB_DIR || u->type == OD_MB_EXTENTS) ? owner : 0,
	};

	memset(u->data, 0, len);
	od_put_mb_header(u->data, &h);
	if (u->type == OD_MB_DIR) {
		struct od_dirent de = { .rec_len = (uint16_t)(len - OD_MB_HEADER_SIZE),
					.kind = OD_DE_FREE };
		od_put_dirent(u->data + OD_MB_HEADER_SIZE, &de);
	}
	u->txid = h.txid;
	u->modified = 1;
}

int fsck_unit_new(struct fsck_ctx *c, uint32_t block, uint16_t units, uint16_t type,
		  uint64_t owner, struct fsck_unit **out)
{
	struct fsck_unit *u = fsck_unit_find(c, block);
	uint8_t *data;

	if (u && u->units == units) {
		/* read already (a unit written again in its place): its record
		 * kept, its bytes made anew */
		if (!u->data && !(u->data = fsck_alloc(c, (size_t)units * OD_BLOCK_SIZE)))
			return fsck_oom(c);
		u->type = type;
		u->heal[0] = u->heal[1] = 0;
		unit_fresh(c, u, owner);
		*out = u;
		return 0;
	}
	u = fsck_alloc(c, sizeof(*u));
	data = fsck_alloc(c, (size_t)units * OD_BLOCK_SIZE);
	if (!u || !data)
		return fsck_oom(c);
	memset(u, 0, sizeof(*u)); /* (context memory is not zeroed) */
	u->data = data;
	u->block = block;
	u->units = units;
	u->type = type;
	u->cur = -1;
	u->pooled = 1;
	u->walked = 1;
	unit_fresh(c, u, owner);
	fsck_unit_add(c, u);
	*out = u;
	return 0;
}

/* --- one unit through its copies ---------------------------------------------- */

/* One copy of u: from a run, else read now; *valid whether it passes.
 * NULL only when out of memory. */
static uint8_t *copy_bytes(struct fsck_ctx *c, const struct fsck_unit *u, int copy, char *why,
			   size_t n, int *valid)
{
	size_t len = (size_t)u->units * OD_BLOCK_SIZE;
	uint8_t *buf = fsck_run_take(c, (uint8_t)copy, u->block, u->units);
	uint64_t off = (uint64_t)(u->block + (copy ? c->half : 0)) * OD_BLOCK_SIZE;

	*valid = 0;
	if (!buf) {
		buf = fsck_alloc(c, len);
		if (!buf)
			return NULL;
		if (fsck_read_copy(c, buf, len, off, why, n) < 0)
			return buf;
	}
	*valid = fsck_copy_ok(c, buf, len, u->block, u->type, why, n);
	return buf;
}

/* Is copy 0 of u, valid, all that is to be read? Not when both copies
 * are wanted, nor when the newest dirty list names the unit. */
static int copy0_enough(const struct fsck_ctx *c, const struct fsck_unit *u)
{
	return !c->both && fsck_hmap_get(&c->pend, (uint64_t)u->block + 1) == FSCK_NONE;
}

/* u's current version into u->data (NULL: no valid copy), through one or
 * both copies as the reading strategy says. */
static int unit_load(struct fsck_ctx *c, struct fsck_unit *u)
{
	char why0[120], why1[120];
	const char *why[2] = { why0, why1 };
	uint8_t *raw[2] = { NULL, NULL };
	int valid[2] = { 0, 0 };

	raw[0] = copy_bytes(c, u, 0, why0, sizeof(why0), &valid[0]);
	if (!raw[0])
		return fsck_oom(c);
	if (valid[0] && (c->single_copy || copy0_enough(c, u))) {
		u->cur = 0;
	} else {
		snprintf(why1, sizeof(why1), "not kept (SINGLE_COPY)");
		if (!c->single_copy) {
			raw[1] = copy_bytes(c, u, 1, why1, sizeof(why1), &valid[1]);
			if (!raw[1])
				return fsck_oom(c);
		}
		fsck_unit_decide(c, u, raw, valid, why);
	}
	u->data = u->cur >= 0 ? raw[u->cur] : NULL;
	u->txid = u->data ? raw_txid(u->data) : 0;
	return 0;
}

int fsck_unit_get(struct fsck_ctx *c, uint32_t block, uint16_t units, uint16_t type,
		  uint64_t owner, struct fsck_unit **out)
{
	size_t len = (size_t)units * OD_BLOCK_SIZE;
	struct fsck_unit *u = fsck_unit_find(c, block);
	int ret;

	if (u) {
		if (u->units != units || u->type != type) {
			struct fsck_pctx p = { .blk = block, .str = od_unit_name(type),
					       .num = units, .str2 = od_unit_name(u->type) };
			fix_problem(c, PR_0_UNIT_CONFLICT, &p);
			return -EUCLEAN;
		}
		*out = u;
		return 0;
	}
	if ((uint64_t)block + units > c->half)
		return -ERANGE;
	u = fsck_alloc(c, sizeof(*u));
	if (!u)
		return fsck_oom(c);
	memset(u, 0, sizeof(*u));
	u->block = block;
	u->units = units;
	u->type = type;
	u->pooled = 1;
	ret = unit_load(c, u);
	if (ret < 0)
		return ret;
	fsck_unit_add(c, u);
	if (!u->data) {
		struct fsck_pctx p = { .blk = block, .str = od_unit_name(type), .num = c->pend_txid };
		int code = type == OD_MB_BITMAP ? PR_0_BITMAP_BOTH_BAD
			   : u->no_older    ? PR_0_UNIT_NO_OLDER
					    : PR_0_UNIT_BOTH_BAD;
		c->lost_units += !u->no_older; /* (the salvage looks for what they held) */
		if (fix_problem(c, code, &p)) {
			u->data = fsck_alloc(c, len);
			if (!u->data)
				return fsck_oom(c);
			unit_fresh(c, u, owner);
		} else if (type != OD_MB_BITMAP) {
			c->incomplete = 1;
		}
	}
	*out = u;
	return 0;
}
