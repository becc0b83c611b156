/* Evacuating a chunk (chunkfsctl evacuate K): the draining flag in K's
 * header (OD_CHF_DRAINING), which every chunk picker honours so that
 * nothing new lands in K while it empties. Keeps: a draining chunk is never
 * chosen for a new object, directory part, continuation or data extent
 * (vol_chunk_has_room, vol_pick_data_chunk, chain_alloc); what is already
 * there stays reachable and may change. The moves themselves and retiring
 * are not built yet (doc/design.md, "Evacuating a chunk"). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fs/internal.h"

int fs_chunk_drain(struct fs_volume *v, uint32_t i, int on, char *why, size_t whylen)
{
	struct chunk *c;
	uint32_t old;
	int ret;

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
	/* The flag goes in a transaction of its own, so that once the call
	 * has returned a restart goes on excluding the chunk. */
	old = c->hdr.flags;
	c->hdr.flags = on ? old | OD_CHF_DRAINING : old & ~OD_CHF_DRAINING;
	c->header_dirty = 1;
	ret = vol_sync(v, 0);
	if (ret < 0) {
		c->hdr.flags = old;
		c->header_dirty = 1;
		snprintf(why, whylen, "committing the chunk's header failed: %s",
			 strerror(-ret));
	}
out:
	vol_unlock(v);
	return ret;
}
