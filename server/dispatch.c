/* Request dispatch: one table per program indexed by procedure number
 * (handler, XDR coders, whether the call changes state and is answered from
 * the duplicate request cache when retransmitted), the RPC-level errors
 * (PROG_UNAVAIL, PROG_MISMATCH, PROC_UNAVAIL, GARBAGE_ARGS, AUTH errors),
 * export access and squashing, whether a call must be committed before its
 * reply, and that reply once its sync ended (dispatch_committed). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "fs/format/crc32c.h"
#include "proto/mount3.h"
#include "proto/nfs3.h"
#include "proto/nfs3_proc.h"
#include "proto/nfs_ctx.h"
#include "proto/xdr_fast.h"
#include "server/dispatch.h"
#include "server/log.h"
#include "server/mountd.h"
#include "server/ratelog.h"
#include "server/rpc.h"
#include "server/server.h"

#define P_MODIFIES 0x1 /* refused on read-only exports; needs the commit */
#define P_DRC 0x2      /* not idempotent: retransmissions get the first reply */
#define P_STATUS 0x4   /* the result starts with a status (nfsstat3/mountstat3) */
#define P_LOOP 0x8     /* read-only, small reply: the loop may answer a cache hit */

static struct ratelog log_refused = RATELOG_INIT(LOG_LVL_WARN, "calls refused by the export check");

typedef void (*proc_fn)(struct nfs_ctx *ctx, void *args, void *res);
/* rpcgen's coders, each wrapped to one exact type (xdrproc_t is variadic). */
typedef bool_t (*coder_fn)(XDR *x, void *obj);

/* One procedure. Columns: name for the trace, the argument and result
 * coders and sizes, the handler, and the P_* flags above. */
struct proc_desc {
	const char *name;
	coder_fn xdr_args;
	size_t args_size;
	coder_fn xdr_res;
	size_t res_size;
	proc_fn fn;
	unsigned flags;
};

#define CODER(T)                                                                 \
	static bool_t code_##T(XDR *x, void *obj)                                \
	{                                                                        \
		return xdr_##T(x, (T *)obj);                                     \
	}
#define NFS(op, A, R, fl)                                                        \
	CODER(A)                                                                 \
	CODER(R)                                                                 \
	static void call_##op(struct nfs_ctx *c, void *a, void *r)               \
	{                                                                        \
		nfs3_proc_##op(c, (A *)a, (R *)r);                               \
	}
#define NFSROW(op, A, R, fl) { #op, code_##A, sizeof(A), code_##R, sizeof(R), call_##op, fl },

static bool_t code_void(XDR *x, void *obj)
{
	return TRUE;
}

CODER(dirpath)
CODER(mountres3)
CODER(mountlist)
CODER(exports)

static void call_null(struct nfs_ctx *c, void *a, void *r)
{
}

