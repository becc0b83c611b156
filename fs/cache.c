/* The block cache of metadata units: lookup by (chunk, block), LRU eviction
 * within a memory bound, and verified reads that compare both copies, serve
 * the newer whole one and heal the other from it. Writing dirty
 * units out is the transaction's job (txn.c). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/internal.h"

static uint32_t hash_of(uint32_t chunk, uint32_t block, uint32_t size)
{
	uint64_t k = ((uint64_t)chunk << 32) | block;

	k *= 0x9E3779B97F4A7C15ull;
	return (uint32_t)(k >> 32) & (size - 1);
}

int cache_init(struct fs_volume *v, uint64_t limit)
{
	v->hash_size = 1u << 16;
	v->hash = calloc(v->hash_size, sizeof(*v->hash));
	if (!v->hash)
		return -ENOMEM;
	v->lru.lru_next = v->lru.lru_prev = &v->lru;
	v->dirty.dirty_next = v->dirty.dirty_prev = &v->dirty;
	v->cache_limit = limit;
	return 0;
}

static void lru_unlink(struct buf *b)
{
	b->lru_prev->lru_next = b->lru_next;
	b->lru_next->lru_prev = b->lru_prev;
}

static void lru_push_front(struct fs_volume *v, struct buf *b)
{
	b->lru_next = v->lru.lru_next;
	b->lru_prev = &v->lru;
	v->lru.lru_next->lru_prev = b;
	v->lru.lru_next = b;
}

static void hash_unlink(struct fs_volume *v, struct buf *b)
{
	struct buf **pp = &v->hash[hash_of(b->c->index, b->block, v->hash_size)];

	while (*pp != b)
		pp = &(*pp)->hnext;
	*pp = b->hnext;
}

static void buf_destroy(struct fs_volume *v, struct buf *b)
{
	buf_undirty(b);
	hash_unlink(v, b);
	lru_unlink(b);
	v->cache_bytes -= (uint64_t)b->units * OD_BLOCK_SIZE;
	free(b->data);
	free(b);
}

void cache_destroy(struct fs_volume *v)
{
	while (v->lru.lru_next != &v->lru)
		buf_destroy(v, v->lru.lru_next);
	free(v->hash);
	v->hash = NULL;
}

static struct buf *cache_find(struct chunk *c, uint32_t block)
{
	struct fs_volume *v = c->vol;
	struct buf *b = v->hash[hash_of(c->index, block, v->hash_size)];

	while (b && (b->c != c || b->block != block))
		b = b->hnext;
	return b;
}

/* Drop clean, unreferenced units from the cold end until under the bound. */
static void cache_shrink(struct fs_volume *v)
{
	struct buf *b = v->lru.lru_prev;

	while (v->cache_bytes > v->cache_limit && b != &v->lru) {
		struct buf *prev = b->lru_prev;
		if (!b->dirty && b->refs == 0 && !b->pinned)
			buf_destroy(v, b);
		b = prev;
	}
}

static int buf_insert(struct chunk *c, uint32_t block, uint32_t units, struct buf **out)
{
	struct fs_volume *v = c->vol;
	struct buf *b;
	uint32_t h;

	if (v->evac_pre)
		evac_pre_unit_hit(v, c, block); /* (a unit read outside the lock is stale) */
	if (v->cache_bytes > v->cache_limit)
		cache_shrink(v);
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->data = malloc((size_t)units * OD_BLOCK_SIZE);
	if (!b->data) {
		free(b);
		return -ENOMEM;
	}
	b->c = c;
	b->block = block;
	b->units = units;
	b->refs = 1;
	b->heal_copy = -1;
	b->room = -1;
	h = hash_of(c->index, block, v->hash_size);
	b->hnext = v->hash[h];
	v->hash[h] = b;
	lru_push_front(v, b);
	v->cache_bytes += (uint64_t)units * OD_BLOCK_SIZE;
	*out = b;
	return 0;
}

/* The txid of a copy that is a whole unit of c at block, or 0 (a whole
 * unit stamped with txid 0 counts as 1). */
static uint64_t unit_txid(const struct chunk *c, const uint8_t *data, uint32_t block,
			  uint32_t units)
{
	struct od_mb_header h;

	if (od_verify(data, (size_t)units * OD_BLOCK_SIZE) < 0)
		return 0;
	od_get_mb_header(data, &h);
	return h.chunk == c->index && h.block == block ? (h.txid ? h.txid : 1) : 0;
}

/* Read copy (0 or 1) of a unit into data: its txid (0: not a whole unit),
 * or -EIO when the chunk's store lost its server. */
static int64_t read_copy(struct chunk *c, uint8_t *data, uint32_t block, uint32_t units, int copy)
{
	int ret = store_pread(c->store, data, (size_t)units * OD_BLOCK_SIZE,
			     (uint64_t)(copy ? chunk_mirror(c, block) : block) * OD_BLOCK_SIZE);

	if (ret < 0)
		return store_lost(c->store) ? -EIO : 0;
	return (int64_t)unit_txid(c, data, block, units);
}

/* Both copies are read: after every answered transaction they carry the
 * same txid (fs/txn.c), so one that does not verify, or carries an older
 * txid (a lost or misdirected write), is damage. The newer whole copy is
 * served, and the other rewritten first by the next transaction. */
