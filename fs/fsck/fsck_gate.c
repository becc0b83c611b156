/* The check an offline chunk passes before it serves again (fsck.h's
 * fsck_gate_chunk, which chunkfsd hands to fs_chunk_online): the whole
 * chunk, both copies of every unit, its cross-chunk pointers confirmed
 * (when it is read from the volume image), nothing written. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fs/fsck/fsck.h"

int fsck_gate_chunk(void *gate, uint32_t chunk, int unlocked, char *why, size_t whylen)
{
	struct fsck_gate *g = gate;
	struct fsck_opts o = g->opts;
	int ret;

	/* Unlocked: through the image only (a chunk's own store may be in
	 * use by a probe of the store watch), and silent (a failure is
	 * checked again, locked, and that run reports). */
	if (unlocked && g->store)
		return -EAGAIN;
	if (unlocked)
		o.out = NULL;
	memset(&g->res, 0, sizeof(g->res));
	o.mode = FSCK_CHECK_ONLY;
	o.cross = 1;
	o.force = 1;
	o.jobs = 1;
	o.both_copies = 1; /* the gate back into service reads everything */
	if (g->store)
		ret = fsck_chunk_store(g->store, chunk, &o, &g->res);
	else
		ret = fsck_volume_path(g->image, (int)chunk, &o, &g->res);
	if (ret == 0 && g->res.exit_code == FSCK_EXIT_OK)
		return 0;
	snprintf(why, whylen,
		 g->res.exit_code & FSCK_EXIT_OPERATIONAL
			 ? "chunk %u could not be checked (in use by another process, or "
			   "unreadable): it stays offline"
			 : "chunk %u still fails its check (%u problems): repair it "
			   "(fsck.chunkfs -y) and try again",
		 chunk, g->res.problems);
	return ret < 0 ? ret : -EUCLEAN;
}
