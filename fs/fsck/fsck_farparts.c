/* fsck's view of the other chunks' continuations and directory parts, for
 * mending a chain through this chunk: read once per check (each other
 * chunk's inode area up to its slot watermark, through the copy its dirty
 * list makes current), kept by head, and used to find where a chain from
 * its head expects a piece in this chunk and which piece came after it. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fsck/fsck_int.h"

static int by_head(const void *a, const void *b)
{
	const struct fsck_far_part *x = a, *y = b;

	return x->head < y->head ? -1 : x->head > y->head;
}

int fsck_vol_ready(struct fsck_ctx *c)
{
	if (!c->vol)
		return -ENOENT;
	/* a check of one chunk located only chunk 0 and this one */
	return c->vol->partial ? fsck_vol_complete(c->vol) : 0;
}

int fsck_far_build(struct fsck_ctx *c)
{
	uint8_t *buf;
	uint32_t cap = 0;
	int ret = c->farp_built ? 0 : fsck_vol_ready(c);

	if (ret < 0 || c->farp_built)
		return ret;
	buf = malloc(OD_BLOCK_SIZE);
	if (!buf)
		return fsck_oom(c);
	c->farp_built = 1;
	for (uint32_t j = 0; j < c->vol->nchunks; j++) {
		const struct od_chunk_header *h = &c->vol->hdr[j];
		uint32_t nb;
		if (j == c->index || !c->vol->hdr_ok[j])
			continue;
		nb = (h->islot_watermark + OD_ISLOTS_PER_BLOCK - 1) / OD_ISLOTS_PER_BLOCK;
		for (uint32_t b = 0; b < nb && b < h->itable_blocks; b++) {
			if (fsck_far_unit(c, j, h->itable_start + b, 1, OD_MB_ITABLE, buf) < 0)
				continue;
			for (uint32_t k = 0; k < OD_ISLOTS_PER_BLOCK; k++) {
				uint16_t off = (uint16_t)(OD_MB_HEADER_SIZE + k * OD_INODE_SIZE);
				struct fsck_far_part *p;
				struct od_inode ino;
				od_get_inode(buf + off, &ino);
				if (!ino.mode || !(ino.flags & OD_INF_CONT) || !ino.head_stable)
					continue;
				if (fsck_grow(c, &c->farp, &cap, sizeof(*c->farp), c->nfarp + 1) < 0) {
					free(buf);
					return -ENOMEM;
				}
				p = &c->farp[c->nfarp++];
				p->head = ino.head_stable;
				p->at.chunk = j;
				p->at.block = h->itable_start + b;
				p->at.off = off;
				p->next = ino.next;
				p->flags = ino.flags;
				p->head_chunk = ino.head_chunk;
				p->dir = S_ISDIR(ino.mode) != 0;
			}
		}
	}
	free(buf);
	if (c->nfarp)
		qsort(c->farp, c->nfarp, sizeof(*c->farp), by_head);
	return 0;
}

/* The pieces of head h: c->farp[*first .. *first + *n). */
int fsck_far_pieces(struct fsck_ctx *c, uint64_t h, uint32_t *first, uint32_t *n)
{
	uint32_t lo = 0, hi;
	int ret;

	if ((ret = fsck_far_build(c)) < 0)
		return ret;
	hi = c->nfarp;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (c->farp[mid].head < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	while (hi < c->nfarp && c->farp[hi].head == h)
		hi++;
	*n = hi - lo;
	return 0;
}

static int loc_eq(struct od_loc a, struct od_loc b)
{
	return a.chunk == b.chunk && a.block == b.block && a.off == b.off;
}

uint32_t fsck_chain_start(const struct fsck_ctx *c, uint32_t first, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		int named = 0;
		for (uint32_t k = 0; k < n && !named; k++)
			named = k != i && loc_eq(c->farp[first + k].next, c->farp[first + i].at);
		if (!named)
			return first + i;
	}
	return FSCK_NONE;
}

int fsck_far_lf_head(struct fsck_ctx *c, uint64_t *lf)
{
	int ret;

	if ((ret = fsck_far_build(c)) < 0)
		return ret;
	for (uint32_t i = 0; i < c->nfarp; i++)
		if (c->farp[i].dir && (c->farp[i].flags & OD_INF_LOSTFOUND)) {
			*lf = c->farp[i].head;
			return 0;
		}
	return -ENOENT;
}

int fsck_chain_gap(struct fsck_ctx *c, uint64_t h, const struct od_inode *head,
		   struct od_loc *want, struct od_loc *next)
{
	uint32_t first, n, hops = 0, nv = c->vol->nchunks;
	struct od_inode ino = *head;
	struct od_loc at;
	uint8_t *reached;
	int ret = fsck_far_pieces(c, h, &first, &n);

	want->chunk = next->chunk = OD_LOC_NONE;
	if (ret < 0)
		return ret;
	reached = calloc(n ? n : 1, 1);
	if (!reached)
		return fsck_oom(c);
	for (at = ino.next; at.chunk != OD_LOC_NONE && at.chunk < nv && ++hops <= nv;
	     at = ino.next) {
		if (at.chunk == c->index) {
			*want = at;
			break;
		}
		for (uint32_t i = 0; i < n; i++)
			reached[i] |= loc_eq(c->farp[first + i].at, at);
		if (fsck_far_inode(c, at, &ino) < 0 || ino.head_stable != h)
			break;
	}
	/* What came after it: the one piece the chain does not reach that no
	 * other such piece names. */
	for (uint32_t i = 0; i < n && want->chunk != OD_LOC_NONE; i++) {
		int named = 0;
		if (reached[i])
			continue;
		for (uint32_t k = 0; k < n && !named; k++)
			named = k != i && !reached[k] &&
				loc_eq(c->farp[first + k].next, c->farp[first + i].at);
		if (!named) {
			*next = c->farp[first + i].at;
			break;
		}
	}
	free(reached);
	return 0;
}
