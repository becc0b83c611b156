/* The room promised to buffered data (delayed allocation, fs/dalloc.c):
 * whether more pages may be buffered, so that an UNSTABLE write answered
 * is always placed later (a write refused here is written at once, and
 * meets ENOSPC then, at WRITE time); the extent units so promised, which
 * other metadata leaves alone (fs/chunk.c's alloc_meta); what FSSTAT must
 * not count as free.
 *
 * A placement needs blocks for its pages, and, where they fall in several
 * extents, extent units in the chunk of the segment that records them
 * (invariant 1): a unit is a mirrored pair of the chunk's metadata zone,
 * and free blocks elsewhere do not make one. Blocks: the free blocks of
 * the chunks that take data cover every page not yet held twice over,
 * with an eighth of the volume and DA_SLACK_BLOCKS to spare. Units: each
 * file may need, in whichever chunk its pages go to, one unit per
 * OD_EXT_PER_UNIT pages (one extent a page), none while its extents all
 * fit in its inode whatever comes; the sum (v->da_units) must be kept
 * free in every chunk that may take data: data leaves that many of a
 * zone's pairs (fs/chunk.c's pair_run). Other allocations (a stable
 * write, a directory's unit, a symbolic link's block) leave the blocks
 * and the pairs alone: they meet ENOSPC first (dalloc_may_take,
 * alloc_meta). */
#include "config.h"

#include "fs/dalloc.h"

__thread int dalloc_placing;

/* Extent units the placement of n pages of f may need in any one chunk:
 * none while its inode holds every extent that can come (one segment,
 * no extent unit, an extent a page and one for data moved out of its
 * entry), else one per OD_EXT_PER_UNIT pages. */
static uint64_t units_of(int few, uint32_t ext0, uint64_t n)
{
	if (n == 0 || (few && ext0 + n + 1 <= OD_INODE_EXTENTS))
		return 0;
	return (n + OD_EXT_PER_UNIT - 1) / OD_EXT_PER_UNIT;
}

/* Does r's inode hold all of its file's extents, with room? */
static int inode_few(const struct iref *r)
{
	return r->ino.ext_block == 0 && r->ino.next.chunk == OD_LOC_NONE;
}

void dalloc_units_note(struct fs_volume *v, struct da_file *f, const struct iref *r)
{
	if (r) {
		f->few = inode_few(r);
		f->ext0 = r->ino.nextents;
	}
	v->da_units -= f->units;
	f->units = (uint32_t)units_of(f->few, f->ext0, f->n);
	v->da_units += f->units;
}

void dalloc_unhold(struct dalloc *d, struct da_file *f, uint32_t pages)
{
	if (pages > f->held)
		pages = f->held;
	f->held -= pages;
	d->held_pages -= pages;
}

/* Does every chunk that may take data keep units pairs for metadata? */
static int meta_room(struct fs_volume *v, uint64_t units)
{
	for (uint32_t i = 0; units && i < v->nchunks; i++) {
		struct chunk *c = &v->chunks[i];
		if (c->offline || chunk_draining(c) || chunk_avail_blocks(c) == 0)
			continue;
		if (chunk_load(c) < 0 || !chunk_meta_room(c, units))
			return 0;
	}
	return 1;
}

int dalloc_room_for(struct fs_volume *v, const struct da_file *f, const struct iref *r, uint64_t n)
{
	struct dalloc *d = v->da;
	uint64_t free_blocks = 0, total = 0, want, units = v->da_units;

	for (uint32_t i = 0; i < v->nchunks; i++) {
		const struct chunk *c = &v->chunks[i];
		total += c->hdr.nblocks;
		if (!c->offline && !chunk_draining(c)) /* (a draining chunk takes no new data) */
			free_blocks += chunk_avail_blocks(c); /* (less reservations and holds) */
	}
	/* (pages whose blocks a placement holds are counted there) */
	want = d->bytes / DA_PAGE - d->held_pages + n;
	if (free_blocks <= 2 * want + total / 8 + DA_SLACK_BLOCKS)
		return 0;
	if (r) {
		uint64_t had = f ? f->units : 0;
		units += units_of(inode_few(r), r->ino.nextents, (f ? f->n : 0) + n) - had;
	}
	return meta_room(v, units);
}

int dalloc_may_take(struct fs_volume *v, uint64_t blocks)
{
	uint64_t free_blocks = 0, promised;

	if (!v->da || dalloc_placing || !v->da->bytes)
		return 1;
	promised = v->da->bytes / DA_PAGE - v->da->held_pages;
	for (uint32_t i = 0; i < v->nchunks; i++) {
		struct chunk *c = &v->chunks[i];
		uint64_t avail = chunk_avail_blocks(c), keep = chunk_zone_reserve(c);
		/* (the pairs data leaves free: fs/chunk.c's pair_run) */
		keep = 2 * (keep > v->da_units ? keep : v->da_units);
		if (!c->offline && !chunk_draining(c) && avail > keep)
			free_blocks += avail - keep;
	}
	return free_blocks >= promised + blocks;
}

uint64_t dalloc_promised_blocks(struct fs_volume *v)
{
	if (!v->da)
		return 0;
	return v->da->bytes / DA_PAGE - v->da->held_pages + 2 * v->da_units;
}
