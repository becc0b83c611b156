/* Evacuation's plan: what a step of a draining chunk K is about to move,
 * found the way the step finds it (fs/evacuate.c), before the step moves
 * anything: K's map being fostered, or a foster map K hosts being moved
 * off (their units read outside the lock), a continuation's piece, or the
 * inodes (up to EVAC_STEP_INODES and the step's blocks) from the foster
 * map's cursor and then the guests (other chunks' inodes placed in K), or
 * a large file's tail piece; for each, the chunk its data will go to and
 * the blocks of K that will be copied, handed to evac_pre_add, which
 * reserves blocks there for the copy made outside the lock
 * (fs/evac_pre.c). Runs under the volume lock and changes nothing but
 * those reservations. A plan that misses an object, or picks another
 * chunk than the move does, costs only that object's copy under the
 * lock. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "fs/chain.h"
#include "fs/evac.h"

/* A piece of a file (key: its head's number) planned into seg, the chunk
 * of the segment it would extend (NULL: none may take it), else into the
 * chunk a move takes next: the move is sent where the plan reserved room
 * (evac_pre_target). */
static void plan_piece(struct fs_volume *v, struct chunk *k, uint64_t key, struct chunk *seg,
		       const struct extlist *mv, uint8_t *tried)
{
	struct chunk *t;

	if (seg && evac_pre_add(v, key, seg, mv) == 0)
		return;
	memset(tried, 0, v->nchunks);
	if (seg)
		tried[seg->index] = 1; /* (no room outside its metadata zone) */
	t = evac_pick_target(v, k, tried);
	if (t)
		(void)evac_pre_add(v, key, t, mv);
}

/* The piece of cont (a continuation in k) the step moves. */
static void plan_cont(struct fs_volume *v, struct chunk *k, const struct iref *cont,
		      uint32_t max_blocks, uint8_t *tried)
{
	struct extlist mv = { 0 };
	struct iref head;
	struct fchain fc;
	uint32_t si;

	if (ino_get_stable(v, cont->ino.head_stable, &head) < 0 || chain_load(v, &head, &fc) < 0)
		return;
	for (si = 1; si < fc.n && !evac_loc_eq(fc.s[si].r.loc, cont->loc); si++)
		;
	if (si < fc.n && evac_cont_piece(&fc.s[si].el, max_blocks, &mv) == 0)
		plan_piece(v, k, cont->ino.head_stable,
			   evac_segment_chunk(v, k, fc.s[si - 1].r.loc.chunk, max_blocks), &mv, tried);
	ext_release(&mv);
	chain_release(&fc);
}

/* The tail piece of head (a file with more data in k than the step has
 * left to copy) the step moves. */
static void plan_tail(struct fs_volume *v, struct chunk *k, const struct iref *head,
		      uint32_t max_blocks, uint8_t *tried)
{
	struct extlist mv = { 0 };
	struct fchain fc;

	if (chain_load(v, head, &fc) < 0)
		return;
	if (fc.s[0].el.n && evac_tail_piece(&fc.s[0].el, max_blocks, &mv) == 0)
		plan_piece(v, k, head->ino.stable,
			   fc.n > 1 ? evac_segment_chunk(v, k, fc.s[1].r.loc.chunk, max_blocks) : NULL,
			   &mv, tried);
	ext_release(&mv);
	chain_release(&fc);
}

static uint32_t mapped(const struct extlist *el)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < el->n; i++)
		n += el->e[i].len;
	return n;
}

/* The inode of number stable at loc, as the step's move of it would go
 * (fs/evacuate.c's move_one), planned with *used of budget's blocks taken
 * so far: 0 it does not move (nothing planned), 1 planned (or it has no
 * data to copy), 2 a large file's tail piece planned, which takes the
 * rest of the step. */
