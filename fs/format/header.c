/* A chunk's header as every program reads it (fs/format/header.h): the
 * geometry a chunk size implies, the checks a header must pass, one copy's
 * parsing, and both copies read through a byte source. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "fs/format/header.h"

const char *od_unit_name(uint16_t type)
{
	switch (type) {
	case OD_MB_CHUNK_HEADER:
		return "chunk header";
	case OD_MB_DIRTY_LIST:
		return "dirty list block";
	case OD_MB_BITMAP:
		return "block bitmap block";
	case OD_MB_MAP:
		return "map block";
	case OD_MB_ITABLE:
		return "inode-area block";
	case OD_MB_DIR:
		return "directory unit";
	case OD_MB_EXTENTS:
		return "extent unit";
	case OD_MB_FOSTER:
		return "foster map block";
	case OD_MB_PREDICT:
		return "predictor unit";
	case OD_MB_FTAB:
		return "foster table unit";
	}
	return "unit";
}

static uint32_t div_up(uint64_t a, uint64_t b)
{
	return (uint32_t)((a + b - 1) / b);
}

void chunk_geometry(struct od_chunk_header *h, uint32_t nblocks, uint32_t bytes_per_inode)
{
	uint64_t max_inodes = (uint64_t)nblocks * OD_BLOCK_SIZE / bytes_per_inode;
	uint32_t islots;

	if (max_inodes < 16)
		max_inodes = 16;
	if (max_inodes > 0x7fffffffu)
		max_inodes = 0x7fffffffu;
	islots = (uint32_t)(max_inodes / 4);
	if (islots < OD_ISLOTS_PER_BLOCK)
		islots = OD_ISLOTS_PER_BLOCK;
	islots = div_up(islots, OD_ISLOTS_PER_BLOCK) * OD_ISLOTS_PER_BLOCK;

	h->block_size = OD_BLOCK_SIZE;
	h->nblocks = nblocks;
	h->dir_unit = OD_DEFAULT_DIR_UNIT;
	h->max_inodes = (uint32_t)max_inodes;
	h->islots = islots;
	h->dirty_start = 1;
	h->dirty_blocks = OD_DIRTY_LIST_BLOCKS;
	h->bitmap_start = h->dirty_start + h->dirty_blocks;
	h->bitmap_blocks = div_up(nblocks, OD_BITMAP_BITS_PER_BLOCK);
	h->map_start = h->bitmap_start + h->bitmap_blocks;
	h->map_blocks = div_up(max_inodes, OD_MAP_PER_BLOCK);
	h->itable_start = h->map_start + h->map_blocks;
	h->itable_blocks = islots / OD_ISLOTS_PER_BLOCK;
	h->data_start = h->itable_start + h->itable_blocks;
	/* Both halves lose the fixed metadata region: primaries and mirrors. */
	h->free_blocks = nblocks - 2 * h->data_start;
}

int od_foster_check(const struct od_foster *f, uint32_t retired, uint32_t index,
		    const struct od_chunk_header *h)
{
	int bad = f->home == 0 || f->home == f->chunk || f->home >= OD_MAX_CHUNKS ||
		  f->chunk >= OD_MAX_CHUNKS || f->nblocks == 0 ||
		  (uint64_t)f->nblocks * OD_MAP_PER_BLOCK < f->entries ||
		  (f->flags & ~OD_FOSTER_RETIRED);

	if (!bad && index == 0 && (f->flags & OD_FOSTER_RETIRED))
		bad = !(h->feature_incompat & OD_FEATURE_INCOMPAT_RETIRED) ||
		      retired < OD_MIN_CHUNK_SIZE / OD_BLOCK_SIZE ||
		      (uint64_t)retired > OD_MAX_CHUNK_SIZE / OD_BLOCK_SIZE ||
		      (retired & (retired - 1));
	if (!bad && f->chunk == index)
		bad = f->start < h->data_start || (uint64_t)f->start + f->nblocks > h->nblocks / 2;
	return bad ? -EUCLEAN : 0;
}

/* The foster records a header carries: within the table, each naming two
 * different chunks, no home twice, and a record hosted here inside this
 * chunk's data area, large enough for its entries; chunk 0's table of
 * further records (fostertab) named only there, with its feature, after a
 * full header, with units enough for its records. */
