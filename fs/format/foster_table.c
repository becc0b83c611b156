/* Chunk 0's foster records, its header's and its table's (fostertab,
 * doc/format.md §6 "The foster table"): the one reader every program uses
 * (the daemon at open and before it shortens the image, fsck, the probe of
 * the nbdkit plugin), and the encoding of a unit from the list. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/format/foster_table.h"

void od_fosters_free(struct od_fosters *l)
{
	free(l->rec);
	free(l->retired);
	l->rec = NULL;
	l->retired = NULL;
	l->n = l->cap = l->nunits = l->lost_block = 0;
}

int od_fosters_add(struct od_fosters *l, const struct od_foster *rec, uint32_t retired)
{
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? 2 * l->cap : 64;
		struct od_foster *r = realloc(l->rec, cap * sizeof(*r));
		uint32_t *t;
		if (!r)
			return -ENOMEM;
		l->rec = r;
		t = realloc(l->retired, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		l->retired = t;
		l->cap = cap;
	}
	l->rec[l->n] = *rec;
	l->retired[l->n++] = retired;
	return 0;
}

int od_fosters_find(const struct od_fosters *l, uint32_t home)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (l->rec[i].home == home)
			return (int)i;
	return -1;
}

uint32_t od_fosters_retired(const struct od_fosters *l, uint32_t home)
{
	int i = od_fosters_find(l, home);

	return i >= 0 && (l->rec[i].flags & OD_FOSTER_RETIRED) ? l->retired[i] : 0;
}

uint32_t od_fosters_units_needed(uint32_t n)
{
	return n <= OD_MAX_FOSTERS ? 0 : (n - OD_MAX_FOSTERS + OD_FTAB_PER_UNIT - 1) / OD_FTAB_PER_UNIT;
}

void od_fosters_put_unit(const struct od_fosters *l, uint32_t k, uint8_t *payload)
{
	uint32_t first = OD_MAX_FOSTERS + k * OD_FTAB_PER_UNIT, count = 0;

	memset(payload, 0, OD_MB_PAYLOAD);
	for (uint32_t i = first; i < l->n && count < OD_FTAB_PER_UNIT; i++, count++)
		od_put_ftab_entry(payload, count, &l->rec[i], l->retired[i]);
	od_put_ftab_count(payload, count);
}

void od_fosters_put_header(const struct od_fosters *l, uint32_t start, struct od_chunk_header *h)
{
	uint32_t need = od_fosters_units_needed(l->n);

	memset(h->fosters, 0, sizeof(h->fosters));
	memset(h->retired_nblocks, 0, sizeof(h->retired_nblocks));
	h->nfosters = l->n < OD_MAX_FOSTERS ? l->n : OD_MAX_FOSTERS;
	for (uint32_t i = 0; i < h->nfosters; i++) {
		h->fosters[i] = l->rec[i];
		h->retired_nblocks[i] = l->retired[i];
	}
	h->ftab_start = need ? start : 0;
	h->ftab_units = need;
	h->ftab_count = need ? l->n - OD_MAX_FOSTERS : 0;
	if (need)
		h->feature_incompat |= OD_FEATURE_INCOMPAT_FTAB;
	else
		h->feature_incompat &= ~OD_FEATURE_INCOMPAT_FTAB;
	for (uint32_t i = 0; i < l->n; i++) {
		h->feature_incompat |= OD_FEATURE_INCOMPAT_FOSTER;
		if (l->rec[i].flags & OD_FOSTER_RETIRED)
			h->feature_incompat |= OD_FEATURE_INCOMPAT_RETIRED;
	}
}

/* The size recorded for a retired home: its own header's, when valid. */
static uint32_t home_size(const struct od_chunk_header *hdr, const uint8_t *ok, uint32_t n,
			  uint32_t home, uint32_t fallback_nb)
{
	uint32_t nb = home < n && ok[home] ? hdr[home].nblocks : 0;

	if (nb < OD_MIN_CHUNK_SIZE / OD_BLOCK_SIZE || nb > OD_MAX_CHUNK_SIZE / OD_BLOCK_SIZE ||
	    (nb & (nb - 1)))
		nb = fallback_nb;
	return nb;
}

/* Blocks of each copy read at once by foster_owners(). */
#define OWNERS_WINDOW 64u

/* The owner of each block of chunk 0's lower half that holds a foster map
 * unit (a valid copy, copy 0 first; in use), 0 for the others; read in
 * windows of both copies (a window that cannot be read gives no owner: a
 * map there is then not found, and its record is reported lost). NULL on
 * -ENOMEM. */
