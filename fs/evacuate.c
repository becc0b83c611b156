/* Evacuating a chunk (chunkfsctl evacuate K): the draining flag in K's
 * header (OD_CHF_DRAINING), which every chunk picker honours so that
 * nothing new lands in K while it empties. Keeps: a draining chunk is never
 * chosen for a new object, directory part, continuation or data extent
 * (vol_chunk_has_room, vol_pick_data_chunk, chain_alloc); what is already
 * there stays reachable and may change. The steps: the first fosters the
 * chunk's map (fs/foster.c), the next ones move the foster maps K hosts
 * for other chunks (fs/foster.c), then K's file continuations a piece at a
 * time (fs/evac_move.c), then the inodes placed in K, K's own and those
 * other evacuations put there, with their entries (fs/evac_inode.c,
 * fs/evac_linked.c), then K's empty directory parts, lost+found's last;
 * once a scan finds K empty it retires. And the counts of what is left
 * (doc/design.md, "Evacuating a chunk"). A step's data is copied before it
 * takes the lock to move it (fs/evac_plan.c, fs/evac_pre.c: doc/design.md,
 * "Copying outside the lock"). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "fs/evac.h"

int fs_chunk_drain(struct fs_volume *v, uint32_t i, int on, char *why, size_t whylen)
{
	struct chunk *c;
	uint32_t old;
	int ret;

	/* What is buffered goes first (as fs_chunk_offline does); what comes
	 * meanwhile is placed below, under the lock. */
	if (on)
		dalloc_settle_unlocked(v);
	vol_lock(v);
	c = vol_chunk(v, i);
	if (!c) {
		snprintf(why, whylen, "no chunk %u (the volume has %u)", i, v->nchunks);
		ret = -EINVAL;
		goto out;
	}
	if (i == 0) {
		snprintf(why, whylen, "chunk 0 names the volume (its count, root and secret): "
				      "it cannot be evacuated");
		ret = -EINVAL;
		goto out;
	}
	if (v->rdonly) {
		snprintf(why, whylen, "the volume is open read-only");
		ret = -EROFS;
		goto out;
	}
	if (c->offline) {
		snprintf(why, whylen, "chunk %u is offline", i);
		ret = -EIO;
		goto out;
	}
	if (!!chunk_draining(c) == !!on) {
		ret = 0; /* already */
		goto out;
	}
	/* Buffered data was admitted against this chunk's free blocks too:
	 * placed first, while they are there, or the drain is refused. */
	if (on) {
		ret = dalloc_place_all(v, DA_FORCE);
		if (ret < 0) {
			snprintf(why, whylen, "placing the data buffered so far failed (%s): "
					      "the chunk's free space was promised to it",
				 strerror(-ret));
			goto out;
		}
	}
	/* The flag goes in a transaction of its own, so that once the call
	 * has returned a restart goes on excluding the chunk. */
	old = c->hdr.flags;
	c->hdr.flags = on ? old | OD_CHF_DRAINING : old & ~OD_CHF_DRAINING;
	/* The evacuation's record goes with it: running from the start, or
	 * none (and its cursors forgotten). */
	c->hdr.feature_compat |= OD_FEATURE_COMPAT_EVAC;
	c->hdr.evac_state = on ? OD_EVAC_RUNNING : OD_EVAC_NONE;
	if (!on)
		c->hdr.evac_slot = c->hdr.evac_map = c->evac_slot = c->evac_map = 0;
	c->header_dirty = 1;
	ret = vol_sync(v, 0);
	if (ret < 0) {
		c->hdr.flags = old;
		c->hdr.evac_state = (old & OD_CHF_DRAINING) ? OD_EVAC_RUNNING : OD_EVAC_NONE;
		c->header_dirty = 1;
		snprintf(why, whylen, "committing the chunk's header failed: %s",
			 strerror(-ret));
	}
out:
	vol_unlock(v);
	return ret;
}

struct od_loc evac_slot_at(const struct chunk *c, uint32_t slot)
{
	struct od_loc loc = {
		.chunk = c->index,
		.block = c->hdr.itable_start + slot / OD_ISLOTS_PER_BLOCK,
		.off = (uint16_t)(OD_MB_HEADER_SIZE + (slot % OD_ISLOTS_PER_BLOCK) * OD_INODE_SIZE),
	};
	return loc;
}

