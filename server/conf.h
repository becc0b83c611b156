/* chunkfsd's configuration: the file format (etc/chunkfsd.conf documents
 * every key), defaults, exports with their client lists and squashing. */
#ifndef CHUNKFS_SERVER_CONF_H
#define CHUNKFS_SERVER_CONF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fs/fs.h"
#include "log.h"

enum squash {
	SQUASH_ROOT = 0, /* uid 0 becomes anonuid (the default) */
	SQUASH_NONE = 1,
	SQUASH_ALL = 2,  /* every uid becomes anonuid */
};

struct client_net {
	int family;        /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	int prefix;        /* bits */
};

struct export {
	char path[1024];
	struct client_net *clients;
	int nclients;
	int rw;
	enum squash squash;
	uint32_t anonuid, anongid;
	int secure;        /* only privileged source ports (< 1024) */
	struct fs_ino root; /* resolved when the volume opens */
};

enum rpcbind_mode {
	RPCBIND_NO = 0,
	RPCBIND_YES = 1,  /* registration failing is an error */
	RPCBIND_AUTO = 2, /* register when rpcbind answers, log when it does not */
};

struct config {
	char volume[4096];
	char listen[64];
	uint16_t port;
	int workers;
	enum rpcbind_mode rpcbind;
	int max_conn_requests;  /* outstanding requests per connection */
	int max_requests;       /* outstanding requests in all */
	uint32_t max_io;        /* READ/WRITE size (FSINFO rtmax/wtmax) */
	uint64_t cache_mb;      /* metadata cache bound */
	enum log_level log_level;
	int use_syslog;
	struct export *exports;
	int nexports;
};

void config_defaults(struct config *cfg);
/* Read a config file; on error why[] says "PATH:LINE: what is wrong". */
int config_load(const char *path, struct config *cfg, char *why, size_t whylen);
void config_free(struct config *cfg);
/* Parse one "clients" list item: an address or address/prefix. */
int config_parse_net(const char *s, struct client_net *out);

/* exports.c */
const struct export *export_for_client(const struct config *cfg, const struct sockaddr *sa);
int export_allows(const struct export *e, const struct sockaddr *sa);
void export_squash(const struct export *e, struct fs_cred *cred);

#endif