/* The procedures of NFS version 3 (RFC 1813 section 3.3). */
#define NFS3_PROCS(X)                                                          \
	X(getattr, GETATTR3args, GETATTR3res, P_STATUS | P_LOOP)               \
	X(setattr, SETATTR3args, SETATTR3res, P_STATUS | P_MODIFIES)           \
	X(lookup, LOOKUP3args, LOOKUP3res, P_STATUS | P_LOOP)                  \
	X(access, ACCESS3args, ACCESS3res, P_STATUS | P_LOOP)                  \
	X(readlink, READLINK3args, READLINK3res, P_STATUS | P_LOOP)            \
	X(read, READ3args, READ3res, P_STATUS | P_LOOP)                        \
	X(write, WRITE3args, WRITE3res, P_STATUS | P_MODIFIES)                 \
	X(create, CREATE3args, CREATE3res, P_STATUS | P_MODIFIES | P_DRC)      \
	X(mkdir, MKDIR3args, MKDIR3res, P_STATUS | P_MODIFIES | P_DRC)         \
	X(symlink, SYMLINK3args, SYMLINK3res, P_STATUS | P_MODIFIES | P_DRC)   \
	X(mknod, MKNOD3args, MKNOD3res, P_STATUS | P_MODIFIES | P_DRC)         \
	X(remove, REMOVE3args, REMOVE3res, P_STATUS | P_MODIFIES | P_DRC)      \
	X(rmdir, RMDIR3args, RMDIR3res, P_STATUS | P_MODIFIES | P_DRC)         \
	X(rename, RENAME3args, RENAME3res, P_STATUS | P_MODIFIES | P_DRC)      \
	X(link, LINK3args, LINK3res, P_STATUS | P_MODIFIES | P_DRC)            \
	X(readdir, READDIR3args, READDIR3res, P_STATUS | P_LOOP)               \
	X(readdirplus, READDIRPLUS3args, READDIRPLUS3res, P_STATUS | P_LOOP)   \
	X(fsstat, FSSTAT3args, FSSTAT3res, P_STATUS | P_LOOP)                  \
	X(fsinfo, FSINFO3args, FSINFO3res, P_STATUS | P_LOOP)                  \
	X(pathconf, PATHCONF3args, PATHCONF3res, P_STATUS | P_LOOP)            \
	X(commit, COMMIT3args, COMMIT3res, P_STATUS)

/* READDIRPLUS results go through the fast encoder, which writes rpcgen's
 * bytes and takes rpcgen's coder for what it does not write itself; WRITE
 * data is decoded in place, in the request's record (freed after the
 * call's arguments). */
#define xdr_READDIRPLUS3res xdr_READDIRPLUS3res_fast
#define xdr_WRITE3args xdr_WRITE3args_fast
NFS3_PROCS(NFS)
#undef xdr_READDIRPLUS3res
#undef xdr_WRITE3args

static const struct proc_desc nfs3_procs[] = {
	{ "null", code_void, 0, code_void, 0, call_null, P_LOOP },
	NFS3_PROCS(NFSROW)
};

/* MOUNT version 3 (RFC 1813 appendix I). */
static const struct proc_desc mount3_procs[] = {
	{ "null", code_void, 0, code_void, 0, call_null, P_LOOP },
	{ "mnt", code_dirpath, sizeof(dirpath), code_mountres3, sizeof(mountres3), mountd_mnt,
	  P_STATUS },
	{ "dump", code_void, 0, code_mountlist, sizeof(mountlist), mountd_dump, 0 },
	{ "umnt", code_dirpath, sizeof(dirpath), code_void, 0, mountd_umnt, 0 },
	{ "umntall", code_void, 0, code_void, 0, mountd_umntall, 0 },
	{ "export", code_void, 0, code_exports, sizeof(exports), mountd_export, 0 },
};

size_t dispatch_reply_cap(const struct server *srv)
{
	return srv->cfg.max_io + (64u << 10);
}

static int finish(XDR *x, uint8_t *out, size_t *outlen)
{
	uint32_t n = xdr_getpos(x) - 4;
	uint32_t mark = htonl(0x80000000u | n);

	memcpy(out, &mark, 4);
	*outlen = n + 4;
	return 0;
}

/* READ's data starts this far into the reply buffer: the record mark (4),
 * the accepted-reply header with a null verifier (24), then READ3resok:
 * status, post_op_attr with attributes (4 + 84), count, eof and the
 * data's length (12). */
#define READ_DATA_OFFSET 132u

/* Encode a READ reply whose data is already in the buffer (read_into):
 * only the fields around it are written; the data moves only when the
 * attributes are missing (it then starts earlier). */
