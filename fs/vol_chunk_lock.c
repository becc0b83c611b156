/* The volume's hold on its chunks: an OFD lock (chunk_lock.h) on each
 * online chunk's byte range of the image, a write lock (a read lock for a
 * read-only open), taken at open before anything is written and held until
 * fs_close closes the image; dropped and taken again one chunk at a time
 * for taking a chunk offline and bringing it back. Chunks found offline at
 * open are not locked: the volume never touches them, so they can be
 * repaired (nbdkit chunkfs, fsck.chunkfs -c) while it serves the rest.
 * Chunks placed outside the image (fs/place.c) are not locked here: their
 * region of the image is not used. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fs/format/chunk_lock.h"
#include "fs/internal.h"

static uint64_t chunk_bytes(const struct chunk *c)
{
	return (uint64_t)c->hdr.nblocks * OD_BLOCK_SIZE;
}

/* Chunk c's lock on the image: 0, -EBUSY (someone else holds it), or
 * another negative errno; why[] gets a sentence on failure. */
static int lock_chunk(struct fs_volume *v, struct chunk *c, char *why, size_t whylen)
{
	uint64_t size = chunk_bytes(c);
	int holder = CHUNK_LOCK_WRITER;
	int ret = chunk_lock_try(v->fd, c->base, size, !v->rdonly);

	if (ret == 0) {
		c->locked = 1;
		return 0;
	}
	if (ret == -EAGAIN) {
		/* Who, as far as F_OFD_GETLK can tell; it may have let go since. */
		if (chunk_lock_query(v->fd, c->base, size, 1, &holder) < 0 ||
		    holder == CHUNK_LOCK_FREE)
			holder = -1;
		if (why && whylen)
			snprintf(why, whylen,
				 "chunk %u (bytes %llu to %llu of the image) is in use: %s "
				 "(chunkfsd, nbdkit chunkfs or fsck.chunkfs has it open)",
				 c->index, (unsigned long long)c->base,
				 (unsigned long long)(c->base + size - 1), chunk_lock_holder_str(holder));
		return -EBUSY;
	}
	if (why && whylen)
		snprintf(why, whylen, "chunk %u: cannot lock bytes %llu to %llu of the image: %s",
			 c->index, (unsigned long long)c->base,
			 (unsigned long long)(c->base + size - 1), strerror(-ret));
	return ret;
}

int vol_chunk_lock_open(struct fs_volume *v, struct chunk *c, char *why, size_t whylen)
{
	if (!v->shared_fd || c->offline || c->locked || c->place)
		return 0;
	return lock_chunk(v, c, why, whylen);
}

int vol_chunk_release(struct fs_volume *v, uint32_t i)
{
	struct chunk *c = vol_chunk(v, i);
	int ret;

	if (!c)
		return -EINVAL;
	if (!v->shared_fd || !c->locked)
		return 0;
	ret = chunk_unlock(v->fd, c->base, chunk_bytes(c));
	if (ret == 0)
		c->locked = 0;
	return ret;
}

int vol_chunk_reacquire(struct fs_volume *v, uint32_t i, char *why, size_t whylen)
{
	struct chunk *c = vol_chunk(v, i);

	if (!c)
		return -EINVAL;
	if (!v->shared_fd || c->locked || c->place)
		return 0;
	return lock_chunk(v, c, why, whylen);
}
