/* fsck's write-out: the repaired units written to both copies through
 * the chunk's own store, each with the txid it had, so that a later
 * recovery reaches the decisions it reached before the check. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/fsck/fsck_int.h"

static int write_copy(struct fsck_ctx *c, const struct fsck_unit *u, int copy)
{
	uint64_t off = (uint64_t)(u->block + (copy ? c->half : 0)) * OD_BLOCK_SIZE;

	return store_pwrite(c->st, u->data, (size_t)u->units * OD_BLOCK_SIZE, off);
}

/* A pending unit the check never read: the newer valid copy over the
 * other, or, when the transaction is rolled back, the copy it did not
 * write over the one it wrote (written: that copy). */
static int settle_unread(struct fsck_ctx *c, uint32_t block, uint16_t units, int written,
			 uint32_t *n)
{
	size_t len = (size_t)units * OD_BLOCK_SIZE;
	uint8_t *b0 = malloc(len), *b1 = malloc(len);
	char why[120];
	int v0 = 0, v1 = 0, ret = 0;

	if (!b0 || !b1) {
		free(b0);
		free(b1);
		return -ENOMEM;
	}
	if ((uint64_t)block + units <= c->half) {
		if (fsck_read_copy(c, b0, len, (uint64_t)block * OD_BLOCK_SIZE, why, sizeof(why)) == 0)
			v0 = fsck_copy_ok(c, b0, len, block, 0, why, sizeof(why));
		if (fsck_read_copy(c, b1, len, (uint64_t)(block + c->half) * OD_BLOCK_SIZE, why,
			      sizeof(why)) == 0)
			v1 = fsck_copy_ok(c, b1, len, block, 0, why, sizeof(why));
	}
	if (c->rollback) {
		int old = 1 - written;
		if ((old ? v1 : v0) && (!(old ? v0 : v1) || memcmp(b0, b1, len) != 0)) {
			ret = store_pwrite(c->st, old ? b1 : b0, len,
					   (uint64_t)(block + (written ? c->half : 0)) * OD_BLOCK_SIZE);
			if (ret == 0)
				(*n)++;
		}
	} else if ((v0 || v1) && !(v0 && v1 && memcmp(b0, b1, len) == 0)) {
		/* Forward: the written copy, as recovery's roll forward takes
		 * it, even when the other carries a later txid (a next
		 * transaction's write behind one flush, its list lost). */
		int from = (written ? v1 : v0) ? written : (v0 ? 0 : 1);
		ret = store_pwrite(c->st, from ? b1 : b0, len,
				   (uint64_t)(block + (from ? 0 : c->half)) * OD_BLOCK_SIZE);
		if (ret == 0)
			(*n)++;
	}
	free(b0);
	free(b1);
	return ret;
}

int fsck_write_out(struct fsck_ctx *c)
{
	uint32_t nwritten = 0, nsettled = 0;
	int any = c->hdr_changed || c->force_write, ret = 0;

	for (uint32_t h = 0; h < c->uhash_size && !any; h++)
		for (struct fsck_unit *u = c->uhash[h]; u; u = u->hnext)
			if (u->data && (u->modified || u->heal[0] == FSCK_HEAL_FIX ||
					u->heal[1] == FSCK_HEAL_FIX))
				any = 1;
	if (!any)
		return 0;
	/* The run writes: the header records it, and every unit the newest
	 * dirty list names whose copies differ (a transaction cut short) is
	 * settled now, so that the copies agree with what was checked. */
	if (c->hdr.state == OD_STATE_NEEDS_REPAIR && c->res.unfixed == 0)
		c->hdr.state = OD_STATE_CLEAN;
	if (c->clear_uninit)
		c->hdr.flags &= ~OD_CHF_BITMAP_UNINIT;
	c->hdr.last_check_time = (uint64_t)time(NULL);
	od_put_chunk_header(c->hdr_unit->data, &c->hdr);
	c->hdr_unit->modified = 1;
	for (uint32_t i = 0; i < c->pend.cap && ret == 0; i++) {
		uint32_t block;
		if (!c->pend.keys[i])
			continue;
		block = (uint32_t)(c->pend.keys[i] - 1);
		if (!fsck_unit_find(c, block))
			ret = settle_unread(c, block, (uint16_t)(c->pend.vals[i] >> 8),
					    (int)(c->pend.vals[i] & 0xff), &nsettled);
	}
	/* Copies 0, then copies 1, then the header the same way: a crash in
	 * between leaves every unit with one copy of each version. */
	for (int copy = 0; copy < 2 && ret == 0; copy++) {
		for (int hdr = 0; hdr < 2 && ret == 0; hdr++) {
			for (uint32_t h = 0; h < c->uhash_size && ret == 0; h++) {
				for (struct fsck_unit *u = c->uhash[h]; u && ret == 0; u = u->hnext) {
					size_t len = (size_t)u->units * OD_BLOCK_SIZE;
					if (!u->data || (u == c->hdr_unit) != hdr)
						continue;
					if (copy == 1 && c->single_copy)
						continue;
					if (u->modified && copy == 0)
						od_seal(u->data, len);
					if (!u->modified && !u->heal[copy])
						continue;
					ret = write_copy(c, u, copy);
					if (!u->modified && u->heal[copy] == FSCK_HEAL_SETTLE)
						nsettled++;
					else
						nwritten++;
				}
			}
			if (ret == 0)
				ret = store_flush(c->st);
		}
	}
	if (ret < 0) {
		fsck_note(c, "writing the repairs failed: %s", strerror(-ret));
		c->oper = ret;
		return ret;
	}
	fsck_note(c, "%u unit copies written%s", nwritten + nsettled,
		  nsettled ? " (units of a transaction cut short included)" : "");
	return 0;
}