static int encode_read_in_place(XDR *x, uint8_t *out, READ3res *res)
{
	READ3resok *ok = &res->READ3res_u.resok;
	u_int n = ok->data.data_len, pad = (4 - (n & 3)) & 3, pos;
	uint32_t be = htonl(n);
	int done;

	ok->data.data_len = 0;
	done = xdr_READ3res(x, res);
	ok->data.data_len = n;
	if (!done)
		return -EMSGSIZE;
	pos = xdr_getpos(x);
	if (pos > READ_DATA_OFFSET)
		return -EPROTO; /* the fields ran over the data: never with a null verifier */
	memcpy(out + pos - 4, &be, 4);
	if (pos != READ_DATA_OFFSET)
		memmove(out + pos, out + READ_DATA_OFFSET, n);
	memset(out + pos + n, 0, pad);
	return xdr_setpos(x, pos + n + pad) ? 0 : -EMSGSIZE;
}

/* The loop answers only what it answers quickly. A listing, or a READ
 * larger than LOOP_MAX_REPLY, is the loop's only while it is its
 * connection's only call in flight (it saves two thread wake-ups); with
 * more in flight the workers build them in parallel on the other cores
 * (READDIRPLUS at 8 in flight: 0.93M entries/s on the loop against 1.4M
 * on the workers). A listing asking for more than LOOP_MAX_REPLY always
 * goes to a worker. */
#define LOOP_MAX_REPLY (64u << 10)

static int conn_alone(struct conn *c)
{
	int alone;

	pthread_mutex_lock(&c->lock);
	alone = c->outstanding == 1;
	pthread_mutex_unlock(&c->lock);
	return alone;
}

static int loop_sized(struct conn *c, const struct rpc_call *call, const void *args)
{
	if (call->prog != NFS_PROGRAM)
		return 1;
	switch (call->proc) {
	case NFSPROC3_READ:
		return ((const READ3args *)args)->count <= LOOP_MAX_REPLY || conn_alone(c);
	case NFSPROC3_READDIR:
		return ((const READDIR3args *)args)->count <= LOOP_MAX_REPLY && conn_alone(c);
	case NFSPROC3_READDIRPLUS:
		return ((const READDIRPLUS3args *)args)->maxcount <= LOOP_MAX_REPLY &&
		       conn_alone(c);
	default:
		return 1;
	}
}

static const struct proc_desc *lookup_proc(const struct rpc_call *call, uint32_t *stat,
					   uint32_t *low, uint32_t *high)
{
	const struct proc_desc *table;
	size_t n;

	if (call->prog == NFS_PROGRAM) {
		table = nfs3_procs;
		n = sizeof(nfs3_procs) / sizeof(nfs3_procs[0]);
		*low = *high = NFS_V3;
	} else if (call->prog == MOUNT_PROGRAM) {
		table = mount3_procs;
		n = sizeof(mount3_procs) / sizeof(mount3_procs[0]);
		*low = *high = MOUNT_V3;
	} else {
		*stat = PROG_UNAVAIL;
		return NULL;
	}
	if (call->vers != *low) {
		*stat = PROG_MISMATCH;
		return NULL;
	}
	if (call->proc >= n) {
		*stat = PROC_UNAVAIL;
		return NULL;
	}
	*stat = SUCCESS;
	return &table[call->proc];
}

/* The credentials a call runs with: AUTH_SYS's, or the anonymous ids for
 * AUTH_NONE, squashed as the export says. */
static void call_cred(const struct export *e, const struct rpc_call *call, struct fs_cred *cred)
{
	if (call->flavor == RPC_AUTH_SYS) {
		*cred = call->cred;
	} else {
		memset(cred, 0, sizeof(*cred));
		cred->uid = e->anonuid;
		cred->gid = e->anongid;
	}
	export_squash(e, cred);
	cred->flags = FS_CRED_OWNER_OVERRIDE;
}

/* A call refused before its handler runs: a zeroed result with only the
 * status set encodes as the procedure's failure arm (a procedure without
 * a result, UMNT or UMNTALL, has none: res is NULL). */