static int plan_one(struct fs_volume *v, struct chunk *k, uint64_t stable, struct od_loc loc,
		    uint32_t budget, uint32_t *used, uint8_t *tried)
{
	struct extlist el = { 0 };
	struct chunk *t;
	struct iref r;
	int kind = evac_move_kind(v, &loc, budget - *used, &r);

	if (kind == EV_NONE)
		return 0;
	if (kind == EV_TAIL) {
		plan_tail(v, k, &r, budget - *used, tried);
		return 2;
	}
	if (!r.ino.nextents && !r.ino.ext_block)
		return 1; /* no data: nothing to copy */
	memset(tried, 0, v->nchunks);
	tried[k->index] = 1;
	t = vol_pick_chunk(v, NULL, (int)k->hdr.kind, 0, tried);
	if (ext_load(v, &r, &el) == 0) {
		*used += mapped(&el);
		if (t)
			(void)evac_pre_add(v, stable, t, &el);
	}
	ext_release(&el);
	return 1;
}

/* The inodes the step moves (fs/evacuate.c's move_inode, called until the
 * step's inodes or blocks run out): those homed in k from the foster
 * map's cursor, wrapping once; after them the guests, inodes homed in
 * another fostered chunk and placed in k (move_guest: each move takes the
 * first one found, map by map, so they go in that order). */
static void plan_inodes(struct fs_volume *v, struct chunk *k, uint32_t budget, uint8_t *tried)
{
	const struct od_foster *f = vol_foster(v, k->index);
	uint32_t n = f ? f->entries : 0, from = k->evac_map < n ? k->evac_map : 0, idx, used = 0;
	uint32_t j = 0;
	struct od_loc loc;
	int wrapped = 0, one, ret = 0;

	while (n && j < EVAC_STEP_INODES && used < budget &&
	       (ret = evac_foster_turn(v, k->index, k->evac_map, &from, &wrapped, &idx, &loc)) == 1) {
		one = plan_one(v, k, OD_STABLE(k->index, idx), loc, budget, &used, tried);
		if (one == 2)
			return;
		j += one;
	}
	if (ret < 0)
		return;
	for (uint32_t m = 0; m < v->fost.n; m++) {
		uint32_t home = v->fost.rec[m].home;
		if (home == k->index)
			continue;
		from = 0;
		while (j < EVAC_STEP_INODES && used < budget &&
		       evac_foster_next(v, home, k->index, from, &idx, &loc) == 1) {
			from = idx + 1;
			one = plan_one(v, k, OD_STABLE(home, idx), loc, budget, &used, tried);
			if (one == 2)
				return;
			j += one;
		}
	}
}

/* A step that fosters k's map, or moves a foster map k hosts (the first
 * one, as evac_foster_rehost takes it; not when the last step could not
 * move it), does only that: 1 with its units planned, else 0. */
static int plan_map(struct fs_volume *v, struct chunk *k)
{
	uint32_t units = (k->hdr.map_watermark + OD_MAP_PER_BLOCK - 1) / OD_MAP_PER_BLOCK;

	if (!chunk_fostered(k)) {
		(void)evac_pre_units(v, k->hdr.map_start, units);
		return 1;
	}
	for (uint32_t r = 0; r < v->fost.n && !k->evac_rehost_stuck; r++) {
		if (v->fost.rec[r].chunk == k->index) {
			(void)evac_pre_units(v, v->fost.rec[r].start, v->fost.rec[r].nblocks);
			return 1;
		}
	}
	return 0;
}

void evac_plan(struct fs_volume *v, struct chunk *k, uint32_t max_blocks)
{
	uint8_t *tried;
	uint32_t n = k->hdr.islot_watermark, s = k->evac_slot < n ? k->evac_slot : 0;

	if (plan_map(v, k))
		return;
	tried = calloc(v->nchunks, 1);
	if (!tried)
		return;
	/* A continuation left: the step moves the first one from the cursor. */
	for (uint32_t j = 0; j < n; j++, s = (s + 1) % n) {
		struct iref r;
		if (ino_read(v, evac_slot_at(k, s), &r) < 0 || !evac_is_file_cont(&r.ino))
			continue;
		plan_cont(v, k, &r, max_blocks, tried);
		free(tried);
		return;
	}
	plan_inodes(v, k, max_blocks, tried);
	free(tried);
}
