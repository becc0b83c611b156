/* One chunk out of service while the volume serves the rest: taking it
 * offline (everything committed, its cached units and allocation state
 * forgotten, its OFD lock released so that nbdkit chunkfs or fsck.chunkfs
 * may open it), bringing it back (checked first, with the cross-chunk
 * checks a repair elsewhere had to defer), opening a placed chunk's store
 * again, and what the control socket shows of each chunk. While a chunk is
 * offline every operation that needs one of its units or data blocks fails
 * with -EIO (cache.c, file.c, chunk.c check c->offline); the others go on
 * untouched. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fs/internal.h"
#include "fs/store/store_nbd.h"

/* The chunks the root directory cannot do without: where its inode lives
 * and where its stable number is mapped. */
static int holds_root(struct fs_volume *v, uint32_t i)
{
	struct iref r;

	if ((uint32_t)(v->root >> 32) == i)
		return 1;
	return ino_get_stable(v, v->root, &r) < 0 || r.loc.chunk == i;
}

/* Chunk i, with the volume locked; NULL and why[] when there is none. */
static struct chunk *lock_chunk(struct fs_volume *v, uint32_t i, char *why, size_t whylen)
{
	struct chunk *c;

	why[0] = '\0';
	vol_lock(v);
	c = vol_chunk(v, i);
	if (!c)
		snprintf(why, whylen, "no chunk %u: the volume has %u", i, v->nchunks);
	if (c && c->retired) {
		snprintf(why, whylen, "chunk %u is retired (evacuated): it is never opened again", i);
		c = NULL;
	}
	return c;
}

int fs_chunk_offline(struct fs_volume *v, uint32_t i, int force, char *why, size_t whylen)
{
	struct chunk *c;
	int ret;

	/* What is buffered and uncommitted now goes first, placed a file per
	 * lock hold and committed without the lock, so that the placement
	 * and commit below, with it, have only what came meanwhile to write
	 * (a failure here is met again there). A placement in flight is not
	 * waited for: it gives way to this call's wait for the chunk's pins
	 * (fs/dalloc_place.c), and what it leaves is placed below. */
	dalloc_settle_unlocked(v);
	c = lock_chunk(v, i, why, whylen);
	if (!c) {
		ret = -EINVAL;
		goto out;
	}
	/* Reads of it begun without the lock (an evacuation's copy from or
	 * into it among them, which stops early for this) end first, waited
	 * for unlocked: once offline its lock is released, and a repair
	 * (fsck here or elsewhere, nbdkit) must not meet a copy still
	 * writing. Every change below is made in this one hold after it. */
	if (!c->offline)
		chunk_wait_unpinned(c);
	if (c->offline) {
		ret = 0; /* already (or taken offline, or retired, meanwhile) */
		goto out;
	}
	if (v->rdonly) {
		snprintf(why, whylen, "the volume is open read-only");
		ret = -EROFS;
		goto out;
	}
	if (holds_root(v, i)) {
		snprintf(why, whylen,
			 "chunk %u holds the root directory: without it nothing can be served; "
			 "stop chunkfsd and check the volume with fsck.chunkfs instead",
			 i);
		ret = -EBUSY;
		goto out;
	}
	/* Every operation runs under the volume lock: holding it, none is in
	 * flight. What they changed is committed (both copies) before the
	 * chunk goes, and its newest list then names nothing: a check of the
	 * chunk finds both copies of every unit equal, and reports any
	 * difference. */
	ret = dalloc_place_all(v, DA_FORCE); /* buffered data too: it may go there */
	{
		int sret = vol_sync(v, 0);
		if (ret == 0)
			ret = sret;
	}
	if (ret == 0)
		ret = txn_empty_list(v, c);
	if (ret < 0 && !force) {
		snprintf(why, whylen,
			 "committing the changes made so far failed (%s); --force takes the "
			 "chunk offline anyway and drops its changes not yet committed",
			 strerror(-ret));
		goto out;
	}
	if (ret < 0) { /* forced: what was not committed goes */
		__atomic_add_fetch(&v->drops, 1, __ATOMIC_RELEASE);
		__atomic_add_fetch(&v->change_drops, 1, __ATOMIC_RELEASE);
	}
	ret = chunk_record_ghosts(c);
	if (ret == 0)
		ret = cache_drop_chunk(c);
	if (ret < 0) {
		chunk_free_ghosts(c);
		snprintf(why, whylen, "%s", ret == -ENOMEM ? "out of memory"
						      : "units of the chunk are still in use");
		goto out;
	}
	c->offline = 1;
	c->header_dirty = 0;
	c->header_heal = -1;
	chunk_unload(c);
	/* The last transaction's list stays on the chunk: bringing it back
	 * (or fsck) settles it. Until then it takes no part in any. */
	txn_forget_ondisk(c);
	c->offline_since = time(NULL);
	snprintf(c->why_offline, sizeof(c->why_offline), "taken offline%s",
		 force ? " (forced)" : "");
	/* Buffered files whose inode (or number) was in it cannot be placed,
	 * and what was not committed of them went with it: given up. */
	dalloc_offline(v);
	if (force) {
		/* What is left of other chunks' changes goes without it (its
		 * store, perhaps gone, is not flushed either). */
		ret = vol_sync(v, 0);
		if (ret < 0) {
			snprintf(why, whylen,
				 "chunk %u is offline, but committing the other chunks' changes "
				 "failed: %s",
				 i, strerror(-ret));
			goto out;
		}
	}
	ret = vol_chunk_release(v, i);
	if (ret < 0)
		snprintf(why, whylen, "chunk %u is offline but its lock could not be released: %s",
			 i, strerror(-ret));
out:
	vol_unlock(v);
	return ret;
}