int evac_is_file_cont(const struct od_inode *ino)
{
	return ino->mode != 0 && (ino->flags & OD_INF_CONT) && S_ISREG(ino->mode);
}

/* The record of a chunk's steps' lock holds, into info. */
static void holds_info(const struct hold_rec *h, struct fs_evac_info *info)
{
	info->holds = h->holds;
	info->hold_max_us = h->max_ns / 1000u;
	info->holds_over_1ms = h->over_1ms;
	info->holds_over_10ms = h->over_10ms;
	snprintf(info->hold_max_site, sizeof(info->hold_max_site), "%s",
		 h->max_site ? h->max_site : "-");
}

/* The counts of info, the volume locked. */
static int fill_info(struct chunk *c, struct fs_evac_info *info)
{
	struct fs_volume *v = c->vol;
	int ret;

	memset(info, 0, sizeof(*info));
	info->chunk = c->index;
	info->copies_dropped = c->evac_dropped;
	info->entry_scans = c->evac_entry_scans;
	info->blocks_copied_unlocked = c->evac_pre_blocks;
	info->copy_stops = c->evac_copy_stops;
	info->map_units_unlocked = c->evac_units_unlocked;
	info->map_units_locked = c->evac_units_locked;
	holds_info(&c->evac_holds, info);
	if (c->retired) {
		const struct od_foster *f = vol_foster(v, c->index);
		info->retired = 1;
		info->draining = 1;
		info->fostered = 1;
		info->foster_chunk = f ? f->chunk : OD_LOC_NONE;
		info->conts_moved = c->evac_conts;
		info->blocks_moved = c->evac_blocks;
		info->inodes_moved = c->evac_inodes;
		return 0;
	}
	ret = chunk_load(c);
	info->draining = chunk_draining(c);
	info->conts_moved = c->evac_conts;
	info->blocks_moved = c->evac_blocks;
	info->inodes_moved = c->evac_inodes;
	info->inodes_homed = c->hdr.used_inodes;
	if (chunk_fostered(c)) {
		uint64_t used, here;
		const struct od_foster *f = vol_foster(v, c->index);
		ret = evac_foster_used(v, c->index, c->index, &used, &here);
		if (ret < 0)
			return ret;
		info->fostered = 1;
		info->foster_chunk = f ? f->chunk : OD_LOC_NONE;
		info->inodes_homed = (uint32_t)used;
		info->homed_here = (uint32_t)here;
	}
	info->paused = c->hdr.evac_state == OD_EVAC_PAUSED;
	if (ret == 0)
		ret = evac_foster_guests(v, c->index, &info->guests_here);
	for (uint32_t r = 0; r < v->fost.n; r++)
		info->maps_hosted += v->fost.rec[r].chunk == c->index;
	info->blocks_used = (uint64_t)c->hdr.nblocks - 2ull * c->hdr.data_start -
			    c->hdr.free_blocks;
	for (uint32_t s = 0; ret == 0 && s < c->hdr.islot_watermark; s++) {
		struct iref r;
		ret = ino_read(v, evac_slot_at(c, s), &r);
		if (ret < 0 || r.ino.mode == 0)
			continue;
		if (evac_is_file_cont(&r.ino))
			info->conts_left++;
		else
			info->slots_left++;
	}
	return ret;
}

struct chunk *evac_pick_target(struct fs_volume *v, struct chunk *k, const uint8_t *tried)
{
	struct chunk *t = vol_pick_data_chunk(v, k);

	if (t && !tried[t->index])
		return t;
	return vol_pick_chunk(v, NULL, FS_KIND_LARGE, 0, tried);
}

/* A piece of cont moved into the chunk of the segment before it, else the
 * first chunk that has room. */
static int move_cont(struct fs_volume *v, struct chunk *k, const struct iref *cont,
		     uint32_t max_blocks, struct evac_moved *m)
{
	uint8_t *tried = calloc(v->nchunks, 1);
	struct chunk *pt = evac_pre_target(v, cont->ino.head_stable);
	int ret = tried ? evac_move_cont(v, cont, pt, max_blocks, m) : -ENOMEM;

	if (pt)
		tried[pt->index] = 1;
	while (ret == -ENOSPC) {
		struct chunk *t = evac_pick_target(v, k, tried);
		if (!t)
			break;
		tried[t->index] = 1;
		ret = evac_move_cont(v, cont, t, max_blocks, m);
	}
	free(tried);
	return ret;
}

