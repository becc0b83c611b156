/* fsck.chunkfs, the driver: the context of one chunk's check, the passes
 * in order, and the rounds (a repair that changes what an earlier pass
 * saw is checked again). Problems are reported only through fix_problem()
 * (fsck_problem.c); units are read by fsck_unit.c, written by
 * fsck_write.c. Writes go only through the chunk's own store, only in -p/-y
 * modes. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/fsck/fsck_int.h"

static void ctx_free(struct fsck_ctx *c)
{
	for (uint32_t h = 0; c->uhash && h < c->uhash_size; h++) {
		struct fsck_unit *u = c->uhash[h];
		while (u) {
			struct fsck_unit *n = u->hnext;
			if (!u->pooled) {
				free(u->data);
				free(u);
			}
			u = n;
		}
	}
	free(c->uhash);
	free(c->runs);
	fsck_mem_free(c);
	fsck_hmap_free(&c->pend);
	fsck_txn_free(c);
	fsck_hmap_free(&c->by_loc);
	fsck_hmap_free(&c->by_stable);
	free(c->map);
	fsck_foster_free(c);
	free(c->map_lost);
	free(c->disk_bitmap);
	free(c->bitmap_unknown);
	free(c->defs);
	free(c);
}

static uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void fsck_add_result(struct fsck_result *to, const struct fsck_result *r)
{
	to->chunks += r->chunks;
	to->clean += r->clean;
	to->problems += r->problems;
	to->fixed += r->fixed;
	to->unfixed += r->unfixed;
	to->deferred += r->deferred;
	to->inodes += r->inodes;
	to->blocks_used += r->blocks_used;
	to->dir_units += r->dir_units;
	to->usec += r->usec;
	to->exit_code |= r->exit_code;
}

/* One round of a chunk's check. The cross-chunk step comes before the
 * bitmap (pass 5), so that the blocks of what it removes are freed there.
 * *again: a repair was written that the passes before it could not take
 * into account (a directory part removed: the entries in its units are
 * gone), so the chunk is to be checked once more. */
static int check_round(struct chunk_store *st, uint32_t expect, const struct fsck_opts *o,
		       struct fsck_vol *vol, struct fsck_result *out, int *again, uint32_t *index)
{
	struct fsck_ctx *c = calloc(1, sizeof(*c));
	uint64_t t0 = now_usec();
	int ret = 0, skipped = 0;

	if (!c)
		return -ENOMEM;
	c->o = o;
	c->st = st;
	c->vol = vol;
	c->index = expect == UINT32_MAX ? 0 : expect;
	c->expect = expect;
	c->uhash_size = 4096;
	c->uhash = calloc(c->uhash_size, sizeof(*c->uhash));
	if (!c->uhash) {
		ctx_free(c);
		return -ENOMEM;
	}
	c->res.chunks = 1;
	ret = fsck_pass1(c);
	if (ret == 0 && !c->fatal && fsck_pass1_clean(c)) {
		fsck_note(c, "clean (not checked; -f checks it anyway)");
		c->res.clean = 1;
		skipped = 1;
	}
	if (!skipped) {
		int (*const passes[])(struct fsck_ctx *) = { fsck_pass2, fsck_pass3, fsck_pass4,
							     fsck_cross, fsck_ftab_make,
							     fsck_pass5 };
		for (size_t i = 0; i < sizeof(passes) / sizeof(passes[0]); i++) {
			if (ret < 0 || c->fatal || c->oper || fsck_cancelled(c))
				break;
			ret = passes[i](c);
		}
		if (ret < 0 && !c->oper)
			c->oper = ret;
		if (!c->fatal && !c->oper && !fsck_cancelled(c) && o->mode != FSCK_CHECK_ONLY &&
		    fsck_write_out(c) == 0 && c->restart)
			*again = 1;
		*index = c->index;
		fsck_note(c, "%llu inodes, %llu blocks used, %u problems, %u fixed%s",
			  (unsigned long long)c->res.inodes,
			  (unsigned long long)c->res.blocks_used, c->res.problems, c->res.fixed,
			  c->fatal ? " (check stopped)" : "");
		if (c->res.deferred)
			fsck_note(c, "%u cross-chunk checks %s", c->res.deferred,
				  o->cross && vol ? "done" : "deferred until the chunk is online");
	}
	if (c->oper) {
		fsck_note(c, "operational error: %s", strerror(-c->oper));
		c->res.exit_code |= FSCK_EXIT_OPERATIONAL;
	}
	if (fsck_cancelled(c))
		c->res.exit_code |= FSCK_EXIT_CANCELLED;
	if (c->res.unfixed)
		c->res.exit_code |= FSCK_EXIT_UNCORRECTED;
	if (c->res.fixed && !c->oper)
		c->res.exit_code |= FSCK_EXIT_FIXED;
	c->res.usec = now_usec() - t0;
	fsck_add_result(out, &c->res);
	ctx_free(c);
	return 0;
}

#define MAX_ROUNDS 4

int fsck_check_chunk(struct chunk_store *st, uint32_t expect, const struct fsck_opts *o,
		     struct fsck_vol *vol, struct fsck_result *out)
{
	struct fsck_result sum, last;
	uint32_t index = expect == UINT32_MAX ? 0 : expect;
	int again = 1, ret = 0;

	memset(&sum, 0, sizeof(sum));
	memset(&last, 0, sizeof(last));
	for (int round = 0; again && round < MAX_ROUNDS && ret == 0; round++) {
		if (round) {
			/* What the earlier rounds found and fixed is kept; what
			 * is left is what the last round leaves. */
			sum.problems += last.problems;
			sum.fixed += last.fixed;
			sum.exit_code |= last.exit_code & FSCK_EXIT_FIXED;
			sum.usec += last.usec;
			if (o->out) {
				char line[96];
				snprintf(line, sizeof(line),
					 "chunk %u: checked again (a repair removed entries)", index);
				o->out(o->ctx, line);
			}
		}
		again = 0;
		memset(&last, 0, sizeof(last));
		ret = check_round(st, expect, o, vol, &last, &again, &index);
	}
	if (again) {
		/* Still changing after MAX_ROUNDS: said, and left to the next run. */
		if (o->out) {
			char line[96];
			snprintf(line, sizeof(line), "chunk %u: still changing after %d rounds: run "
				 "the check again", index, MAX_ROUNDS);
			o->out(o->ctx, line);
		}
		last.unfixed++;
		last.exit_code |= FSCK_EXIT_UNCORRECTED;
	}
	last.problems += sum.problems;
	last.fixed += sum.fixed;
	last.exit_code |= sum.exit_code;
	last.usec += sum.usec;
	fsck_add_result(out, &last);
	return ret;
}

int fsck_chunk_store(struct chunk_store *st, uint32_t expect_index, const struct fsck_opts *o,
		     struct fsck_result *res)
{
	struct fsck_result local;

	if (!res)
		res = &local;
	memset(res, 0, sizeof(*res));
	return fsck_check_chunk(st, expect_index, o, NULL, res);
}
