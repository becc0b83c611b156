/* nbdkit-chunkfs-plugin, the export list: one export per chunk, named by
 * its index, described by who holds its lock (online in chunkfsd, in use
 * elsewhere, or offline) and what its header says, both read afresh at
 * every listing. No default export: a client must name the chunk. */
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

const char *chunkfs_lock_words(int holder)
{
	switch (holder) {
	case CHUNK_LOCK_FREE:
		return "offline, no other process holds it";
	case CHUNK_LOCK_READER:
		return "in use, locked for reading by another process";
	case CHUNK_LOCK_WRITER:
		return "in use, locked for writing by another process (chunkfsd has it online, "
		       "or nbdkit chunkfs or fsck.chunkfs is writing it)";
	}
	return "in use by another process";
}

static const char *kind_name(uint32_t kind)
{
	static const char *const names[] = { "general", "small-file", "large-file" };

	return kind < 3 ? names[kind] : "unknown kind";
}

static const char *state_name(uint32_t state)
{
	static const char *const names[] = { "clean", "dirty", "offline", "needs-repair" };

	return state < 4 ? names[state] : "unknown state";
}

/* "chunk 2 of 4 (1048576 bytes): offline, ...; header valid: general, clean" */
static void describe(const struct vol_probe *p, uint32_t i, int holder, char *out, size_t n)
{
	const struct vol_probe_chunk *pc = &p->chunks[i];
	int len = snprintf(out, n, "chunk %u of %u (%llu bytes): %s; ", i, p->nchunks,
			   (unsigned long long)pc->size, chunkfs_lock_words(holder));

	if (len < 0 || (size_t)len >= n)
		return;
	if (pc->retired)
		snprintf(out + len, n - (size_t)len, "retired (evacuated), served empty");
	else if (pc->header_ok)
		snprintf(out + len, n - (size_t)len, "header valid: %s, %s", kind_name(pc->hdr.kind),
			 state_name(pc->hdr.state));
	else
		snprintf(out + len, n - (size_t)len, "bad header: %s", pc->reason);
}

int chunkfs_list_exports(int readonly, int is_tls, struct nbdkit_exports *exports)
{
	struct vol_probe p;
	int fd, ret = -1;

	memset(&p, 0, sizeof(p));
	if (chunkfs_probe(&p) < 0) /* the layout now: chunks added since start too */
		return -1;
	fd = open(cf_volume, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		nbdkit_error("%s: %m", cf_volume);
		goto out;
	}
	errno = -vol_probe_refresh(fd, &p); /* (the headers' state, whichever layout) */
	if (errno) {
		nbdkit_error("%s: reading the chunk headers: %m", cf_volume);
		goto out;
	}
	for (uint32_t i = 0; i < p.nchunks; i++) {
		char name[16], desc[512];
		int holder = CHUNK_LOCK_FREE, err = 0;
		if (p.chunks[i].size)
			err = chunk_lock_query(fd, p.chunks[i].base, p.chunks[i].size, 1, &holder);
		if (err < 0) {
			errno = -err;
			nbdkit_error("%s: chunk %u: asking for its lock: %m", cf_volume, i);
			goto out;
		}
		snprintf(name, sizeof(name), "%u", i);
		describe(&p, i, holder, desc, sizeof(desc));
		if (nbdkit_add_export(exports, name, desc) < 0)
			goto out;
	}
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	vol_probe_free(&p);
	return ret;
}

const char *chunkfs_default_export(int readonly, int is_tls)
{
	nbdkit_error("no export name given: name a chunk by its index, 0 to %u "
		     "(nbdinfo --list shows them)",
		     cf_layout.nchunks - 1);
	return NULL;
}
