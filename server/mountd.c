/* MOUNT v3: MNT hands out an export's root handle (with the auth flavours
 * accepted), DUMP lists who mounted what, UMNT/UMNTALL forget it, EXPORT
 * lists the exports and their client lists; rpcbind registration of both
 * programs. */
#include "config.h"

#include <arpa/inet.h>
#include <rpc/pmap_clnt.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/mount3.h"
#include "proto/nfs3.h"
#include "server/log.h"
#include "server/mountd.h"
#include "server/ratelog.h"
#include "server/server.h"

static struct ratelog log_mnt_refused =
	RATELOG_INIT(LOG_LVL_WARN, "mounts refused: client not allowed");

/* "/a/b/" and "/a/b" name the same export. */
static int same_path(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	while (la > 1 && a[la - 1] == '/')
		la--;
	while (lb > 1 && b[lb - 1] == '/')
		lb--;
	return la == lb && memcmp(a, b, la) == 0;
}

/* Does export path ex contain path (itself or a directory under it)?
 * *rest: the part of path below the export. */
static int under_export(const char *ex, const char *path, const char **rest)
{
	size_t n = strlen(ex);

	while (n > 1 && ex[n - 1] == '/')
		n--;
	if (n == 1 && ex[0] == '/') {
		*rest = path;
		return path[0] == '/';
	}
	if (strncmp(ex, path, n) != 0 || (path[n] != '\0' && path[n] != '/'))
		return 0;
	*rest = path + n;
	return 1;
}

/* MNT of an export, or of a directory under one (as clients mounting a
 * subtree do): the handle of that directory. */
static int mnt_target(struct nfs_ctx *ctx, const struct export *e, const char *rest,
		      struct fs_ino *out)
{
	char buf[MNTPATHLEN + 1], *save = NULL, *part;
	struct fs_attr a;
	int ret = 0;

	*out = e->root;
	snprintf(buf, sizeof(buf), "%s", rest);
	for (part = strtok_r(buf, "/", &save); part && ret == 0; part = strtok_r(NULL, "/", &save)) {
		if (!strcmp(part, "..") || !strcmp(part, "."))
			return -EINVAL; /* no climbing out of the export */
		ret = fs_lookup(ctx->vol, &ctx->cred, *out, part, out, &a);
		if (ret == 0 && !S_ISDIR(a.mode))
			ret = -ENOTDIR;
	}
	return ret;
}

void mountd_mnt(struct nfs_ctx *ctx, void *args, void *vres)
{
	const char *path = *(dirpath *)args;
	struct server *srv = ctx->srv;
	struct conn *c = ctx->conn;
	mountres3 *res = vres;
	const struct export *e = NULL;
	const char *rest = NULL;
	struct mount_entry *m;
	struct fs_ino target;
	size_t best = 0;
	int *flavors, ret;
	uint8_t *fh;
	/* The exports in force when this call started: a reload meanwhile
	 * does not change what it sees. */
	struct export_set *es = export_table_get(&srv->exports);

	for (int i = 0; i < es->nexports; i++) {
		const char *r;
		size_t n = strlen(es->exports[i].path);
		if (under_export(es->exports[i].path, path, &r) && (!e || n > best)) {
			e = &es->exports[i];
			rest = r;
			best = n;
		}
	}
	if (!e) {
		export_set_put(es);
		res->fhs_status = MNT3ERR_NOENT;
		return;
	}
	if (!export_allows(e, (const struct sockaddr *)&c->peer)) {
		export_set_put(es);
		ratelog_msg(&log_mnt_refused, "%s: mount of %s refused: client not allowed",
			    c->peer_name, path);
		res->fhs_status = MNT3ERR_ACCES;
		return;
	}
	ret = mnt_target(ctx, e, rest, &target);
	export_set_put(es);
	if (ret < 0) {
		res->fhs_status = ret == -ENOTDIR ? MNT3ERR_NOTDIR
				  : ret == -EACCES ? MNT3ERR_ACCES
				  : ret == -ENOENT ? MNT3ERR_NOENT
				  : ret == -EINVAL ? MNT3ERR_INVAL : MNT3ERR_IO;
		return;
	}
	fh = arena_alloc(&ctx->arena, HND_FH_LEN);
	flavors = arena_alloc(&ctx->arena, 2 * sizeof(*flavors));
	if (!fh || !flavors || hnd_fh_encode(srv->key, target, fh) < 0) {
		res->fhs_status = MNT3ERR_SERVERFAULT;
		return;
	}
	flavors[0] = 1; /* AUTH_SYS */
	flavors[1] = 0; /* AUTH_NONE */
	res->fhs_status = MNT3_OK;
	res->mountres3_u.mountinfo.fhandle.fhandle3_len = HND_FH_LEN;
	res->mountres3_u.mountinfo.fhandle.fhandle3_val = (char *)fh;
	res->mountres3_u.mountinfo.auth_flavors.auth_flavors_len = 2;
	res->mountres3_u.mountinfo.auth_flavors.auth_flavors_val = flavors;
	pthread_mutex_lock(&srv->mlock);
	for (m = srv->mounts; m; m = m->next)
		if (!strcmp(m->host, c->peer_name) && same_path(m->path, path))
			break;
	if (!m && (m = calloc(1, sizeof(*m)))) {
		snprintf(m->host, sizeof(m->host), "%s", c->peer_name);
		snprintf(m->path, sizeof(m->path), "%s", path);
		m->next = srv->mounts;
		srv->mounts = m;
	}
	pthread_mutex_unlock(&srv->mlock);
	log_debug("%s mounted %s", c->peer_name, path);
}

