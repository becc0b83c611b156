/* add-chunk on the control socket (server/add_chunk.c): a chunk added to
 * the served volume, and where a chunk on its own store lives recorded in
 * the configuration file before the new count commits. */
#ifndef CHUNKFS_SERVER_ADD_CHUNK_H
#define CHUNKFS_SERVER_ADD_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "server/server.h"

/* The command's words w[0..nw) ("add-chunk", then size=BYTES, kind=KIND,
 * bpi=BYTES for a region of the image, or WHERE, a path or NBD URI whose
 * chunk header mkfs.chunkfs --add-chunk-of made): 0 and *index, or a
 * negative errno and why[]. Runs on the control thread. */
int add_chunk_run(struct server *srv, char **w, int nw, uint32_t *index, char *why,
		  size_t whylen);

/* Is where a name a placed chunk may have (an absolute path, an NBD URI)? */
int store_name_ok(const char *where);

#endif
