/* The directory parts an offline chunk held, as they were when it went
 * offline (its continuation inodes of directories): kept in memory so that
 * walks of those directories (dir.c) step over the chunk while it is out
 * of service. offline.c records them and frees them when it returns. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "fs/internal.h"

static int loc_cmp(struct od_loc a, struct od_loc b)
{
	if (a.block != b.block)
		return a.block < b.block ? -1 : 1;
	return a.off < b.off ? -1 : a.off > b.off;
}

void chunk_free_ghosts(struct chunk *c)
{
	free(c->ghosts);
	free(c->ghost_locs);
	c->ghosts = NULL;
	c->ghost_locs = NULL;
	c->nghosts = 0;
}

/* Keep the directory parts (continuation inodes) the chunk holds, so that
 * walks of those directories can step over them while it is offline. A
 * block that cannot be read is left out: walks through it fail instead. */
int chunk_record_ghosts(struct chunk *c)
{
	uint32_t cap = 0;

	for (uint32_t slot = 0; slot < c->hdr.islot_watermark; slot += OD_ISLOTS_PER_BLOCK) {
		uint32_t block = c->hdr.itable_start + slot / OD_ISLOTS_PER_BLOCK;
		struct buf *b;
		if (buf_read(c, block, 1, &b) < 0)
			continue;
		for (uint32_t k = 0; k < OD_ISLOTS_PER_BLOCK && slot + k < c->hdr.islot_watermark; k++) {
			uint16_t off = (uint16_t)(OD_MB_HEADER_SIZE + k * OD_INODE_SIZE);
			struct od_inode ino;
			od_get_inode(b->data + off, &ino);
			if (!(ino.flags & OD_INF_CONT) || !S_ISDIR(ino.mode))
				continue;
			if (c->nghosts == cap) {
				uint32_t ncap = cap ? cap * 2 : 16;
				struct od_inode *ni = realloc(c->ghosts, ncap * sizeof(*ni));
				struct od_loc *nl = ni ? realloc(c->ghost_locs, ncap * sizeof(*nl)) : NULL;
				if (ni)
					c->ghosts = ni;
				if (!nl) {
					buf_put(b);
					chunk_free_ghosts(c);
					return -ENOMEM;
				}
				c->ghost_locs = nl;
				cap = ncap;
			}
			c->ghosts[c->nghosts] = ino;
			c->ghost_locs[c->nghosts].chunk = c->index;
			c->ghost_locs[c->nghosts].block = block;
			c->ghost_locs[c->nghosts].off = off;
			c->nghosts++;
		}
		buf_put(b);
	}
	return 0; /* in slot order: sorted by (block, off) */
}

int chunk_ghost_part(const struct chunk *c, struct od_loc loc, struct iref *out)
{
	uint32_t lo = 0, hi = c->nghosts;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		int d = loc_cmp(c->ghost_locs[mid], loc);
		if (d == 0) {
			out->loc = loc;
			out->ino = c->ghosts[mid];
			return 0;
		}
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -EIO;
}
