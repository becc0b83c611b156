/* Reading a file's data without the volume lock: under the lock the byte
 * range is resolved to pieces (a run of blocks in one chunk, or a hole) and
 * those chunks are pinned; the reads run unlocked, so that one client's
 * megabyte does not hold every other call back. The guards are pin.c's: a
 * pinned chunk keeps its store, and a read that saw the reuse generation
 * move is answered -ESTALE, for the caller to read again under the lock
 * (its blocks may have been freed, the free committed and the blocks given
 * to another file meanwhile). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/chain.h"

struct read_piece {
	struct chunk *c;              /* NULL: a hole, read as zeros */
	struct chunk_store *st;
	uint64_t off;                 /* byte offset in st */
	size_t len;
};

struct read_plan {
	struct fs_volume *v;
	struct read_piece *p;
	uint32_t n, cap;
};

static int plan_piece(void *arg, uint32_t chunk, uint32_t pblk, uint32_t inoff, size_t n)
{
	struct read_plan *plan = arg;
	struct read_piece *rp;

	if (plan->n == plan->cap) {
		uint32_t ncap = plan->cap ? plan->cap * 2 : 8;
		rp = realloc(plan->p, ncap * sizeof(*rp));
		if (!rp)
			return -ENOMEM;
		plan->p = rp;
		plan->cap = ncap;
	}
	rp = &plan->p[plan->n];
	memset(rp, 0, sizeof(*rp));
	rp->len = n;
	if (pblk) {
		rp->c = vol_chunk(plan->v, chunk);
		if (rp->c->offline)
			return -EIO;
		rp->st = rp->c->store;
		rp->off = (uint64_t)pblk * OD_BLOCK_SIZE + inoff;
	}
	plan->n++;
	return 0;
}

int file_read_unlocked(struct fs_volume *v, const struct iref *r, uint64_t off, size_t len,
		       void *buf)
{
	struct read_plan plan = { .v = v };
	struct fchain fc;
	uint64_t gen = vol_reuse_gen(v);
	uint8_t *p = buf;
	int ret;

	ret = chain_load(v, r, &fc);
	if (ret == 0) {
		ret = chain_walk(&fc, off, len, plan_piece, &plan);
		chain_release(&fc);
	}
	if (ret < 0) {
		vol_unlock(v);
		free(plan.p);
		return ret;
	}
	for (uint32_t i = 0; i < plan.n; i++)
		if (plan.p[i].c)
			chunk_pin(plan.p[i].c);
	vol_unlock(v);

	for (uint32_t i = 0; i < plan.n; i++) {
		struct read_piece *rp = &plan.p[i];

		if (ret == 0 && !rp->c)
			memset(p, 0, rp->len);
		else if (ret == 0)
			ret = store_pread(rp->st, p, rp->len, rp->off);
		if (rp->c)
			chunk_unpin(rp->c);
		p += rp->len;
	}
	free(plan.p);
	if (ret == 0 && vol_reuse_gen(v) != gen)
		ret = -ESTALE;
	return ret;
}
