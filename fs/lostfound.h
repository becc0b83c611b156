/* /lost+found with a part in every chunk (fs/lostfound.c): what mkfs makes
 * and what the library must keep. */
#ifndef CHUNKFS_FS_LOSTFOUND_H
#define CHUNKFS_FS_LOSTFOUND_H

struct fs_volume;
struct iref;

struct chunk;

/* Make /lost+found in the root's chunk (its parts in the other chunks come
 * when first needed, lf_first_part); the root (written back) gains a
 * subdirectory. */
int lf_mkfs(struct fs_volume *v, struct iref *root);

/* Before chunk c's first inode-area slot is handed out: lost+found's part
 * in c, empty, chained right after its head, in c's first slot. Nothing
 * when c has had a slot already, holds lost+found's head, or there is no
 * /lost+found. 1 when it
 * made the part (lost+found's head changed: a copy of it held elsewhere
 * is stale), 0 when not, or a negative errno. */
int lf_first_part(struct fs_volume *v, struct chunk *c);

/* Is this directory part one of lost+found's (kept even when empty)? */
int lf_is_part(const struct iref *part);

#endif
