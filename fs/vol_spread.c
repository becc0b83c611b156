/* Spreading directories over the chunks (in the spirit of ext4's Orlov
 * allocator): a chunk's load, the average load of the chunks that suit an
 * object, whether a chunk is crowded against that average, and the least
 * loaded chunk to start a new directory in. Files are not spread: they
 * stay with their directory (namei.c), so a directory has few parts.
 * Everything is computed from the chunk headers, deterministically. */
#include "config.h"

#include "fs/internal.h"

/* Loads are fractions in units of 1/LOAD_ONE. */
#define LOAD_ONE 65536u
/* A chunk is crowded when its load exceeds the average by half the
 * average, and by at least LOAD_ONE / LOAD_FLOOR_DIV of a chunk (so that a
 * nearly empty volume does not scatter every directory). */
#define LOAD_FLOOR_DIV 16u
/* A spread directory still stays in its parent's chunk when that is within
 * LOAD_ONE / LOAD_SLACK_DIV of the least loaded one (no part for so little). */
#define LOAD_SLACK_DIV 64u

/* The larger of the chunk's used inode and used data-block fractions. */
uint32_t vol_chunk_load(const struct chunk *c)
{
	uint64_t blocks = c->hdr.nblocks - 2ull * c->hdr.data_start;
	uint64_t used_b = blocks > chunk_avail_blocks(c) ? blocks - chunk_avail_blocks(c) : 0;
	uint64_t li = 0, lb = 0;

	if (c->hdr.max_inodes)
		li = (uint64_t)c->hdr.used_inodes * LOAD_ONE / c->hdr.max_inodes;
	if (blocks)
		lb = used_b * LOAD_ONE / blocks;
	li = li > lb ? li : lb;
	return li > LOAD_ONE ? LOAD_ONE : (uint32_t)li;
}

/* How well a chunk's kind suits an object of the hinted kind: 2 the
 * hinted kind itself, 1 a general chunk, 0 any other. */
static int kind_rank(const struct chunk *c, int kind_hint)
{
	if ((int)c->hdr.kind == kind_hint)
		return 2;
	return c->hdr.kind == FS_KIND_GENERAL ? 1 : 0;
}

/* The best rank among chunks that have room for an inode (exclude[] skipped
 * when given), or -1 when none has. */
static int best_rank(struct fs_volume *v, int kind_hint, const uint8_t *exclude)
{
	int best = -1;

	for (uint32_t i = 0; i < v->nchunks; i++) {
		struct chunk *c = &v->chunks[i];
		int r = kind_rank(c, kind_hint);
		if (r > best && !(exclude && exclude[i]) && vol_chunk_has_room(c, 1))
			best = r;
	}
	return best;
}

/* The average load of the online chunks of rank r. */
static uint32_t average_load(struct fs_volume *v, int kind_hint, int r)
{
	uint64_t sum = 0, n = 0;

	for (uint32_t i = 0; i < v->nchunks; i++) {
		struct chunk *c = &v->chunks[i];
		if (c->offline || chunk_draining(c) || kind_rank(c, kind_hint) != r)
			continue;
		sum += vol_chunk_load(c);
		n++;
	}
	return n ? (uint32_t)(sum / n) : 0;
}

int vol_chunk_crowded(struct fs_volume *v, struct chunk *c, int kind_hint)
{
	int r = best_rank(v, kind_hint, NULL);
	uint32_t avg, margin;

	if (r < 0)
		return 0;
	avg = average_load(v, kind_hint, r);
	margin = avg / 2 > LOAD_ONE / LOAD_FLOOR_DIV ? avg / 2 : LOAD_ONE / LOAD_FLOOR_DIV;
	return vol_chunk_load(c) > avg + margin;
}

struct chunk *vol_pick_spread(struct fs_volume *v, struct chunk *prefer, int kind_hint,
			      const uint8_t *exclude)
{
	int r = best_rank(v, kind_hint, exclude);
	struct chunk *best = NULL;
	uint32_t best_load = 0;

	for (uint32_t i = 0; r >= 0 && i < v->nchunks; i++) {
		struct chunk *c = &v->chunks[i];
		uint32_t load;
		if (kind_rank(c, kind_hint) != r || (exclude && exclude[i]) ||
		    !vol_chunk_has_room(c, 1))
			continue;
		load = vol_chunk_load(c);
		if (!best || load < best_load) {
			best = c;
			best_load = load;
		}
	}
	if (best && prefer && prefer != best && kind_rank(prefer, kind_hint) == r &&
	    !(exclude && exclude[prefer->index]) && vol_chunk_has_room(prefer, 1) &&
	    vol_chunk_load(prefer) <= best_load + LOAD_ONE / LOAD_SLACK_DIV)
		return prefer;
	return best;
}
