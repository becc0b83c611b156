/* Encoding and decoding of every on-disk structure of format v1: the only
 * code that knows byte offsets. All fields are little-endian. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "fs/format/crc32c.h"
#include "fs/format/ondisk.h"

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static inline uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | ((uint64_t)get32(p + 4) << 32);
}

void od_put_mb_header(uint8_t *b, const struct od_mb_header *h)
{
	put32(b + 0, h->magic);
	put16(b + 4, h->type);
	put16(b + 6, h->units);
	put32(b + 8, h->crc);
	put32(b + 12, h->chunk);
	put32(b + 16, h->block);
	put32(b + 20, h->seq);
	put64(b + 24, h->txid);
	put64(b + 32, h->owner);
	put32(b + 40, h->next);
	put32(b + 44, h->reserved);
}

void od_get_mb_header(const uint8_t *b, struct od_mb_header *h)
{
	h->magic = get32(b + 0);
	h->type = get16(b + 4);
	h->units = get16(b + 6);
	h->crc = get32(b + 8);
	h->chunk = get32(b + 12);
	h->block = get32(b + 16);
	h->seq = get32(b + 20);
	h->txid = get64(b + 24);
	h->owner = get64(b + 32);
	h->next = get32(b + 40);
	h->reserved = get32(b + 44);
}

static uint32_t unit_crc(const uint8_t *buf, size_t len)
{
	static const uint8_t zero[4];
	uint32_t c = crc32c(0, buf, 8);

	c = crc32c(c, zero, 4);
	return crc32c(c, buf + 12, len - 12);
}

void od_seal(uint8_t *buf, size_t len)
{
	put32(buf + 8, unit_crc(buf, len));
}

int od_verify(const uint8_t *buf, size_t len)
{
	if (get32(buf) != OD_MB_MAGIC)
		return -EBADMSG;
	if ((size_t)get16(buf + 6) * OD_BLOCK_SIZE != len)
		return -EBADMSG;
	return get32(buf + 8) == unit_crc(buf, len) ? 0 : -EBADMSG;
}

/* Chunk header payload, at byte 48 of block 0 (and of its mirror). */
#define CH 48
static_assert(1032 + OD_MAX_FOSTERS * OD_FOSTER_SIZE <= OD_MB_PAYLOAD,
	      "the foster table fits the header's payload");
static_assert(2060 + 4 * OD_MAX_FOSTERS <= 2192, "evac2's block ends before fostertab's");
static_assert(OD_FTAB_PER_UNIT == 144, "144 records in a foster table unit");
/* A foster record's 24 bytes, in a chunk header or a foster table unit. */
static void put_foster(uint8_t *p, const struct od_foster *f)
{
	put32(p + 0, f->home);
	put32(p + 4, f->chunk);
	put32(p + 8, f->start);
	put32(p + 12, f->nblocks);
	put32(p + 16, f->entries);
	put32(p + 20, f->flags);
}

static void get_foster(const uint8_t *p, struct od_foster *f)
{
	f->home = get32(p + 0);
	f->chunk = get32(p + 4);
	f->start = get32(p + 8);
	f->nblocks = get32(p + 12);
	f->entries = get32(p + 16);
	f->flags = get32(p + 20);
}

