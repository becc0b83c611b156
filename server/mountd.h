/* MOUNT version 3 (RFC 1813 appendix I): the procedures, on the server's
 * exports and its list of mounts. */
#ifndef CHUNKFS_SERVER_MOUNTD_H
#define CHUNKFS_SERVER_MOUNTD_H

#include "proto/nfs_ctx.h"

void mountd_mnt(struct nfs_ctx *ctx, void *args, void *res);
void mountd_dump(struct nfs_ctx *ctx, void *args, void *res);
void mountd_umnt(struct nfs_ctx *ctx, void *args, void *res);
void mountd_umntall(struct nfs_ctx *ctx, void *args, void *res);
void mountd_export(struct nfs_ctx *ctx, void *args, void *res);

#endif
