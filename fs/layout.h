/* Where a volume's bytes lie, for benchmarks and tools that judge
 * fragmentation (bench/age_count): a regular file's physical extents
 * across its chain of continuations, and each chunk's free runs. Read
 * only; nothing here changes the volume. Every function returns 0 or a
 * negative errno (a callback's nonzero return stops the walk and is
 * returned). */
#ifndef CHUNKFS_FS_LAYOUT_H
#define CHUNKFS_FS_LAYOUT_H

#include <stdint.h>

#include "fs/fs.h"

/* One run of a file's blocks that is contiguous on disk: file blocks
 * [lblk, lblk + len) at blocks [pblk, pblk + len) of chunk. Adjacent
 * entries of an extent list that continue each other, in the file and on
 * disk, are reported as one. */
struct fs_extent {
	uint64_t lblk;
	uint32_t chunk;
	uint32_t pblk;
	uint32_t len;
};
typedef int (*fs_extent_fn)(void *ctx, const struct fs_extent *e);

/* The extents of regular file ino in file order, the head's first, then
 * each continuation's. A file with inline data or no data has none;
 * -EINVAL when ino is not a regular file. */
int fs_file_extents(struct fs_volume *vol, struct fs_ino ino, fs_extent_fn fn, void *ctx);

/* One maximal run of free blocks data may take in a chunk: [start, start
 * + len); zone: inside the chunk's metadata zone (data takes it last), so
 * a run is split where the zone ends. The fixed metadata of either half
 * is never free room. */
typedef int (*fs_free_run_fn)(void *ctx, uint32_t chunk, uint32_t start, uint32_t len, int zone);

/* The free runs of chunk, in block order; -EIO when it is offline. */
int fs_chunk_free_runs(struct fs_volume *vol, uint32_t chunk, fs_free_run_fn fn, void *ctx);

#endif
