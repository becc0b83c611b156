/* Where a volume image's chunks are and what their headers say, without
 * opening the volume: for the nbdkit plugin, which serves chunks as raw
 * byte ranges and must describe them. The same rules as fs_open: chunk
 * 0's header (either copy) gives the count and the layout, each chunk's
 * own header its size, and a chunk whose header is unusable is taken to
 * have chunk 0's size; a retired chunk (evacuated: chunk 0's header says
 * so, and its size) is not read, and the image may end before it. Nothing
 * is locked and nothing is written. */
#ifndef CHUNKFS_VOL_PROBE_H
#define CHUNKFS_VOL_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "fs/format/ondisk.h"

struct vol_probe_chunk {
	uint64_t base;              /* byte offset in the image */
	uint64_t size;              /* bytes of the chunk the image holds */
	uint64_t full_size;         /* bytes it should have (nblocks x 4096) */
	int header_ok;              /* hdr is its valid header */
	int retired;                /* evacuated and retired: never read (size from chunk 0) */
	struct od_chunk_header hdr; /* when header_ok */
	char reason[160];           /* when not: why its header is unusable */
};

struct vol_probe {
	struct od_chunk_header ref; /* chunk 0's header when probed: uuid and layout */
	uint64_t image_size;
	uint32_t nchunks;
	struct vol_probe_chunk *chunks;
};

/* The size of the image open at fd: a regular file's length or a block
 * device's; *is_blk (when not NULL) says which. -EINVAL for anything else. */
int vol_image_size(int fd, uint64_t *size, int *is_blk);

/* The chunks of the image open at fd. 0, or -EINVAL when chunk 0 has no
 * valid header in either copy (not a chunkfs volume), -EUCLEAN when chunk
 * 0's header is unusable otherwise, another negative errno on I/O errors;
 * why[] says which in a sentence (the same ones as fs_open_ex). */
int vol_probe_fd(int fd, struct vol_probe *out, char *why, size_t whylen);

/* The headers of p's chunks read again (after a repair, say): the layout
 * stays, header_ok / hdr / reason are refreshed. 0 or a negative errno. */
int vol_probe_refresh(int fd, struct vol_probe *p);

void vol_probe_free(struct vol_probe *p);

#endif