static int reply_refused(const struct proc_desc *pd, const struct rpc_call *call, int status,
			 XDR *x, void *res)
{
	if (res)
		memset(res, 0, pd->res_size);
	if (pd->flags & P_STATUS)
		*(int *)res = status;
	if (rpc_encode_accepted(x, call->xid, SUCCESS, 0, 0) < 0 || !pd->xdr_res(x, res))
		return -EMSGSIZE;
	return 0;
}

/* The RPC header: its version, its credentials' flavor, the program, its
 * version and the procedure. 0 and the procedure in *pd for a call to run;
 * without a procedure, the rejection's encoding in x: 0, or < 0 when it
 * did not fit. decoded: what rpc_decode_call returned. */
static int check_header(const struct rpc_call *call, int decoded, XDR *x,
			const struct proc_desc **pd)
{
	uint32_t stat, low = 0, high = 0;

	*pd = NULL;
	if (call->rpcvers != 2)
		return rpc_encode_denied_version(x, call->xid);
	if (decoded == -EACCES || (call->flavor != RPC_AUTH_SYS && call->flavor != RPC_AUTH_NONE))
		return rpc_encode_denied_auth(x, call->xid,
					      decoded == -EACCES ? AUTH_BADCRED : AUTH_TOOWEAK);
	*pd = lookup_proc(call, &stat, &low, &high);
	if (!*pd)
		return rpc_encode_accepted(x, call->xid, stat, low, high);
	return 0;
}

/* A non-idempotent call (its arguments' checksum: sum) seen before: 0 and
 * its first reply in out, 1 while the first is still running (no reply),
 * -EMSGSIZE when the stored reply does not fit; -ENOENT for a new call,
 * now recorded as in progress. */
static int drc_replay(struct server *srv, struct conn *c, const struct rpc_call *call, uint32_t sum,
		      uint8_t *out, size_t outcap, size_t *outlen)
{
	uint8_t *cached;
	size_t clen;
	int ret;

	ret = drc_lookup(srv->drc, (const struct sockaddr *)&c->peer, c->serial, call->xid,
			 call->prog, call->proc, sum, &cached, &clen);
	if (ret == -EINPROGRESS)
		return 1; /* the first transmission is being answered */
	if (ret != 1)
		return -ENOENT;
	if (clen <= outcap)
		memcpy(out, cached, clen);
	free(cached);
	if (clen > outcap)
		return -EMSGSIZE;
	*outlen = clen;
	return 0;
}

/* A call past its header's checks, on its way to its reply: what the steps
 * that run it share. */
struct call_run {
	struct server *srv;
	struct conn *c;
	struct rpc_call *call;
	const struct proc_desc *pd;
	uint32_t args_sum;             /* P_DRC: the arguments' checksum */
	struct nfs_ctx ctx;
	void *args, *res;              /* in ctx's arena */
	struct export_set *es;         /* the exports in force, held */
	const struct export *e;        /* the client's, or NULL */
	int admitted;                  /* past the export check (not NULL) */
};

static const char *prog_name(const struct rpc_call *call)
{
	return call->prog == NFS_PROGRAM ? "nfs" : "mount";
}

/* The arguments, decoded into arena memory (with room for the result):
 * 0, -ENOMEM, or -EINVAL when they are garbage. */
static int decode_args(struct call_run *r)
{
	const struct proc_desc *pd = r->pd;

	/* Zeroed at once: release_call frees what the decoder left in them,
	 * even when the result's allocation below fails. */
	r->args = pd->args_size ? arena_alloc(&r->ctx.arena, pd->args_size) : NULL;
	if (r->args)
		memset(r->args, 0, pd->args_size);
	r->res = pd->res_size ? arena_alloc(&r->ctx.arena, pd->res_size) : NULL;
	if ((pd->args_size && !r->args) || (pd->res_size && !r->res))
		return -ENOMEM;
	if (!pd->xdr_args(&r->call->args, r->args)) {
		log_debug("%s: %s.%s: garbage arguments", r->c->peer_name, prog_name(r->call),
			  pd->name);
		return -EINVAL;
	}
	return 0;
}

