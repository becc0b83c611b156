/* Coders that do what rpcgen's do, faster.
 *
 * The READDIRPLUS result: rpcgen's coder makes some forty calls per entry
 * (a typedef wrapper around every field, xdr_pointer for the list), a
 * fifth of the event loop's time on a listing. Here each entry's bytes are
 * reserved at once with XDR_INLINE and written with libtirpc's IXDR_PUT
 * macros. The bytes are exactly rpcgen's (tests/xdr_fast_test.c compares
 * them); anything but encoding a success, and an entry the stream has no
 * inline room for, goes through rpcgen's.
 *
 * The WRITE arguments: rpcgen's decoder copies the data into a fresh
 * malloc'd buffer, of up to 1 MiB a call; with several writes in flight
 * glibc gave those pages back between calls and every call faulted all of
 * them in again (256 faults a MiB). Here the data points into the record
 * being decoded, which outlives the call; freeing leaves it alone. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "proto/xdr_fast.h"

#define FATTR3_SIZE 84u

static int32_t *put_u32(int32_t *b, uint32_t v)
{
	IXDR_PUT_U_INT32(b, v);
	return b;
}

static int32_t *put_u64(int32_t *b, uint64_t v)
{
	b = put_u32(b, (uint32_t)(v >> 32));
	return put_u32(b, (uint32_t)v);
}

/* len bytes and the zeros that pad them to a multiple of 4. */
static int32_t *put_padded(int32_t *b, const void *p, size_t len)
{
	size_t padded = (len + 3) & ~(size_t)3;

	memcpy(b, p, len);
	memset((char *)b + len, 0, padded - len);
	return b + padded / 4;
}

static int32_t *put_fattr3(int32_t *b, const fattr3 *a)
{
	b = put_u32(b, (uint32_t)a->type);
	b = put_u32(b, a->mode);
	b = put_u32(b, a->nlink);
	b = put_u32(b, a->uid);
	b = put_u32(b, a->gid);
	b = put_u64(b, a->size);
	b = put_u64(b, a->used);
	b = put_u32(b, a->rdev.specdata1);
	b = put_u32(b, a->rdev.specdata2);
	b = put_u64(b, a->fsid);
	b = put_u64(b, a->fileid);
	b = put_u32(b, a->atime.seconds);
	b = put_u32(b, a->atime.nseconds);
	b = put_u32(b, a->mtime.seconds);
	b = put_u32(b, a->mtime.nseconds);
	b = put_u32(b, a->ctime.seconds);
	return put_u32(b, a->ctime.nseconds);
}

/* Writes e (its "value follows" first) when the stream has room for it
 * inline; 0 when it has not, or e is one rpcgen's coder must refuse. */
static int put_entryplus(XDR *x, const entryplus3 *e)
{
	const post_op_attr *pa = &e->name_attributes;
	const post_op_fh3 *pf = &e->name_handle;
	size_t name_len = e->name ? strlen(e->name) : 0;
	u_int fh_len = pf->handle_follows ? pf->post_op_fh3_u.handle.data.data_len : 0;
	size_t size = 4 + 8 + 4 + ((name_len + 3) & ~(size_t)3) + 8 + 4 + 4;
	int32_t *b;

	if (!e->name || (pa->attributes_follow != TRUE && pa->attributes_follow != FALSE) ||
	    (pf->handle_follows != TRUE && pf->handle_follows != FALSE) || fh_len > NFS3_FHSIZE ||
	    name_len > UINT32_MAX - 3)
		return 0;
	if (pa->attributes_follow)
		size += FATTR3_SIZE;
	if (pf->handle_follows)
		size += 4 + ((fh_len + 3) & ~3u);
	b = XDR_INLINE(x, (int)size);
	if (!b)
		return 0;
	b = put_u32(b, TRUE);
	b = put_u64(b, e->fileid);
	b = put_u32(b, (uint32_t)name_len);
	b = put_padded(b, e->name, name_len);
	b = put_u64(b, e->cookie);
	b = put_u32(b, (uint32_t)pa->attributes_follow);
	if (pa->attributes_follow)
		b = put_fattr3(b, &pa->post_op_attr_u.attributes);
	b = put_u32(b, (uint32_t)pf->handle_follows);
	if (pf->handle_follows) {
		b = put_u32(b, fh_len);
		put_padded(b, pf->post_op_fh3_u.handle.data.data_val, fh_len);
	}
	return 1;
}

bool_t xdr_READDIRPLUS3res_fast(XDR *x, READDIRPLUS3res *res)
{
	READDIRPLUS3resok *ok = &res->READDIRPLUS3res_u.resok;
	entryplus3 *e;
	bool_t end = FALSE;

	if (x->x_op != XDR_ENCODE || res->status != NFS3_OK)
		return xdr_READDIRPLUS3res(x, res);
	if (!xdr_nfsstat3(x, &res->status) || !xdr_post_op_attr(x, &ok->dir_attributes) ||
	    !xdr_cookieverf3(x, ok->cookieverf))
		return FALSE;
	for (e = ok->reply.entries; e; e = e->nextentry)
		if (!put_entryplus(x, e))
			/* This entry and the rest, as rpcgen codes them. */
			return xdr_pointer(x, (char **)&e, sizeof(*e), (xdrproc_t)xdr_entryplus3) &&
			       xdr_bool(x, &ok->reply.eof);
	return xdr_bool(x, &end) && xdr_bool(x, &ok->reply.eof);
}

bool_t xdr_WRITE3args_fast(XDR *x, WRITE3args *a)
{
	u_int len;
	char *p;

	if (x->x_op == XDR_ENCODE)
		return xdr_WRITE3args(x, a);
	if (x->x_op == XDR_FREE) {
		a->data.data_val = NULL; /* the record's, not ours */
		a->data.data_len = 0;
		return xdr_nfs_fh3(x, &a->file);
	}
	if (!xdr_nfs_fh3(x, &a->file) || !xdr_offset3(x, &a->offset) || !xdr_count3(x, &a->count) ||
	    !xdr_stable_how(x, &a->stable) || !xdr_u_int(x, &len))
		return FALSE;
	a->data.data_len = 0;
	a->data.data_val = NULL;
	if (len == 0)
		return TRUE;
	if (len > (u_int)INT32_MAX - 3)
		return FALSE; /* more than any record holds */
	p = (char *)XDR_INLINE(x, (int)((len + 3) & ~3u));
	if (!p)
		return FALSE;
	a->data.data_len = len;
	a->data.data_val = p;
	return TRUE;
}
