/* The damaged-image tests' common ground: a small volume with a known tree
 * (fsck_image_build), reading whole image files, and counting which files
 * of the tree read back exactly (fsck_image_survivors). */
#ifndef CHUNKFS_TESTS_FSCK_IMAGE_H
#define CHUNKFS_TESTS_FSCK_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "fs/fs.h"

#define FI_CHUNK_SIZE (1u << 20)
#define FI_NCHUNKS 4
#define FI_NMANY 300
#define FI_BIG_SIZE (1500u * 1000u)
#define FI_ORPH_SIZE 5000u
#define FI_DATA2_SIZE 8000u

/* What the build left, for the damage to aim at. */
struct fi_tree {
	uint64_t small, gone, big, many, sub, orph, data2;
};

/* mkfs and the tree: d1/{small (inline), hl (a hard link to small), sub/f2,
 * orph2 (a file whose inode lives in a slot: its first name was removed),
 * data2 (FI_DATA2_SIZE bytes in blocks)},
 * ln (a symlink), many/f000..f299 (parts in other chunks), many/late/deeper,
 * far_link (a hard link from the root to many/f000), big (continued in
 * other chunks). 0 or a negative errno (the failing call is printed). */
int fi_build(const char *image, struct fi_tree *t);

/* The contents the tree's files were written with. */
void fi_fill(uint8_t *buf, size_t len, unsigned seed);

/* The whole file at path (malloc'd), or NULL. */
uint8_t *fi_slurp(const char *path, size_t *len);
int fi_copy(const char *from, const char *to);

/* Files of the tree that read back exactly through v: *total of them. */
/* The whole tree from the root through the library: every directory
 * listed, every file read to its end, every symlink read. */
struct fi_walk {
	unsigned dirs, files, errors;
};
void fi_walk(struct fs_volume *v, struct fi_walk *w);
unsigned fi_survivors(struct fs_volume *v, unsigned *total);

#endif
