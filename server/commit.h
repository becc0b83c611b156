/* Group commit (commit.c): a reply that must wait for a sync, and the hook
 * its caller gives to receive it once the sync ended. */
#ifndef CHUNKFS_SERVER_COMMIT_H
#define CHUNKFS_SERVER_COMMIT_H

#include <stddef.h>
#include <stdint.h>

struct server;
struct conn;
struct commit_call;

/* The answer hook: the reply in buf (len bytes of cap) once a sync covering
 * its ticket ended (failed: that sync failed), from the thread of the call
 * or of the committer. buf may be a copy with room for an NFS3ERR_IO reply;
 * c is passed through, with the request's reference, which the hook drops. */
typedef void (*commit_answer_fn)(struct server *srv, struct conn *c, const struct commit_call *cc,
				 int failed, uint8_t *buf, size_t len, size_t cap);

/* A call that changed the volume takes a ticket after its change. */
uint64_t commit_ticket(struct server *srv);
/* Its reply (cc->ticket set) goes to answer once a sync covering the
 * ticket ended: from this thread, or held for the committer's. */
void commit_reply(struct server *srv, struct conn *c, uint8_t *buf, size_t len, size_t cap,
		  const struct commit_call *cc, commit_answer_fn answer);

#endif
