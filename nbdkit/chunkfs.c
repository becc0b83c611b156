/* nbdkit-chunkfs-plugin: `nbdkit chunkfs volume=PATH [control=SOCKET]
 * [readonly=true]`. Configuration, the volume's layout at start (a volume
 * whose chunk 0 has no usable header is refused there) and again at each
 * connection and listing (chunks added since are served), and one
 * connection's life: the export name picks the chunk, its byte range is
 * locked for the connection (write lock, or read lock when read-only) or
 * the connection is refused. Thread model: parallel; each connection has
 * its own descriptor and nothing shared changes after .get_ready. */
#include "config.h"

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chunkfs.h"
#include "fs/format/chunk_lock.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

char *cf_volume;
int cf_readonly;
struct vol_probe cf_layout;
/* Reserved: the daemon's control socket, to ask it for a chunk's state
 * once it has one. Only remembered for now. */
static char *cf_control;

static void chunkfs_unload(void)
{
	free(cf_volume);
	free(cf_control);
	vol_probe_free(&cf_layout);
}

static int chunkfs_config(const char *key, const char *value)
{
	char **to = NULL;
	int b;

	if (strcmp(key, "volume") == 0)
		to = &cf_volume;
	else if (strcmp(key, "control") == 0)
		to = &cf_control;
	if (to) {
		if (*to) {
			nbdkit_error("%s= given twice", key);
			return -1;
		}
		*to = nbdkit_absolute_path(value);
		return *to ? 0 : -1;
	}
	if (strcmp(key, "readonly") == 0) {
		b = nbdkit_parse_bool(value);
		if (b < 0)
			return -1;
		cf_readonly = b;
		return 0;
	}
	nbdkit_error("unknown parameter '%s' (volume=, control=, readonly=)", key);
	return -1;
}

static int chunkfs_config_complete(void)
{
	if (!cf_volume) {
		nbdkit_error("volume=PATH is required: the chunkfs volume image or device");
		return -1;
	}
	if (cf_control)
		nbdkit_debug("control socket %s remembered (reserved: not used yet)", cf_control);
	return 0;
}

/* The layout read from the image: 0, or -1 with why[]. */
static int probe(struct vol_probe *p, char *why, size_t whylen)
{
	int fd = open(cf_volume, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		return -1;
	}
	ret = vol_probe_fd(fd, p, why, whylen);
	close(fd);
	return ret < 0 ? -1 : 0;
}

int chunkfs_probe(struct vol_probe *p)
{
	char why[256];

	if (probe(p, why, sizeof(why)) == 0)
		return 0;
	/* Chunk 0's header unreadable now (being repaired through this very
	 * plugin, say): the layout seen at start still says where chunks are. */
	nbdkit_debug("%s: %s: serving the layout read at start", cf_volume, why);
	*p = cf_layout;
	p->chunks = calloc(cf_layout.nchunks, sizeof(*p->chunks));
	if (!p->chunks) {
		nbdkit_error("calloc: %m");
		return -1;
	}
	memcpy(p->chunks, cf_layout.chunks, cf_layout.nchunks * sizeof(*p->chunks));
	return 0;
}

/* The layout at start: a volume whose chunk 0 cannot be read is refused
 * here, before any client comes. */
static int chunkfs_get_ready(void)
{
	char why[256];

	if (probe(&cf_layout, why, sizeof(why)) < 0) {
		nbdkit_error("%s: %s", cf_volume, why);
		return -1;
	}
	return 0;
}

/* The chunk an export name names: digits only, no leading zeros, below n. */
static int parse_export(const char *name, uint32_t n, uint32_t *index)
{
	uint64_t v = 0;

	if (!name[0] || (name[0] == '0' && name[1]))
		return -EINVAL;
	for (const char *p = name; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
		if (v >= n)
			return -ENOENT;
	}
	*index = (uint32_t)v;
	return 0;
}

/* Opens the image and locks the chunk's range; on failure h->fd is -1
 * and the reason has been given to nbdkit_error. */