/* The export this client gets, from the exports in force now (a reload,
 * SIGHUP, applies to the next call on the same connection), and who may
 * do what: 0, or -EACCES with the refusal's status in *status. NULL is
 * always answered. */
static int check_access(struct call_run *r, int *status)
{
	const struct rpc_call *call = r->call;
	const struct conn *c = r->c;
	const struct export *e;

	r->es = export_table_get(&r->srv->exports);
	r->e = e = export_for_client(r->es, (const struct sockaddr *)&c->peer);
	if (call->proc == 0)
		return 0;
	if (!e || (e->secure && c->peer_port >= 1024)) {
		ratelog_msg(&log_refused, "%s:%u: %s.%s refused: %s", c->peer_name, c->peer_port,
			    prog_name(call), r->pd->name,
			    e ? "unprivileged port on a secure export" : "client not in any export");
		*status = call->prog == NFS_PROGRAM ? NFS3ERR_ACCES : MNT3ERR_ACCES;
		return -EACCES;
	}
	r->admitted = 1;
	if (call->prog == NFS_PROGRAM && (r->pd->flags & P_MODIFIES) && !e->rw) {
		*status = NFS3ERR_ROFS;
		return -EACCES;
	}
	return 0;
}

/* The handler's context: the volume, the export and the credentials, and
 * for READ the room in the reply buffer (out, outcap) for its data. */
static void setup_ctx(struct call_run *r, uint8_t *out, size_t outcap)
{
	struct nfs_ctx *ctx = &r->ctx;
	const struct server *srv = r->srv;

	ctx->vol = srv->vol;
	ctx->key = srv->key;
	ctx->rdonly = r->e ? !r->e->rw : 1;
	/* A chunk dropped uncommitted changes (it lost its store): a new
	 * verifier, so that clients resend what they wrote UNSTABLE. */
	ctx->drop_gen = fs_drop_count(srv->vol);
	ctx->change_gen = fs_change_drop_count(srv->vol);
	memcpy(ctx->write_verf, srv->write_verf, sizeof(ctx->write_verf));
	for (int k = 0; k < 8; k++)
		ctx->write_verf[k] ^= (uint8_t)(ctx->drop_gen >> (8 * k));
	ctx->rtmax = ctx->wtmax = srv->cfg.max_io;
	ctx->prealloc_max = __atomic_load_n(&srv->cfg.prealloc_kb, __ATOMIC_RELAXED) << 10;
	ctx->srv = r->srv;
	ctx->conn = r->c;
	if (r->e) {
		call_cred(r->e, r->call, &ctx->cred);
		ctx->export_root = r->e->root;
	}
	if (r->call->prog == NFS_PROGRAM && r->call->proc == NFSPROC3_READ &&
	    outcap > READ_DATA_OFFSET + 4) {
		ctx->read_into = out + READ_DATA_OFFSET;
		ctx->read_room = outcap - READ_DATA_OFFSET - 4;
	}
}

/* Run the handler: 0, or -EAGAIN on the loop (nowait) when it would wait.
 * A call that changed the volume is marked in cc for its commit. */