static uint32_t *foster_owners(const struct od_fosters_chunk0 *c0)
{
	const struct od_chunk_header *h0 = c0->h0;
	uint32_t half = h0->nblocks / 2, *own = calloc(half ? half : 1, sizeof(*own));
	uint8_t *buf = malloc(2 * (size_t)OWNERS_WINDOW * OD_BLOCK_SIZE);

	if (!own || !buf) {
		free(own);
		free(buf);
		return NULL;
	}
	for (uint32_t w = h0->data_start; w < half; w += OWNERS_WINDOW) {
		uint32_t n = half - w < OWNERS_WINDOW ? half - w : OWNERS_WINDOW;
		int got[2];
		for (int copy = 0; copy < 2; copy++) {
			uint64_t off = c0->base + (uint64_t)(w + (copy ? half : 0)) * OD_BLOCK_SIZE;
			size_t len = (size_t)n * OD_BLOCK_SIZE;
			got[copy] = off + len <= c0->src->size &&
				    c0->src->pread(c0->src->ctx,
						   buf + (size_t)copy * OWNERS_WINDOW * OD_BLOCK_SIZE,
						   len, off) == 0;
		}
		for (uint32_t i = 0; i < n; i++) {
			uint32_t b = w + i;
			for (int copy = 0; copy < 2; copy++) {
				const uint8_t *p = buf + ((size_t)copy * OWNERS_WINDOW + i) * OD_BLOCK_SIZE;
				struct od_mb_header mh;
				if (!got[copy] || od_verify(p, OD_BLOCK_SIZE) < 0)
					continue;
				od_get_mb_header(p, &mh);
				if (mh.magic == OD_MB_MAGIC && mh.type == OD_MB_FOSTER &&
				    mh.units == 1 && mh.chunk == 0 && mh.block == b && mh.owner &&
				    mh.owner < OD_MAX_CHUNKS &&
				    (!c0->allocated || c0->allocated(c0->ctx, b)))
					own[b] = (uint32_t)mh.owner;
				break;
			}
		}
	}
	free(buf);
	return own;
}

/* The start of the one run of exactly nb blocks owned by home, or 0. */
static uint32_t moved_run(const uint32_t *own, uint32_t from, uint32_t half, uint32_t home,
			  uint32_t nb)
{
	uint32_t found = 0, runs = 0;

	for (uint32_t b = from; b < half; b++) {
		uint32_t e = b;
		if (own[b] != home)
			continue;
		while (e < half && own[e] == home)
			e++;
		runs++;
		if (e - b == nb)
			found = b;
		b = e;
	}
	return runs == 1 ? found : 0;
}

int od_fosters_recover(struct od_fosters *l, const struct od_chunk_header *hdr,
		       const uint8_t *ok, uint32_t n, uint32_t fallback_nb,
		       const struct od_fosters_chunk0 *c0, uint32_t *lost, uint32_t *nlost)
{
	uint32_t *own = NULL;
	int ret = 0;

	*nlost = 0;
	/* the hosts' records first: they decide */
	for (uint32_t j = 1; j < n && ret == 0; j++) {
		for (uint32_t r = 0; ok[j] && r < hdr[j].nfosters && r < OD_MAX_FOSTERS; r++) {
			const struct od_foster *f = &hdr[j].fosters[r];
			if (f->chunk != j || od_fosters_find(l, f->home) >= 0)
				continue;
			ret = od_fosters_add(l, f, (f->flags & OD_FOSTER_RETIRED)
							   ? home_size(hdr, ok, n, f->home, fallback_nb)
							   : 0);
			if (ret < 0)
				break;
		}
	}
	/* then each home's own record */
	for (uint32_t k = 1; k < n && ret == 0; k++) {
		for (uint32_t r = 0; ok[k] && r < hdr[k].nfosters && r < OD_MAX_FOSTERS; r++) {
			struct od_foster f = hdr[k].fosters[r];
			if (f.home != k || od_fosters_find(l, k) >= 0)
				continue;
			if ((f.flags & OD_FOSTER_RETIRED) && f.chunk != 0) {
				/* stale: moved, into chunk 0 or lost with its host */
				if (c0 && c0->src && !own && !(own = foster_owners(c0))) {
					ret = -ENOMEM;
					break;
				}
				f.chunk = 0;
				f.start = own ? moved_run(own, c0->h0->data_start,
							  c0->h0->nblocks / 2, k, f.nblocks)
					      : 0;
				if (!f.start) {
					lost[(*nlost)++] = k;
					break;
				}
			}
			ret = od_fosters_add(l, &f, (f.flags & OD_FOSTER_RETIRED)
							    ? home_size(hdr, ok, n, k, fallback_nb)
							    : 0);
			break;
		}
	}
	free(own);
	return ret;
}

/* Copy `copy` of table unit k at block of chunk 0 (whose header is h0)
 * into buf, when it is that unit: 0, or -EUCLEAN; *txid its writer's. */
