/* Reading a file's data without the volume lock: under the lock the byte
 * range is resolved to pieces (a run of blocks in one chunk, or a hole) and
 * those chunks are pinned; the reads run unlocked, so that one client's
 * megabyte does not hold every other call back. The guards are pin.c's: a
 * pinned chunk keeps its store, and a read that saw the reuse generation
 * move is answered -ESTALE, for the caller to read again under the lock
 * (its blocks may have been freed, the free committed and the blocks given
 * to another file meanwhile). A file read in order also has the next
 * pieces of its range ahead told to their stores (read_ahead.c), after
 * its own reads, pinned in the same way: the pieces that do not follow on
 * from the file's bytes before them in their store, and every piece in a
 * store that reads told bytes without read-ahead of its own (a file
 * store's second descriptor, store_pread_told): such a reader's data is
 * read through it, so that the kernel's read-ahead, which follows the
 * image's offsets, reads no other file's bytes past a piece's end. On a
 * store without told reads, where a file's bytes follow each other the
 * store's own read-ahead follows them; where they jump, the store learns
 * early. */
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

static void pin_plan(struct read_plan *plan)
{
	for (uint32_t i = 0; i < plan->n; i++)
		if (plan->p[i].c)
			chunk_pin(plan->p[i].c);
}

/* Of the pieces planned for the range ahead (walked from one block before
 * it), the ones where the file's bytes jump in their store, and those
 * that follow on from such a one: a piece that does not follow on from
 * the piece before it in the same store, and what follows on from it. The
 * first piece (the back bytes before the range, and what follows on from
 * them) is never one. In a store that reads told bytes every piece is
 * kept, the first without its back bytes (the reads before read them). */
static void keep_jumps(struct read_plan *ahead, uint64_t back)
{
	struct read_piece prev = { 0 };
	uint32_t kept = 0;
	int prev_kept = 0;

	for (uint32_t i = 0; i < ahead->n; i++) {
		struct read_piece rp = ahead->p[i];
		int follows = i == 0 || (rp.c && rp.c == prev.c && rp.off == prev.off + prev.len);

		prev_kept = rp.c && (!follows || prev_kept);
		if (prev_kept)
			ahead->p[kept++] = rp;
		else if (rp.c && store_reads_told(rp.st) && rp.len > (i ? 0 : back))
			ahead->p[kept++] = (struct read_piece){ .c = rp.c, .st = rp.st,
				.off = rp.off + (i ? 0 : back), .len = rp.len - (i ? 0 : back) };
		prev = rp;
	}
	ahead->n = kept;
}

/* The kept pieces of the range ahead told to their stores, and unpinned. */
static void tell_ahead(struct read_plan *ahead)
{
	for (uint32_t i = 0; i < ahead->n; i++) {
		struct read_piece *rp = &ahead->p[i];

		store_willneed(rp->st, rp->len, rp->off);
		chunk_unpin(rp->c);
	}
	free(ahead->p);
}

int file_read_unlocked(struct fs_volume *v, const struct iref *r, uint64_t off, size_t len,
		       void *buf)
{
	struct read_plan plan = { .v = v }, ahead = { .v = v };
	struct fchain fc;
	uint64_t gen = vol_reuse_gen(v), ra_off;
	size_t ra_len = 0;
	uint8_t *p = buf;
	int told = 0, ret;

	ret = chain_load(v, r, &fc);
	if (ret == 0) {
		ret = chain_walk(&fc, off, len, plan_piece, &plan);
		/* A reader in order reads told (its bytes are told ahead of
		 * it); read-ahead is a hint: a range it cannot plan is not
		 * told. */
		if (ret == 0)
			told = file_ra_window(v, r->ino.stable, off, len, r->ino.size, &ra_off,
					      &ra_len);
		if (ret == 0 && ra_len) {
			uint64_t back = ra_off < OD_BLOCK_SIZE ? ra_off : OD_BLOCK_SIZE;

			if (chain_walk(&fc, ra_off - back, ra_len + back, plan_piece, &ahead) < 0)
				ahead.n = 0;
			keep_jumps(&ahead, back);
			for (uint32_t i = 0; i < ahead.n; i++) {
				v->ra_hints++;
				v->ra_hint_bytes += ahead.p[i].len;
			}
		}
		chain_release(&fc);
	}
	if (ret < 0) {
		vol_unlock(v);
		free(plan.p);
		free(ahead.p);
		return ret;
	}
	pin_plan(&plan);
	pin_plan(&ahead);
	vol_unlock(v);

	for (uint32_t i = 0; i < plan.n; i++) {
		struct read_piece *rp = &plan.p[i];

		if (ret == 0 && !rp->c)
			memset(p, 0, rp->len);
		else if (ret == 0 && told)
			ret = store_pread_told(rp->st, p, rp->len, rp->off);
		else if (ret == 0)
			ret = store_pread(rp->st, p, rp->len, rp->off);
		if (rp->c)
			chunk_unpin(rp->c);
		p += rp->len;
	}
	free(plan.p);
	tell_ahead(&ahead);
	if (ret == 0 && vol_reuse_gen(v) != gen)
		ret = -ESTALE;
	return ret;
}
