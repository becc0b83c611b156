/* The NFSv3 procedures called directly on a fresh volume: every
 * procedure's success path, the error statuses RFC 1813 names for the
 * cases a client meets (handles bad and stale, names, types, permissions,
 * read-only exports, guards, cookies, budgets), weak cache consistency data,
 * and READDIR/READDIRPLUS paging whose replies, sized by the real XDR
 * encoder, stay within the client's counts and return every entry once. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs.h"
#include "handles/fh.h"
#include "proto/nfs3_proc.h"
#include "tap.h"

static char image[256];
static struct nfs_ctx ctx;
static nfs_fh3 root;
static const struct fs_cred cred_root = { .uid = 0, .gid = 0 };
static const struct fs_cred cred_user = { .uid = 1000, .gid = 1000 };

/* --- small helpers ------------------------------------------------------- */

#define XDR_SIZE(fn, res) ((unsigned long)xdr_sizeof((xdrproc_t)(void (*)(void))(fn), (res)))

static int time_gt(nfstime3 a, nfstime3 b)
{
	return a.seconds > b.seconds || (a.seconds == b.seconds && a.nseconds > b.nseconds);
}

static int same_fh(const nfs_fh3 *a, const nfs_fh3 *b)
{
	return a->data.data_len == b->data.data_len &&
	       memcmp(a->data.data_val, b->data.data_val, a->data.data_len) == 0;
}

/* A copy of fh in the arena with byte i flipped. */
static nfs_fh3 damaged(const nfs_fh3 *fh, unsigned i)
{
	nfs_fh3 d = *fh;

	d.data.data_val = arena_alloc(&ctx.arena, fh->data.data_len);
	memcpy(d.data.data_val, fh->data.data_val, fh->data.data_len);
	d.data.data_val[i] ^= 0x40;
	return d;
}

static nfsstat3 t_getattr(nfs_fh3 fh, fattr3 *out)
{
	GETATTR3args a = { .object = fh };
	GETATTR3res r;

	nfs3_proc_getattr(&ctx, &a, &r);
	if (r.status == NFS3_OK && out)
		*out = r.GETATTR3res_u.resok.obj_attributes;
	return r.status;
}

static nfsstat3 t_lookup(nfs_fh3 dir, const char *name, nfs_fh3 *out)
{
	LOOKUP3args a = { .what = { .dir = dir, .name = (char *)name } };
	LOOKUP3res r;

	nfs3_proc_lookup(&ctx, &a, &r);
	if (r.status == NFS3_OK && out)
		*out = r.LOOKUP3res_u.resok.object;
	return r.status;
}

static nfsstat3 t_create(nfs_fh3 dir, const char *name, createmode3 how, uint32_t mode,
			 nfs_fh3 *out, CREATE3res *rp)
{
	CREATE3args a;
	CREATE3res r;

	memset(&a, 0, sizeof(a));
	a.where.dir = dir;
	a.where.name = (char *)name;
	a.how.mode = how;
	if (how != EXCLUSIVE && mode) {
		a.how.createhow3_u.obj_attributes.mode.set_it = TRUE;
		a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = mode;
	}
	nfs3_proc_create(&ctx, &a, &r);
	if (r.status == NFS3_OK && out) {
		CHECK(r.CREATE3res_u.resok.obj.handle_follows);
		*out = r.CREATE3res_u.resok.obj.post_op_fh3_u.handle;
	}
	if (rp)
		*rp = r;
	return r.status;
}

static nfsstat3 t_mkdir(nfs_fh3 dir, const char *name, uint32_t mode, nfs_fh3 *out)
{
	MKDIR3args a;
	MKDIR3res r;

	memset(&a, 0, sizeof(a));
	a.where.dir = dir;
	a.where.name = (char *)name;
	a.attributes.mode.set_it = TRUE;
	a.attributes.mode.set_mode3_u.mode = mode;
	nfs3_proc_mkdir(&ctx, &a, &r);
	if (r.status == NFS3_OK && out)
		*out = r.MKDIR3res_u.resok.obj.post_op_fh3_u.handle;
	return r.status;
}

static nfsstat3 t_write(nfs_fh3 fh, uint64_t off, const void *buf, uint32_t len, stable_how how,
			WRITE3res *rp)
{
	WRITE3args a = { .file = fh, .offset = off, .count = len, .stable = how };
	WRITE3res r;

	a.data.data_len = len;
	a.data.data_val = (char *)buf;
	nfs3_proc_write(&ctx, &a, &r);
	if (rp)
		*rp = r;
	return r.status;
}

static nfsstat3 t_read(nfs_fh3 fh, uint64_t off, uint32_t count, READ3res *rp)
{
	READ3args a = { .file = fh, .offset = off, .count = count };

	nfs3_proc_read(&ctx, &a, rp);
	return rp->status;
}

static nfsstat3 t_remove(nfs_fh3 dir, const char *name)
{
	REMOVE3args a = { .object = { .dir = dir, .name = (char *)name } };
	REMOVE3res r;

	nfs3_proc_remove(&ctx, &a, &r);
	return r.status;
}

static nfsstat3 t_rmdir(nfs_fh3 dir, const char *name)
{
	RMDIR3args a = { .object = { .dir = dir, .name = (char *)name } };
	RMDIR3res r;

	nfs3_proc_rmdir(&ctx, &a, &r);
	return r.status;
}

static nfsstat3 t_rename(nfs_fh3 fd, const char *fname, nfs_fh3 td, const char *tname,
			 RENAME3res *rp)
{
	RENAME3args a = { .from = { .dir = fd, .name = (char *)fname },
			  .to = { .dir = td, .name = (char *)tname } };
	RENAME3res r;

	nfs3_proc_rename(&ctx, &a, &r);
	if (rp)
		*rp = r;
	return r.status;
}

static nfsstat3 t_link(nfs_fh3 file, nfs_fh3 dir, const char *name, LINK3res *rp)
{
	LINK3args a = { .file = file, .link = { .dir = dir, .name = (char *)name } };
	LINK3res r;

	nfs3_proc_link(&ctx, &a, &r);
	if (rp)
		*rp = r;
	return r.status;
}

static nfsstat3 t_symlink(nfs_fh3 dir, const char *name, const char *target, nfs_fh3 *out)
{
	SYMLINK3args a;
	SYMLINK3res r;

	memset(&a, 0, sizeof(a));
	a.where.dir = dir;
	a.where.name = (char *)name;
	a.symlink.symlink_data = (char *)target;
	nfs3_proc_symlink(&ctx, &a, &r);
	if (r.status == NFS3_OK && out)
		*out = r.SYMLINK3res_u.resok.obj.post_op_fh3_u.handle;
	return r.status;
}

static nfsstat3 t_mknod(nfs_fh3 dir, const char *name, ftype3 type, uint32_t maj, uint32_t min,
			MKNOD3res *rp)
{
	MKNOD3args a;
	MKNOD3res r;

	memset(&a, 0, sizeof(a));
	a.where.dir = dir;
	a.where.name = (char *)name;
	a.what.type = type;
	if (type == NF3CHR || type == NF3BLK) {
		a.what.mknoddata3_u.device.spec.specdata1 = maj;
		a.what.mknoddata3_u.device.spec.specdata2 = min;
		a.what.mknoddata3_u.device.dev_attributes.mode.set_it = TRUE;
		a.what.mknoddata3_u.device.dev_attributes.mode.set_mode3_u.mode = 0620;
	}
	nfs3_proc_mknod(&ctx, &a, &r);
	if (rp)
		*rp = r;
	return r.status;
}

static nfsstat3 t_readdir(nfs_fh3 dir, cookie3 cookie, const char *verf, uint32_t count,
			  READDIR3res *r)
{
	READDIR3args a = { .dir = dir, .cookie = cookie, .count = count };

	if (verf)
		memcpy(a.cookieverf, verf, NFS3_COOKIEVERFSIZE);
	nfs3_proc_readdir(&ctx, &a, r);
	return r->status;
}

static nfsstat3 t_readdirplus(nfs_fh3 dir, cookie3 cookie, const char *verf, uint32_t dircount,
			      uint32_t maxcount, READDIRPLUS3res *r)
{
	READDIRPLUS3args a = { .dir = dir, .cookie = cookie, .dircount = dircount,
			       .maxcount = maxcount };

	if (verf)
		memcpy(a.cookieverf, verf, NFS3_COOKIEVERFSIZE);
	nfs3_proc_readdirplus(&ctx, &a, r);
	return r->status;
}

static void setup(void)
{
	struct fs_mkfs_opts o = { .chunk_size = 1u << 20, .chunk_count = 4, .force = 1 };
	uint8_t secret[32], uuid[16];
	struct hnd_fh_key *key = NULL;
	struct fs_ino ino;

	memset(&ctx, 0, sizeof(ctx));
	CHECK_EQ(fs_mkfs(image, &o), 0);
	CHECK_EQ(fs_open(image, 0, &ctx.vol), 0);
	if (!ctx.vol)
		exit(test_done("nfs3_proc"));
	fs_volume_secret(ctx.vol, secret);
	fs_volume_uuid(ctx.vol, uuid);
	CHECK_EQ(hnd_fh_key_new(secret, uuid, &key), 0);
	ctx.key = key;
	ctx.cred = cred_root;
	ctx.rtmax = ctx.wtmax = 1u << 20;
	memcpy(ctx.write_verf, "verf1234", 8);
	CHECK_EQ(fs_root(ctx.vol, &ino), 0);
	CHECK_EQ(nfs3_ino_to_fh(&ctx, ino, &root), 0);
	CHECK_EQ(root.data.data_len, HND_FH_LEN);
}

static void teardown(void)
{
	arena_release(&ctx.arena);
	hnd_fh_key_free((struct hnd_fh_key *)ctx.key);
	CHECK_EQ(fs_close(ctx.vol), 0);
}

/* --- the cases ----------------------------------------------------------- */

