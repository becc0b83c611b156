/* The layout of files and free space as it is on disk (fs/layout.h): a
 * file's extents walked through its chain, a chunk's free runs walked
 * through its bitmap. For measuring fragmentation; read only. */
#include "config.h"

#include <errno.h>
#include <sys/stat.h>

#include "fs/chain.h"
#include "fs/internal.h"
#include "fs/layout.h"

/* Merges extents that continue each other before handing them out. */
struct ext_merge {
	struct fs_extent cur;
	int have;
	fs_extent_fn fn;
	void *ctx;
};

static int merge_push(struct ext_merge *m, uint32_t chunk, const struct od_extent *e)
{
	int ret = 0;

	if (e->len == 0)
		return 0;
	if (m->have && m->cur.chunk == chunk && m->cur.lblk + m->cur.len == e->lblk &&
	    m->cur.pblk + m->cur.len == e->pblk) {
		m->cur.len += e->len;
		return 0;
	}
	if (m->have)
		ret = m->fn(m->ctx, &m->cur);
	m->cur.lblk = e->lblk;
	m->cur.chunk = chunk;
	m->cur.pblk = e->pblk;
	m->cur.len = e->len;
	m->have = 1;
	return ret;
}

int fs_file_extents(struct fs_volume *v, struct fs_ino ino, fs_extent_fn fn, void *ctx)
{
	struct ext_merge m = { .fn = fn, .ctx = ctx };
	struct fchain fc;
	struct iref r;
	int ret;

	vol_lock(v);
	ret = ino_get(v, ino, &r);
	if (ret < 0)
		goto out;
	if (!S_ISREG(r.ino.mode) || (r.ino.flags & OD_INF_CONT)) {
		ret = -EINVAL;
		goto out;
	}
	if (r.ino.flags & OD_INF_INLINE)
		goto out;
	ret = chain_load(v, &r, &fc);
	if (ret < 0)
		goto out;
	for (uint32_t i = 0; i < fc.n && ret == 0; i++)
		for (uint32_t k = 0; k < fc.s[i].el.n && ret == 0; k++)
			ret = merge_push(&m, fc.s[i].r.loc.chunk, &fc.s[i].el.e[k]);
	chain_release(&fc);
	if (ret == 0 && m.have)
		ret = fn(ctx, &m.cur);
out:
	vol_unlock(v);
	return ret;
}

/* Blocks data may take (chunk.c's rule): outside the fixed metadata that
 * starts each half. */
static int data_room(const struct chunk *c, uint32_t b)
{
	uint32_t off = b >= c->half ? b - c->half : b;

	return off >= c->hdr.data_start;
}

/* Inside the metadata zone that follows the fixed metadata of each half. */
static int in_zone(const struct chunk *c, uint32_t b, uint32_t zone_end)
{
	uint32_t off = b >= c->half ? b - c->half : b;

	return off < zone_end;
}

int fs_chunk_free_runs(struct fs_volume *v, uint32_t chunk, fs_free_run_fn fn, void *ctx)
{
	struct chunk *c;
	uint32_t zone_end, start = 0, len = 0;
	int zone = 0, ret;

	vol_lock(v);
	c = vol_chunk(v, chunk);
	if (!c) {
		ret = -EINVAL;
		goto out;
	}
	ret = c->offline ? -EIO : chunk_load(c);
	if (ret < 0)
		goto out;
	zone_end = chunk_meta_zone_end(c);
	for (uint32_t b = 0; b < c->hdr.nblocks && ret == 0; b++) {
		int z = in_zone(c, b, zone_end);
		if (!data_room(c, b) || bitmap_test(c, b)) {
			if (len)
				ret = fn(ctx, chunk, start, len, zone);
			len = 0;
			continue;
		}
		if (len && z != zone) {
			ret = fn(ctx, chunk, start, len, zone);
			len = 0;
		}
		if (len == 0) {
			start = b;
			zone = z;
		}
		len++;
	}
	if (ret == 0 && len)
		ret = fn(ctx, chunk, start, len, zone);
out:
	vol_unlock(v);
	return ret;
}
