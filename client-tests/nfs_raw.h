/* Synchronous NFSv3 and MOUNT calls over libnfs's raw RPC API, for the
 * client tests: call_<proc>() sends one call, drives the connection with
 * poll() + rpc_service() until its reply, and returns the decoded result
 * with everything it points to copied, valid until call_disconnect(). A
 * call the server does not answer (RPC error, lost connection, 10 s without
 * a reply) is a FAIL; the NFS status is for the caller to check. */
#ifndef CHUNKFS_CLIENT_TESTS_NFS_RAW_H
#define CHUNKFS_CLIENT_TESTS_NFS_RAW_H

#include <stddef.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>

/* Assertions: print "FAIL: ..." and exit 1. */
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			fail(__VA_ARGS__);                                                         \
	} while (0)
/* The status must be want; what names the call in the FAIL message. */
void expect(const char *what, nfsstat3 got, nfsstat3 want);

/* A TCP connection to the MOUNT and NFS programs on one port, with AUTH_SYS
 * credentials uid, gid. */
void call_connect(const char *host, int port, int uid, int gid);
/* The same to a port that serves NFS alone (another server's: nfs-ganesha
 * has MOUNT on a port of its own). */
void call_connect_nfs(const char *host, int port, int uid, int gid);
/* Closes it and frees every result returned so far. */
void call_disconnect(void);
/* The connection, for callers that drive calls of their own. */
struct rpc_context *call_context(void);

/* MOUNT version 3 */
void call_mount_null(void);
mountres3 call_mnt(const char *path);
mountlist call_dump(void);
void call_umnt(const char *path);
exports call_export(void);

/* NFS version 3 */
void call_nfs_null(void);
GETATTR3res call_getattr(GETATTR3args *args);
SETATTR3res call_setattr(SETATTR3args *args);
LOOKUP3res call_lookup(LOOKUP3args *args);
ACCESS3res call_access(ACCESS3args *args);
READLINK3res call_readlink(READLINK3args *args);
READ3res call_read(READ3args *args);
WRITE3res call_write(WRITE3args *args);
CREATE3res call_create(CREATE3args *args);
MKDIR3res call_mkdir(MKDIR3args *args);
SYMLINK3res call_symlink(SYMLINK3args *args);
MKNOD3res call_mknod(MKNOD3args *args);
REMOVE3res call_remove(REMOVE3args *args);
RMDIR3res call_rmdir(RMDIR3args *args);
RENAME3res call_rename(RENAME3args *args);
LINK3res call_link(LINK3args *args);
READDIR3res call_readdir(READDIR3args *args);
READDIRPLUS3res call_readdirplus(READDIRPLUS3args *args);
FSSTAT3res call_fsstat(FSSTAT3args *args);
FSINFO3res call_fsinfo(FSINFO3args *args);
PATHCONF3res call_pathconf(PATHCONF3args *args);
COMMIT3res call_commit(COMMIT3args *args);

/* A call of any procedure with no arguments that the server must refuse at
 * the RPC level: returns libnfs's text for the refusal, e.g. "Server
 * responded: Procedure not available" for PROC_UNAVAIL. */
const char *call_refused(int program, int version, int procedure);

/* The root handle of a successful MNT result. */
nfs_fh3 call_mnt_root(const mountres3 *m);
int call_same_fh(nfs_fh3 a, nfs_fh3 b);

#endif
