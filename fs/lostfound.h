/* /lost+found with a part in every chunk (fs/lostfound.c): what mkfs makes
 * and what the library must keep. */
#ifndef CHUNKFS_FS_LOSTFOUND_H
#define CHUNKFS_FS_LOSTFOUND_H

struct fs_volume;
struct iref;

/* Make /lost+found in the root's chunk and an empty part of it in every
 * other online chunk; the root (written back) gains a subdirectory. */
int lf_mkfs(struct fs_volume *v, struct iref *root);

/* Is this directory part one of lost+found's (kept even when empty)? */
int lf_is_part(const struct iref *part);

#endif
