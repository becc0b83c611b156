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

/* The first part of lost+found, in the first chunk after the head's that
 * takes one, when lost+found has none yet (mkfs, and at open a volume
 * made before mkfs did it): 1 when made, 0 when not needed, or a negative
 * errno (no chunk could take it). */
int lf_anchor(struct fs_volume *v, const struct iref *root);

/* Before chunk c's first inode-area slot is handed out: lost+found's part
 * in c, empty, in c's first slot, chained right after lost+found's first
 * part (lost+found's head is not written). Nothing when c has had a slot
 * already, holds lost+found's head, there is no /lost+found, or its first
 * part cannot be read. 1 when it made the part, 0 when not, or a negative
 * errno. */
int lf_first_part(struct fs_volume *v, struct chunk *c);

/* Is this directory part one of lost+found's (kept even when empty)? */
int lf_is_part(const struct iref *part);

#endif
