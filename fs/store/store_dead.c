/* The store standing in for one that could not be reached (a chunk placed
 * on an NBD server that is down at open, a file that is missing): the
 * volume keeps its chunk offline behind it, and nothing ever gets through. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "fs/store/store.h"

static int dead_pread(struct chunk_store *st, void *buf, size_t len, uint64_t off)
{
	(void)st, (void)buf, (void)len, (void)off;
	return -EIO;
}

static int dead_pwrite(struct chunk_store *st, const void *buf, size_t len, uint64_t off)
{
	(void)st, (void)buf, (void)len, (void)off;
	return -EIO;
}

static int dead_flush(struct chunk_store *st)
{
	(void)st;
	return 0; /* nothing was written through it */
}

static int dead_trim(struct chunk_store *st, size_t len, uint64_t off)
{
	(void)st, (void)len, (void)off;
	return -EIO;
}

static void dead_close(struct chunk_store *st)
{
	free(st);
}

static const struct chunk_store_ops dead_ops = {
	.pread = dead_pread,
	.pwrite = dead_pwrite,
	.flush = dead_flush,
	.trim = dead_trim,
	.close = dead_close,
};

struct chunk_store *store_dead_new(void)
{
	struct chunk_store *st = calloc(1, sizeof(*st));

	if (st)
		st->ops = &dead_ops;
	return st;
}
