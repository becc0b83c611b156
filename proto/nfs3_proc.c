/* The NFSv3 procedures of RFC 1813 over the fs/ API: each takes decoded
 * arguments and fills its result, status first, with the weak cache
 * consistency data of every change (attributes before and after) and memory
 * only from ctx->arena. A procedure that changed the volume sets
 * ctx->needs_sync: the dispatcher makes the change durable before replying. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/nfs3_proc.h"

#define NFS3_FILE_MODE 0644 /* CREATE and MKNOD without a mode */
#define NFS3_DIR_MODE 0755  /* MKDIR without a mode */
#define NFS3_LINK_MODE 0777 /* SYMLINK without a mode */
#define NFS3_MAXFILESIZE (1ull << 44)
#define NFS3_LINKMAX 65000

/* XDR sizes, in bytes, of the reply parts the READDIR budgets count. */
#define XDR_FATTR3 84
#define XDR_POST_OP_ATTR (4 + XDR_FATTR3)
#define XDR_POST_OP_FH (4 + 4 + ((HND_FH_LEN + 3) & ~3))
/* status, dir_attributes, cookieverf, the last "no next entry", eof */
#define XDR_READDIR_FIXED (4 + XDR_POST_OP_ATTR + NFS3_COOKIEVERFSIZE + 4 + 4)

/* --- errors, handles, attributes ----------------------------------------- */

nfsstat3 nfs3_status(int err)
{
	if (err > 0)
		err = -err;
	switch (err) {
	case 0:
		return NFS3_OK;
	case -EPERM:
		return NFS3ERR_PERM;
	case -ENOENT:
		return NFS3ERR_NOENT;
	case -EIO:
	case -EUCLEAN:
		return NFS3ERR_IO;
	case -ENXIO:
		return NFS3ERR_NXIO;
	case -EACCES:
		return NFS3ERR_ACCES;
	case -EEXIST:
		return NFS3ERR_EXIST;
	case -EXDEV:
		return NFS3ERR_XDEV;
	case -ENODEV:
		return NFS3ERR_NODEV;
	case -ENOTDIR:
		return NFS3ERR_NOTDIR;
	case -EISDIR:
		return NFS3ERR_ISDIR;
	case -EINVAL:
		return NFS3ERR_INVAL;
	case -EFBIG:
		return NFS3ERR_FBIG;
	case -ENOSPC:
		return NFS3ERR_NOSPC;
	case -EROFS:
		return NFS3ERR_ROFS;
	case -EMLINK:
		return NFS3ERR_MLINK;
	case -ENAMETOOLONG:
		return NFS3ERR_NAMETOOLONG;
	case -ENOTEMPTY:
		return NFS3ERR_NOTEMPTY;
	case -EDQUOT:
		return NFS3ERR_DQUOT;
	case -ESTALE:
		return NFS3ERR_STALE;
	case -EBADMSG:
		return NFS3ERR_BADHANDLE;
	case -FS_EBADCOOKIE:
		return NFS3ERR_BAD_COOKIE;
	case -ENOTSUP:
#if EOPNOTSUPP != ENOTSUP
	case -EOPNOTSUPP:
#endif
		return NFS3ERR_NOTSUPP;
	default: /* ERANGE, ENOMEM and whatever else: our fault */
		return NFS3ERR_SERVERFAULT;
	}
}

int nfs3_fh_to_ino(struct nfs_ctx *ctx, const nfs_fh3 *fh, struct fs_ino *ino)
{
	if (!fh->data.data_val)
		return -EBADMSG;
	return hnd_fh_decode(ctx->key, (const uint8_t *)fh->data.data_val, fh->data.data_len, ino);
}

int nfs3_ino_to_fh(struct nfs_ctx *ctx, struct fs_ino ino, nfs_fh3 *fh)
{
	uint8_t *p = arena_alloc(&ctx->arena, HND_FH_LEN);
	int ret;

	if (!p)
		return -ENOMEM;
	ret = hnd_fh_encode(ctx->key, ino, p);
	if (ret < 0)
		return ret;
	fh->data.data_len = HND_FH_LEN;
	fh->data.data_val = (char *)p;
	return 0;
}

/* fsid: the first 8 bytes of the volume UUID read as a big-endian number,
 * so that it is the same whatever machine serves the volume. */
static uint64_t volume_fsid(struct nfs_ctx *ctx)
{
	uint8_t uuid[16];
	uint64_t id = 0;

	fs_volume_uuid(ctx->vol, uuid);
	for (int i = 0; i < 8; i++)
		id = id << 8 | uuid[i];
	return id;
}

static ftype3 nfs3_type(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR:
		return NF3DIR;
	case S_IFBLK:
		return NF3BLK;
	case S_IFCHR:
		return NF3CHR;
	case S_IFLNK:
		return NF3LNK;
	case S_IFSOCK:
		return NF3SOCK;
	case S_IFIFO:
		return NF3FIFO;
	default:
		return NF3REG;
	}
}

static nfstime3 nfs3_time(const struct timespec *ts)
{
	nfstime3 t = { .seconds = (uint32)ts->tv_sec, .nseconds = (uint32)ts->tv_nsec };

	return t;
}

static void fill_fattr(const struct fs_attr *a, uint64_t fsid, fattr3 *out)
{
	out->type = nfs3_type(a->mode);
	out->mode = a->mode & 07777;
	out->nlink = a->nlink;
	out->uid = a->uid;
	out->gid = a->gid;
	out->size = a->size;
	out->used = a->used;
	out->rdev.specdata1 = a->rdev_major;
	out->rdev.specdata2 = a->rdev_minor;
	out->fsid = fsid;
	out->fileid = a->fileid;
	out->atime = nfs3_time(&a->atime);
	out->mtime = nfs3_time(&a->mtime);
	out->ctime = nfs3_time(&a->ctime);
}

void nfs3_fill_fattr(struct nfs_ctx *ctx, const struct fs_attr *a, fattr3 *out)
{
	fill_fattr(a, volume_fsid(ctx), out);
}

static void post_attr(struct nfs_ctx *ctx, const struct fs_attr *a, post_op_attr *p)
{
	p->attributes_follow = TRUE;
	nfs3_fill_fattr(ctx, a, &p->post_op_attr_u.attributes);
}