/* A piece of the tail of head (a file holding more than an inode's move
 * copies in k) carried into the chunk of its next segment, else the first
 * chunk that has room. */
static int move_tail(struct fs_volume *v, struct chunk *k, const struct iref *head,
		     uint32_t max_blocks, struct evac_moved *m)
{
	uint8_t *tried = calloc(v->nchunks, 1);
	struct chunk *pt = evac_pre_target(v, head->ino.stable);
	int ret = tried ? evac_move_head_tail(v, head, pt, max_blocks, m) : -ENOMEM;

	if (pt)
		tried[pt->index] = 1;
	while (ret == -ENOSPC) {
		struct chunk *t = evac_pick_target(v, k, tried);
		if (!t)
			break;
		tried[t->index] = 1;
		ret = evac_move_head_tail(v, head, t, max_blocks, m);
	}
	free(tried);
	return ret;
}

int evac_move_kind(struct fs_volume *v, const struct od_loc *loc, uint32_t max_blocks,
		   struct iref *r)
{
	if (ino_read(v, *loc, r) < 0 || r->ino.mode == 0)
		return EV_NONE;
	/* More data than a step copies: its tail goes first, a piece a step. */
	if (S_ISREG(r->ino.mode) && !(r->ino.flags & (OD_INF_CONT | OD_INF_INLINE)) &&
	    r->ino.blocks > (max_blocks < EVAC_INODE_BLOCKS ? max_blocks : EVAC_INODE_BLOCKS))
		return EV_TAIL;
	if (evac_inode_movable(v, loc))
		return EV_EMBEDDED;
	if (evac_linked_movable(v, loc))
		return EV_LINKED;
	return EV_NONE;
}

/* The inode of number stable at loc (in k) moved with its entries into
 * the first chunk that takes it, or a piece of its tail when it is a large
 * file (*kind EV_TAIL): 0 moved (*blocks copied), 1 it cannot move now
 * (not movable, or its directory offline or damaged: fsck's; it stays,
 * counted as left), or a negative errno. */
static int move_one(struct fs_volume *v, struct chunk *k, uint64_t stable, struct od_loc loc,
		    uint32_t max_blocks, uint8_t *tried, int *kind, uint64_t *blocks)
{
	struct evac_moved m = { 0 };
	struct iref r;
	int ret;

	*kind = evac_move_kind(v, &loc, max_blocks, &r);
	if (*kind == EV_NONE)
		return 1;
	if (*kind == EV_TAIL) {
		ret = move_tail(v, k, &r, max_blocks, &m);
		*blocks = m.blocks;
	} else {
		struct chunk *pt = evac_pre_target(v, stable);
		memset(tried, 0, v->nchunks);
		tried[k->index] = 1;
		for (;;) {
			/* The chunk its copy was planned in first. */
			struct chunk *t = pt && !tried[pt->index]
						  ? pt
						  : vol_pick_chunk(v, NULL, (int)k->hdr.kind, 0, tried);
			if (!t) {
				ret = -ENOSPC;
				break;
			}
			tried[t->index] = 1;
			ret = *kind == EV_EMBEDDED ? evac_move_embedded(v, stable, t, blocks)
						   : evac_move_linked(v, stable, t, blocks);
			if (ret != -ENOSPC)
				break;
		}
	}
	if (ret == -EIO || ret == -EUCLEAN || ret == -ESTALE || ret == -EINVAL)
		return 1;
	return ret;
}

/* An inode placed in k but homed in another fostered chunk (moved into k
 * by that chunk's evacuation) moved out as k's own are, the first one
 * found in the other foster maps: 0 with *moved set or not, or a negative
 * errno. */