static int execute(struct call_run *r, int nowait, struct commit_call *cc)
{
	const struct proc_desc *pd = r->pd;
	struct fs_volume *vol = r->srv->vol;

	if (nowait && fs_nowait_begin(vol) < 0)
		return -EAGAIN; /* the volume is busy: a worker waits for it */
	pd->fn(&r->ctx, r->args, r->res);
	if (nowait && fs_nowait_end(vol) < 0)
		return -EAGAIN; /* it needed the disk: a worker runs it again */
	if (log_enabled(LOG_LVL_DEBUG))
		log_debug("%s xid %08x %s.%s -> %d", r->c->peer_name, r->call->xid,
			  prog_name(r->call), pd->name,
			  (pd->flags & P_STATUS) ? *(int *)r->res : 0);
	if (!r->ctx.needs_sync)
		return 0;
	/* NFSv3: a change is on stable storage before its reply goes out
	 * (the caller commits it); when it cannot be made so, the client hears
	 * NFS3ERR_IO (dispatch_committed). */
	if (cc && !nowait) {
		cc->changed = 1;
		cc->pd = pd;
		cc->xid = r->call->xid;
		cc->prog = r->call->prog;
		cc->proc = r->call->proc;
		cc->args_sum = r->args_sum;
		cc->vouches_data = r->ctx.vouches_data;
		cc->drop_gen = r->ctx.vouches_data ? r->ctx.drop_gen : r->ctx.change_gen;
	} else {
		log_error("%s: %s changed the volume on the event loop", r->c->peer_name, pd->name);
		if (pd->flags & P_STATUS) {
			memset(r->res, 0, pd->res_size);
			*(int *)r->res = NFS3ERR_IO;
		}
	}
	return 0;
}

/* The reply in x: the accepted header and the result (READ's data, already
 * in out, in place), or SYSTEM_ERR when they do not fit. */
static int encode_result(struct call_run *r, XDR *x, uint8_t *out)
{
	const READ3res *rd = r->res;
	uint32_t xid = r->call->xid;
	int in_place = r->ctx.read_into && rd->status == NFS3_OK &&
		       (uint8_t *)rd->READ3res_u.resok.data.data_val == r->ctx.read_into;

	if (rpc_encode_accepted(x, xid, SUCCESS, 0, 0) == 0 &&
	    (in_place ? encode_read_in_place(x, out, r->res) == 0 : r->pd->xdr_res(x, r->res)))
		return 0;
	xdr_setpos(x, 4);
	return rpc_encode_accepted(x, xid, SYSTEM_ERR, 0, 0);
}

/* Decode, check and run the call and encode its reply in x (out, outcap
 * bytes): 0, or < 0 when there is no reply to send (-EAGAIN: on the loop,
 * the call would wait or take long). */
static int run_call(struct call_run *r, XDR *x, uint8_t *out, size_t outcap, int nowait,
		    struct commit_call *cc)
{
	int status = 0, ret = decode_args(r);

	if (ret == -ENOMEM)
		return rpc_encode_accepted(x, r->call->xid, SYSTEM_ERR, 0, 0);
	if (ret < 0)
		return rpc_encode_accepted(x, r->call->xid, GARBAGE_ARGS, 0, 0);
	if (nowait && !loop_sized(r->c, r->call, r->args))
		return -EAGAIN;
	ret = check_access(r, &status);
	if (cc)
		cc->admitted = r->admitted;
	if (ret < 0)
		return reply_refused(r->pd, r->call, status, x, r->res);
	setup_ctx(r, out, outcap);
	ret = execute(r, nowait, cc);
	if (ret < 0)
		return ret;
	return encode_result(r, x, out);
}

/* What running the call held: the decoder's allocations (strings, opaque
 * data), the arena, the exports. */
static void release_call(struct call_run *r)
{
	if (r->args) {
		XDR fx = { .x_op = XDR_FREE };
		r->pd->xdr_args(&fx, r->args);
	}
	arena_release(&r->ctx.arena);
	export_set_put(r->es);
}