void od_put_chunk_header(uint8_t *b, const struct od_chunk_header *c)
{
	memcpy(b + CH + 0, OD_CHUNK_MAGIC, 8);
	put32(b + CH + 8, c->version);
	put32(b + CH + 12, c->feature_compat);
	put32(b + CH + 16, c->feature_incompat);
	put32(b + CH + 20, c->feature_ro_compat);
	memcpy(b + CH + 24, c->volume_uuid, 16);
	put32(b + CH + 40, c->chunk_index);
	put32(b + CH + 44, c->chunk_count);
	put32(b + CH + 48, c->block_size);
	put32(b + CH + 52, c->nblocks);
	put32(b + CH + 56, c->kind);
	put32(b + CH + 60, c->state);
	put32(b + CH + 64, c->flags);
	put32(b + CH + 68, c->dir_unit);
	put32(b + CH + 72, c->max_inodes);
	put32(b + CH + 76, c->islots);
	put32(b + CH + 80, c->dirty_start);
	put32(b + CH + 84, c->dirty_blocks);
	put32(b + CH + 88, c->bitmap_start);
	put32(b + CH + 92, c->bitmap_blocks);
	put32(b + CH + 96, c->map_start);
	put32(b + CH + 100, c->map_blocks);
	put32(b + CH + 104, c->itable_start);
	put32(b + CH + 108, c->itable_blocks);
	put32(b + CH + 112, c->data_start);
	put32(b + CH + 116, c->map_watermark);
	put32(b + CH + 120, c->islot_watermark);
	put32(b + CH + 124, c->free_blocks);
	put32(b + CH + 128, c->used_inodes);
	put64(b + CH + 136, c->root_stable);
	put64(b + CH + 144, c->mkfs_time);
	put64(b + CH + 152, c->last_check_time);
	put64(b + CH + 160, c->txid);
	memcpy(b + CH + 168, c->label, 32);
	memcpy(b + CH + 200, c->secret, 32);
	/* Foster maps at payload byte 1024. */
	put32(b + CH + 1024, c->nfosters);
	for (uint32_t i = 0; i < OD_MAX_FOSTERS; i++)
		put_foster(b + CH + 1032 + i * OD_FOSTER_SIZE, &c->fosters[i]);
	put32(b + CH + 232, c->pred_start); /* predp */
	/* evac2 at payload byte 2048. */
	for (uint32_t i = 0; i < OD_MAX_FOSTERS; i++)
		put32(b + CH + 2048 + 4 * i, c->retired_nblocks[i]);
	put32(b + CH + 2048 + 4 * OD_MAX_FOSTERS, c->evac_state);
	put32(b + CH + 2052 + 4 * OD_MAX_FOSTERS, c->evac_slot);
	put32(b + CH + 2056 + 4 * OD_MAX_FOSTERS, c->evac_map);
	/* fostertab at payload byte 2192. */
	put32(b + CH + 2192, c->ftab_start);
	put32(b + CH + 2196, c->ftab_count);
	put32(b + CH + 2200, c->ftab_units);
}

int od_get_chunk_header(const uint8_t *b, struct od_chunk_header *c)
{
	if (memcmp(b + CH, OD_CHUNK_MAGIC, 8) != 0)
		return -EINVAL;
	c->version = get32(b + CH + 8);
	c->feature_compat = get32(b + CH + 12);
	c->feature_incompat = get32(b + CH + 16);
	c->feature_ro_compat = get32(b + CH + 20);
	memcpy(c->volume_uuid, b + CH + 24, 16);
	c->chunk_index = get32(b + CH + 40);
	c->chunk_count = get32(b + CH + 44);
	c->block_size = get32(b + CH + 48);
	c->nblocks = get32(b + CH + 52);
	c->kind = get32(b + CH + 56);
	c->state = get32(b + CH + 60);
	c->flags = get32(b + CH + 64);
	c->dir_unit = get32(b + CH + 68);
	c->max_inodes = get32(b + CH + 72);
	c->islots = get32(b + CH + 76);
	c->dirty_start = get32(b + CH + 80);
	c->dirty_blocks = get32(b + CH + 84);
	c->bitmap_start = get32(b + CH + 88);
	c->bitmap_blocks = get32(b + CH + 92);
	c->map_start = get32(b + CH + 96);
	c->map_blocks = get32(b + CH + 100);
	c->itable_start = get32(b + CH + 104);
	c->itable_blocks = get32(b + CH + 108);
	c->data_start = get32(b + CH + 112);
	c->map_watermark = get32(b + CH + 116);
	c->islot_watermark = get32(b + CH + 120);
	c->free_blocks = get32(b + CH + 124);
	c->used_inodes = get32(b + CH + 128);
	c->root_stable = get64(b + CH + 136);
	c->mkfs_time = get64(b + CH + 144);
	c->last_check_time = get64(b + CH + 152);
	c->txid = get64(b + CH + 160);
	memcpy(c->label, b + CH + 168, 32);
	c->label[31] = '\0';
	memcpy(c->secret, b + CH + 200, 32);
	c->nfosters = get32(b + CH + 1024);
	for (uint32_t i = 0; i < OD_MAX_FOSTERS; i++)
		get_foster(b + CH + 1032 + i * OD_FOSTER_SIZE, &c->fosters[i]);
	c->pred_start = get32(b + CH + 232); /* predp */
	for (uint32_t i = 0; i < OD_MAX_FOSTERS; i++)
		c->retired_nblocks[i] = get32(b + CH + 2048 + 4 * i);
	c->evac_state = get32(b + CH + 2048 + 4 * OD_MAX_FOSTERS);
	c->evac_slot = get32(b + CH + 2052 + 4 * OD_MAX_FOSTERS);
	c->evac_map = get32(b + CH + 2056 + 4 * OD_MAX_FOSTERS);
	c->ftab_start = get32(b + CH + 2192);
	c->ftab_count = get32(b + CH + 2196);
	c->ftab_units = get32(b + CH + 2200);
	return 0;
}
#undef CH

