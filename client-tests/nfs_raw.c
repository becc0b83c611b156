/* Synchronous calls over libnfs's raw RPC API (see nfs_raw.h): one call in
 * flight at a time; a decoded result points into libnfs's buffers, freed
 * when the callback returns, so what it points to is copied here. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfs_raw.h"

#define REPLY_TIMEOUT_MS 10000

/* libnfs 4.0 exports these two but declares them only in its private
 * headers: they send a call with any procedure number. */
struct rpc_pdu;
struct rpc_pdu *rpc_allocate_pdu(struct rpc_context *rpc, int program, int version, int procedure,
				 rpc_cb cb, void *private_data, zdrproc_t zdr_decode_fn,
				 int zdr_decode_bufsize);
int rpc_queue_pdu(struct rpc_context *rpc, struct rpc_pdu *pdu);

static struct rpc_context *rpc;

void fail(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

void expect(const char *what, nfsstat3 got, nfsstat3 want)
{
	if (got != want)
		fail("%s: %s (%d), expected %s (%d)", what, nfsstat3_to_str(got), got,
		     nfsstat3_to_str(want), want);
}

/* --- copies of results ----------------------------------------------------- */

struct kept {
	struct kept *next;
	max_align_t data[];
};
static struct kept *kept;

static void *keep_bytes(const void *p, size_t n)
{
	struct kept *k = malloc(sizeof(*k) + n + 1);

	if (!k)
		fail("out of memory");
	if (n)
		memcpy(k->data, p, n);
	((char *)k->data)[n] = '\0';
	k->next = kept;
	kept = k;
	return k->data;
}

static char *keep_str(const char *s)
{
	return keep_bytes(s, strlen(s));
}

static void keep_fh(nfs_fh3 *fh)
{
	fh->data.data_val = keep_bytes(fh->data.data_val, fh->data.data_len);
}

static void keep_post_fh(post_op_fh3 *p)
{
	if (p->handle_follows)
		keep_fh(&p->post_op_fh3_u.handle);
}

static void keep_lookup(void *p)
{
	LOOKUP3res *r = p;

	if (r->status == NFS3_OK)
		keep_fh(&r->LOOKUP3res_u.resok.object);
}

static void keep_create(void *p)
{
	CREATE3res *r = p;

	if (r->status == NFS3_OK)
		keep_post_fh(&r->CREATE3res_u.resok.obj);
}

static void keep_mkdir(void *p)
{
	MKDIR3res *r = p;

	if (r->status == NFS3_OK)
		keep_post_fh(&r->MKDIR3res_u.resok.obj);
}

static void keep_symlink(void *p)
{
	SYMLINK3res *r = p;

	if (r->status == NFS3_OK)
		keep_post_fh(&r->SYMLINK3res_u.resok.obj);
}

static void keep_mknod(void *p)
{
	MKNOD3res *r = p;

	if (r->status == NFS3_OK)
		keep_post_fh(&r->MKNOD3res_u.resok.obj);
}

static void keep_read(void *p)
{
	READ3res *r = p;

	if (r->status == NFS3_OK)
		r->READ3res_u.resok.data.data_val =
			keep_bytes(r->READ3res_u.resok.data.data_val,
				   r->READ3res_u.resok.data.data_len);
}

static void keep_readlink(void *p)
{
	READLINK3res *r = p;

	if (r->status == NFS3_OK)
		r->READLINK3res_u.resok.data = keep_str(r->READLINK3res_u.resok.data);
}

/* Lists are copied entry by entry: each pointer is replaced by a copy whose
 * own next pointer is replaced on the following turn. */
static void keep_readdir(void *p)
{
	READDIR3res *r = p;

	if (r->status != NFS3_OK)
		return;
	for (entry3 **e = &r->READDIR3res_u.resok.reply.entries; *e; e = &(*e)->nextentry) {
		*e = keep_bytes(*e, sizeof(**e));
		(*e)->name = keep_str((*e)->name);
	}
}

static void keep_readdirplus(void *p)
{
	READDIRPLUS3res *r = p;

	if (r->status != NFS3_OK)
		return;
	for (entryplus3 **e = &r->READDIRPLUS3res_u.resok.reply.entries; *e;
	     e = &(*e)->nextentry) {
		*e = keep_bytes(*e, sizeof(**e));
		(*e)->name = keep_str((*e)->name);
		keep_post_fh(&(*e)->name_handle);
	}
}

static void keep_mnt(void *p)
{
	mountres3 *r = p;
	mountres3_ok *m = &r->mountres3_u.mountinfo;

	if (r->fhs_status != MNT3_OK)
		return;
	m->fhandle.fhandle3_val = keep_bytes(m->fhandle.fhandle3_val, m->fhandle.fhandle3_len);
	m->auth_flavors.auth_flavors_val =
		keep_bytes(m->auth_flavors.auth_flavors_val,
			   m->auth_flavors.auth_flavors_len * sizeof(int));
}

static void keep_dump(void *p)
{
	for (mountlist *m = p; *m; m = &(*m)->ml_next) {
		*m = keep_bytes(*m, sizeof(**m));
		(*m)->ml_hostname = keep_str((*m)->ml_hostname);
		(*m)->ml_directory = keep_str((*m)->ml_directory);
	}
}

static void keep_export(void *p)
{
	for (exports *e = p; *e; e = &(*e)->ex_next) {
		*e = keep_bytes(*e, sizeof(**e));
		(*e)->ex_dir = keep_str((*e)->ex_dir);
		for (groups *g = &(*e)->ex_groups; *g; g = &(*g)->gr_next) {
			*g = keep_bytes(*g, sizeof(**g));
			(*g)->gr_name = keep_str((*g)->gr_name);
		}
	}
}

/* --- one call, made synchronous -------------------------------------------- */

struct call {
	const char *name;
	int done;
	int status;	 /* RPC_STATUS_*: SUCCESS means the server answered the call */
	char error[256]; /* libnfs's text otherwise */
	void *res;
	size_t size;
	void (*keep)(void *res);
};

static void on_reply(struct rpc_context *r, int status, void *data, void *private_data)
{
	struct call *c = private_data;

	(void)r;
	c->done = 1;
	c->status = status;
	if (status == RPC_STATUS_SUCCESS) {
		if (c->size)
			memcpy(c->res, data, c->size);
		if (c->keep)
			c->keep(c->res);
	} else {
		snprintf(c->error, sizeof(c->error), "%s", data ? (const char *)data : "cancelled");
	}
}

static void wait_for(struct call *c)
{
	while (!c->done) {
		struct pollfd pfd = { .fd = rpc_get_fd(rpc), .events = rpc_which_events(rpc) };
		int n = poll(&pfd, 1, REPLY_TIMEOUT_MS);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail("%s: poll: %s", c->name, strerror(errno));
		if (n == 0)
			fail("%s: no reply within %d ms", c->name, REPLY_TIMEOUT_MS);
		if (rpc_service(rpc, pfd.revents) < 0 && !c->done)
			fail("%s: connection lost: %s", c->name, rpc_get_error(rpc));
	}
}

/* sent is what the _async function returned. */
static void finish(struct call *c, int sent)
{
	if (sent != 0)
		fail("%s: cannot send: %s", c->name, rpc_get_error(rpc));
	wait_for(c);
	if (c->status != RPC_STATUS_SUCCESS)
		fail("%s: RPC failed: %s", c->name, c->error);
}

/* libnfs pings prog's NULL once connected. */
static void connect_prog(const char *host, int port, int uid, int gid, int prog, int vers)
{
	struct call c = { .name = "connect" };

	rpc = rpc_init_context();
	if (!rpc)
		fail("rpc_init_context failed");
	rpc_set_uid(rpc, uid);
	rpc_set_gid(rpc, gid);
	finish(&c, rpc_connect_port_async(rpc, host, port, prog, vers, on_reply, &c));
}

void call_connect(const char *host, int port, int uid, int gid)
{
	/* MOUNT NULL first; NFS calls share the port. */
	connect_prog(host, port, uid, gid, MOUNT_PROGRAM, MOUNT_V3);
}

void call_connect_nfs(const char *host, int port, int uid, int gid)
{
	connect_prog(host, port, uid, gid, NFS_PROGRAM, NFS_V3);
}

void call_disconnect(void)
{
	if (rpc)
		rpc_destroy_context(rpc);
	rpc = NULL;
	while (kept) {
		struct kept *k = kept;
		kept = k->next;
		free(k);
	}
}

struct rpc_context *call_context(void)
{
	return rpc;
}

/* --- MOUNT ------------------------------------------------------------------- */

void call_mount_null(void)
{
	struct call c = { .name = "MOUNT NULL" };

	finish(&c, rpc_mount3_null_async(rpc, on_reply, &c));
}

mountres3 call_mnt(const char *path)
{
	mountres3 res;
	struct call c = { .name = "MNT", .res = &res, .size = sizeof(res), .keep = keep_mnt };

	memset(&res, 0, sizeof(res));
	finish(&c, rpc_mount3_mnt_async(rpc, on_reply, (char *)path, &c));
	return res;
}

mountlist call_dump(void)
{
	mountlist res = NULL;
	struct call c = { .name = "DUMP", .res = &res, .size = sizeof(res), .keep = keep_dump };

	finish(&c, rpc_mount3_dump_async(rpc, on_reply, &c));
	return res;
}

void call_umnt(const char *path)
{
	struct call c = { .name = "UMNT" };

	finish(&c, rpc_mount3_umnt_async(rpc, on_reply, (char *)path, &c));
}

exports call_export(void)
{
	exports res = NULL;
	struct call c = { .name = "EXPORT", .res = &res, .size = sizeof(res), .keep = keep_export };

	finish(&c, rpc_mount3_export_async(rpc, on_reply, &c));
	return res;
}

nfs_fh3 call_mnt_root(const mountres3 *m)
{
	nfs_fh3 fh;

	fh.data.data_len = m->mountres3_u.mountinfo.fhandle.fhandle3_len;
	fh.data.data_val = m->mountres3_u.mountinfo.fhandle.fhandle3_val;
	return fh;
}

int call_same_fh(nfs_fh3 a, nfs_fh3 b)
{
	return a.data.data_len == b.data.data_len &&
	       memcmp(a.data.data_val, b.data.data_val, a.data.data_len) == 0;
}

/* --- NFS ---------------------------------------------------------------------- */

void call_nfs_null(void)
{
	struct call c = { .name = "NFS NULL" };

	finish(&c, rpc_nfs3_null_async(rpc, on_reply, &c));
}

#define NFS3_CALL(proc, NAME, ARGS, RES, KEEP)                                                     \
	RES call_##proc(ARGS *args)                                                                \
	{                                                                                          \
		RES res;                                                                           \
		struct call c = { .name = NAME, .res = &res, .size = sizeof(res), .keep = KEEP }; \
                                                                                                   \
		memset(&res, 0, sizeof(res));                                                      \
		finish(&c, rpc_nfs3_##proc##_async(rpc, on_reply, args, &c));                      \
		return res;                                                                        \
	}

NFS3_CALL(getattr, "GETATTR", GETATTR3args, GETATTR3res, NULL)
NFS3_CALL(setattr, "SETATTR", SETATTR3args, SETATTR3res, NULL)
NFS3_CALL(lookup, "LOOKUP", LOOKUP3args, LOOKUP3res, keep_lookup)
NFS3_CALL(access, "ACCESS", ACCESS3args, ACCESS3res, NULL)
NFS3_CALL(readlink, "READLINK", READLINK3args, READLINK3res, keep_readlink)
NFS3_CALL(read, "READ", READ3args, READ3res, keep_read)
NFS3_CALL(write, "WRITE", WRITE3args, WRITE3res, NULL)
NFS3_CALL(create, "CREATE", CREATE3args, CREATE3res, keep_create)
NFS3_CALL(mkdir, "MKDIR", MKDIR3args, MKDIR3res, keep_mkdir)
NFS3_CALL(symlink, "SYMLINK", SYMLINK3args, SYMLINK3res, keep_symlink)
NFS3_CALL(mknod, "MKNOD", MKNOD3args, MKNOD3res, keep_mknod)
NFS3_CALL(remove, "REMOVE", REMOVE3args, REMOVE3res, NULL)
NFS3_CALL(rmdir, "RMDIR", RMDIR3args, RMDIR3res, NULL)
NFS3_CALL(rename, "RENAME", RENAME3args, RENAME3res, NULL)
NFS3_CALL(link, "LINK", LINK3args, LINK3res, NULL)
NFS3_CALL(readdir, "READDIR", READDIR3args, READDIR3res, keep_readdir)
NFS3_CALL(readdirplus, "READDIRPLUS", READDIRPLUS3args, READDIRPLUS3res, keep_readdirplus)
NFS3_CALL(fsstat, "FSSTAT", FSSTAT3args, FSSTAT3res, NULL)
NFS3_CALL(fsinfo, "FSINFO", FSINFO3args, FSINFO3res, NULL)
NFS3_CALL(pathconf, "PATHCONF", PATHCONF3args, PATHCONF3res, NULL)
NFS3_CALL(commit, "COMMIT", COMMIT3args, COMMIT3res, NULL)

const char *call_refused(int program, int version, int procedure)
{
	struct call c = { .name = "a call the server must refuse" };
	struct rpc_pdu *pdu;

	pdu = rpc_allocate_pdu(rpc, program, version, procedure, on_reply, &c, (zdrproc_t)zdr_void,
			       0);
	if (!pdu || rpc_queue_pdu(rpc, pdu) != 0)
		fail("procedure %d of program %d: cannot send: %s", procedure, program,
		     rpc_get_error(rpc));
	wait_for(&c);
	if (c.status == RPC_STATUS_SUCCESS)
		fail("procedure %d of program %d version %d was answered", procedure, program,
		     version);
	return keep_str(c.error);
}