int dispatch_call(struct server *srv, struct conn *c, const uint8_t *rec, size_t len,
		  uint8_t *out, size_t outcap, size_t *outlen, int nowait, struct commit_call *cc)
{
	const struct proc_desc *pd;
	struct rpc_call call;
	struct call_run r;
	uint32_t args_sum = 0;
	XDR x;
	int ret;

	ret = rpc_decode_call(rec, len, &call);
	if (ret == -EBADMSG)
		return ret; /* not an RPC call: the connection goes */
	xdrmem_create(&x, (char *)out, (u_int)outcap, XDR_ENCODE);
	xdr_setpos(&x, 4); /* room for the record mark */
	ret = check_header(&call, ret, &x, &pd);
	if (!pd)
		return ret < 0 ? ret : finish(&x, out, outlen);
	if (nowait && !(pd->flags & P_LOOP))
		return -EAGAIN;
	if (pd->flags & P_DRC) {
		uint32_t at = xdr_getpos(&call.args);
		args_sum = crc32c(0, rec + at, len - at);
		ret = drc_replay(srv, c, &call, args_sum, out, outcap, outlen);
		if (ret != -ENOENT)
			return ret;
	}
	memset(&r, 0, sizeof(r));
	r.srv = srv;
	r.c = c;
	r.call = &call;
	r.pd = pd;
	r.args_sum = args_sum;
	ret = run_call(&r, &x, out, outcap, nowait, cc);
	release_call(&r);
	if (ret < 0)
		return ret;
	finish(&x, out, outlen);
	if ((pd->flags & P_DRC) && !(cc && cc->changed))
		drc_store(srv->drc, (const struct sockaddr *)&c->peer, c->serial, call.xid,
			  call.prog, call.proc, args_sum, out, *outlen);
	return 0;
}

void dispatch_committed(struct server *srv, struct conn *c, const struct commit_call *cc,
			int failed, uint8_t *out, size_t outcap, size_t *outlen)
{
	const struct proc_desc *pd = cc->pd;

	if (failed && (pd->flags & P_STATUS)) {
		void *res = calloc(1, pd->res_size);
		XDR x;

		xdrmem_create(&x, (char *)out, (u_int)outcap, XDR_ENCODE);
		xdr_setpos(&x, 4);
		if (res)
			*(int *)res = NFS3ERR_IO;
		if (!res || rpc_encode_accepted(&x, cc->xid, SUCCESS, 0, 0) < 0 ||
		    !pd->xdr_res(&x, res)) {
			xdr_setpos(&x, 4);
			rpc_encode_accepted(&x, cc->xid, SYSTEM_ERR, 0, 0);
		}
		free(res);
		finish(&x, out, outlen);
	}
	if (pd->flags & P_DRC)
		drc_store(srv->drc, (const struct sockaddr *)&c->peer, c->serial, cc->xid,
			  cc->prog, cc->proc, cc->args_sum, out, *outlen);
}

/* A count from a call's arguments as they are in the record: the handle
 * (an opaque of at most 64 bytes), skip bytes, then the count. READ's
 * follows its offset; READDIR's its cookie and cookie verifier;
 * READDIRPLUS's maxcount those and its dircount. */
static size_t args_count(XDR *x, u_int skip)
{
	uint32_t fhlen, count;

	if (!xdr_u_int32_t(x, &fhlen) || fhlen > NFS3_FHSIZE)
		return 0;
	if (!xdr_setpos(x, xdr_getpos(x) + ((fhlen + 3) & ~3u) + skip))
		return 0;
	if (!xdr_u_int32_t(x, &count))
		return 0;
	return count;
}

size_t dispatch_call_bytes(const struct server *srv, const uint8_t *rec, size_t len)
{
	struct rpc_call call;
	size_t n = 0;

	if (rpc_decode_call(rec, len, &call) < 0 || call.prog != NFS_PROGRAM)
		return 0;
	if (call.proc == NFSPROC3_READ)
		n = args_count(&call.args, 8);
	else if (call.proc == NFSPROC3_READDIR)
		n = args_count(&call.args, 16);
	else if (call.proc == NFSPROC3_READDIRPLUS)
		n = args_count(&call.args, 20);
	else if (call.proc == NFSPROC3_WRITE)
		n = len;
	return n < srv->cfg.max_io ? n : srv->cfg.max_io;
}
