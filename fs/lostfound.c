/* /lost+found: a directory of the root, in the root's chunk, made by mkfs,
 * with an empty part (a directory continuation with no units) in every
 * other chunk that holds anything, made when the chunk's first inode-area
 * slot is needed and chained right after the head (mkfs writes nothing in
 * the other chunks but their headers). The head and its parts carry
 * OD_INF_LOSTFOUND, so that the library keeps a part even when its last
 * entry goes (fs/dir.c), and fsck of one chunk can tell lost+found's part
 * there and link that chunk's orphans into it without writing any other
 * chunk (fs/fsck/fsck_pass4_lost.c). */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/internal.h"
#include "fs/lostfound.h"

/* lost+found's head: embedded in a new entry of the root, in its chunk. */
static int lf_head(struct fs_volume *v, struct iref *root, struct iref *lf)
{
	struct chunk *c = vol_chunk(v, root->loc.chunk);
	struct dirpos pos;
	int ret;

	memset(lf, 0, sizeof(*lf));
	ret = map_alloc(c, (struct od_loc){ .chunk = OD_LOC_NONE }, &lf->ino.stable,
			&lf->ino.generation);
	if (ret < 0)
		return ret;
	lf->ino.mode = S_IFDIR | 0700;
	lf->ino.nlink = 2;
	lf->ino.flags = OD_INF_LOSTFOUND;
	lf->ino.parent = root->ino.stable;
	lf->ino.next.chunk = OD_LOC_NONE;
	ino_touch(&lf->ino, 1, 1, 1);
	ret = dir_add(v, root, c, OD_LF_NAME, OD_LF_NAME_LEN, lf->ino.stable, &lf->ino, NULL, 0, &pos);
	if (ret < 0)
		return ret;
	lf->loc = dir_embedded_loc(&pos);
	return map_set_loc(v, lf->ino.stable, lf->loc);
}

/* An empty part of lf in chunk c, whose next is `next`: its slot in *at. */
static int lf_part(struct fs_volume *v, const struct iref *lf, struct chunk *c,
		   struct od_loc next, struct od_loc *at)
{
	struct iref part;
	int ret;

	memset(&part, 0, sizeof(part));
	ret = slot_take(c, &part.loc);
	if (ret < 0)
		return ret;
	part.ino.mode = S_IFDIR;
	part.ino.flags = OD_INF_CONT | OD_INF_LOSTFOUND;
	part.ino.head_chunk = lf->loc.chunk;
	part.ino.head_stable = lf->ino.stable;
	part.ino.next = next;
	ret = ino_write(v, &part);
	if (ret == 0)
		*at = part.loc;
	return ret;
}

int lf_mkfs(struct fs_volume *v, struct iref *root)
{
	struct iref lf;
	int ret = lf_head(v, root, &lf);

	if (ret < 0)
		return ret;
	ret = ino_write(v, &lf);
	if (ret < 0)
		return ret;
	root->ino.nlink++;
	ret = ino_write(v, root);
	if (ret < 0)
		return ret;
	ret = lf_anchor(v, root);
	return ret < 0 ? ret : 0;
}

/* lost+found's head, read afresh: 1 when found, 0 when there is none (or
 * what is there is not the one mkfs made), or a negative errno. */
static int lf_find(struct fs_volume *v, const struct iref *root, struct iref *lf)
{
	struct dirpos pos;
	int ret = dir_find(v, root, OD_LF_NAME, OD_LF_NAME_LEN, &pos);

	if (ret == -ENOENT)
		return 0; /* removed by hand: orphans stay where fsck finds them */
	if (ret == 0)
		ret = ino_get_stable(v, pos.de.stable, lf);
	if (ret < 0)
		return ret;
	return S_ISDIR(lf->ino.mode) && (lf->ino.flags & OD_INF_LOSTFOUND);
}

int lf_anchor(struct fs_volume *v, const struct iref *root)
{
	struct iref lf;
	int ret = lf_find(v, root, &lf);

	if (ret <= 0 || lf.ino.next.chunk != OD_LOC_NONE)
		return ret < 0 ? ret : 0;
	ret = -ENOSPC;
	for (uint32_t i = 0; i < v->nchunks && ret < 0; i++) {
		struct chunk *c = &v->chunks[i];
		if (i == lf.loc.chunk || c->offline || chunk_draining(c) || chunk_fostered(c))
			continue; /* (an evacuated chunk gains nothing new) */
		ret = lf_part(v, &lf, c, lf.ino.next, &lf.ino.next);
	}
	if (ret < 0)
		return v->nchunks > 1 ? ret : 0;
	ret = ino_write(v, &lf);
	return ret < 0 ? ret : 1;
}

int lf_first_part(struct fs_volume *v, struct chunk *c)
{
	struct iref root, lf, first;
	int ret = chunk_load(c);

	if (ret < 0 || c->hdr.islot_watermark != 0 || c->nfree_slots)
		return ret; /* not a fresh chunk: its first slot went long ago */
	if (chunk_draining(c) || chunk_fostered(c))
		return 0; /* being evacuated: it gains nothing new */
	ret = ino_get_stable(v, v->root, &root);
	if (ret == 0)
		ret = lf_find(v, &root, &lf);
	if (ret <= 0 || lf.loc.chunk == c->index || lf.ino.next.chunk == OD_LOC_NONE)
		return ret;
	/* The new part goes right after the first one, never after the head:
	 * a caller may hold a copy of lost+found's head (a rename out of it,
	 * say) that it writes back later. When the first part's chunk cannot
	 * be read, c goes without a part (fsck then has nowhere in c to link
	 * c's orphans) rather than fail the allocation. */
	ret = ino_read(v, lf.ino.next, &first);
	if (ret < 0 || !lf_is_part(&first) || first.ino.head_stable != lf.ino.stable)
		return 0;
	ret = lf_part(v, &lf, c, first.ino.next, &first.ino.next);
	if (ret == 0)
		ret = ino_write(v, &first);
	return ret < 0 ? ret : 1;
}

int lf_is_part(const struct iref *part)
{
	return (part->ino.flags & (OD_INF_CONT | OD_INF_LOSTFOUND)) ==
	       (OD_INF_CONT | OD_INF_LOSTFOUND);
}