uint64_t fs_drop_count(struct fs_volume *v)
{
	return __atomic_load_n(&v->drops, __ATOMIC_ACQUIRE);
}

uint64_t fs_change_drop_count(struct fs_volume *v)
{
	return __atomic_load_n(&v->change_drops, __ATOMIC_ACQUIRE);
}

int fs_offline_lost_stores(struct fs_volume *v)
{
	int n = 0, err = 0;

	/* One lock hold looks at every chunk; each one found is taken on its
	 * own (fs_chunk_offline takes the lock itself). */
	for (uint32_t from = 0;;) {
		struct chunk *c = NULL;
		char why[512];
		int lost = 0, ret;
		vol_lock(v);
		for (; from < v->nchunks && !c; from++)
			if (!v->chunks[from].offline && (lost = store_lost(v->chunks[from].store)))
				c = &v->chunks[from];
		vol_unlock(v);
		if (!c)
			break;
		ret = fs_chunk_offline(v, c->index, 1, why, sizeof(why));
		vol_lock(v);
		if (ret == 0 && c->offline) {
			c->lost_store = lost;
			snprintf(c->why_offline, sizeof(c->why_offline), "%s: %s",
				 c->place ? c->place : "its store",
				 lost == -ETIMEDOUT ? "the server did not answer in time"
						    : "the connection to the server was lost");
			n++;
		}
		vol_unlock(v);
		if (ret < 0)
			err = err ? err : ret; /* the root's chunk: it cannot go */
	}
	return n ? n : err;
}

/* The chunk's header as it is on disk now (a repair may have rewritten
 * it): valid, this volume's, the same chunk with the same geometry. Read
 * into h (and which copy was healed, as vol_read_header says), c left as
 * it is: called without the volume lock on an offline chunk. */
static int reload_header(struct fs_volume *v, const struct chunk *c, struct od_chunk_header *h,
			 int *healed, char *why, size_t whylen)
{
	char reason[160];
	int ret = vol_read_header(c->store, 0, c->hdr.nblocks, h, healed);

	if (ret < 0) {
		snprintf(why, whylen, "both copies of chunk %u's header are bad", c->index);
		return ret;
	}
	if (memcmp(h->volume_uuid, v->uuid, 16) != 0) {
		snprintf(why, whylen, "chunk %u's header belongs to another volume", c->index);
		return -EUCLEAN;
	}
	ret = chunk_check_header(h, c->index, reason, sizeof(reason));
	if (ret == 0 && h->nblocks != c->hdr.nblocks) {
		snprintf(reason, sizeof(reason), "its size changed (%u blocks, was %u)", h->nblocks,
			 c->hdr.nblocks);
		ret = -EUCLEAN;
	}
	if (ret == 0 && (uint64_t)h->nblocks * OD_BLOCK_SIZE > c->store->size) {
		snprintf(reason, sizeof(reason), "its store holds %llu bytes, the chunk %llu",
			 (unsigned long long)c->store->size,
			 (unsigned long long)h->nblocks * OD_BLOCK_SIZE);
		ret = -EUCLEAN;
	}
	if (ret < 0) {
		snprintf(why, whylen, "chunk %u: %s", c->index, reason);
		return ret;
	}
	if (h->state == OD_STATE_NEEDS_REPAIR) {
		snprintf(why, whylen, "chunk %u is marked as needing repair: run fsck.chunkfs -y on it",
			 c->index);
		return -EUCLEAN;
	}
	return 0;
}

