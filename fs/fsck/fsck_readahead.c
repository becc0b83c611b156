/* fsck's reading ahead: runs of metadata blocks read in one request per
 * copy, and the metadata zone read ahead at the start, so that a check
 * reads each block once and in order. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fsck/fsck_int.h"

static uint64_t run_key(uint8_t copy, uint32_t start)
{
	return ((uint64_t)copy << 32) | start;
}

/* The index of the last run at or before (copy, block), or nruns. */
static uint32_t run_at(const struct fsck_ctx *c, uint8_t copy, uint32_t block)
{
	uint32_t lo = 0, hi = c->nruns;
	uint64_t key = run_key(copy, block);

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (run_key(c->runs[mid].copy, c->runs[mid].start) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : c->nruns;
}

uint8_t *fsck_run_take(struct fsck_ctx *c, uint8_t copy, uint32_t block, uint16_t units)
{
	uint32_t i = run_at(c, copy, block);
	struct fsck_run *r;

	if (i == c->nruns)
		return NULL;
	r = &c->runs[i];
	if (r->copy != copy || block < r->start || (uint64_t)block + units > (uint64_t)r->start + r->n)
		return NULL;
	for (uint32_t k = block - r->start; k < block - r->start + units; k++)
		if (r->taken[k])
			return NULL;
	memset(r->taken + (block - r->start), 1, units);
	return r->buf + (size_t)(block - r->start) * OD_BLOCK_SIZE;
}

/* A run made of blocks [start, start + n) of a copy: read and kept in
 * order, or dropped when the read fails. */
static int run_add(struct fsck_ctx *c, uint8_t copy, uint32_t start, uint32_t n)
{
	uint64_t off = (uint64_t)(start + (copy ? c->half : 0)) * OD_BLOCK_SIZE;
	size_t len = (size_t)n * OD_BLOCK_SIZE;
	struct fsck_run r = { .start = start, .n = n, .copy = copy };
	uint32_t at;

	if (off + len > c->st->size)
		return 0;
	if (c->nruns == c->capruns) {
		uint32_t ncap = c->capruns ? c->capruns * 2 : 64;
		struct fsck_run *p = realloc(c->runs, ncap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		c->runs = p;
		c->capruns = ncap;
	}
	r.buf = fsck_alloc(c, len);
	r.taken = fsck_alloc(c, n);
	if (!r.buf || !r.taken)
		return -ENOMEM;
	if (store_pread(c->st, r.buf, len, off) < 0)
		return 0;
	memset(r.taken, 0, n);
	at = run_at(c, copy, start);
	at = at == c->nruns ? 0 : at + 1;
	memmove(&c->runs[at + 1], &c->runs[at], (c->nruns - at) * sizeof(r));
	c->runs[at] = r;
	c->nruns++;
	return 0;
}

int fsck_prefetch(struct fsck_ctx *c, uint32_t start, uint32_t n)
{
	int copies = c->both && !c->single_copy ? 2 : 1;

	if ((uint64_t)start + n > c->half)
		return 0;
	for (uint32_t done = 0; done < n;) {
		uint32_t k = n - done < FSCK_RUN_BLOCKS ? n - done : FSCK_RUN_BLOCKS;
		for (int copy = 0; copy < copies; copy++) {
			int ret = run_add(c, (uint8_t)copy, start + done, k);
			if (ret < 0)
				return fsck_oom(c);
		}
		done += k;
	}
	return 0;
}

static int bit_set(const uint8_t *map, uint32_t b)
{
	return (map[b >> 3] >> (b & 7)) & 1;
}

/* Copy 0 of block b may start a unit: in use in both halves. */
static int zone_used(const struct fsck_ctx *c, uint32_t b)
{
	return bit_set(c->disk_bitmap, b) && bit_set(c->disk_bitmap, b + c->half);
}

#define ZONE_GAP 8u /* blocks not in use that a run reads through */

int fsck_prefetch_zone(struct fsck_ctx *c)
{
	const struct od_chunk_header *h = &c->hdr;
	uint32_t share = h->kind == OD_KIND_SMALL ? 2 : h->kind == OD_KIND_LARGE ? 16 : 4;
	uint32_t end = h->data_start + (c->half - h->data_start) / share;
	uint32_t b = h->data_start;

	if (!c->disk_bitmap || (h->flags & OD_CHF_BITMAP_UNINIT))
		return 0;
	while (b < end) {
		uint32_t first, last;
		while (b < end && !zone_used(c, b))
			b++;
		if (b == end)
			break;
		first = last = b;
		/* Extend over used blocks and short gaps, up to one request. */
		while (b < end && b - first < FSCK_RUN_BLOCKS) {
			if (zone_used(c, b))
				last = b;
			else if (b - last > ZONE_GAP)
				break;
			b++;
		}
		if (fsck_prefetch(c, first, last + 1 - first) < 0)
			return -ENOMEM;
		b = last + 1;
	}
	return 0;
}
