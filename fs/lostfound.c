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
	return ino_write(v, root);
}

int lf_first_part(struct fs_volume *v, struct chunk *c)
{
	struct iref root, lf;
	struct dirpos pos;
	struct od_loc at;
	int ret = chunk_load(c);

	if (ret < 0 || c->hdr.islot_watermark != 0 || c->nfree_slots)
		return ret; /* not a fresh chunk: its first slot went long ago */
	ret = ino_get_stable(v, v->root, &root);
	if (ret < 0)
		return ret;
	ret = dir_find(v, &root, OD_LF_NAME, OD_LF_NAME_LEN, &pos);
	if (ret == -ENOENT)
		return 0; /* removed by hand: orphans stay where fsck finds them */
	if (ret == 0)
		ret = ino_get_stable(v, pos.de.stable, &lf);
	if (ret < 0)
		return ret;
	if (!S_ISDIR(lf.ino.mode) || !(lf.ino.flags & OD_INF_LOSTFOUND) ||
	    lf.loc.chunk == c->index)
		return 0;
	ret = lf_part(v, &lf, c, lf.ino.next, &at);
	if (ret < 0)
		return ret;
	lf.ino.next = at;
	ret = ino_write(v, &lf);
	return ret < 0 ? ret : 1;
}

int lf_is_part(const struct iref *part)
{
	return (part->ino.flags & (OD_INF_CONT | OD_INF_LOSTFOUND)) ==
	       (OD_INF_CONT | OD_INF_LOSTFOUND);
}