static void test_status_map(void)
{
	CHECK_EQ(nfs3_status(0), NFS3_OK);
	CHECK_EQ(nfs3_status(-EPERM), NFS3ERR_PERM);
	CHECK_EQ(nfs3_status(-ENOENT), NFS3ERR_NOENT);
	CHECK_EQ(nfs3_status(-EIO), NFS3ERR_IO);
	CHECK_EQ(nfs3_status(-EUCLEAN), NFS3ERR_IO);
	CHECK_EQ(nfs3_status(-ENXIO), NFS3ERR_NXIO);
	CHECK_EQ(nfs3_status(-EACCES), NFS3ERR_ACCES);
	CHECK_EQ(nfs3_status(-EEXIST), NFS3ERR_EXIST);
	CHECK_EQ(nfs3_status(-EXDEV), NFS3ERR_XDEV);
	CHECK_EQ(nfs3_status(-ENODEV), NFS3ERR_NODEV);
	CHECK_EQ(nfs3_status(-ENOTDIR), NFS3ERR_NOTDIR);
	CHECK_EQ(nfs3_status(-EISDIR), NFS3ERR_ISDIR);
	CHECK_EQ(nfs3_status(-EINVAL), NFS3ERR_INVAL);
	CHECK_EQ(nfs3_status(-EFBIG), NFS3ERR_FBIG);
	CHECK_EQ(nfs3_status(-ENOSPC), NFS3ERR_NOSPC);
	CHECK_EQ(nfs3_status(-EROFS), NFS3ERR_ROFS);
	CHECK_EQ(nfs3_status(-EMLINK), NFS3ERR_MLINK);
	CHECK_EQ(nfs3_status(-ENAMETOOLONG), NFS3ERR_NAMETOOLONG);
	CHECK_EQ(nfs3_status(-ENOTEMPTY), NFS3ERR_NOTEMPTY);
	CHECK_EQ(nfs3_status(-EDQUOT), NFS3ERR_DQUOT);
	CHECK_EQ(nfs3_status(-ESTALE), NFS3ERR_STALE);
	CHECK_EQ(nfs3_status(-EBADMSG), NFS3ERR_BADHANDLE);
	CHECK_EQ(nfs3_status(-FS_EBADCOOKIE), NFS3ERR_BAD_COOKIE);
	CHECK_EQ(nfs3_status(-ENOTSUP), NFS3ERR_NOTSUPP);
	CHECK_EQ(nfs3_status(-EOPNOTSUPP), NFS3ERR_NOTSUPP);
	CHECK_EQ(nfs3_status(-ERANGE), NFS3ERR_SERVERFAULT);
	CHECK_EQ(nfs3_status(-ENOMEM), NFS3ERR_SERVERFAULT);
	CHECK_EQ(nfs3_status(-ELOOP), NFS3ERR_SERVERFAULT);
}

static void test_null_getattr(void)
{
	uint8_t uuid[16];
	uint64_t fsid = 0;
	struct fs_ino ino, back;
	fattr3 fa;

	nfs3_proc_null(&ctx, NULL, NULL);
	CHECK_EQ(t_getattr(root, &fa), NFS3_OK);
	CHECK_EQ(fa.type, NF3DIR);
	CHECK_EQ(fa.mode & ~07777u, 0);
	CHECK(fa.nlink >= 2);
	fs_volume_uuid(ctx.vol, uuid);
	for (int i = 0; i < 8; i++)
		fsid = fsid << 8 | uuid[i];
	CHECK(fa.fsid == fsid);
	CHECK_EQ(fs_root(ctx.vol, &ino), 0);
	CHECK(fa.fileid == ino.num);
	CHECK_EQ(nfs3_fh_to_ino(&ctx, &root, &back), 0);
	CHECK(back.num == ino.num && back.gen == ino.gen);
}

