/* The NFSv3 procedures (RFC 1813 section 3.3): one nfs3_proc_<op>() per
 * procedure, working on decoded arguments and filling a result whose memory
 * lives in ctx->arena. Nothing here knows sockets or XDR streams; the
 * dispatcher decodes, calls, encodes, and syncs when ctx->needs_sync says a
 * modifying procedure changed the volume. */
#ifndef CHUNKFS_PROTO_NFS3_PROC_H
#define CHUNKFS_PROTO_NFS3_PROC_H

#include "fs/fs.h"
#include "proto/nfs3.h"
#include "proto/nfs_ctx.h"

/* nfs3_proc.c: the helpers the MOUNT procedures and tests share */

/* The one errno -> nfsstat3 mapping (err is 0 or a negative errno). */
nfsstat3 nfs3_status(int err);
/* The inode a handle names: 0, -EBADMSG for a handle that does not decode
 * (forged, damaged, another volume's), -ENOMEM/-EIO from libcrypto. Whether
 * the inode still exists is fs_getattr's answer (-ESTALE). */
int nfs3_fh_to_ino(struct nfs_ctx *ctx, const nfs_fh3 *fh, struct fs_ino *ino);
/* The handle of ino, its HND_FH_LEN bytes allocated in ctx->arena. */
int nfs3_ino_to_fh(struct nfs_ctx *ctx, struct fs_ino ino, nfs_fh3 *fh);
/* fattr3 from the filesystem's attributes; fsid is the volume's. */
void nfs3_fill_fattr(struct nfs_ctx *ctx, const struct fs_attr *a, fattr3 *out);

/* nfs3_proc.c: the procedures, in procedure-number order */
void nfs3_proc_null(struct nfs_ctx *ctx, void *args, void *res);
void nfs3_proc_getattr(struct nfs_ctx *ctx, GETATTR3args *args, GETATTR3res *res);
void nfs3_proc_setattr(struct nfs_ctx *ctx, SETATTR3args *args, SETATTR3res *res);
void nfs3_proc_lookup(struct nfs_ctx *ctx, LOOKUP3args *args, LOOKUP3res *res);
void nfs3_proc_access(struct nfs_ctx *ctx, ACCESS3args *args, ACCESS3res *res);
void nfs3_proc_readlink(struct nfs_ctx *ctx, READLINK3args *args, READLINK3res *res);
void nfs3_proc_read(struct nfs_ctx *ctx, READ3args *args, READ3res *res);
void nfs3_proc_write(struct nfs_ctx *ctx, WRITE3args *args, WRITE3res *res);
void nfs3_proc_create(struct nfs_ctx *ctx, CREATE3args *args, CREATE3res *res);
void nfs3_proc_mkdir(struct nfs_ctx *ctx, MKDIR3args *args, MKDIR3res *res);
void nfs3_proc_symlink(struct nfs_ctx *ctx, SYMLINK3args *args, SYMLINK3res *res);
void nfs3_proc_mknod(struct nfs_ctx *ctx, MKNOD3args *args, MKNOD3res *res);
void nfs3_proc_remove(struct nfs_ctx *ctx, REMOVE3args *args, REMOVE3res *res);
void nfs3_proc_rmdir(struct nfs_ctx *ctx, RMDIR3args *args, RMDIR3res *res);
void nfs3_proc_rename(struct nfs_ctx *ctx, RENAME3args *args, RENAME3res *res);
void nfs3_proc_link(struct nfs_ctx *ctx, LINK3args *args, LINK3res *res);
void nfs3_proc_readdir(struct nfs_ctx *ctx, READDIR3args *args, READDIR3res *res);
void nfs3_proc_readdirplus(struct nfs_ctx *ctx, READDIRPLUS3args *args, READDIRPLUS3res *res);
void nfs3_proc_fsstat(struct nfs_ctx *ctx, FSSTAT3args *args, FSSTAT3res *res);
void nfs3_proc_fsinfo(struct nfs_ctx *ctx, FSINFO3args *args, FSINFO3res *res);
void nfs3_proc_pathconf(struct nfs_ctx *ctx, PATHCONF3args *args, PATHCONF3res *res);
void nfs3_proc_commit(struct nfs_ctx *ctx, COMMIT3args *args, COMMIT3res *res);

#endif
