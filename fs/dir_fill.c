/* Directories being filled (issue 24): a record, in memory only, of which
 * directories had the volume's latest creates of regular files, so that
 * the packing of small files (fs/chunk.c, alloc_packed) knows a burst from
 * a directory's first small file, and of each such directory's packing
 * region, so that its next burst goes on there. "Recent" counts creates,
 * not time: under delayed allocation a file is placed at its COMMIT (or
 * a flush), after the creates of its batch, however long those took. */

#include <string.h>

#include "internal.h"

/* A directory is being filled after DIR_FILL_BURST creates in a row, each
 * with at most DIR_FILL_GAP creates elsewhere since the one before (a few
 * directories filled by turns still count; a create every so often in
 * one of many directories does not). A new directory starts one short:
 * its first create makes it a burst. */
#define DIR_FILL_BURST 4u
#define DIR_FILL_GAP 3u

struct dir_fill *dir_fill_find(struct fs_volume *v, uint64_t dir)
{
	for (uint32_t i = 0; dir && i < DIR_FILL_SLOTS; i++)
		if (v->fill[i].dir == dir)
			return &v->fill[i];
	return NULL;
}

/* dir's slot: its own, else the one whose last create is the oldest
 * (a free slot first), cleared for dir. */
static struct dir_fill *fill_slot(struct fs_volume *v, uint64_t dir)
{
	struct dir_fill *f = dir_fill_find(v, dir);

	if (f)
		return f;
	f = &v->fill[0];
	for (uint32_t i = 1; i < DIR_FILL_SLOTS && f->dir; i++)
		if (!v->fill[i].dir || v->fill[i].last < f->last)
			f = &v->fill[i];
	memset(f, 0, sizeof(*f));
	f->dir = dir;
	return f;
}

void dir_fill_create(struct fs_volume *v, uint64_t dir)
{
	struct dir_fill *f = fill_slot(v, dir);

	if (f->run && v->fill_creates - f->last <= DIR_FILL_GAP)
		f->run++;
	else
		f->run = 1;
	f->last = ++v->fill_creates;
}

void dir_fill_mkdir(struct fs_volume *v, uint64_t dir)
{
	struct dir_fill *f = fill_slot(v, dir);

	f->run = DIR_FILL_BURST - 1;
	f->last = v->fill_creates;
}

int dir_fill_busy(struct fs_volume *v, uint64_t dir)
{
	const struct dir_fill *f = dir_fill_find(v, dir);

	return f && f->run >= DIR_FILL_BURST;
}