static void test_create(void)
{
	nfs_fh3 f, f2, e1, e2;
	CREATE3res r;
	CREATE3args a;
	fattr3 fa;
	const CREATE3resok *ok = &r.CREATE3res_u.resok;

	ctx.needs_sync = 0;
	CHECK_EQ(t_create(root, "f1", GUARDED, 0640, &f, &r), NFS3_OK);
	CHECK_EQ(ctx.needs_sync, 1);
	CHECK(ok->obj_attributes.attributes_follow);
	CHECK_EQ(ok->obj_attributes.post_op_attr_u.attributes.type, NF3REG);
	CHECK_EQ(ok->obj_attributes.post_op_attr_u.attributes.mode, 0640);
	CHECK_EQ(ok->obj_attributes.post_op_attr_u.attributes.size, 0);
	CHECK(ok->dir_wcc.before.attributes_follow);
	CHECK(ok->dir_wcc.after.attributes_follow);
	CHECK(time_gt(ok->dir_wcc.after.post_op_attr_u.attributes.mtime,
		      ok->dir_wcc.before.pre_op_attr_u.attributes.mtime));
	CHECK(time_gt(ok->dir_wcc.after.post_op_attr_u.attributes.ctime,
		      ok->dir_wcc.before.pre_op_attr_u.attributes.ctime));
	CHECK_EQ(t_lookup(root, "f1", &f2), NFS3_OK);
	CHECK(same_fh(&f, &f2));

	/* GUARDED on an existing name: EXIST, with the directory's wcc. */
	ctx.needs_sync = 0;
	CHECK_EQ(t_create(root, "f1", GUARDED, 0600, NULL, &r), NFS3ERR_EXIST);
	CHECK_EQ(ctx.needs_sync, 0);
	CHECK(r.CREATE3res_u.resfail.dir_wcc.before.attributes_follow);
	CHECK(r.CREATE3res_u.resfail.dir_wcc.after.attributes_follow);

	/* UNCHECKED opens it; with size 0 it truncates, and the mode stays. */
	CHECK_EQ(t_write(f, 0, "hello", 5, FILE_SYNC, NULL), NFS3_OK);
	memset(&a, 0, sizeof(a));
	a.where.dir = root;
	a.where.name = "f1";
	a.how.mode = UNCHECKED;
	a.how.createhow3_u.obj_attributes.mode.set_it = TRUE;
	a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0666;
	a.how.createhow3_u.obj_attributes.size.set_it = TRUE;
	a.how.createhow3_u.obj_attributes.size.set_size3_u.size = 0;
	nfs3_proc_create(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK(same_fh(&ok->obj.post_op_fh3_u.handle, &f));
	CHECK_EQ(ok->obj_attributes.post_op_attr_u.attributes.size, 0);
	CHECK_EQ(ok->obj_attributes.post_op_attr_u.attributes.mode, 0640);
	/* UNCHECKED on a directory's name: EXIST. */
	CHECK_EQ(t_mkdir(root, "cdir", 0755, NULL), NFS3_OK);
	CHECK_EQ(t_create(root, "cdir", UNCHECKED, 0644, NULL, NULL), NFS3ERR_EXIST);

	/* A new file with owner, size and times from sattr3. */
	memset(&a, 0, sizeof(a));
	a.where.dir = root;
	a.where.name = "f-attrs";
	a.how.mode = GUARDED;
	a.how.createhow3_u.obj_attributes.uid.set_it = TRUE;
	a.how.createhow3_u.obj_attributes.uid.set_uid3_u.uid = 1234;
	a.how.createhow3_u.obj_attributes.gid.set_it = TRUE;
	a.how.createhow3_u.obj_attributes.gid.set_gid3_u.gid = 55;
	a.how.createhow3_u.obj_attributes.size.set_it = TRUE;
	a.how.createhow3_u.obj_attributes.size.set_size3_u.size = 3000;
	a.how.createhow3_u.obj_attributes.mtime.set_it = SET_TO_CLIENT_TIME;
	a.how.createhow3_u.obj_attributes.mtime.set_mtime_u.mtime.seconds = 1000000;
	a.how.createhow3_u.obj_attributes.mtime.set_mtime_u.mtime.nseconds = 7;
	nfs3_proc_create(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	fa = ok->obj_attributes.post_op_attr_u.attributes;
	CHECK_EQ(fa.mode, 0644); /* the default */
	CHECK_EQ(fa.uid, 1234);
	CHECK_EQ(fa.gid, 55);
	CHECK_EQ(fa.size, 3000);
	CHECK_EQ(fa.mtime.seconds, 1000000);
	CHECK_EQ(fa.mtime.nseconds, 7);

	/* EXCLUSIVE: a retransmission (same verifier) gets the same file. */
	memset(&a, 0, sizeof(a));
	a.where.dir = root;
	a.where.name = "excl";
	a.how.mode = EXCLUSIVE;
	memcpy(a.how.createhow3_u.verf, "ABCDEFGH", 8);
	nfs3_proc_create(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	e1 = ok->obj.post_op_fh3_u.handle;
	nfs3_proc_create(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	e2 = ok->obj.post_op_fh3_u.handle;
	CHECK(same_fh(&e1, &e2));
	memcpy(a.how.createhow3_u.verf, "ABCDEFGX", 8);
	nfs3_proc_create(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3ERR_EXIST);
	/* A GUARDED name EXCLUSIVE did not make is not its own. */
	memcpy(a.how.createhow3_u.verf, "ABCDEFGH", 8);
	a.where.name = "f1";
	nfs3_proc_create(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3ERR_EXIST);

	/* Bad creation modes and sattr3 times. */
	memset(&a, 0, sizeof(a));
	a.where.dir = root;
	a.where.name = "bad";
	a.how.mode = (createmode3)7;
	nfs3_proc_create(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3ERR_INVAL);
	a.how.mode = GUARDED;
	a.how.createhow3_u.obj_attributes.atime.set_it = SET_TO_CLIENT_TIME;
	a.how.createhow3_u.obj_attributes.atime.set_atime_u.atime.nseconds = 1000000000;
	nfs3_proc_create(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3ERR_INVAL);
	CHECK_EQ(t_lookup(root, "bad", NULL), NFS3ERR_NOENT);
}

/* sattr3 with an owner and a group, for the cases below. */
static sattr3 ids_sattr(uint32_t mode, uint32_t uid, uint32_t gid)
{
	sattr3 s;

	memset(&s, 0, sizeof(s));
	s.mode.set_it = TRUE;
	s.mode.set_mode3_u.mode = mode;
	s.uid.set_it = TRUE;
	s.uid.set_uid3_u.uid = uid;
	s.gid.set_it = TRUE;
	s.gid.set_gid3_u.gid = gid;
	return s;
}

/* CREATE, MKDIR, SYMLINK and MKNOD from a user who is not root: the uid
 * and gid in its sattr3 are dropped (as knfsd's nfsd_create_setattr), so
 * a client that sends the setgid directory's group neither fails with
 * PERM nor loses the set-id bits it asked for; root's are applied. */
static void test_create_ids(void)
{
	SETATTR3args sa;
	SETATTR3res sr;
	CREATE3args a;
	CREATE3res r;
	MKDIR3args ma;
	MKDIR3res mr;
	SYMLINK3args la;
	SYMLINK3res lr;
	MKNOD3args na;
	MKNOD3res nr;
	nfs_fh3 sg, f;
	fattr3 fa;

	CHECK_EQ(t_mkdir(root, "ids", 0777, &sg), NFS3_OK);
	memset(&sa, 0, sizeof(sa));
	sa.object = sg;
	sa.new_attributes = ids_sattr(02777, 0, 3000);
	nfs3_proc_setattr(&ctx, &sa, &sr);
	CHECK_EQ(sr.status, NFS3_OK);

	ctx.cred = cred_user;
	/* The group it inherits anyway: S_ISUID stays. */
	memset(&a, 0, sizeof(a));
	a.where.dir = sg;
	a.where.name = "same-gid";
	a.how.mode = GUARDED;
	a.how.createhow3_u.obj_attributes = ids_sattr(04755, 1000, 3000);
	nfs3_proc_create(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	fa = r.CREATE3res_u.resok.obj_attributes.post_op_attr_u.attributes;
	CHECK_EQ(fa.mode, 04755);
	CHECK_EQ(fa.uid, 1000);
	CHECK_EQ(fa.gid, 3000);
	/* Ids it could not set itself: OK, and the file has the inherited
	 * ones. */
	a.where.name = "other-ids";
	a.how.createhow3_u.obj_attributes = ids_sattr(0640, 5, 1234);
	nfs3_proc_create(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK_EQ(t_lookup(sg, "other-ids", &f), NFS3_OK);
	CHECK_EQ(t_getattr(f, &fa), NFS3_OK);
	CHECK_EQ(fa.mode, 0640);
	CHECK_EQ(fa.uid, 1000);
	CHECK_EQ(fa.gid, 3000);
	/* UNCHECKED makes it the same way. */
	a.where.name = "unchecked";
	a.how.mode = UNCHECKED;
	nfs3_proc_create(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK_EQ(r.CREATE3res_u.resok.obj_attributes.post_op_attr_u.attributes.gid, 3000);

	memset(&ma, 0, sizeof(ma));
	ma.where.dir = sg;
	ma.where.name = "dir";
	ma.attributes = ids_sattr(0755, 5, 1234);
	nfs3_proc_mkdir(&ctx, &ma, &mr);
	CHECK_EQ(mr.status, NFS3_OK);
	fa = mr.MKDIR3res_u.resok.obj_attributes.post_op_attr_u.attributes;
	CHECK_EQ(fa.mode, 02755);
	CHECK_EQ(fa.uid, 1000);
	CHECK_EQ(fa.gid, 3000);

	memset(&la, 0, sizeof(la));
	la.where.dir = sg;
	la.where.name = "link";
	la.symlink.symlink_attributes = ids_sattr(0777, 5, 1234);
	la.symlink.symlink_data = "target";
	nfs3_proc_symlink(&ctx, &la, &lr);
	CHECK_EQ(lr.status, NFS3_OK);
	fa = lr.SYMLINK3res_u.resok.obj_attributes.post_op_attr_u.attributes;
	CHECK_EQ(fa.uid, 1000);
	CHECK_EQ(fa.gid, 3000);

	memset(&na, 0, sizeof(na));
	na.where.dir = sg;
	na.where.name = "fifo";
	na.what.type = NF3FIFO;
	na.what.mknoddata3_u.pipe_attributes = ids_sattr(0640, 5, 1234);
	nfs3_proc_mknod(&ctx, &na, &nr);
	CHECK_EQ(nr.status, NFS3_OK);
	fa = nr.MKNOD3res_u.resok.obj_attributes.post_op_attr_u.attributes;
	CHECK_EQ(fa.uid, 1000);
	CHECK_EQ(fa.gid, 3000);

	/* Root's ids are applied. */
	ctx.cred = cred_root;
	a.where.name = "roots";
	a.how.mode = GUARDED;
	a.how.createhow3_u.obj_attributes = ids_sattr(0644, 5, 1234);
	nfs3_proc_create(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	fa = r.CREATE3res_u.resok.obj_attributes.post_op_attr_u.attributes;
	CHECK_EQ(fa.uid, 5);
	CHECK_EQ(fa.gid, 1234);
	ctx.needs_sync = 0;
}

static void test_lookup(void)
{
	char longname[FS_NAME_MAX + 2];
	nfs_fh3 f, d, dd, bad;
	LOOKUP3args a;
	LOOKUP3res r;
	fattr3 rootattr;

	CHECK_EQ(t_create(root, "lk", GUARDED, 0644, &f, NULL), NFS3_OK);
	memset(&a, 0, sizeof(a));
	a.what.dir = root;
	a.what.name = "lk";
	nfs3_proc_lookup(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK(same_fh(&r.LOOKUP3res_u.resok.object, &f));
	CHECK(r.LOOKUP3res_u.resok.obj_attributes.attributes_follow);
	CHECK_EQ(r.LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes.type, NF3REG);
	CHECK(r.LOOKUP3res_u.resok.dir_attributes.attributes_follow);
	CHECK_EQ(r.LOOKUP3res_u.resok.dir_attributes.post_op_attr_u.attributes.type, NF3DIR);

	a.what.name = "no-such-name";
	nfs3_proc_lookup(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3ERR_NOENT);
	CHECK(r.LOOKUP3res_u.resfail.dir_attributes.attributes_follow);

	/* Looking up in a file: NOTDIR, and the "directory"'s attributes. */
	a.what.dir = f;
	a.what.name = "x";
	nfs3_proc_lookup(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3ERR_NOTDIR);
	CHECK(r.LOOKUP3res_u.resfail.dir_attributes.attributes_follow);

	memset(longname, 'n', FS_NAME_MAX + 1);
	longname[FS_NAME_MAX + 1] = '\0';
	CHECK_EQ(t_lookup(root, longname, NULL), NFS3ERR_NAMETOOLONG);
	CHECK_EQ(t_create(root, longname, GUARDED, 0644, NULL, NULL), NFS3ERR_NAMETOOLONG);
	CHECK_EQ(t_mkdir(root, longname, 0755, NULL), NFS3ERR_NAMETOOLONG);
	longname[FS_NAME_MAX] = '\0'; /* 255 bytes: allowed */
	CHECK_EQ(t_create(root, longname, GUARDED, 0644, NULL, NULL), NFS3_OK);
	CHECK_EQ(t_lookup(root, longname, NULL), NFS3_OK);
	CHECK_EQ(t_remove(root, longname), NFS3_OK);

	/* "." and "..". */
	CHECK_EQ(t_mkdir(root, "lkdir", 0755, &d), NFS3_OK);
	CHECK_EQ(t_lookup(d, ".", &dd), NFS3_OK);
	CHECK(same_fh(&dd, &d));
	CHECK_EQ(t_lookup(d, "..", &dd), NFS3_OK);
	CHECK(same_fh(&dd, &root));
	CHECK_EQ(t_getattr(root, &rootattr), NFS3_OK);

	/* Handles: a flipped byte anywhere, a short one, none at all. */
	for (unsigned i = 0; i < HND_FH_LEN; i += 7) {
		bad = damaged(&root, i);
		CHECK_EQ(t_lookup(bad, "lk", NULL), NFS3ERR_BADHANDLE);
		CHECK_EQ(t_getattr(bad, NULL), NFS3ERR_BADHANDLE);
	}
	bad = root;
	bad.data.data_len = 10;
	CHECK_EQ(t_getattr(bad, NULL), NFS3ERR_BADHANDLE);
	bad.data.data_len = 0;
	bad.data.data_val = NULL;
	CHECK_EQ(t_getattr(bad, NULL), NFS3ERR_BADHANDLE);
}

static void test_write_read_commit(void)
{
	static char data[200000], back[200000];
	nfs_fh3 f, d, sl;
	WRITE3res w;
	READ3res r;
	COMMIT3args ca;
	COMMIT3res c;
	const WRITE3resok *wok = &w.WRITE3res_u.resok;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7 + (i >> 9));
	CHECK_EQ(t_create(root, "data", GUARDED, 0644, &f, NULL), NFS3_OK);

	ctx.needs_sync = 0;
	CHECK_EQ(t_write(f, 0, data, 100000, UNSTABLE, &w), NFS3_OK);
	CHECK_EQ(ctx.needs_sync, 0);
	CHECK_EQ(wok->count, 100000);
	CHECK_EQ(wok->committed, UNSTABLE);
	CHECK(memcmp(wok->verf, ctx.write_verf, 8) == 0);
	CHECK(wok->file_wcc.before.attributes_follow);
	CHECK_EQ(wok->file_wcc.before.pre_op_attr_u.attributes.size, 0);
	CHECK(wok->file_wcc.after.attributes_follow);
	CHECK_EQ(wok->file_wcc.after.post_op_attr_u.attributes.size, 100000);
	CHECK(time_gt(wok->file_wcc.after.post_op_attr_u.attributes.mtime,
		      wok->file_wcc.before.pre_op_attr_u.attributes.mtime));

	CHECK_EQ(t_write(f, 100000, data + 100000, 50000, DATA_SYNC, &w), NFS3_OK);
	CHECK_EQ(wok->committed, FILE_SYNC);
	CHECK_EQ(ctx.needs_sync, 1);
	CHECK_EQ(wok->file_wcc.before.pre_op_attr_u.attributes.size, 100000);
	CHECK_EQ(wok->file_wcc.after.post_op_attr_u.attributes.size, 150000);
	ctx.needs_sync = 0;
	CHECK_EQ(t_write(f, 150000, data + 150000, 50000, FILE_SYNC, &w), NFS3_OK);
	CHECK_EQ(wok->committed, FILE_SYNC);
	CHECK_EQ(ctx.needs_sync, 1);

	/* count must match the data; an unknown stable_how is refused. */
	{
		WRITE3args a = { .file = f, .offset = 0, .count = 10, .stable = UNSTABLE };

		a.data.data_len = 9;
		a.data.data_val = data;
		nfs3_proc_write(&ctx, &a, &w);
		CHECK_EQ(w.status, NFS3ERR_INVAL);
		CHECK(w.WRITE3res_u.resfail.file_wcc.before.attributes_follow);
		CHECK(w.WRITE3res_u.resfail.file_wcc.after.attributes_follow);
		CHECK_EQ(w.WRITE3res_u.resfail.file_wcc.after.post_op_attr_u.attributes.size,
			 200000);
		a.data.data_len = 10;
		a.stable = (stable_how)9;
		nfs3_proc_write(&ctx, &a, &w);
		CHECK_EQ(w.status, NFS3ERR_INVAL);
	}
	/* The count is clamped to wtmax. */
	ctx.wtmax = 4096;
	CHECK_EQ(t_write(f, 0, data, 10000, UNSTABLE, &w), NFS3_OK);
	CHECK_EQ(wok->count, 4096);
	ctx.wtmax = 1u << 20;

	CHECK_EQ(t_read(f, 0, sizeof(back), &r), NFS3_OK);
	CHECK_EQ(r.READ3res_u.resok.count, 200000);
	CHECK_EQ(r.READ3res_u.resok.data.data_len, 200000);
	CHECK(r.READ3res_u.resok.eof);
	CHECK(memcmp(r.READ3res_u.resok.data.data_val, data, 200000) == 0);
	CHECK(r.READ3res_u.resok.file_attributes.attributes_follow);
	CHECK_EQ(r.READ3res_u.resok.file_attributes.post_op_attr_u.attributes.size, 200000);
	CHECK_EQ(t_read(f, 1000, 500, &r), NFS3_OK);
	CHECK_EQ(r.READ3res_u.resok.count, 500);
	CHECK(!r.READ3res_u.resok.eof);
	CHECK(memcmp(r.READ3res_u.resok.data.data_val, data + 1000, 500) == 0);
	CHECK_EQ(t_read(f, 199900, 500, &r), NFS3_OK);
	CHECK_EQ(r.READ3res_u.resok.count, 100);
	CHECK(r.READ3res_u.resok.eof);
	CHECK_EQ(t_read(f, 500000, 500, &r), NFS3_OK);
	CHECK_EQ(r.READ3res_u.resok.count, 0);
	CHECK(r.READ3res_u.resok.eof);
	ctx.rtmax = 1000;
	CHECK_EQ(t_read(f, 0, 5000, &r), NFS3_OK);
	CHECK_EQ(r.READ3res_u.resok.count, 1000);
	CHECK(!r.READ3res_u.resok.eof);
	ctx.rtmax = 1u << 20;

	/* Reading or writing a directory: ISDIR; a symlink: INVAL. */
	CHECK_EQ(t_mkdir(root, "rwdir", 0755, &d), NFS3_OK);
	CHECK_EQ(t_read(d, 0, 10, &r), NFS3ERR_ISDIR);
	CHECK(r.READ3res_u.resfail.file_attributes.attributes_follow);
	CHECK_EQ(t_write(d, 0, "x", 1, UNSTABLE, NULL), NFS3ERR_ISDIR);
	CHECK_EQ(t_symlink(root, "rwlink", "data", &sl), NFS3_OK);
	CHECK_EQ(t_read(sl, 0, 10, &r), NFS3ERR_INVAL);
	CHECK_EQ(t_write(sl, 0, "x", 1, UNSTABLE, NULL), NFS3ERR_INVAL);

	memset(&ca, 0, sizeof(ca));
	ca.file = f;
	ctx.needs_sync = 0;
	nfs3_proc_commit(&ctx, &ca, &c);
	CHECK_EQ(c.status, NFS3_OK);
	CHECK(memcmp(c.COMMIT3res_u.resok.verf, ctx.write_verf, 8) == 0);
	CHECK(c.COMMIT3res_u.resok.file_wcc.before.attributes_follow);
	CHECK(c.COMMIT3res_u.resok.file_wcc.after.attributes_follow);
	CHECK_EQ(c.COMMIT3res_u.resok.file_wcc.after.post_op_attr_u.attributes.size, 200000);
	/* The dispatcher's group commit makes it durable. */
	CHECK_EQ(ctx.needs_sync, 1);
	ctx.needs_sync = 0;
}

static void test_setattr(void)
{
	SETATTR3args a;
	SETATTR3res r;
	nfs_fh3 f, d;
	fattr3 fa;
	const wcc_data *ok = &r.SETATTR3res_u.resok.obj_wcc;
	const wcc_data *fail = &r.SETATTR3res_u.resfail.obj_wcc;
	static char buf[10000];

	CHECK_EQ(t_create(root, "sa", GUARDED, 0644, &f, NULL), NFS3_OK);
	CHECK_EQ(t_write(f, 0, buf, sizeof(buf), UNSTABLE, NULL), NFS3_OK);

	memset(&a, 0, sizeof(a));
	a.object = f;
	a.new_attributes.mode.set_it = TRUE;
	a.new_attributes.mode.set_mode3_u.mode = 0100600; /* type bits are ignored */
	ctx.needs_sync = 0;
	nfs3_proc_setattr(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK_EQ(ctx.needs_sync, 1);
	CHECK(ok->before.attributes_follow && ok->after.attributes_follow);
	CHECK_EQ(ok->after.post_op_attr_u.attributes.mode, 0600);
	CHECK(time_gt(ok->after.post_op_attr_u.attributes.ctime,
		      ok->before.pre_op_attr_u.attributes.ctime));

	/* Truncation: pre-op size 10000, post-op 100. */
	memset(&a, 0, sizeof(a));
	a.object = f;
	a.new_attributes.size.set_it = TRUE;
	a.new_attributes.size.set_size3_u.size = 100;
	nfs3_proc_setattr(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK_EQ(ok->before.pre_op_attr_u.attributes.size, 10000);
	CHECK_EQ(ok->after.post_op_attr_u.attributes.size, 100);
	CHECK(time_gt(ok->after.post_op_attr_u.attributes.mtime,
		      ok->before.pre_op_attr_u.attributes.mtime));

	/* The guard: a wrong ctime is NOT_SYNC and changes nothing. */
	CHECK_EQ(t_getattr(f, &fa), NFS3_OK);
	memset(&a, 0, sizeof(a));
	a.object = f;
	a.new_attributes.size.set_it = TRUE;
	a.new_attributes.size.set_size3_u.size = 5;
	a.guard.check = TRUE;
	a.guard.sattrguard3_u.obj_ctime = fa.ctime;
	a.guard.sattrguard3_u.obj_ctime.nseconds ^= 1;
	ctx.needs_sync = 0;
	nfs3_proc_setattr(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3ERR_NOT_SYNC);
	CHECK_EQ(ctx.needs_sync, 0);
	CHECK(fail->before.attributes_follow && fail->after.attributes_follow);
	CHECK_EQ(fail->after.post_op_attr_u.attributes.size, 100);
	CHECK_EQ(fail->before.pre_op_attr_u.attributes.size, 100);
	a.guard.sattrguard3_u.obj_ctime = fa.ctime;
	nfs3_proc_setattr(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK_EQ(ok->after.post_op_attr_u.attributes.size, 5);

	/* Times: the client's, then the server's. */
	memset(&a, 0, sizeof(a));
	a.object = f;
	a.new_attributes.atime.set_it = SET_TO_CLIENT_TIME;
	a.new_attributes.atime.set_atime_u.atime.seconds = 12345;
	a.new_attributes.atime.set_atime_u.atime.nseconds = 678;
	a.new_attributes.mtime.set_it = SET_TO_CLIENT_TIME;
	a.new_attributes.mtime.set_mtime_u.mtime.seconds = 23456;
	a.new_attributes.mtime.set_mtime_u.mtime.nseconds = 789;
	nfs3_proc_setattr(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK_EQ(t_getattr(f, &fa), NFS3_OK);
	CHECK_EQ(fa.atime.seconds, 12345);
	CHECK_EQ(fa.atime.nseconds, 678);
	CHECK_EQ(fa.mtime.seconds, 23456);
	CHECK_EQ(fa.mtime.nseconds, 789);
	a.new_attributes.atime.set_it = SET_TO_SERVER_TIME;
	a.new_attributes.mtime.set_it = SET_TO_SERVER_TIME;
	nfs3_proc_setattr(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK_EQ(t_getattr(f, &fa), NFS3_OK);
	CHECK(fa.atime.seconds > 1000000000u);
	CHECK(fa.mtime.seconds > 1000000000u);
	a.new_attributes.mtime.set_it = SET_TO_CLIENT_TIME;
	a.new_attributes.mtime.set_mtime_u.mtime.nseconds = 1000000000;
	nfs3_proc_setattr(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3ERR_INVAL);
	CHECK(fail->before.attributes_follow && fail->after.attributes_follow);

	/* Owner: root may chown. */
	memset(&a, 0, sizeof(a));
	a.object = f;
	a.new_attributes.uid.set_it = TRUE;
	a.new_attributes.uid.set_uid3_u.uid = 1000;
	a.new_attributes.gid.set_it = TRUE;
	a.new_attributes.gid.set_gid3_u.gid = 1000;
	nfs3_proc_setattr(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK_EQ(ok->after.post_op_attr_u.attributes.uid, 1000);
	CHECK_EQ(ok->after.post_op_attr_u.attributes.gid, 1000);
	/* ... another user may not. */
	ctx.cred = (struct fs_cred){ .uid = 2000, .gid = 2000 };
	a.new_attributes.uid.set_uid3_u.uid = 2000;
	nfs3_proc_setattr(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3ERR_PERM);
	ctx.cred = cred_root;

	/* A directory's size: ISDIR. */
	CHECK_EQ(t_mkdir(root, "sadir", 0755, &d), NFS3_OK);
	memset(&a, 0, sizeof(a));
	a.object = d;
	a.new_attributes.size.set_it = TRUE;
	nfs3_proc_setattr(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3ERR_ISDIR);
}

static void test_access(void)
{
	const uint32_t all = ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND |
			     ACCESS3_DELETE | ACCESS3_EXECUTE;
	ACCESS3args a = { .access = all };
	ACCESS3res r;
	nfs_fh3 f, d, x;

	CHECK_EQ(t_create(root, "acc", GUARDED, 0644, &f, NULL), NFS3_OK);
	a.object = f;
	nfs3_proc_access(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK_EQ(r.ACCESS3res_u.resok.access, ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND);
	CHECK(r.ACCESS3res_u.resok.obj_attributes.attributes_follow);
	a.object = root;
	nfs3_proc_access(&ctx, &a, &r);
	CHECK_EQ(r.ACCESS3res_u.resok.access,
		 ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE);
	a.access = ACCESS3_LOOKUP;
	nfs3_proc_access(&ctx, &a, &r);
	CHECK_EQ(r.ACCESS3res_u.resok.access, ACCESS3_LOOKUP);
	a.access = all;

	/* A read-only export grants no change. */
	ctx.rdonly = 1;
	nfs3_proc_access(&ctx, &a, &r);
	CHECK_EQ(r.ACCESS3res_u.resok.access, ACCESS3_READ | ACCESS3_LOOKUP);
	ctx.rdonly = 0;

	/* Another user on a 0700 directory of root's: nothing, and ACCES. */
	CHECK_EQ(t_mkdir(root, "private", 0700, &d), NFS3_OK);
	CHECK_EQ(t_create(d, "inside", GUARDED, 0644, &x, NULL), NFS3_OK);
	ctx.cred = cred_user;
	a.object = d;
	nfs3_proc_access(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK_EQ(r.ACCESS3res_u.resok.access, 0);
	CHECK_EQ(t_lookup(d, "inside", NULL), NFS3ERR_ACCES);
	CHECK_EQ(t_create(d, "mine", GUARDED, 0644, NULL, NULL), NFS3ERR_ACCES);
	CHECK_EQ(t_mkdir(d, "mydir", 0755, NULL), NFS3ERR_ACCES);
	CHECK_EQ(t_remove(d, "inside"), NFS3ERR_ACCES);
	{
		READDIR3res rr;
		CHECK_EQ(t_readdir(d, 0, NULL, 4096, &rr), NFS3ERR_ACCES);
		CHECK(rr.READDIR3res_u.resfail.dir_attributes.attributes_follow);
	}
	ctx.cred = cred_root;

	/* The owner writes the file it created read-only (cp of a 0444
	 * file), as NFS callers may (dispatch sets the override); nobody
	 * else does, and without the override not even the owner. */
	{
		struct fs_cred owner = cred_user, other = { .uid = 2000, .gid = 2000 };
		nfs_fh3 sd, ro;
		owner.flags = other.flags = FS_CRED_OWNER_OVERRIDE;
		CHECK_EQ(t_mkdir(root, "shared", 0777, &sd), NFS3_OK);
		ctx.cred = owner;
		CHECK_EQ(t_create(sd, "ro", GUARDED, 0444, &ro, NULL), NFS3_OK);
		CHECK_EQ(t_write(ro, 0, "abc", 3, FILE_SYNC, NULL), NFS3_OK);
		ctx.cred = other;
		CHECK_EQ(t_write(ro, 0, "abc", 3, FILE_SYNC, NULL), NFS3ERR_ACCES);
		ctx.cred = cred_user;
		CHECK_EQ(t_write(ro, 0, "abc", 3, FILE_SYNC, NULL), NFS3ERR_ACCES);
		ctx.cred = cred_root;
		ctx.needs_sync = 0;
	}
}

static void test_symlink_readlink(void)
{
	static char longtarget[FS_SYMLINK_MAX + 1];
	READLINK3args a;
	READLINK3res r;
	SYMLINK3args sa;
	SYMLINK3res sr;
	nfs_fh3 sl, f;

	memset(&sa, 0, sizeof(sa));
	sa.where.dir = root;
	sa.where.name = "sl";
	sa.symlink.symlink_data = "some/where/else";
	ctx.needs_sync = 0;
	nfs3_proc_symlink(&ctx, &sa, &sr);
	CHECK_EQ(sr.status, NFS3_OK);
	CHECK_EQ(ctx.needs_sync, 1);
	CHECK(sr.SYMLINK3res_u.resok.obj.handle_follows);
	CHECK_EQ(sr.SYMLINK3res_u.resok.obj_attributes.post_op_attr_u.attributes.type, NF3LNK);
	CHECK_EQ(sr.SYMLINK3res_u.resok.obj_attributes.post_op_attr_u.attributes.size, 15);
	CHECK(sr.SYMLINK3res_u.resok.dir_wcc.before.attributes_follow);
	CHECK(sr.SYMLINK3res_u.resok.dir_wcc.after.attributes_follow);
	sl = sr.SYMLINK3res_u.resok.obj.post_op_fh3_u.handle;
	nfs3_proc_symlink(&ctx, &sa, &sr);
	CHECK_EQ(sr.status, NFS3ERR_EXIST);

	a.symlink = sl;
	nfs3_proc_readlink(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK(strcmp(r.READLINK3res_u.resok.data, "some/where/else") == 0);
	CHECK(r.READLINK3res_u.resok.symlink_attributes.attributes_follow);

	/* The longest target, stored out of the entry. */
	memset(longtarget, 'p', FS_SYMLINK_MAX);
	CHECK_EQ(t_symlink(root, "longsl", longtarget, &sl), NFS3_OK);
	a.symlink = sl;
	nfs3_proc_readlink(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3_OK);
	CHECK(strcmp(r.READLINK3res_u.resok.data, longtarget) == 0);

	/* READLINK of a file: INVAL; an empty target: INVAL. */
	CHECK_EQ(t_create(root, "notlink", GUARDED, 0644, &f, NULL), NFS3_OK);
	a.symlink = f;
	nfs3_proc_readlink(&ctx, &a, &r);
	CHECK_EQ(r.status, NFS3ERR_INVAL);
	CHECK(r.READLINK3res_u.resfail.symlink_attributes.attributes_follow);
	CHECK_EQ(t_symlink(root, "empty", "", NULL), NFS3ERR_INVAL);
}

static void test_mkdir_mknod(void)
{
	MKDIR3args ma;
	MKDIR3res mr;
	MKNOD3res r;
	fattr3 before, after, fa;
	nfs_fh3 d, n;

	CHECK_EQ(t_getattr(root, &before), NFS3_OK);
	memset(&ma, 0, sizeof(ma));
	ma.where.dir = root;
	ma.where.name = "md";
	ctx.needs_sync = 0;
	nfs3_proc_mkdir(&ctx, &ma, &mr);
	CHECK_EQ(mr.status, NFS3_OK);
	CHECK_EQ(ctx.needs_sync, 1);
	CHECK_EQ(mr.MKDIR3res_u.resok.obj_attributes.post_op_attr_u.attributes.type, NF3DIR);
	CHECK_EQ(mr.MKDIR3res_u.resok.obj_attributes.post_op_attr_u.attributes.mode, 0755);
	CHECK(mr.MKDIR3res_u.resok.dir_wcc.before.attributes_follow);
	CHECK(time_gt(mr.MKDIR3res_u.resok.dir_wcc.after.post_op_attr_u.attributes.mtime,
		      mr.MKDIR3res_u.resok.dir_wcc.before.pre_op_attr_u.attributes.mtime));
	CHECK_EQ(t_getattr(root, &after), NFS3_OK);
	CHECK_EQ(after.nlink, before.nlink + 1);
	nfs3_proc_mkdir(&ctx, &ma, &mr);
	CHECK_EQ(mr.status, NFS3ERR_EXIST);
	CHECK(mr.MKDIR3res_u.resfail.dir_wcc.before.attributes_follow);
	CHECK(mr.MKDIR3res_u.resfail.dir_wcc.after.attributes_follow);
	CHECK_EQ(t_mkdir(root, "md2", 0710, &d), NFS3_OK);
	CHECK_EQ(t_getattr(d, &fa), NFS3_OK);
	CHECK_EQ(fa.mode, 0710);

	CHECK_EQ(t_mknod(root, "chr", NF3CHR, 5, 7, &r), NFS3_OK);
	fa = r.MKNOD3res_u.resok.obj_attributes.post_op_attr_u.attributes;
	CHECK_EQ(fa.type, NF3CHR);
	CHECK_EQ(fa.mode, 0620);
	CHECK_EQ(fa.rdev.specdata1, 5);
	CHECK_EQ(fa.rdev.specdata2, 7);
	CHECK(r.MKNOD3res_u.resok.obj.handle_follows);
	n = r.MKNOD3res_u.resok.obj.post_op_fh3_u.handle;
	CHECK_EQ(t_getattr(n, &fa), NFS3_OK);
	CHECK_EQ(fa.rdev.specdata1, 5);
	CHECK_EQ(t_mknod(root, "blk", NF3BLK, 8, 1, &r), NFS3_OK);
	CHECK_EQ(r.MKNOD3res_u.resok.obj_attributes.post_op_attr_u.attributes.type, NF3BLK);
	CHECK_EQ(t_mknod(root, "fifo", NF3FIFO, 0, 0, &r), NFS3_OK);
	CHECK_EQ(r.MKNOD3res_u.resok.obj_attributes.post_op_attr_u.attributes.type, NF3FIFO);
	CHECK_EQ(r.MKNOD3res_u.resok.obj_attributes.post_op_attr_u.attributes.mode, 0644);
	CHECK_EQ(t_mknod(root, "sock", NF3SOCK, 0, 0, &r), NFS3_OK);
	CHECK_EQ(r.MKNOD3res_u.resok.obj_attributes.post_op_attr_u.attributes.type, NF3SOCK);
	CHECK_EQ(t_mknod(root, "chr", NF3CHR, 5, 7, &r), NFS3ERR_EXIST);
	/* Devices are root's to make; a user may make a FIFO. */
	{
		nfs_fh3 pub;
		CHECK_EQ(t_mkdir(root, "pub", 0777, &pub), NFS3_OK);
		ctx.cred = cred_user;
		CHECK_EQ(t_mknod(pub, "uchr", NF3CHR, 5, 7, &r), NFS3ERR_PERM);
		CHECK_EQ(t_mknod(pub, "ublk", NF3BLK, 8, 1, &r), NFS3ERR_PERM);
		CHECK_EQ(t_mknod(pub, "ufifo", NF3FIFO, 0, 0, &r), NFS3_OK);
		CHECK_EQ(t_lookup(pub, "uchr", NULL), NFS3ERR_NOENT);
		ctx.cred = cred_root;
	}

	ctx.needs_sync = 0;
	CHECK_EQ(t_mknod(root, "reg", NF3REG, 0, 0, &r), NFS3ERR_BADTYPE);
	CHECK(r.MKNOD3res_u.resfail.dir_wcc.before.attributes_follow);
	CHECK(r.MKNOD3res_u.resfail.dir_wcc.after.attributes_follow);
	CHECK_EQ(t_mknod(root, "dir", NF3DIR, 0, 0, &r), NFS3ERR_BADTYPE);
	CHECK_EQ(t_mknod(root, "lnk", NF3LNK, 0, 0, &r), NFS3ERR_BADTYPE);
	CHECK_EQ(ctx.needs_sync, 0);
	CHECK_EQ(t_lookup(root, "reg", NULL), NFS3ERR_NOENT);
}

static void test_remove_rename_link(void)
{
	REMOVE3args ra;
	REMOVE3res rr;
	RENAME3res nr;
	LINK3res lr;
	nfs_fh3 f, g, d1, d2, sub, gone;
	fattr3 fa;

	/* REMOVE with the directory's wcc; then the name is gone. */
	CHECK_EQ(t_create(root, "rm", GUARDED, 0644, &f, NULL), NFS3_OK);
	memset(&ra, 0, sizeof(ra));
	ra.object.dir = root;
	ra.object.name = "rm";
	ctx.needs_sync = 0;
	nfs3_proc_remove(&ctx, &ra, &rr);
	CHECK_EQ(rr.status, NFS3_OK);
	CHECK_EQ(ctx.needs_sync, 1);
	CHECK(rr.REMOVE3res_u.resok.dir_wcc.before.attributes_follow);
	CHECK(rr.REMOVE3res_u.resok.dir_wcc.after.attributes_follow);
	CHECK(time_gt(rr.REMOVE3res_u.resok.dir_wcc.after.post_op_attr_u.attributes.mtime,
		      rr.REMOVE3res_u.resok.dir_wcc.before.pre_op_attr_u.attributes.mtime));
	nfs3_proc_remove(&ctx, &ra, &rr);
	CHECK_EQ(rr.status, NFS3ERR_NOENT);
	CHECK(rr.REMOVE3res_u.resfail.dir_wcc.before.attributes_follow);
	CHECK(rr.REMOVE3res_u.resfail.dir_wcc.after.attributes_follow);

	/* A removed file's handle is STALE everywhere. */
	CHECK_EQ(t_getattr(f, NULL), NFS3ERR_STALE);
	{
		READ3res r;
		WRITE3res w;
		SETATTR3args sa;
		SETATTR3res sr;
		COMMIT3args ca = { .file = f };
		COMMIT3res cr;

		CHECK_EQ(t_read(f, 0, 10, &r), NFS3ERR_STALE);
		CHECK_EQ(t_write(f, 0, "x", 1, UNSTABLE, &w), NFS3ERR_STALE);
		CHECK(!w.WRITE3res_u.resfail.file_wcc.before.attributes_follow);
		memset(&sa, 0, sizeof(sa));
		sa.object = f;
		nfs3_proc_setattr(&ctx, &sa, &sr);
		CHECK_EQ(sr.status, NFS3ERR_STALE);
		nfs3_proc_commit(&ctx, &ca, &cr);
		CHECK_EQ(cr.status, NFS3ERR_STALE);
	}
	/* ... also once its slot holds a new file. */
	CHECK_EQ(t_create(root, "rm2", GUARDED, 0644, &g, NULL), NFS3_OK);
	CHECK_EQ(t_getattr(f, NULL), NFS3ERR_STALE);
	CHECK_EQ(t_getattr(g, NULL), NFS3_OK);

	/* RMDIR: not empty, not a directory, then done; REMOVE of a dir. */
	CHECK_EQ(t_mkdir(root, "full", 0755, &d1), NFS3_OK);
	CHECK_EQ(t_create(d1, "x", GUARDED, 0644, NULL, NULL), NFS3_OK);
	CHECK_EQ(t_rmdir(root, "full"), NFS3ERR_NOTEMPTY);
	CHECK_EQ(t_remove(root, "full"), NFS3ERR_ISDIR);
	CHECK_EQ(t_rmdir(root, "rm2"), NFS3ERR_NOTDIR);
	CHECK_EQ(t_rmdir(root, "no-such"), NFS3ERR_NOENT);
	CHECK_EQ(t_remove(d1, "x"), NFS3_OK);
	ctx.needs_sync = 0;
	CHECK_EQ(t_rmdir(root, "full"), NFS3_OK);
	CHECK_EQ(ctx.needs_sync, 1);
	CHECK_EQ(t_getattr(d1, NULL), NFS3ERR_STALE);
	CHECK_EQ(t_remove(g, "x"), NFS3ERR_NOTDIR);

	/* RENAME within and across directories, with both wcc. */
	CHECK_EQ(t_mkdir(root, "r1", 0755, &d1), NFS3_OK);
	CHECK_EQ(t_mkdir(root, "r2", 0755, &d2), NFS3_OK);
	CHECK_EQ(t_create(d1, "a", GUARDED, 0644, &f, NULL), NFS3_OK);
	ctx.needs_sync = 0;
	CHECK_EQ(t_rename(d1, "a", d1, "b", &nr), NFS3_OK);
	CHECK_EQ(ctx.needs_sync, 1);
	CHECK_EQ(t_lookup(d1, "a", NULL), NFS3ERR_NOENT);
	CHECK_EQ(t_lookup(d1, "b", &g), NFS3_OK);
	CHECK(same_fh(&f, &g));
	CHECK_EQ(t_rename(d1, "b", d2, "c", &nr), NFS3_OK);
	CHECK(nr.RENAME3res_u.resok.fromdir_wcc.before.attributes_follow);
	CHECK(nr.RENAME3res_u.resok.fromdir_wcc.after.attributes_follow);
	CHECK(nr.RENAME3res_u.resok.todir_wcc.before.attributes_follow);
	CHECK(nr.RENAME3res_u.resok.todir_wcc.after.attributes_follow);
	CHECK(time_gt(nr.RENAME3res_u.resok.fromdir_wcc.after.post_op_attr_u.attributes.mtime,
		      nr.RENAME3res_u.resok.fromdir_wcc.before.pre_op_attr_u.attributes.mtime));
	CHECK(time_gt(nr.RENAME3res_u.resok.todir_wcc.after.post_op_attr_u.attributes.mtime,
		      nr.RENAME3res_u.resok.todir_wcc.before.pre_op_attr_u.attributes.mtime));
	CHECK_EQ(t_lookup(d2, "c", &g), NFS3_OK);
	CHECK(same_fh(&f, &g));
	CHECK_EQ(t_rename(d1, "b", d2, "z", &nr), NFS3ERR_NOENT);
	CHECK(nr.RENAME3res_u.resfail.fromdir_wcc.after.attributes_follow);
	CHECK(nr.RENAME3res_u.resfail.todir_wcc.after.attributes_follow);
	/* Over a non-empty directory, a file over a directory, a directory
	 * into itself. */
	CHECK_EQ(t_mkdir(d1, "sub", 0755, &sub), NFS3_OK);
	CHECK_EQ(t_mkdir(d2, "busy", 0755, NULL), NFS3_OK);
	CHECK_EQ(t_create(d2, "busy/", GUARDED, 0644, NULL, NULL), NFS3ERR_INVAL);
	CHECK_EQ(t_lookup(d2, "busy", &g), NFS3_OK);
	CHECK_EQ(t_create(g, "x", GUARDED, 0644, NULL, NULL), NFS3_OK);
	CHECK_EQ(t_rename(d1, "sub", d2, "busy", NULL), NFS3ERR_NOTEMPTY);
	CHECK_EQ(t_rename(d2, "c", d2, "busy", NULL), NFS3ERR_ISDIR);
	CHECK_EQ(t_rename(d1, "sub", d2, "c", NULL), NFS3ERR_NOTDIR);
	CHECK_EQ(t_rename(root, "r1", sub, "r1", NULL), NFS3ERR_INVAL);
	CHECK_EQ(t_rename(d1, "sub", damaged(&d2, 30), "s", NULL), NFS3ERR_BADHANDLE);

	/* LINK: file attributes with the new count, the directory's wcc. */
	ctx.needs_sync = 0;
	CHECK_EQ(t_link(f, d1, "hard", &lr), NFS3_OK);
	CHECK_EQ(ctx.needs_sync, 1);
	CHECK(lr.LINK3res_u.resok.file_attributes.attributes_follow);
	CHECK_EQ(lr.LINK3res_u.resok.file_attributes.post_op_attr_u.attributes.nlink, 2);
	CHECK(lr.LINK3res_u.resok.linkdir_wcc.before.attributes_follow);
	CHECK(lr.LINK3res_u.resok.linkdir_wcc.after.attributes_follow);
	CHECK(time_gt(lr.LINK3res_u.resok.linkdir_wcc.after.post_op_attr_u.attributes.mtime,
		      lr.LINK3res_u.resok.linkdir_wcc.before.pre_op_attr_u.attributes.mtime));
	CHECK_EQ(t_link(f, d1, "hard", &lr), NFS3ERR_EXIST);
	CHECK(lr.LINK3res_u.resfail.file_attributes.attributes_follow);
	CHECK(lr.LINK3res_u.resfail.linkdir_wcc.after.attributes_follow);
	CHECK_EQ(t_link(f, f, "x", NULL), NFS3ERR_NOTDIR);
	/* A directory: ISDIR, as knfsd (link(2) says EPERM). */
	CHECK_EQ(t_link(d2, d1, "dirlink", &lr), NFS3ERR_ISDIR);
	CHECK(lr.LINK3res_u.resfail.file_attributes.attributes_follow);
	CHECK(lr.LINK3res_u.resfail.linkdir_wcc.after.attributes_follow);
	CHECK_EQ(t_lookup(d1, "dirlink", NULL), NFS3ERR_NOENT);
	CHECK_EQ(t_lookup(d1, "hard", &g), NFS3_OK);
	CHECK(same_fh(&f, &g));
	/* The file lives while a link remains. */
	CHECK_EQ(t_remove(d2, "c"), NFS3_OK);
	CHECK_EQ(t_getattr(f, &fa), NFS3_OK);
	CHECK_EQ(fa.nlink, 1);
	gone = f;
	CHECK_EQ(t_remove(d1, "hard"), NFS3_OK);
	CHECK_EQ(t_link(gone, d1, "again", NULL), NFS3ERR_STALE);
}

static void test_rofs(void)
{
	SETATTR3args sa;
	SETATTR3res sr;
	CREATE3res cr;
	MKNOD3res mr;
	COMMIT3args ca;
	COMMIT3res cm;
	READ3res rd;
	nfs_fh3 f, d;

	CHECK_EQ(t_create(root, "ro", GUARDED, 0644, &f, NULL), NFS3_OK);
	CHECK_EQ(t_mkdir(root, "rodir", 0755, &d), NFS3_OK);
	CHECK_EQ(t_write(f, 0, "abc", 3, UNSTABLE, NULL), NFS3_OK);
	ctx.rdonly = 1;
	ctx.needs_sync = 0;
	memset(&sa, 0, sizeof(sa));
	sa.object = f;
	nfs3_proc_setattr(&ctx, &sa, &sr);
	CHECK_EQ(sr.status, NFS3ERR_ROFS);
	CHECK(sr.SETATTR3res_u.resfail.obj_wcc.before.attributes_follow);
	CHECK(sr.SETATTR3res_u.resfail.obj_wcc.after.attributes_follow);
	CHECK_EQ(t_write(f, 0, "x", 1, FILE_SYNC, NULL), NFS3ERR_ROFS);
	CHECK_EQ(t_create(root, "new", GUARDED, 0644, NULL, &cr), NFS3ERR_ROFS);
	CHECK(cr.CREATE3res_u.resfail.dir_wcc.before.attributes_follow);
	CHECK(cr.CREATE3res_u.resfail.dir_wcc.after.attributes_follow);
	CHECK_EQ(t_create(root, "new", EXCLUSIVE, 0, NULL, NULL), NFS3ERR_ROFS);
	CHECK_EQ(t_mkdir(root, "newdir", 0755, NULL), NFS3ERR_ROFS);
	CHECK_EQ(t_symlink(root, "newlink", "x", NULL), NFS3ERR_ROFS);
	CHECK_EQ(t_mknod(root, "newfifo", NF3FIFO, 0, 0, &mr), NFS3ERR_ROFS);
	CHECK_EQ(t_remove(root, "ro"), NFS3ERR_ROFS);
	CHECK_EQ(t_rmdir(root, "rodir"), NFS3ERR_ROFS);
	CHECK_EQ(t_rename(root, "ro", root, "ro2", NULL), NFS3ERR_ROFS);
	CHECK_EQ(t_link(f, root, "ro3", NULL), NFS3ERR_ROFS);
	CHECK_EQ(ctx.needs_sync, 0);
	/* Reading and COMMIT are fine. */
	CHECK_EQ(t_read(f, 0, 3, &rd), NFS3_OK);
	CHECK_EQ(rd.READ3res_u.resok.count, 3);
	memset(&ca, 0, sizeof(ca));
	ca.file = f;
	nfs3_proc_commit(&ctx, &ca, &cm);
	CHECK_EQ(cm.status, NFS3_OK);
	ctx.rdonly = 0;
	CHECK_EQ(t_lookup(root, "ro", NULL), NFS3_OK);
	CHECK_EQ(t_lookup(root, "new", NULL), NFS3ERR_NOENT);
	CHECK_EQ(t_lookup(root, "rodir", NULL), NFS3_OK);
}

static void test_fs_procs(void)
{
	FSSTAT3args sa = { .fsroot = root };
	FSSTAT3res sr;
	FSINFO3args ia = { .fsroot = root };
	FSINFO3res ir;
	PATHCONF3args pa = { .object = root };
	PATHCONF3res pr;
	const FSINFO3resok *i = &ir.FSINFO3res_u.resok;
	const PATHCONF3resok *p = &pr.PATHCONF3res_u.resok;
	const FSSTAT3resok *s = &sr.FSSTAT3res_u.resok;
	struct fs_statfs st;

	nfs3_proc_fsstat(&ctx, &sa, &sr);
	CHECK_EQ(sr.status, NFS3_OK);
	CHECK_EQ(fs_statfs(ctx.vol, &st), 0);
	CHECK(s->obj_attributes.attributes_follow);
	CHECK(s->tbytes == st.total_blocks * st.block_size);
	CHECK(s->fbytes == st.free_blocks * st.block_size);
	CHECK(s->tbytes > 0 && s->fbytes > 0 && s->fbytes <= s->tbytes);
	CHECK(s->abytes == s->fbytes);
	CHECK(s->tfiles == st.total_inodes);
	CHECK(s->ffiles == st.free_inodes && s->afiles == st.free_inodes);
	CHECK(s->ffiles > 0 && s->ffiles < s->tfiles);
	CHECK_EQ(s->invarsec, 0);

	nfs3_proc_fsinfo(&ctx, &ia, &ir);
	CHECK_EQ(ir.status, NFS3_OK);
	CHECK(i->obj_attributes.attributes_follow);
	CHECK_EQ(i->rtmax, 1u << 20);
	CHECK_EQ(i->rtpref, 1u << 20);
	CHECK_EQ(i->rtmult, 4096);
	CHECK_EQ(i->wtmax, 1u << 20);
	CHECK_EQ(i->wtpref, 1u << 20);
	CHECK_EQ(i->wtmult, 4096);
	CHECK_EQ(i->dtpref, 65536);
	CHECK(i->maxfilesize == 1ull << 44);
	CHECK_EQ(i->time_delta.seconds, 0);
	CHECK_EQ(i->time_delta.nseconds, 1);
	CHECK_EQ(i->properties, FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME);

	nfs3_proc_pathconf(&ctx, &pa, &pr);
	CHECK_EQ(pr.status, NFS3_OK);
	CHECK(p->obj_attributes.attributes_follow);
	CHECK_EQ(p->linkmax, 65000);
	CHECK_EQ(p->name_max, 255);
	CHECK(p->no_trunc);
	CHECK(p->chown_restricted);
	CHECK(!p->case_insensitive);
	CHECK(p->case_preserving);

	sa.fsroot = damaged(&root, 3);
	nfs3_proc_fsstat(&ctx, &sa, &sr);
	CHECK_EQ(sr.status, NFS3ERR_BADHANDLE);
	ia.fsroot = damaged(&root, 39);
	nfs3_proc_fsinfo(&ctx, &ia, &ir);
	CHECK_EQ(ir.status, NFS3ERR_BADHANDLE);
	pa.object = damaged(&root, 12);
	nfs3_proc_pathconf(&ctx, &pa, &pr);
	CHECK_EQ(pr.status, NFS3ERR_BADHANDLE);
}

/* --- READDIR and READDIRPLUS --------------------------------------------- */

#define NDIRENT 60

struct seen {
	char names[NDIRENT + 2][64];
	int count[NDIRENT + 2];
};

static void seen_init(struct seen *s)
{
	memset(s, 0, sizeof(*s));
	strcpy(s->names[0], ".");
	strcpy(s->names[1], "..");
	for (int i = 0; i < NDIRENT; i++) {
		/* lengths 1..40 exercise every XDR padding */
		int len = 1 + i % 40;
		snprintf(s->names[i + 2], sizeof(s->names[i + 2]), "%02d", i);
		memset(s->names[i + 2] + 2, 'a' + i % 26, (size_t)(len > 2 ? len - 2 : 0));
		s->names[i + 2][len > 2 ? len : 2] = '\0';
	}
}

static void seen_mark(struct seen *s, const char *name)
{
	for (int i = 0; i < NDIRENT + 2; i++)
		if (strcmp(s->names[i], name) == 0) {
			s->count[i]++;
			return;
		}
	CHECK(!"an entry that was never made");
}

static int seen_once(const struct seen *s)
{
	for (int i = 0; i < NDIRENT + 2; i++)
		if (s->count[i] != 1)
			return 0;
	return 1;
}

static size_t pad4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

/* Pages through dir with READDIR count bytes; every reply must fit count
 * by the real encoder's measure, and must have stopped only when the next
 * entry would not have fitted. */
static int page_readdir(nfs_fh3 dir, uint32_t count, struct seen *s)
{
	char verf[NFS3_COOKIEVERFSIZE] = { 0 };
	cookie3 cookie = 0;
	int pages = 0;
	unsigned long prev_size = 0;

	for (;;) {
		READDIR3res r;
		entry3 *e, *last = NULL;
		unsigned long size;

		if (t_readdir(dir, cookie, verf, count, &r) != NFS3_OK) {
			CHECK_EQ(r.status, NFS3_OK);
			return pages;
		}
		pages++;
		size = XDR_SIZE(xdr_READDIR3res, &r);
		CHECK(size <= count);
		CHECK(r.READDIR3res_u.resok.dir_attributes.attributes_follow);
		for (e = r.READDIR3res_u.resok.reply.entries; e; e = e->nextentry) {
			seen_mark(s, e->name);
			/* the previous page stopped because this did not fit */
			if (!last && pages > 1)
				CHECK(prev_size + 24 + pad4(strlen(e->name)) > count);
			last = e;
		}
		CHECK(last != NULL || r.READDIR3res_u.resok.reply.eof);
		memcpy(verf, r.READDIR3res_u.resok.cookieverf, sizeof(verf));
		if (r.READDIR3res_u.resok.reply.eof)
			return pages;
		cookie = last->cookie;
		prev_size = size;
		if (pages > 1000) {
			CHECK(!"readdir does not end");
			return pages;
		}
	}
}

static int page_readdirplus(nfs_fh3 dir, uint32_t dircount, uint32_t maxcount, struct seen *s)
{
	char verf[NFS3_COOKIEVERFSIZE] = { 0 };
	cookie3 cookie = 0;
	int pages = 0;
	unsigned long prev_size = 0, prev_dsize = 0;

	for (;;) {
		READDIRPLUS3res r;
		entryplus3 *e, *last = NULL;
		unsigned long size, dsize = 0;

		if (t_readdirplus(dir, cookie, verf, dircount, maxcount, &r) != NFS3_OK) {
			CHECK_EQ(r.status, NFS3_OK);
			return pages;
		}
		pages++;
		size = XDR_SIZE(xdr_READDIRPLUS3res, &r);
		CHECK(size <= maxcount);
		for (e = r.READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
			size_t d = 8 + 4 + pad4(strlen(e->name)) + 8;
			struct fs_ino ino;
			LOOKUP3res lr;
			LOOKUP3args la = { .what = { .dir = dir, .name = e->name } };

			if (!last && pages > 1)
				CHECK(prev_size + 4 + d + 88 + 48 > maxcount ||
				      prev_dsize + d > dircount);
			dsize += d;
			seen_mark(s, e->name);
			/* Every entry, "." and ".." too, has its handle and
			 * attributes, and they are the ones LOOKUP gives. */
			CHECK(e->name_attributes.attributes_follow);
			CHECK(e->name_handle.handle_follows);
			CHECK(e->name_attributes.post_op_attr_u.attributes.fileid == e->fileid);
			CHECK_EQ(nfs3_fh_to_ino(&ctx, &e->name_handle.post_op_fh3_u.handle, &ino),
				 0);
			CHECK(ino.num == e->fileid);
			nfs3_proc_lookup(&ctx, &la, &lr);
			CHECK_EQ(lr.status, NFS3_OK);
			CHECK(same_fh(&lr.LOOKUP3res_u.resok.object,
				      &e->name_handle.post_op_fh3_u.handle));
			last = e;
		}
		CHECK(dsize <= dircount);
		CHECK(last != NULL || r.READDIRPLUS3res_u.resok.reply.eof);
		memcpy(verf, r.READDIRPLUS3res_u.resok.cookieverf, sizeof(verf));
		if (r.READDIRPLUS3res_u.resok.reply.eof)
			return pages;
		cookie = last->cookie;
		prev_size = size;
		prev_dsize = dsize;
		if (pages > 1000) {
			CHECK(!"readdirplus does not end");
			return pages;
		}
	}
}

/* An export of a subdirectory: ".." at its top is the top itself, in
 * LOOKUP and in listings, so nothing outside is reached by name. */
static void test_export_confined(void)
{
	nfs_fh3 top, sub, dotdot;
	struct fs_ino topino;
	READDIR3res r;
	fattr3 ta;
	int seen = 0;

	CHECK_EQ(t_mkdir(root, "exported", 0755, &top), NFS3_OK);
	CHECK_EQ(t_mkdir(top, "sub", 0755, &sub), NFS3_OK);
	CHECK_EQ(nfs3_fh_to_ino(&ctx, &top, &topino), 0);
	CHECK_EQ(t_getattr(top, &ta), NFS3_OK);
	ctx.export_root = topino;
	CHECK_EQ(t_lookup(top, "..", &dotdot), NFS3_OK);
	CHECK(same_fh(&dotdot, &top));
	CHECK_EQ(t_lookup(sub, "..", &dotdot), NFS3_OK);
	CHECK(same_fh(&dotdot, &top));
	CHECK_EQ(t_readdir(top, 0, NULL, 4096, &r), NFS3_OK);
	for (entry3 *e = r.READDIR3res_u.resok.reply.entries; e; e = e->nextentry)
		if (!strcmp(e->name, "..")) {
			CHECK_EQ(e->fileid, ta.fileid);
			seen++;
		}
	CHECK_EQ(seen, 1);
	/* The volume's root export: ".." of the root is the root, as before. */
	memset(&ctx.export_root, 0, sizeof(ctx.export_root));
	CHECK_EQ(t_lookup(top, "..", &dotdot), NFS3_OK);
	CHECK(same_fh(&dotdot, &root));
	arena_release(&ctx.arena);
}

static void test_readdir(void)
{
	static const uint32_t counts[] = { 172, 180, 200, 333, 512, 1024, 65536 };
	/* the longest name (40) needs count 172, dircount 60, maxcount 308 */
	static const uint32_t plus[][2] = { { 60, 4096 }, { 64, 65536 }, { 4096, 308 },
					    { 100, 700 }, { 65536, 65536 } };
	struct seen s;
	READDIR3res r;
	READDIRPLUS3res pr;
	nfs_fh3 dir, f;
	entry3 *e;
	char verf[NFS3_COOKIEVERFSIZE];
	int n;

	CHECK_EQ(t_mkdir(root, "listing", 0755, &dir), NFS3_OK);
	seen_init(&s);
	for (int i = 0; i < NDIRENT; i++)
		CHECK_EQ(t_create(dir, s.names[i + 2], GUARDED, 0644, NULL, NULL), NFS3_OK);

	/* All at once. */
	CHECK_EQ(t_readdir(dir, 0, NULL, 65536, &r), NFS3_OK);
	CHECK(r.READDIR3res_u.resok.reply.eof);
	n = 0;
	for (e = r.READDIR3res_u.resok.reply.entries; e; e = e->nextentry) {
		seen_mark(&s, e->name);
		n++;
	}
	CHECK_EQ(n, NDIRENT + 2);
	CHECK(seen_once(&s));
	CHECK(strcmp(r.READDIR3res_u.resok.reply.entries->name, ".") == 0);
	CHECK(strcmp(r.READDIR3res_u.resok.reply.entries->nextentry->name, "..") == 0);
	memcpy(verf, r.READDIR3res_u.resok.cookieverf, sizeof(verf));

	/* Paging with small counts. */
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		memset(s.count, 0, sizeof(s.count));
		n = page_readdir(dir, counts[i], &s);
		CHECK(seen_once(&s));
		if (counts[i] <= 200)
			CHECK(n > 10);
	}
	for (size_t i = 0; i < sizeof(plus) / sizeof(plus[0]); i++) {
		memset(s.count, 0, sizeof(s.count));
		n = page_readdirplus(dir, plus[i][0], plus[i][1], &s);
		CHECK(seen_once(&s));
		if (plus[i][0] <= 64 || plus[i][1] <= 700)
			CHECK(n > 5);
	}

	/* The exact edge: "." alone costs 28 bytes over the fixed 108. */
	CHECK_EQ(t_readdir(dir, 0, NULL, 136, &r), NFS3_OK);
	CHECK(r.READDIR3res_u.resok.reply.entries != NULL &&
	      r.READDIR3res_u.resok.reply.entries->nextentry == NULL);
	CHECK_EQ(XDR_SIZE(xdr_READDIR3res, &r), 136);
	CHECK_EQ(t_readdir(dir, 0, NULL, 135, &r), NFS3ERR_TOOSMALL);
	CHECK(r.READDIR3res_u.resfail.dir_attributes.attributes_follow);
	CHECK_EQ(t_readdir(dir, 0, NULL, 10, &r), NFS3ERR_TOOSMALL);
	CHECK_EQ(t_readdirplus(dir, 0, NULL, 24, 272, &pr), NFS3_OK);
	CHECK(pr.READDIRPLUS3res_u.resok.reply.entries != NULL &&
	      pr.READDIRPLUS3res_u.resok.reply.entries->nextentry == NULL);
	CHECK_EQ(XDR_SIZE(xdr_READDIRPLUS3res, &pr), 272);
	CHECK_EQ(t_readdirplus(dir, 0, NULL, 24, 271, &pr), NFS3ERR_TOOSMALL);
	CHECK_EQ(t_readdirplus(dir, 0, NULL, 23, 4096, &pr), NFS3ERR_TOOSMALL);
	CHECK_EQ(t_readdirplus(dir, 0, NULL, 10, 10, &pr), NFS3ERR_TOOSMALL);
	CHECK(pr.READDIRPLUS3res_u.resfail.dir_attributes.attributes_follow);

	/* Past the end: no entries, eof. */
	CHECK_EQ(t_readdir(dir, 0, NULL, 65536, &r), NFS3_OK);
	for (e = r.READDIR3res_u.resok.reply.entries; e->nextentry; e = e->nextentry)
		;
	{
		READDIR3res r2;

		CHECK_EQ(t_readdir(dir, e->cookie, verf, 4096, &r2), NFS3_OK);
		CHECK(r2.READDIR3res_u.resok.reply.entries == NULL);
		CHECK(r2.READDIR3res_u.resok.reply.eof);
		/* ... even with room for the fixed part alone. */
		CHECK_EQ(t_readdir(dir, e->cookie, verf, 108, &r2), NFS3_OK);
		CHECK(r2.READDIR3res_u.resok.reply.eof);
	}

	/* Cookies: a verifier of another directory, a cookie of nowhere. */
	e = r.READDIR3res_u.resok.reply.entries->nextentry->nextentry;
	verf[0] ^= 1;
	CHECK_EQ(t_readdir(dir, e->cookie, verf, 4096, &r), NFS3ERR_BAD_COOKIE);
	CHECK(r.READDIR3res_u.resfail.dir_attributes.attributes_follow);
	CHECK_EQ(t_readdirplus(dir, e->cookie, verf, 4096, 4096, &pr), NFS3ERR_BAD_COOKIE);
	verf[0] ^= 1;
	CHECK_EQ(t_readdir(dir, (cookie3)1000 << 40, verf, 4096, &r), NFS3ERR_BAD_COOKIE);
	CHECK_EQ(t_readdir(dir, 12345, verf, 4096, &r), NFS3ERR_BAD_COOKIE);

	/* Not a directory; a bad handle. */
	CHECK_EQ(t_lookup(dir, s.names[2], &f), NFS3_OK);
	CHECK_EQ(t_readdir(f, 0, NULL, 4096, &r), NFS3ERR_NOTDIR);
	CHECK_EQ(t_readdirplus(f, 0, NULL, 4096, 4096, &pr), NFS3ERR_NOTDIR);
	CHECK_EQ(t_readdir(damaged(&dir, 20), 0, NULL, 4096, &r), NFS3ERR_BADHANDLE);

	/* An empty directory lists "." and "..", their handles included. */
	{
		nfs_fh3 empty;
		entryplus3 *p;

		CHECK_EQ(t_mkdir(root, "empty", 0755, &empty), NFS3_OK);
		CHECK_EQ(t_readdirplus(empty, 0, NULL, 4096, 4096, &pr), NFS3_OK);
		CHECK(pr.READDIRPLUS3res_u.resok.reply.eof);
		p = pr.READDIRPLUS3res_u.resok.reply.entries;
		CHECK(p && strcmp(p->name, ".") == 0);
		CHECK(p && same_fh(&p->name_handle.post_op_fh3_u.handle, &empty));
		p = p ? p->nextentry : NULL;
		CHECK(p && strcmp(p->name, "..") == 0);
		CHECK(p && same_fh(&p->name_handle.post_op_fh3_u.handle, &root));
		CHECK(p && p->nextentry == NULL);
	}
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(image, sizeof(image), "%s/nfs3_proc_test.%d.img", tmp ? tmp : "/tmp",
		 (int)getpid());
	setup();
	test_status_map();
	test_null_getattr();
	test_create();
	test_create_ids();
	test_lookup();
	test_write_read_commit();
	test_setattr();
	test_access();
	test_symlink_readlink();
	test_mkdir_mknod();
	test_remove_rename_link();
	test_rofs();
	test_fs_procs();
	test_readdir();
	test_export_confined();
	teardown();
	unlink(image);
	return test_done("nfs3_proc");
}
