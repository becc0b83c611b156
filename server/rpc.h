/* ONC RPC (RFC 5531) message framing for chunkfsd: decoding a call header
 * (with AUTH_SYS credentials) from one record, and encoding reply headers
 * (accepted, or denied). Record marking itself is in conn.c. */
#ifndef CHUNKFS_SERVER_RPC_H
#define CHUNKFS_SERVER_RPC_H

#include <rpc/rpc.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/fs.h"

#define RPC_AUTH_NONE 0
#define RPC_AUTH_SYS 1

struct rpc_call {
	uint32_t xid;
	uint32_t rpcvers;
	uint32_t prog, vers, proc;
	uint32_t flavor;
	struct fs_cred cred;     /* AUTH_SYS: uid, gid, groups */
	char machine[256];
	XDR args;                /* positioned at the procedure's arguments */
};

/* 0 and a decoded header; -EBADMSG when the record is not an RPC call
 * (the connection is closed); -EACCES when the credentials are malformed
 * (answered with AUTH_BADCRED); c->xid is valid whenever len >= 4. */
int rpc_decode_call(const uint8_t *rec, size_t len, struct rpc_call *c);

/* Encode a reply header into x: accepted with accept_stat (and, for
 * PROG_MISMATCH, the supported versions), or denied. */
int rpc_encode_accepted(XDR *x, uint32_t xid, uint32_t accept_stat, uint32_t low,
			uint32_t high);
int rpc_encode_denied_auth(XDR *x, uint32_t xid, uint32_t auth_stat);
int rpc_encode_denied_version(XDR *x, uint32_t xid);

#endif
