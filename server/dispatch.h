/* Request dispatch (dispatch.c): one call decoded, run and its reply
 * encoded. It calls neither the group commit nor the connection: a call
 * that changed the volume is only marked, and its caller commits it. */
#ifndef CHUNKFS_SERVER_DISPATCH_H
#define CHUNKFS_SERVER_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

struct server;
struct conn;
struct commit_call;

/* Run one call. 0: the reply (with its record mark) is in out; 1: no reply
 * (a retransmission still in progress); -EAGAIN (only with nowait, for the
 * event loop): the call would wait, or may take long, nothing was done and
 * a worker must run it; another < 0: the record was not an RPC call, close
 * the connection. cc (NULL allowed with nowait, whose calls change
 * nothing): cc->admitted, the call passed its export check (its peer is
 * proven; the caller tells the connection); cc->changed (never with
 * nowait), the call changed the volume, and its reply, in out already,
 * waits for a commit (commit_ticket, commit_reply). */
int dispatch_call(struct server *srv, struct conn *c, const uint8_t *rec, size_t len,
		  uint8_t *out, size_t outcap, size_t *outlen, int nowait, struct commit_call *cc);
/* The reply of cc (in out, *outlen of outcap bytes) once its sync ended:
 * made NFS3ERR_IO when the sync failed, and recorded in the duplicate
 * request cache. */
void dispatch_committed(struct server *srv, struct conn *c, const struct commit_call *cc,
			int failed, uint8_t *out, size_t outcap, size_t *outlen);
/* The bytes a call will move, read from its record without running it:
 * READ's count, READDIR's count, READDIRPLUS's maxcount and WRITE's
 * record (up to max_io), else 0. */
size_t dispatch_call_bytes(const struct server *srv, const uint8_t *rec, size_t len);
/* The size of a reply buffer. */
size_t dispatch_reply_cap(const struct server *srv);

#endif