static int open_chunk(struct chunk_handle *h)
{
	int holder = -1, ret;

	h->fd = open(cf_volume, (h->write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (h->fd < 0) {
		nbdkit_error("%s: %m", cf_volume);
		return -1;
	}
	ret = chunk_lock_try(h->fd, h->base, h->size, h->write);
	if (ret == 0)
		return 0;
	if (ret == -EAGAIN) {
		/* Who, as far as F_OFD_GETLK tells (it may have let go since). */
		if (chunk_lock_query(h->fd, h->base, h->size, h->write, &holder) < 0 ||
		    holder == CHUNK_LOCK_FREE)
			holder = -1;
		nbdkit_error("chunk %u is in use: %s; it cannot be opened for %s until that "
			     "process lets go of it (take it offline in chunkfsd first)",
			     h->index, chunk_lock_holder_str(holder), h->write ? "writing" : "reading");
		nbdkit_set_error(EBUSY);
	} else {
		errno = -ret;
		nbdkit_error("chunk %u: locking its bytes of %s: %m", h->index, cf_volume);
	}
	close(h->fd);
	h->fd = -1;
	return -1;
}

/* A connection: the layout is read again, so that a chunk added to the
 * volume while nbdkit runs (chunkfsctl add-chunk of a region) is served. */
static void *chunkfs_open(int readonly)
{
	const char *name = nbdkit_export_name();
	struct chunk_handle *h = NULL;
	struct vol_probe now;
	uint32_t index = 0;
	int ret;

	if (!name) {
		nbdkit_error("no export name");
		return NULL;
	}
	memset(&now, 0, sizeof(now));
	if (chunkfs_probe(&now) < 0)
		return NULL;
	ret = parse_export(name, now.nchunks, &index);
	if (ret < 0) {
		nbdkit_error("export '%s': no such chunk: the exports are the chunk indexes 0 to %u",
			     name, now.nchunks - 1);
		nbdkit_set_error(ENOENT);
		goto out;
	}
	if (now.chunks[index].size == 0 && !now.chunks[index].retired) {
		nbdkit_error("chunk %u lies beyond the end of %s (the image is truncated)", index,
			     cf_volume);
		goto out;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		nbdkit_error("calloc: %m");
		goto out;
	}
	h->index = index;
	h->write = !readonly && !cf_readonly;
	h->base = now.chunks[index].base;
	h->size = now.chunks[index].size;
	if (now.chunks[index].retired) {
		/* Evacuated: nothing of the volume is there, and its bytes may
		 * be gone with the image's end. An empty, read-only export, so
		 * that a listing that opens every export (nbdinfo --list) still
		 * works; nothing is locked. */
		nbdkit_debug("chunk %u is retired (evacuated): served empty", index);
		h->fd = -1;
		h->write = 0;
		h->size = 0;
		goto out;
	}
	if (open_chunk(h) < 0) {
		free(h);
		h = NULL;
		goto out;
	}
	nbdkit_debug("chunk %u: bytes %llu to %llu of %s, locked for %s", index,
		     (unsigned long long)h->base, (unsigned long long)(h->base + h->size - 1),
		     cf_volume, h->write ? "writing" : "reading");
out:
	vol_probe_free(&now);
	return h;
}

/* Closing the descriptor drops the lock (the last one of its open file
 * description); a crash of nbdkit drops it the same way. */
static void chunkfs_close(void *handle)
{
	struct chunk_handle *h = handle;

	if (h->fd >= 0 && close(h->fd) < 0)
		nbdkit_debug("chunk %u: close: %m", h->index);
	free(h);
}

static int64_t chunkfs_get_size(void *handle)
{
	return (int64_t)((struct chunk_handle *)handle)->size;
}

static int chunkfs_can_write(void *handle)
{
	return ((struct chunk_handle *)handle)->write;
}

static int chunkfs_yes(void *handle)
{
	return 1;
}

static int chunkfs_can_fua(void *handle)
{
	return NBDKIT_FUA_NATIVE;
}

/* Several connections of one client may read a chunk together (read
 * locks share); a writer is alone on its chunk, as the lock says. */
static int chunkfs_can_multi_conn(void *handle)
{
	return !((struct chunk_handle *)handle)->write;
}

#define CHUNKFS_HELP                                                                       \
	"volume=PATH     (required) the chunkfs volume image or device\n"                   \
	"control=SOCKET  reserved: chunkfsd's control socket (remembered, not used yet)\n" \
	"readonly=true   every connection reads only (read locks)\n"                         \
	"Exports are named by chunk index: 0, 1, ...; nbdinfo --list describes each."

static struct nbdkit_plugin plugin = {
	.name = "chunkfs",
	.longname = "chunkfs: one chunk of a volume per export",
	.version = PACKAGE_VERSION,
	.description = "Serves each chunk of a chunkfs volume as an export, under its lock",
	.unload = chunkfs_unload,
	.config = chunkfs_config,
	.config_complete = chunkfs_config_complete,
	.config_help = CHUNKFS_HELP,
	.magic_config_key = "volume",
	.get_ready = chunkfs_get_ready,
	.list_exports = chunkfs_list_exports,
	.default_export = chunkfs_default_export,
	.open = chunkfs_open,
	.close = chunkfs_close,
	.get_size = chunkfs_get_size,
	.can_write = chunkfs_can_write,
	.can_flush = chunkfs_yes,
	.can_trim = chunkfs_can_write,
	.can_zero = chunkfs_can_write,
	.can_fast_zero = chunkfs_yes,
	.can_fua = chunkfs_can_fua,
	.can_multi_conn = chunkfs_can_multi_conn,
	.pread = chunkfs_pread,
	.pwrite = chunkfs_pwrite,
	.flush = chunkfs_flush,
	.trim = chunkfs_trim,
	.zero = chunkfs_zero,
	.errno_is_preserved = 1,
};

struct nbdkit_plugin *plugin_init(void);
NBDKIT_REGISTER_PLUGIN(plugin)