void mountd_dump(struct nfs_ctx *ctx, void *args, void *vres)
{
	struct server *srv = ctx->srv;
	mountlist *res = vres, *tail = res;

	*res = NULL;
	pthread_mutex_lock(&srv->mlock);
	for (struct mount_entry *m = srv->mounts; m; m = m->next) {
		struct mountbody *b = arena_alloc(&ctx->arena, sizeof(*b));
		if (!b)
			break;
		b->ml_hostname = arena_strndup(&ctx->arena, m->host, strlen(m->host));
		b->ml_directory = arena_strndup(&ctx->arena, m->path, strlen(m->path));
		b->ml_next = NULL;
		if (!b->ml_hostname || !b->ml_directory)
			break;
		*tail = b;
		tail = &b->ml_next;
	}
	pthread_mutex_unlock(&srv->mlock);
}

/* Forget the mounts of this client (of path, or all when path is NULL). */
static void forget_mounts(struct server *srv, const char *host, const char *path)
{
	pthread_mutex_lock(&srv->mlock);
	for (struct mount_entry **pp = &srv->mounts; *pp;) {
		struct mount_entry *m = *pp;
		if (!strcmp(m->host, host) && (!path || same_path(m->path, path))) {
			*pp = m->next;
			free(m);
		} else {
			pp = &m->next;
		}
	}
	pthread_mutex_unlock(&srv->mlock);
}

void mountd_umnt(struct nfs_ctx *ctx, void *args, void *res)
{
	forget_mounts(ctx->srv, ctx->conn->peer_name, *(dirpath *)args);
}

void mountd_umntall(struct nfs_ctx *ctx, void *args, void *res)
{
	forget_mounts(ctx->srv, ctx->conn->peer_name, NULL);
}

static char *net_string(struct nfs_ctx *ctx, const struct client_net *n)
{
	char addr[INET6_ADDRSTRLEN], buf[INET6_ADDRSTRLEN + 8];

	inet_ntop(n->family, n->addr, addr, sizeof(addr));
	snprintf(buf, sizeof(buf), "%s/%d", addr, n->prefix);
	return arena_strndup(&ctx->arena, buf, strlen(buf));
}

void mountd_export(struct nfs_ctx *ctx, void *args, void *vres)
{
	struct server *srv = ctx->srv;
	exports *res = vres, *tail = res;
	struct export_set *es = export_table_get(&srv->exports);

	*res = NULL;
	for (int i = 0; i < es->nexports; i++) {
		const struct export *e = &es->exports[i];
		struct exportnode *node = arena_alloc(&ctx->arena, sizeof(*node));
		groups *gtail;
		if (!node)
			goto nomem;
		node->ex_dir = arena_strndup(&ctx->arena, e->path, strlen(e->path));
		node->ex_groups = NULL;
		node->ex_next = NULL;
		gtail = &node->ex_groups;
		for (int k = 0; k < e->nclients; k++) {
			struct groupnode *g = arena_alloc(&ctx->arena, sizeof(*g));
			if (!g)
				goto nomem;
			g->gr_name = net_string(ctx, &e->clients[k]);
			g->gr_next = NULL;
			*gtail = g;
			gtail = &g->gr_next;
		}
		*tail = node;
		tail = &node->ex_next;
	}
	export_set_put(es);
	return;
nomem:
	/* The list so far is answered; the log says it is cut short. */
	log_error("mount.export: out of memory: the export list is incomplete");
	export_set_put(es);
}

void mountd_register(struct server *srv)
{
	if (srv->cfg.rpcbind == RPCBIND_NO)
		return;
	pmap_unset(NFS_PROGRAM, NFS_V3);
	pmap_unset(MOUNT_PROGRAM, MOUNT_V3);
	if (pmap_set(NFS_PROGRAM, NFS_V3, IPPROTO_TCP, srv->port) &&
	    pmap_set(MOUNT_PROGRAM, MOUNT_V3, IPPROTO_TCP, srv->port)) {
		srv->registered = 1;
		log_info("registered NFS v3 and MOUNT v3 on port %u with rpcbind", srv->port);
		return;
	}
	if (srv->cfg.rpcbind == RPCBIND_YES)
		log_error("rpcbind registration failed (is rpcbind running?)");
	else
		log_info("rpcbind not reachable: not registered (clients must name port %u)",
			 srv->port);
}

void mountd_unregister(struct server *srv)
{
	if (!srv->registered)
		return;
	pmap_unset(NFS_PROGRAM, NFS_V3);
	pmap_unset(MOUNT_PROGRAM, MOUNT_V3);
	srv->registered = 0;
}