/* ino's attributes as they are now; none when they cannot be had. */
static void post_attr_of(struct nfs_ctx *ctx, struct fs_ino ino, post_op_attr *p)
{
	struct fs_attr a;

	if (fs_getattr(ctx->vol, ino, &a) == 0)
		post_attr(ctx, &a, p);
	else
		p->attributes_follow = FALSE;
}

static void wcc_pre(const struct fs_attr *a, pre_op_attr *p)
{
	p->attributes_follow = TRUE;
	p->pre_op_attr_u.attributes.size = a->size;
	p->pre_op_attr_u.attributes.mtime = nfs3_time(&a->mtime);
	p->pre_op_attr_u.attributes.ctime = nfs3_time(&a->ctime);
}

/* The start of a change to the object fh names: its inode and its
 * attributes before the change. Fails for a bad or stale handle. */
static int wcc_begin(struct nfs_ctx *ctx, const nfs_fh3 *fh, struct fs_ino *ino, wcc_data *wcc,
		     struct fs_attr *pre)
{
	struct fs_attr a;
	int ret = nfs3_fh_to_ino(ctx, fh, ino);

	if (ret < 0)
		return ret;
	ret = fs_getattr(ctx->vol, *ino, &a);
	if (ret < 0)
		return ret;
	wcc_pre(&a, &wcc->before);
	if (pre)
		*pre = a;
	return 0;
}

/* The after half, whenever the before half was had, success or not. */
static void wcc_end(struct nfs_ctx *ctx, struct fs_ino ino, wcc_data *wcc)
{
	if (wcc->before.attributes_follow)
		post_attr_of(ctx, ino, &wcc->after);
}

static int time_from(const nfstime3 *t, struct timespec *ts)
{
	if (t->nseconds >= 1000000000u)
		return -EINVAL;
	ts->tv_sec = (time_t)t->seconds;
	ts->tv_nsec = (long)t->nseconds;
	return 0;
}