int fs_chunk_online(struct fs_volume *v, uint32_t i, fs_chunk_check_fn check, void *ctx,
		    char *why, size_t whylen)
{
	struct od_chunk_header h;
	struct chunk *c;
	uint64_t txid;
	int healed = 0, ret;

	c = lock_chunk(v, i, why, whylen);
	if (!c) {
		ret = -EINVAL;
		goto out;
	}
	if (!c->offline) {
		ret = 0;
		goto out;
	}
	/* Bringing a chunk back settles its last transaction and may heal
	 * its header: writes, which a volume open read-only (asked so, or
	 * because chunk 0's foster table is lost: foster_tab.c) must not
	 * make. */
	if (v->rdonly) {
		snprintf(why, whylen, "the volume is open read-only: chunk %u stays offline", i);
		ret = -EROFS;
		goto out;
	}
	/* The other chunks as committed on disk, for the check to read the
	 * inodes its cross-chunk pointers lead to. It runs first without the
	 * volume lock, the clients of the other chunks going on: nothing of
	 * the volume writes an offline chunk, and the others' changes do not
	 * touch what points into it, but a unit of theirs read while a
	 * transaction rewrites it may fail the check where nothing is wrong.
	 * A failure is therefore decided again with the volume locked and
	 * the others quiet, as is a check that cannot run unlocked. (The
	 * commit too is written without the lock.) */
	vol_unlock(v);
	ret = vol_sync_unlocked(v);
	if (ret < 0)
		snprintf(why, whylen, "committing before the check failed: %s", strerror(-ret));
	else
		ret = check(ctx, i, 1, why, whylen);
	vol_lock(v);
	if (!c->offline) {
		ret = 0; /* brought online meanwhile */
		goto out;
	}
	if (ret < 0 && ret != -ENOMEM) {
		ret = vol_sync(v, 0);
		if (ret < 0) {
			snprintf(why, whylen, "committing before the check failed: %s",
				 strerror(-ret));
			goto out;
		}
		ret = check(ctx, i, 0, why, whylen);
	}
	if (ret < 0)
		goto out;
	ret = vol_chunk_reacquire(v, i, why, whylen);
	if (ret < 0)
		goto out;
	/* Its header read and its last transaction settled (two flushes)
	 * without the volume lock, the chunk still offline and locked
	 * against other processes; its header in memory replaced locked. */
	txid = v->txid;
	vol_unlock(v);
	ret = reload_header(v, c, &h, &healed, why, whylen);
	if (ret == 0) {
		ret = txn_settle_chunk(c, txid);
		if (ret < 0)
			snprintf(why, whylen, "chunk %u: settling its last transaction failed: %s", i,
				 strerror(-ret));
	}
	vol_lock(v);
	if (!c->offline) {
		ret = 0; /* brought online meanwhile */
		goto out;
	}
	if (ret < 0) {
		vol_chunk_release(v, i);
		goto out;
	}
	c->hdr = h;
	if (healed) {
		c->header_dirty = 1;
		c->header_heal = healed - 1;
	}
	/* Names cached from before may have changed in the repair. */
	dindex_destroy(v);
	ret = dindex_init(v);
	if (ret < 0) {
		snprintf(why, whylen, "out of memory");
		vol_chunk_release(v, i);
		goto out;
	}
	c->offline = 0;
	c->offline_since = 0;
	c->why_offline[0] = '\0';
	c->lost_store = 0;
	chunk_free_ghosts(c);
out:
	if (ret < 0 && c && c->offline)
		snprintf(c->why_offline, sizeof(c->why_offline), "%s", why);
	vol_unlock(v);
	return ret;
}

