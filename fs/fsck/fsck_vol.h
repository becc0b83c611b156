/* fsck.chunkfs, the volume level's internals (fs/fsck/fsck_volume.c): telling an
 * image of one chunk from a volume, opening a volume image and locating its
 * chunks. Shared with the estimate (fs/fsck/fsck_estimate.c); the passes never
 * see any of it. */
#ifndef CHUNKFS_FSCK_VOL_H
#define CHUNKFS_FSCK_VOL_H

#include "fs/fsck/fsck_int.h"

/* What an image holds (fsck_image_kind). */
enum fsck_image_kind {
	FSCK_IMG_UNKNOWN = 0, /* no valid chunk header where one would be */
	FSCK_IMG_CHUNK = 1,   /* one chunk of a volume, alone */
	FSCK_IMG_VOLUME = 2,  /* a volume: chunk 0 first, then the others */
};

/* Looks at the header of the chunk at the start of st (copy 0, else copy
 * 1 at half of each possible chunk size): an index other than 0, or chunk
 * 0 of several with no room for a second chunk, is a lone chunk. h gets
 * the header found (unless FSCK_IMG_UNKNOWN). Returns the kind, or a
 * negative errno when st cannot be read. */
int fsck_image_kind(struct chunk_store *st, struct od_chunk_header *h);

/* fsck_vol_open: the image or device at path, opened (read-write unless
 * -n) into v->fd, its size in *total. fsck_vol_locate: where its chunks
 * are, v->nchunks of them, each at v->base[i] for v->size[i] bytes, with
 * their headers. Messages go to o->out. fsck_vol_close() undoes both (also
 * after a failure; v must have been zeroed with fd -1 first, or opened). */
int fsck_vol_open(const char *path, const struct fsck_opts *o, struct fsck_vol *v,
		  uint64_t *total);
int fsck_vol_locate(struct fsck_vol *v, uint64_t total, const struct fsck_opts *o);
/* The same for a check of chunk k alone: chunk 0's header and chunk k's,
 * where chunk 0's size puts it; when that is not a header of chunk k of
 * the same size and volume, every chunk is located as fsck_vol_locate()
 * does. */
int fsck_vol_locate_one(struct fsck_vol *v, uint64_t total, const struct fsck_opts *o,
			uint32_t k);
void fsck_vol_close(struct fsck_vol *v);

/* fsck_lock.c: the chunks to be checked (chunk, or all when -1) locked
 * for writing with -p/-y, for reading with -n (chunk_lock.h);
 * fsck_image_lock: an image of one chunk, whole. 0, or -EBUSY (said to
 * o->out) when another process holds one, or another negative errno. */
int fsck_vol_lock(struct fsck_vol *v, int chunk, const struct fsck_opts *o);
int fsck_image_lock(struct fsck_vol *v, const struct fsck_opts *o);

/* One line to o->out (when there is one). */
void fsck_vol_say(const struct fsck_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