void od_put_ftab_count(uint8_t *p, uint32_t count)
{
	put32(p, count);
	put32(p + 4, 0);
}

uint32_t od_get_ftab_count(const uint8_t *p)
{
	return get32(p);
}

void od_put_ftab_entry(uint8_t *p, uint32_t k, const struct od_foster *f, uint32_t retired)
{
	uint8_t *e = p + OD_FTAB_HEAD_SIZE + k * OD_FTAB_ENTRY_SIZE;

	put_foster(e, f);
	put32(e + OD_FOSTER_SIZE, retired);
}

void od_get_ftab_entry(const uint8_t *p, uint32_t k, struct od_foster *f, uint32_t *retired)
{
	const uint8_t *e = p + OD_FTAB_HEAD_SIZE + k * OD_FTAB_ENTRY_SIZE;

	get_foster(e, f);
	*retired = get32(e + OD_FOSTER_SIZE);
}

void od_put_extent(uint8_t *b, const struct od_extent *e)
{
	put64(b + 0, e->lblk);
	put32(b + 8, e->pblk);
	put32(b + 12, e->len);
}

void od_get_extent(const uint8_t *b, struct od_extent *e)
{
	e->lblk = get64(b + 0);
	e->pblk = get32(b + 8);
	e->len = get32(b + 12);
}

static void put_loc(uint8_t *b, const struct od_loc *l)
{
	put32(b + 0, l->chunk);
	put32(b + 4, l->block);
	put16(b + 8, l->off);
}

static void get_loc(const uint8_t *b, struct od_loc *l)
{
	l->chunk = get32(b + 0);
	l->block = get32(b + 4);
	l->off = get16(b + 8);
}

void od_put_inode(uint8_t *b, const struct od_inode *i)
{
	memset(b, 0, OD_INODE_SIZE);
	put64(b + 0, i->stable);
	put32(b + 8, i->generation);
	put32(b + 12, i->mode);
	put32(b + 16, i->nlink);
	put32(b + 20, i->uid);
	put32(b + 24, i->gid);
	put32(b + 28, i->flags);
	put64(b + 32, i->size);
	put64(b + 40, (uint64_t)i->atime);
	put64(b + 48, (uint64_t)i->mtime);
	put64(b + 56, (uint64_t)i->ctime);
	put32(b + 64, i->atime_ns);
	put32(b + 68, i->mtime_ns);
	put32(b + 72, i->ctime_ns);
	put32(b + 76, i->rdev);
	put64(b + 80, i->verifier);
	put64(b + 88, i->parent);
	put_loc(b + 96, &i->next);
	put16(b + 106, i->nextents);
	put32(b + 108, i->head_chunk);
	put64(b + 112, i->head_stable);
	put64(b + 120, i->cont_start);
	put32(b + 128, i->ext_block);
	put32(b + 132, i->inline_len);
	put64(b + 136, i->blocks);
	for (unsigned k = 0; k < OD_INODE_EXTENTS; k++)
		od_put_extent(b + 144 + 16 * k, &i->ext[k]);
}