int fs_chunk_reopen(struct fs_volume *v, uint32_t i, char *why, size_t whylen)
{
	struct chunk_store *st = NULL, *old;
	struct chunk *c;
	int ret;

	c = lock_chunk(v, i, why, whylen);
	if (!c || !c->offline || !c->place) {
		vol_unlock(v);
		return c ? 0 : -EINVAL;
	}
	vol_unlock(v);
	/* c->place is set at open and never changes. Connecting may take a
	 * while: not with the volume locked. */
	ret = vol_place_open(c->place, v->rdonly, &st, why, whylen);
	vol_lock(v);
	if (ret < 0) {
		snprintf(c->why_offline, sizeof(c->why_offline), "%s", why);
		vol_unlock(v);
		return ret;
	}
	old = NULL;
	/* Reads of it begun without the lock while it served (an
	 * evacuation's copy among them) end first, waited for unlocked. */
	chunk_wait_unpinned(c);
	if (c->offline && !c->retired) {
		old = c->store;
		c->store = st;
	} else {
		old = st; /* brought online (or retired) meanwhile, through the store it had */
	}
	vol_unlock(v);
	store_close(old);
	return 0;
}

int fs_chunk_probe(struct fs_volume *v, uint32_t i, char *why, size_t whylen)
{
	struct chunk *c = vol_chunk(v, i);
	struct chunk_store *st;
	int ret;

	/* c->place is set at open and never changes: read without the lock. */
	if (c && c->retired) {
		snprintf(why, whylen, "chunk %u is retired (evacuated)", i);
		return -EINVAL;
	}
	if (!c || !c->place) {
		snprintf(why, whylen, "chunk %u has no store of its own", i);
		return -EINVAL;
	}
	ret = vol_place_open(c->place, v->rdonly, &st, why, whylen);
	if (ret == 0)
		store_close(st);
	return ret;
}

struct chunk_store *fs_chunk_store(struct fs_volume *v, uint32_t i)
{
	struct chunk *c = vol_chunk(v, i);

	return c ? c->store : NULL;
}

int fs_chunk_info(struct fs_volume *v, uint32_t i, struct fs_chunk_info *out)
{
	struct chunk *c;

	memset(out, 0, sizeof(*out));
	vol_lock(v);
	c = vol_chunk(v, i);
	if (!c) {
		vol_unlock(v);
		return -EINVAL;
	}
	out->index = i;
	out->online = !c->offline;
	out->offline_since = c->offline_since;
	out->kind = c->hdr.kind;
	out->state = c->hdr.state;
	out->nblocks = c->hdr.nblocks;
	out->free_blocks = c->hdr.free_blocks;
	out->max_inodes = c->hdr.max_inodes;
	out->used_inodes = c->hdr.used_inodes;
	out->healed = c->healed;
	out->unreadable = c->bad_both;
	out->pin_waiters = __atomic_load_n(&c->pin_waiters, __ATOMIC_SEQ_CST);
	out->scrub_units = c->scrub_units;
	out->scrub_bad = c->scrub_bad;
	out->scrub_healed = c->scrub_healed;
	out->scrub_both_bad = c->scrub_both_bad;
	out->scrub_last = c->scrub_last;
	out->holds_root = holds_root(v, i);
	out->placed = c->place != NULL;
	out->draining = chunk_draining(c);
	out->retired = c->retired;
	out->lost_store = c->offline ? c->lost_store : 0;
	if (!c->offline && c->place && c->store) {
		struct store_nbd_stats ns;
		if (store_nbd_stats(c->store, &ns) == 0) {
			out->nbd = 1;
			out->nbd_conns = ns.conns;
			out->nbd_max_in_flight = ns.max_in_flight;
			out->nbd_commands = ns.commands;
			out->nbd_ra_kb = ns.ra_limit >> 10;
			out->nbd_ra_hits = ns.ra.hits;
			out->nbd_ra_hit_bytes = ns.ra.hit_bytes;
			out->nbd_ra_fetched = ns.ra.fetched;
			out->nbd_ra_hinted = ns.ra.hinted;
			out->nbd_ra_discarded = ns.ra.discarded;
			out->nbd_ra_bytes = ns.ra.bytes;
			out->nbd_ra_max_bytes = ns.ra.max_bytes;
		}
	}
	if (c->offline)
		snprintf(out->why_offline, sizeof(out->why_offline), "%s", c->why_offline);
	vol_unlock(v);
	return 0;
}

uint32_t fs_chunk_count(struct fs_volume *v)
{
	return v->nchunks;
}
