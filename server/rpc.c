/* ONC RPC call headers in, reply headers out (RFC 5531 section 9), with
 * AUTH_NONE and AUTH_SYS (section A) credentials; no allocation. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "server/rpc.h"

#define RPC_CALL 0
#define RPC_REPLY 1
#define RPC_MSG_ACCEPTED 0
#define RPC_MSG_DENIED 1
#define RPC_MISMATCH_DENIED 0
#define RPC_AUTH_ERROR 1
#define RPC_MAX_AUTH_BYTES 400
#define AUTH_SYS_MAX_GIDS 16

static int get_u32(XDR *x, uint32_t *v)
{
	return xdr_u_int(x, v) ? 0 : -EBADMSG;
}

/* An opaque_auth: flavor and body (at most 400 bytes, RFC 5531). */
static int get_auth(XDR *x, uint32_t *flavor, uint8_t *body, uint32_t *len)
{
	if (get_u32(x, flavor) < 0 || get_u32(x, len) < 0 || *len > RPC_MAX_AUTH_BYTES)
		return -EBADMSG;
	return xdr_opaque(x, (char *)body, *len) ? 0 : -EBADMSG;
}

/* authsys_parms: stamp, machinename<255>, uid, gid, gids<16>. */
static int parse_auth_sys(const uint8_t *body, uint32_t len, struct rpc_call *c)
{
	uint32_t stamp, namelen, ngids;
	XDR x;
	int ret = -EACCES;

	xdrmem_create(&x, (char *)body, len, XDR_DECODE);
	if (get_u32(&x, &stamp) < 0 || get_u32(&x, &namelen) < 0 || namelen > 255 ||
	    !xdr_opaque(&x, c->machine, namelen))
		goto out;
	c->machine[namelen] = '\0';
	if (get_u32(&x, &c->cred.uid) < 0 || get_u32(&x, &c->cred.gid) < 0 ||
	    get_u32(&x, &ngids) < 0 || ngids > AUTH_SYS_MAX_GIDS)
		goto out;
	for (uint32_t i = 0; i < ngids; i++)
		if (get_u32(&x, &c->cred.groups[i]) < 0)
			goto out;
	c->cred.ngroups = ngids;
	ret = xdr_getpos(&x) == len ? 0 : -EACCES;
out:
	xdr_destroy(&x);
	return ret;
}

int rpc_decode_call(const uint8_t *rec, size_t len, struct rpc_call *c)
{
	uint8_t body[RPC_MAX_AUTH_BYTES];
	uint32_t mtype, blen, vflavor;
	int ret;

	memset(c, 0, sizeof(*c));
	if (len < 4 || len > (1u << 30))
		return -EBADMSG;
	xdrmem_create(&c->args, (char *)rec, (u_int)len, XDR_DECODE);
	if (get_u32(&c->args, &c->xid) < 0 || get_u32(&c->args, &mtype) < 0 || mtype != RPC_CALL ||
	    get_u32(&c->args, &c->rpcvers) < 0)
		return -EBADMSG;
	if (c->rpcvers != 2)
		return 0; /* answered with RPC_MISMATCH by the caller */
	if (get_u32(&c->args, &c->prog) < 0 || get_u32(&c->args, &c->vers) < 0 ||
	    get_u32(&c->args, &c->proc) < 0)
		return -EBADMSG;
	ret = get_auth(&c->args, &c->flavor, body, &blen);
	if (ret < 0)
		return ret;
	if (c->flavor == RPC_AUTH_SYS && parse_auth_sys(body, blen, c) < 0)
		return -EACCES;
	if (get_auth(&c->args, &vflavor, body, &blen) < 0)
		return -EBADMSG;
	return 0;
}

static int put_u32(XDR *x, uint32_t v)
{
	return xdr_u_int(x, &v) ? 0 : -EMSGSIZE;
}

int rpc_encode_accepted(XDR *x, uint32_t xid, uint32_t accept_stat, uint32_t low, uint32_t high)
{
	if (put_u32(x, xid) < 0 || put_u32(x, RPC_REPLY) < 0 || put_u32(x, RPC_MSG_ACCEPTED) < 0 ||
	    put_u32(x, RPC_AUTH_NONE) < 0 || put_u32(x, 0) < 0 || put_u32(x, accept_stat) < 0)
		return -EMSGSIZE;
	if (accept_stat == PROG_MISMATCH && (put_u32(x, low) < 0 || put_u32(x, high) < 0))
		return -EMSGSIZE;
	return 0;
}

int rpc_encode_denied_auth(XDR *x, uint32_t xid, uint32_t auth_stat)
{
	if (put_u32(x, xid) < 0 || put_u32(x, RPC_REPLY) < 0 || put_u32(x, RPC_MSG_DENIED) < 0 ||
	    put_u32(x, RPC_AUTH_ERROR) < 0 || put_u32(x, auth_stat) < 0)
		return -EMSGSIZE;
	return 0;
}

int rpc_encode_denied_version(XDR *x, uint32_t xid)
{
	if (put_u32(x, xid) < 0 || put_u32(x, RPC_REPLY) < 0 || put_u32(x, RPC_MSG_DENIED) < 0 ||
	    put_u32(x, RPC_MISMATCH_DENIED) < 0 || put_u32(x, 2) < 0 || put_u32(x, 2) < 0)
		return -EMSGSIZE;
	return 0;
}