void od_get_inode(const uint8_t *b, struct od_inode *i)
{
	i->stable = get64(b + 0);
	i->generation = get32(b + 8);
	i->mode = get32(b + 12);
	i->nlink = get32(b + 16);
	i->uid = get32(b + 20);
	i->gid = get32(b + 24);
	i->flags = get32(b + 28);
	i->size = get64(b + 32);
	i->atime = (int64_t)get64(b + 40);
	i->mtime = (int64_t)get64(b + 48);
	i->ctime = (int64_t)get64(b + 56);
	i->atime_ns = get32(b + 64);
	i->mtime_ns = get32(b + 68);
	i->ctime_ns = get32(b + 72);
	i->rdev = get32(b + 76);
	i->verifier = get64(b + 80);
	i->parent = get64(b + 88);
	get_loc(b + 96, &i->next);
	i->nextents = get16(b + 106);
	i->head_chunk = get32(b + 108);
	i->head_stable = get64(b + 112);
	i->cont_start = get64(b + 120);
	i->ext_block = get32(b + 128);
	i->inline_len = get32(b + 132);
	i->blocks = get64(b + 136);
	for (unsigned k = 0; k < OD_INODE_EXTENTS; k++)
		od_get_extent(b + 144 + 16 * k, &i->ext[k]);
}

void od_put_map_entry(uint8_t *b, const struct od_map_entry *e)
{
	put_loc(b + 0, &e->loc);
	put16(b + 10, e->flags);
	put32(b + 12, e->generation);
}

void od_get_map_entry(const uint8_t *b, struct od_map_entry *e)
{
	get_loc(b + 0, &e->loc);
	e->flags = get16(b + 10);
	e->generation = get32(b + 12);
}

void od_put_dirent(uint8_t *b, const struct od_dirent *d)
{
	put16(b + 0, d->rec_len);
	b[2] = d->name_len;
	b[3] = d->kind;
	put32(b + 4, d->hash);
	put64(b + 8, d->stable);
}

void od_get_dirent(const uint8_t *b, struct od_dirent *d)
{
	d->rec_len = get16(b + 0);
	d->name_len = b[2];
	d->kind = b[3];
	d->hash = get32(b + 4);
	d->stable = get64(b + 8);
}

uint32_t od_dirent_used(const uint8_t *b, const struct od_dirent *d)
{
	uint32_t name = OD_DIRENT_HEADER + od_align8(d->name_len);

	if (d->kind == OD_DE_FREE)
		return 0;
	if (d->kind != OD_DE_EMBEDDED)
		return name;
	return name + OD_INODE_SIZE + od_align8(get32(b + name + 132));
}

void od_put_dl_head(uint8_t *b, const struct od_dl_head *h)
{
	put32(b + 0, h->nblocks);
	put32(b + 4, h->nentries);
	put32(b + 8, h->nparts);
	put32(b + 12, 0);
}

void od_get_dl_head(const uint8_t *b, struct od_dl_head *h)
{
	h->nblocks = get32(b + 0);
	h->nentries = get32(b + 4);
	h->nparts = get32(b + 8);
}

void od_put_dl_entry(uint8_t *b, const struct od_dl_entry *e)
{
	put32(b + 0, e->block);
	put16(b + 4, e->units);
	b[6] = e->copy;
	b[7] = e->flags;
}

void od_get_dl_entry(const uint8_t *b, struct od_dl_entry *e)
{
	e->block = get32(b + 0);
	e->units = get16(b + 4);
	e->copy = b[6];
	e->flags = b[7];
}

/* predp: the head of a predictor unit's payload. */
void od_put_pred_head(uint8_t *b, const struct od_pred_head *h)
{
	put32(b + 0, h->count);
	put32(b + 4, h->total);
	put32(b + 8, h->nunits);
	put32(b + 12, 0);
	put64(b + 16, h->observed);
	put64(b + 24, h->lives);
	put64(b + 32, h->evicted);
	put64(b + 40, (uint64_t)h->saved);
}

void od_get_pred_head(const uint8_t *b, struct od_pred_head *h)
{
	h->count = get32(b + 0);
	h->total = get32(b + 4);
	h->nunits = get32(b + 8);
	h->reserved = get32(b + 12);
	h->observed = get64(b + 16);
	h->lives = get64(b + 24);
	h->evicted = get64(b + 32);
	h->saved = (int64_t)get64(b + 40);
}