static int check_fosters(const struct od_chunk_header *h, uint32_t index, char *why, size_t n)
{
	if (h->nfosters && !(h->feature_incompat & OD_FEATURE_INCOMPAT_FOSTER)) {
		snprintf(why, n, "%u foster maps without the foster feature", h->nfosters);
		return -EUCLEAN;
	}
	if (h->nfosters > OD_MAX_FOSTERS) {
		snprintf(why, n, "%u foster maps (at most %u)", h->nfosters, OD_MAX_FOSTERS);
		return -EUCLEAN;
	}
	for (uint32_t i = 0; i < h->nfosters; i++) {
		const struct od_foster *f = &h->fosters[i];
		int bad = od_foster_check(f, h->retired_nblocks[i], index, h) < 0;
		for (uint32_t j = 0; j < i && !bad; j++)
			bad = h->fosters[j].home == f->home;
		if (bad) {
			snprintf(why, n, "bad foster map record %u (home %u, chunk %u, blocks %u+%u, "
					 "%u entries, flags 0x%x)", i, f->home, f->chunk, f->start,
				 f->nblocks, f->entries, f->flags);
			return -EUCLEAN;
		}
	}
	if ((h->ftab_start || h->ftab_count || h->ftab_units) &&
	    (index != 0 || !(h->feature_incompat & OD_FEATURE_INCOMPAT_FTAB) ||
	     h->nfosters != OD_MAX_FOSTERS || !h->ftab_start || !h->ftab_units ||
	     h->ftab_units > OD_FTAB_MAX_UNITS || h->ftab_count > OD_MAX_CHUNKS ||
	     h->ftab_count > h->ftab_units * OD_FTAB_PER_UNIT ||
	     h->ftab_count + OD_FTAB_PER_UNIT < h->ftab_units * OD_FTAB_PER_UNIT ||
	     h->ftab_start < h->data_start || h->ftab_start >= h->nblocks / 2)) {
		snprintf(why, n, "bad foster table (block %u, %u records in %u units, %u in the "
				 "header)", h->ftab_start, h->ftab_count, h->ftab_units, h->nfosters);
		return -EUCLEAN;
	}
	return 0;
}

