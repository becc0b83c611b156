/* Directory listing for READDIR and READDIRPLUS: "." and ".." first, then
 * every part's entries in chain order. A cookie names an entry's place
 * (part chunk, unit sequence, offset); entries never move, so cookies stay
 * valid while the directory lives, and the verifier is constant for it. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/internal.h"

#define COOKIE_DOT 1
#define COOKIE_DOTDOT 2

struct rd_ctx {
	struct fs_volume *v;
	int plus;
	fs_readdir_fn fn;
	void *ctx;
	int stopped;
};

static uint64_t dir_verifier(const struct od_inode *dir)
{
	return ((dir->stable * 0x9E3779B97F4A7C15ull) ^ dir->generation) | 1;
}

static int emit(struct rd_ctx *rc, const char *name, size_t len, const struct iref *r,
		uint64_t cookie)
{
	struct fs_dirent d;
	char nbuf[FS_NAME_MAX + 1];

	memcpy(nbuf, name, len);
	nbuf[len] = '\0';
	memset(&d, 0, sizeof(d));
	d.name = nbuf;
	d.name_len = len;
	d.fileid = r->ino.stable;
	d.cookie = cookie;
	d.ino.num = r->ino.stable;
	d.ino.gen = r->ino.generation;
	if (rc->plus)
		vol_attr(rc->v, &r->ino, &d.attr);
	if (rc->fn(rc->ctx, &d)) {
		rc->stopped = 1;
		return 1;
	}
	return 0;
}

static int walk_fn(struct fs_volume *v, void *vctx, const struct dir_walk_ent *e)
{
	struct rd_ctx *rc = vctx;
	struct iref r;
	int ret;

	if (e->pos.de.kind == OD_DE_EMBEDDED) {
		ret = ino_read(v, dir_embedded_loc(&e->pos), &r);
		if (ret == 0 && r.ino.stable != e->pos.de.stable)
			ret = -EUCLEAN;
	} else {
		ret = ino_get_stable(v, e->pos.de.stable, &r);
	}
	if (ret < 0)
		return ret;
	return emit(rc, e->name, e->pos.de.name_len, &r,
		    dir_cookie(e->part, e->unit_seq, e->pos.off));
}

int fs_readdir(struct fs_volume *v, const struct fs_cred *cred, struct fs_ino dir_id,
	       uint64_t cookie, uint64_t *verifier, int plus, fs_readdir_fn fn, void *ctx,
	       int *eof)
{
	struct rd_ctx rc = { .v = v, .plus = plus, .fn = fn, .ctx = ctx };
	struct iref dir, parent;
	uint64_t verf;
	int ret, skipped = 0;

	*eof = 0;
	vol_lock(v);
	ret = ino_get(v, dir_id, &dir);
	if (ret < 0)
		goto out;
	if (!S_ISDIR(dir.ino.mode)) {
		ret = -ENOTDIR;
		goto out;
	}
	ret = perm_check(cred, &dir.ino, 4);
	if (ret < 0)
		goto out;
	verf = dir_verifier(&dir.ino);
	if (cookie != 0 && *verifier != 0 && *verifier != verf) {
		ret = -FS_EBADCOOKIE;
		goto out;
	}
	*verifier = verf;
	if (cookie == 0 && emit(&rc, ".", 1, &dir, COOKIE_DOT))
		goto out;
	if (cookie <= COOKIE_DOT) {
		ret = ino_get_stable(v, dir.ino.parent, &parent);
		if (ret < 0)
			goto out;
		if (emit(&rc, "..", 2, &parent, COOKIE_DOTDOT))
			goto out;
	}
	/* Entries in a part whose chunk is offline are left out of the
	 * listing; they are back when the chunk is (doc/design.md). */
	ret = dir_walk_skipping(v, &dir, cookie <= COOKIE_DOTDOT ? 0 : cookie, walk_fn, &rc,
				&skipped);
	if (ret > 0)
		ret = 0;
	if (ret == 0 && !rc.stopped)
		*eof = 1;
out:
	vol_unlock(v);
	return ret;
}
