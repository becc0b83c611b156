/* A volume image's tail given back: when the last regions of the image (a
 * regular file) hold only retired chunks, the file is cut where the last
 * chunk still in the volume ends. Keeps: nothing that is read is cut (a
 * retired chunk is never read, and its size stays in chunk 0's header, so
 * the layout does not move: a chunk added later takes its region after
 * the retired ones, the file growing sparse again); a chunk counts as
 * retired here only when both copies of chunk 0's header on disk say so
 * (the retiring transaction committed and caught up: nothing rolls it
 * back); nobody else holds a lock on the tail. Idempotent: a crash
 * between the retiring commit and the cut leaves a longer image, which
 * the next open, close or retirement cuts. */
#include "config.h"

#include <errno.h>
#include <unistd.h>

#include "fs/format/chunk_lock.h"
#include "fs/format/header.h"
#include "fs/format/vol_probe.h"
#include "fs/internal.h"

/* 1 when both copies of chunk 0's header (r0, r1) and of its foster table
 * name every chunk from..count-1 retired, 0 when not (or a copy of the
 * table is bad: the next try), -ENOMEM. */
static int tail_retired(const struct od_header_src *hs, const struct od_chunk_header *r0,
			const struct od_chunk_header *r1, uint32_t from, uint32_t count)
{
	struct od_fosters l[2];
	char why[160];
	int ret = 1;

	for (int k = 0; k < 2; k++) {
		int r = od_fosters_read(hs, 0, k ? r1 : r0, k, &l[k], why, sizeof(why));
		if (r < 0)
			ret = r == -ENOMEM ? r : 0;
	}
	for (uint32_t i = from; i < count && ret == 1; i++)
		if (!od_fosters_retired(&l[0], i) || !od_fosters_retired(&l[1], i))
			ret = 0;
	od_fosters_free(&l[0]);
	od_fosters_free(&l[1]);
	return ret;
}

int vol_shorten_image(struct fs_volume *v)
{
	struct od_chunk_header r0, r1;
	struct od_header_src hs;
	const struct chunk *c;
	uint64_t end, size;
	uint32_t last = 0;
	int is_blk, holder, ret;

	if (!v->shared_fd || v->rdonly || v->fd < 0 || v->chunks[0].offline)
		return 0;
	for (uint32_t i = 0; i < v->nchunks; i++)
		if (!v->chunks[i].retired)
			last = i;
	if (last == v->nchunks - 1)
		return 0;
	c = &v->chunks[last];
	end = c->base + (uint64_t)c->hdr.nblocks * OD_BLOCK_SIZE;
	ret = vol_image_size(v->fd, &size, &is_blk);
	if (ret < 0 || is_blk || size <= end)
		return ret < 0 ? ret : 0;
	hs = store_header_src(v->chunks[0].store);
	if (od_header_copies(&hs, 0, &r0, &r1) < 0)
		return 0; /* (a copy to heal first: the next try) */
	ret = tail_retired(&hs, &r0, &r1, last + 1, v->nchunks);
	if (ret <= 0)
		return ret;
	/* An nbdkit still serving a retired chunk's region, say. */
	ret = chunk_lock_query(v->fd, end, 0, 1, &holder);
	if (ret < 0)
		return ret;
	if (holder != CHUNK_LOCK_FREE)
		return 0;
	/* (no fsync: a cut lost in a crash leaves the longer image, cut
	 * again at the next open; a flush here would hold the volume lock
	 * for whatever else the image has in the page cache) */
	if (ftruncate(v->fd, (off_t)end) < 0)
		return -errno;
	v->image_cut += size - end;
	return 1;
}