int chunk_check_header(const struct od_chunk_header *h, uint32_t index, char *why, size_t n)
{
	struct od_chunk_header g = *h;

	if (h->version != OD_FORMAT_VERSION) {
		snprintf(why, n, "format version %u (this build reads %u)", h->version,
			 OD_FORMAT_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (h->feature_incompat & ~OD_FEATURE_INCOMPAT_SUPP) {
		snprintf(why, n, "unknown incompatible features 0x%x", h->feature_incompat);
		return -EPROTONOSUPPORT;
	}
	if (h->chunk_index != index) {
		snprintf(why, n, "header says chunk %u, found at position %u", h->chunk_index,
			 index);
		return -EUCLEAN;
	}
	if (h->block_size != OD_BLOCK_SIZE || h->nblocks < OD_MIN_CHUNK_SIZE / OD_BLOCK_SIZE ||
	    (uint64_t)h->nblocks > OD_MAX_CHUNK_SIZE / OD_BLOCK_SIZE ||
	    (h->nblocks & (h->nblocks - 1))) {
		snprintf(why, n, "bad geometry: block size %u, %u blocks", h->block_size,
			 h->nblocks);
		return -EUCLEAN;
	}
	if (h->dir_unit == 0 || h->dir_unit > OD_MAX_DIR_UNIT || h->kind > OD_KIND_LARGE ||
	    h->state > OD_STATE_NEEDS_REPAIR) {
		snprintf(why, n, "bad dir unit %u, kind %u or state %u", h->dir_unit, h->kind,
			 h->state);
		return -EUCLEAN;
	}
	/* The layout must be the one the geometry implies. */
	chunk_geometry(&g, h->nblocks, 4096);
	if (h->dirty_start != g.dirty_start || h->bitmap_start != g.bitmap_start ||
	    h->bitmap_blocks != g.bitmap_blocks || h->map_start != g.map_start ||
	    (uint64_t)h->map_blocks * OD_MAP_PER_BLOCK < h->max_inodes ||
	    h->itable_start != h->map_start + h->map_blocks ||
	    (uint64_t)h->itable_blocks * OD_ISLOTS_PER_BLOCK < h->islots ||
	    h->data_start != h->itable_start + h->itable_blocks ||
	    h->data_start + h->dir_unit >= h->nblocks / 2 || h->map_watermark > h->max_inodes ||
	    h->islot_watermark > h->islots) {
		snprintf(why, n, "inconsistent layout (map %u+%u, inode area %u+%u, data %u)",
			 h->map_start, h->map_blocks, h->itable_start, h->itable_blocks,
			 h->data_start);
		return -EUCLEAN;
	}
	return check_fosters(h, index, why, n);
}

int od_header_parse(const uint8_t *blk, struct od_chunk_header *h, uint64_t *txid, char *why,
		    size_t n)
{
	struct od_mb_header mh;

	od_get_mb_header(blk, &mh);
	if (mh.magic != OD_MB_MAGIC || od_verify(blk, OD_BLOCK_SIZE) < 0) {
		snprintf(why, n, mh.magic != OD_MB_MAGIC ? "no unit header" : "checksum mismatch");
		return -EUCLEAN;
	}
	if (mh.type != OD_MB_CHUNK_HEADER || mh.block != 0) {
		snprintf(why, n, "a %s, not a chunk header", od_unit_name(mh.type));
		return -EUCLEAN;
	}
	if (od_get_chunk_header(blk, h) < 0) {
		snprintf(why, n, "no chunkfs magic");
		return -EUCLEAN;
	}
	if (mh.chunk != h->chunk_index) {
		snprintf(why, n, "unit of chunk %u, header of chunk %u", mh.chunk, h->chunk_index);
		return -EUCLEAN;
	}
	if (txid)
		*txid = mh.txid;
	return 0;
}

int od_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static int fd_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	return od_pread_full((int)(intptr_t)ctx, buf, len, off);
}

struct od_header_src od_header_src_fd(int fd, uint64_t size)
{
	return (struct od_header_src){ .pread = fd_pread, .ctx = (void *)(intptr_t)fd,
				       .size = size };
}

/* The copy at byte off of the chunk at base (off 0: copy 0; else the
 * mirror, which must be where its own geometry says): 0 and its txid, or
 * a negative errno. */
static int header_copy(const struct od_header_src *src, uint64_t base, uint64_t off,
		       uint32_t index, struct od_chunk_header *h, uint64_t *txid)
{
	uint8_t blk[OD_BLOCK_SIZE];
	char why[80];

	if (base + off + OD_BLOCK_SIZE > src->size ||
	    src->pread(src->ctx, blk, sizeof(blk), base + off) < 0)
		return -EIO;
	if (od_header_parse(blk, h, txid, why, sizeof(why)) < 0 ||
	    (index != UINT32_MAX && h->chunk_index != index))
		return -EUCLEAN;
	if (off && (uint64_t)(h->nblocks / 2) * OD_BLOCK_SIZE != off)
		return -EUCLEAN; /* a valid header, but not this chunk's mirror */
	return 0;
}

int od_header_copies(const struct od_header_src *src, uint64_t base, struct od_chunk_header *h0,
		     struct od_chunk_header *h1)
{
	uint64_t t;

	if (header_copy(src, base, 0, UINT32_MAX, h0, &t) < 0)
		return -EUCLEAN;
	if (h0->flags & OD_CHF_SINGLE_COPY) {
		*h1 = *h0;
		return 0;
	}
	return header_copy(src, base, (uint64_t)(h0->nblocks / 2) * OD_BLOCK_SIZE, UINT32_MAX, h1,
			   &t);
}

int od_header_read(const struct od_header_src *src, uint64_t base, uint32_t index,
		   uint32_t guess_nblocks, struct od_chunk_header *h, int *healed)
{
	struct od_chunk_header m;
	uint64_t t0, t1;
	int dummy;

	if (!healed)
		healed = &dummy;
	*healed = 0;
	if (header_copy(src, base, 0, index, h, &t0) == 0) {
		if (h->flags & OD_CHF_SINGLE_COPY)
			return 0; /* its mirror is never kept up to date */
		if (header_copy(src, base, (uint64_t)(h->nblocks / 2) * OD_BLOCK_SIZE, index, &m,
				&t1) == 0) {
			if (t1 > t0)
				*h = m;
		} else {
			*healed = 2;
		}
		return 0;
	}
	*healed = 1;
	if (guess_nblocks && header_copy(src, base, (uint64_t)(guess_nblocks / 2) * OD_BLOCK_SIZE,
					 index, h, &t1) == 0)
		return (h->flags & OD_CHF_SINGLE_COPY) ? -EUCLEAN : 0;
	for (uint64_t half = OD_MIN_CHUNK_SIZE / 2; half <= OD_MAX_CHUNK_SIZE / 2; half <<= 1)
		if (header_copy(src, base, half, index, h, &t1) == 0)
			return (h->flags & OD_CHF_SINGLE_COPY) ? -EUCLEAN : 0;
	return -EUCLEAN;
}