static int unit_copy(const struct od_header_src *src, uint64_t base,
		     const struct od_chunk_header *h0, uint32_t block, uint32_t k, int copy,
		     uint8_t *buf, uint64_t *txid)
{
	uint64_t off = base + (uint64_t)(block + (copy ? h0->nblocks / 2 : 0)) * OD_BLOCK_SIZE;
	struct od_mb_header h;

	if (off + OD_BLOCK_SIZE > src->size || src->pread(src->ctx, buf, OD_BLOCK_SIZE, off) < 0 ||
	    od_verify(buf, OD_BLOCK_SIZE) < 0)
		return -EUCLEAN;
	od_get_mb_header(buf, &h);
	if (h.magic != OD_MB_MAGIC || h.type != OD_MB_FTAB || h.units != 1 || h.chunk != 0 ||
	    h.block != block || h.seq != k || h.owner != 0)
		return -EUCLEAN;
	*txid = h.txid;
	return 0;
}

int od_fosters_shape_ok(const struct od_chunk_header *h0)
{
	return h0->ftab_units <= OD_FTAB_MAX_UNITS &&
	       h0->ftab_count <= h0->ftab_units * OD_FTAB_PER_UNIT &&
	       h0->ftab_count + OD_FTAB_PER_UNIT >= h0->ftab_units * OD_FTAB_PER_UNIT;
}

int od_fosters_read(const struct od_header_src *src, uint64_t base,
		    const struct od_chunk_header *h0, int copy, struct od_fosters *out, char *why,
		    size_t n)
{
	uint8_t *buf = malloc(2 * OD_BLOCK_SIZE), *seen = calloc(OD_MAX_CHUNKS / 8 + 1, 1);
	uint32_t block = h0->ftab_start;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (!buf || !seen) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < h0->nfosters && i < OD_MAX_FOSTERS && ret == 0; i++) {
		uint32_t home = h0->fosters[i].home;
		ret = od_fosters_add(out, &h0->fosters[i], h0->retired_nblocks[i]);
		if (home < OD_MAX_CHUNKS)
			seen[home / 8] |= (uint8_t)(1u << home % 8);
	}
	if (ret < 0 || !h0->ftab_start)
		goto out;
	/* (the header may not have been checked yet: open reads the retired
	 * chunks first) */
	if (!od_fosters_shape_ok(h0)) {
		snprintf(why, n, "foster table of %u records in %u units", h0->ftab_count,
			 h0->ftab_units);
		ret = -EUCLEAN;
		goto out;
	}
	if (h0->flags & OD_CHF_SINGLE_COPY)
		copy = 0; /* (copy 1 is never written) */
	for (uint32_t k = 0; k < h0->ftab_units && ret == 0; k++) {
		uint32_t want = k + 1 < h0->ftab_units ? OD_FTAB_PER_UNIT
						       : h0->ftab_count - k * OD_FTAB_PER_UNIT;
		uint64_t t[2] = { 0, 0 };
		int ok[2] = { 0, 0 }, use;
		struct od_mb_header h;
		const uint8_t *p;
		for (int c = 0; c < 2; c++)
			if (copy < 0 || copy == c)
				ok[c] = unit_copy(src, base, h0, block, k, c, buf + c * OD_BLOCK_SIZE,
						  &t[c]) == 0;
		use = ok[1] && (!ok[0] || t[1] > t[0]);
		if (!ok[use]) {
			snprintf(why, n, "foster table unit %u (block %u) has no good copy", k, block);
			out->lost_block = block;
			ret = -EUCLEAN;
			break;
		}
		p = buf + use * OD_BLOCK_SIZE;
		od_get_mb_header(p, &h);
		p += OD_MB_HEADER_SIZE;
		if (od_get_ftab_count(p) != want || (k + 1 < h0->ftab_units) != (h.next != 0)) {
			snprintf(why, n, "foster table unit %u (block %u): %u records, next %u; "
					 "the header says %u", k, block, od_get_ftab_count(p), h.next, want);
			out->lost_block = block;
			ret = -EUCLEAN;
			break;
		}
		for (uint32_t e = 0; e < want && ret == 0; e++) {
			struct od_foster f;
			uint32_t nb;
			od_get_ftab_entry(p, e, &f, &nb);
			if (od_foster_check(&f, nb, 0, h0) < 0 ||
			    (seen[f.home / 8] & (1u << f.home % 8))) {
				snprintf(why, n, "foster table unit %u: bad record %u (home %u, chunk "
						 "%u, blocks %u+%u, %u entries, flags 0x%x)", k, e,
					 f.home, f.chunk, f.start, f.nblocks, f.entries, f.flags);
				out->lost_block = block;
				ret = -EUCLEAN;
				break;
			}
			seen[f.home / 8] |= (uint8_t)(1u << f.home % 8);
			ret = od_fosters_add(out, &f, nb);
		}
		if (ret == 0) {
			out->units[out->nunits++] = block;
			block = h.next;
			if (block && (block < h0->data_start || block >= h0->nblocks / 2)) {
				snprintf(why, n, "foster table unit %u: next unit at block %u", k, block);
				ret = -EUCLEAN;
			}
			for (uint32_t j = 0; j < out->nunits && ret == 0; j++)
				if (out->units[j] == block) {
					snprintf(why, n, "the foster table loops at block %u", block);
					ret = -EUCLEAN;
				}
		}
	}
out:
	free(buf);
	free(seen);
	return ret;
}
