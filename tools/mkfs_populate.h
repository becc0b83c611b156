/* Filling a fresh chunkfs volume from a directory tree (mkfs.chunkfs -d),
 * shared by mkfs and the benchmarks: contents, types, modes, owners, times
 * and hard links are copied; permissions are never checked (NULL cred). */
#ifndef CHUNKFS_MKFS_POPULATE_H
#define CHUNKFS_MKFS_POPULATE_H

#include <stdint.h>

#include "fs/fs.h"

struct mkfs_populate_stats {
	uint64_t files;     /* regular files, each inode counted once */
	uint64_t dirs;      /* directories made (the root is not counted) */
	uint64_t symlinks;  /* symbolic links, each inode counted once */
	uint64_t hardlinks; /* further names of an inode already copied */
	uint64_t devices;   /* character and block devices */
	uint64_t fifos;
	uint64_t sockets;
	uint64_t bytes;     /* file data written; holes are skipped, not counted */
};

/* mkfs_populate.c */
/* Copies everything below dir into the root directory of vol, and dir's own
 * mode, owner and times onto the root; *st is zeroed first and counts what
 * was copied. Stops at the first error, printed to stderr with the path of
 * the source file; returns 0 or a negative errno. Everything copied is
 * durable (fs_sync) when it returns 0. */
int mkfs_populate(struct fs_volume *vol, const char *dir, struct mkfs_populate_stats *st);

#endif
