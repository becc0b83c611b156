/* Where a chunk lives when it is not a region of the volume image: its own
 * store, named by a path (a file or block device holding that chunk alone)
 * or an NBD URI (any NBD server: nbdkit, qemu-nbd, nbd-server). Opening it
 * by name, and the rule for NBD: a chunk is served read-write only from an
 * export that is writable and offers NBD_CMD_FLUSH, since every commit
 * counts on store_flush making what it wrote durable. How long a server
 * may take (fs_set_store_timeout) is the NBD store's. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fs/internal.h"
#include "fs/store/store_nbd.h"

static int open_nbd(const char *uri, int rdonly, struct chunk_store **out, char *why,
		    size_t whylen)
{
	struct chunk_store *st;
	char msg[256] = "";
	int ret = store_nbd_open(uri, !rdonly, &st, msg, sizeof(msg));

	if (ret < 0) {
		snprintf(why, whylen, "%s: %s", uri, msg);
		return ret;
	}
	if (!rdonly && store_nbd_export_read_only(st)) {
		snprintf(why, whylen, "%s: the export is read-only", uri);
		store_close(st);
		return -EROFS;
	}
	if (!rdonly && !store_nbd_can_flush(st)) {
		snprintf(why, whylen,
			 "%s: the NBD server offers no flush, so no commit could be made "
			 "durable: refused read-write",
			 uri);
		store_close(st);
		return -EOPNOTSUPP;
	}
	*out = st;
	return 0;
}

void fs_set_store_timeout(int ms)
{
	store_nbd_set_timeout(ms);
}

int fs_set_store_pool(int conns, size_t readahead)
{
	store_nbd_set_readahead(readahead);
	return store_nbd_set_connections(conns);
}

int vol_place_open(const char *name, int rdonly, struct chunk_store **out, char *why,
		   size_t whylen)
{
	int ret;

	if (store_nbd_is_uri(name))
		return open_nbd(name, rdonly, out, why, whylen);
	ret = store_file_open(name, rdonly, out);
	if (ret < 0)
		snprintf(why, whylen, "%s: %s", name,
			 ret == -EINVAL ? "not a file or block device" : strerror(-ret));
	return ret;
}

int fs_any_placed(struct fs_volume *v)
{
	uint32_t n = __atomic_load_n(&v->nchunks, __ATOMIC_ACQUIRE);

	/* c->place is set before a chunk is published and never changes. */
	for (uint32_t i = 1; i < n; i++)
		if (v->chunks[i].place)
			return 1;
	return 0;
}

const char *fs_chunk_place(struct fs_volume *v, uint32_t chunk)
{
	uint32_t n = __atomic_load_n(&v->nchunks, __ATOMIC_ACQUIRE);

	return chunk < n ? v->chunks[chunk].place : NULL;
}