static int move_guest(struct fs_volume *v, struct chunk *k, uint32_t max_blocks,
		      uint8_t *tried, int *moved)
{
	uint64_t blocks = 0;
	int ret = 0, kind;

	for (uint32_t r = 0; r < v->fost.n && !*moved; r++) {
		uint32_t home = v->fost.rec[r].home, idx, from = 0;
		struct od_loc loc;
		if (home == k->index)
			continue;
		while ((ret = evac_foster_next(v, home, k->index, from, &idx, &loc)) == 1) {
			from = idx + 1;
			ret = move_one(v, k, OD_STABLE(home, idx), loc, max_blocks, tried, &kind,
				       &blocks);
			if (ret < 0)
				return ret;
			if (ret == 0) {
				*moved = 1;
				k->evac_inodes += kind != EV_TAIL;
				k->evac_blocks += blocks;
				break;
			}
		}
		if (ret == -EIO)
			ret = 0; /* that map's host is offline: its guests wait */
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* One inode of k moved (with its entries) into the first chunk that takes
 * it, or a piece of a large file's tail (*moved set), from k's map cursor
 * on, then those of other homes placed in k; 0 with *moved 0 when none
 * can. */
static int move_inode(struct fs_volume *v, struct chunk *k, uint32_t max_blocks, int *moved)
{
	const struct od_foster *f = vol_foster(v, k->index);
	uint32_t n = f ? f->entries : 0, from = k->evac_map < n ? k->evac_map : 0, idx;
	uint8_t *tried = calloc(v->nchunks, 1);
	struct od_loc loc;
	uint64_t blocks = 0;
	int ret = 0, wrapped = 0, kind;

	if (!tried)
		return -ENOMEM;
	while (n && (ret = evac_foster_turn(v, k->index, k->evac_map, &from, &wrapped, &idx,
					    &loc)) == 1) {
		ret = move_one(v, k, OD_STABLE(k->index, idx), loc, max_blocks, tried, &kind,
			       &blocks);
		if (ret == 1)
			continue;
		if (ret == 0) {
			*moved = 1;
			if (kind == EV_TAIL) {
				k->evac_map = idx; /* the rest of it next */
			} else {
				k->evac_map = idx + 1;
				k->evac_inodes++;
			}
			k->evac_blocks += blocks;
		}
		break;
	}
	if (ret >= 0 && !*moved)
		ret = move_guest(v, k, max_blocks, tried, moved);
	free(tried);
	return ret;
}

/* Does k hold no inode: every inode-area slot free (but lost+found's
 * parts, with lf_ok), no inode placed in k by a foster map? 1 yes, 0 no,
 * or a negative errno. */
static int no_inode_left(struct fs_volume *v, struct chunk *k, int lf_ok)
{
	int ret = chunk_load(k);

	for (uint32_t s = 0; ret == 0 && s < k->hdr.islot_watermark; s++) {
		struct iref r;
		ret = ino_read(v, evac_slot_at(k, s), &r);
		if (ret == 0 && r.ino.mode != 0 && !(lf_ok && (r.ino.flags & OD_INF_LOSTFOUND)))
			return 0;
	}
	if (ret == 0)
		ret = evac_foster_any_in(v, k->index);
	return ret < 0 ? ret : !ret;
}

/* Does k hold nothing but its fixed metadata? Checked by a scan, not by
 * counters: no inode left (above), and no block in use outside the
 * header, dirty lists, bitmap, map and inode area of either half. 1 yes, 0
 * no, or a negative errno. */
static int chunk_empty(struct fs_volume *v, struct chunk *k)
{
	int ret = no_inode_left(v, k, 0);

	if (ret <= 0)
		return ret;
	for (uint32_t b = 0; b < k->hdr.nblocks; b++) {
		uint32_t rel = b < k->half ? b : b - k->half;
		if (rel >= k->hdr.data_start && bitmap_test(k, b))
			return 0;
	}
	return 1;
}

/* The retiring transaction: k's foster record, in chunk 0's header (which
 * decides, with k's size) and in the host's and k's own, marked
 * OD_FOSTER_RETIRED. The caller commits, then takes k out of service. */
static int retire_mark(struct fs_volume *v, struct chunk *k)
{
	struct chunk *c0 = &v->chunks[0];
	int r0 = od_fosters_find(&v->fost, k->index);
	struct chunk *host = r0 >= 0 ? vol_chunk(v, v->fost.rec[r0].chunk) : NULL;
	struct chunk *mark[3] = { c0, host, k };
	int ret;

	if (r0 < 0 || !host || host->offline || c0->offline)
		return -EIO;
	v->fost.rec[r0].flags |= OD_FOSTER_RETIRED;
	v->fost.retired[r0] = k->hdr.nblocks;
	ret = ftab_put(v, (uint32_t)r0);
	if (ret < 0)
		return ret;
	for (int m = 0; m < 3; m++) {
		struct chunk *c = mark[m];
		if (m > 0 && c != c0) {
			for (uint32_t r = 0; r < c->hdr.nfosters && r < OD_MAX_FOSTERS; r++)
				if (c->hdr.fosters[r].home == k->index)
					c->hdr.fosters[r].flags |= OD_FOSTER_RETIRED;
		}
		c->hdr.feature_incompat |= OD_FEATURE_INCOMPAT_RETIRED;
		c->header_dirty = 1;
	}
	k->hdr.evac_state = OD_EVAC_NONE;
	return 0;
}

/* After the retiring transaction committed: k offline for good, its store
 * closed (the admin may remove it), never opened again. */
static int retire_close(struct fs_volume *v, struct chunk *k)
{
	char why[256];
	int ret = fs_chunk_offline(v, k->index, 0, why, sizeof(why));

	if (ret < 0)
		return ret;
	vol_lock(v);
	chunk_wait_unpinned(k);
	store_close(k->store);
	k->store = store_dead_new();
	k->retired = 1;
	snprintf(k->why_offline, sizeof(k->why_offline), "retired (evacuated)");
	/* The last region of the image: given back now when chunk 0's
	 * header has caught up on both copies, else at close or next open. */
	vol_try_shorten(v);
	vol_unlock(v);
	return k->store ? 0 : -ENOMEM;
}

/* Steps in a row that may drop their copies (a client rewriting the same
 * file each time) before one copies under the lock, so that it moves. */
#define EVAC_PRE_TRIES 3u

/* The end of a step's plan (the lock held): its index of K's entries
 * dropped, what no move took given back,
 * the copies it dropped counted, and whether the step moved nothing but
 * dropped some (EVAC_PRE_TRIES of those in a row: the next copies locked). */
static void evac_plan_end(struct fs_volume *v, struct chunk *c, int planned, int moved,
			  int dropped)
{
	uint64_t dropped_copies = 0, claimed = 0;

	evac_lindex_drop(v); /* (its index of K's entries holds only under this hold) */
	if (planned)
		evac_pre_end(v, &dropped_copies, &claimed);
	if (!c)
		return;
	c->evac_dropped += dropped_copies;
	c->evac_pre_blocks += claimed;
	c->evac_drop_run = dropped && !moved ? c->evac_drop_run + 1 : 0;
}

/* What evac_plan_copy answers: the step copies what it moves under the
 * lock; a plan is open (v->evac_pre, for the step's moves to claim and for
 * it to end); the step gives way (moves nothing) to a reopen, offline or
 * retirement waiting for the pins of a chunk it would copy from or into,
 * and is made again later. */
enum { PLAN_NONE, PLAN_OPEN, PLAN_GAVE_WAY };

/* Phases (a) and (b) of a step (doc/design.md, "Copying outside the
 * lock"): what the step will move planned, its data copied into the
 * blocks reserved for it with the lock released. Returns unlocked. */
static int evac_plan_copy(struct fs_volume *v, uint32_t i, uint32_t max_blocks)
{
	struct chunk *c;
	int ret;

	vol_lock(v);
	c = vol_chunk(v, i);
	if (c && __atomic_load_n(&c->pin_waiters, __ATOMIC_SEQ_CST)) {
		/* (its waiter gets the lock first: no new pin, no hold) */
		vol_unlock(v);
		return PLAN_GAVE_WAY;
	}
	if (v->evac_copy_locked || !c || c->retired || c->offline || v->rdonly ||
	    !chunk_draining(c) || chunk_load(c) < 0 || c->hdr.evac_state == OD_EVAC_PAUSED ||
	    c->evac_drop_run >= EVAC_PRE_TRIES || evac_pre_begin(v, c) < 0) {
		vol_unlock(v);
		return PLAN_NONE;
	}
	evac_plan(v, c, max_blocks);
	ret = evac_pre_copy(v);
	if (ret < 0) {
		/* (A failed copy: the moves copy under the lock, and say why
		 * if it fails again. A waiter: the step gives way.) */
		vol_lock(v);
		evac_plan_end(v, c, 1, 0, 0);
		c->evac_copy_stops += ret == -EINTR;
		vol_unlock(v);
		return ret == -EINTR ? PLAN_GAVE_WAY : PLAN_NONE;
	}
	return PLAN_OPEN;
}

/* What a step did, for its trace: the kind of the last thing it moved (or
 * why it moved nothing), inodes and blocks moved. */
struct step_note {
	const char *kind;
	uint64_t inodes, blocks;
};

/* The step's holds, a line each, to the trace (fs_evac_set_trace). */
static void trace_step(struct fs_volume *v, int fd, const struct hold_rec *r,
		       const struct step_note *n, int ret)
{
	uint64_t step = __atomic_add_fetch(&v->evac_trace_steps, 1, __ATOMIC_RELAXED);

	for (uint32_t h = 0; h < r->ntrace; h++)
		dprintf(fd, "step %llu kind %s ret %d inodes %llu blocks %llu site %s wall_us %llu "
			    "cpu_us %llu blocked %u preempted %u runq_us %llu\n",
			(unsigned long long)step, n->kind, ret, (unsigned long long)n->inodes,
			(unsigned long long)n->blocks, r->t[h].site,
			(unsigned long long)(r->t[h].wall_ns / 1000u),
			(unsigned long long)(r->t[h].cpu_ns / 1000u), r->t[h].vcsw, r->t[h].ivcsw,
			(unsigned long long)(r->t[h].rq_ns / 1000u));
}

static int evac_step(struct fs_volume *v, uint32_t i, uint32_t max_blocks,
		     struct fs_evac_info *info, struct step_note *note);

int fs_evac_step(struct fs_volume *v, uint32_t i, uint32_t max_blocks,
		 struct fs_evac_info *info)
{
	int fd = __atomic_load_n(&v->evac_trace_fd, __ATOMIC_RELAXED);
	struct hold_rec r = { .trace = fd >= 0 }, *old = vol_hold_rec(&r);
	struct step_note note = { .kind = "none" };
	struct chunk *c;
	int ret = evac_step(v, i, max_blocks, info, &note);

	vol_hold_rec(old);
	if (fd >= 0)
		trace_step(v, fd, &r, &note, ret);
	/* The step's holds (this one's not counted: it is short) go into
	 * the chunk's record, and what info says, when it asked. */
	vol_lock(v);
	c = vol_chunk(v, i);
	if (c) {
		struct hold_rec *h = &c->evac_holds;
		h->holds += r.holds;
		h->over_1ms += r.over_1ms;
		h->over_10ms += r.over_10ms;
		if (r.max_ns > h->max_ns) {
			h->max_ns = r.max_ns;
			h->max_site = r.max_site;
		}
		if (info && ret >= 0)
			holds_info(h, info);
	}
	vol_unlock(v);
	return ret;
}

static int evac_step(struct fs_volume *v, uint32_t i, uint32_t max_blocks,
		     struct fs_evac_info *info, struct step_note *note)
{
	struct evac_moved m = { 0 };
	struct chunk *c;
	uint64_t b0;
	uint32_t n, s;
	int ret = 0, moved = 0, retiring = 0, dropped = 0;
	int plan = evac_plan_copy(v, i, max_blocks ? max_blocks : EVAC_STEP_BLOCKS);
	int planned = plan == PLAN_OPEN, gave_way = plan == PLAN_GAVE_WAY;

	vol_lock(v);
	c = vol_chunk(v, i);
	if (c && c->retired) {
		if (info)
			ret = fill_info(c, info);
		goto out;
	}
	if (!c || !chunk_draining(c) || v->rdonly) {
		ret = !c || !chunk_draining(c) ? -EINVAL : -EROFS;
		goto out;
	}
	if (c->offline) {
		ret = -EIO;
		goto out;
	}
	b0 = c->evac_blocks;
	ret = chunk_load(c);
	if (ret == 0 && c->hdr.evac_state == OD_EVAC_PAUSED) {
		ret = -EAGAIN; /* paused (fs_evac_pause): resume it first */
		goto out;
	}
	if (ret == 0 && gave_way) {
		note->kind = "gave-way";
		goto end; /* nothing moved: made again by the next step */
	}
	if (ret == 0 && planned)
		evac_pre_fill(v); /* (map units read outside the lock) */
	/* First the map: once fostered, the numbers homed here no longer
	 * need this chunk (one transaction, committed below). */
	if (ret == 0 && !chunk_fostered(c)) {
		uint32_t host;
		ret = evac_foster(v, c, &host);
		if (ret == -ENOSPC && c->hdr.nfosters >= OD_MAX_FOSTERS) {
			/* (its header full of maps it hosts: one goes first) */
			ret = evac_foster_rehost(v, c);
			ret = ret > 0 ? 0 : ret;
		}
		if (ret == 0) {
			moved = 1;
			note->kind = "foster";
		}
	}
	/* Then a foster map this chunk hosts for another (it keeps the chunk
	 * from emptying): moved to another host, one a step. When no chunk
	 * has room for it, or its home is offline, it stays for now and the
	 * chunk does not empty. */
	if (ret == 0 && !moved) {
		ret = evac_foster_rehost(v, c);
		if (ret > 0) {
			moved = 1;
			note->kind = "rehost";
		}
		c->evac_rehost_stuck = ret == -ENOSPC || ret == -EIO;
		if (ret > 0 || ret == -ENOSPC || ret == -EIO)
			ret = 0;
	}
	/* From the cursor on, wrapping once: the first continuation found
	 * moves, a piece of it. A crash or a failed step only means this scan
	 * is repeated. */
	n = c->hdr.islot_watermark;
	s = c->evac_slot < n ? c->evac_slot : 0;
	for (uint32_t k = 0; ret == 0 && k < n && !moved; k++, s = (s + 1) % n) {
		struct iref r;
		ret = ino_read(v, evac_slot_at(c, s), &r);
		if (ret < 0 || !evac_is_file_cont(&r.ino))
			continue;
		ret = move_cont(v, c, &r, max_blocks ? max_blocks : EVAC_STEP_BLOCKS, &m);
		if (ret == -EIO || ret == -EUCLEAN || ret == -ESTALE) {
			/* Its head cannot be read now (its chunk offline or
			 * damaged: fsck's): it stays, counted as left, and the
			 * scan goes on to the next. */
			ret = 0;
			continue;
		}
		if (ret == 0) {
			moved = 1;
			note->kind = "cont";
			c->evac_slot = m.conts ? s + 1 : s; /* the rest of it next */
			c->evac_conts += m.conts;
			c->evac_blocks += m.blocks;
		}
	}
	if (ret == -ECANCELED) {
		/* Its copy was spoilt (written, cut) since it was made: the
		 * next step makes it again. */
		dropped = 1;
		ret = 0;
	}
	/* Then the inodes homed here that sit here (through the foster
	 * map), from its cursor, wrapping once: the first ones that can move
	 * move with their entries, up to EVAC_STEP_INODES of them and the
	 * step's blocks, in the step's one transaction. */
	if (ret == 0 && !moved && !dropped && chunk_fostered(c)) {
		uint32_t budget = max_blocks ? max_blocks : EVAC_STEP_BLOCKS;
		uint64_t blocks0 = c->evac_blocks, inodes0 = c->evac_inodes;
		for (uint32_t j = 0; ret == 0 && j < EVAC_STEP_INODES; j++) {
			uint64_t used = c->evac_blocks - blocks0;
			int one = 0;
			if (used >= budget)
				break;
			ret = move_inode(v, c, budget - (uint32_t)used, &one);
			if (!one)
				break;
			moved = 1;
			note->kind = "inodes";
		}
		note->inodes = c->evac_inodes - inodes0;
		if (ret == -ECANCELED) {
			dropped = 1; /* that inode next step, from the cursor */
			ret = 0;
		}
	}
	/* Last, K's directory parts left empty by those moves; lost+found's
	 * (which the library keeps otherwise) once nothing else is left, so
	 * that until then fsck has a place in K to link K's orphans, which
	 * the steps then move out as any inode with its entry. */
	if (ret == 0 && !moved && !dropped && chunk_fostered(c)) {
		ret = evac_drop_empty_part(v, c, 0);
		if (ret == 0 && (ret = no_inode_left(v, c, 1)) > 0)
			ret = evac_drop_empty_part(v, c, 1);
		if (ret > 0) {
			moved = 1;
			note->kind = "part";
			ret = 0;
		}
	}
	/* Where the scans go on, kept with the step's transaction (a restart
	 * resumes there). */
	if (ret == 0 && moved &&
	    (c->hdr.evac_slot != c->evac_slot || c->hdr.evac_map != c->evac_map)) {
		c->hdr.feature_compat |= OD_FEATURE_COMPAT_EVAC;
		c->hdr.evac_slot = c->evac_slot;
		c->hdr.evac_map = c->evac_map;
		c->header_dirty = 1;
	}
	/* Nothing left to move: once a scan finds K empty, it retires. */
	if (ret == 0 && !moved && !dropped && chunk_fostered(c)) {
		ret = chunk_empty(v, c);
		if (ret > 0)
			ret = retire_mark(v, c);
		if (ret == 0 && vol_foster(v, c->index) &&
		    (vol_foster(v, c->index)->flags & OD_FOSTER_RETIRED))
			moved = retiring = 1;
		if (retiring)
			note->kind = "retire";
	}
	if (dropped && !moved)
		note->kind = "dropped";
end:
	note->blocks = c->evac_blocks - b0;
	evac_plan_end(v, c, planned, moved, dropped);
	vol_unlock(v);
	/* Committed as fs_sync commits (only the transaction's prepare and
	 * finish hold the lock), together with whatever clients changed. */
	if (ret == 0 && moved)
		ret = fs_sync(v);
	if (ret == 0 && retiring)
		ret = retire_close(v, c);
	if (ret == 0 && info) {
		vol_lock(v);
		ret = fill_info(c, info);
		vol_unlock(v);
	}
	return ret < 0 ? ret : moved || dropped || gave_way;
out:
	evac_plan_end(v, c, planned, 0, 0);
	vol_unlock(v);
	return ret;
}

void fs_set_evac_copy_locked(struct fs_volume *v, int locked)
{
	vol_lock(v);
	v->evac_copy_locked = !!locked;
	vol_unlock(v);
}

void fs_evac_set_copied_hook(struct fs_volume *v, void (*fn)(void *arg), void *arg)
{
	vol_lock(v);
	v->evac_copied_hook = fn;
	v->evac_copied_arg = arg;
	vol_unlock(v);
}

void fs_evac_set_window_hook(struct fs_volume *v, void (*fn)(void *arg), void *arg)
{
	vol_lock(v);
	v->evac_window_hook = fn;
	v->evac_window_arg = arg;
	vol_unlock(v);
}

int fs_evac_pause(struct fs_volume *v, uint32_t i, int paused, char *why, size_t whylen)
{
	struct chunk *c;
	uint32_t old;
	int ret;

	vol_lock(v);
	c = vol_chunk(v, i);
	if (!c || c->retired || !chunk_draining(c)) {
		snprintf(why, whylen, "chunk %u is not being evacuated", i);
		ret = -EINVAL;
	} else if (c->offline || v->rdonly) {
		snprintf(why, whylen, "chunk %u is %s", i, c->offline ? "offline" : "read-only");
		ret = c->offline ? -EIO : -EROFS;
	} else {
		old = c->hdr.evac_state;
		c->hdr.feature_compat |= OD_FEATURE_COMPAT_EVAC;
		c->hdr.evac_state = paused ? OD_EVAC_PAUSED : OD_EVAC_RUNNING;
		c->header_dirty = 1;
		ret = vol_sync(v, 0);
		if (ret < 0) {
			c->hdr.evac_state = old;
			snprintf(why, whylen, "committing the chunk's header failed: %s",
				 strerror(-ret));
		}
	}
	vol_unlock(v);
	return ret;
}

void fs_evac_set_trace(struct fs_volume *v, int fd)
{
	__atomic_store_n(&v->evac_trace_fd, fd, __ATOMIC_RELAXED);
}

int fs_evac_info(struct fs_volume *v, uint32_t i, struct fs_evac_info *info)
{
	struct chunk *c;
	int ret;

	vol_lock(v);
	c = vol_chunk(v, i);
	ret = !c ? -EINVAL : c->offline && !c->retired ? -EIO : fill_info(c, info);
	vol_unlock(v);
	return ret;
}
