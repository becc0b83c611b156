/* /lost+found as mkfs makes it: a directory of the root, in the root's
 * chunk, with an empty part (a directory continuation with no units) in
 * every other chunk, chained from its head. The head and its parts carry
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
	ret = slot_alloc(c, &part.loc);
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
	struct od_loc next = { .chunk = OD_LOC_NONE };
	struct iref lf;
	int ret = lf_head(v, root, &lf);

	if (ret < 0)
		return ret;
	/* Made from the last chunk down, so that the chain runs in chunk order
	 * and each part is written once. */
	for (uint32_t i = v->nchunks; i-- > 0;) {
		struct chunk *c = vol_chunk(v, i);
		if (i == lf.loc.chunk || c->offline)
			continue;
		ret = lf_part(v, &lf, c, next, &next);
		if (ret < 0)
			return ret;
	}
	lf.ino.next = next;
	ret = ino_write(v, &lf);
	if (ret < 0)
		return ret;
	root->ino.nlink++;
	return ino_write(v, root);
}

int lf_is_part(const struct iref *part)
{
	return (part->ino.flags & (OD_INF_CONT | OD_INF_LOSTFOUND)) ==
	       (OD_INF_CONT | OD_INF_LOSTFOUND);
}
