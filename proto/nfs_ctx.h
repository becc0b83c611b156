/* What an NFS or MOUNT procedure works with: the volume, the handle key,
 * the caller's credentials after export squashing, the export's options,
 * and an arena for the reply's memory. Procedure code (nfs3_proc.c,
 * mount3_proc.c) sees decoded arguments and fills a result; it knows
 * nothing of sockets or XDR streams. */
#ifndef CHUNKFS_PROTO_NFS_CTX_H
#define CHUNKFS_PROTO_NFS_CTX_H

#include <stddef.h>
#include <stdint.h>

#include "fs/fs.h"
#include "handles/fh.h"

/* A bump allocator for one reply: everything a result points to (names,
 * READDIR entries, READ data, handles) lives here and is freed at once
 * after the reply is encoded. */
struct arena {
	struct arena_block *head;
};

void *arena_alloc(struct arena *a, size_t len);
char *arena_strndup(struct arena *a, const char *s, size_t len);
void arena_release(struct arena *a);

struct nfs_ctx {
	struct fs_volume *vol;
	const struct hnd_fh_key *key;
	struct fs_cred cred;       /* who asks, after root/all squashing */
	int rdonly;                /* the export is read-only */
	/* The root of the caller's export: its ".." is itself, so that no
	 * LOOKUP or listing leads out of the export (num 0: the volume's). */
	struct fs_ino export_root;
	uint8_t write_verf[8];     /* changes whenever the server restarts, and whenever
				    * a chunk went offline dropping uncommitted changes */
	uint64_t drop_gen;         /* fs_drop_count when the call began */
	uint64_t change_gen;       /* fs_change_drop_count when the call began */
	int vouches_data;          /* COMMIT, a stable WRITE: its reply says data
				    * written before is durable (a buffer given up
				    * since it began fails it, not the others) */
	uint32_t rtmax, wtmax;     /* FSINFO limits; READ/WRITE counts are clamped to them */
	uint64_t prealloc_max;     /* bytes a new file's hinted reservation may take (0: none) */
	int needs_sync;            /* set by a modifying procedure: durable before the reply */
	struct arena arena;
	/* Where READ may put its data so that the reply is not copied: the
	 * reply buffer at the data's place (NULL: arena memory). */
	uint8_t *read_into;
	size_t read_room;
	/* For MOUNT, which works on the server's state: the server and the
	 * connection the call came on (opaque to procedure code). */
	struct server *srv;
	struct conn *conn;
};

#endif