int buf_read(struct chunk *c, uint32_t block, uint32_t units, struct buf **out)
{
	size_t len = (size_t)units * OD_BLOCK_SIZE;
	struct buf *b = cache_find(c, block);
	uint8_t *other = NULL;
	int64_t t0, t1 = 0;
	int ret;

	if (b) {
		if (b->units != units)
			return -EUCLEAN;
		b->refs++;
		lru_unlink(b);
		lru_push_front(c->vol, b);
		*out = b;
		return 0;
	}
	if (c->offline)
		return -EIO;
	if ((uint64_t)block + units > c->half)
		return -EUCLEAN;
	if (vol_nowait(c->vol))
		return vol_would_wait();
	ret = buf_insert(c, block, units, &b);
	if (ret < 0)
		return ret;
	if ((t0 = read_copy(c, b->data, block, units, 0)) < 0)
		goto gone;
	if (c->hdr.flags & OD_CHF_SINGLE_COPY) {
		if (t0)
			goto ok;
		goto bad;
	}
	other = malloc(len);
	if (!other) {
		ret = -ENOMEM;
		goto fail;
	}
	if ((t1 = read_copy(c, other, block, units, 1)) < 0)
		goto gone;
	if (!t0 && !t1)
		goto bad;
	if (t0 == t1)
		goto ok;
	c->healed++;
	b->heal_copy = t1 > t0 ? 0 : 1;
	if (t1 > t0)
		memcpy(b->data, other, len);
	buf_dirty(b);
	goto ok;
bad:
	c->bad_both++;
	c->hdr.state = OD_STATE_NEEDS_REPAIR;
	c->header_dirty = 1;
	ret = -EIO;
	goto fail;
gone:
	/* (a store that lost its server says nothing about the copies: the
	 * chunk goes offline, fs_offline_lost_stores, not to repair) */
	ret = -EIO;
fail:
	free(other);
	b->refs = 0;
	buf_destroy(c->vol, b);
	return ret;
ok:
	free(other);
	*out = b;
	return 0;
}

int unit_read_unlocked(struct chunk *c, struct chunk_store *st, uint32_t block, int single,
		       uint8_t *data, uint8_t *other)
{
	uint64_t t0, t1;
	int ret = store_pread(st, data, OD_BLOCK_SIZE, (uint64_t)block * OD_BLOCK_SIZE);

	if (ret < 0)
		return ret;
	t0 = unit_txid(c, data, block, 1);
	if (single)
		return t0 != 0;
	ret = store_pread(st, other, OD_BLOCK_SIZE, (uint64_t)chunk_mirror(c, block) * OD_BLOCK_SIZE);
	if (ret < 0)
		return ret;
	t1 = unit_txid(c, other, block, 1);
	return t0 && t0 == t1; /* else buf_read decides (a heal, a repair) */
}

int buf_prefill(struct chunk *c, uint32_t block, const uint8_t *data)
{
	struct buf *b;

	if (c->offline || cache_find(c, block) || buf_insert(c, block, 1, &b) < 0)
		return 0;
	memcpy(b->data, data, OD_BLOCK_SIZE);
	b->refs = 0;
	return 1;
}

int cache_drop_chunk(struct chunk *c)
{
	struct fs_volume *v = c->vol;
	struct buf *b = v->lru.lru_next;
	int busy = 0;

	while (b != &v->lru) {
		struct buf *next = b->lru_next;
		if (b->c == c) {
			if (b->refs || b->pinned) {
				busy++;
			} else {
				buf_destroy(v, b);
			}
		}
		b = next;
	}
	return busy ? -EBUSY : 0;
}

struct buf *buf_peek(struct chunk *c, uint32_t block)
{
	return cache_find(c, block);
}

int buf_fresh(struct chunk *c, uint32_t block, uint32_t units, uint16_t type, uint64_t owner,
	      struct buf **out)
{
	struct od_mb_header h = {
		.magic = OD_MB_MAGIC,
		.type = type,
		.units = (uint16_t)units,
		.chunk = c->index,
		.block = block,
		.owner = owner,
	};
	struct buf *b = cache_find(c, block);
	int ret;

	if (b && b->units == units) {
		/* Rewritten whole (a header, a bitmap block), or a unit freed
		 * and reused: the buffer is taken over. */
		b->refs++;
	} else {
		if (b) {
			if (b->refs)
				return -EUCLEAN;
			buf_destroy(c->vol, b);
		}
		ret = buf_insert(c, block, units, &b);
		if (ret < 0)
			return ret;
	}
	memset(b->data, 0, (size_t)units * OD_BLOCK_SIZE);
	od_put_mb_header(b->data, &h);
	buf_dirty(b);
	*out = b;
	return 0;
}

void buf_dirty(struct buf *b)
{
	struct chunk *c = b->c;
	struct fs_volume *v = c->vol;

	b->room = -1;
	if (!b->dirty) {
		b->dirty = 1;
		v->ndirty++;
		b->dirty_next = &v->dirty;
		b->dirty_prev = v->dirty.dirty_prev;
		v->dirty.dirty_prev->dirty_next = b;
		v->dirty.dirty_prev = b;
	}
	/* The first change since a clean close marks the chunk dirty, in the
	 * same transaction as the change. */
	if (c->hdr.state == OD_STATE_CLEAN) {
		c->hdr.state = OD_STATE_DIRTY;
		c->header_dirty = 1;
	}
}

/* b's change is no longer to be written: a transaction took it, or the
 * unit was freed. */
void buf_undirty(struct buf *b)
{
	if (!b->dirty)
		return;
	b->dirty = 0;
	b->c->vol->ndirty--;
	b->dirty_prev->dirty_next = b->dirty_next;
	b->dirty_next->dirty_prev = b->dirty_prev;
}

void buf_put(struct buf *b)
{
	if (b)
		b->refs--;
}

/* A unit that was freed: its cached copy must not be written back. */
void buf_forget(struct chunk *c, uint32_t block)
{
	struct buf *b = cache_find(c, block);

	/* (A transaction in flight that wrote it keeps its own copy of the
	 * bytes: rolled back, the unit is in use again.) */
	if (!b)
		return;
	buf_undirty(b);
	if (b->refs == 0)
		buf_destroy(c->vol, b);
}