static int sattr_to_fs(const sattr3 *s, struct fs_setattr *sa)
{
	int ret;

	memset(sa, 0, sizeof(*sa));
	if (s->mode.set_it) {
		sa->valid |= FS_SET_MODE;
		sa->mode = s->mode.set_mode3_u.mode & 07777;
	}
	if (s->uid.set_it) {
		sa->valid |= FS_SET_UID;
		sa->uid = s->uid.set_uid3_u.uid;
	}
	if (s->gid.set_it) {
		sa->valid |= FS_SET_GID;
		sa->gid = s->gid.set_gid3_u.gid;
	}
	if (s->size.set_it) {
		sa->valid |= FS_SET_SIZE;
		sa->size = s->size.set_size3_u.size;
	}
	switch (s->atime.set_it) {
	case DONT_CHANGE:
		break;
	case SET_TO_SERVER_TIME:
		sa->valid |= FS_SET_ATIME_NOW;
		break;
	case SET_TO_CLIENT_TIME:
		ret = time_from(&s->atime.set_atime_u.atime, &sa->atime);
		if (ret < 0)
			return ret;
		sa->valid |= FS_SET_ATIME;
		break;
	default:
		return -EINVAL;
	}
	switch (s->mtime.set_it) {
	case DONT_CHANGE:
		break;
	case SET_TO_SERVER_TIME:
		sa->valid |= FS_SET_MTIME_NOW;
		break;
	case SET_TO_CLIENT_TIME:
		ret = time_from(&s->mtime.set_mtime_u.mtime, &sa->mtime);
		if (ret < 0)
			return ret;
		sa->valid |= FS_SET_MTIME;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

#define FS_SET_TIMES (FS_SET_ATIME | FS_SET_MTIME | FS_SET_ATIME_NOW | FS_SET_MTIME_NOW)

/* A new object was made with its mode; what else the client asked for
 * (of the fields in keep) is applied as a SETATTR would, updating *attr.
 * An owner or group from a caller who is not root is dropped, as knfsd's
 * nfsd_create_setattr drops them: some clients send the setgid
 * directory's group with CREATE, which as a chown would refuse the call
 * (EPERM, the new object left behind) or, even with the group the object
 * already has, take its set-id bits. */
static int apply_rest(struct nfs_ctx *ctx, struct fs_ino ino, struct fs_setattr *sa, uint32_t keep,
		      struct fs_attr *attr)
{
	if (ctx->cred.uid != 0)
		keep &= ~(uint32_t)(FS_SET_UID | FS_SET_GID);
	sa->valid &= keep;
	if (!sa->valid)
		return 0;
	return fs_setattr(ctx->vol, &ctx->cred, ino, sa, attr);
}

/* What CREATE, MKDIR, SYMLINK and MKNOD all return. */
struct made {
	wcc_data dir_wcc;
	post_op_fh3 obj;
	post_op_attr obj_attributes;
};

static void made_obj(struct nfs_ctx *ctx, struct fs_ino ino, const struct fs_attr *a,
		     struct made *m)
{
	/* Without a handle (no memory) the client does a LOOKUP. */
	m->obj.handle_follows = nfs3_ino_to_fh(ctx, ino, &m->obj.post_op_fh3_u.handle) == 0;
	post_attr(ctx, a, &m->obj_attributes);
}

/* The result of CREATE, MKDIR, SYMLINK or MKNOD from m: the status, and
 * on success the new object's handle and attributes and the directory's
 * wcc data (into the resok fields given), else only the wcc data (into
 * resfail's). */
static void made_result(const struct made *m, nfsstat3 status, nfsstat3 *res_status,
			post_op_fh3 *obj, post_op_attr *obj_attributes, wcc_data *ok_wcc,
			wcc_data *fail_wcc)
{
	*res_status = status;
	if (status == NFS3_OK) {
		*obj = m->obj;
		*obj_attributes = m->obj_attributes;
		*ok_wcc = m->dir_wcc;
	} else {
		*fail_wcc = m->dir_wcc;
	}
}

/* --- the procedures ------------------------------------------------------ */

void nfs3_proc_null(struct nfs_ctx *ctx, void *args, void *res)
{
}

void nfs3_proc_getattr(struct nfs_ctx *ctx, GETATTR3args *args, GETATTR3res *res)
{
	struct fs_ino ino = { 0 };
	struct fs_attr a;
	int ret;

	memset(res, 0, sizeof(*res));
	ret = nfs3_fh_to_ino(ctx, &args->object, &ino);
	if (ret == 0)
		ret = fs_getattr(ctx->vol, ino, &a);
	res->status = nfs3_status(ret);
	if (ret == 0)
		nfs3_fill_fattr(ctx, &a, &res->GETATTR3res_u.resok.obj_attributes);
}

void nfs3_proc_setattr(struct nfs_ctx *ctx, SETATTR3args *args, SETATTR3res *res)
{
	struct fs_attr pre, post;
	struct fs_setattr sa;
	struct fs_ino ino = { 0 };
	wcc_data wcc;
	nfsstat3 status;
	int ret;

	memset(res, 0, sizeof(*res));
	memset(&wcc, 0, sizeof(wcc));
	ret = wcc_begin(ctx, &args->object, &ino, &wcc, &pre);
	if (ret == 0 && ctx->rdonly)
		ret = -EROFS;
	if (ret == 0)
		ret = sattr_to_fs(&args->new_attributes, &sa);
	status = nfs3_status(ret);
	if (ret == 0 && args->guard.check) {
		nfstime3 now = nfs3_time(&pre.ctime);
		const nfstime3 *want = &args->guard.sattrguard3_u.obj_ctime;

		if (now.seconds != want->seconds || now.nseconds != want->nseconds)
			status = NFS3ERR_NOT_SYNC;
	}
	if (status == NFS3_OK) {
		ret = fs_setattr(ctx->vol, &ctx->cred, ino, &sa, &post);
		status = nfs3_status(ret);
	}
	if (status == NFS3_OK) {
		post_attr(ctx, &post, &wcc.after);
		ctx->needs_sync = 1;
	} else {
		wcc_end(ctx, ino, &wcc);
	}
	res->status = status;
	if (status == NFS3_OK)
		res->SETATTR3res_u.resok.obj_wcc = wcc;
	else
		res->SETATTR3res_u.resfail.obj_wcc = wcc;
}

static int is_export_root(const struct nfs_ctx *ctx, struct fs_ino dir)
{
	return ctx->export_root.num && dir.num == ctx->export_root.num &&
	       dir.gen == ctx->export_root.gen;
}

void nfs3_proc_lookup(struct nfs_ctx *ctx, LOOKUP3args *args, LOOKUP3res *res)
{
	struct fs_ino dir = { 0 }, ino = { 0 };
	struct fs_attr a;
	int ret;

	memset(res, 0, sizeof(*res));
	ret = nfs3_fh_to_ino(ctx, &args->what.dir, &dir);
	if (ret < 0) {
		res->status = nfs3_status(ret);
		return;
	}
	if (is_export_root(ctx, dir) && !strcmp(args->what.name, "..")) {
		/* The export's top: ".." stays there (after the lookup rights). */
		ret = fs_lookup(ctx->vol, &ctx->cred, dir, ".", &ino, &a);
	} else {
		ret = fs_lookup(ctx->vol, &ctx->cred, dir, args->what.name, &ino, &a);
	}
	if (ret == 0) {
		LOOKUP3resok *ok = &res->LOOKUP3res_u.resok;

		ret = nfs3_ino_to_fh(ctx, ino, &ok->object);
		if (ret == 0) {
			post_attr(ctx, &a, &ok->obj_attributes);
			post_attr_of(ctx, dir, &ok->dir_attributes);
		}
	}
	res->status = nfs3_status(ret);
	if (ret < 0) {
		memset(&res->LOOKUP3res_u, 0, sizeof(res->LOOKUP3res_u));
		post_attr_of(ctx, dir, &res->LOOKUP3res_u.resfail.dir_attributes);
	}
}

void nfs3_proc_access(struct nfs_ctx *ctx, ACCESS3args *args, ACCESS3res *res)
{
	uint32_t granted = 0;
	struct fs_ino ino = { 0 };
	int ret;

	memset(res, 0, sizeof(*res));
	ret = nfs3_fh_to_ino(ctx, &args->object, &ino);
	if (ret < 0) {
		res->status = nfs3_status(ret);
		return;
	}
	ret = fs_access(ctx->vol, &ctx->cred, ino, args->access, &granted);
	/* A read-only export refuses every change, whatever the modes say. */
	if (ctx->rdonly)
		granted &= ~(uint32_t)(ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE);
	res->status = nfs3_status(ret);
	if (ret == 0) {
		post_attr_of(ctx, ino, &res->ACCESS3res_u.resok.obj_attributes);
		res->ACCESS3res_u.resok.access = granted;
	} else {
		post_attr_of(ctx, ino, &res->ACCESS3res_u.resfail.obj_attributes);
	}
}

void nfs3_proc_readlink(struct nfs_ctx *ctx, READLINK3args *args, READLINK3res *res)
{
	struct fs_ino ino = { 0 };
	size_t len = 0;
	char *buf;
	int ret;

	memset(res, 0, sizeof(*res));
	ret = nfs3_fh_to_ino(ctx, &args->symlink, &ino);
	if (ret < 0) {
		res->status = nfs3_status(ret);
		return;
	}
	buf = arena_alloc(&ctx->arena, FS_SYMLINK_MAX + 1);
	ret = buf ? fs_readlink(ctx->vol, ino, buf, FS_SYMLINK_MAX, &len) : -ENOMEM;
	res->status = nfs3_status(ret);
	if (ret == 0) {
		buf[len] = '\0';
		post_attr_of(ctx, ino, &res->READLINK3res_u.resok.symlink_attributes);
		res->READLINK3res_u.resok.data = buf;
	} else {
		post_attr_of(ctx, ino, &res->READLINK3res_u.resfail.symlink_attributes);
	}
}

void nfs3_proc_read(struct nfs_ctx *ctx, READ3args *args, READ3res *res)
{
	uint32_t count = args->count;
	struct fs_ino ino = { 0 };
	size_t n = 0;
	int eof = 0;
	char *buf;
	int ret;

	memset(res, 0, sizeof(*res));
	ret = nfs3_fh_to_ino(ctx, &args->file, &ino);
	if (ret < 0) {
		res->status = nfs3_status(ret);
		return;
	}
	if (count > ctx->rtmax)
		count = ctx->rtmax;
	buf = ctx->read_into && count <= ctx->read_room ? (char *)ctx->read_into
							: arena_alloc(&ctx->arena, count ? count : 1);
	if (buf)
		ret = fs_read(ctx->vol, &ctx->cred, ino, args->offset, count, buf, &n, &eof);
	else
		ret = -ENOMEM;
	res->status = nfs3_status(ret);
	if (ret == 0) {
		READ3resok *ok = &res->READ3res_u.resok;

		post_attr_of(ctx, ino, &ok->file_attributes);
		ok->count = (count3)n;
		ok->eof = eof ? TRUE : FALSE;
		ok->data.data_len = (u_int)n;
		ok->data.data_val = buf;
	} else {
		post_attr_of(ctx, ino, &res->READ3res_u.resfail.file_attributes);
	}
}

void nfs3_proc_write(struct nfs_ctx *ctx, WRITE3args *args, WRITE3res *res)
{
	enum fs_stable_how how = FS_UNSTABLE;
	uint32_t count = args->count;
	struct fs_attr post;
	struct fs_ino ino = { 0 };
	wcc_data wcc;
	int ret;

	memset(res, 0, sizeof(*res));
	memset(&wcc, 0, sizeof(wcc));
	ret = wcc_begin(ctx, &args->file, &ino, &wcc, NULL);
	if (ret == 0 && ctx->rdonly)
		ret = -EROFS;
	if (ret == 0 && args->count != args->data.data_len)
		ret = -EINVAL;
	if (ret == 0) {
		switch (args->stable) {
		case UNSTABLE:
			how = FS_UNSTABLE;
			break;
		case DATA_SYNC:
			how = FS_DATA_SYNC;
			break;
		case FILE_SYNC:
			how = FS_FILE_SYNC;
			break;
		default:
			ret = -EINVAL;
		}
	}
	if (ret == 0) {
		if (count > ctx->wtmax)
			count = ctx->wtmax;
		/* Stable writes are made durable by the dispatcher's group
		 * commit, shared with concurrent calls, not one sync each. */
		ret = fs_write(ctx->vol, &ctx->cred, ino, args->offset, count, args->data.data_val,
			       FS_UNSTABLE, &post);
		/* The file's buffered data (delayed allocation) is placed
		 * here: a placement that fails fails this call alone (the
		 * data stays buffered, to be tried again), not the group
		 * commit of every call. */
		if (ret == 0 && how != FS_UNSTABLE) {
			ctx->vouches_data = 1;
			ret = fs_place(ctx->vol, ino);
		}
	}
	res->status = nfs3_status(ret);
	if (ret == 0) {
		WRITE3resok *ok = &res->WRITE3res_u.resok;

		post_attr(ctx, &post, &wcc.after);
		ok->file_wcc = wcc;
		ok->count = count;
		/* DATA_SYNC data is made durable with all its metadata. */
		ok->committed = how == FS_UNSTABLE ? UNSTABLE : FILE_SYNC;
		memcpy(ok->verf, ctx->write_verf, NFS3_WRITEVERFSIZE);
		if (how != FS_UNSTABLE) {
			ctx->needs_sync = 1;
			fs_observe(ctx->vol, ino); /* the learned size predictor */
			fs_prealloc_committed(ctx->vol, ino); /* a trim reservation */
		}
	} else {
		wcc_end(ctx, ino, &wcc);
		res->WRITE3res_u.resfail.file_wcc = wcc;
	}
}

/* A new file whose name or learned size says it will grow gets a
 * reservation that trims itself (fs/prealloc.c); a hint that finds no
 * room is no error of the CREATE. */
static void prealloc_hint(struct nfs_ctx *ctx, struct fs_ino ino, const char *name)
{
	uint64_t got;

	if (ctx->prealloc_max)
		(void)fs_prealloc_hinted(ctx->vol, ino, name, ctx->prealloc_max, &got);
}

/* CREATE's three ways: UNCHECKED and GUARDED with initial attributes,
 * EXCLUSIVE with a verifier the file keeps, so that a retransmission finds
 * its own file (the client sets the attributes with SETATTR afterwards). */
static int create_obj(struct nfs_ctx *ctx, struct fs_ino dir, CREATE3args *args, struct fs_ino *ino,
		      struct fs_attr *attr)
{
	const char *name = args->where.name;
	struct fs_setattr sa;
	uint64_t verf;
	uint32_t mode;
	int ret;

	switch (args->how.mode) {
	case UNCHECKED:
	case GUARDED:
		ret = sattr_to_fs(&args->how.createhow3_u.obj_attributes, &sa);
		if (ret < 0)
			return ret;
		mode = (sa.valid & FS_SET_MODE) ? sa.mode : NFS3_FILE_MODE;
		ret = fs_create(ctx->vol, &ctx->cred, dir, name, mode, FS_CREATE_GUARDED, 0, ino,
				attr);
		if (ret == 0) {
			ctx->needs_sync = 1;
			prealloc_hint(ctx, *ino, name);
			return apply_rest(ctx, *ino, &sa,
					  FS_SET_UID | FS_SET_GID | FS_SET_SIZE | FS_SET_TIMES,
					  attr);
		}
		if (ret != -EEXIST || args->how.mode != UNCHECKED)
			return ret;
		/* UNCHECKED on an existing regular file opens it: as with
		 * open(O_CREAT), only the size (truncation) applies to it. */
		ret = fs_create(ctx->vol, &ctx->cred, dir, name, mode, FS_CREATE_UNCHECKED, 0, ino,
				attr);
		if (ret < 0)
			return ret;
		if (sa.valid & FS_SET_SIZE)
			ctx->needs_sync = 1;
		return apply_rest(ctx, *ino, &sa, FS_SET_SIZE, attr);
	case EXCLUSIVE:
		memcpy(&verf, args->how.createhow3_u.verf, sizeof(verf));
		ret = fs_create(ctx->vol, &ctx->cred, dir, name, NFS3_FILE_MODE,
				FS_CREATE_EXCLUSIVE, verf, ino, attr);
		if (ret == 0) {
			ctx->needs_sync = 1;
			prealloc_hint(ctx, *ino, name);
		}
		return ret;
	default:
		return -EINVAL;
	}
}

void nfs3_proc_create(struct nfs_ctx *ctx, CREATE3args *args, CREATE3res *res)
{
	struct made m;
	struct fs_ino dir = { 0 }, ino = { 0 };
	struct fs_attr a;
	int ret;

	memset(res, 0, sizeof(*res));
	memset(&m, 0, sizeof(m));
	ret = wcc_begin(ctx, &args->where.dir, &dir, &m.dir_wcc, NULL);
	if (ret == 0 && ctx->rdonly)
		ret = -EROFS;
	if (ret == 0)
		ret = create_obj(ctx, dir, args, &ino, &a);
	if (ret == 0)
		made_obj(ctx, ino, &a, &m);
	wcc_end(ctx, dir, &m.dir_wcc);
	made_result(&m, nfs3_status(ret), &res->status, &res->CREATE3res_u.resok.obj,
		    &res->CREATE3res_u.resok.obj_attributes, &res->CREATE3res_u.resok.dir_wcc,
		    &res->CREATE3res_u.resfail.dir_wcc);
}

void nfs3_proc_mkdir(struct nfs_ctx *ctx, MKDIR3args *args, MKDIR3res *res)
{
	struct fs_setattr sa;
	struct made m;
	struct fs_ino dir = { 0 }, ino = { 0 };
	struct fs_attr a;
	int ret;

	memset(res, 0, sizeof(*res));
	memset(&m, 0, sizeof(m));
	ret = wcc_begin(ctx, &args->where.dir, &dir, &m.dir_wcc, NULL);
	if (ret == 0 && ctx->rdonly)
		ret = -EROFS;
	if (ret == 0)
		ret = sattr_to_fs(&args->attributes, &sa);
	if (ret == 0)
		ret = fs_mkdir(ctx->vol, &ctx->cred, dir, args->where.name,
			       (sa.valid & FS_SET_MODE) ? sa.mode : NFS3_DIR_MODE, &ino, &a);
	if (ret == 0) {
		ctx->needs_sync = 1;
		/* A size means nothing for a directory: it is not applied. */
		ret = apply_rest(ctx, ino, &sa, FS_SET_UID | FS_SET_GID | FS_SET_TIMES, &a);
	}
	if (ret == 0)
		made_obj(ctx, ino, &a, &m);
	wcc_end(ctx, dir, &m.dir_wcc);
	made_result(&m, nfs3_status(ret), &res->status, &res->MKDIR3res_u.resok.obj,
		    &res->MKDIR3res_u.resok.obj_attributes, &res->MKDIR3res_u.resok.dir_wcc,
		    &res->MKDIR3res_u.resfail.dir_wcc);
}

void nfs3_proc_symlink(struct nfs_ctx *ctx, SYMLINK3args *args, SYMLINK3res *res)
{
	struct fs_setattr sa;
	struct made m;
	struct fs_ino dir = { 0 }, ino = { 0 };
	struct fs_attr a;
	int ret;

	memset(res, 0, sizeof(*res));
	memset(&m, 0, sizeof(m));
	ret = wcc_begin(ctx, &args->where.dir, &dir, &m.dir_wcc, NULL);
	if (ret == 0 && ctx->rdonly)
		ret = -EROFS;
	if (ret == 0)
		ret = sattr_to_fs(&args->symlink.symlink_attributes, &sa);
	if (ret == 0)
		ret = fs_symlink(ctx->vol, &ctx->cred, dir, args->where.name,
				 args->symlink.symlink_data,
				 (sa.valid & FS_SET_MODE) ? sa.mode : NFS3_LINK_MODE, &ino, &a);
	if (ret == 0) {
		ctx->needs_sync = 1;
		ret = apply_rest(ctx, ino, &sa, FS_SET_UID | FS_SET_GID | FS_SET_TIMES, &a);
	}
	if (ret == 0)
		made_obj(ctx, ino, &a, &m);
	wcc_end(ctx, dir, &m.dir_wcc);
	made_result(&m, nfs3_status(ret), &res->status, &res->SYMLINK3res_u.resok.obj,
		    &res->SYMLINK3res_u.resok.obj_attributes, &res->SYMLINK3res_u.resok.dir_wcc,
		    &res->SYMLINK3res_u.resfail.dir_wcc);
}

void nfs3_proc_mknod(struct nfs_ctx *ctx, MKNOD3args *args, MKNOD3res *res)
{
	const mknoddata3 *what = &args->what;
	uint32_t type = 0, major = 0, minor = 0;
	const sattr3 *sattr = NULL;
	struct fs_setattr sa;
	struct made m;
	struct fs_ino dir = { 0 }, ino = { 0 };
	struct fs_attr a;
	nfsstat3 status;
	int ret;

	memset(res, 0, sizeof(*res));
	memset(&m, 0, sizeof(m));
	ret = wcc_begin(ctx, &args->where.dir, &dir, &m.dir_wcc, NULL);
	if (ret == 0 && ctx->rdonly)
		ret = -EROFS;
	status = nfs3_status(ret);
	if (ret == 0) {
		switch (what->type) {
		case NF3CHR:
		case NF3BLK:
			type = what->type == NF3CHR ? S_IFCHR : S_IFBLK;
			sattr = &what->mknoddata3_u.device.dev_attributes;
			major = what->mknoddata3_u.device.spec.specdata1;
			minor = what->mknoddata3_u.device.spec.specdata2;
			break;
		case NF3SOCK:
		case NF3FIFO:
			type = what->type == NF3SOCK ? S_IFSOCK : S_IFIFO;
			sattr = &what->mknoddata3_u.pipe_attributes;
			break;
		default: /* regular files, directories, symlinks have their own */
			status = NFS3ERR_BADTYPE;
		}
	}
	if (status == NFS3_OK) {
		ret = sattr_to_fs(sattr, &sa);
		if (ret == 0)
			ret = fs_mknod(ctx->vol, &ctx->cred, dir, args->where.name,
				       type | ((sa.valid & FS_SET_MODE) ? sa.mode : NFS3_FILE_MODE),
				       major, minor, &ino, &a);
		if (ret == 0) {
			ctx->needs_sync = 1;
			ret = apply_rest(ctx, ino, &sa, FS_SET_UID | FS_SET_GID | FS_SET_TIMES, &a);
		}
		if (ret == 0)
			made_obj(ctx, ino, &a, &m);
		status = nfs3_status(ret);
	}
	wcc_end(ctx, dir, &m.dir_wcc);
	made_result(&m, status, &res->status, &res->MKNOD3res_u.resok.obj,
		    &res->MKNOD3res_u.resok.obj_attributes, &res->MKNOD3res_u.resok.dir_wcc,
		    &res->MKNOD3res_u.resfail.dir_wcc);
}

/* REMOVE and RMDIR: one name out of one directory. */
static int remove_name(struct nfs_ctx *ctx, const diropargs3 *what, int want_dir, wcc_data *wcc)
{
	struct fs_ino dir = { 0 };
	int ret;

	memset(wcc, 0, sizeof(*wcc));
	ret = wcc_begin(ctx, &what->dir, &dir, wcc, NULL);
	if (ret == 0 && ctx->rdonly)
		ret = -EROFS;
	if (ret == 0)
		ret = want_dir ? fs_rmdir(ctx->vol, &ctx->cred, dir, what->name)
			       : fs_remove(ctx->vol, &ctx->cred, dir, what->name);
	if (ret == 0)
		ctx->needs_sync = 1;
	wcc_end(ctx, dir, wcc);
	return ret;
}

void nfs3_proc_remove(struct nfs_ctx *ctx, REMOVE3args *args, REMOVE3res *res)
{
	wcc_data wcc;
	int ret;

	memset(res, 0, sizeof(*res));
	ret = remove_name(ctx, &args->object, 0, &wcc);
	res->status = nfs3_status(ret);
	if (ret == 0)
		res->REMOVE3res_u.resok.dir_wcc = wcc;
	else
		res->REMOVE3res_u.resfail.dir_wcc = wcc;
}

void nfs3_proc_rmdir(struct nfs_ctx *ctx, RMDIR3args *args, RMDIR3res *res)
{
	wcc_data wcc;
	int ret;

	memset(res, 0, sizeof(*res));
	ret = remove_name(ctx, &args->object, 1, &wcc);
	res->status = nfs3_status(ret);
	if (ret == 0)
		res->RMDIR3res_u.resok.dir_wcc = wcc;
	else
		res->RMDIR3res_u.resfail.dir_wcc = wcc;
}

void nfs3_proc_rename(struct nfs_ctx *ctx, RENAME3args *args, RENAME3res *res)
{
	struct fs_ino from = { 0 }, to = { 0 };
	wcc_data fwcc, twcc;
	int ret;

	memset(res, 0, sizeof(*res));
	memset(&fwcc, 0, sizeof(fwcc));
	memset(&twcc, 0, sizeof(twcc));
	ret = wcc_begin(ctx, &args->from.dir, &from, &fwcc, NULL);
	if (ret == 0)
		ret = wcc_begin(ctx, &args->to.dir, &to, &twcc, NULL);
	if (ret == 0 && ctx->rdonly)
		ret = -EROFS;
	if (ret == 0)
		ret = fs_rename(ctx->vol, &ctx->cred, from, args->from.name, to, args->to.name);
	if (ret == 0)
		ctx->needs_sync = 1;
	wcc_end(ctx, from, &fwcc);
	wcc_end(ctx, to, &twcc);
	res->status = nfs3_status(ret);
	if (ret == 0) {
		res->RENAME3res_u.resok.fromdir_wcc = fwcc;
		res->RENAME3res_u.resok.todir_wcc = twcc;
	} else {
		res->RENAME3res_u.resfail.fromdir_wcc = fwcc;
		res->RENAME3res_u.resfail.todir_wcc = twcc;
	}
}

void nfs3_proc_link(struct nfs_ctx *ctx, LINK3args *args, LINK3res *res)
{
	struct fs_ino file = { 0 }, dir = { 0 };
	post_op_attr fattr;
	wcc_data wcc;
	int ret;

	memset(res, 0, sizeof(*res));
	memset(&fattr, 0, sizeof(fattr));
	memset(&wcc, 0, sizeof(wcc));
	ret = nfs3_fh_to_ino(ctx, &args->file, &file);
	if (ret < 0) {
		res->status = nfs3_status(ret);
		return;
	}
	ret = wcc_begin(ctx, &args->link.dir, &dir, &wcc, NULL);
	if (ret == 0 && ctx->rdonly)
		ret = -EROFS;
	if (ret == 0)
		ret = fs_link(ctx->vol, &ctx->cred, file, dir, args->link.name);
	if (ret == 0)
		ctx->needs_sync = 1;
	post_attr_of(ctx, file, &fattr);
	/* fs_link refuses a directory with EPERM, as link(2) does; knfsd's
	 * nfsd_link answers NFS3ERR_ISDIR, and so do we. */
	if (ret == -EPERM && fattr.attributes_follow &&
	    fattr.post_op_attr_u.attributes.type == NF3DIR)
		ret = -EISDIR;
	wcc_end(ctx, dir, &wcc);
	res->status = nfs3_status(ret);
	if (ret == 0) {
		res->LINK3res_u.resok.file_attributes = fattr;
		res->LINK3res_u.resok.linkdir_wcc = wcc;
	} else {
		res->LINK3res_u.resfail.file_attributes = fattr;
		res->LINK3res_u.resfail.linkdir_wcc = wcc;
	}
}

/* --- READDIR and READDIRPLUS --------------------------------------------- */

/* A listing being built: entries are appended while they fit the budgets;
 * the first that does not stops fs_readdir, and is the next call's first.
 * fs_readdir holds the volume lock while it lists: it is called for at
 * most RD_BATCH entries at a time, each call resuming at the cookie of
 * the last entry taken, so that other calls get the volume in between;
 * and the READDIRPLUS handles (an HMAC each) are made after, unlocked. */
#define RD_BATCH 64

/* A READDIRPLUS entry, with the number its handle is made from. */
struct rd_plus {
	entryplus3 e;
	struct fs_ino ino;
};

struct rd_state {
	struct nfs_ctx *ctx;
	int plus;
	uint64_t fsid;	/* computed before fs_readdir holds the volume */
	size_t room;	/* reply bytes left: READDIR count, READDIRPLUS maxcount */
	size_t dirroom; /* READDIRPLUS: dircount bytes left */
	entry3 **tail;
	entryplus3 **ptail;
	entryplus3 **phead;
	uint32_t n;
	uint32_t batch_left; /* entries this fs_readdir call may still take */
	uint64_t last_cookie;
	int err;
	/* Listing the export's root: its ".." entry is the root itself. */
	int at_export_root;
	struct fs_ino self;
	struct fs_attr self_attr;
};

static size_t xdr_string_size(size_t len)
{
	return 4 + ((len + 3) & ~(size_t)3);
}

static int rd_add(void *arg, const struct fs_dirent *dent)
{
	struct rd_state *st = arg;
	struct fs_dirent top;
	const struct fs_dirent *d = dent;
	struct arena *ar = &st->ctx->arena;
	/* fileid, name, cookie; then the "value follows" before the entry */
	size_t dsize = 8 + xdr_string_size(d->name_len) + 8;
	size_t size = 4 + dsize + (st->plus ? XDR_POST_OP_ATTR + XDR_POST_OP_FH : 0);
	char *name;

	if (size > st->room || (st->plus && dsize > st->dirroom) || !st->batch_left)
		return 1;
	if (st->at_export_root && d->name_len == 2 && !memcmp(d->name, "..", 2)) {
		top = *d;
		top.fileid = st->self.num;
		top.ino = st->self;
		top.attr = st->self_attr;
		d = &top;
	}
	name = arena_strndup(ar, d->name, d->name_len);
	if (!name)
		goto nomem;
	if (st->plus) {
		struct rd_plus *rp = arena_alloc(ar, sizeof(*rp));
		entryplus3 *e = &rp->e;

		if (!rp)
			goto nomem;
		memset(rp, 0, sizeof(*rp));
		rp->ino = d->ino; /* its handle: rd_handles, unlocked */
		e->fileid = d->fileid;
		e->name = name;
		e->cookie = d->cookie;
		e->name_attributes.attributes_follow = TRUE;
		fill_fattr(&d->attr, st->fsid, &e->name_attributes.post_op_attr_u.attributes);
		e->name_handle.handle_follows = TRUE;
		*st->ptail = e;
		st->ptail = &e->nextentry;
		st->dirroom -= dsize;
	} else {
		entry3 *e = arena_alloc(ar, sizeof(*e));

		if (!e)
			goto nomem;
		e->fileid = d->fileid;
		e->name = name;
		e->cookie = d->cookie;
		e->nextentry = NULL;
		*st->tail = e;
		st->tail = &e->nextentry;
	}
	st->room -= size;
	st->n++;
	st->batch_left--;
	st->last_cookie = d->cookie;
	return 0;
nomem:
	st->err = -ENOMEM;
	return 1;
}

/* The READDIRPLUS entries' handles, made without the volume lock. */
static int rd_handles(struct nfs_ctx *ctx, struct rd_state *st)
{
	for (entryplus3 *e = *st->phead; e; e = e->nextentry) {
		struct rd_plus *rp = (struct rd_plus *)e;
		int ret = nfs3_ino_to_fh(ctx, rp->ino, &e->name_handle.post_op_fh3_u.handle);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Lists dir from cookie into st within count bytes of reply; the new
 * verifier goes to verf. NFS3ERR_TOOSMALL when not even one entry fits. */
static nfsstat3 rd_list(struct nfs_ctx *ctx, struct fs_ino dir, cookie3 cookie, const char *verf_in,
			uint32_t count, struct rd_state *st, char *verf_out, bool_t *eof)
{
	uint64_t verf;
	int end = 0;
	int ret;

	/* A reply larger than the transport's limit could not be sent. */
	if (ctx->rtmax && count > ctx->rtmax)
		count = ctx->rtmax;
	memcpy(&verf, verf_in, sizeof(verf));
	st->ctx = ctx;
	st->fsid = volume_fsid(ctx);
	st->room = count > XDR_READDIR_FIXED ? count - XDR_READDIR_FIXED : 0;
	if (is_export_root(ctx, dir) && fs_getattr(ctx->vol, dir, &st->self_attr) == 0) {
		st->at_export_root = 1;
		st->self = dir;
	}
	st->last_cookie = cookie;
	do {
		st->batch_left = RD_BATCH;
		ret = fs_readdir(ctx->vol, &ctx->cred, dir, st->last_cookie, &verf, st->plus,
				 rd_add, st, &end);
		/* (a batch used up, nothing else stopping it: on from there) */
	} while (ret == 0 && !end && !st->err && st->batch_left == 0);
	if (ret == 0 && st->err)
		ret = st->err;
	if (ret == 0 && st->plus)
		ret = rd_handles(ctx, st);
	if (ret < 0)
		return nfs3_status(ret);
	if (count < XDR_READDIR_FIXED || (st->n == 0 && !end))
		return NFS3ERR_TOOSMALL;
	memcpy(verf_out, &verf, sizeof(verf));
	*eof = end ? TRUE : FALSE;
	return NFS3_OK;
}

void nfs3_proc_readdir(struct nfs_ctx *ctx, READDIR3args *args, READDIR3res *res)
{
	struct rd_state st = { .plus = 0 };
	READDIR3resok ok;
	entry3 *list = NULL;
	struct fs_ino dir = { 0 };
	int ret;

	memset(res, 0, sizeof(*res));
	ret = nfs3_fh_to_ino(ctx, &args->dir, &dir);
	if (ret < 0) {
		res->status = nfs3_status(ret);
		return;
	}
	memset(&ok, 0, sizeof(ok));
	st.tail = &list;
	res->status = rd_list(ctx, dir, args->cookie, args->cookieverf, args->count, &st,
			      ok.cookieverf, &ok.reply.eof);
	if (res->status == NFS3_OK) {
		post_attr_of(ctx, dir, &ok.dir_attributes);
		ok.reply.entries = list;
		res->READDIR3res_u.resok = ok;
	} else {
		post_attr_of(ctx, dir, &res->READDIR3res_u.resfail.dir_attributes);
	}
}

void nfs3_proc_readdirplus(struct nfs_ctx *ctx, READDIRPLUS3args *args, READDIRPLUS3res *res)
{
	struct rd_state st = { .plus = 1 };
	READDIRPLUS3resok ok;
	entryplus3 *list = NULL;
	struct fs_ino dir = { 0 };
	int ret;

	memset(res, 0, sizeof(*res));
	ret = nfs3_fh_to_ino(ctx, &args->dir, &dir);
	if (ret < 0) {
		res->status = nfs3_status(ret);
		return;
	}
	memset(&ok, 0, sizeof(ok));
	st.ptail = &list;
	st.phead = &list;
	st.dirroom = args->dircount;
	res->status = rd_list(ctx, dir, args->cookie, args->cookieverf, args->maxcount, &st,
			      ok.cookieverf, &ok.reply.eof);
	if (res->status == NFS3_OK) {
		post_attr_of(ctx, dir, &ok.dir_attributes);
		ok.reply.entries = list;
		res->READDIRPLUS3res_u.resok = ok;
	} else {
		post_attr_of(ctx, dir, &res->READDIRPLUS3res_u.resfail.dir_attributes);
	}
}

/* --- the filesystem as a whole ------------------------------------------- */

/* The object fh names must exist; its attributes go to *post either way. */
static int fs_object(struct nfs_ctx *ctx, const nfs_fh3 *fh, post_op_attr *post)
{
	struct fs_ino ino = { 0 };
	struct fs_attr a;
	int ret = nfs3_fh_to_ino(ctx, fh, &ino);

	if (ret == 0)
		ret = fs_getattr(ctx->vol, ino, &a);
	if (ret == 0)
		post_attr(ctx, &a, post);
	return ret;
}

void nfs3_proc_fsstat(struct nfs_ctx *ctx, FSSTAT3args *args, FSSTAT3res *res)
{
	FSSTAT3resok *ok = &res->FSSTAT3res_u.resok;
	struct fs_statfs s;
	post_op_attr post;
	int ret;

	memset(res, 0, sizeof(*res));
	memset(&post, 0, sizeof(post));
	ret = fs_object(ctx, &args->fsroot, &post);
	if (ret == 0)
		ret = fs_statfs(ctx->vol, &s);
	res->status = nfs3_status(ret);
	if (ret < 0) {
		res->FSSTAT3res_u.resfail.obj_attributes = post;
		return;
	}
	ok->obj_attributes = post;
	ok->tbytes = s.total_blocks * s.block_size;
	ok->fbytes = s.free_blocks * s.block_size;
	ok->abytes = ok->fbytes; /* nothing is reserved for root */
	ok->tfiles = s.total_inodes;
	ok->ffiles = s.free_inodes;
	ok->afiles = s.free_inodes;
	ok->invarsec = 0; /* the numbers change with every write */
}

void nfs3_proc_fsinfo(struct nfs_ctx *ctx, FSINFO3args *args, FSINFO3res *res)
{
	FSINFO3resok *ok = &res->FSINFO3res_u.resok;
	post_op_attr post;
	int ret;

	memset(res, 0, sizeof(*res));
	memset(&post, 0, sizeof(post));
	ret = fs_object(ctx, &args->fsroot, &post);
	res->status = nfs3_status(ret);
	if (ret < 0) {
		res->FSINFO3res_u.resfail.obj_attributes = post;
		return;
	}
	ok->obj_attributes = post;
	ok->rtmax = ctx->rtmax;
	ok->rtpref = ctx->rtmax;
	ok->rtmult = 4096;
	ok->wtmax = ctx->wtmax;
	ok->wtpref = ctx->wtmax;
	ok->wtmult = 4096;
	ok->dtpref = 65536;
	ok->maxfilesize = NFS3_MAXFILESIZE;
	ok->time_delta.seconds = 0;
	ok->time_delta.nseconds = 1;
	ok->properties = FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;
}

void nfs3_proc_pathconf(struct nfs_ctx *ctx, PATHCONF3args *args, PATHCONF3res *res)
{
	PATHCONF3resok *ok = &res->PATHCONF3res_u.resok;
	post_op_attr post;
	int ret;

	memset(res, 0, sizeof(*res));
	memset(&post, 0, sizeof(post));
	ret = fs_object(ctx, &args->object, &post);
	res->status = nfs3_status(ret);
	if (ret < 0) {
		res->PATHCONF3res_u.resfail.obj_attributes = post;
		return;
	}
	ok->obj_attributes = post;
	ok->linkmax = NFS3_LINKMAX;
	ok->name_max = FS_NAME_MAX;
	ok->no_trunc = TRUE;
	ok->chown_restricted = TRUE;
	ok->case_insensitive = FALSE;
	ok->case_preserving = TRUE;
}

void nfs3_proc_commit(struct nfs_ctx *ctx, COMMIT3args *args, COMMIT3res *res)
{
	struct fs_ino ino = { 0 };
	wcc_data wcc;
	int ret;

	memset(res, 0, sizeof(*res));
	memset(&wcc, 0, sizeof(wcc));
	/* The dispatcher's group commit makes the whole volume durable:
	 * offset and count do not narrow it. */
	ret = wcc_begin(ctx, &args->file, &ino, &wcc, NULL);
	/* The file's buffered data is placed here, its failure this call's
	 * alone (NFS3ERR_IO, NFS3ERR_NOSPC; the data stays buffered to be
	 * tried again, as Linux reports a writeback error at fsync). */
	if (ret == 0) {
		ctx->vouches_data = 1;
		ret = fs_place(ctx->vol, ino);
	}
	if (ret == 0) {
		ctx->needs_sync = 1;
		fs_observe(ctx->vol, ino); /* the learned size predictor */
		fs_prealloc_committed(ctx->vol, ino); /* a trim reservation */
	}
	wcc_end(ctx, ino, &wcc);
	res->status = nfs3_status(ret);
	if (ret == 0) {
		res->COMMIT3res_u.resok.file_wcc = wcc;
		memcpy(res->COMMIT3res_u.resok.verf, ctx->write_verf, NFS3_WRITEVERFSIZE);
	} else {
		res->COMMIT3res_u.resfail.file_wcc = wcc;
	}
}
