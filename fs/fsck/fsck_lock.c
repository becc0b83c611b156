/* fsck.chunkfs's part in the chunk lock protocol (chunk_lock.h): before a
 * chunk of a volume image is checked, its byte range is locked, for
 * writing with -p/-y and for reading with -n, so that fsck never checks a
 * chunk that chunkfsd has online or that nbdkit chunkfs is serving for
 * writing, and nothing else can take it while fsck runs. An image of one
 * chunk alone is locked whole. The locks go with the descriptor, at
 * fsck_vol_close. NBD exports are not locked here: the plugin holds the
 * lock for its connection. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fs/format/chunk_lock.h"
#include "fs/fsck/fsck_vol.h"

/* [base, base + size) of v->fd locked as o's mode asks; what says what
 * it is in the message ("chunk 2", "the image"). */
static int lock_range(struct fsck_vol *v, uint64_t base, uint64_t size, const char *what,
		      const struct fsck_opts *o)
{
	int write = o->mode != FSCK_CHECK_ONLY, holder = -1;
	int ret = chunk_lock_try(v->fd, base, size, write);

	if (ret == 0)
		return 0;
	if (ret != -EAGAIN) {
		fsck_vol_say(o, "%s: cannot lock it for %s: %s", what, write ? "writing" : "reading",
			     strerror(-ret));
		return ret;
	}
	if (chunk_lock_query(v->fd, base, size, write, &holder) < 0 || holder == CHUNK_LOCK_FREE)
		holder = -1;
	fsck_vol_say(o,
		     "%s is in use: %s (chunkfsd has it online, or nbdkit chunkfs or another "
		     "fsck.chunkfs has it open); take it offline or stop that process first",
		     what, chunk_lock_holder_str(holder));
	return -EBUSY;
}

int fsck_vol_lock(struct fsck_vol *v, int chunk, const struct fsck_opts *o)
{
	for (uint32_t i = 0; i < v->nchunks; i++) {
		char what[32];
		int ret;
		if ((chunk >= 0 && (uint32_t)chunk != i) || v->size[i] == 0)
			continue; /* not checked, or not in the image at all */
		snprintf(what, sizeof(what), "chunk %u", i);
		ret = lock_range(v, v->base[i], v->size[i], what, o);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int fsck_image_lock(struct fsck_vol *v, const struct fsck_opts *o)
{
	return lock_range(v, 0, 0, "the image", o);
}
